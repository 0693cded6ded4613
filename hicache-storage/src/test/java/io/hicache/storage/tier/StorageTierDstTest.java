package io.hicache.storage.tier;

import io.hicache.radix.RadixNode;
import io.hicache.radix.TierListener;
import io.hicache.storage.StorageTierConfig;
import io.hicache.storage.StorageWritePolicy;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeded simulation of the storage tier under L3 faults: failed puts, torn writes (never committed), lost commit
 * markers (put answered OK, object invisible), slow operations completing in any order, failed reads that leave
 * garbage in the page, an unavailable backend. Per seed: a CP group of 1 or 2 ranks, page size 1, 2 or 4, a small
 * host pool, a random write policy, with or without draft/MTP layers (whose KV is stored and restored with the
 * target KV, each part its own object, so the faults hit them independently); random computes of prefixes of a few token families, evictions, prefetches,
 * cancellations, consumptions and store ticks. Invariants after every step: every host page a prefetch published
 * holds exactly the bytes that were backed up for its key, draft KV included; no lease or host protection outlives its prefetch; the
 * trees pass their invariant check; the ranks of a group start the same prefetches and their trees and host budgets
 * agree (node count, device pages, budget used); at the end every host page is accounted for. The speaker's KV-event
 * port keeps the published L3 index (pages announced stored, less those announced removed): no page is announced
 * before its parent is in it, and after every step (every agreed read) every page in it is readable in the store, but
 * for pages of a read not yet agreed. Replay one seed with
 * {@code -Dhicache.dst.storageFirstSeed=S -Dhicache.dst.storageSeeds=1}.
 */
class StorageTierDstTest {
    private static final int FAMILIES = 4;
    /**
     * Seeds that once failed, run first by the normal suite (not when a seed range is given): 9000197 and 11003491
     * (CP 2) diverged the ranks' trees, the write of a node host-protected it until this rank's store answered, so
     * one rank's host eviction skipped a node the other evicted (a prefetch then started on one rank only, or a
     * backup waited for a round the other rank never joined).
     */
    private static final long[] REGRESSION_SEEDS = {9_000_197, 11_003_491, 5_272, 18_291};

    @Test
    void aStorageHitReturnsExactlyTheBytesThatWereBackedUp() {
        if (System.getProperty("hicache.dst.storageFirstSeed") == null) {
            for (long seed : REGRESSION_SEEDS) {
                runChecked(seed);
            }
        }
        long first = Long.getLong("hicache.dst.storageFirstSeed", 1);
        int seeds = Integer.getInteger("hicache.dst.storageSeeds", 150);
        for (long seed = first; seed < first + seeds; seed++) {
            runChecked(seed);
        }
    }

    private static void runChecked(long seed) {
        try {
            runSeed(seed);
        } catch (AssertionError | RuntimeException e) {
            throw new AssertionError("storage DST failed at seed " + seed + " (replay with "
                    + "-Dhicache.dst.storageFirstSeed=" + seed + " -Dhicache.dst.storageSeeds=1): " + e, e);
        }
    }

    private record Started(StorageTier.Prefetch[] perRank, int family) {
    }

    private static void runSeed(long seed) {
        Random rnd = new Random(seed);
        int cp = rnd.nextInt(4) == 0 ? 2 : 1;
        int pageSize = new int[] {1, 2, 4}[rnd.nextInt(3)];
        // drawn apart from the seed's main sequence, so the other draws of a seed stay what they were
        Random drafts = new Random(~seed);
        int draftLayers = drafts.nextInt(3) == 0 ? 0 : 1 + drafts.nextInt(2);
        FaultyPageStore store = new FaultyPageStore(seed);
        store.failPut = rnd.nextDouble() * 0.2;
        store.tornPut = rnd.nextDouble() * 0.2;
        store.lostMarker = rnd.nextDouble() * 0.2;
        store.failGet = rnd.nextDouble() * 0.2;
        store.slow = rnd.nextDouble() * 0.5;
        store.slowTicks = 1 + rnd.nextInt(4);
        store.expireGet = drafts.nextInt(2) == 0 ? 0 : drafts.nextDouble() * 0.1; // off the main sequence too
        StorageWritePolicy policy = StorageWritePolicy.values()[rnd.nextInt(3)];
        StorageTierConfig cfg = StorageTierConfig.DEFAULT.withWritePolicy(policy).withPrefetchThresholdTokens(0)
                .withPrefetchHostShare(0.25 + rnd.nextDouble() * 0.75);
        int familyPages = 24;
        int[][] family = new int[FAMILIES][];
        for (int f = 0; f < FAMILIES; f++) {
            family[f] = TierRig.tokens(1_000 * (f + 1), familyPages * pageSize);
        }
        List<Started> started = new ArrayList<>();
        // two lives of a cache on one store: the second starts empty and reads what the first wrote
        for (int life = 0; life < 2; life++) {
            try (TierRig rig = new TierRig(cp, pageSize, 128, 24 + rnd.nextInt(40), store, cfg, "",
                    draftLayers)) {
                L3Announcements announced = new L3Announcements(rig, store, draftLayers > 0);
                rig.ctl[0].tierObserver(announced);
                started.clear();
                for (int step = 0; step < 40; step++) {
                    int op = rnd.nextInt(10);
                    int f = rnd.nextInt(FAMILIES);
                    int pages = 1 + rnd.nextInt(familyPages);
                    int[] t = Arrays.copyOf(family[f], pages * pageSize);
                    if (op < 3 && rig.freeDevicePages() >= familyPages) {
                        rig.compute(t, f);
                    } else if (op < 5) {
                        StorageTier.Prefetch[] p = rig.prefetch(t, step);
                        for (int r = 1; r < cp; r++) {
                            assertThat(p[r] != null).as("rank %d starts the prefetch rank 0 %s", r,
                                    p[0] != null ? "started" : "did not start").isEqualTo(p[0] != null);
                        }
                        if (p[0] != null) {
                            started.add(new Started(p, f));
                        }
                    } else if (op == 5 && !started.isEmpty()) {
                        Started s = started.get(rnd.nextInt(started.size()));
                        for (int r = 0; r < cp; r++) {
                            rig.tier[r].cancel(s.perRank()[r]);
                        }
                    } else if (op == 6 && !started.isEmpty()) {
                        Started s = started.get(rnd.nextInt(started.size()));
                        for (int r = 0; r < cp; r++) {
                            rig.tier[r].consume(s.perRank()[r]);
                        }
                    } else if (op == 7) {
                        for (Started s : started) { // eviction needs the holds gone
                            for (int r = 0; r < cp; r++) {
                                rig.tier[r].consume(s.perRank()[r]);
                            }
                        }
                        rig.evictAll();
                    } else if (op == 8) {
                        store.unavailable = rnd.nextInt(4) == 0;
                    } else {
                        store.tick();
                    }
                    rig.drain();
                    check(rig, started);
                    announced.checkIndex(started, family);
                }
                store.unavailable = false;
                store.releaseAll();
                rig.drain();
                for (Started s : started) {
                    for (int r = 0; r < cp; r++) {
                        assertThat(s.perRank()[r].state()).isEqualTo(StorageTier.Prefetch.State.ENDED);
                        assertThat(s.perRank()[r].publishedPages()).isEqualTo(s.perRank()[0].publishedPages());
                    }
                }
                check(rig, started);
                announced.checkIndex(started, family);
                for (Started s : started) {
                    for (int r = 0; r < cp; r++) {
                        rig.tier[r].consume(s.perRank()[r]);
                    }
                }
                rig.checkNoLeak();
                store.slow = rnd.nextDouble() * 0.5;
            }
        }
    }

    /**
     * The speaker's KV-event port, checking each L3 transition it is told of: every announced page is stored (its put
     * answered OK, or it is readable) under the key of the rank whose lane owns it, its parent page is in the
     * published index already (llm-d's rule), and every announced removal is of a page a read found expired on its
     * owner's lane, in a group as on a rank alone. It keeps the published index: the owner keys of the pages
     * announced stored and not removed since, each with its draft key.
     */
    private static final class L3Announcements implements TierListener {
        private final TierRig rig;
        private final FaultyPageStore store;
        private final boolean draft;
        private final java.util.Map<io.hicache.storage.PageKey, io.hicache.storage.PageKey> index =
                new java.util.HashMap<>();
        /** Each indexed page as "page P of the sequence starting with token T", for messages. */
        private final java.util.Map<io.hicache.storage.PageKey, String> names = new java.util.HashMap<>();
        /** The L3 events so far, for messages. */
        final List<String> trace = new ArrayList<>();

        L3Announcements(TierRig rig, FaultyPageStore store, boolean draft) {
            this.rig = rig;
            this.store = store;
            this.draft = draft;
        }

        /**
         * After a step: every page in the published index is readable in the store (both parts), unless a read of
         * it is not agreed yet (its prefetch has not ended on the speaker): the store loses a page only when a read
         * meets it, and the group agrees on that read before the step ends.
         */
        void checkIndex(List<Started> started, int[][] family) {
            java.util.Set<io.hicache.storage.PageKey> reading = new java.util.HashSet<>();
            for (Started s : started) {
                StorageTier.Prefetch p = s.perRank()[0];
                if (p.state() != StorageTier.Prefetch.State.ENDED) {
                    for (int q = p.startPage(); q < p.startPage() + p.pageCount(); q++) {
                        reading.add(rig.ownerKey(family[s.family()], 0, q));
                    }
                }
            }
            index.forEach((k, d) -> assertThat(reading.contains(k) || store.answeredStored(k)
                    && (d == null || store.answeredStored(d)))
                    .as("%s in the published L3 index is readable in the store (%s, draft %s, expired %s), or a read of it is "
                            + "pending; L3 events: %s", names.get(k), store.answeredStored(k), store.expiredKeys.contains(k),
                            d == null ? "-" : store.answeredStored(d), trace)
                    .isTrue());
        }

        @Override
        public void onDeviceInserted(int[] tokens, int from, int len, int firstNewToken, RadixNode last) {
        }

        @Override
        public void onStored(int tier, RadixNode node) {
        }

        @Override
        public void onRemoving(int tier, RadixNode node) {
        }

        @Override
        public void onPagesStored(int tier, RadixNode node, int firstPage, int pages) {
            if (tier != STORAGE) {
                return;
            }
            int start = TierWriter.startPage(node);
            int[] seq = TierWriter.sequenceTokens(node, start, rig.pageSize);
            trace.add("+" + seq[0] + ":" + (start + firstPage) + "+" + pages + " (node)");
            check(seq, 0, start + firstPage, pages);
        }

        @Override
        public void onSequencePages(int tier, boolean stored, int[] tokens, int from, int firstPage, int pages) {
            if (tier == STORAGE) {
                trace.add((stored ? "+" : "-") + tokens[from] + ":" + firstPage + "+" + pages);
            }
            if (tier == STORAGE && stored) {
                check(tokens, from, firstPage, pages);
            } else if (tier == STORAGE) {
                for (int p = firstPage; p < firstPage + pages; p++) {
                    io.hicache.storage.PageKey k = rig.ownerKey(tokens, from, p);
                    assertThat(store.expiredKeys.contains(k)
                            || store.expiredKeys.contains(rig.ownerDraftKey(tokens, from, p)))
                            .as("announced L3 removal of page %d: a read found it (or its draft part) expired", p)
                            .isTrue();
                    index.remove(k);
                }
            }
        }

        private void check(int[] tokens, int from, int first, int pages) {
            if (first > 0) {
                assertThat(index).as("the parent of announced L3 page %d is in the published index", first)
                        .containsKey(rig.ownerKey(tokens, from, first - 1));
            }
            for (int p = first; p < first + pages; p++) {
                io.hicache.storage.PageKey k = rig.ownerKey(tokens, from, p);
                // or expired since the write's existence check or put found it (the store's TTL, not the tier)
                assertThat(store.answeredStored(k) || store.expiredKeys.contains(k))
                        .as("announced L3 page %d (of %d+%d) is stored by its owner", p, first, pages).isTrue();
                assertThat(index).as("L3 page %d announced once", p).doesNotContainKey(k);
                index.put(k, draft ? rig.ownerDraftKey(tokens, from, p) : null);
                names.put(k, "page " + p + " of " + tokens[from]);
            }
        }
    }

    /** Every published, still attached prefetched node holds its family's bytes on every rank. */
    private static void check(TierRig rig, List<Started> started) {
        for (Started s : started) {
            for (int r = 0; r < rig.cp; r++) {
                StorageTier.Prefetch p = s.perRank()[r];
                if (p.state() != StorageTier.Prefetch.State.ENDED) {
                    continue;
                }
                assertThat(p.publishedPages()).isEqualTo(s.perRank()[0].publishedPages());
                RadixNode n = p.node;
                if (n != null && n.isAttached() && n.hostValue() != null) {
                    int start = 0;
                    for (RadixNode x = n.parent(); !x.isRoot(); x = x.parent()) {
                        start += x.pageCount();
                    }
                    assertThat(rig.hostHoldsPattern(r, n, start, s.family()))
                            .as("rank %d: prefetched pages from %d hold the bytes backed up", r, start).isTrue();
                }
            }
        }
        for (int r = 0; r < rig.cp; r++) {
            rig.ctl[r].tree().checkInvariants();
            // the ranks' trees and host budgets are agreed state: the same shape and use on every rank
            assertThat(rig.ctl[r].tree().nodeCount()).as("rank %d: tree nodes", r)
                    .isEqualTo(rig.ctl[0].tree().nodeCount());
            assertThat(rig.ctl[r].tree().devicePagesCached()).as("rank %d: device pages cached", r)
                    .isEqualTo(rig.ctl[0].tree().devicePagesCached());
            assertThat(rig.ctl[r].hostBudgetUsedPages()).as("rank %d: host budget used", r)
                    .isEqualTo(rig.ctl[0].hostBudgetUsedPages());
        }
    }
}
