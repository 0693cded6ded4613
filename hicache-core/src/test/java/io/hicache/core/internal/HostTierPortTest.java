package io.hicache.core.internal;

import io.hicache.core.BackupHandle;
import io.hicache.core.internal.tier.HostTierPort;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The storage tier's port onto a controller: it passes on what is the cache's own and refuses what is not. */
@org.junit.jupiter.api.extension.ExtendWith(LeakCheckExtension.class)
class HostTierPortTest {

    @Test
    void aLeaseOfAnotherCacheOrAForeignHandleIsRefusedAndChangesNothing() {
        try (SimRig a = SimRig.builder().layers(2, 0).pages(4, 64, 16).build();
             SimRig b = SimRig.builder().layers(2, 0).pages(4, 64, 16).build()) {
            HostTierPort port = a.ctl[0].hostTierPort();
            HostTierPort.Lease foreign = b.ctl[0].hostTierPort().reserveHost(0, 4, 4);
            int[] tokens = ControllerBasicTest.tokens(0, 16);
            assertThatThrownBy(() -> port.publishHost(foreign, tokens, 0, 4, null, 0, false))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a host lease of this cache");
            assertThatThrownBy(() -> port.releaseHost(foreign)).isInstanceOf(IllegalArgumentException.class);
            assertThat(b.ctl[0].hostLeasesOpen()).isEqualTo(1); // still the other cache's, still open
            assertThat(b.ctl[0].hostTierPort().releaseHost(foreign)).isTrue();

            BackupHandle notABackup = (BackupHandle) java.lang.reflect.Proxy.newProxyInstance(
                    getClass().getClassLoader(), new Class<?>[] {BackupHandle.class}, (p, m, args) -> null);
            assertThatThrownBy(() -> port.committedNodes(notABackup, new ArrayList<>()))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThat(port.hasDraftPool()).isFalse();
            assertThatThrownBy(() -> port.hostMemory(true)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("no draft");
        }
    }

    @Test
    void aPublishedLeaseIsTheNodesHostCopyAndItsEvictionIsObservedWithIt() {
        try (SimRig rig = SimRig.builder().layers(2, 1).pages(4, 64, 16).build()) {
            HiCacheController c = rig.ctl[0];
            HostTierPort port = c.hostTierPort();
            assertThat(port.hasDraftPool()).isTrue();
            HostTierPort.Lease lease = port.reserveHost(0, 4, 4);
            int[] offsets = new int[lease.pageCount()];
            assertThat(lease.ownedOffsets(offsets)).isEqualTo(4);
            MemorySegment[] bytes = port.hostPageSegments(false, lease.hostPage(2));
            long total = 0;
            for (MemorySegment s : bytes) {
                total += s.byteSize();
            }
            assertThat(total).isEqualTo(port.hostPageBytes(false));
            RadixNode n = port.publishHost(lease, ControllerBasicTest.tokens(0, 16), 0, 4, null, 0, true);
            HostTierPort.HostCopy copy = port.hostCopy(n);
            assertThat(copy.hasDraft()).isTrue();
            assertThat(copy.hostPage(2)).isEqualTo(lease.hostPage(2));

            List<RadixNode> evicted = new ArrayList<>();
            List<HostTierPort.HostCopy> copies = new ArrayList<>();
            port.observeHostEvictions((node, pages) -> {
                evicted.add(node);
                copies.add(pages);
            });
            c.evictHost(64);
            assertThat(evicted).containsExactly(n);
            assertThat(copies).containsExactly(copy);
            assertThat(port.hostCopy(c.tree().root())).isNull();
        }
    }

    @Test
    void anAttachedTierIsDrivenByTheCachesCallsUntilDetached() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 16).build()) {
            HiCacheController c = rig.ctl[0];
            HostTierPort port = c.hostTierPort();
            assertThat(port).isSameAs(c.hostTierPort());
            Recorder tier = new Recorder(port);
            port.attach(tier);
            assertThat(port.hasTier()).isTrue();
            assertThatThrownBy(() -> port.attach(tier)).isInstanceOf(IllegalStateException.class);
            c.match(ControllerBasicTest.tokens(0, 8), 0, 8, new MatchResult());
            c.poll();
            assertThat(tier.calls).containsExactly("match", "poll");
            port.detach(new Recorder(port)); // not the attached one: nothing changes
            assertThat(port.hasTier()).isTrue();
            RadixNode[] last = rig.insert(ControllerBasicTest.tokens(100, 16));
            rig.forward(rig.reserveByPolicy(last, false), 100, true);
            rig.drain();
            assertThat(tier.calls).contains("commit");
            assertThat(tier.committed).containsExactly(last[0]);
            tier.calls.clear();
            c.close();
            assertThat(tier.calls).containsExactly("close");
            assertThat(port.hasTier()).isFalse();
        }
    }

    /** Records the calls it gets; detaches itself when closed, as the storage tier does. */
    private static final class Recorder implements HostTierPort.Tier {
        final List<String> calls = new ArrayList<>();
        final List<RadixNode> committed = new ArrayList<>();
        private final HostTierPort port;

        Recorder(HostTierPort port) {
            this.port = port;
        }

        @Override
        public void onCommitted(BackupHandle backup) {
            calls.add("commit");
            port.committedNodes(backup, committed);
        }

        @Override
        public void onMatch(MatchResult match) {
            calls.add("match");
        }

        @Override
        public void poll() {
            calls.add("poll");
        }

        @Override
        public void close() {
            calls.add("close");
            port.detach(this);
        }
    }
}
