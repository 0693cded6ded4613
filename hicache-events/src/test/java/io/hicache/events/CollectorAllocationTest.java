package io.hicache.events;

import io.hicache.radix.TierListener;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;

import static org.assertj.core.api.Assertions.assertThat;

/** The hooks on the scheduler thread allocate nothing once warm (the ring overwrites; no consumer needed). */
class CollectorAllocationTest {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    @Test
    void hooksAllocateNothing() {
        EventRing ring = new EventRing(1 << 10, 4, false);
        TierEventCollector c = new TierEventCollector(ring, 0, 7);
        RadixTree tree = RadixTree.builder().pageSize(4).build();
        int[] tokens = new int[64];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = i * 31;
        }
        int[] pages = new int[16];
        tree.insert(tokens, 0, 32, pages, 0);
        RadixNode first = tree.lastInsertNode();
        tree.insert(tokens, 0, 64, pages, 0);
        RadixNode second = tree.lastInsertNode(); // below first: its hashes need first's end hash
        Runnable hooks = () -> {
            c.onDeviceInserted(tokens, 0, 64, 32, second);
            c.onStored(TierListener.HOST, second);
            c.onRemoving(TierListener.DEVICE, second);
            c.onStored(TierListener.STORAGE, first);
            c.onPagesStored(TierListener.STORAGE, second, 2, 5);
            c.onSequencePages(TierListener.STORAGE, false, tokens, 0, 14, 2);
        };
        for (int i = 0; i < 20_000; i++) {
            hooks.run(); // warm up (JIT, the path scratch)
        }
        long before = THREADS.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 10_000; i++) {
            hooks.run();
        }
        long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
        assertThat(allocated).as("bytes allocated by 60,000 hook calls").isLessThan(1024);
    }
}
