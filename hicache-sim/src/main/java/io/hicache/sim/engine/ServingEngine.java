package io.hicache.sim.engine;

import io.hicache.cuda.SimulatedCudaRuntime;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.SimConfig;
import io.hicache.sim.SimulationEngine;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.trace.TraceSource;

import java.util.List;

/**
 * The timed engine: a discrete-event model of a serving engine that drives the <b>real</b>
 * {@link io.hicache.core.internal.HiCacheController} (one per CP rank, agents stepped by hand) on
 * {@link SimulatedCudaRuntime} devices with a virtual clock.
 *
 * <h2>The serving model</h2>
 * <ul>
 *   <li><b>Arrivals</b> at the trace's timestamps divided by {@code --time-scale}, into one FCFS queue.</li>
 *   <li><b>Prefill batches.</b> When the compute stream is idle the scheduler forms a batch from the head of
 *   the queue (at most {@link #LOOKAHEAD_REQUESTS} requests are looked at) until the tokens to compute would
 *   exceed the token budget ({@link #DEFAULT_BATCH_TOKEN_BUDGET} = 8192 prompt tokens, SGLang's default
 *   {@code --max-prefill-tokens}); a request larger than the budget runs alone (no chunked prefill).</li>
 *   <li><b>Per request</b>, on every rank in the same order: {@code match}; a host hit is loaded back
 *   first ({@code loadBack}, then one {@code startLoading} per batch, before the batch is enqueued so the
 *   copies overlap this batch's compute) and the request joins a later batch once the controller has
 *   published the loaded pages: the controller makes loaded nodes device hits only after the load is
 *   acknowledged, and the engine cannot insert a request's new tokens below a chain still being loaded.
 *   A load refused for lack of device pages turns the host hit into recomputation. Then device pages are
 *   allocated for the tokens to compute (evicting with {@code evictDevice} when the pool is empty), the
 *   request's pages are <b>inserted</b> into the tree and locked, and the write policy reserves the
 *   backups ({@code reserveByPolicy}).</li>
 *   <li><b>Order of a forward</b>: insert &rarr; reserve &rarr; {@code beginForward} &rarr; per layer a kernel of
 *   the compute model's prefill time on the compute stream then {@code targetLayerStored(l)} (draft layers
 *   after the target layers, each a kernel of one layer's time then {@code draftLayerStored(d)}) &rarr;
 *   {@code endForward}. The reservation must precede {@code beginForward}: a backup joins the forward whose
 *   hooks copy it, so only tokens reserved before the first hook can be copied layer by layer while later
 *   layers compute. Inserting before the forward makes the new pages device hits for requests scheduled
 *   after; that is safe because every later forward runs after this one on the same compute stream, so
 *   their reads of those pages are ordered after the writes. Like a real engine's CPU, the scheduler
 *   enqueues the whole forward at once and the device runs it; the controller measures the forward's end
 *   on the device through its end event.</li>
 *   <li><b>Decode</b> is coarse: after its prefill a request keeps its pages locked for
 *   {@code output_length x decode step}, the step being the compute model's decode time of all layers for
 *   one sequence at its context; decode does not occupy the compute stream (as if it ran on other
 *   instances of a disaggregated deployment), so the cache keeps serving prefills meanwhile. Output tokens
 *   are not added to the cache.</li>
 *   <li><b>Capacities</b>: device pages = {@code device_capacity_tokens / page_size}, shared by the tree,
 *   requests in flight and loads. The host pool holds {@code host_capacity_tokens / page_size} pages for
 *   the CP group ({@code / cp} per rank, as each rank stores only the pages it owns). Backup mode
 *   {@code none} or host capacity 0: no backups and no host tier at all.</li>
 *   <li><b>CP groups</b> run {@code cp} controllers with {@link io.hicache.core.cp.InProcessRankAgreement}s,
 *   stepped on this thread with identical scheduling and shared device page ids; a layer's compute is split
 *   evenly across the ranks.</li>
 * </ul>
 *
 * <h2>Real memory, true timing</h2>
 * The simulated device moves real bytes, which for a 70B model would be 320 KiB per token. The engine
 * therefore keeps <em>one page as one byte per layer</em>: the controller's tree works on page keys (each
 * {@code page_size} tokens of a request become one key, which preserves page-aligned prefix matching
 * exactly since a page never spans two trace blocks) and the device layout has one buffer of one byte per
 * token. Copy <em>time</em> stays true: the simulated link bandwidth is the preset's effective host-link
 * bandwidth divided by the true bytes one simulated byte stands for
 * ({@code kv_bytes_per_token_per_layer x page_size x block_size / block_tokens}), so a copy of {@code n}
 * simulated bytes takes as long as the true copy; reported {@code d2h_bytes} are scaled back to true bytes.
 *
 * <h2>Checks at the end of every run</h2>
 * Every backup and load has drained; the trees pass {@code checkInvariants()}; no device page is locked;
 * every device page is either free or held by the tree; with one rank, host pages allocated equal host
 * pages committed; after {@code close} every simulated device reports no live stream, event or allocation
 * ({@link #lastRun()}). A violation fails the run with {@link IllegalStateException}.
 *
 * <p>Thread: {@link #run} runs on the calling thread, which becomes the controllers' scheduler thread; one
 * run at a time per instance. Allocates per request (its page keys, its entries in the queues), not per
 * layer.
 */
public final class ServingEngine implements SimulationEngine {

    /** Prefill token budget of a batch (SGLang's default {@code --max-prefill-tokens}), in prompt tokens. */
    public static final int DEFAULT_BATCH_TOKEN_BUDGET = 8192;
    /** Requests at the head of the queue looked at when forming a batch. */
    public static final int LOOKAHEAD_REQUESTS = 64;
    /** The timeline shows the first forward with backups from this forward index on (or an earlier one). */
    public static final int TIMELINE_FORWARD = 20;

    private final int batchTokenBudget;
    private final io.hicache.sim.StorageOptions storage;
    private RunStats lastRun;

    /** An engine with the default token budget. */
    public ServingEngine() {
        this(DEFAULT_BATCH_TOKEN_BUDGET);
    }

    /**
     * @param batchTokenBudget prompt tokens to compute per prefill batch, at least 1
     */
    public ServingEngine(int batchTokenBudget) {
        this(batchTokenBudget, null);
    }

    /**
     * An engine with an L3 storage tier below the host tier ({@link io.hicache.sim.StorageOptions}; null for none).
     *
     * @param batchTokenBudget prompt tokens to compute per prefill batch, at least 1
     */
    public ServingEngine(int batchTokenBudget, io.hicache.sim.StorageOptions storage) {
        this.storage = storage;
        if (batchTokenBudget < 1) {
            throw new IllegalArgumentException("batch token budget must be >= 1 token, got " + batchTokenBudget);
        }
        this.batchTokenBudget = batchTokenBudget;
    }

    @Override
    public SimResult run(SimConfig config, TraceSource trace, ProgressListener progress) {
        if (config.cacheOnly()) {
            throw new IllegalArgumentException("the timed engine does not run --cache-only configurations; "
                    + "use CacheOnlyEngine");
        }
        Replay replay = new Replay(config, trace, progress, batchTokenBudget, storage);
        try {
            return replay.execute();
        } finally {
            lastRun = replay.closeAll();
        }
    }

    /** What the last {@link #run} did on the simulated devices, or null before the first run. */
    public RunStats lastRun() {
        return lastRun;
    }

    /**
     * Device-side facts of one run.
     *
     * @param deviceOpsCompleted operations the simulated devices completed (all ranks)
     * @param forwards           prefill forwards run
     * @param leakReports        per rank, live objects after the controllers were closed and the KV freed
     */
    public record RunStats(long deviceOpsCompleted, long forwards, List<SimulatedCudaRuntime.LeakReport> leakReports) {
        /** Copies the list. */
        public RunStats {
            leakReports = List.copyOf(leakReports);
        }

        /** True when every rank's device reported nothing live. */
        public boolean clean() {
            for (SimulatedCudaRuntime.LeakReport r : leakReports) {
                if (!r.clean()) {
                    return false;
                }
            }
            return true;
        }
    }
}
