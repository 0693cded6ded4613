package io.hicache.storage.internal;

import org.slf4j.Logger;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Logs each distinct error once, then again at 10, 100, 1000, ... occurrences with its count (after
 * Agrona's {@code DistinctErrorLog}), so a backend outage is one WARN line plus a count, not a flood.
 * The caller passes an already-redacted description. Thread-safe.
 */
public final class DistinctErrorLog {
    private static final int MAX_DISTINCT = 1024;

    private final Logger log;
    private final String prefix;
    private final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();
    private final AtomicLong total = new AtomicLong();

    public DistinctErrorLog(Logger log, String prefix) {
        this.log = log;
        this.prefix = prefix;
    }

    /** Counts one occurrence of {@code description}; logs it the first time and at each power of ten. */
    public void record(String description) {
        total.incrementAndGet();
        AtomicLong c = counts.get(description);
        if (c == null) {
            if (counts.size() >= MAX_DISTINCT) {
                description = "(other errors)";
            }
            c = counts.computeIfAbsent(description, d -> new AtomicLong());
        }
        long n = c.incrementAndGet();
        if (n == 1) {
            log.warn("{}: {} (first occurrence; further ones are counted)", prefix, description);
        } else if (isPowerOfTen(n)) {
            log.warn("{}: {} (seen {} times)", prefix, description, n);
        }
    }

    /** Errors recorded in all. */
    public long total() {
        return total.get();
    }

    /** Each distinct description with its count (a copy). */
    public Map<String, Long> snapshot() {
        Map<String, Long> out = new LinkedHashMap<>();
        counts.forEach((k, v) -> out.put(k, v.get()));
        return out;
    }

    private static boolean isPowerOfTen(long n) {
        while (n >= 10 && n % 10 == 0) {
            n /= 10;
        }
        return n == 1;
    }
}
