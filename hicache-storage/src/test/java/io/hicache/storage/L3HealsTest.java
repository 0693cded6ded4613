package io.hicache.storage;

import io.hicache.core.LoadHandle;
import io.hicache.radix.MatchResult;
import io.hicache.storage.L3TierTest.Engine;
import io.hicache.storage.redis.RedisServerProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.stream.Stream;

import static io.hicache.storage.L3TierTest.namespace;
import static io.hicache.storage.L3TierTest.tokens;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * An L3 tier that heals: a live tier whose store lost its data (a real redis-server restarted or flushed, or keys
 * deleted behind its back) writes a recomputed prompt again, and a value damaged in place (bytes changed, truncated,
 * a wrong trailer) on Redis and on the file backend is rewritten by the next write of its page, so a fresh engine
 * hits the whole prefix again. Under the default prefetch policy the guide's admission pattern gets the hit from a
 * local Redis, and a prefetch its request runs without releases its lease so the request's own backup has room.
 * Engines go through the facade only ({@link L3TierTest.Engine}).
 */
class L3HealsTest {
    private static final int PAGE = 4;
    private static final int PAGES = 8;
    /** Remembered keys trusted for an hour of the cache clock, the store's epoch asked whenever it answered. */
    private static final StorageTierConfig EPOCH_ONLY = StorageTierConfig.DEFAULT.withPrefetchThresholdTokens(PAGE)
            .withKnownKeys(3_600_000_000_000L, 0);

    @TempDir
    Path dir;

    private RedisServerProcess redis() {
        return RedisServerProcess.start(dir.resolve("redis"));
    }

    private static PageStore open(RedisServerProcess r) {
        return PageStores.open("redis://127.0.0.1:" + r.port(), StoreConfig.defaults());
    }

    @Test
    void aTierOpenAcrossARedisRestartWritesARecomputedPromptAgainAndAFreshEngineHitsIt() {
        int[] t = tokens(500, PAGES * PAGE);
        try (RedisServerProcess r = redis()) {
            try (Engine a = new Engine(null); PageStore store = open(r)) {
                L3Tier l3 = L3Tier.attach(a.cache, store, namespace(), EPOCH_ONLY);
                writeAndForget(a, l3, t, 3, true, () -> {
                    r.kill();
                    r.restart(); // no persistence: the server comes back empty
                });
            }
            loadsWhole(r, t, 3);
        }
    }

    @Test
    void aTierOpenAcrossAFlushWritesARecomputedPromptAgainAndAFreshEngineHitsIt() {
        int[] t = tokens(700, PAGES * PAGE);
        try (RedisServerProcess r = redis()) {
            try (Engine a = new Engine(null); PageStore store = open(r)) {
                L3Tier l3 = L3Tier.attach(a.cache, store, namespace(), EPOCH_ONLY);
                writeAndForget(a, l3, t, 4, true, () -> r.command("FLUSHALL"));
            }
            loadsWhole(r, t, 4);
        }
    }

    @Test
    void rememberedKeysPastTheirAgeAreAskedAgainSoKeysDeletedBehindTheTiersBackAreWrittenAgain() {
        int[] t = tokens(900, PAGES * PAGE);
        // the epoch never changes here (single keys deleted): only the age bound can notice
        StorageTierConfig aged = StorageTierConfig.DEFAULT.withPrefetchThresholdTokens(PAGE)
                .withKnownKeys(1_000_000_000L, 3_600_000_000_000L);
        try (RedisServerProcess r = redis()) {
            try (Engine a = new Engine(null); PageStore store = open(r)) {
                L3Tier l3 = L3Tier.attach(a.cache, store, namespace(), aged);
                writeAndForget(a, l3, t, 5, false, () -> {
                    for (PageKey k : PageKeys.chain(namespace().seed(), t, PAGE)) {
                        assertThat(r.command("DEL", "hicache:" + k.hex())).isEqualTo(1L);
                    }
                    a.gpu.advanceTo(a.gpu.nowNs() + 2_000_000_000L); // past the age bound
                });
            }
            loadsWhole(r, t, 5);
        }
    }

    /**
     * {@code a} writes {@code t} through {@code l3}; then {@code loss} happens to the store; {@code a}'s cache drops
     * {@code t} (device and host) and computes it again: its tier must put all of it again. With {@code newEpoch}
     * the loss gives the store a new epoch, which the tier is waited for to see.
     */
    private static void writeAndForget(Engine a, L3Tier l3, int[] t, int tag, boolean newEpoch, Runnable loss) {
        a.forward(t, tag);
        a.settle(() -> l3.inFlight() == 0);
        assertThat(l3.metrics().get(StorageMetric.WRITE_PAGES_STORED)).isEqualTo(PAGES);
        loss.run();
        long resets = l3.metrics().get(StorageMetric.KNOWN_KEYS_RESETS);
        // the tier asks the store's epoch while it polls: settle once it answered after the loss (the store may
        // reject a while, backing off from the restart's broken connections)
        a.settle(() -> !newEpoch || l3.metrics().get(StorageMetric.KNOWN_KEYS_RESETS) > resets);
        evictEverything(a, l3);
        long stored = l3.metrics().get(StorageMetric.WRITE_PAGES_STORED);
        a.forward(t, tag);
        a.settle(() -> l3.inFlight() == 0);
        assertThat(l3.metrics().get(StorageMetric.WRITE_PAGES_STORED) - stored)
                .as("pages of the recomputed prompt written again").isEqualTo(PAGES);
    }

    /** Drops every node of {@code a}'s cache from device and host: other prompts fill the host pool. */
    private static void evictEverything(Engine a, L3Tier l3) {
        a.cache.evictDevice(Integer.MAX_VALUE, a.pool::free);
        int hostPages = a.cache.hostPool().capacityPages();
        for (int i = 0; i * PAGES < hostPages; i++) {
            a.forward(tokens(100_000 + i * 1000, PAGES * PAGE), 90 + i);
            a.settle(() -> l3.inFlight() == 0);
            a.cache.evictDevice(Integer.MAX_VALUE, a.pool::free);
        }
    }

    /** A fresh engine on {@code r} prefetches all of {@code t} and loads exactly the bytes computed with {@code tag}. */
    private static void loadsWhole(RedisServerProcess r, int[] t, int tag) {
        try (Engine b = new Engine(null); PageStore store = open(r)) {
            L3Tier l3 = L3Tier.attach(b.cache, store, namespace(), EPOCH_ONLY);
            LoadHandle load = b.prefetchAndLoad(l3, t, 1, PAGES);
            for (int i = 0; i < PAGES; i++) {
                assertThat(b.deviceHolds(load.devicePage(i), tag, i)).as("page %d", i).isTrue();
            }
        }
    }

    // ---------------------------------------------------------------- prefetch under the default policy

    @Test
    void theDefaultPolicyWithTheGuidesAdmissionPatternGetsTheHitFromALocalRedis() {
        int[] t = tokens(4000, PAGES * PAGE);
        StorageTierConfig cfg = StorageTierConfig.DEFAULT.withPrefetchThresholdTokens(PAGE); // the default policy
        try (RedisServerProcess r = redis()) {
            try (Engine a = new Engine(null); PageStore store = open(r)) {
                L3Tier l3 = L3Tier.attach(a.cache, store, namespace(), cfg);
                a.forward(t, 7);
                a.settle(() -> l3.inFlight() == 0);
            }
            try (Engine b = new Engine(null); PageStore store = open(r)) {
                L3Tier l3 = L3Tier.attach(b.cache, store, namespace(), cfg);
                MatchResult m = b.cache.match(t, 0, t.length, new MatchResult());
                L3Prefetch p = l3.prefetch(t, 0, t.length, m, 11);
                assertThat(p).isNotNull();
                // docs/INTEGRATION.md: each step, schedule the request once `p == null || p.mayRun()`
                b.settle(() -> p.mayRun());
                m = b.cache.match(t, 0, t.length, new MatchResult());
                assertThat(m.hostPageCount()).as("host hits when the request is scheduled").isEqualTo(PAGES);
                LoadHandle load = b.cache.loadBack(m, 11, Integer.MAX_VALUE, b.pool);
                assertThat(load).isNotNull();
                p.consume();
                b.cache.startLoading();
                b.settle(() -> load.state() == LoadHandle.State.LOADED || load.state() == LoadHandle.State.FAILED);
                for (int i = 0; i < PAGES; i++) {
                    assertThat(b.deviceHolds(load.devicePage(i), 7, i)).as("page %d", i).isTrue();
                }
                assertThat(l3.metrics().get(StorageMetric.PREFETCH_TERMINATED_EARLY)).isZero();
            }
        }
    }

    @Test
    void aPrefetchItsRequestRunsWithoutReleasesItsLeaseSoTheRequestsOwnBackupHasRoom() {
        // 40 pages, a host pool of 64 of which a prefetch may lease half: the request's own backup needs 40
        int pages = 40;
        int[] t = tokens(6000, pages * PAGE);
        StorageTierConfig bestEffort = StorageTierConfig.DEFAULT.withPrefetchThresholdTokens(PAGE)
                .withPrefetchPolicy(PrefetchPolicy.BEST_EFFORT);
        try (RedisServerProcess r = redis(); Engine b = new Engine(null); PageStore store = open(r)) {
            L3Tier l3 = L3Tier.attach(b.cache, store, namespace(), bestEffort);
            int free = b.cache.hostPool().freePages();
            MatchResult m = b.cache.match(t, 0, t.length, new MatchResult());
            L3Prefetch p = l3.prefetch(t, 0, t.length, m, 12);
            assertThat(p).isNotNull();
            assertThat(p.pageCount()).isEqualTo(32); // half the pool
            assertThat(l3.metrics().get(StorageMetric.PREFETCH_CUT_BY_SHARE)).isEqualTo(1);
            assertThat(free - b.cache.hostPool().freePages()).as("leased").isEqualTo(32);
            assertThat(p.mayRun()).isTrue(); // runs without it: the prefetch is abandoned
            assertThat(b.cache.hostPool().freePages()).as("lease released at once").isEqualTo(free);
            b.forward(t, 8); // its backup reserves 40 host pages: it must find them
            b.settle(() -> l3.inFlight() == 0 && p.isDone());
            assertThat(p.publishedPages()).isZero();
            assertThat(l3.metrics().get(StorageMetric.WRITE_PAGES_STORED)).isEqualTo(pages);
        }
    }

    @Test
    void aRedisStoreWithATimeToLiveGivesEveryPutOneAndReportsTheBytesTheServerHolds() {
        int[] t = tokens(8000, PAGES * PAGE);
        try (RedisServerProcess r = redis(); Engine a = new Engine(null);
             PageStore store = PageStores.open("redis://127.0.0.1:" + r.port(),
                     StoreConfig.builder().redisTtlSeconds(600).build());
             PageStore plain = open(r)) {
            assertThat(plain.stats().storedBytes()).as("before the first epoch answer").isEqualTo(-1);
            L3Tier l3 = L3Tier.attach(a.cache, store, namespace(), EPOCH_ONLY);
            a.forward(t, 9);
            a.settle(() -> l3.inFlight() == 0 && store.stats().storedBytes() > 0); // the tier asks the epoch
            for (PageKey k : PageKeys.chain(namespace().seed(), t, PAGE)) {
                assertThat((Long) r.command("TTL", "hicache:" + k.hex())).isBetween(1L, 600L);
            }
            await(plain.put(List.of(PageKeys.chain(namespace().seed(), tokens(1, PAGE), PAGE)[0]),
                    List.of(HostPage.of(java.lang.foreign.Arena.ofAuto().allocate(64)))));
            assertThat(r.command("TTL", "hicache:" + PageKeys.chain(namespace().seed(), tokens(1, PAGE), PAGE)[0]
                    .hex())).as("no time to live by default").isEqualTo(-1L);
        }
    }

    private static void await(StoreOp<StoreResult> op) {
        try {
            assertThat(op.await(20, java.util.concurrent.TimeUnit.SECONDS).allOk()).isTrue();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    // ---------------------------------------------------------------- damage

    /** How a stored value of one page is damaged in place. */
    enum Damage {
        /** One data byte changed: length and trailer still valid, only the checksum tells. */
        CHANGED_BYTE,
        /** The value cut 10 bytes short. */
        TRUNCATED,
        /** The last byte of the trailer (its end magic) changed. */
        WRONG_TRAILER
    }

    private static final int DAMAGED = 3;

    @ParameterizedTest
    @EnumSource(Damage.class)
    void aRedisValueDamagedInPlaceIsRewrittenByTheNextWriteAndAFreshEngineHitsTheWholePrefix(Damage damage) {
        int[] t = tokens(2000 + damage.ordinal() * 100, PAGES * PAGE);
        try (RedisServerProcess r = redis()) {
            healsAfterDamage(() -> open(r), t, key -> damageRedis(r, "hicache:" + key.hex(), damage));
        }
    }

    @ParameterizedTest
    @EnumSource(Damage.class)
    void aFileObjectDamagedInPlaceIsRewrittenByTheNextWriteAndAFreshEngineHitsTheWholePrefix(Damage damage) {
        int[] t = tokens(3000 + damage.ordinal() * 100, PAGES * PAGE);
        Path files = dir.resolve("l3");
        healsAfterDamage(() -> PageStores.open("file:" + files, StoreConfig.defaults()), t,
                key -> damageFile(files, key, damage));
    }

    private interface Damager {
        void damage(PageKey key);
    }

    /**
     * Engine A writes {@code t}; page {@link #DAMAGED}'s value is damaged; engine B (fresh) prefetches and gets the
     * pages before it, the damaged one counted corrupt, computes the rest and writes it; engine C (fresh) then hits
     * every page with A's bytes.
     */
    private static void healsAfterDamage(java.util.function.Supplier<PageStore> stores, int[] t, Damager damager) {
        StorageTierConfig cfg = StorageTierConfig.DEFAULT.withPrefetchThresholdTokens(PAGE);
        try (Engine a = new Engine(null); PageStore store = stores.get()) {
            L3Tier l3 = L3Tier.attach(a.cache, store, namespace(), cfg);
            a.forward(t, 6);
            a.settle(() -> l3.inFlight() == 0);
            assertThat(l3.metrics().get(StorageMetric.WRITE_PAGES_STORED)).isEqualTo(PAGES);
        }
        damager.damage(PageKeys.chain(namespace().seed(), t, PAGE)[DAMAGED]);
        try (Engine b = new Engine(null); PageStore store = stores.get()) {
            L3Tier l3 = L3Tier.attach(b.cache, store, namespace(), cfg);
            LoadHandle load = b.prefetchAndLoad(l3, t, 2, DAMAGED); // readers stop before it: no wrong byte
            if (l3.metrics().get(StorageMetric.PREFETCH_PAGES_GONE) > 0) { // the existence check found it
                assertThat(l3.metrics().get(StorageMetric.CORRUPT_PAGES)).isEqualTo(1);
            }
            int[] prefix = new int[DAMAGED];
            for (int i = 0; i < DAMAGED; i++) {
                prefix[i] = load.devicePage(i);
            }
            long stored = l3.metrics().get(StorageMetric.WRITE_PAGES_STORED);
            b.forwardRest(t, 6, prefix);
            b.settle(() -> l3.inFlight() == 0);
            assertThat(l3.metrics().get(StorageMetric.WRITE_PAGES_STORED) - stored)
                    .as("the damaged page and those after it put").isEqualTo(PAGES - DAMAGED);
        }
        try (Engine c = new Engine(null); PageStore store = stores.get()) {
            L3Tier l3 = L3Tier.attach(c.cache, store, namespace(), cfg);
            LoadHandle load = c.prefetchAndLoad(l3, t, 3, PAGES);
            for (int i = 0; i < PAGES; i++) {
                assertThat(c.deviceHolds(load.devicePage(i), 6, i)).as("page %d", i).isTrue();
            }
            MatchResult m = c.cache.match(t, 0, t.length, new MatchResult());
            assertThat(m.devicePageCount()).isEqualTo(PAGES);
            assertThat(l3.metrics().get(StorageMetric.CORRUPT_PAGES)).isZero();
        }
    }

    /** Damages a Redis value in place, on the server (binary-safe Lua). */
    private static void damageRedis(RedisServerProcess r, String key, Damage damage) {
        String script = switch (damage) {
            case CHANGED_BYTE -> "local c = string.byte(redis.call('GETRANGE', KEYS[1], 5, 5)); "
                    + "return redis.call('SETRANGE', KEYS[1], 5, string.char((c + 1) % 256))";
            case TRUNCATED -> "local v = redis.call('GET', KEYS[1]); "
                    + "redis.call('SET', KEYS[1], string.sub(v, 1, #v - 10)); return #v - 10";
            case WRONG_TRAILER -> "local n = redis.call('STRLEN', KEYS[1]); "
                    + "local c = string.byte(redis.call('GETRANGE', KEYS[1], n - 1, n - 1)); "
                    + "return redis.call('SETRANGE', KEYS[1], n - 1, string.char((c + 1) % 256))";
        };
        assertThat(r.command("EVAL", script, "1", key)).isInstanceOf(Long.class);
    }

    /** Damages the file backend's object of {@code key} under {@code root} in place. */
    private static void damageFile(Path root, PageKey key, Damage damage) {
        try (Stream<Path> all = Files.walk(root)) {
            List<Path> found = all.filter(p -> p.getFileName().toString().contains(key.hex())).toList();
            assertThat(found).hasSize(1);
            try (FileChannel ch = FileChannel.open(found.getFirst(), StandardOpenOption.READ,
                    StandardOpenOption.WRITE)) {
                long size = ch.size();
                switch (damage) {
                    case CHANGED_BYTE -> flip(ch, 5);
                    case TRUNCATED -> ch.truncate(size - 10);
                    case WRONG_TRAILER -> flip(ch, size - 1);
                }
            }
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private static void flip(FileChannel ch, long at) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(1);
        ch.read(b, at);
        b.put(0, (byte) (b.get(0) + 1)).rewind();
        ch.write(b, at);
    }
}
