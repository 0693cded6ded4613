package io.hicache.core.internal.metrics;

import io.hicache.core.metrics.MetricsSnapshot;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/** Bucketing, cumulative counts and the read-only view of the transfer bandwidth histogram. */
class BandwidthHistogramTest {
    @Test
    void bytesPerNanosecondAreGigabytesPerSecondAndBoundsAreInclusive() {
        BandwidthHistogram h = new BandwidthHistogram();
        assertThat(h.record(1_000, 1_000)).isTrue();       // 1 GB/s: the le=1 bucket, not le=5
        assertThat(h.record(50, 1_000)).isTrue();          // 0.05 GB/s: le=0.1
        assertThat(h.record(30_000, 1_000)).isTrue();      // 30 GB/s: le=50
        assertThat(h.record(1_000_000, 1_000)).isTrue();   // 1000 GB/s: only +Inf
        MetricsSnapshot.BandwidthView v = h.view();
        assertThat(v.buckets()).isEqualTo(8);
        double[] bounds = new double[v.buckets()];
        long[] cumulative = new long[v.buckets()];
        for (int i = 0; i < v.buckets(); i++) {
            bounds[i] = v.upperBound(i);
            cumulative[i] = v.cumulativeCount(i);
        }
        assertThat(bounds).containsExactly(0.1, 0.5, 1, 5, 10, 50, 100, Double.POSITIVE_INFINITY);
        assertThat(cumulative).containsExactly(1, 1, 2, 2, 2, 3, 3, 4);
        assertThat(v.count()).isEqualTo(4);
        assertThat(v.sumGbps()).isCloseTo(1 + 0.05 + 30 + 1000, within(1e-9));
    }

    @Test
    void aTransferWithoutBytesOrTimeIsNotSampled() {
        BandwidthHistogram h = new BandwidthHistogram();
        assertThat(h.record(1_000, 0)).isFalse();
        assertThat(h.record(0, 1_000)).isFalse();
        assertThat(h.record(1_000, -5)).isFalse();
        assertThat(h.count()).isZero();
        assertThat(h.cumulativeCount(h.buckets() - 1)).isZero();
        assertThat(h.sumGbps()).isZero();
    }

    @Test
    void aBucketOutsideTheRangeIsNamed() {
        MetricsSnapshot.BandwidthView v = new BandwidthHistogram().view();
        assertThatThrownBy(() -> v.upperBound(8)).isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("8");
        assertThatThrownBy(() -> v.cumulativeCount(-1)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void theViewIsOneReadOnlyObject() {
        BandwidthHistogram h = new BandwidthHistogram();
        assertThat(h.view()).isSameAs(h.view()).isNotInstanceOf(BandwidthHistogram.class);
        HiCacheMetrics m = new HiCacheMetrics();
        assertThat(m.view()).isSameAs(m.view()).isNotInstanceOf(HiCacheMetrics.class);
        assertThat(m.view().commitLatency()).isNotInstanceOf(LatencyHistogram.class);
        assertThat(m.view().backupBandwidth()).isSameAs(m.backupBandwidth().view());
    }
}
