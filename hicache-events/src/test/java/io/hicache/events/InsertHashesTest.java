package io.hicache.events;

import io.hicache.radix.TierListener;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.radix.spi.PendingBackup;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An insert hashes only from the first node that holds a new page, starting from cached page hashes: on multi-turn
 * conversations (each turn extends an earlier one, branches split nodes, evictions drop and host-only nodes adopt
 * pages again, a reset empties the cache) every block stored on any tier has the hash and parent a router computes
 * from the request's tokens, and every removal names a block that tier holds; also with a cache of a few pages.
 * A second collector beside the checked one writes the same transitions into a ring, as a publisher's does: its
 * drained records must be the checked ones, in order, each stored page carrying the tokens its hash was made of.
 */
class InsertHashesTest {
    private static final long EXTRA_KEY = 5;

    /**
     * Checks every block against the chains a router computes for the requests (hash and parent), keeps the blocks
     * each tier holds (a removal must name one), and the device blocks stored since the last {@code clear()}.
     */
    private static final class Checker implements BlockEventSink {
        /** Every block of every request so far: its hash and its parent's (-1 for a first page). */
        final Map<Long, Long> parentOf = new HashMap<>();
        final Map<Integer, Set<Long>> held = new HashMap<>();
        final List<long[]> storedNow = new ArrayList<>();
        /** Every record in order: {kind, tier, hash, parent} with {@link EventRing}'s kinds. */
        final List<long[]> log = new ArrayList<>();

        void request(long[] chain) {
            for (int p = 0; p < chain.length; p++) {
                parentOf.put(chain[p], p == 0 ? -1 : chain[p - 1]);
            }
        }

        @Override
        public void stored(int tier, long hash, long parent) {
            assertThat(parentOf).as("tier %d stored an unknown block", tier).containsKey(hash);
            assertThat(parent).as("tier %d block %d parent", tier, hash).isEqualTo(parentOf.get(hash));
            assertThat(held.computeIfAbsent(tier, t -> new HashSet<>()).add(hash))
                    .as("block %d stored twice on tier %d", hash, tier).isTrue();
            if (tier == TierListener.DEVICE) {
                storedNow.add(new long[] {hash, parent});
            }
            log.add(new long[] {EventRing.STORED, tier, hash, parent});
        }

        @Override
        public void removed(int tier, long hash) {
            assertThat(held.computeIfAbsent(tier, t -> new HashSet<>()).remove(hash))
                    .as("removed block %d was not held on tier %d", hash, tier).isTrue();
            log.add(new long[] {EventRing.REMOVED, tier, hash, 0});
        }

        @Override
        public void cleared() {
            held.clear();
            log.add(new long[] {EventRing.CLEARED, 0, 0, 0});
        }
    }

    @Test
    void multiTurnInsertsReportTheChainARouterComputes() {
        for (long seed = 1; seed <= 40; seed++) {
            runConversation(seed, TierEventCollector.CACHE_BITS);
        }
    }

    /** A cache of a few pages: most lookups miss or find another node's page, and events must not change. */
    @Test
    void aTinyHashCacheReportsTheSameChains() {
        for (long seed = 41; seed <= 80; seed++) {
            runConversation(seed, 1 + (int) (seed % 3));
        }
    }

    private static void runConversation(long seed, int cacheBits) {
        Random rnd = new Random(seed);
        int pageSize = 1 << rnd.nextInt(3);
        RadixTree tree = RadixTree.builder().pageSize(pageSize).build();
        Checker checker = new Checker();
        EventRing ring = new EventRing(1 << 14, pageSize, false);
        TierEventCollector ringCollector = new TierEventCollector(ring, 0, EXTRA_KEY);
        EventRing.Drained drained = new EventRing.Drained(256, pageSize);
        tree.tierObserver(new KvEventPublisher.BothListeners(
                new TierEventCollector(checker, pageSize, EXTRA_KEY, cacheBits), ringCollector));
        List<int[]> turns = new ArrayList<>();
        int nextPage = 0;
        for (int step = 0; step < 120; step++) {
            int[] seq = nextTurn(rnd, turns, pageSize);
            turns.add(seq);
            int[] devicePages = new int[seq.length / pageSize];
            for (int i = 0; i < devicePages.length; i++) {
                devicePages[i] = nextPage++;
            }
            long[] chain = BlockHasher.chain(seq, seq.length, pageSize, EXTRA_KEY);
            checker.request(chain);
            checker.storedNow.clear();
            int present = tree.insert(seq, 0, seq.length, devicePages, 0) / pageSize;
            // the blocks reported are exactly pages [present, pages), chained as a router hashes the request
            assertThat(checker.storedNow).as("seed %d step %d", seed, step).hasSize(chain.length - present);
            for (int p = present; p < chain.length; p++) {
                long[] got = checker.storedNow.get(p - present);
                assertThat(got[0]).as("seed %d step %d page %d hash", seed, step, p).isEqualTo(chain[p]);
                assertThat(got[1]).as("seed %d step %d page %d parent", seed, step, p)
                        .isEqualTo(p == 0 ? -1 : chain[p - 1]);
            }
            int roll = rnd.nextInt(10);
            if (roll < 3) {
                backUp(tree, tree.lastInsertNode());
            } else if (roll < 5) {
                tree.evictDevice(1 + rnd.nextInt(4 * devicePages.length + 1), (n, pg, off, cnt) -> { });
            } else if (roll == 5) {
                tree.evictHost(1 + rnd.nextInt(8), (n, v) -> { });
            } else if (roll == 6 && rnd.nextInt(4) == 0) {
                tree.evictDevice(Integer.MAX_VALUE, (n, pg, off, cnt) -> { });
                tree.evictHost(Integer.MAX_VALUE, (n, v) -> { });
                assertThat(checker.held.values()).allSatisfy(h -> assertThat(h).isEmpty());
                tree.tierObserver().onCleared(); // a reset: empties the collector's hash cache too
            }
            drainAndCompare(ring, drained, checker.log, ringCollector.seed(), "seed " + seed + " step " + step);
        }
    }

    /** Drains the ring and checks it holds exactly {@code log}'s records, then forgets them. */
    private static void drainAndCompare(EventRing ring, EventRing.Drained d, List<long[]> log, long seed,
                                        String where) {
        int k = 0;
        int ps = d.pageSize;
        while (ring.drain(d) > 0 || d.lost > 0) {
            assertThat(d.lost).as("%s: records lost", where).isZero();
            for (int i = 0; i < d.count; i++, k++) {
                assertThat(k).as("%s: more records in the ring than the sink got", where).isLessThan(log.size());
                long[] want = log.get(k);
                assertThat(d.kind[i]).as("%s record %d kind", where, k).isEqualTo((byte) want[0]);
                if (want[0] == EventRing.CLEARED) {
                    continue;
                }
                assertThat(d.tier[i]).as("%s record %d tier", where, k).isEqualTo((byte) want[1]);
                assertThat(d.hash[i]).as("%s record %d hash", where, k).isEqualTo(want[2]);
                if (want[0] == EventRing.STORED) {
                    assertThat(d.parent[i] == seed ? -1 : d.parent[i]).as("%s record %d parent", where, k)
                            .isEqualTo(want[3]);
                    assertThat(BlockHasher.page(d.parent[i], d.tokens, i * ps, ps))
                            .as("%s record %d: its tokens hash to its hash", where, k).isEqualTo(d.hash[i]);
                }
            }
        }
        assertThat(k).as("%s: records in the ring", where).isEqualTo(log.size());
        log.clear();
    }

    /** A new turn: an earlier turn (or part of it, cut anywhere) followed by fresh tokens, or a fresh request. */
    private static int[] nextTurn(Random rnd, List<int[]> turns, int pageSize) {
        int fresh = pageSize * (1 + rnd.nextInt(6));
        if (turns.isEmpty() || rnd.nextInt(5) == 0) {
            return freshTokens(rnd, new int[0], 0, fresh);
        }
        int[] base = turns.get(rnd.nextInt(turns.size()));
        int keep = rnd.nextInt(3) == 0 ? rnd.nextInt(base.length / pageSize + 1) * pageSize : base.length;
        return freshTokens(rnd, base, keep, fresh);
    }

    private static int[] freshTokens(Random rnd, int[] base, int keep, int fresh) {
        int[] seq = java.util.Arrays.copyOf(base, keep + fresh);
        for (int i = keep; i < seq.length; i++) {
            seq[i] = rnd.nextInt(1 << 20);
        }
        return seq;
    }

    /** Backs up {@code node} and its ancestors that have no host copy (a host copy is prefix-closed). */
    private static void backUp(RadixTree tree, RadixNode node) {
        List<RadixNode> chain = new ArrayList<>();
        for (RadixNode n = node; n != null && !n.isRoot() && !n.isHostResident(); n = n.parent()) {
            chain.add(n);
        }
        PendingBackup handle = (x, y) -> { };
        for (int i = chain.size() - 1; i >= 0; i--) {
            RadixNode n = chain.get(i);
            if (!n.hasDeviceValue()) {
                return;
            }
            tree.markPending(n, handle);
            tree.commitHost(n, handle, new HostCopy(n.pageCount()));
        }
    }
}
