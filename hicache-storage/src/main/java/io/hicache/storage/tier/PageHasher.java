package io.hicache.storage.tier;

import io.hicache.core.spi.StoragePort;
import io.hicache.radix.RadixNode;
import io.hicache.storage.KeyNamespace;
import io.hicache.storage.PageKey;

import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

/**
 * The SHA-256 page keys of one rank's lane: SGLang's {@code get_hash_str} chain seeded with the lane's
 * {@link KeyNamespace#seed()} ({@link KeyNamespace#NONE}: unseeded, exactly SGLang's keys). A radix node's hashes are
 * computed once, when the tier first needs them, top-down from the nearest ancestor that has them, and kept on the
 * node ({@link StoragePort#setPageHashes}), so they split with it. A page's object key is its hash; the key of its
 * draft/MTP part is {@link KeyNamespace#draftKey} of it.
 *
 * <p>Owned by the scheduler thread (one digest and scratch buffers, reused).
 */
final class PageHasher {
    /** Bytes of one page hash (a SHA-256 digest). */
    static final int HASH = RadixNode.PAGE_HASH_BYTES;

    private final StoragePort port;
    private final int pageSize;
    private final byte[] seed;
    private final byte[] draftSeed;
    private final MessageDigest md = sha256();
    private final byte[] idScratch;
    private final byte[] hashScratch = new byte[HASH];

    PageHasher(StoragePort port, KeyNamespace namespace) {
        this.port = port;
        this.pageSize = port.pageSize();
        this.seed = namespace.isNone() ? null : namespace.seed().toBytes();
        this.draftSeed = namespace.draftSeed().toBytes();
        this.idScratch = new byte[pageSize * 4];
    }

    /** Gives {@code node} and every ancestor without them their page hashes, top-down. */
    void ensureHashes(RadixNode node) {
        if (node.isRoot() || node.hasPageHashes()) {
            return;
        }
        RadixNode parent = node.parent();
        byte[] prior;
        if (parent.isRoot()) {
            prior = seed;
        } else {
            ensureHashes(parent);
            parent.copyPageHash(parent.pageCount() - 1, hashScratch, 0);
            prior = hashScratch;
        }
        int pages = node.pageCount();
        int[] ids = new int[node.tokenCount()];
        node.copyTokens(ids, 0);
        byte[] hashes = new byte[pages * HASH];
        chain(prior, ids, 0, pages, hashes);
        port.setPageHashes(node, hashes, 0);
    }

    /**
     * The hashes of pages {@code [fromPage, fromPage + pages)} of {@code tokens}, the pages that follow
     * {@code last} (the root, or the node the match ended at, which covers pages {@code [0, fromPage)}).
     */
    byte[] chainAfter(RadixNode last, int[] tokens, int fromPage, int pages) {
        byte[] hashes = new byte[pages * HASH];
        if (last.isRoot()) {
            chain(seed, tokens, fromPage * pageSize, pages, hashes);
        } else {
            ensureHashes(last);
            last.copyPageHash(last.pageCount() - 1, hashScratch, 0);
            chain(hashScratch, tokens, fromPage * pageSize, pages, hashes);
        }
        return hashes;
    }

    /** The key of page {@code offset} of {@code node}, which has its hashes. */
    PageKey nodeKey(RadixNode node, int offset) {
        node.copyPageHash(offset, hashScratch, 0);
        return PageKey.ofDigest(hashScratch);
    }

    /** The key of the draft/MTP part of the page whose target key is {@code target}: {@link KeyNamespace#draftKey}. */
    PageKey draftKey(PageKey target) {
        md.reset();
        md.update(draftSeed);
        target.copyTo(hashScratch, 0);
        md.update(hashScratch, 0, HASH);
        return PageKey.ofDigest(md.digest());
    }

    /** The key of page {@code position} of a hash array made by {@link #chainAfter}. */
    static PageKey key(byte[] hashes, int position) {
        return PageKey.ofDigest(Arrays.copyOfRange(hashes, position * HASH, position * HASH + HASH));
    }

    /** SGLang's chain over {@code pages} pages of {@code ids} from {@code from}, seeded with {@code prior} (or none). */
    private void chain(byte[] prior, int[] ids, int from, int pages, byte[] out) {
        byte[] prev = prior == null ? null : prior.clone();
        for (int p = 0; p < pages; p++) {
            md.reset();
            if (prev != null) {
                md.update(prev, 0, HASH);
            }
            int base = from + p * pageSize;
            for (int t = 0; t < pageSize; t++) {
                int v = ids[base + t];
                idScratch[4 * t] = (byte) v;
                idScratch[4 * t + 1] = (byte) (v >>> 8);
                idScratch[4 * t + 2] = (byte) (v >>> 16);
                idScratch[4 * t + 3] = (byte) (v >>> 24);
            }
            md.update(idScratch, 0, pageSize * 4);
            try {
                md.digest(out, p * HASH, HASH);
            } catch (DigestException e) {
                throw new IllegalStateException(e);
            }
            if (prev == null) {
                prev = new byte[HASH];
            }
            System.arraycopy(out, p * HASH, prev, 0, HASH);
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }
}
