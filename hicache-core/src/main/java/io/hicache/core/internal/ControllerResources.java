package io.hicache.core.internal;

import io.hicache.core.ThreadingMode;
import io.hicache.core.internal.copy.CopyPlanner;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import io.hicache.radix.RadixTree;
import org.agrona.ErrorHandler;
import org.agrona.concurrent.AgentRunner;
import org.jctools.queues.SpscArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.function.LongSupplier;

/**
 * The native resources and threads of one {@link HiCacheController}: the pinned host pools, the backup and (when
 * created here) compute streams, every forward slot's and the loader's CUDA events, the agents and their runners.
 * {@link #allocate} either returns them all or releases what it made; {@link #release()} is the one release list,
 * used by a failed build and by {@link HiCacheController#close()} alike.
 *
 * <p><b>Threads.</b> Built and released by the scheduler thread; the agents it starts run on their own threads
 * ({@link ThreadingMode#DEDICATED}) or are stepped by the caller. Release steps are each attempted: a failing one is
 * logged at DEBUG and the rest still run.
 */
final class ControllerResources {
    /** The controller's logger: its log category is unchanged by the split. */
    private static final Logger LOG = LoggerFactory.getLogger(HiCacheController.class);

    private final CudaRuntime runtime;
    /** Every slot event, in creation order. */
    private final ArrayList<CudaEvent> slotEvents = new ArrayList<>();
    /** The loader's events (filled by its constructor, so that a half-built loader's are released too). */
    final ArrayList<CudaEvent> loaderEvents = new ArrayList<>();
    HostKvPool hostPool;
    HostKvPool draftPool;
    CudaStream backupStream;
    /** The compute stream hooks record on: created here or the engine's. */
    CudaStream computeStream;
    boolean ownsComputeStream;
    Loader loader;
    SlotPool slotPool;
    HookRing ring;
    SpscArrayQueue<ForwardSlot> commands;
    SpscArrayQueue<ForwardSlot> acks;
    SubmitterAgent submitter;
    CompletionAgent completion;
    GuardedAgent guardedSubmitter;
    GuardedAgent guardedCompletion;
    /** Null in {@link ThreadingMode#INVOKER} mode. */
    AgentRunner submitterRunner;
    AgentRunner completionRunner;
    private boolean quiesced;

    private ControllerResources(CudaRuntime runtime) {
        this.runtime = runtime;
    }

    /**
     * Allocates the pools, streams and events and starts the agents (DEDICATED). If any step fails, everything made
     * so far is released (see {@link #release()}) and the failure rethrown.
     */
    static ControllerResources allocate(ControllerConfig b, RadixTree tree, HiCacheMetrics metrics,
                                        AgentErrors agentErrors, GroupHealth health) {
        ControllerResources r = new ControllerResources(b.runtime());
        try {
            r.build(b, tree, metrics, agentErrors, health);
        } catch (RuntimeException | Error e) {
            r.release();
            throw e;
        }
        return r;
    }

    private void build(ControllerConfig b, RadixTree tree, HiCacheMetrics metrics, AgentErrors agentErrors,
                       GroupHealth health) {
        DeviceKvLayout targetLayout = b.targetLayout();
        DeviceKvLayout draftLayout = b.draftLayout();
        int targetLayers = targetLayout.layerCount();
        int draftLayers = draftLayout == null ? 0 : draftLayout.layerCount();
        LongSupplier clock = b.clock();
        hostPool = b.hostPoolBuilder(runtime, targetLayout).allocate();
        HostKvPool pool = hostPool;
        draftPool = draftLayout == null ? null : pool.allocateDraft(draftLayout.shape());
        HostKvPool dpool = draftPool;
        backupStream = runtime.createStream(0);
        if (b.computeStream() == null) {
            computeStream = runtime.createStream(0);
            ownsComputeStream = true;
        } else {
            computeStream = b.computeStream();
        }
        CudaStream compute = computeStream;
        int slotCount = b.maxForwardsInFlight();
        ForwardSlot[] slots = new ForwardSlot[slotCount];
        for (int i = 0; i < slotCount; i++) {
            CudaEvent[] te = new CudaEvent[targetLayers];
            for (int l = 0; l < targetLayers; l++) {
                te[l] = event();
            }
            CudaEvent[] de = new CudaEvent[draftLayers];
            for (int l = 0; l < draftLayers; l++) {
                de[l] = event();
            }
            CudaEvent end = event();
            CudaEvent fin = event();
            CudaEvent[] copied = new CudaEvent[targetLayers + draftLayers];
            for (int l = 0; l < copied.length; l++) {
                copied[l] = event();
            }
            slots[i] = new ForwardSlot(i, te, de, end, fin, copied);
        }
        HookRing hookRing = new HookRing(slotCount, b.hookRingCapacity() > 0 ? b.hookRingCapacity()
            : HookRing.capacityFor(targetLayers + draftLayers + 1));
        CudaRuntime rt = runtime;
        SlotPool pool0 = new SlotPool(slots, s -> new ForwardHandle(s, rt, compute, hookRing, targetLayers,
            draftLayers));
        int qcap = Math.max(4, slotCount * 2);
        SpscArrayQueue<ForwardSlot> cmds = new SpscArrayQueue<>(qcap);
        SpscArrayQueue<ForwardSlot> sealed = new SpscArrayQueue<>(qcap);
        SpscArrayQueue<ForwardSlot> ackQueue = new SpscArrayQueue<>(qcap);
        CopyPlanner tp = new CopyPlanner(targetLayout, pool, b.coalesce());
        CopyPlanner dp = draftLayout == null ? null : new CopyPlanner(draftLayout, dpool, b.coalesce());
        SubmitterAgent sub = new SubmitterAgent(runtime, backupStream, tp, dp, b.batchedCopies(), targetLayers,
            draftLayers, hookRing, slots, cmds, sealed, metrics, agentErrors, clock);
        int loadCap = Math.max(8, b.loadBatchesInFlight());
        SpscArrayQueue<LoadSet> loadsIssued = new SpscArrayQueue<>(loadCap);
        SpscArrayQueue<LoadSet> loadAcks = new SpscArrayQueue<>(loadCap);
        CompletionAgent comp = new CompletionAgent(runtime, sealed, ackQueue, loadsIssued, loadAcks, metrics,
            agentErrors, clock, qcap, loadCap);
        loader = new Loader(runtime, compute, tree, new CopyPlanner(targetLayout, pool, b.coalesce()),
            draftLayout == null ? null : new CopyPlanner(draftLayout, dpool, b.coalesce()), b.batchedCopies(),
            health, b.cpSize(), b.cpRank(), clock, metrics, agentErrors, b.loadListener(), b.loadThresholdTokens(),
            targetLayers, draftLayers, loadsIssued, loadAcks, loaderEvents,
            b.loadOverlap() == io.hicache.core.LoadOverlap.SAME_FORWARD, b.loadBatchesInFlight());
        GuardedAgent guardedSub = new GuardedAgent(sub, agentErrors);
        GuardedAgent guardedComp = new GuardedAgent(comp, agentErrors);
        if (b.threadingMode() == ThreadingMode.DEDICATED) {
            // reached only by a fatal VirtualMachineError, which GuardedAgent recorded before rethrowing it
            ErrorHandler errors = t -> LOG.error("HiCache agent thread stops after a fatal error", t);
            submitterRunner = new AgentRunner(b.idleStrategySupplier().get(), errors, null, guardedSub);
            AgentRunner.startOnThread(submitterRunner);
            completionRunner = new AgentRunner(b.idleStrategySupplier().get(), errors, null, guardedComp);
            AgentRunner.startOnThread(completionRunner);
        }
        guardedSubmitter = guardedSub;
        guardedCompletion = guardedComp;
        slotPool = pool0;
        ring = hookRing;
        commands = cmds;
        acks = ackQueue;
        submitter = sub;
        completion = comp;
    }

    private CudaEvent event() {
        CudaEvent e = runtime.createEvent(true);
        slotEvents.add(e);
        return e;
    }

    /**
     * Stops the agent threads and waits for the copies already queued on the backup and load streams: after it no
     * copy writes host memory, so backups and loads may be released. Idempotent.
     */
    void quiesce() {
        if (quiesced) {
            return;
        }
        quiesced = true;
        AgentRunner sr = submitterRunner;
        AgentRunner cr = completionRunner;
        if (sr != null) {
            quietly(sr::close);
        }
        if (cr != null) {
            quietly(cr::close);
        }
        CudaStream bs = backupStream;
        Loader ld = loader;
        if (bs != null) {
            quietly(() -> runtime.synchronizeStream(bs));
        }
        if (ld != null) {
            quietly(() -> runtime.synchronizeStream(ld.loadStream()));
        }
    }

    /**
     * The one release list: {@link #quiesce()} if not done yet, then destroys every event, the loader, the streams
     * created here and the host pools, in reverse order of allocation; what was never made is skipped.
     */
    void release() {
        quiesce();
        for (CudaEvent ev : slotEvents) {
            quietly(() -> runtime.destroyEvent(ev));
        }
        for (CudaEvent ev : loaderEvents) {
            quietly(() -> runtime.destroyEvent(ev));
        }
        if (loader != null) {
            loader.destroy();
        }
        CudaStream cs = computeStream;
        CudaStream bs = backupStream;
        if (ownsComputeStream) {
            quietly(() -> runtime.destroyStream(cs));
        }
        if (bs != null) {
            quietly(() -> runtime.destroyStream(bs));
        }
        HostKvPool dp = draftPool;
        HostKvPool p = hostPool;
        if (dp != null) {
            quietly(dp::close);
        }
        if (p != null) {
            quietly(p::close);
        }
    }

    static void quietly(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            LOG.debug("ignored during cleanup", e);
        }
    }
}
