package io.hicache.aeron.cluster;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupHandle;
import io.hicache.core.BackupState;
import io.hicache.core.DevicePageSink;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.ThreadingMode;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.cp.RankAgreement;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.RadixNode;

import java.util.List;
import java.util.SplittableRandom;

/**
 * One CP rank's controller on its own simulated device, driven by a workload that every rank of the group derives
 * from the same seed, so all ranks schedule identically: step {@code i} inserts the same fresh sequence, reserves
 * its backup (this rank copies only its own lanes), runs a forward with every layer's hook, and waits until the
 * group has agreed on the backup (committed or aborted) before the next step, then evicts the sequence's device
 * pages. Waiting for the agreement each step keeps every rank's host pool in the same state at every reserve.
 *
 * <p>Threads: one thread (the rank's scheduler) calls everything. Not thread-safe.
 */
public final class RankWorkload implements AutoCloseable {
    private static final int LAYERS = 4;
    private static final int PAGE_SIZE = 16;
    private static final int DEVICE_PAGES = 512;
    private static final int HOST_PAGES = 256;
    private static final int MAX_PAGES_PER_STEP = 6;

    private final SimulatedCudaRuntime runtime;
    private final HiCache controller;
    private final SplittableRandom random;
    private final int[] freeDevicePages = new int[DEVICE_PAGES];
    private int freeDeviceCount;
    private final int[] tokens = new int[MAX_PAGES_PER_STEP * PAGE_SIZE];
    private final int[] pages = new int[MAX_PAGES_PER_STEP];
    private final DevicePageSink toFreeList = this::free;
    private int nextToken = 1;
    private BackupHandle inFlight;
    private long step;
    private long committed;
    private long commitDigest = 0xcbf29ce484222325L;
    private long noRoom;

    /** A controller for {@code rank} of a group of {@code size} over {@code backups} and {@code loads}. */
    public RankWorkload(int size, int rank, RankAgreement backups, RankAgreement loads, long seed) {
        this.runtime = new SimulatedCudaRuntime();
        this.random = new SplittableRandom(seed);
        DeviceKvLayout.Builder tb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS)
            .pageSizeTokens(PAGE_SIZE).bytesPerTokenPerBuffer(64).pageCount(DEVICE_PAGES);
        DeviceKvLayout target = tb.packedFrom(runtime.deviceMalloc(tb.packedBytes())).build();
        HiCache.Builder b = HiCache.builder().runtime(runtime).targetLayout(target)
            .hostPages(HOST_PAGES).threadingMode(ThreadingMode.INVOKER).leaseNs(0).checkThread(false)
            .clock(runtime::nowNs);
        if (size > 1) {
            b.cpGroup(size, rank, OwnerLanes.Standard.ROUND_ROBIN, backups, loads);
        }
        this.controller = b.build();
        for (int p = DEVICE_PAGES - 1; p >= 0; p--) {
            freeDevicePages[freeDeviceCount++] = p;
        }
    }

    /**
     * Starts the next step: inserts its sequence, reserves the backup and runs the forward's hooks. Call
     * {@link #poll()} until it returns true before the next {@code begin}.
     */
    public void begin() {
        if (inFlight != null) {
            throw new IllegalStateException("step " + step + " still in flight");
        }
        int pageCount = 1 + random.nextInt(MAX_PAGES_PER_STEP);
        int len = pageCount * PAGE_SIZE;
        for (int i = 0; i < len; i++) {
            tokens[i] = nextToken++;
        }
        for (int i = 0; i < pageCount; i++) {
            pages[i] = freeDevicePages[--freeDeviceCount];
        }
        controller.insert(tokens, 0, len, pages, 0);
        RadixNode node = controller.lastInsertNode();
        BackupHandle b = controller.reserve(node, false);
        if (b == null) {
            noRoom++;
            return;
        }
        inFlight = b;
        ForwardHooks h = controller.beginForward(List.of(b));
        for (int l = 0; l < LAYERS; l++) {
            h.targetLayerStored(l);
        }
        h.endForward();
    }

    /**
     * Steps the agents and the simulated device, then the controller (which runs agreement rounds).
     *
     * @return true once this step's backup is committed or aborted (its device pages then evicted)
     */
    public boolean poll() {
        for (int i = 0; i < 1000; i++) {
            int work = controller.doAgentWork();
            boolean advanced = runtime.advanceToNextEvent();
            if (work == 0 && !advanced) {
                break;
            }
        }
        controller.poll();
        if (inFlight != null && !inFlight.state().terminal()) {
            return false;
        }
        if (inFlight != null && inFlight.state() == BackupState.COMMITTED) {
            committed++;
            commitDigest = (commitDigest ^ step) * 0x100000001b3L;
        }
        inFlight = null;
        step++;
        if (controller.stickyError() == null) {
            controller.evictDevice(MAX_PAGES_PER_STEP, toFreeList); // a stopped controller refuses every call
        }
        return true;
    }

    private void free(int[] p, int off, int count) {
        for (int i = 0; i < count; i++) {
            freeDevicePages[freeDeviceCount++] = p[off + i];
        }
    }

    /** Steps finished. */
    public long steps() {
        return step;
    }

    /** Backups committed. */
    public long committed() {
        return committed;
    }

    /** A digest of which steps' backups committed: equal on ranks that committed the same backups. */
    public long commitDigest() {
        return commitDigest;
    }

    /** Backups aborted because a rank of the group failed. */
    public long abortedRankFailed() {
        return controller.metrics().abortedBy(AbortReason.RANK_FAILED);
    }

    /** Backups aborted for any reason. */
    public long aborted() {
        long n = 0;
        for (int i = 0; i < AbortReason.count(); i++) {
            n += controller.metrics().abortedBy(AbortReason.ofOrdinal(i));
        }
        return n;
    }

    /** Steps whose reserve found no host room. */
    public long noRoom() {
        return noRoom;
    }

    /** This rank's cache. */
    public HiCache controller() {
        return controller;
    }

    /** This rank's simulated device (to inject faults). */
    public SimulatedCudaRuntime device() {
        return runtime;
    }

    @Override
    public void close() {
        controller.close();
        runtime.close();
    }
}
