package io.hicache.storage.tier;

import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.storage.PageStore;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageMetric;
import io.hicache.storage.StorageTierConfig;
import io.hicache.storage.StorageWritePolicy;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The storage tier on real controllers: write policies, prefetch, agreement, and leases that never leak. */
class StorageTierTest {
    private static final int PAGE = 4;
    private static final StorageTierConfig CFG = StorageTierConfig.DEFAULT.withPrefetchThresholdTokens(0)
            .withPrefetchHostShare(1.0);

    @Test
    void writeThroughStoresCommittedPagesAndARestartedCacheFindsThemWithTheirBytes() {
        FaultyPageStore store = new FaultyPageStore(1);
        int[] t = TierRig.tokens(100, 8 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 5);
            assertThat(store.inner.pageCount()).isEqualTo(8);
            assertThat(a.tier[0].metrics().get(StorageMetric.WRITE_PAGES_STORED)).isEqualTo(8);
            assertThat(a.tier[0].metrics().get(StorageMetric.WRITE_BYTES))
                    .isEqualTo(8 * a.ctl[0].hostPool().bytesPerPageAllLayers());
            a.checkNoLeak();
        }
        try (TierRig b = new TierRig(1, PAGE, 64, 64, store, CFG, "")) { // a restart: empty tree, same store
            StorageTier.Prefetch p = b.prefetch(t, 1)[0];
            assertThat(p).isNotNull();
            b.drain();
            assertThat(p.state()).isEqualTo(StorageTier.Prefetch.State.ENDED);
            assertThat(p.publishedPages()).isEqualTo(8);
            MatchResult m = b.match(t)[0];
            assertThat(m.hostPageCount()).isEqualTo(8);
            assertThat(b.hostHoldsPattern(0, m.lastHostNode(), 0, 5)).isTrue();
            assertThat(m.lastHostNode().hasPageHashes()).isTrue();
            // pages prefetched are known to be stored: backing them up again writes nothing
            assertThat(b.tier[0].metrics().get(StorageMetric.PREFETCH_PAGES_PUBLISHED)).isEqualTo(8);
            b.checkNoLeak();
        }
    }

    @Test
    void pagesAlreadyStoredAreNotWrittenAgain() {
        FaultyPageStore store = new FaultyPageStore(2);
        int[] t = TierRig.tokens(7, 6 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 1);
        }
        try (TierRig b = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            b.compute(t, 1);
            assertThat(b.tier[0].metrics().get(StorageMetric.WRITE_PAGES_PRESENT)).isEqualTo(6);
            assertThat(b.tier[0].metrics().get(StorageMetric.WRITE_PAGES_SUBMITTED)).isZero();
        }
        assertThat(store.inner.stats().putPages()).isEqualTo(6);
    }

    @Test
    void twoSaltsOnOneStoreSeeNothingOfEachOther() {
        FaultyPageStore store = new FaultyPageStore(3);
        int[] t = TierRig.tokens(1, 4 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "tenant-a")) {
            a.compute(t, 1);
        }
        try (TierRig b = new TierRig(1, PAGE, 64, 64, store, CFG, "tenant-b")) {
            StorageTier.Prefetch p = b.prefetch(t, 1)[0];
            b.drain();
            assertThat(p.publishedPages()).isZero();
            assertThat(b.match(t)[0].hostPageCount()).isZero();
            b.checkNoLeak();
        }
    }

    @Test
    void writeBackWritesOnlyWhatLeavesTheHost() {
        FaultyPageStore store = new FaultyPageStore(4);
        int[] t = TierRig.tokens(50, 5 * PAGE);
        StorageTierConfig cfg = CFG.withWritePolicy(StorageWritePolicy.WRITE_BACK);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, cfg, "")) {
            a.compute(t, 9);
            assertThat(store.inner.pageCount()).isZero();
            a.evictAll();
            assertThat(store.inner.pageCount()).isEqualTo(5);
            a.checkNoLeak();
        }
        restartPrefetchesAll(store, cfg, t, 5, 9);
    }

    /**
     * A restarted cache on {@code store} (empty tree) prefetches all {@code pages} of {@code t}, with the bytes of
     * the computation tagged {@code tag}, and leaks nothing.
     */
    private static void restartPrefetchesAll(PageStore store, StorageTierConfig cfg, int[] t, int pages, int tag) {
        try (TierRig b = new TierRig(1, PAGE, 64, 64, store, cfg, "")) {
            StorageTier.Prefetch p = b.prefetch(t, 1)[0];
            b.drain();
            assertThat(p.publishedPages()).isEqualTo(pages);
            assertThat(b.hostHoldsPattern(0, b.match(t)[0].lastHostNode(), 0, tag)).isTrue();
            b.checkNoLeak();
        }
    }

    @Test
    void writeBackOfANodeLargerThanAStoreBatchWritesItABatchAtATime() {
        MemoryPageStore store = new MemoryPageStore(0, 4); // 4 keys per call
        int[] t = TierRig.tokens(70, 10 * PAGE); // one node of 10 pages
        StorageTierConfig cfg = CFG.withWritePolicy(StorageWritePolicy.WRITE_BACK);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, cfg, "")) {
            a.compute(t, 4);
            a.evictAll();
            assertThat(store.pageCount()).isEqualTo(10);
            a.tier[0].poll(); // the last batch's put, answered at once, is counted at the next poll
            assertThat(a.tier[0].metrics().get(StorageMetric.WRITE_PAGES_STORED)).isEqualTo(10);
            a.checkNoLeak();
        }
        restartPrefetchesAll(store, cfg, t, 10, 4);
    }

    @Test
    void writeThroughSelectiveWaitsForTheHitThreshold() {
        FaultyPageStore store = new FaultyPageStore(5);
        int[] t = TierRig.tokens(300, 3 * PAGE);
        StorageTierConfig cfg = CFG.withWritePolicy(StorageWritePolicy.WRITE_THROUGH_SELECTIVE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, cfg, "")) {
            a.compute(t, 2);
            assertThat(store.inner.pageCount()).isZero(); // hit count 1 < 2
            a.ctl[0].tree().insert(t, 0, t.length, new int[3], 0); // a second request over the same pages
            a.tier[0].onMatch(a.match(t)[0]);
            a.drain();
            assertThat(store.inner.pageCount()).isEqualTo(3);
        }
    }

    @Test
    void prefetchExtendsAPartlyCachedPrefixAndRespectsThreshold() {
        FaultyPageStore store = new FaultyPageStore(6);
        int[] t = TierRig.tokens(0, 10 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 3);
        }
        StorageTierConfig cfg = CFG.withPrefetchThresholdTokens(6 * PAGE);
        try (TierRig b = new TierRig(1, PAGE, 64, 64, store, cfg, "")) {
            int[] head = java.util.Arrays.copyOf(t, 5 * PAGE);
            b.compute(head, 3); // 5 pages cached here; storage could add 5 more: not above the 6-page threshold
            assertThat(b.prefetch(t, 1)[0]).isNull();
        }
        try (TierRig c = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            c.compute(java.util.Arrays.copyOf(t, 5 * PAGE), 3);
            StorageTier.Prefetch p = c.prefetch(t, 1)[0];
            assertThat(p.startPage()).isEqualTo(5);
            c.drain();
            assertThat(p.publishedPages()).isEqualTo(5);
            MatchResult m = c.match(t)[0];
            assertThat(m.devicePageCount()).isEqualTo(5);
            assertThat(m.hostPageCount()).isEqualTo(5);
            assertThat(c.hostHoldsPattern(0, m.lastHostNode(), 5, 3)).isTrue();
            c.checkNoLeak();
        }
    }

    @Test
    void prefetchHoldsAtMostItsShareOfTheHostPool() {
        FaultyPageStore store = new FaultyPageStore(7);
        int[] t = TierRig.tokens(0, 12 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 1);
        }
        store.holdAll();
        StorageTierConfig cfg = CFG.withPrefetchHostShare(0.5); // 8 of 16 host pages
        try (TierRig b = new TierRig(1, PAGE, 64, 16, store, cfg, "")) {
            StorageTier.Prefetch p = b.prefetch(t, 1)[0];
            assertThat(p.pageCount()).isEqualTo(8);
            assertThat(b.ctl[0].allocator().allocatedPages()).isEqualTo(8);
            assertThat(b.prefetch(TierRig.tokens(1000, 4 * PAGE), 2)[0]).isNull(); // share exhausted
            assertThat(b.tier[0].metrics().get(StorageMetric.PREFETCH_NO_ROOM)).isEqualTo(1);
            store.releaseAll();
            b.drain();
            assertThat(p.publishedPages()).isEqualTo(8);
            b.checkNoLeak();
        }
    }

    @Test
    void terminationPolicies() {
        FaultyPageStore store = new FaultyPageStore(8);
        int[] t = TierRig.tokens(0, 8 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 1);
        }
        for (PrefetchPolicy policy : PrefetchPolicy.values()) {
            store.holdAll();
            // timeout: 1 s base + 0.1 s per 1,024 tokens; 32 tokens -> 1.003125 s
            try (TierRig b = new TierRig(1, PAGE, 64, 64, store, CFG.withPrefetchPolicy(policy), "")) {
                StorageTier.Prefetch p = b.prefetch(t, 1)[0];
                b.drain();
                switch (policy) {
                    case BEST_EFFORT -> assertThat(b.tier[0].mayRun(p)).isTrue();
                    case WAIT_COMPLETE -> {
                        b.clockNs = Long.MAX_VALUE / 2;
                        assertThat(b.tier[0].mayRun(p)).isFalse();
                    }
                    case TIMEOUT -> {
                        b.clockNs = 1_003_124_999L;
                        assertThat(b.tier[0].mayRun(p)).isFalse();
                        b.clockNs = 1_003_125_000L;
                        assertThat(b.tier[0].mayRun(p)).isTrue();
                    }
                }
                store.releaseAll();
                b.drain();
                assertThat(p.state()).isEqualTo(StorageTier.Prefetch.State.ENDED);
                assertThat(b.tier[0].mayRun(p)).isTrue();
                // a prefetch its request ran without is abandoned: it publishes nothing (the request computes
                // those pages itself) and its lease is gone (checkNoLeak)
                assertThat(p.publishedPages()).isEqualTo(policy == PrefetchPolicy.WAIT_COMPLETE ? 8 : 0);
                b.checkNoLeak();
            }
        }
        store.releaseAll();
    }

    @Test
    void aCancelledRequestsReservationIsReleasedNotPublished() {
        FaultyPageStore store = new FaultyPageStore(9);
        int[] t = TierRig.tokens(0, 8 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 1);
        }
        store.holdAll();
        try (TierRig b = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            StorageTier.Prefetch p = b.prefetch(t, 1)[0];
            b.drain();
            b.tier[0].cancel(p);
            assertThat(b.ctl[0].allocator().allocatedPages()).isEqualTo(8); // the store still owns them
            store.releaseAll();
            b.drain();
            b.drain();
            assertThat(p.state()).isEqualTo(StorageTier.Prefetch.State.ENDED);
            assertThat(p.publishedPages()).isZero();
            assertThat(b.match(t)[0].hostPageCount()).isZero();
            assertThat(b.ctl[0].allocator().allocatedPages()).isZero();
            b.checkNoLeak();
        }
    }

    @Test
    void aFailedReadPublishesOnlyThePagesBeforeItAndReleasesTheRest() {
        FaultyPageStore store = new FaultyPageStore(10);
        int[] t = TierRig.tokens(0, 8 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 4);
        }
        store.failGet = 1;
        try (TierRig b = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            StorageTier.Prefetch p = b.prefetch(t, 1)[0];
            b.drain();
            assertThat(p.publishedPages()).isZero();
            assertThat(b.tier[0].metrics().get(StorageMetric.PREFETCH_FAILED_PAGES)).isEqualTo(8);
            assertThat(b.ctl[0].allocator().allocatedPages()).isZero();
            b.checkNoLeak();
        }
    }

    @Test
    void shutdownWithPrefetchesAndWritesInFlightReleasesEverything() {
        FaultyPageStore store = new FaultyPageStore(11);
        int[] t = TierRig.tokens(0, 8 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 1);
        }
        store.holdAll();
        TierRig b = new TierRig(1, PAGE, 64, 64, store, CFG, "");
        StorageTier.Prefetch p = b.prefetch(t, 1)[0];
        b.compute(TierRig.tokens(5000, 4 * PAGE), 2); // its write is held too
        assertThat(b.tier[0].inFlight()).isEqualTo(2);
        assertThatThrownBy(() -> b.tier[0].close(50)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("close the store");
        store.releaseAll(); // closing the store completes what it holds
        b.tier[0].close(5_000);
        assertThat(p.state()).isEqualTo(StorageTier.Prefetch.State.ENDED);
        assertThat(p.publishedPages()).isZero();
        assertThat(b.tier[0].inFlight()).isZero();
        b.checkNoLeak();
        RadixNode n = b.match(TierRig.tokens(5000, 4 * PAGE))[0].lastHostNode();
        assertThat(n.hostRef()).isZero(); // the write's host protection was dropped
        b.close();
    }

    @Test
    void anUnavailableBackendCountsFailuresAndTheCacheKeepsServing() {
        FaultyPageStore store = new FaultyPageStore(12);
        store.unavailable = true;
        int[] t = TierRig.tokens(0, 4 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 1);
            assertThat(a.tier[0].metrics().get(StorageMetric.WRITE_FAILED_PAGES)).isEqualTo(4);
            MatchResult m = a.match(t)[0];
            assertThat(m.devicePageCount()).isEqualTo(4); // L1 still serves
            assertThat(m.lastDeviceNode().isHostResident()).isTrue(); // and L2 holds the backup
            a.evictAll();
            assertThat(a.prefetch(t, 1)[0]).isNotNull();
            a.drain();
            assertThat(a.match(t)[0].hostPageCount()).isZero();
            a.checkNoLeak();
        }
    }

    @Test
    void aCpGroupPublishesOnlyWhatEveryLaneHas() {
        FaultyPageStore store = new FaultyPageStore(13);
        int[] t = TierRig.tokens(0, 8 * PAGE);
        try (TierRig a = new TierRig(2, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 6);
            assertThat(store.inner.pageCount()).isEqualTo(8); // 4 positions per lane, each under its lane's keys
        }
        try (TierRig b = new TierRig(2, PAGE, 64, 64, store, CFG, "")) {
            StorageTier.Prefetch[] p = b.prefetch(t, 1);
            b.drain();
            for (int r = 0; r < 2; r++) {
                assertThat(p[r].publishedPages()).isEqualTo(8);
                MatchResult m = b.match(t)[r];
                assertThat(m.hostPageCount()).isEqualTo(8);
                assertThat(b.hostHoldsPattern(r, m.lastHostNode(), 0, 6)).isTrue();
            }
            b.checkNoLeak();
        }
        // lane 1 loses its part of position 5 (its third key; lane 0 still has 4 and 6): the group stops at 5
        try (TierRig c = new TierRig(2, PAGE, 64, 64, store, CFG, "")) {
            StorageTier.Prefetch[] p = c.prefetch(t, 1); // only to learn lane 1's keys
            store.inner.remove(java.util.List.of(p[1].keys.get(2)));
            c.drain();
        }
        try (TierRig d = new TierRig(2, PAGE, 64, 64, store, CFG, "")) {
            StorageTier.Prefetch[] p = d.prefetch(t, 1);
            d.drain();
            assertThat(p[0].publishedPages()).isEqualTo(5);
            assertThat(p[1].publishedPages()).isEqualTo(5);
            for (int r = 0; r < 2; r++) {
                assertThat(d.match(t)[r].hostPageCount()).isEqualTo(5);
            }
            d.checkNoLeak();
        }
    }
}
