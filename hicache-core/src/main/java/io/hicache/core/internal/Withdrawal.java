package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.DevicePageSink;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;

import java.util.ArrayList;
import java.util.List;

/**
 * Withdraws KV a request inserted but never computed (see {@link HiCacheController#withdrawUncomputed}): finds the
 * node where the uncomputed pages start, checks that nothing but the backups of those pages uses them, aborts the
 * backups and takes the subtree out of the device tier, its pages going to the engine (or, where a backup's copies
 * may still read them, to that backup until they drained).
 *
 * <p>Scheduler thread only; the controller checks thread and state before calling. Allocates (cold path).
 */
final class Withdrawal {
    private final RadixTree tree;
    private final BackupBook backups;
    private final HiCacheMetrics metrics;
    private final int pageSize;
    private final HeldPagesSink held = new HeldPagesSink();

    Withdrawal(RadixTree tree, BackupBook backups, HiCacheMetrics metrics) {
        this.tree = tree;
        this.backups = backups;
        this.metrics = metrics;
        this.pageSize = tree.pageSize();
    }

    /** See {@link HiCacheController#withdrawUncomputed}; arguments checked by the caller. */
    int withdraw(int[] tokens, int from, int len, int computedTokens, AbortReason reason, DevicePageSink sink) {
        RadixNode top = tree.nodeStartingAt(tokens, from, len, computedTokens / pageSize);
        if (top == null || !top.hasDeviceValue()) {
            return 0; // the path ends before the first uncomputed page, or no device KV is cached there
        }
        if (top.isLoading()) {
            throw new IllegalStateException("withdrawUncomputed: the node at token " + (computedTokens / pageSize
                * pageSize) + " is being loaded from host memory, not computed by this request: " + top);
        }
        List<Backup> pending = new ArrayList<>();
        tree.forEachInSubtree(top, n -> {
            if (n.pending() instanceof Backup b && !pending.contains(b)) {
                pending.add(b);
            }
        });
        // each backup in flight locks its node's path once; any other lock at or below top reaches top
        int foreign = top.lockRef() - pending.size();
        if (foreign > 0) {
            throw new IllegalStateException("withdrawUncomputed: " + foreign + " lock(s) besides those of its "
                + pending.size() + " backup(s) in flight hold the pages from token " + (computedTokens / pageSize
                * pageSize) + " (another request uses them, or this one still holds its own lock: unlock it first); "
                + "nothing was withdrawn: " + top);
        }
        if (!top.isHostResident() && top.hostRef() > 0) {
            throw new IllegalStateException("withdrawUncomputed: the pages from token " + (computedTokens / pageSize
                * pageSize) + " are protected for a load or a storage write; nothing was withdrawn: " + top);
        }
        for (Backup b : pending) {
            backups.markAborted(b, reason);
        }
        held.sink = sink;
        int pages;
        try {
            pages = tree.withdraw(top, held);
        } finally {
            held.sink = null;
        }
        metrics.add(Metric.WITHDRAWN_PAGES, pages);
        return pages;
    }
}
