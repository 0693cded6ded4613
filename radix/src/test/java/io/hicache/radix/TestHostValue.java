package io.hicache.radix;

import io.hicache.radix.spi.HostValue;

/** Host value covering host pages [start, start + pageCount). Test helper. */
record TestHostValue(int start, int pageCount) implements HostValue {
    @Override
    public HostValue head(int pages) {
        return new TestHostValue(start, pages);
    }

    @Override
    public HostValue tail(int pages) {
        return new TestHostValue(start + pages, pageCount - pages);
    }
}
