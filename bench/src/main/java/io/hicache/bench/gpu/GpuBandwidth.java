package io.hicache.bench.gpu;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

/**
 * Host link bandwidth with pinned memory, as a fraction of the peak: one large {@code cudaMemcpyAsync}
 * is the peak; then the same bytes as scattered pages of one llama3-8b layer (8 KV heads x 128 dims x
 * bf16, K and V: 4,096 bytes per token) copied one page per call, coalesced into runs of adjacent pages,
 * and as one {@code cudaMemcpyBatchAsync} per burst. Each figure is the best of a few repetitions timed
 * with CUDA events. Works on any {@link CudaRuntime}; on the simulated one the figures are its model's.
 */
public final class GpuBandwidth {

    /** K and V bytes of one token of one llama3-8b layer in bf16. */
    public static final long LLAMA3_8B_LAYER_TOKEN_BYTES = 2L * 8 * 128 * 2;
    static final int[] PAGE_TOKENS = {16, 64, 256};
    static final int RUN_PAGES = 8;
    static final int REPEATS = 3;

    private final CudaRuntime cuda;
    private final long bytes;

    public GpuBandwidth(CudaRuntime cuda, long bytes) {
        this.cuda = cuda;
        this.bytes = bytes;
    }

    /** Runs every measurement; the map is the JSON object of the step. */
    public Map<String, Object> run() {
        long dev = cuda.deviceMalloc(bytes);
        long host = cuda.hostAlloc(bytes, CudaRuntime.HOST_ALLOC_PORTABLE);
        CudaStream s = cuda.createStream(0);
        CudaEvent start = cuda.createEvent(false);
        CudaEvent end = cuda.createEvent(false);
        try {
            cuda.hostMemory(host, bytes).fill((byte) 1);
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("bytes", bytes);
            for (CopyKind kind : new CopyKind[] {CopyKind.DEVICE_TO_HOST, CopyKind.HOST_TO_DEVICE}) {
                boolean d2h = kind == CopyKind.DEVICE_TO_HOST;
                long dst = d2h ? host : dev;
                long src = d2h ? dev : host;
                double peak = best(s, start, end, () -> cuda.memcpyAsync(dst, src, bytes, kind, s));
                Map<String, Object> dir = new LinkedHashMap<>();
                dir.put("peak_gb_per_s", round(peak));
                for (int tokens : PAGE_TOKENS) {
                    dir.put("page_" + tokens, pages(s, start, end, kind, dst, src, tokens * LLAMA3_8B_LAYER_TOKEN_BYTES, peak));
                }
                out.put(d2h ? "d2h" : "h2d", dir);
            }
            return out;
        } finally {
            cuda.destroyEvent(start);
            cuda.destroyEvent(end);
            cuda.destroyStream(s);
            cuda.hostFree(host);
            cuda.deviceFree(dev);
        }
    }

    private Map<String, Object> pages(CudaStream s, CudaEvent start, CudaEvent end, CopyKind kind, long dst, long src,
                                      long pageBytes, double peak) {
        int pages = (int) Math.min(bytes / pageBytes, 16_384);
        int[] perm = permutation(pages, 42);
        long[] dsts = new long[pages];
        long[] srcs = new long[pages];
        long[] sizes = new long[pages];
        for (int i = 0; i < pages; i++) {
            srcs[i] = src + (long) i * pageBytes;
            dsts[i] = dst + (long) perm[i] * pageBytes;
            sizes[i] = pageBytes;
        }
        long total = pages * pageBytes;
        double perPage = best(s, start, end, () -> {
            for (int i = 0; i < pages; i++) {
                cuda.memcpyAsync(dsts[i], srcs[i], pageBytes, kind, s);
            }
        }) * total / bytes;
        // Runs of RUN_PAGES adjacent pages on both sides, one copy per run (what the copy planner merges).
        int runs = pages / RUN_PAGES;
        int[] runPerm = permutation(runs, 43);
        double coalesced = best(s, start, end, () -> {
            for (int r = 0; r < runs; r++) {
                long off = (long) runPerm[r] * RUN_PAGES * pageBytes;
                cuda.memcpyAsync(dst + off, src + (long) r * RUN_PAGES * pageBytes, RUN_PAGES * pageBytes, kind, s);
            }
        }) * ((double) runs * RUN_PAGES * pageBytes) / bytes;
        double batched = best(s, start, end, () -> cuda.memcpyBatchAsync(dsts, srcs, sizes, pages, kind, s))
                * total / bytes;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("page_bytes", pageBytes);
        m.put("pages", pages);
        m.put("per_page_gb_per_s", round(perPage));
        m.put("per_page_of_peak", round(perPage / peak));
        m.put("coalesced_gb_per_s", round(coalesced));
        m.put("coalesced_of_peak", round(coalesced / peak));
        m.put("batched_gb_per_s", round(batched));
        m.put("batched_of_peak", round(batched / peak));
        m.put("batched_native", cuda.supportsBatchedCopy());
        return m;
    }

    /**
     * Best GB/s of {@link #REPEATS} timed runs of {@code work}, normalised to {@link #bytes}: callers
     * scale by the bytes the work really moved.
     */
    private double best(CudaStream s, CudaEvent start, CudaEvent end, Runnable work) {
        double bestMs = Double.MAX_VALUE;
        for (int r = 0; r < REPEATS; r++) {
            cuda.recordEvent(start, s);
            work.run();
            cuda.recordEvent(end, s);
            cuda.synchronizeEvent(end);
            bestMs = Math.min(bestMs, Math.max(1e-6, cuda.eventElapsedMs(start, end)));
        }
        return bytes / (bestMs * 1e6);
    }

    static int[] permutation(int n, long seed) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        Random rnd = new Random(seed);
        for (int i = n - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        return p;
    }

    static double round(double v) {
        return Math.round(v * 1000.0) / 1000.0;
    }
}
