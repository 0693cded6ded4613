package io.hicache.core.internal;

import io.hicache.core.DevicePageSink;
import io.hicache.radix.RadixNode;
import io.hicache.radix.spi.DeviceEvictionListener;

/**
 * Hands device pages the tree drops from nodes with KV that is no longer valid (a failed load's subtree, a
 * withdrawal) to the engine's {@link DevicePageSink}; the pages of a node whose backup may still be copying them stay
 * with that backup until its copies drained ({@link Backup#holdDevicePages}), and the backup's release hands them on.
 *
 * <p>Scheduler thread; {@link #sink} is set for the duration of one tree call.
 */
final class HeldPagesSink implements DeviceEvictionListener {
    DevicePageSink sink;

    @Override
    public void onDeviceEvicted(RadixNode node, int[] pages, int offset, int count) {
        if (node.pending() instanceof Backup b && !b.state().terminal()) {
            b.holdDevicePages(sink, pages, offset, count);
        } else {
            sink.free(pages, offset, count);
        }
    }
}
