package io.hicache.core.internal;

import io.hicache.core.internal.jfr.HiCacheEvents;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.FallbackReason;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether a controller's forwards fall back to all-layer backup, and the counting and rate-limited logging of each
 * forward that does (at most one WARN per reason every 10 s; {@link FallbackReason#CONFIGURED} only counted).
 *
 * <p><b>Threads.</b> {@link #declareHooksUnavailable} from any thread (volatile fields, written once in practice);
 * {@link #count} and the rate limit belong to the scheduler thread.
 */
final class FallbackLog {
    /** The controller's logger: its log category is unchanged by the split. */
    private static final Logger LOG = LoggerFactory.getLogger(HiCacheController.class);
    private static final long WARN_INTERVAL_NS = 10_000_000_000L;

    private final HiCacheMetrics metrics;
    private final int rank;
    private final long[] lastWarnNs = new long[FallbackReason.values().length];
    private volatile boolean hooksUnavailable;
    private volatile String hooksUnavailableReason;

    FallbackLog(HiCacheMetrics metrics, int rank) {
        this.metrics = metrics;
        this.rank = rank;
    }

    /** Records that per-layer hooks are unavailable from now on, and logs it. Any thread. */
    void declareHooksUnavailable(String reason) {
        hooksUnavailableReason = reason;
        hooksUnavailable = true;
        LOG.warn("HiCache falls back to all-layer backup: per-layer hooks unavailable ({})", reason);
    }

    /** True once {@link #declareHooksUnavailable} was called. Any thread (a volatile read). */
    boolean hooksUnavailable() {
        return hooksUnavailable;
    }

    /** Counts one all-layer forward for {@code reason} (metric and JFR event) and logs it, rate-limited. Scheduler. */
    void count(FallbackReason reason) {
        metrics.countFallback(reason);
        HiCacheEvents.fallback(reason, reason == FallbackReason.HOOKS_UNAVAILABLE ? hooksUnavailableReason : null, rank);
        if (reason == FallbackReason.CONFIGURED) {
            return; // a configuration, said once per process when the controller was built; counted above
        }
        long now = System.nanoTime();
        int i = reason.ordinal();
        if (lastWarnNs[i] == 0 || now - lastWarnNs[i] > WARN_INTERVAL_NS) {
            lastWarnNs[i] = now;
            LOG.warn("HiCache all-layer backup for a forward: {}{} ({} such forwards so far)", reason,
                reason == FallbackReason.HOOKS_UNAVAILABLE ? " - " + hooksUnavailableReason : "",
                metrics.fallbacksBy(reason));
        }
    }
}
