package io.hicache.events;

import io.hicache.core.HiCache;
import io.hicache.radix.RadixNode;
import io.hicache.radix.spi.TierObserver;

/** A collector as a bare radix tree's observer (what {@link HiCache#tierListener} does inside a cache). */
record TreePort(HiCache.TierListener listener) implements TierObserver {
    @Override
    public void onDeviceInserted(int[] tokens, int from, int len, int firstNewToken, RadixNode last) {
        listener.onDeviceInserted(tokens, from, len, firstNewToken, last);
    }

    @Override
    public void onStored(int tier, RadixNode node) {
        listener.onStored(tier, node);
    }

    @Override
    public void onRemoving(int tier, RadixNode node) {
        listener.onRemoving(tier, node);
    }

    @Override
    public void onPagesStored(int tier, RadixNode node, int firstPage, int pages) {
        listener.onPagesStored(tier, node, firstPage, pages);
    }

    @Override
    public void onSequencePages(int tier, boolean stored, int[] tokens, int from, int firstPage, int pages) {
        listener.onSequencePages(tier, stored, tokens, from, firstPage, pages);
    }

    @Override
    public void onCleared() {
        listener.onCleared();
    }
}
