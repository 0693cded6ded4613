package io.hicache.serve.engine;

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
 * The restore row of {@code bench-serve}: how fast a cached prefix's KV goes from the host tier into the engine's
 * attention buffers, end to end as a request restores it (load-back host → device pages on the load stream, layer by
 * layer, and the engine's mirror of each landed layer into Jlama's KV buffer), against one plain memory copy of the
 * same bytes, measured in the same run. A prefix is backed up once, then, per repetition, evicted from the device and
 * restored; the figures are medians. Runs on the calling thread (it becomes the cache's scheduler thread).
 */
public final class RestoreBench {
    /**
     * The row's figures: bytes per restore, the medians in GB/s (10^9 bytes per second), and the share of the restore
     * spent waiting for loaded layers (the rest is the mirror's copies).
     */
    public record Result(int tokens, long bytes, int repetitions, double restoreGbps, double loadWaitShare,
                         double plainCopyGbps) {
        /** Restore over plain copy. */
        public double ratio() {
            return restoreGbps / plainCopyGbps;
        }
    }

    private RestoreBench() {
    }

    /**
     * Backs up a {@code tokens}-token prefix, then restores it {@code 4 * reps} times and reports the medians of the
     * last {@code reps} (the first ones warm the JIT up, as a serving engine's own restores have).
     */
    public static Result run(ModelSpec spec, int tokens, int pageSize, int reps) {
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
            byte[] noise = new byte[(int) t.layout.pageBytes()];
            for (int p : devPages) {
                for (int l = 0; l < spec.layers(); l++) {
                    for (int b = 0; b < 2; b++) {
                        rnd.nextBytes(noise);
                        MemorySegment.copy(MemorySegment.ofArray(noise), 0, t.deviceKv,
                            t.layout.pageAddress(l, b, p) - t.kvBase, noise.length);
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
            KvMirror mirror = new KvMirror(t);
            MatchResult m = new MatchResult();
            double[] restore = new double[reps];
            double[] load = new double[reps];
            double[] plain = new double[reps];
            for (int i = 0; i < warmup + reps; i++) {
                int rep = Math.max(0, i - warmup);
                cache.evictDevice(Integer.MAX_VALUE, t.pool);
                ServeRequest r = new ServeRequest(i, seq, SamplingParams.greedy(1), System.nanoTime(), null, "bench");
                r.kv = model.newKvBuffer();
                for (int l = 0; l < spec.layers(); l++) { // Jlama allocates its pages on first touch: not the restore's cost
                    r.kv.getKeyTensorsUptoPosition(l, tokens - 1);
                    r.kv.getValTensorsUptoPosition(l, tokens - 1);
                }
                long t0 = System.nanoTime();
                cache.match(seq, 0, tokens, m);
                LoadHandle lh = cache.loadBack(m, i, Integer.MAX_VALUE, t.pool);
                if (lh == null) {
                    throw new IllegalStateException("the prefix is not on the host tier");
                }
                cache.match(seq, 0, tokens, m);
                cache.lock(m.lastDeviceNode());
                long token = cache.startLoading();
                r.pages = Arrays.copyOf(m.devicePages(), m.devicePageCount());
                r.restored = tokens;
                mirror.start(r, null, token);
                for (int l = 0; l < spec.layers(); l++) {
                    mirror.beforeLayer(l, tokens, 1, r.kv);
                }
                long t1 = System.nanoTime();
                mirror.clear();
                while (lh.state() != LoadHandle.State.LOADED && lh.state() != LoadHandle.State.FAILED) {
                    cache.poll();
                    Thread.onSpinWait();
                }
                restore[rep] = bytes / (double) (t1 - t0);
                load[rep] = r.loadWaitNs / (double) (t1 - t0);
                cache.unlock(m.lastDeviceNode());
                KvBufferCache.KvBuffer kv = r.kv;
                kv.close();
                long p0 = System.nanoTime();
                MemorySegment.copy(src, 0, dst, 0, bytes);
                plain[rep] = bytes / (double) (System.nanoTime() - p0);
            }
            return new Result(tokens, bytes, reps, median(restore), median(load), median(plain));
        } finally {
            model.close();
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
