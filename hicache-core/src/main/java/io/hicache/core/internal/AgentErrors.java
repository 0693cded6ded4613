package io.hicache.core.internal;

import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import io.hicache.core.spi.DistinctErrorLog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agents' distinct-error log: every unexpected exception an agent catches while handling one forward or load
 * is counted ({@link Metric#AGENT_ERRORS}) and logged once per distinct error (type, message and throwing frame)
 * with its stack; repeats only count, and {@link #logSummary()} reports each distinct error with its count at
 * close. The bookkeeping is the shared {@link DistinctErrorLog}. Thread-safe (both agents report here); an error
 * path, so it may allocate.
 */
final class AgentErrors {
    private static final Logger LOG = LoggerFactory.getLogger(AgentErrors.class);
    private static final int MAX_DISTINCT = 64;

    private final HiCacheMetrics metrics;
    private final DistinctErrorLog log = new DistinctErrorLog(LOG, "HiCache agent error", MAX_DISTINCT);

    AgentErrors(HiCacheMetrics metrics) {
        this.metrics = metrics;
    }

    /** Records one error of {@code agent} while it handled {@code what}; logs it if it is new. Any thread. */
    void record(String agent, String what, Throwable error) {
        metrics.incrementShared(Metric.AGENT_ERRORS);
        if (log.count(key(agent, error)) == 1) {
            LOG.error("HiCache {} failed while handling {}; its backups or loads are aborted and the agent goes on "
                + "(logged once; repeats are counted in AGENT_ERRORS)", agent, what, error);
        }
    }

    /** Distinct errors seen so far. */
    int distinct() {
        return log.distinct();
    }

    /** Logs each distinct error seen more than once with its count. */
    void logSummary() {
        log.logSummary();
    }

    private static String key(String agent, Throwable error) {
        StackTraceElement[] frames = error.getStackTrace();
        return agent + ": " + error.getClass().getName() + ": " + error.getMessage()
            + (frames.length > 0 ? " at " + frames[0] : "");
    }
}
