package io.hicache.serve.http;

import java.util.concurrent.ThreadLocalRandom;

/** Response ids ({@code cmpl-...}, {@code chatcmpl-...}): random 96-bit hex. Thread-safe. */
final class Ids {
    private Ids() {
    }

    static String next(String prefix) {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        return prefix + Long.toHexString(r.nextLong() | Long.MIN_VALUE) + Integer.toHexString(r.nextInt() | 1 << 31);
    }
}
