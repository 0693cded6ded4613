package io.hicache.radix;

import io.hicache.radix.spi.HostValue;
import io.hicache.radix.spi.KeyTokensReader;
import io.hicache.radix.spi.PendingBackup;
import io.hicache.radix.spi.PendingLoad;

/**
 * One node of a {@link RadixTree}: a run of whole pages of token ids (the key) and what is cached
 * for it: device page indices (one per page), a committed {@link HostValue}, or a
 * {@link PendingBackup} in flight.
 *
 * <p>States: device-only, device+host, host-only ({@linkplain #isDeviceEvicted() device evicted}),
 * pending (device pages, host copy in flight: a device hit only, neither host-visible nor evictable),
 * loading (host value plus the device pages of a {@link PendingLoad} in flight: a device prefix whose bytes
 * are not yet committed, see {@link RadixTree#beginLoad}).
 * Every attached non-root node holds device pages or a committed host value.
 *
 * <p>Owned by the scheduler thread that owns the tree; not thread-safe. Only the tree mutates a
 * node; callers read it through the accessors. A node removed from the tree keeps its last key and
 * host value but reports {@link #isAttached()} false.
 */
// hostValue() and pending() return io.hicache.radix.spi types, exported only to the cache that implements them.
@SuppressWarnings("exports")
public final class RadixNode {

    // ---- structure ----
    RadixNode parent;
    boolean attached;
    /**
     * Token storage shared between split fragments; key is keyTokens[keyOff, keyOff + keyLen). Its token range is
     * written once, when the array is made, and never again: a {@link KeyTokensReader} may read it from another thread.
     */
    int[] keyTokens;
    int keyOff;
    int keyLen;
    int pageCount;
    /** Hash of the first page, the key in the parent's child table. */
    int childKey;
    /** Next sibling with the same childKey (page size > 1 hash collisions only). */
    RadixNode hashNext;

    // ---- child table: open addressing, linear probing; null tables while no children ----
    int[] childKeys;
    RadixNode[] childVals;
    int childSlots;
    int childCount;
    int deviceChildCount;

    // ---- values ----
    int[] devPages; // null when device evicted
    int devOff;
    HostValue hostValue;
    PendingBackup pending;
    PendingLoad loading;
    /** Set when a failed load or a withdrawal removed this node with its subtree; lock calls on it are then no-ops. */
    boolean invalidated;
    /** Page hashes of the storage tier: {@link #PAGE_HASH_BYTES} per page from hashOff; shared by split fragments. */
    byte[] hashBytes;
    int hashOff;

    // ---- refs and stats ----
    int lockRef;
    int hostRef;
    int hitCount;
    long lastAccessTick;
    long createSeq;
    int priority;

    // ---- eviction queue hooks (device tier, host tier) ----
    RadixNode devPrev;
    RadixNode devNext;
    boolean inDevList;
    int devHeapIdx = -1;
    RadixNode hostPrev;
    RadixNode hostNext;
    boolean inHostList;
    int hostHeapIdx = -1;

    /** Bytes of one page hash (SHA-256). */
    public static final int PAGE_HASH_BYTES = 32;

    /** See {@link #serial()}. */
    private final long serial;

    RadixNode(long serial) {
        this.serial = serial;
    }

    /**
     * A number the tree gave this node when it created it (the head a split creates gets its own): distinct among
     * all the nodes one tree ever creates (a 64-bit counter). A key for a cache indexed by node that holds no
     * reference to it, where {@link System#identityHashCode} would install a hash in the object's header on its
     * first call. Any thread.
     */
    public long serial() {
        return serial;
    }

    /** Whether the storage tier's page hashes were set on this node ({@link RadixTree#setPageHashes}). */
    public boolean hasPageHashes() {
        return hashBytes != null;
    }

    /**
     * Copies the hash of page {@code i} of this node ({@link #PAGE_HASH_BYTES} bytes) into {@code dst} at
     * {@code dstOff}. Allocation-free.
     *
     * @throws IllegalStateException if no hashes were set
     * @throws IndexOutOfBoundsException if {@code i} is outside the node
     */
    public void copyPageHash(int i, byte[] dst, int dstOff) {
        if (hashBytes == null) {
            throw new IllegalStateException("no page hashes on " + this);
        }
        if (i < 0 || i >= pageCount) {
            throw new IndexOutOfBoundsException("page " + i + " outside [0, " + pageCount + ")");
        }
        System.arraycopy(hashBytes, hashOff + i * PAGE_HASH_BYTES, dst, dstOff, PAGE_HASH_BYTES);
    }

    /** @return the parent, or null for the root and for removed nodes */
    public RadixNode parent() {
        return parent;
    }

    /** @return true for the tree's root (empty key, never cached, never evicted) */
    public boolean isRoot() {
        return parent == null && attached;
    }

    /** @return true while the node is part of its tree */
    public boolean isAttached() {
        return attached;
    }

    /** @return key length in pages */
    public int pageCount() {
        return pageCount;
    }

    /** @return key length in tokens ({@code pageCount() * pageSize}) */
    public int tokenCount() {
        return keyLen;
    }

    /**
     * @param i token index, {@code 0 <= i < tokenCount()}
     * @return the token id at {@code i} of this node's key
     */
    public int token(int i) {
        if (i < 0 || i >= keyLen) {
            throw new IndexOutOfBoundsException("token index " + i + " outside [0, " + keyLen + ")");
        }
        return keyTokens[keyOff + i];
    }

    /** Copies this node's key tokens into {@code dst} at {@code dstOff}. */
    public void copyTokens(int[] dst, int dstOff) {
        System.arraycopy(keyTokens, keyOff, dst, dstOff, keyLen);
    }

    /**
     * Copies {@code count} key tokens from index {@code from} into {@code dst} at {@code dstOff}. Allocation-free.
     *
     * @throws IndexOutOfBoundsException if {@code [from, from + count)} is outside the key or the copy outside
     *     {@code dst}
     */
    public void copyTokens(int from, int count, int[] dst, int dstOff) {
        java.util.Objects.checkFromIndexSize(from, count, keyLen);
        System.arraycopy(keyTokens, keyOff + from, dst, dstOff, count);
    }

    /**
     * Hands {@code reader} where this node's key tokens are kept: the token array (shared with split fragments), the
     * offset of this node's first token in it and its token count, for a reader that reads them later on another
     * thread without copying them now (see {@link KeyTokensReader} for why that is safe, and that the array is
     * read-only to it). Only the modules the tree's SPI is exported to can name a reader. Calls {@code reader} once,
     * on the calling (scheduler) thread; allocation-free.
     */
    public void readKeyTokens(KeyTokensReader reader) {
        reader.read(keyTokens, keyOff, keyLen);
    }

    /** @return true if the node holds device pages */
    public boolean hasDeviceValue() {
        return devPages != null;
    }

    /** @return true for a non-root node whose device pages were evicted (host-only) */
    public boolean isDeviceEvicted() {
        return devPages == null && parent != null;
    }

    /**
     * @param i page index within this node, {@code 0 <= i < pageCount()}
     * @return the device page index of page {@code i}
     * @throws IllegalStateException if the node holds no device pages
     */
    public int devicePage(int i) {
        if (devPages == null) {
            throw new IllegalStateException("node holds no device pages (device evicted or root)");
        }
        if (i < 0 || i >= pageCount) {
            throw new IndexOutOfBoundsException("page index " + i + " outside [0, " + pageCount + ")");
        }
        return devPages[devOff + i];
    }

    /** Copies this node's device page indices into {@code dst} at {@code dstOff}; requires device pages. */
    public void copyDevicePages(int[] dst, int dstOff) {
        if (devPages == null) {
            throw new IllegalStateException("node holds no device pages (device evicted or root)");
        }
        System.arraycopy(devPages, devOff, dst, dstOff, pageCount);
    }

    /** @return the committed host value, or null if none (a pending backup is not a host value) */
    public HostValue hostValue() {
        return hostValue;
    }

    /** @return the backup in flight, or null */
    public PendingBackup pending() {
        return pending;
    }

    /** @return the load in flight that fills this node's device pages, or null */
    public PendingLoad pendingLoad() {
        return loading;
    }

    /** @return true while a load fills this node's device pages (bytes not yet committed) */
    public boolean isLoading() {
        return loading != null;
    }

    /** @return true if a failed load or a withdrawal ({@link RadixTree#withdraw}) removed this node and its subtree */
    public boolean isInvalidated() {
        return invalidated;
    }

    /** @return true if a host value is committed */
    public boolean isHostResident() {
        return hostValue != null;
    }

    /**
     * @return true if committed or pending on host; this is what the write-through contiguity rule
     *     (see {@link RadixTree#canBackUp(RadixNode)}) looks at for a parent
     */
    public boolean isBackedUp() {
        return hostValue != null || pending != null;
    }

    /** @return device lock count (propagated up the path by {@link RadixTree#lock}) */
    public int lockRef() {
        return lockRef;
    }

    /** @return host protection count (propagated up the path by {@link RadixTree#protectHost}) */
    public int hostRef() {
        return hostRef;
    }

    /** @return number of inserts that passed through this node (input to write-through thresholds, LFU, SLRU) */
    public int hitCount() {
        return hitCount;
    }

    /** @return tick of the last match or insert that touched this node */
    public long lastAccessTick() {
        return lastAccessTick;
    }

    /** @return eviction priority for {@link EvictionPolicy#PRIORITY} (lower is evicted first) */
    public int priority() {
        return priority;
    }

    /** @return number of children */
    public int childCount() {
        return childCount;
    }

    @Override
    public String toString() {
        return "RadixNode[pages=" + pageCount + ", device=" + (devPages != null) + ", host=" + (hostValue != null)
                + ", pending=" + (pending != null) + (loading != null ? ", loading" : "") + ", lockRef=" + lockRef + ", hostRef=" + hostRef
                + ", children=" + childCount + (attached ? "" : ", detached") + ']';
    }
}
