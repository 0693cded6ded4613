package io.hicache.radix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Every rejected call names the value and the rule and leaves the tree unchanged. */
class BadInputTest {

    private RadixTree t;
    private RadixNode pendingNode;
    private TestBackup pendingBackup;
    private RadixNode hostOnly;
    private RadixNode plain;

    @BeforeEach
    void setUp() {
        t = RadixTree.builder().pageSize(2).build();
        t.insert(new int[] {1, 1, 2, 2}, 0, 4, new int[] {0, 1}, 0);
        pendingNode = t.lastInsertNode();
        pendingBackup = new TestBackup(pendingNode);
        t.markPending(pendingNode, pendingBackup);
        t.insert(new int[] {3, 3}, 0, 2, new int[] {2}, 0);
        hostOnly = t.lastInsertNode();
        TestBackup b = new TestBackup(hostOnly);
        t.markPending(hostOnly, b);
        b.commit(t, 0);
        t.evictDevice(1, new RadixTreeTest.Evictions());
        assertThat(hostOnly.isDeviceEvicted()).isTrue();
        t.insert(new int[] {5, 5, 6, 6}, 0, 4, new int[] {3, 4}, 0);
        plain = t.lastInsertNode();
        t.checkInvariants();
    }

    private void rejects(Class<? extends Throwable> type, String messagePart, ThrowingCallable call) {
        Map<String, String> before = TreeSnapshot.of(t);
        assertThatThrownBy(call).isInstanceOf(type).hasMessageContaining(messagePart);
        assertThat(TreeSnapshot.of(t)).isEqualTo(before);
        t.checkInvariants();
    }

    @Test
    void badKeysAndRanges() {
        int[] k = {1, 1, 2, 2};
        rejects(IllegalArgumentException.class, "tokens must not be null", () -> t.insert(null, 0, 2, new int[1], 0));
        rejects(IllegalArgumentException.class, "tokens must not be null", () -> t.match(null, 0, 2, new MatchResult()));
        rejects(IllegalArgumentException.class, "[-1, -1 + 2)", () -> t.insert(k, -1, 2, new int[1], 0));
        rejects(IllegalArgumentException.class, "[0, 0 + -2)", () -> t.match(k, 0, -2, new MatchResult()));
        rejects(IllegalArgumentException.class, "[3, 3 + 2)", () -> t.match(k, 3, 2, new MatchResult()));
        rejects(IllegalArgumentException.class, "out must not be null", () -> t.match(k, 0, 4, null));
        // two pages of key need two device pages
        rejects(IllegalArgumentException.class, "devicePages", () -> t.insert(new int[] {8, 8, 9, 9}, 0, 4, new int[1], 0));
        rejects(IllegalArgumentException.class, "devicePages must not be null", () -> t.insert(k, 0, 4, null, 0));
        rejects(IllegalArgumentException.class, "devicePages", () -> t.insert(new int[] {8, 8}, 0, 2, new int[2], 2));
    }

    @Test
    void badRefs() {
        rejects(IllegalStateException.class, "lockRef", () -> t.unlock(plain));
        rejects(IllegalStateException.class, "hostRef", () -> t.releaseHost(hostOnly));
        rejects(IllegalArgumentException.class, "node must not be null", () -> t.lock(null));
        t.lock(plain);
        t.unlock(plain);
        RadixNode removed = plain;
        t.evictDevice(100, new RadixTreeTest.Evictions());
        assertThat(removed.isAttached()).isFalse();
        rejects(IllegalStateException.class, "removed", () -> t.lock(removed));
    }

    @Test
    void badBackupTransitions() {
        rejects(IllegalStateException.class, "not pending", () -> t.commitHost(plain, pendingBackup, new TestHostValue(0, 2)));
        rejects(IllegalStateException.class, "another backup",
                () -> t.commitHost(pendingNode, new TestBackup(pendingNode), new TestHostValue(0, 2)));
        rejects(IllegalArgumentException.class, "must cover the node's 2 pages",
                () -> t.commitHost(pendingNode, pendingBackup, new TestHostValue(0, 3)));
        rejects(IllegalArgumentException.class, "host value must not be null",
                () -> t.commitHost(pendingNode, pendingBackup, null));
        rejects(IllegalStateException.class, "not pending", () -> t.abortPending(plain, pendingBackup));
        rejects(IllegalStateException.class, "cannot back up", () -> t.markPending(pendingNode, pendingBackup));
        rejects(IllegalStateException.class, "cannot back up", () -> t.markPending(hostOnly, new TestBackup(hostOnly)));
        rejects(IllegalArgumentException.class, "handle must not be null", () -> t.markPending(plain, null));
        rejects(IllegalArgumentException.class, "root", () -> t.markPending(t.root(), pendingBackup));
    }

    @Test
    void badLoadBack() {
        rejects(IllegalStateException.class, "already holds device pages", () -> t.attachDevice(plain, new int[2], 0));
        rejects(IllegalArgumentException.class, "pages", () -> t.attachDevice(hostOnly, new int[0], 0));
        rejects(IllegalStateException.class, "detachDevice", () -> t.detachDevice(plain));
        rejects(IllegalStateException.class, "detachDevice", () -> t.detachDevice(hostOnly));
        rejects(IllegalArgumentException.class, "listener", () -> t.evictDevice(1, null));
        rejects(IllegalArgumentException.class, "listener", () -> t.evictHost(1, null));
    }
}
