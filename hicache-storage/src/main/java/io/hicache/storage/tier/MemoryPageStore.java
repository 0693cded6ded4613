package io.hicache.storage.tier;

import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import io.hicache.storage.PageStore;
import io.hicache.storage.StoreOp;
import io.hicache.storage.StoreResult;
import io.hicache.storage.StoreStats;
import io.hicache.storage.StoreStatus;

import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link PageStore} in heap memory with a capacity in bytes (least recently used pages evicted first): the
 * simulator's modelled L3 ({@code --storage model}, whose time the simulator models separately) and the reference
 * store of tests. Operations complete within the call (a memory copy, no I/O); a put copies the page whole before
 * publishing it, so a get never sees part of one. Thread-safe (one lock).
 */
public final class MemoryPageStore implements PageStore {
    private final long capacityBytes;
    private final int maxBatchPages;
    private final LinkedHashMap<PageKey, byte[]> objects = new LinkedHashMap<>(1024, 0.75f, true);
    private long storedBytes;
    private long putPages;
    private long putBytes;
    private long getHitPages;
    private long getBytes;
    private long missPages;
    private long corruptPages;
    private long rejectedPages;
    private long evictedPages;
    private boolean closed;

    /**
     * @param capacityBytes bytes kept at most (0 = unlimited)
     * @param maxBatchPages keys per call at most (>= 1)
     */
    public MemoryPageStore(long capacityBytes, int maxBatchPages) {
        if (capacityBytes < 0 || maxBatchPages < 1) {
            throw new IllegalArgumentException("capacityBytes must be >= 0 and maxBatchPages >= 1, got "
                    + capacityBytes + " and " + maxBatchPages);
        }
        this.capacityBytes = capacityBytes;
        this.maxBatchPages = maxBatchPages;
    }

    @Override
    public int maxBatchPages() {
        return maxBatchPages;
    }

    @Override
    public synchronized StoreOp<Integer> existsPrefix(List<PageKey> keys) {
        check(keys, null);
        if (closed) {
            return StoreOp.completed(0);
        }
        int n = 0;
        while (n < keys.size() && objects.containsKey(keys.get(n))) {
            n++;
        }
        return StoreOp.completed(n);
    }

    @Override
    public synchronized StoreOp<StoreResult> put(List<PageKey> keys, List<HostPage> pages) {
        check(keys, pages);
        if (closed) {
            rejectedPages += keys.size();
            return StoreOp.completed(StoreResult.all(keys.size(), StoreStatus.REJECTED));
        }
        StoreStatus[] out = new StoreStatus[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            HostPage p = pages.get(i);
            if (capacityBytes > 0 && p.byteSize() > capacityBytes) {
                out[i] = StoreStatus.REJECTED;
                rejectedPages++;
                continue;
            }
            byte[] bytes = new byte[(int) p.byteSize()];
            p.copyTo(MemorySegment.ofArray(bytes), 0);
            byte[] old = objects.put(keys.get(i), bytes);
            storedBytes += bytes.length - (old == null ? 0 : old.length);
            putPages++;
            putBytes += bytes.length;
            out[i] = StoreStatus.OK;
            evictOver();
        }
        return StoreOp.completed(StoreResult.of(out));
    }

    @Override
    public synchronized StoreOp<StoreResult> get(List<PageKey> keys, List<HostPage> pages) {
        check(keys, pages);
        if (closed) {
            rejectedPages += keys.size();
            return StoreOp.completed(StoreResult.all(keys.size(), StoreStatus.REJECTED));
        }
        StoreStatus[] out = new StoreStatus[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            byte[] bytes = objects.get(keys.get(i));
            HostPage p = pages.get(i);
            if (bytes == null) {
                out[i] = StoreStatus.MISS;
                missPages++;
            } else if (bytes.length != p.byteSize()) {
                out[i] = StoreStatus.CORRUPT;
                corruptPages++;
            } else {
                p.copyFrom(MemorySegment.ofArray(bytes), 0);
                out[i] = StoreStatus.OK;
                getHitPages++;
                getBytes += bytes.length;
            }
        }
        return StoreOp.completed(StoreResult.of(out));
    }

    @Override
    public synchronized StoreOp<StoreResult> remove(List<PageKey> keys) {
        check(keys, null);
        StoreStatus[] out = new StoreStatus[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            byte[] old = objects.remove(keys.get(i));
            out[i] = old == null ? StoreStatus.MISS : StoreStatus.OK;
            if (old != null) {
                storedBytes -= old.length;
            }
        }
        return StoreOp.completed(StoreResult.of(out));
    }

    /** Pages held. */
    public synchronized int pageCount() {
        return objects.size();
    }

    @Override
    public synchronized StoreStats stats() {
        return new StoreStats(putPages, putBytes, getHitPages, getBytes, missPages, corruptPages, 0, rejectedPages, 0,
                0, evictedPages, storedBytes, 0);
    }

    @Override
    public synchronized void close() {
        closed = true;
    }

    private void evictOver() {
        if (capacityBytes == 0) {
            return;
        }
        var it = objects.entrySet().iterator();
        while (storedBytes > capacityBytes && it.hasNext()) {
            Map.Entry<PageKey, byte[]> e = it.next();
            storedBytes -= e.getValue().length;
            it.remove();
            evictedPages++;
        }
    }

    private void check(List<PageKey> keys, List<HostPage> pages) {
        if (keys == null || (pages != null && pages.size() != keys.size())) {
            throw new IllegalArgumentException("keys must not be null and pages must match them one to one, got "
                    + (keys == null ? "null" : keys.size()) + " keys and "
                    + (pages == null ? "no" : pages.size()) + " pages");
        }
        if (keys.size() > maxBatchPages) {
            throw new IllegalArgumentException("batch of " + keys.size() + " keys over maxBatchPages " + maxBatchPages);
        }
    }

    @Override
    public String toString() {
        return "MemoryPageStore{capacityBytes=" + capacityBytes + '}';
    }
}
