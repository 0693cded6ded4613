package io.hicache.radix;

import java.util.Arrays;

/**
 * Reusable output of {@link RadixTree#match(int[], int, int, MatchResult)}. Reusing one instance
 * makes matching allocation-free once its page buffer has grown to the longest match.
 *
 * <p>Owned by the thread that owns the tree; not thread-safe.
 */
public final class MatchResult {

    int[] devicePages;
    int devicePageCount;
    int hostPageCount;
    int pageSize = 1;
    RadixNode lastDeviceNode;
    RadixNode lastHostNode;
    int readyPageCount;
    RadixNode loadingNode;

    /** Creates an empty result with a small page buffer. */
    public MatchResult() {
        this(16);
    }

    /** @param initialPageCapacity initial size of the device page buffer, at least 1 */
    public MatchResult(int initialPageCapacity) {
        if (initialPageCapacity < 1) {
            throw new IllegalArgumentException("initialPageCapacity " + initialPageCapacity + " must be >= 1");
        }
        devicePages = new int[initialPageCapacity];
    }

    void reset(RadixNode root, int pageSize) {
        devicePageCount = 0;
        hostPageCount = 0;
        this.pageSize = pageSize;
        lastDeviceNode = root;
        lastHostNode = root;
        readyPageCount = 0;
        loadingNode = null;
    }

    void appendDevicePages(int[] src, int off, int count) {
        int need = devicePageCount + count;
        if (need > devicePages.length) {
            devicePages = Arrays.copyOf(devicePages, Math.max(need, devicePages.length * 2));
        }
        System.arraycopy(src, off, devicePages, devicePageCount, count);
        devicePageCount = need;
    }

    /**
     * @return leading device pages whose bytes are committed: {@link #devicePageCount()} up to the first node a
     *     load is still filling. Decisions that need the bytes now (a forward that does not wait for the load)
     *     use this count.
     */
    public int readyPageCount() {
        return readyPageCount;
    }

    /**
     * @return the deepest matched node a load is still filling ({@link RadixNode#isLoading()}), or null. A request
     *     that uses the device prefix beyond {@link #readyPageCount()} must wait for that load's layers.
     */
    public RadixNode loadingNode() {
        return loadingNode;
    }

    /** @return leading pages found on device (pending host copies and loads in flight included) */
    public int devicePageCount() {
        return devicePageCount;
    }

    /** @return leading tokens found on device */
    public int deviceTokenCount() {
        return devicePageCount * pageSize;
    }

    /** @return device page index of matched page {@code i}, {@code 0 <= i < devicePageCount()} */
    public int devicePage(int i) {
        if (i < 0 || i >= devicePageCount) {
            throw new IndexOutOfBoundsException("page index " + i + " outside [0, " + devicePageCount + ")");
        }
        return devicePages[i];
    }

    /** @return the backing buffer of device page indices; valid in {@code [0, devicePageCount())}, reused by the next match */
    public int[] devicePages() {
        return devicePages;
    }

    /** @return pages beyond the device hit that exist only as committed host values (load-back candidates) */
    public int hostPageCount() {
        return hostPageCount;
    }

    /** @return tokens beyond the device hit that exist only on host */
    public int hostTokenCount() {
        return hostPageCount * pageSize;
    }

    /**
     * Drops the host-only extension of this result, keeping the device hit: for a cache whose host tier cannot serve
     * loads now (a degraded CP group), so that no host hit is reported that could not be loaded.
     */
    public void dropHostExtension() {
        hostPageCount = 0;
        lastHostNode = lastDeviceNode;
    }

    /** @return deepest matched node holding device pages, or the root */
    public RadixNode lastDeviceNode() {
        return lastDeviceNode;
    }

    /**
     * @return deepest matched node overall: the last host-only node of the host extension, or
     *     {@link #lastDeviceNode()} when there is no host extension
     */
    public RadixNode lastHostNode() {
        return lastHostNode;
    }
}
