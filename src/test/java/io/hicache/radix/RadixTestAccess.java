package io.hicache.radix;

import java.util.ArrayDeque;
import java.util.function.Consumer;

/**
 * Test-only access to the structure of a {@link RadixTree} that its public API does not expose: a walk over
 * every node, so the cross-module suites can check invariants over all host values and pending backups
 * without issuing matches (which would split nodes and touch the LRU order of the system under test).
 *
 * <p>Lives in the tree's package on the test class path only. Same thread as the tree's owner; allocates.
 */
public final class RadixTestAccess {
    private RadixTestAccess() {
    }

    /** Calls {@code visitor} for every non-root node, parents before children. */
    public static void forEachNode(RadixTree tree, Consumer<RadixNode> visitor) {
        ArrayDeque<RadixNode> stack = new ArrayDeque<>();
        stack.push(tree.root());
        while (!stack.isEmpty()) {
            RadixNode n = stack.pop();
            if (!n.isRoot()) {
                visitor.accept(n);
            }
            RadixNode[] children = n.childVals;
            if (children != null) {
                for (RadixNode head : children) {
                    for (RadixNode c = head; c != null; c = c.hashNext) {
                        stack.push(c);
                    }
                }
            }
        }
    }

    /** Page position of the node's first page in its sequence (sum of the page counts of its ancestors). */
    public static int startPage(RadixNode node) {
        int start = 0;
        for (RadixNode p = node.parent(); p != null && !p.isRoot(); p = p.parent()) {
            start += p.pageCount();
        }
        return start;
    }
}
