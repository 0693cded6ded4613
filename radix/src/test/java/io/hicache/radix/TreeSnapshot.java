package io.hicache.radix;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;

/** Observable state of a tree (all but access ticks), keyed by each node's full token path. Test helper. */
final class TreeSnapshot {

    private TreeSnapshot() {
    }

    static String pathOf(RadixNode n) {
        StringBuilder sb = new StringBuilder();
        ArrayDeque<RadixNode> up = new ArrayDeque<>();
        for (RadixNode x = n; x != null && !x.isRoot(); x = x.parent()) {
            up.push(x);
        }
        for (RadixNode x : up) {
            int[] t = new int[x.tokenCount()];
            x.copyTokens(t, 0);
            sb.append(Arrays.toString(t));
        }
        return sb.toString();
    }

    static Map<String, String> of(RadixTree tree) {
        Map<String, String> out = new TreeMap<>();
        ArrayDeque<RadixNode> stack = new ArrayDeque<>();
        stack.push(tree.root());
        while (!stack.isEmpty()) {
            RadixNode n = stack.pop();
            if (n.childVals != null) {
                for (RadixNode c : n.childVals) {
                    for (; c != null; c = c.hashNext) {
                        stack.push(c);
                    }
                }
            }
            if (n.isRoot()) {
                continue;
            }
            String dev = "-";
            if (n.hasDeviceValue()) {
                int[] p = new int[n.pageCount()];
                n.copyDevicePages(p, 0);
                dev = Arrays.toString(p);
            }
            out.put(pathOf(n), "dev=" + dev + " host=" + n.hostValue() + " pending=" + (n.pending() != null)
                    + " lock=" + n.lockRef() + " hostRef=" + n.hostRef() + " hits=" + n.hitCount()
                    + " prio=" + n.priority());
        }
        out.put("#counters", tree.devicePagesCached() + "/" + tree.devicePagesEvictable() + "/"
                + tree.devicePagesLocked() + "/" + tree.hostPagesCommitted() + "/" + tree.hostPagesPending() + "/"
                + tree.nodeCount());
        return out;
    }
}
