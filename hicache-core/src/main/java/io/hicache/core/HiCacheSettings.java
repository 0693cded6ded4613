package io.hicache.core;

import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.cp.RankAgreement;
import io.hicache.core.internal.ControllerBuilder;
import io.hicache.core.internal.HiCacheController;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.memory.HostLayout;
import io.hicache.core.memory.HostMemoryKind;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import io.hicache.radix.EvictionPolicy;
import org.agrona.concurrent.IdleStrategy;

import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The settings of a cache, set on its {@link HiCache.Builder} (from {@link HiCache#builder()}). Required: {@link #runtime}, {@link #targetLayout} and a host pool size
 * ({@link #hostPages}, {@link #hostBytes} or {@link #hostRatioToDevice}). Setters only record what was set;
 * building resolves the defaults into an immutable configuration (validating everything and naming the bad
 * setting), so one builder can build any number of caches. Cold path; not thread-safe.
 *
 * @param <B> the builder type the setters return
 */
public abstract sealed class HiCacheSettings<B extends HiCacheSettings<B>> permits HiCache.Builder {
    /** What was set, by name; validated and resolved when a cache is built. */
    private final ControllerBuilder settings = HiCacheController.builder();

    /** Only the cache's own builder extends this class (it is sealed). */
    HiCacheSettings() {
    }

    @SuppressWarnings("unchecked")
    private B self() {
        return (B) this;
    }

    /** The CUDA runtime (native or simulated). Required. */
    public B runtime(CudaRuntime runtime) {
        settings.runtime(runtime);
        return self();
    }

    /** The engine's compute stream the hooks record on; default: a stream the cache creates. */
    public B computeStream(CudaStream stream) {
        settings.computeStream(stream);
        return self();
    }

    /** The target model's device KV layout. Required; its page size is the tree's. */
    public B targetLayout(DeviceKvLayout layout) {
        settings.targetLayout(layout);
        return self();
    }

    /** The draft/MTP model's device KV layout (same page size and device page ids); none by default. */
    public B draftLayout(DeviceKvLayout layout) {
        settings.draftLayout(layout);
        return self();
    }

    /** Host pool size in pages. */
    public B hostPages(int pages) {
        settings.hostPages(pages);
        return self();
    }

    /** Host pool size in bytes (rounded down to whole pages). */
    public B hostBytes(long bytes) {
        settings.hostBytes(bytes);
        return self();
    }

    /** Host pool size as a ratio of the device pool ({@code > 0}). */
    public B hostRatioToDevice(double ratio) {
        settings.hostRatioToDevice(ratio);
        return self();
    }

    /** Host byte order (default {@link HostLayout#LAYER_FIRST}). */
    public B hostLayout(HostLayout layout) {
        settings.hostLayout(layout);
        return self();
    }

    /** Where host memory comes from (default {@link HostMemoryKind#HOST_ALLOC}). */
    public B hostMemoryKind(HostMemoryKind kind) {
        settings.hostMemoryKind(kind);
        return self();
    }

    /**
     * The CP group: size, this rank, the owner-lane strategy and the agreement among ranks, whose rounds carry both
     * the backups' and the loads' sections (see {@link RankAgreement}). Without a group the cache is a group of one
     * with a rank agreement of its own (a new one for every cache built).
     */
    public B cpGroup(int size, int rank, OwnerLanes lanes, RankAgreement agreement) {
        settings.cpGroup(size, rank, lanes, agreement);
        return self();
    }

    /**
     * The CP group with a separate agreement for loads, so that backup and load rounds run apart (in-process groups
     * need two {@link io.hicache.core.cp.InProcessRankAgreement}s); the four-argument form runs both in one.
     */
    public B cpGroup(int size, int rank, OwnerLanes lanes, RankAgreement agreement, RankAgreement loadAgreement) {
        settings.cpGroup(size, rank, lanes, agreement, loadAgreement);
        return self();
    }

    /** Host hits shorter than this many tokens are not loaded back (default 10, as SGLang). */
    public B loadThresholdTokens(int tokens) {
        settings.loadThresholdTokens(tokens);
        return self();
    }

    /** Listener for finished and failed loads (default none). */
    public B loadListener(LoadListener listener) {
        settings.loadListener(listener);
        return self();
    }

    /**
     * When a load's pages may be used (default {@link LoadOverlap#SAME_FORWARD}: in the forward that needs them,
     * waiting per layer). {@link LoadOverlap#PREVIOUS_BATCH} is for engines that cannot wait per layer;
     * {@code reason} says why and is logged once at build.
     */
    public B loadOverlap(LoadOverlap overlap, String reason) {
        settings.loadOverlap(overlap, reason);
        return self();
    }

    /**
     * Load batches ({@link HiCache#startLoading()} calls that issued something) that may be unacknowledged at
     * once, each with its own set of events (default 3, at most {@value
     * io.hicache.core.internal.ControllerConfig#MAX_LOAD_BATCHES}): one more {@code startLoading} throws
     * {@link IllegalStateException} naming this setting until {@link HiCache#poll()} has retired the oldest.
     * Raise it when the engine issues the loads of several batches ahead of their forwards.
     */
    public B loadBatchesInFlight(int batches) {
        settings.loadBatchesInFlight(batches);
        return self();
    }

    /** Listener for commits and aborts (default none). */
    public B listener(BackupListener listener) {
        settings.listener(listener);
        return self();
    }

    /** Write policy (default {@link WritePolicy#WRITE_THROUGH}). */
    public B writePolicy(WritePolicy policy) {
        settings.writePolicy(policy);
        return self();
    }

    /** Hit threshold of write-through-selective (default 2; write-through uses 1). */
    public B hitThreshold(int threshold) {
        settings.hitThreshold(threshold);
        return self();
    }

    /** Backup mode (default {@link BackupMode#LAYERED}). */
    public B backupMode(BackupMode mode) {
        settings.backupMode(mode);
        return self();
    }

    /** Eviction policies of the device and host tiers (default LRU for both). */
    public B eviction(EvictionPolicy device, EvictionPolicy host) {
        settings.eviction(device, host);
        return self();
    }

    /** Threading of the agents (default {@link ThreadingMode#DEDICATED}). */
    public B threadingMode(ThreadingMode mode) {
        settings.threadingMode(mode);
        return self();
    }

    /** Idle strategy of the agent threads in {@link ThreadingMode#DEDICATED} mode (a new one per agent). */
    public B idleStrategy(Supplier<IdleStrategy> supplier) {
        settings.idleStrategy(supplier);
        return self();
    }

    /** Clock in nanoseconds for leases and latencies (default {@code System::nanoTime}). */
    public B clock(LongSupplier clockNs) {
        settings.clock(clockNs);
        return self();
    }

    /** Lease of a reservation: not sealed within it, the backup is aborted (default 30 s; 0 disables). */
    public B leaseNs(long leaseNs) {
        settings.leaseNs(leaseNs);
        return self();
    }

    /**
     * How long a sealed backup may wait for its CP group's agreement before it is released on this rank (aborted
     * {@link AbortReason#AGREEMENT_TIMEOUT}, its device and host pages freed), so an agreement that never answers
     * cannot pin device pages for ever. Default: 60 s, or twice the agreement's {@link
     * RankAgreement#failureDetectionNs()} where that is longer; a limit must exceed that bound. 0 disables it.
     */
    public B sealedTimeLimitNs(long limitNs) {
        settings.sealedTimeLimitNs(limitNs);
        return self();
    }

    /**
     * How long one call into the {@link RankAgreement} may keep {@link HiCache#poll()} blocked before a watchdog
     * thread logs it and counts it in {@link Metric#CP_AGREEMENT_BLOCKED} (default 1 s; 0 turns the watchdog off).
     */
    public B agreementWatchdogNs(long boundNs) {
        settings.agreementWatchdogNs(boundNs);
        return self();
    }

    /** Forwards with backups that may be in flight at once (default 8). */
    public B maxForwardsInFlight(int n) {
        settings.maxForwardsInFlight(n);
        return self();
    }

    /** Whether pages contiguous on both sides are copied in one call (default true). */
    public B coalesce(boolean coalesce) {
        settings.coalesce(coalesce);
        return self();
    }

    /** Whether a layer's copies go in one batched call where the runtime supports it (default true). */
    public B batchedCopies(boolean batched) {
        settings.batchedCopies(batched);
        return self();
    }

    /** Whether scheduler-thread calls are checked to come from one thread (default true). */
    public B checkThread(boolean check) {
        settings.checkThread(check);
        return self();
    }

    /**
     * Validates the settings and builds the controller of a cache from them, leaving them as they were.
     *
     * @throws IllegalArgumentException naming the bad setting
     */
    final HiCacheController buildController() {
        return settings.build();
    }
}
