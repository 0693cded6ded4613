package io.hicache.core.spi;

import org.slf4j.Logger;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The project's one distinct-error log (after Agrona's {@code DistinctErrorLog}): counts errors by a description,
 * so a failure that repeats is one log line plus a count, not a flood. {@link #record} logs a description the first
 * time and again at 10, 100, 1000, ... occurrences (the storage backends and tier); {@link #count} only counts and
 * tells the caller whether it is the first, so a caller that logs with more context (the controller's agents) keeps
 * the same bookkeeping. At most {@code maxDistinct} descriptions are kept; further ones are counted together under
 * {@code "(further distinct errors)"}. Thread-safe; an error path, so it may allocate. The caller passes an
 * already-redacted description.
 */
public final class DistinctErrorLog {
    /** The description that counts every error past the {@code maxDistinct} first distinct ones. */
    public static final String OVERFLOW = "(further distinct errors)";

    private final Logger log;
    private final String prefix;
    private final int maxDistinct;
    private final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();
    private final AtomicLong total = new AtomicLong();

    /**
     * @param log         where {@link #record} and {@link #logSummary} write
     * @param prefix      what the lines start with, e.g. {@code "L3 storage tier"}
     * @param maxDistinct distinct descriptions kept before the rest are counted under {@link #OVERFLOW}
     * @throws IllegalArgumentException if {@code maxDistinct < 1}
     */
    public DistinctErrorLog(Logger log, String prefix, int maxDistinct) {
        if (maxDistinct < 1) {
            throw new IllegalArgumentException("maxDistinct must be at least 1, got " + maxDistinct);
        }
        this.log = log;
        this.prefix = prefix;
        this.maxDistinct = maxDistinct;
    }

    /** Counts one occurrence of {@code description}; logs it (WARN) the first time and at each power of ten. */
    public void record(String description) {
        String key = keyFor(description);
        long n = increment(key);
        if (n == 1) {
            log.warn("{}: {} (first occurrence; further ones are counted)", prefix, key);
        } else if (isPowerOfTen(n)) {
            log.warn("{}: {} (seen {} times)", prefix, key, n);
        }
    }

    /**
     * Counts one occurrence of {@code description} without logging.
     *
     * @return the occurrences of its description so far, this one included: 1 the first time
     */
    public long count(String description) {
        return increment(keyFor(description));
    }

    /** Errors recorded in all. */
    public long total() {
        return total.get();
    }

    /** Distinct descriptions seen so far (the overflow one included). */
    public int distinct() {
        return counts.size();
    }

    /** Each distinct description with its count (a copy). */
    public Map<String, Long> snapshot() {
        Map<String, Long> out = new LinkedHashMap<>();
        counts.forEach((k, v) -> out.put(k, v.get()));
        return out;
    }

    /** Logs (ERROR) each distinct description seen more than once with its count, e.g. at close. */
    public void logSummary() {
        counts.forEach((key, count) -> {
            if (count.get() > 1) {
                log.error("{}: seen {} times: {}", prefix, count.get(), key);
            }
        });
    }

    private String keyFor(String description) {
        return counts.containsKey(description) || counts.size() < maxDistinct ? description : OVERFLOW;
    }

    private long increment(String key) {
        total.incrementAndGet();
        return counts.computeIfAbsent(key, d -> new AtomicLong()).incrementAndGet();
    }

    private static boolean isPowerOfTen(long n) {
        while (n >= 10 && n % 10 == 0) {
            n /= 10;
        }
        return n == 1;
    }
}
