package io.hicache.core.spi;

import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DistinctErrorLogTest {
    private final DistinctErrorLog log = new DistinctErrorLog(LoggerFactory.getLogger(DistinctErrorLogTest.class),
        "test", 2);

    @Test
    void countsEachDescriptionAndSaysWhichOccurrenceIsTheFirst() {
        assertThat(log.count("a")).isEqualTo(1);
        assertThat(log.count("a")).isEqualTo(2);
        assertThat(log.count("b")).isEqualTo(1);
        log.record("b");
        assertThat(log.total()).isEqualTo(4);
        assertThat(log.snapshot()).containsExactlyInAnyOrderEntriesOf(Map.of("a", 2L, "b", 2L));
    }

    @Test
    void descriptionsPastTheCapAreCountedTogetherWhileKnownOnesKeepTheirOwnCount() {
        log.count("a");
        log.count("b");
        assertThat(log.count("c")).isEqualTo(1);
        assertThat(log.count("d")).isEqualTo(2);
        assertThat(log.count("a")).isEqualTo(2);
        assertThat(log.distinct()).isEqualTo(3);
        assertThat(log.snapshot()).containsEntry(DistinctErrorLog.OVERFLOW, 2L).doesNotContainKeys("c", "d");
    }

    @Test
    void refusesANonPositiveCap() {
        assertThatThrownBy(() -> new DistinctErrorLog(LoggerFactory.getLogger(DistinctErrorLogTest.class), "x", 0))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxDistinct");
    }
}
