package io.hicache.bench.gpu;

import io.hicache.core.BackupHandle;
import io.hicache.core.BackupMode;
import io.hicache.core.BackupState;
import io.hicache.core.DevicePagePool;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.LoadHandle;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.metrics.Metric;
import io.hicache.core.metrics.MetricsSnapshot;
import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import io.hicache.cuda.NativeCudaRuntime;
import io.hicache.cuda.simulated.BusyLayerKernel;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The real controller over a forward stand-in with real compute: per layer, the busy kernel spins for
 * the layer's compute time and writes the layer's KV pages, then the forward calls
 * {@code targetLayerStored(l)}, exactly as an engine would, through the {@link HiCache} facade only. Each
 * forward inserts a new prompt and reserves its backup; once committed, the prompt is evicted from the
 * device, matched as a host hit and loaded back into other device pages, and every loaded byte is checked
 * against the pattern the kernel wrote: a round trip through the committed host copy.
 * Run once in {@link BackupMode#LAYERED} and once in {@link BackupMode#ALL_LAYERS}; the commit latency
 * (from the forward's end to the commit) is the backup time the forward did not hide.
 *
 * <p>On the simulated device the kernel is {@code simulateKernel} plus a CPU write of the same pattern,
 * so the same code runs in CI.
 */
public final class GpuLayeredRun {

    static final int LAYERS = 32;
    static final int PAGE_TOKENS = 16;
    /** One llama3-8b layer's K (or V) bytes per token in bf16: 8 KV heads x 128 dims x 2 bytes. */
    static final long BYTES_PER_TOKEN_PER_BUFFER = 8L * 128 * 2;
    static final long TIMEOUT_NS = TimeUnit.SECONDS.toNanos(60);

    private GpuLayeredRun() {
    }

    /** Both modes side by side at the check's size (32 layers; quick: fewer and smaller forwards). */
    public static Map<String, Object> compare(CudaRuntime cuda, boolean quick) {
        return compare(cuda, LAYERS, quick ? 64 : 256, quick ? 4 : 12);
    }

    /** Both modes side by side; the map is the step's JSON object. */
    public static Map<String, Object> compare(CudaRuntime cuda, int layers, int forwardPages, int forwards) {
        long layerComputeNs = 500_000;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("layers", layers);
        out.put("page_tokens", PAGE_TOKENS);
        out.put("forward_tokens", forwardPages * PAGE_TOKENS);
        out.put("forwards", forwards);
        out.put("layer_compute_us", layerComputeNs / 1000);
        Map<String, Object> layered = run(cuda, BackupMode.LAYERED, layers, forwardPages, forwards, layerComputeNs);
        Map<String, Object> all = run(cuda, BackupMode.ALL_LAYERS, layers, forwardPages, forwards, layerComputeNs);
        out.put("layered", layered);
        out.put("all_layers", all);
        double l = ((Number) layered.get("commit_latency_p50_ms")).doubleValue();
        double a = ((Number) all.get("commit_latency_p50_ms")).doubleValue();
        out.put("exposed_backup_ratio_layered_vs_all_layers", a > 0 ? GpuBandwidth.round(l / a) : null);
        out.put("bytes_verified", (boolean) layered.get("bytes_verified") && (boolean) all.get("bytes_verified"));
        return out;
    }

    /** One mode: {@code forwards} forwards of {@code forwardPages} pages each. */
    static Map<String, Object> run(CudaRuntime cuda, BackupMode mode, int layers, int forwardPages, int forwards,
                                   long layerComputeNs) {
        int devicePages = forwardPages * 2;
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(layers)
                .pageSizeTokens(PAGE_TOKENS).bytesPerTokenPerBuffer(BYTES_PER_TOKEN_PER_BUFFER).pageCount(devicePages);
        long kvBase = cuda.deviceMalloc(lb.packedBytes());
        DeviceKvLayout layout = lb.packedFrom(kvBase).build();
        Forward forward = cuda instanceof NativeCudaRuntime n ? new KernelForward(n) : new SimulatedForward(
                (SimulatedCudaRuntime) cuda);
        HiCache.Builder b = HiCache.builder().runtime(cuda).targetLayout(layout)
                .hostPages(forwardPages * (forwards + 1)).writePolicy(WritePolicy.WRITE_THROUGH).backupMode(mode)
                .threadingMode(ThreadingMode.INVOKER);
        if (cuda instanceof SimulatedCudaRuntime sim) {
            b.clock(sim::nowNs);
        }
        HiCache cache = b.build();
        long scratch = cuda.hostAlloc(layout.pageBytes(), CudaRuntime.HOST_ALLOC_PORTABLE);
        boolean verified = true;
        long wallStart = System.nanoTime();
        MetricsSnapshot metrics;
        try {
            int[] pages = new int[forwardPages];
            for (int i = 0; i < forwardPages; i++) {
                pages[i] = i; // forwards write the first half of the pool, loads land in the second
            }
            DevicePagePool loadPages = new DevicePagePool(2 * forwardPages);
            loadPages.take(forwardPages); // the forwards' half: loads get the second half, in order
            MatchResult match = new MatchResult();
            for (int f = 0; f < forwards; f++) {
                int[] tokens = new int[forwardPages * PAGE_TOKENS];
                for (int i = 0; i < tokens.length; i++) {
                    tokens[i] = 1 + f * tokens.length + i; // a fresh prompt each time
                }
                cache.insert(tokens, 0, tokens.length, pages, 0);
                RadixNode node = cache.lastInsertNode();
                List<BackupHandle> backups = new ArrayList<>();
                cache.reserveByPolicy(node, false, backups);
                ForwardHooks hooks = cache.beginForward(backups);
                CudaStream compute = cache.computeStream();
                for (int l = 0; l < layers; l++) {
                    for (int buf = 0; buf < layout.bufferCount(); buf++) {
                        forward.layer(compute, layout, seed(f, l, buf, layout), layerComputeNs / layout.bufferCount(), l, buf);
                    }
                    hooks.targetLayerStored(l);
                }
                hooks.endForward();
                waitCommitted(cuda, cache, backups);
                // Round trip: off the device, back from the host copy into other pages, then compare.
                cache.evictDevice(forwardPages, (p, off, n) -> { });
                cache.match(tokens, 0, tokens.length, match);
                LoadHandle load = cache.loadBack(match, f, Integer.MAX_VALUE, loadPages);
                if (load == null || match.hostTokenCount() != tokens.length) {
                    throw new IllegalStateException("forward " + f + ": expected a host hit of " + tokens.length
                            + " tokens, matched " + match.hostTokenCount());
                }
                cache.startLoading();
                waitLoaded(cuda, cache, load);
                for (int i = 0; i < load.pageCount(); i++) {
                    verified &= verifyPage(cuda, compute, layout, scratch, load.devicePage(i), pages[i], f);
                }
                cache.evictDevice(forwardPages, loadPages);
            }
        } finally {
            metrics = cache.metrics();
            cache.close();
            forward.close();
            cuda.hostFree(scratch);
            cuda.deviceFree(kvBase);
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("mode", mode.name().toLowerCase(Locale.ROOT).replace('_', '-'));
        m.put("committed", metrics.get(Metric.BACKUPS_COMMITTED));
        m.put("commit_latency_p50_ms", GpuBandwidth.round(metrics.commitP50Ns() / 1e6));
        m.put("commit_latency_p99_ms", GpuBandwidth.round(metrics.commitP99Ns() / 1e6));
        m.put("commit_latency_max_ms", GpuBandwidth.round(metrics.commitMaxNs() / 1e6));
        m.put("wall_ms", GpuBandwidth.round((System.nanoTime() - wallStart) / 1e6));
        m.put("bytes_verified", verified);
        return m;
    }

    private static void waitCommitted(CudaRuntime cuda, HiCache cache, List<BackupHandle> backups) {
        long deadline = System.nanoTime() + TIMEOUT_NS;
        while (!backups.stream().allMatch(x -> x.state().terminal())) {
            step(cuda, cache, deadline, backups);
        }
        for (BackupHandle x : backups) {
            if (x.state() != BackupState.COMMITTED) {
                throw new IllegalStateException("backup ended " + x.state() + " (" + x.abortReason() + ")");
            }
        }
    }

    private static void waitLoaded(CudaRuntime cuda, HiCache cache, LoadHandle load) {
        long deadline = System.nanoTime() + TIMEOUT_NS;
        while (load.state() != LoadHandle.State.LOADED) {
            if (load.state() == LoadHandle.State.FAILED) {
                throw new IllegalStateException("load-back failed");
            }
            step(cuda, cache, deadline, load);
        }
    }

    private static void step(CudaRuntime cuda, HiCache cache, long deadline, Object waitingFor) {
        cache.doAgentWork();
        cache.poll();
        if (cuda instanceof SimulatedCudaRuntime sim) {
            sim.advanceToNextEvent();
        } else {
            Thread.onSpinWait();
        }
        if (System.nanoTime() > deadline) {
            throw new IllegalStateException("not finished within 60 s: " + waitingFor);
        }
    }

    /**
     * Device page {@code loaded} holds, on every layer and buffer, what forward {@code f} wrote into
     * device page {@code written}: the pattern at {@code written}'s word offsets.
     */
    private static boolean verifyPage(CudaRuntime cuda, CudaStream stream, DeviceKvLayout layout, long scratch,
                                      int loaded, int written, int f) {
        int wordsPerPage = (int) (layout.pageBytes() / 4);
        MemorySegment m = cuda.hostMemory(scratch, layout.pageBytes());
        for (int l = 0; l < layout.layerCount(); l++) {
            for (int buf = 0; buf < layout.bufferCount(); buf++) {
                cuda.memcpyAsync(scratch, layout.pageAddress(l, buf, loaded), layout.pageBytes(),
                        CopyKind.DEVICE_TO_HOST, stream);
                cuda.synchronizeStream(stream);
                long firstWord = (layout.pageAddress(l, buf, written) - layout.bufferBase(l, buf)) / 4;
                int id = seed(f, l, buf, layout);
                for (int w = 0; w < wordsPerPage; w++) {
                    if (m.getAtIndex(JAVA_INT, w) != BusyLayerKernel.expectedWord(id, firstWord + w)) {
                        return false;
                    }
                }
            }
        }
        return true;
    }

    /** The pattern seed of forward {@code f}, layer {@code l}, buffer {@code buf}: every write differs. */
    static int seed(int f, int l, int buf, DeviceKvLayout layout) {
        return (f * layout.layerCount() + l) * layout.bufferCount() + buf;
    }

    /** One layer's compute and KV writes for one buffer (K or V), with pattern {@code seed}. */
    interface Forward extends AutoCloseable {
        void layer(CudaStream stream, DeviceKvLayout layout, int seed, long computeNs, int layer, int buffer);

        @Override
        void close();
    }

    /** The PTX busy kernel on a real device. */
    static final class KernelForward implements Forward {
        /** Clock cycles per microsecond assumed for the spin (about 1.8 GHz; the figure is approximate). */
        static final long CYCLES_PER_US = 1_800;
        private final BusyLayerKernel kernel;

        KernelForward(NativeCudaRuntime cuda) {
            this.kernel = BusyLayerKernel.load(cuda);
        }

        @Override
        public void layer(CudaStream stream, DeviceKvLayout layout, int seed, long computeNs, int layer, int buffer) {
            long words = layout.pageCount() * layout.pageStrideBytes() / 4;
            kernel.launch(stream, layout.bufferBase(layer, buffer), words, seed,
                    computeNs / 1000 * CYCLES_PER_US, 132, 256);
        }

        @Override
        public void close() {
            kernel.close();
        }
    }

    /** The simulated device: a timed kernel plus the same pattern written by the CPU. */
    static final class SimulatedForward implements Forward {
        private final SimulatedCudaRuntime sim;

        SimulatedForward(SimulatedCudaRuntime sim) {
            this.sim = sim;
        }

        @Override
        public void layer(CudaStream stream, DeviceKvLayout layout, int seed, long computeNs, int layer, int buffer) {
            long words = layout.pageCount() * layout.pageStrideBytes() / 4;
            MemorySegment m = sim.deviceMemory(layout.bufferBase(layer, buffer), words * 4);
            for (long w = 0; w < words; w++) {
                m.setAtIndex(JAVA_INT, w, BusyLayerKernel.expectedWord(seed, w));
            }
            sim.simulateKernel(stream, computeNs);
        }

        @Override
        public void close() {
        }
    }
}
