package io.hicache.radix.spi;

import io.hicache.radix.RadixNode;

/**
 * The committed host copy of a node's pages (host page ids plus the owner-lane description they
 * were written with). Implemented by core; opaque to the tree, which only asks for its length and
 * cuts it when the node is split.
 *
 * <p>Owned by the scheduler thread, like the tree. Implementations should be immutable values.
 */
public interface HostValue {

    /** @return number of pages this value covers; equals the owning node's {@link RadixNode#pageCount()} */
    int pageCount();

    /**
     * @param pages number of leading pages, {@code 0 < pages < pageCount()}
     * @return the value of the first {@code pages} pages
     */
    HostValue head(int pages);

    /**
     * @param pages number of leading pages to drop, {@code 0 < pages < pageCount()}
     * @return the value of the pages after the first {@code pages}
     */
    HostValue tail(int pages);
}
