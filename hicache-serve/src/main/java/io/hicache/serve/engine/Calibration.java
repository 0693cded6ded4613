package io.hicache.serve.engine;

import com.github.tjake.jlama.tensor.AbstractTensor;
import io.hicache.core.BackupHandle;
import io.hicache.core.ForwardHooks;
import io.hicache.core.LoadHandle;
import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.radix.MatchResult;
import io.hicache.serve.model.ModelSpec;
import io.hicache.serve.model.Sampler;
import io.hicache.serve.model.StepModel;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageWritePolicy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * The model-level half of {@code scripts/serve --calibrate}: on synthetic shapes only (random token ids, never a
 * trace), times what the engine thread runs, through the engine's own paths: one forward of one sequence
 * ({@link StepModel#forwardChunk}, over a KV buffer on the device pages as {@link DeviceKvViews} gives it) over a grid
 * of new tokens (1 = a decode step, up to the prefill chunk) by tokens already in the KV (up to the context), the
 * logits and the sampler, and the host tier's copies: a backup (reserve by the write policy, the forward's hooks,
 * polled until committed) and a load-back (match, {@code loadBack}, {@code startLoading}, polled until loaded) at two
 * sizes, fitted as a rate and a fixed cost. JIT warm-up first; every figure is a median of repeats (the grid's taken
 * in rounds over all its cells, then smoothed by {@link GridFit}). Runs on the
 * calling thread (it becomes the cache's scheduler thread); allocates as it likes (a cold path).
 */
public final class Calibration {
    /** The forward grid: {@code ms[i][j]} for {@code tokens[i]} new tokens over {@code context[j]} cached ones. */
    public record Grid(int[] tokens, int[] context, double[][] ms) {
    }

    /** A copy's cost: {@code fixedMs + bytes / bytesPerS}. */
    public record Copy(double bytesPerS, double fixedMs) {
    }

    /** What {@link #measure} found. */
    public record Result(Grid forward, Grid measured, double logitsMs, Copy load, Copy backup, long kvBytesPerToken,
                         int repeats) {
    }

    private Calibration() {
    }

    /** The grid's token axis: decode, then chunk sizes up to {@code chunk} (ascending, distinct). */
    public static int[] tokenAxis(int chunk) {
        TreeSet<Integer> t = new TreeSet<>();
        t.add(1);
        for (int x : new int[] {16, 64, 128, 256, 512, 1024, 2048}) {
            if (x < chunk) {
                t.add(x);
            }
        }
        t.add(chunk);
        return t.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * The grid's context axis: from 0 to the context less two chunks (ascending, distinct; Jlama 0.8.4's rotary table
     * refuses a chunk that ends at the context's last positions, and the profile extrapolates past the last column).
     */
    public static int[] contextAxis(int contextTokens, int chunk) {
        int top = Math.max(0, contextTokens - 2 * chunk);
        TreeSet<Integer> c = new TreeSet<>();
        c.add(0);
        for (int x : new int[] {128, 512, 1024, 2048, 4096, 8192, 16384}) {
            if (x < top) {
                c.add(x);
            }
        }
        c.add(top);
        return c.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * Measures the model and the copies for the engine {@code cfg} describes (its model, page size and chunk).
     *
     * @param repeats  repeats per figure (the median is kept), at least 1
     * @param progress one line per phase
     * @throws IllegalStateException the device pool or host tier could not give what a measurement needs
     */
    public static Result measure(EngineConfig cfg, int repeats, Consumer<String> progress) {
        ModelSpec spec = cfg.model();
        int ps = cfg.pageSize();
        int ctx = spec.contextTokens();
        int[] tokens = tokenAxis(cfg.chunkTokens());
        int[] context = contextAxis(ctx, cfg.chunkTokens());
        int devTokens = (ctx + ps - 1) / ps * ps + ps;
        int copyTokens = Math.min(1024, Math.max(4 * ps, ctx / 4 / ps * ps));
        EngineConfig c = scratch(cfg, Math.max(devTokens, 4 * copyTokens), 4 * copyTokens);
        StepModel model = spec.newModel();
        try (CacheTiers t = new CacheTiers(c)) {
            t.open();
            SplittableRandom rnd = new SplittableRandom(11);
            int[] seq = new int[ctx];
            for (int i = 0; i < ctx; i++) {
                seq[i] = 3 + rnd.nextInt(spec.vocab() - 3);
            }
            int pages = (ctx + ps - 1) / ps;
            int[] dev = new int[pages];
            if (!t.pool.allocate(pages, dev, 0)) {
                throw new IllegalStateException("calibration: no device pages for the context");
            }
            DeviceKvViews views = new DeviceKvViews(t);
            ServeRequest r = new ServeRequest(0, seq, SamplingParams.greedy(1), System.nanoTime(), null, "calibrate");
            r.kvPages = dev;
            r.kv = views.bufferFor(model, r);
            float[] logits = new float[spec.vocab()];
            Sampler sampler = new Sampler();
            progress.accept("warming up the JIT");
            for (int w = 0; w < 2; w++) {
                for (int tk : tokens) {
                    forwardMs(model, seq, Math.min(context[Math.min(1, context.length - 1)], ctx - 2 * tk), tk, r);
                }
            }
            progress.accept("forward grid: tokens " + Arrays.toString(tokens) + " x context " + Arrays.toString(context));
            // rounds over the whole grid, so that a burst of load on the machine spreads over every cell instead of
            // inflating one row; each cell's median, then a least-squares fit (smooth in tokens and context)
            double[][][] samples = new double[tokens.length][context.length][repeats];
            for (int k = 0; k < repeats; k++) {
                for (int i = 0; i < tokens.length; i++) {
                    for (int j = 0; j < context.length; j++) {
                        samples[i][j][k] = forwardMs(model, seq, context[j], tokens[i], r);
                    }
                }
                progress.accept("forward grid: round " + (k + 1) + " of " + repeats);
            }
            double[][] raw = new double[tokens.length][context.length];
            for (int i = 0; i < tokens.length; i++) {
                for (int j = 0; j < context.length; j++) {
                    raw[i][j] = median(samples[i][j]);
                }
                progress.accept(tokens[i] + " tokens: " + Arrays.toString(raw[i]) + " ms (medians)");
            }
            double[][] ms = GridFit.fit(tokens, context, raw);
            double[] lg = new double[Math.max(5, repeats * 3)];
            try (AbstractTensor out = model.forwardChunk(seq, 0, 1, r.kv, null)) {
                for (int k = 0; k < lg.length + 3; k++) {
                    long t0 = System.nanoTime();
                    model.logits(out, logits);
                    sampler.next(logits, 0, 1, 0, rnd);
                    lg[Math.max(0, k - 3)] = (System.nanoTime() - t0) / 1e6;
                }
            }
            r.kv.close();
            t.pool.free(dev, 0, pages);
            progress.accept("host tier copies: backup and load-back of " + copyTokens / 4 + " and " + copyTokens + " tokens");
            Copy[] copies = copies(t, spec, ps, copyTokens, repeats, rnd);
            long kvBytesPerToken = 2L * spec.layers() * t.tokenBytes;
            return new Result(new Grid(tokens, context, ms), new Grid(tokens, context, raw), median(lg), copies[0], copies[1], kvBytesPerToken, repeats);
        } finally {
            model.close();
        }
    }

    /**
     * The engine a measurement runs on its own: {@code cfg}'s model, page size and chunk, one request at a time, the
     * given device and host pools, write-through backups, same-forward loads, no L3.
     */
    static EngineConfig scratch(EngineConfig cfg, int deviceTokens, int hostTokens) {
        return new EngineConfig(cfg.model(), true, deviceTokens, hostTokens, cfg.pageSize(), cfg.chunkTokens(), 1, 0,
            WritePolicy.WRITE_THROUGH, LoadOverlap.SAME_FORWARD, null, StorageWritePolicy.WRITE_THROUGH,
            PrefetchPolicy.TIMEOUT, 0, null, 1);
    }

    /** Milliseconds of one forward of {@code seq[from, from + tokens)} over {@code r}'s KV buffer. */
    static double forwardMs(StepModel model, int[] seq, int from, int tokens, ServeRequest r) {
        long t0 = System.nanoTime();
        AbstractTensor out = model.forwardChunk(seq, from, from + tokens, r.kv, null);
        double ms = (System.nanoTime() - t0) / 1e6;
        out.close();
        return ms;
    }

    /** Load ({@code [0]}) and backup ({@code [1]}) at {@code big / 4} and {@code big} tokens, fitted. */
    private static Copy[] copies(CacheTiers t, ModelSpec spec, int ps, int big, int repeats, SplittableRandom rnd) {
        int[] sizes = {Math.max(ps, big / 4 / ps * ps), big};
        double[][] load = new double[2][];
        double[][] backup = new double[2][];
        MatchResult m = new MatchResult();
        for (int s = 0; s < 2; s++) {
            int n = sizes[s];
            int pages = n / ps;
            int reps = repeats + 2;
            double[] lv = new double[reps];
            double[] bv = new double[reps];
            for (int k = 0; k < reps; k++) {
                var cache = t.cache; // a flush opens a new one
                int[] seq = new int[n];
                for (int i = 0; i < n; i++) {
                    seq[i] = 3 + rnd.nextInt(spec.vocab() - 3);
                }
                int[] dev = new int[pages];
                if (!t.pool.allocate(pages, dev, 0)) {
                    throw new IllegalStateException("calibration: no device pages for the copies");
                }
                cache.insert(seq, 0, n, dev, 0);
                List<BackupHandle> backups = new ArrayList<>();
                long b0 = System.nanoTime();
                cache.reserveByPolicy(cache.lastInsertNode(), false, backups);
                if (backups.isEmpty()) {
                    throw new IllegalStateException("calibration: the host tier reserved no backup");
                }
                ForwardHooks h = cache.beginForward(backups);
                for (int l = 0; l < spec.layers(); l++) {
                    h.targetLayerStored(l);
                }
                h.endForward();
                while (cache.backupsInFlight() > 0) {
                    cache.poll();
                    Thread.onSpinWait();
                }
                bv[k] = (System.nanoTime() - b0) / 1e6;
                cache.evictDevice(Integer.MAX_VALUE, t.pool);
                long l0 = System.nanoTime();
                cache.match(seq, 0, n, m);
                LoadHandle lh = cache.loadBack(m, k, Integer.MAX_VALUE, t.pool);
                if (lh == null) {
                    throw new IllegalStateException("calibration: the prefix is not on the host tier");
                }
                cache.match(seq, 0, n, m);
                cache.lock(m.lastDeviceNode());
                cache.startLoading();
                while (lh.state() != LoadHandle.State.LOADED && lh.state() != LoadHandle.State.FAILED) {
                    cache.poll();
                    Thread.onSpinWait();
                }
                lv[k] = (System.nanoTime() - l0) / 1e6;
                cache.unlock(m.lastDeviceNode());
                if (lh.state() == LoadHandle.State.FAILED) {
                    throw new IllegalStateException("calibration: a load-back failed");
                }
                t.flush();
            }
            load[s] = Arrays.copyOfRange(lv, 2, reps);
            backup[s] = Arrays.copyOfRange(bv, 2, reps);
        }
        long bytesPerToken = 2L * spec.layers() * t.tokenBytes;
        return new Copy[] {fit(sizes, load, bytesPerToken), fit(sizes, backup, bytesPerToken)};
    }

    /** The rate and fixed cost through the medians at the two sizes (fixed >= 0; one point when they disagree). */
    static Copy fit(int[] sizes, double[][] ms, long bytesPerToken) {
        double b1 = (double) sizes[0] * bytesPerToken;
        double b2 = (double) sizes[1] * bytesPerToken;
        double t1 = median(ms[0]);
        double t2 = median(ms[1]);
        if (t2 > t1 && b2 > b1) {
            double rate = (b2 - b1) / ((t2 - t1) / 1e3);
            double fixed = t1 - b1 / rate * 1e3;
            if (fixed >= 0) {
                return new Copy(rate, fixed);
            }
        }
        return new Copy(b2 / (Math.max(t2, 1e-6) / 1e3), 0);
    }

    /** The median of {@code v} (the mean of the middle two for an even length); {@code v} is left as it is. */
    public static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }
}
