package io.hicache.core.internal;

import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The agents' distinct-error log: every unexpected exception an agent catches while handling one forward or load
 * is counted ({@link Metric#AGENT_ERRORS}) and logged once per distinct error (type, message and throwing frame)
 * with its stack; repeats only count, and {@link #logSummary()} reports each distinct error with its count at
 * close. Thread-safe (both agents report here); an error path, so it may allocate.
 */
final class AgentErrors {
    private static final Logger LOG = LoggerFactory.getLogger(AgentErrors.class);
    private static final int MAX_DISTINCT = 64;

    private final HiCacheMetrics metrics;
    private final ConcurrentHashMap<String, AtomicLong> counts = new ConcurrentHashMap<>();

    AgentErrors(HiCacheMetrics metrics) {
        this.metrics = metrics;
    }

    /** Records one error of {@code agent} while it handled {@code what}; logs it if it is new. Any thread. */
    void record(String agent, String what, Throwable error) {
        metrics.incrementShared(Metric.AGENT_ERRORS);
        String key = key(agent, error);
        AtomicLong count = counts.get(key);
        if (count == null) {
            if (counts.size() >= MAX_DISTINCT) {
                key = agent + " (further distinct errors)";
            }
            count = counts.computeIfAbsent(key, k -> new AtomicLong());
        }
        if (count.incrementAndGet() == 1) {
            LOG.error("HiCache {} failed while handling {}; its backups or loads are aborted and the agent goes on "
                + "(logged once; repeats are counted in AGENT_ERRORS)", agent, what, error);
        }
    }

    /** Distinct errors seen so far. */
    int distinct() {
        return counts.size();
    }

    /** Logs each distinct error seen more than once with its count. */
    void logSummary() {
        counts.forEach((key, count) -> {
            if (count.get() > 1) {
                LOG.error("HiCache agent error seen {} times: {}", count.get(), key);
            }
        });
    }

    private static String key(String agent, Throwable error) {
        StackTraceElement[] frames = error.getStackTrace();
        return agent + ": " + error.getClass().getName() + ": " + error.getMessage()
            + (frames.length > 0 ? " at " + frames[0] : "");
    }
}
