package io.hicache.radix;

import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link RadixNode#serial()}: every node a tree creates, split heads included, gets its own, kept for life. */
class NodeSerialTest {

    @Test
    void insertsAndSplitsGiveEveryNodeItsOwnSerialAndANodeKeepsIt() {
        RadixTree tree = RadixTree.builder().pageSize(2).build();
        int[] a = {1, 2, 3, 4, 5, 6, 7, 8};
        tree.insert(a, 0, a.length, new int[] {0, 1, 2, 3}, 0);
        RadixNode whole = tree.lastInsertNode();
        long before = whole.serial();
        int[] b = {1, 2, 3, 4, 9, 9};
        tree.insert(b, 0, b.length, new int[] {4, 5, 6}, 0); // splits a after two pages
        RadixNode branch = tree.lastInsertNode();
        RadixNode head = branch.parent();

        assertThat(whole.parent()).isSameAs(head); // the split kept the original node as the tail
        assertThat(whole.serial()).isEqualTo(before);
        Set<Long> serials = new HashSet<>();
        for (RadixNode n : new RadixNode[] {tree.root(), head, whole, branch}) {
            assertThat(serials.add(n.serial())).as("serial of %s", n).isTrue();
        }
    }
}
