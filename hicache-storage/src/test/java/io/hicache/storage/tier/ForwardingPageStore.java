package io.hicache.storage.tier;

import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import io.hicache.storage.PageStore;
import io.hicache.storage.StoreOp;
import io.hicache.storage.StoreResult;
import io.hicache.storage.StoreStats;

import java.util.List;

/** A test store passing every call to {@code inner}; a subclass overrides the calls it changes. */
abstract class ForwardingPageStore<S extends PageStore> implements PageStore {
    final S inner;

    ForwardingPageStore(S inner) {
        this.inner = inner;
    }

    @Override
    public int maxBatchPages() {
        return inner.maxBatchPages();
    }

    @Override
    public StoreOp<Integer> existsPrefix(List<PageKey> keys) {
        return inner.existsPrefix(keys);
    }

    @Override
    public StoreOp<StoreResult> put(List<PageKey> keys, List<HostPage> pages) {
        return inner.put(keys, pages);
    }

    @Override
    public StoreOp<StoreResult> get(List<PageKey> keys, List<HostPage> pages) {
        return inner.get(keys, pages);
    }

    @Override
    public StoreOp<StoreResult> remove(List<PageKey> keys) {
        return inner.remove(keys);
    }

    @Override
    public StoreOp<Long> epoch() {
        return inner.epoch();
    }

    @Override
    public StoreStats stats() {
        return inner.stats();
    }

    @Override
    public void close() {
        inner.close();
    }
}
