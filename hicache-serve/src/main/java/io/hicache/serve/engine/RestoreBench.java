package io.hicache.serve.engine;

import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import io.hicache.core.BackupHandle;
import io.hicache.core.ForwardHooks;
import io.hicache.core.LoadHandle;
import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.radix.MatchResult;
import io.hicache.serve.model.ModelSpec;
import io.hicache.serve.model.StepModel;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageWritePolicy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The restore row of {@code bench-serve} (and {@code scripts/bench-restore}): how fast a cached prefix's KV goes from
 * the host tier into the engine's attention buffers, end to end as a request restores it (match, load-back host →
 * device pages on the load stream, and the first prefill chunk's wait for each landed layer before its block reads
 * it), against one plain memory copy of the same bytes, measured in the same run. The engine's attention buffers are
 * its device pages ({@link DeviceKvViews}), so the restore is the load's one copy. A prefix is backed up once, then,
 * per repetition, evicted from the device and restored; after each restore (untimed) the request's KV buffer, read as
 * attention reads it, is checked byte for byte against the prefix's KV. The figures are medians. Runs on the calling
 * thread (it becomes the cache's scheduler thread).
 */
public final class RestoreBench {
    /**
     * The row's figures: bytes per restore, the medians in GB/s (10^9 bytes per second), the share of the restore spent
     * matching and issuing the load (match, loadBack, lock, startLoading), and the share spent waiting for loaded
     * layers.
     */
    public record Result(int tokens, long bytes, int repetitions, double restoreGbps, double issueShare,
                         double loadWaitShare, double plainCopyGbps) {
        /** Restore over plain copy. */
        public double ratio() {
            return restoreGbps / plainCopyGbps;
        }
    }

    private RestoreBench() {
    }

    /**
     * {@code scripts/bench-restore [--model tiny] [--tokens 2048] [--page-size 16] [--reps 9] [--runs 1]}: prints one
     * line per run with both figures and their ratio.
     */
    public static void main(String[] args) {
        String model = "tiny";
        int tokens = 2048;
        int pageSize = 16;
        int reps = 9;
        int runs = 1;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(args[i] + " needs a value");
            }
            String v = args[i + 1];
            switch (args[i]) {
                case "--model" -> model = v;
                case "--tokens" -> tokens = Integer.parseInt(v);
                case "--page-size" -> pageSize = Integer.parseInt(v);
                case "--reps" -> reps = Integer.parseInt(v);
                case "--runs" -> runs = Integer.parseInt(v);
                default -> throw new IllegalArgumentException("unknown flag " + args[i]
                    + "; flags: --model --tokens --page-size --reps --runs");
            }
        }
        ModelSpec spec = ModelSpec.parse(model, Math.max(ModelSpec.DEFAULT_CONTEXT, tokens + pageSize),
            ModelSpec.DEFAULT_SEED);
        for (int run = 0; run < runs; run++) {
            Result r = run(spec, tokens, pageSize, reps);
            System.out.println(String.format(java.util.Locale.ROOT, "restore %s, %d tokens (%d bytes of KV), medians "
                + "of %d: restore %.3f GB/s, plain copy %.3f GB/s, ratio %.3f (issue share %.3f, load wait share %.3f)", spec.id(),
                r.tokens(), r.bytes(), r.repetitions(), r.restoreGbps(), r.plainCopyGbps(), r.ratio(),
                r.issueShare(), r.loadWaitShare()));
        }
    }

    /**
     * Backs up a {@code tokens}-token prefix, then restores it {@code 4 * reps} times and reports the medians of the
     * last {@code reps} (the first ones warm the JIT up, as a serving engine's own restores have).
     */
    public static Result run(ModelSpec spec, int tokens, int pageSize, int reps) {
        if (tokens < pageSize || tokens % pageSize != 0 || reps < 1) {
            throw new IllegalArgumentException("restore bench: tokens " + tokens + " must be a positive multiple of the "
                + "page size " + pageSize + ", repetitions " + reps + " at least 1");
        }
        int warmup = 3 * reps;
        int pages = tokens / pageSize;
        EngineConfig cfg = new EngineConfig(spec, true, 2 * tokens, 2 * tokens, pageSize, pageSize, 1, 0,
            WritePolicy.WRITE_THROUGH, LoadOverlap.SAME_FORWARD, null, StorageWritePolicy.WRITE_THROUGH,
            PrefetchPolicy.TIMEOUT, 0, null, 1);
        StepModel model = spec.newModel();
        try (CacheTiers t = new CacheTiers(cfg); Arena arena = Arena.ofConfined()) {
            t.open();
            var cache = t.cache;
            int[] seq = new int[tokens];
            SplittableRandom rnd = new SplittableRandom(7);
            for (int i = 0; i < tokens; i++) {
                seq[i] = 3 + rnd.nextInt(256);
            }
            int[] devPages = new int[pages];
            if (!t.pool.allocate(pages, devPages, 0)) {
                throw new IllegalStateException("no device pages");
            }
            int pageBytes = (int) t.layout.pageBytes();
            byte[] expected = new byte[pages * spec.layers() * 2 * pageBytes]; // [page][layer][K, V]
            rnd.nextBytes(expected);
            for (int i = 0; i < pages; i++) {
                for (int l = 0; l < spec.layers(); l++) {
                    for (int b = 0; b < 2; b++) {
                        MemorySegment.copy(MemorySegment.ofArray(expected), expectedAt(i, l, b, spec, pageBytes),
                            t.deviceKv, t.layout.pageAddress(l, b, devPages[i]) - t.kvBase, pageBytes);
                    }
                }
            }
            cache.insert(seq, 0, tokens, devPages, 0);
            List<BackupHandle> backups = new ArrayList<>();
            cache.reserveByPolicy(cache.lastInsertNode(), false, backups);
            ForwardHooks h = cache.beginForward(backups);
            for (int l = 0; l < spec.layers(); l++) {
                h.targetLayerStored(l);
            }
            h.endForward();
            while (cache.backupsInFlight() > 0) {
                cache.poll();
                Thread.onSpinWait();
            }
            long bytes = 2L * spec.layers() * tokens * t.tokenBytes;
            MemorySegment src = arena.allocate(bytes, 64);
            MemorySegment dst = arena.allocate(bytes, 64);
            src.fill((byte) 1);
            KvLayerHooks hooks = new KvLayerHooks(t);
            DeviceKvViews views = new DeviceKvViews(t);
            MatchResult m = new MatchResult();
            double[] restore = new double[reps];
            double[] load = new double[reps];
            double[] issue = new double[reps];
            double[] plain = new double[reps];
            for (int i = 0; i < warmup + reps; i++) {
                int rep = Math.max(0, i - warmup);
                cache.evictDevice(Integer.MAX_VALUE, t.pool);
                ServeRequest r = new ServeRequest(i, seq, SamplingParams.greedy(1), System.nanoTime(), null, "bench");
                r.kv = views.bufferFor(model, r);
                long t0 = System.nanoTime();
                cache.match(seq, 0, tokens, m);
                LoadHandle lh = cache.loadBack(m, i, Integer.MAX_VALUE, t.pool);
                if (lh == null) {
                    throw new IllegalStateException("the prefix is not on the host tier");
                }
                cache.match(seq, 0, tokens, m);
                cache.lock(m.lastDeviceNode());
                long token = cache.startLoading();
                long tIssued = System.nanoTime();
                r.pages = Arrays.copyOf(m.devicePages(), m.devicePageCount());
                r.kvPages = r.pages;
                r.restored = tokens;
                hooks.start(r, null, token);
                for (int l = 0; l < spec.layers(); l++) { // as the first chunk does: block l runs once layer l landed
                    hooks.beforeLayer(l, tokens, 1, r.kv);
                }
                long t1 = System.nanoTime();
                hooks.clear();
                check(r.kv, expected, spec, tokens, pages, pageBytes);
                while (lh.state() != LoadHandle.State.LOADED && lh.state() != LoadHandle.State.FAILED) {
                    cache.poll();
                    Thread.onSpinWait();
                }
                restore[rep] = bytes / (double) (t1 - t0);
                load[rep] = r.loadWaitNs / (double) (t1 - t0);
                issue[rep] = (tIssued - t0) / (double) (t1 - t0);
                cache.unlock(m.lastDeviceNode());
                KvBufferCache.KvBuffer kv = r.kv;
                kv.close();
                long p0 = System.nanoTime();
                MemorySegment.copy(src, 0, dst, 0, bytes);
                plain[rep] = bytes / (double) (System.nanoTime() - p0);
            }
            return new Result(tokens, bytes, reps, median(restore), median(issue), median(load), median(plain));
        } finally {
            model.close();
        }
    }

    /** The prefix's KV as attention reads it from {@code kv}, against what was backed up. */
    private static void check(KvBufferCache.KvBuffer kv, byte[] expected, ModelSpec spec, int tokens, int pages,
                              int pageBytes) {
        MemorySegment exp = MemorySegment.ofArray(expected);
        for (int l = 0; l < spec.layers(); l++) {
            for (int b = 0; b < 2; b++) {
                AbstractTensor[] parts = b == 0 ? kv.getKeyTensorsUptoPosition(l, tokens - 1)
                    : kv.getValTensorsUptoPosition(l, tokens - 1);
                for (int i = 0; i < pages; i++) {
                    long at = expectedAt(i, l, b, spec, pageBytes);
                    if (MemorySegment.mismatch(parts[i].getMemorySegment(), 0, pageBytes, exp, at, at + pageBytes) >= 0) {
                        throw new IllegalStateException("restored KV differs from the backed-up KV at page " + i
                            + ", layer " + l + (b == 0 ? ", K" : ", V"));
                    }
                }
            }
        }
    }

    private static long expectedAt(int page, int layer, int buffer, ModelSpec spec, int pageBytes) {
        return (((long) page * spec.layers() + layer) * 2 + buffer) * pageBytes;
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
