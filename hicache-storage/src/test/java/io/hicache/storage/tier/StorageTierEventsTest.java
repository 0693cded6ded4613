package io.hicache.storage.tier;

import io.hicache.radix.RadixNode;
import io.hicache.radix.spi.TierObserver;
import io.hicache.storage.StorageTierConfig;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The storage tier reports L3 commits to the cache's tier observer (the KV-events port). */
class StorageTierEventsTest {
    private static final int PAGE = 4;
    private static final StorageTierConfig CFG = StorageTierConfig.DEFAULT.withPrefetchThresholdTokens(0)
            .withPrefetchHostShare(1.0);

    /** "stored TIER PAGES" / "removing TIER PAGES" / "inserted NEW_PAGES", in order. */
    private static final class Recorder implements TierObserver {
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
    }

    @Test
    void l3CommitFollowsTheHostCommitAndPagesAlreadyStoredCountToo() {
        FaultyPageStore store = new FaultyPageStore(3);
        int[] t = TierRig.tokens(40, 8 * PAGE);
        try (TierRig a = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            Recorder r = new Recorder();
            a.ctl[0].tierObserver(r);
            a.compute(t, 5);
            assertThat(r.seen).containsExactly("inserted 8", "stored " + TierObserver.HOST + " 8",
                    "stored " + TierObserver.STORAGE + " 8");
            a.evictAll();
            assertThat(r.seen).contains("removing " + TierObserver.DEVICE + " 8", "removing " + TierObserver.HOST + " 8");
        }
        try (TierRig b = new TierRig(1, PAGE, 64, 64, store, CFG, "")) {
            Recorder r = new Recorder();
            b.ctl[0].tierObserver(r);
            b.compute(t, 5); // the store has every page already: still an L3 commit of the node
            assertThat(r.seen).endsWith("stored " + TierObserver.STORAGE + " 8");
        }
    }
}
