package io.hicache.radix;

import io.hicache.radix.spi.DeviceEvictionListener;
import java.util.List;

/**
 * Block-mode replay of a trace through a device-only {@link RadixTree} (page size 1, one block id
 * per token): per request, hit = leading blocks matched on device; then all blocks are inserted,
 * the request's path is locked, LRU leaves are evicted down to the capacity, and the path is
 * unlocked. Test helper; the JMH benchmark does the same work.
 */
final class BlockReplay implements DeviceEvictionListener {

    private final RadixTree tree;
    private final long capacityBlocks;
    private final MatchResult match = new MatchResult(256);
    private int[] pages = new int[256];
    private int nextPage;
    long freedPages;

    BlockReplay(EvictionPolicy policy, long capacityBlocks) {
        this.tree = RadixTree.builder().pageSize(1).devicePolicy(policy).build();
        this.capacityBlocks = capacityBlocks;
    }

    RadixTree tree() {
        return tree;
    }

    /** @return leading blocks hit */
    int request(int[] blocks) {
        tree.match(blocks, 0, blocks.length, match);
        int hit = match.devicePageCount();
        if (pages.length < blocks.length) {
            pages = new int[Math.max(blocks.length, pages.length * 2)];
        }
        for (int i = hit; i < blocks.length; i++) {
            pages[i] = nextPage++;
        }
        // pages [0, hit) are never read: insert reports them as already present
        int present = tree.insert(blocks, 0, blocks.length, pages, 0);
        freedPages += present - hit > 0 ? present - hit : 0;
        if (tree.devicePagesCached() > capacityBlocks) {
            RadixNode last = tree.lastInsertNode();
            tree.lock(last);
            tree.evictDevice((int) (tree.devicePagesCached() - capacityBlocks), this);
            tree.unlock(last);
        }
        return hit;
    }

    /** @return leading-block hit ratio over the whole trace */
    static double hitRatio(List<int[]> trace, EvictionPolicy policy, long capacityBlocks) {
        BlockReplay r = new BlockReplay(policy, capacityBlocks);
        long hits = 0;
        long blocks = 0;
        for (int[] req : trace) {
            hits += r.request(req);
            blocks += req.length;
        }
        return (double) hits / blocks;
    }

    @Override
    public void onDeviceEvicted(RadixNode node, int[] pages, int offset, int count) {
        freedPages += count;
    }
}
