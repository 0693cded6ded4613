package io.hicache.serve.engine;

/**
 * What the engine and its cache hold at one moment, read on the engine thread ({@link Engine#inspect()}): for tests,
 * the overload script and {@code GET /get_server_info}. Immutable.
 *
 * @param running            requests prefilling or decoding
 * @param waiting            requests queued (prefetching or loading included)
 * @param devicePagesTotal   pages of the device pool
 * @param devicePagesFree    pages no one holds
 * @param devicePagesCached  pages the radix tree holds
 * @param devicePagesLocked  pages on locked paths
 * @param backupsInFlight    backups not yet committed or aborted
 * @param loadsInFlight      loads not yet done
 * @param hostPagesAllocated host pages holding anything (committed, pending, or leased to an L3 prefetch)
 * @param hostPagesCommitted host pages of committed backups
 * @param hostPagesPending   host pages of backups in flight
 * @param l3InFlight         L3 prefetches and write batches in flight
 */
public record Inspection(int running, int waiting, int devicePagesTotal, int devicePagesFree, long devicePagesCached,
                         long devicePagesLocked, int backupsInFlight, int loadsInFlight, int hostPagesAllocated,
                         long hostPagesCommitted, long hostPagesPending, int l3InFlight) {
    /**
     * True when nothing is held or in flight: no request, no lock, no backup, load or L3 operation, no host page but
     * committed ones, and every device page either free or the tree's (nothing leaked).
     */
    public boolean idle() {
        return running == 0 && waiting == 0 && devicePagesLocked == 0 && backupsInFlight == 0 && loadsInFlight == 0
            && l3InFlight == 0 && hostPagesPending == 0 && hostPagesAllocated == hostPagesCommitted
            && devicePagesFree + devicePagesCached == devicePagesTotal;
    }
}
