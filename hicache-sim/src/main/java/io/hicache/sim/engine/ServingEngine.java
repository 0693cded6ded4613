package io.hicache.sim.engine;

import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.ServingConfig;
import io.hicache.sim.SimConfig;
import io.hicache.sim.SimulationEngine;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.trace.TraceSource;

import java.util.List;

/**
 * The timed engine: a discrete-event model of a fleet of serving engines that drives the <b>real</b> cache through
 * its engine API, {@link io.hicache.core.HiCache} (one per CP rank per instance, agents stepped by hand), on
 * {@link SimulatedCudaRuntime} devices with virtual clocks.
 *
 * <h2>The serving model</h2>
 * <ul>
 *   <li><b>Arrivals</b> at the trace's timestamps divided by {@code --time-scale}. A router
 *   ({@link io.hicache.sim.Router}) sends each to one of {@code --instances} instances; every instance is
 *   first run up to the arrival, so the router sees the queues and trees as they are at that moment.</li>
 *   <li><b>Continuous batching</b>, per instance: whenever the previous step has ended, the scheduler forms one
 *   forward step under a token budget ({@code --max-batch-tokens}, default 8,192): one token for every
 *   request that is decoding, then the next chunk (at most {@code --chunk-tokens}) of every request still
 *   prefilling, then new requests from the head of the FCFS queue (at most {@link #LOOKAHEAD_REQUESTS}
 *   looked at) while budget is left. A request decodes one token per step until it has produced the
 *   trace's {@code output_length} tokens; the step that completes its prefill yields the first token.</li>
 *   <li><b>Admission</b> matches the prompt against the tree. A host hit is loaded back first
 *   ({@code loadBack}, then one {@code startLoading} per step) and the request is admitted at a later step
 *   once the controller has published the loaded pages; a load refused for lack of device pages turns the
 *   host hit into recomputation. Then device pages for the whole uncached prompt are allocated (evicting
 *   with {@code evictDevice}); without room the head of the queue <b>waits</b> (FCFS). A full hit still
 *   computes its last token.</li>
 *   <li><b>Decode KV</b> grows page by page. When a decoding request needs a page and none can be freed by
 *   eviction, the scheduler <b>preempts</b> as SGLang's {@code retract_decode} does: the running request with
 *   the fewest decoded tokens releases its pages (its prompt stays cached in the tree, unlocked) and goes back
 *   to the head of the queue; readmitted, it prefills its prompt and the tokens it had decoded again.
 *   Preemptions are counted. When a request finishes, its whole pages, prompt and output, are inserted into
 *   the tree (SGLang's {@code cache_finished_req}); the output pages get keys of their own, since a trace
 *   does not say which later prompt blocks repeat an answer.</li>
 *   <li><b>Inserts and backups.</b> Before a step, the whole prompt pages its chunks complete are inserted
 *   and locked, and the write policy reserves their backups ({@code reserveByPolicy}); backups of finished
 *   requests are reserved the same way. The reservation precedes {@code beginForward} because a backup joins
 *   the forward whose hooks copy it. A step that carries backups runs on the devices as one forward: per
 *   layer a kernel of the step's layer time on the compute stream, then {@code targetLayerStored(l)} (draft
 *   layers after the target layers), then {@code endForward}; the step ends when its compute does.
 *   A step without backups (decode only, or nothing to back up) needs no hook: it only takes its time, so a
 *   decode step costs no device event. Backups of finished requests therefore wait for the next step that
 *   runs the hooks (the next prefill), or for a copy-only forward when the instance has nothing else to run.</li>
 *   <li><b>Step time</b>: {@link io.hicache.sim.model.ComputeModel#stepLayerNs} of the prefill chunks and the
 *   decoding sequences together (one pass over the weights), on {@code --tp} GPUs with two all-reduces per
 *   layer over NVLink, per layer, times the layer count.</li>
 *   <li><b>Tensor parallelism.</b> The GPUs of a TP group run the same schedule on their own shards, so one
 *   controller per CP rank stands for its whole TP group: its pages carry one GPU's shard of the KV
 *   ({@code 1/tp} of the bytes when the KV heads are split; all of them for MLA, which every GPU holds
 *   whole) over one GPU's host link, and reported {@code d2h_bytes} count every GPU's copies.</li>
 *   <li><b>Capacities</b>: device pages per instance = {@code device_capacity_tokens / page_size}, shared by
 *   the tree, running requests and loads. The host pool holds {@code host_capacity_tokens / page_size} pages
 *   per instance ({@code / cp} per rank). Backup mode {@code none} or host capacity 0: no backups and no
 *   host tier.</li>
 *   <li><b>CP groups</b> run {@code cp} controllers with {@link io.hicache.core.cp.InProcessRankAgreement}s,
 *   stepped on this thread with identical scheduling and shared device page ids; each rank holds the whole
 *   model and {@code 1/cp} of every sequence, so prefill tokens and KV reads split over the ranks while every
 *   rank runs each decoding token through the full weights
 *   ({@link io.hicache.sim.model.ComputeModel#stepLayerNs(long, double, int, long, int, int)}).</li>
 * </ul>
 *
 * <h2>The profiled engine</h2>
 * Built with an {@link io.hicache.sim.model.EngineProfile} ({@link #ServingEngine(ServingConfig,
 * io.hicache.sim.model.EngineProfile)}), the engine times the schedule of the serving engine the profile was measured
 * on instead of the batching and roofline above (see that constructor; docs/SIMULATION.md, "Engine profiles"); the
 * cache path, the checks and the results are the same.
 *
 * <h2>Real memory, true timing</h2>
 * The simulated device moves real bytes, which for a 70B model would be 320 KiB per token. The engine
 * therefore keeps <em>one page as one byte per layer</em>: the controller's tree works on page keys (each
 * {@code page_size} tokens of a request become one key, which preserves page-aligned prefix matching
 * exactly since a page never spans two trace blocks) and the device layout has one buffer of one byte per
 * token. Copy <em>time</em> stays true: the simulated link bandwidth is the preset's effective host-link
 * bandwidth divided by the true bytes one simulated byte stands for on one GPU
 * ({@code kv_bytes_per_token_per_layer / tp_shards x page_size x block_size / block_tokens}), so a copy of
 * {@code n} simulated bytes takes as long as the true copy.
 *
 * <h2>Checks at the end of every run</h2>
 * Every request finished exactly once; prompt tokens prefilled plus hit equal the prompt tokens (recomputation
 * after a preemption counted apart); no instance's GPU computed longer than its clock ran; every backup and
 * load has drained; the trees pass {@code checkInvariants()}; no device page is locked; every device page is
 * either free or held by the tree (the page pool also refuses a page freed twice); with one rank, host pages
 * allocated equal host pages committed; after {@code close} every simulated device reports no live stream,
 * event or allocation ({@link #lastRun()}). A violation fails the run with {@link IllegalStateException}.
 *
 * <p>Thread: {@link #run} runs on the calling thread, which becomes the controllers' scheduler thread; one
 * run at a time per instance. Allocates per request (its page keys, its entries in the queues), not per
 * layer or per decode step.
 */
public final class ServingEngine implements SimulationEngine {

    /** Requests at the head of the queue looked at when forming a step. */
    public static final int LOOKAHEAD_REQUESTS = 64;
    /** The timeline shows the first forward with backups from this forward index on (or an earlier one). */
    public static final int TIMELINE_FORWARD = 20;

    private final ServingConfig serving;
    private final io.hicache.sim.StorageOptions storage;
    private final io.hicache.sim.model.EngineProfile profile;
    private RunStats lastRun;

    /** An engine serving each configuration with {@link ServingConfig#defaults} for its model and GPU. */
    public ServingEngine() {
        this.serving = null;
        this.storage = null;
        this.profile = null;
    }

    /**
     * An engine serving with {@code serving} (null: the defaults for the configuration) over an L3 storage tier
     * below the host tier ({@link io.hicache.sim.StorageOptions}; null for none).
     */
    public ServingEngine(ServingConfig serving, io.hicache.sim.StorageOptions storage) {
        this.serving = serving;
        this.storage = storage;
        this.profile = null;
    }

    /**
     * The <b>profiled engine</b>: serves as the engine that {@code profile} was measured on schedules, in place of the
     * roofline of the model and GPU presets (hicache-serve's {@code Engine.step()}: per step one prefill chunk of the
     * oldest request still prefilling, then one decode token of every decoding request, each a forward of one sequence
     * timed by the profile; admission FCFS while fewer than {@code max_running} run, with device pages for prompt and
     * output reserved at once; loads and backups at the profile's copy rates; see docs/SIMULATION.md, "Engine
     * profiles"). The cache path (the real controller on the simulated device, hit accounting) is the same as the
     * roofline engine's. The configuration's model preset only stands in: the profile gives the layers and KV bytes.
     * A run refuses ({@link IllegalArgumentException}) a configuration with CP, draft layers, TP or an L3 tier, or
     * whose page size is not the profile's.
     *
     * @param serving the deployment: instances, router, chunk size, SLOs (its TP must be 1)
     * @param profile the engine's measured costs and scheduler limits
     */
    public ServingEngine(ServingConfig serving, io.hicache.sim.model.EngineProfile profile) {
        if (serving == null || profile == null) {
            throw new IllegalArgumentException("serving config and profile must not be null");
        }
        this.serving = serving;
        this.storage = null;
        this.profile = profile;
    }

    /** An engine serving with {@code serving}. */
    public ServingEngine(ServingConfig serving) {
        if (serving == null) {
            throw new IllegalArgumentException("serving config must not be null");
        }
        this.serving = serving;
        this.storage = null;
        this.profile = null;
    }

    @Override
    public SimResult run(SimConfig config, TraceSource trace, ProgressListener progress) {
        if (config.cacheOnly()) {
            throw new IllegalArgumentException("the timed engine does not run --cache-only configurations; "
                    + "use CacheOnlyEngine");
        }
        ServingConfig sc = serving != null ? serving : ServingConfig.defaults(config.model(), config.gpu());
        Replay replay = new Replay(config, sc, trace, progress, storage, profile);
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
     * @param forwards           forwards run on the simulated devices (steps that carried backups)
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
