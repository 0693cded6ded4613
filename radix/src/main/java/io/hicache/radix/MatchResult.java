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
    }

    void appendDevicePages(int[] src, int off, int count) {
        int need = devicePageCount + count;
        if (need > devicePages.length) {
            devicePages = Arrays.copyOf(devicePages, Math.max(need, devicePages.length * 2));
        }
        System.arraycopy(src, off, devicePages, devicePageCount, count);
        devicePageCount = need;
    }

    /** @return leading pages found on device (committed or pending host copies included) */
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
