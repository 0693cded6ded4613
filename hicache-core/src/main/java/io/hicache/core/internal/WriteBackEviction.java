package io.hicache.core.internal;

import io.hicache.core.BackupState;
import io.hicache.core.DevicePageSink;
import io.hicache.core.WritePolicy;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.FallbackReason;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.radix.spi.DeviceEvictionListener;
import org.jctools.queues.SpscArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Device eviction of one controller, and under {@link WritePolicy#WRITE_BACK} the write-backs it starts: a leaf
 * without a host copy is not evicted but reserved (with its not yet backed-up ancestors, top-down) and copied, all
 * layers, in one forward slot of its own; it becomes evictable once committed.
 *
 * <p><b>Threads.</b> Scheduler thread only (the tree calls back into it from {@link #evict}). Allocation-free except
 * when a path is deeper than any before (the scratch path grows) and for the reservations themselves.
 */
final class WriteBackEviction implements DeviceEvictionListener {
    /** The controller's logger: its log category is unchanged by the split. */
    private static final Logger LOG = LoggerFactory.getLogger(HiCacheController.class);

    private final HiCacheController controller;
    private final WritePolicy writePolicy;
    private final RadixTree tree;
    private final boolean withDraft;
    private final HiCacheMetrics metrics;
    private final SlotPool slotPool;
    private final CudaRuntime runtime;
    private final CudaStream computeStream;
    private final SpscArrayQueue<ForwardSlot> commands;
    private final FallbackLog fallbacks;
    /** Write-back reservations waiting for a forward slot. */
    private final java.util.ArrayList<Backup> waiting = new java.util.ArrayList<>();
    private RadixNode[] writeBackPath = new RadixNode[16];
    private DevicePageSink sink;

    WriteBackEviction(HiCacheController controller, WritePolicy writePolicy, RadixTree tree, boolean withDraft,
                      HiCacheMetrics metrics, SlotPool slotPool, CudaRuntime runtime, CudaStream computeStream,
                      SpscArrayQueue<ForwardSlot> commands, FallbackLog fallbacks) {
        this.controller = controller;
        this.writePolicy = writePolicy;
        this.tree = tree;
        this.withDraft = withDraft;
        this.metrics = metrics;
        this.slotPool = slotPool;
        this.runtime = runtime;
        this.computeStream = computeStream;
        this.commands = commands;
        this.fallbacks = fallbacks;
    }

    /** See {@link HiCacheController#evictDevice}; arguments already checked. */
    int evict(int pages, DevicePageSink sink) {
        this.sink = sink;
        int evicted = tree.evictDevice(pages, this);
        this.sink = null;
        issue();
        return evicted;
    }

    /**
     * Starts the copies of the write-back reservations waiting for a forward slot, all in one slot. Whether a slot is
     * free depends on this rank's acks, so the reservations themselves never do (that would let the ranks' trees
     * diverge): they wait, RESERVED, and a later {@link HiCacheController#poll()} issues them.
     */
    void issue() {
        if (waiting.isEmpty()) {
            return;
        }
        ForwardSlot slot = slotPool.take();
        if (slot == null) {
            return;
        }
        slot.allLayers = true;
        slot.writeBack = true;
        slot.releasedGeneration = slot.generation; // no handle: the scheduler ends it
        for (int i = 0; i < waiting.size(); i++) {
            Backup b = waiting.get(i);
            if (b.state == BackupState.RESERVED) {
                b.slot = slot;
                b.state = BackupState.COPYING;
                slot.add(b);
            }
        }
        waiting.clear();
        try {
            runtime.recordEvent(slot.endEvent, computeStream);
            slot.endError = 0;
        } catch (RuntimeException e) {
            // a dead context (or a failing runtime) must not throw out of poll or evictDevice: the write-back fails
            // like a copy (the submitter seals it without copying, its backups abort with CUDA_ERROR) and a sticky
            // error stops the controller through the ack, as on every other path
            slot.endError = e instanceof CudaException ce && ce.code() != 0 ? ce.code() : CudaError.UNKNOWN.code();
            LOG.warn("HiCache write-back could not record its start event; its backups are aborted", e);
        }
        slot.command = ForwardSlot.CMD_COPY_ALL_NOW;
        fallbacks.count(FallbackReason.WRITE_BACK);
        if (!commands.offer(slot)) {
            throw new IllegalStateException("submitter command queue full");
        }
    }

    @Override
    public boolean mayEvict(RadixNode node) {
        if (writePolicy != WritePolicy.WRITE_BACK || node.isBackedUp()) {
            return true;
        }
        // Contiguity: a leaf whose ancestors are not backed up yet is written back together with them,
        // top-down (each reservation makes the next node's parent pending, i.e. backed up).
        int depth = 0;
        for (RadixNode p = node; p != null && !p.isRoot() && !p.isBackedUp(); p = p.parent()) {
            if (depth == writeBackPath.length) {
                writeBackPath = java.util.Arrays.copyOf(writeBackPath, depth * 2);
            }
            writeBackPath[depth++] = p;
        }
        boolean ok = true;
        for (int i = depth - 1; i >= 0; i--) {
            RadixNode n = writeBackPath[i];
            writeBackPath[i] = null;
            ok = ok && n.pending() == null && tree.canBackUp(n) && writeBack(n);
        }
        return false;
    }

    private boolean writeBack(RadixNode node) {
        Backup b = controller.reserve(node, withDraft);
        if (b == null) {
            metrics.countSkipped(WritePolicy.SkipReason.NO_ROOM, 1);
            return false;
        }
        waiting.add(b);
        return true;
    }

    @Override
    public void onDeviceEvicted(RadixNode node, int[] pages, int offset, int count) {
        sink.free(pages, offset, count);
    }
}
