package io.hicache.events;

import io.hicache.radix.spi.HostValue;

/** A host copy of {@code pages} pages with nothing behind it: what a bare radix tree's host commit needs. */
record HostCopy(int pages) implements HostValue {
    @Override
    public int pageCount() {
        return pages;
    }

    @Override
    public HostValue head(int k) {
        return new HostCopy(k);
    }

    @Override
    public HostValue tail(int k) {
        return new HostCopy(pages - k);
    }
}
