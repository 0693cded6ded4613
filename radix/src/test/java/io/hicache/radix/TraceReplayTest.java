package io.hicache.radix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Replays the bundled Mooncake conversation trace in block mode and compares the leading-block hit
 * ratio with the independent reference in {@code traces/conversation_lru_baseline.csv}.
 */
class TraceReplayTest {

    private static List<int[]> trace;

    @BeforeAll
    static void load() throws IOException {
        trace = ConversationTrace.load();
    }

    @Test
    void traceHasAllRecords() {
        assertThat(trace).hasSize(12031);
        assertThat(trace.get(0)).startsWith(0, 1, 2, 3);
    }

    @Test
    void unlimitedCapacityHitRatioIsExactlyTheReference() {
        double ratio = BlockReplay.hitRatio(trace, EvictionPolicy.LRU, Long.MAX_VALUE);
        assertThat(Math.round(ratio * 10_000) / 10_000.0).isEqualTo(0.3664);
    }

    @Test
    void lruCapacity5859LandsNearTheReference() {
        BlockReplay replay = new BlockReplay(EvictionPolicy.LRU, 5_859);
        long hits = 0;
        long blocks = 0;
        for (int[] req : trace) {
            hits += replay.request(req);
            blocks += req.length;
            assertThat(replay.tree().devicePagesCached()).isLessThanOrEqualTo(5_859);
        }
        replay.tree().checkInvariants();
        assertThat((double) hits / blocks).isCloseTo(0.1355, within(0.01));
    }

    @Test
    void everyPolicyReplaysWithinCapacityAndKeepsInvariants() {
        for (EvictionPolicy policy : EvictionPolicy.values()) {
            BlockReplay replay = new BlockReplay(policy, 5_859);
            for (int i = 0; i < 3_000; i++) {
                replay.request(trace.get(i));
            }
            replay.tree().checkInvariants();
            assertThat(replay.tree().devicePagesCached()).as(policy.name()).isLessThanOrEqualTo(5_859);
        }
    }
}
