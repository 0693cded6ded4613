package io.hicache.storage;

import io.hicache.core.memory.HostLayout;

import java.lang.foreign.MemorySegment;

/**
 * The memory of one host page as the store sees it: an ordered list of segments of the pinned host pool
 * whose concatenation is the page's stored object. Backends read from (put) and write into (get) these
 * segments directly; nothing is staged through another buffer by the SPI.
 *
 * <p>The storage tier makes a cache's host page of the segments its host pool gives for one page id (all layers
 * and buffers) in the pool's memory order, adjacent ranges merged: one segment per buffer in
 * {@link HostLayout#PAGE_FIRST_DIRECT} and {@link HostLayout#PAGE_FIRST}, one per (buffer, layer) in
 * {@link HostLayout#LAYER_FIRST}. Because the order follows the layout, the layout is part of the key
 * namespace ({@link KeyNamespace}).
 *
 * <p>Immutable; thread-safe. The segments are views: the caller keeps the pool open and the page reserved
 * while an operation on it is in flight.
 */
public final class HostPage {
    private final MemorySegment[] parts;
    private final long byteSize;

    private HostPage(MemorySegment[] parts) {
        long total = 0;
        for (MemorySegment p : parts) {
            if (p == null) {
                throw new IllegalArgumentException("a host page part must not be null");
            }
            total += p.byteSize();
        }
        if (total == 0) {
            throw new IllegalArgumentException("a host page must hold at least one byte");
        }
        this.parts = parts;
        this.byteSize = total;
    }

    /**
     * A page made of the given segments, in order.
     *
     * @throws IllegalArgumentException when no part, a null part, or zero bytes in total is given
     */
    public static HostPage of(MemorySegment... parts) {
        if (parts == null || parts.length == 0) {
            throw new IllegalArgumentException("a host page needs at least one segment");
        }
        return new HostPage(parts.clone());
    }

    /** Segments of this page. */
    public int partCount() {
        return parts.length;
    }

    /** Segment {@code i}, in object order. */
    public MemorySegment part(int i) {
        return parts[i];
    }

    /** Bytes of the page's object: the sum of its segments. */
    public long byteSize() {
        return byteSize;
    }

    /** Copies the page's bytes, in object order, into {@code dst} at {@code offset} (a backend helper). */
    public void copyTo(MemorySegment dst, long offset) {
        long at = offset;
        for (MemorySegment p : parts) {
            MemorySegment.copy(p, 0, dst, at, p.byteSize());
            at += p.byteSize();
        }
    }

    /** Fills the page's segments, in object order, from {@code src} at {@code offset} (a backend helper). */
    public void copyFrom(MemorySegment src, long offset) {
        long at = offset;
        for (MemorySegment p : parts) {
            MemorySegment.copy(src, at, p, 0, p.byteSize());
            at += p.byteSize();
        }
    }

    @Override
    public String toString() {
        return "HostPage{" + parts.length + " parts, " + byteSize + " bytes}";
    }
}
