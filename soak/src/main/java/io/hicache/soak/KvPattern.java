package io.hicache.soak;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The soak's KV content: a deterministic function of (token prefix, layer, role, buffer, CP lane), so every page
 * loaded back can be checked byte for byte against what was "computed". A page's prefix is summarised by a chained
 * hash over the tokens up to the page's end ({@link #chain}). Stateless; thread-safe.
 */
final class KvPattern {
    /** Role of a layer: the target model's or the draft (MTP) model's. */
    static final int TARGET = 0;
    static final int DRAFT = 1;

    private KvPattern() {
    }

    /** The prefix hash of page {@code page} given the one of the page before ({@code 0} for page 0). */
    static long chain(long previous, int[] tokens, int page, int pageSize) {
        long h = previous ^ 0x9E3779B97F4A7C15L;
        for (int i = page * pageSize; i < (page + 1) * pageSize; i++) {
            h = mix(h + tokens[i]);
        }
        return h;
    }

    /** SplitMix64's finaliser. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static long seed(long prefix, int layer, int role, int buffer, int lane) {
        return mix(prefix ^ mix(((long) layer << 40) ^ ((long) role << 32) ^ ((long) buffer << 16) ^ lane));
    }

    /** Writes the page's content into {@code page} (its length a multiple of 8). */
    static void fill(MemorySegment page, long prefix, int layer, int role, int buffer, int lane) {
        long s = seed(prefix, layer, role, buffer, lane);
        for (long off = 0; off < page.byteSize(); off += 8) {
            s += 0x9E3779B97F4A7C15L;
            page.set(ValueLayout.JAVA_LONG_UNALIGNED, off, mix(s));
        }
    }

    /** Whether {@code page} holds exactly what {@link #fill} writes for these arguments. */
    static boolean matches(MemorySegment page, long prefix, int layer, int role, int buffer, int lane) {
        long s = seed(prefix, layer, role, buffer, lane);
        for (long off = 0; off < page.byteSize(); off += 8) {
            s += 0x9E3779B97F4A7C15L;
            if (page.get(ValueLayout.JAVA_LONG_UNALIGNED, off) != mix(s)) {
                return false;
            }
        }
        return true;
    }
}
