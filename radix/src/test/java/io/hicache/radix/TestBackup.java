package io.hicache.radix;

import io.hicache.radix.spi.PendingBackup;
import java.util.ArrayList;
import java.util.List;

/** A pending backup that tracks its fragments across splits, in path order. Test helper. */
class TestBackup implements PendingBackup {
    final List<RadixNode> fragments = new ArrayList<>();
    int splits;

    TestBackup(RadixNode node) {
        fragments.add(node);
    }

    @Override
    public void onSplit(RadixNode prefix, RadixNode suffix) {
        splits++;
        int i = fragments.indexOf(suffix);
        if (i < 0) {
            throw new AssertionError("split of a node this backup does not cover: " + suffix);
        }
        fragments.add(i, prefix);
    }

    void commit(RadixTree tree, int hostStart) {
        int s = hostStart;
        for (RadixNode f : fragments) {
            tree.commitHost(f, this, new TestHostValue(s, f.pageCount()));
            s += f.pageCount();
        }
    }

    void abort(RadixTree tree) {
        for (RadixNode f : fragments) {
            tree.abortPending(f, this);
        }
    }
}
