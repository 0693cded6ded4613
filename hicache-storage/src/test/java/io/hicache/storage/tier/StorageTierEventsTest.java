package io.hicache.storage.tier;

import io.hicache.radix.RadixNode;
import io.hicache.radix.TierListener;
import io.hicache.storage.StorageTierConfig;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The storage tier reports L3 transitions to the cache's tier observer (the KV-events port): every page whose commit
 * marker is written or found (whatever the store batches and whichever positions a CP rank owns), and every page a
 * read finds gone.
 */
class StorageTierEventsTest {
    private static final int PAGE = 4;
    private static final StorageTierConfig CFG = StorageTierConfig.DEFAULT.withPrefetchThresholdTokens(0)
            .withPrefetchHostShare(1.0);

    /**
     * "stored TIER PAGES" / "removing TIER PAGES" / "inserted NEW_PAGES" / "l3 FIRST+PAGES" (positions in the
     * sequence) / "l3 sequence stored|gone FIRST+PAGES", in order.
     */
    private static class Recorder implements TierListener {
        final List<String> seen = new ArrayList<>();

        @Override
        public void onDeviceInserted(int[] tokens, int from, int len, int firstNewToken, RadixNode last) {
            seen.add("inserted " + (len - firstNewToken) / PAGE);
        }

        @Override
        public void onStored(int tier, RadixNode node) {
            assertThat(node.isAttached()).isTrue();
            seen.add("stored " + tier + " " + node.pageCount());
        }

        @Override
        public void onRemoving(int tier, RadixNode node) {
            assertThat(node.isAttached()).isTrue();
            seen.add("removing " + tier + " " + node.pageCount());
        }

        @Override
        public void onPagesStored(int tier, RadixNode node, int firstPage, int pages) {
            assertThat(node.isAttached()).isTrue();
            assertThat(tier).isEqualTo(TierListener.STORAGE);
            assertThat(firstPage + pages).isLessThanOrEqualTo(node.pageCount());
            int start = 0;
            for (RadixNode p = node.parent(); !p.isRoot(); p = p.parent()) {
                start += p.pageCount();
            }
            seen.add("l3 " + (start + firstPage) + "+" + pages);
        }

        @Override
        public void onSequencePages(int tier, boolean stored, int[] tokens, int from, int firstPage, int pages) {
            assertThat(tier).isEqualTo(TierListener.STORAGE);
            assertThat(tokens.length - from).isGreaterThanOrEqualTo((firstPage + pages) * PAGE);
            seen.add("l3 sequence " + (stored ? "stored " : "gone ") + firstPage + "+" + pages);
        }
    }

    /**
     * A store whose next read finds one key deleted first (expired between the existence check and the get), or
     * whose reads find {@code expireKey} deleted, or fail {@code failKey}.
     */
    private static final class ExpiringStore extends ForwardingPageStore<MemoryPageStore> {
        int expireOnNextGet = -1;
        io.hicache.storage.PageKey expireKey;
        /** Keys a read finds deleted (each found by the first read of it after the existence check saw it). */
        final java.util.Set<io.hicache.storage.PageKey> expireKeys = new java.util.HashSet<>();
        io.hicache.storage.PageKey failKey;
        /** A read of this key answers only when {@link #release} is called (a slow read on one rank). */
        io.hicache.storage.PageKey holdKey;
        private Runnable held;

        ExpiringStore() {
            super(new MemoryPageStore(0, 64));
        }

        @Override
        public io.hicache.storage.StoreOp<io.hicache.storage.StoreResult> get(List<io.hicache.storage.PageKey> keys,
                List<io.hicache.storage.HostPage> pages) {
            if (expireOnNextGet >= 0) {
                inner.remove(List.of(keys.get(expireOnNextGet)));
                expireOnNextGet = -1;
            }
            if (expireKey != null && keys.contains(expireKey)) {
                inner.remove(List.of(expireKey));
            }
            for (io.hicache.storage.PageKey k : keys) {
                if (expireKeys.contains(k)) {
                    inner.remove(List.of(k));
                }
            }
            int failing = failKey == null ? -1 : keys.indexOf(failKey);
            if (failing >= 0) {
                io.hicache.storage.StoreResult r = inner.get(keys, pages).result(); // the memory store answers at once
                io.hicache.storage.StoreStatus[] st = new io.hicache.storage.StoreStatus[r.size()];
                for (int i = 0; i < st.length; i++) {
                    st[i] = i == failing ? io.hicache.storage.StoreStatus.FAILED : r.status(i);
                }
                return io.hicache.storage.StoreOp.completed(io.hicache.storage.StoreResult.of(st));
            }
            if (holdKey != null && keys.contains(holdKey)) {
                io.hicache.storage.StoreResult r = inner.get(keys, pages).result(); // the memory store answers at once
                io.hicache.storage.StoreOp<io.hicache.storage.StoreResult> op = new io.hicache.storage.StoreOp<>();
                held = () -> op.complete(r);
                return op;
            }
            return inner.get(keys, pages);
        }

        /** Answers the held read. */
        void release() {
            held.run();
        }

        /** The next existence check answers (what the store held when it was asked) only at {@link #releaseExists}. */
        boolean holdNextExists;
        private Runnable heldExists;

        @Override
        public io.hicache.storage.StoreOp<Integer> existsPrefix(List<io.hicache.storage.PageKey> keys) {
            if (!holdNextExists) {
                return inner.existsPrefix(keys);
            }
            holdNextExists = false;
            int present = inner.existsPrefix(keys).result(); // the memory store answers at once
            io.hicache.storage.StoreOp<Integer> op = new io.hicache.storage.StoreOp<>();
            heldExists = () -> op.complete(present);
            return op;
        }

        void releaseExists() {
            heldExists.run();
        }
    }

    @Test
    void l3CommitFollowsTheHostCommitAndPagesAlreadyStoredCountToo() {
        FaultyPageStore store = new FaultyPageStore(3);
        int[] t = TierRig.tokens(40, 8 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            Recorder r = new Recorder();
            a.ctl[0].tierObserver(r);
            a.compute(t, 5);
            assertThat(r.seen).containsExactly("inserted 8", "stored " + TierListener.HOST + " 8", "l3 0+8");
            a.evictAll();
            assertThat(r.seen).contains("removing " + TierListener.DEVICE + " 8", "removing " + TierListener.HOST + " 8");
        }
        try (TierRig b = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            Recorder r = new Recorder();
            b.ctl[0].tierObserver(r);
            b.compute(t, 5); // the store has every page already: still an L3 commit of the node
            assertThat(r.seen).endsWith("l3 0+8");
        }
    }

    /**
     * A node written in several store batches is announced batch by batch, in prefix order whatever order the batches
     * finish in (here the last first): before, the batches of pages 6..8 and 3..6 were announced before the one of
     * 0..3, their blocks' parents not yet on L3.
     */
    @Test
    void aNodeWrittenInSeveralStoreBatchesIsAnnouncedBatchByBatchParentsFirst() {
        MemoryPageStore store = new MemoryPageStore(0, 3); // 8 pages: batches of 3, 3 and 2
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            Recorder r = new Recorder();
            a.ctl[0].tierObserver(r);
            a.compute(TierRig.tokens(40, 8 * PAGE), 5);
            assertThat(r.seen).startsWith("inserted 8", "stored " + TierListener.HOST + " 8");
            assertThat(r.seen.subList(2, r.seen.size())).containsExactly("l3 0+3", "l3 3+3", "l3 6+2");
        }
    }

    /**
     * In a CP group each rank writes only its own lanes (round-robin: rank 0 the even positions), yet the speaker
     * announces the node's every page, once the group agreed that every rank stored its share (before, only the
     * speaker's own positions: a chain with a hole at every other page).
     */
    @Test
    void aCpGroupAnnouncesTheWholeNodeOnceEveryRankStoredItsLanes() {
        FaultyPageStore store = new FaultyPageStore(3);
        try (TierRig a = new TierRig(2, PAGE, 64, 64, store, CFG, "")) {
            Recorder r = new Recorder();
            a.ctl[0].tierObserver(r);
            a.compute(TierRig.tokens(40, 6 * PAGE), 5);
            assertThat(store.inner.pageCount()).as("each rank put its three pages").isEqualTo(6);
            assertThat(r.seen).containsExactly("inserted 6", "stored " + TierListener.HOST + " 6", "l3 0+6");
        }
    }

    /** A CP group's write-back is announced whole too, by sequence, once every rank stored its lanes. */
    @Test
    void aCpGroupAnnouncesAWholeWriteBack() {
        FaultyPageStore store = new FaultyPageStore(4);
        StorageTierConfig cfg = CFG.withWritePolicy(io.hicache.storage.StorageWritePolicy.WRITE_BACK);
        try (TierRig a = new TierRig(2, PAGE, 64, 64, store, cfg, "")) {
            Recorder r = new Recorder();
            a.ctl[0].tierObserver(r);
            a.compute(TierRig.tokens(50, 5 * PAGE), 9);
            a.evictAll();
            a.drain();
            assertThat(store.inner.pageCount()).isEqualTo(5);
            assertThat(r.seen).endsWith("removing " + TierListener.HOST + " 5", "l3 sequence stored 0+5");
            assertThat(r.seen).filteredOn(e -> e.startsWith("l3")).hasSize(1);
        }
    }

    /**
     * A write whose put failed on one rank is not announced at all, though the other rank's pages were stored: the
     * group cannot read that prefix back whole. Its host protection is still dropped once every rank finished.
     */
    @Test
    void aCpWriteThatFailedOnOneRankIsNotAnnounced() {
        FaultyPageStore store = new FaultyPageStore(3);
        try (TierRig a = new TierRig(2, PAGE, 64, 64, new FailingPut(store, 2), CFG, "")) {
            Recorder r = new Recorder();
            a.ctl[0].tierObserver(r);
            a.compute(TierRig.tokens(40, 6 * PAGE), 5);
            assertThat(store.inner.pageCount()).as("one rank's puts landed, the other's failed").isEqualTo(3);
            assertThat(r.seen).containsExactly("inserted 6", "stored " + TierListener.HOST + " 6");
            a.evictAll();
            for (int rank = 0; rank < 2; rank++) {
                assertThat(a.ctl[rank].tree().hostPagesCommitted()).as("rank %d: protection dropped, evicted", rank)
                        .isZero();
            }
        }
    }

    /** A store whose {@code failing}-th put call (1-based) fails every page of it. */
    private static final class FailingPut extends ForwardingPageStore<io.hicache.storage.PageStore> {
        final int failing;
        int puts;

        FailingPut(io.hicache.storage.PageStore inner, int failing) {
            super(inner);
            this.failing = failing;
        }

        @Override
        public io.hicache.storage.StoreOp<io.hicache.storage.StoreResult> put(List<io.hicache.storage.PageKey> keys,
                List<io.hicache.storage.HostPage> pages) {
            if (++puts == failing) {
                return io.hicache.storage.StoreOp.completed(io.hicache.storage.StoreResult.all(keys.size(),
                        io.hicache.storage.StoreStatus.FAILED));
            }
            return inner.put(keys, pages);
        }
    }

    @Test
    void aWriteBackIsAnnouncedBySequenceSinceItsNodeMayBeGone() {
        FaultyPageStore store = new FaultyPageStore(4);
        StorageTierConfig cfg = CFG.withWritePolicy(io.hicache.storage.StorageWritePolicy.WRITE_BACK);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, cfg, "")) {
            Recorder r = new Recorder();
            a.ctl[0].tierObserver(r);
            a.compute(TierRig.tokens(50, 5 * PAGE), 9);
            assertThat(r.seen).doesNotContain("l3 0+5");
            a.evictAll();
            a.drain(); // the put the last poll issued completes at the next one
            assertThat(r.seen).endsWith("removing " + TierListener.HOST + " 5", "l3 sequence stored 0+5");
        }
    }

    /**
     * A write-back of a node below another is announced at the node's own positions, with the tokens from the root
     * (before, the evicted node was already detached when the tier read its path, so its pages were announced as a
     * sequence of their own from position 0: hashes no prefix has).
     */
    @Test
    void aWriteBackOfANodeBelowAnotherIsAnnouncedAtItsPositions() {
        FaultyPageStore store = new FaultyPageStore(4);
        StorageTierConfig cfg = CFG.withWritePolicy(io.hicache.storage.StorageWritePolicy.WRITE_BACK);
        int[] t = TierRig.tokens(50, 5 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, cfg, "")) {
            List<String> sequences = new ArrayList<>();
            a.ctl[0].tierObserver(new Recorder() {
                @Override
                public void onSequencePages(int tier, boolean stored, int[] tokens, int from, int firstPage,
                                            int pages) {
                    super.onSequencePages(tier, stored, tokens, from, firstPage, pages);
                    sequences.add(firstPage + "+" + pages + " from token " + tokens[from]);
                }
            });
            a.compute(java.util.Arrays.copyOf(t, 3 * PAGE), 9);
            a.compute(t, 9); // a child node of pages 3 and 4
            a.evictAll();
            a.drain();
            a.evictAll(); // the parent, now a leaf
            a.drain();
            assertThat(sequences).containsExactlyInAnyOrder("3+2 from token 50", "0+3 from token 50");
        }
    }

    /**
     * A write that counted a page as stored (its existence check found it) while a read found it gone is not
     * announced: its stored announcement would follow the removal and leave every router holding a block the store
     * lost (before, the write-back's whole range was announced stored after the read's "gone"). The page itself is
     * put again: a check that answers after the read is not taken on its word.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "cp {0}")
    @org.junit.jupiter.params.provider.ValueSource(ints = {1, 2}) // CP 2: page 5 is rank 1's, the speaker is rank 0
    void aWriteBackWhosePageAReadFoundGoneIsNotAnnouncedStored(int cp) {
        ExpiringStore store = new ExpiringStore();
        int[] t = TierRig.tokens(40, 8 * PAGE);
        try (TierRig a = new TierRig(cp, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 5); // the store holds all 8 pages
        }
        StorageTierConfig cfg = CFG.withWritePolicy(io.hicache.storage.StorageWritePolicy.WRITE_BACK);
        try (TierRig b = new TierRig(cp, PAGE, 64, 64, store, cfg, "")) {
            Recorder r = new Recorder();
            b.ctl[0].tierObserver(r);
            b.compute(t, 5);
            store.holdNextExists = true; // the write-back's existence check (all 8 present) answers late
            b.evictAll();
            store.expireKey = b.ownerKey(t, 0, 5);
            StorageTier.Prefetch p = b.prefetch(t, 1)[0];
            b.drain();
            assertThat(p.publishedPages()).isEqualTo(5);
            assertThat(r.seen).contains("l3 sequence gone 5+1");
            store.releaseExists();
            b.drain();
            assertThat(r.seen.subList(r.seen.indexOf("l3 sequence gone 5+1"), r.seen.size()))
                    .noneMatch(e -> storedRunCovers(e, 5));
            // on a rank alone the held check answers after the read found page 5 gone, and is not taken on its word:
            // the page is put again (the write still counts as failed, so it is not announced stored after the
            // removal); in CP 2 page 5 is rank 1's, whose check (not held) answered before the read: it stays gone
            assertThat(store.inner.pageCount()).as("page 5 written again").isEqualTo(cp == 1 ? 8 : 7);
        }
    }

    /** Whether {@code event} announces a run of L3 pages stored that covers position {@code page}. */
    private static boolean storedRunCovers(String event, int page) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("l3 (?:sequence stored )?(\\d+)\\+(\\d+)")
                .matcher(event);
        return m.matches() && Integer.parseInt(m.group(1)) <= page
                && page < Integer.parseInt(m.group(1)) + Integer.parseInt(m.group(2));
    }

    /**
     * A page a read finds gone is announced removed; the pages published are announced stored on L3 too, since this
     * cache (a fresh one) never wrote them: a page it writes below them later has its parent on L3.
     */
    @Test
    void aPageAReadFindsGoneIsAnnouncedRemoved() {
        // the existence check sees all 8 pages, the read misses page 5
        Prefetched c = prefetchWith(1, (store, g, t) -> store.expireOnNextGet = 5);
        assertThat(c.perRank()[0].publishedPages()).isEqualTo(5);
        assertThat(c.seen()).containsExactly("l3 sequence gone 5+1", "stored " + TierListener.HOST + " 5",
                "l3 sequence stored 0+5");
    }

    /**
     * A page this tier wrote and a later read found gone is written again when its node is: the tier forgets the key
     * (before, it still took the page for stored and skipped it for good).
     */
    @Test
    void aPageAReadFindsGoneIsWrittenAgainByTheNextWriteOfItsNode() {
        ExpiringStore store = new ExpiringStore();
        int[] t = TierRig.tokens(40, 8 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 5);
            assertThat(store.inner.pageCount()).isEqualTo(8);
            a.evictAll();
            store.expireOnNextGet = 5; // the existence check sees all 8 pages, the read misses page 5
            StorageTier.Prefetch p = a.prefetch(t, 1)[0];
            a.drain();
            assertThat(p.publishedPages()).isEqualTo(5);
            assertThat(store.inner.pageCount()).isEqualTo(7);
            a.compute(t, 5); // pages 5..7 computed again over the prefetched prefix, backed up and written through
            assertThat(store.inner.pageCount()).as("page 5 put again").isEqualTo(8);
        }
    }

    /** What rank 0 (a group's speaker) was told while it prefetched an 8-page sequence, and each rank's prefetch. */
    private record Prefetched(List<String> seen, StorageTier.Prefetch[] perRank) {
    }

    /**
     * Writes an 8-page sequence through a CP group of {@code cp} ranks, then prefetches it in a fresh group, with the
     * store's fault set up by {@code fault} (given the store, the new group and the tokens) just before the prefetch.
     */
    private static Prefetched prefetchWith(int cp, TriConsumer fault) {
        ExpiringStore store = new ExpiringStore();
        int[] t = TierRig.tokens(40, 8 * PAGE);
        try (TierRig a = new TierRig(cp, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 5);
        }
        try (TierRig b = new TierRig(cp, PAGE, 64, 64, store, CFG, "")) {
            Recorder r = new Recorder();
            b.ctl[0].tierObserver(r);
            fault.accept(store, b, t);
            StorageTier.Prefetch[] p = b.prefetch(t, 1);
            b.drain();
            return new Prefetched(r.seen, p);
        }
    }

    private interface TriConsumer {
        void accept(ExpiringStore store, TierRig group, int[] tokens);
    }

    /**
     * In a CP group a page another rank's read finds gone is announced removed by the speaker too: the group agreed
     * on where the prefix stopped and why (before, only the speaker's own lanes' gone pages were announced; a page
     * of rank 1's lane stayed stored in every router's index).
     */
    @Test
    void aCpGroupAnnouncesAPageAnotherRanksReadFindsGone() {
        Prefetched c = prefetchWith(2, (store, g, t) -> store.expireKey = g.ownerKey(t, 0, 5)); // rank 1's lane
        assertThat(c.perRank()[0].publishedPages()).isEqualTo(5);
        assertThat(c.perRank()[1].publishedPages()).isEqualTo(5);
        assertThat(c.seen()).containsExactly("stored " + TierListener.HOST + " 5", "l3 sequence stored 0+5",
                "l3 sequence gone 5+1");
    }

    /**
     * The speaker's own gone page is announced once, when the group agreed on it like any other rank's (before, at
     * once when its own read found it: a removal one rank alone believed).
     */
    @Test
    void aCpSpeakersOwnGonePageIsAnnouncedOnce() {
        Prefetched c = prefetchWith(2, (store, g, t) -> store.expireKey = g.ownerKey(t, 0, 4)); // rank 0's lane
        assertThat(c.perRank()[0].publishedPages()).isEqualTo(4);
        assertThat(c.seen()).containsExactly("stored " + TierListener.HOST + " 4", "l3 sequence stored 0+4",
                "l3 sequence gone 4+1");
    }

    /**
     * In a CP group of 2 or 4 whose reads find two pages gone on every lane, each of them is announced removed, once,
     * in order, after the group agreed on it, and nothing else is: the removals equal the pages the reads found gone
     * (the tier's count of them). Before, only the page that stopped the agreed prefix (and the speaker's own) were:
     * the others stayed stored in every router's index.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "cp {0}")
    @org.junit.jupiter.params.provider.ValueSource(ints = {2, 4})
    void aCpGroupAnnouncesEveryPageAnyLanesReadsFindGone(int cp) {
        int pages = 6 * cp;
        ExpiringStore store = new ExpiringStore();
        int[] t = TierRig.tokens(40, pages * PAGE);
        try (TierRig a = new TierRig(cp, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 5);
            assertThat(store.inner.pageCount()).isEqualTo(pages);
        }
        try (TierRig b = new TierRig(cp, PAGE, 64, 64, store, CFG, "")) {
            Recorder r = new Recorder();
            b.ctl[0].tierObserver(r);
            // round-robin lanes: positions cp + x and 3 cp + x are rank x's (x = 0 .. cp - 1): two per lane
            List<Integer> gone = new ArrayList<>();
            for (int x = 0; x < cp; x++) {
                gone.add(cp + x);
                gone.add(3 * cp + x);
            }
            for (int g : gone) {
                store.expireKeys.add(b.ownerKey(t, 0, g));
            }
            StorageTier.Prefetch[] p = b.prefetch(t, 1);
            b.drain();
            for (int x = 0; x < cp; x++) {
                assertThat(p[x].publishedPages()).as("rank %d publishes up to the first gone page", x).isEqualTo(cp);
            }
            long found = 0;
            for (int x = 0; x < cp; x++) {
                found += b.tier[x].metrics().get(io.hicache.storage.StorageMetric.PREFETCH_PAGES_GONE);
            }
            assertThat(found).as("pages the reads found gone").isEqualTo(gone.size());
            List<String> removals = r.seen.stream().filter(e -> e.startsWith("l3 sequence gone")).toList();
            assertThat(removals).containsExactlyElementsOf(
                    gone.stream().sorted().map(g -> "l3 sequence gone " + g + "+1").toList());
        }
    }

    /**
     * A read that fails on another rank shortens the group's prefix as a gone page does, but proves nothing about the
     * store: nothing is announced removed.
     */
    @Test
    void aCpReadThatFailedOnAnotherRankAnnouncesNoRemoval() {
        Prefetched c = prefetchWith(2, (store, g, t) -> store.failKey = g.ownerKey(t, 0, 5));
        assertThat(c.perRank()[0].publishedPages()).isEqualTo(5);
        assertThat(c.seen()).containsExactly("stored " + TierListener.HOST + " 5", "l3 sequence stored 0+5");
    }

    /**
     * In a CP group, a page another rank's read found gone and that rank then wrote again (another request computed
     * it) is not announced removed when the group agrees on the prefetch later: the write's stored announcement came
     * first, and the page is in the store (before, the removal followed it and every router dropped a stored page).
     */
    @Test
    void aCpGonePageWrittenAgainBeforeTheGroupAgreesIsNotAnnouncedRemoved() {
        ExpiringStore store = new ExpiringStore();
        int[] t = TierRig.tokens(40, 8 * PAGE);
        try (TierRig a = new TierRig(2, PAGE, 64, 64, store, CFG, "")) {
            a.compute(t, 5);
        }
        try (TierRig b = new TierRig(2, PAGE, 64, 64, store, CFG, "")) {
            Recorder r = new Recorder();
            b.ctl[0].tierObserver(r);
            store.expireKey = b.ownerKey(t, 0, 5); // rank 1's lane: its read finds page 5 gone
            store.holdKey = b.ownerKey(t, 0, 4); // rank 0's lane: its read answers late
            StorageTier.Prefetch[] p = b.prefetch(t, 1);
            b.drain();
            assertThat(r.seen).as("the group has not agreed yet").noneMatch(e -> e.startsWith("l3"));
            store.expireKey = null;
            b.compute(t, 6); // another request computes the sequence: rank 1 writes page 5 again
            assertThat(store.inner.pageCount()).as("page 5 put again").isEqualTo(8);
            assertThat(r.seen).contains("l3 0+8");
            store.release();
            b.drain();
            assertThat(p[0].publishedPages()).as("the computed pages are in the tree already").isZero();
            assertThat(r.seen.subList(r.seen.indexOf("l3 0+8"), r.seen.size()))
                    .noneMatch(e -> e.startsWith("l3 sequence gone"));
        }
    }
}
