package io.hicache.sim.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.radix.EvictionPolicy;
import io.hicache.sim.BackupMode;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.SimConfig;
import io.hicache.sim.StorageOptions;
import io.hicache.sim.model.GpuPreset;
import io.hicache.sim.model.ModelPreset;
import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import io.hicache.storage.PageStore;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageWritePolicy;
import io.hicache.storage.StoreOp;
import io.hicache.storage.StoreResult;
import io.hicache.storage.StoreStats;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A replay over a real store gives the same simulated results however fast or slow the store's I/O is: every
 * operation of the file store starts and completes after random wall-clock delays, seeded differently in each run,
 * and two first runs, then two restart runs on identical copies of the first run's directory, must agree in every
 * simulated figure of the JSON (only wall-clock figures and the store's location may differ).
 */
class StorageDeterminismTest {

    @TempDir
    Path work;

    @AfterEach
    void unwrap() {
        StorageSim.wrapStoreForTests = null;
    }

    @Test
    void fileStoreRunsAndRestartsAgreeWhateverTheIoSpeed() throws IOException {
        ObjectNode first = replay(work.resolve("a"), 1);
        assertThat(differences(first, replay(work.resolve("b"), 2))).as("first runs differ").isEmpty();
        copy(work.resolve("a"), work.resolve("c"));
        copy(work.resolve("a"), work.resolve("d"));
        ObjectNode restart = replay(work.resolve("c"), 3);
        assertThat(differences(restart, replay(work.resolve("d"), 4))).as("restart runs differ").isEmpty();
        assertThat(first.get("storage_write_pages").asLong()).as("the first run's writes").isPositive();
        assertThat(restart.get("storage_hit_tokens").asLong()).as("the restart finds what the first run committed")
                .isGreaterThan(first.get("storage_hit_tokens").asLong());
    }

    /** One replay on a small host tier with the file store in {@code dir}, its I/O delayed (seed {@code jitter}). */
    private static ObjectNode replay(Path dir, long jitter) {
        StorageSim.wrapStoreForTests = s -> new JitteryStore(s, jitter);
        SimConfig c = new SimConfig(ModelPreset.LLAMA3_70B, GpuPreset.H200_SXM, 512, 64, 50_000, 100_000,
                WritePolicy.WRITE_THROUGH, BackupMode.LAYERED, EvictionPolicy.LRU, 1, OwnerLanes.Standard.ROUND_ROBIN, 0, false,
                0, 1.0);
        StorageOptions o = new StorageOptions(StorageOptions.Kind.FILE, "file:" + dir, 0,
                StorageOptions.DEFAULT_BANDWIDTH_BYTES_PER_SECOND, StorageOptions.DEFAULT_LATENCY_NS,
                StorageWritePolicy.WRITE_THROUGH, PrefetchPolicy.TIMEOUT, 256);
        ServingEngine engine = new ServingEngine(null, o);
        try {
            ObjectNode n = ServingEngineTest.jsonWithoutWall(engine.run(c, ServingEngineTest.bundled(100),
                    ProgressListener.NONE));
            n.remove(List.of("storage", "storage_write_bytes_per_s", "prefetch_bytes_per_s")); // location, wall clock
            return n;
        } catch (Exception e) {
            throw new AssertionError(e);
        } finally {
            StorageSim.wrapStoreForTests = null;
        }
    }

    /** The fields whose values differ, each with both values. */
    private static List<String> differences(ObjectNode a, ObjectNode b) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, JsonNode> e : a.properties()) {
            JsonNode other = b.get(e.getKey());
            if (!e.getValue().equals(other)) {
                out.add(e.getKey() + ": " + e.getValue() + " vs " + other);
            }
        }
        return out;
    }

    private static void copy(Path from, Path to) throws IOException {
        try (Stream<Path> files = Files.walk(from)) {
            files.forEach(p -> {
                try {
                    Files.copy(p, to.resolve(from.relativize(p).toString()));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }

    /**
     * A store whose every operation is submitted to the wrapped one after a random delay and reported done a random
     * delay after it completed (up to JITTER_US each, seeded): the same I/O at another speed, reordered differently.
     */
    static final class JitteryStore implements PageStore {
        static final int JITTER_US = 300;
        private final PageStore store;
        private final Random random;
        private final ScheduledExecutorService delays = Executors.newScheduledThreadPool(4, r -> {
            Thread t = new Thread(r, "jittery-store");
            t.setDaemon(true);
            return t;
        });

        JitteryStore(PageStore store, long seed) {
            this.store = store;
            this.random = new Random(seed);
        }

        private <T> StoreOp<T> later(Supplier<StoreOp<T>> submit) {
            StoreOp<T> op = new StoreOp<>();
            long start;
            long end;
            synchronized (random) {
                start = random.nextInt(JITTER_US);
                end = random.nextInt(JITTER_US);
            }
            delays.schedule(() -> submit.get().stage().thenAccept(
                    v -> delays.schedule(() -> op.complete(v), end, TimeUnit.MICROSECONDS)),
                    start, TimeUnit.MICROSECONDS);
            return op;
        }

        @Override
        public int maxBatchPages() {
            return store.maxBatchPages();
        }

        @Override
        public StoreOp<Integer> existsPrefix(List<PageKey> keys) {
            List<PageKey> k = List.copyOf(keys);
            return later(() -> store.existsPrefix(k));
        }

        @Override
        public StoreOp<StoreResult> put(List<PageKey> keys, List<HostPage> pages) {
            List<PageKey> k = List.copyOf(keys);
            List<HostPage> p = List.copyOf(pages);
            return later(() -> store.put(k, p));
        }

        @Override
        public StoreOp<StoreResult> get(List<PageKey> keys, List<HostPage> pages) {
            List<PageKey> k = List.copyOf(keys);
            List<HostPage> p = List.copyOf(pages);
            return later(() -> store.get(k, p));
        }

        @Override
        public StoreOp<StoreResult> remove(List<PageKey> keys) {
            List<PageKey> k = List.copyOf(keys);
            return later(() -> store.remove(k));
        }

        @Override
        public boolean registerHostMemory(MemorySegment region) {
            return store.registerHostMemory(region);
        }

        @Override
        public StoreStats stats() {
            return store.stats();
        }

        @Override
        public void close() {
            delays.shutdown();
            try {
                if (!delays.awaitTermination(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("jittery store: delayed operations still pending after 30 s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            store.close();
        }
    }
}
