package io.hicache.core.internal;

import io.hicache.radix.RadixNode;

/**
 * The fingerprints a rank contributes for the items of an agreement round, so that ranks agreeing about different
 * things (a divergent schedule) show it: a backup's is its node's whole token prefix, its position and size and whether
 * it carries draft KV; a load's is its chain's token prefix and page count. Every rank of a group with identical
 * scheduling computes the same value for the same sequence number. Non-negative and never {@link Long#MAX_VALUE}
 * (the "not created yet" mark).
 *
 * <p>Stateless; thread-safe; allocation-free.
 */
final class Fingerprints {
    private static final long K1 = 0x9E3779B97F4A7C15L;
    private static final long K2 = 0xC2B2AE3D27D4EB4FL;

    private Fingerprints() {
    }

    /** One mixing step (a SplitMix64 finaliser over the running hash and the next value). */
    static long mix(long h, long v) {
        long z = h * K1 + v * K2 + 0x165667B19E3779F9L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /**
     * A hash of every token from the root down to the end of {@code node} (its whole prefix), independent of where the
     * tree splits the prefix into nodes: one multiply per token, walked from the end up.
     */
    static long prefix(RadixNode node) {
        long h = 0;
        long tokens = 0;
        for (RadixNode n = node; n != null && !n.isRoot(); n = n.parent()) {
            for (int i = n.tokenCount() - 1; i >= 0; i--) {
                h = (h ^ (n.token(i) & 0xFFFFFFFFL)) * K1;
            }
            tokens += n.tokenCount();
        }
        return mix(h, tokens);
    }

    /** A backup's fingerprint. */
    static long backup(long seq, RadixNode node, int startPage, int pageCount, boolean withDraft) {
        long h = mix(seq, prefix(node));
        h = mix(h, ((long) startPage << 32) | (pageCount & 0xFFFFFFFFL));
        return finish(mix(h, withDraft ? 1 : 2));
    }

    /** A load's fingerprint: its seq, the prefix up to its chain's last node, the pages it loads. */
    static long load(long seq, RadixNode last, int pageCount) {
        return finish(mix(mix(seq, prefix(last)), 3L << 32 | pageCount));
    }

    /** Chains a committed item into a round's digest. */
    static long digest(long digest, long seq, long fingerprint) {
        return mix(mix(digest, seq), fingerprint);
    }

    private static long finish(long h) {
        long f = h & Long.MAX_VALUE;
        return f == Long.MAX_VALUE ? 0 : f;
    }
}
