package io.hicache.core.internal;

import io.hicache.core.BackupHandle;
import io.hicache.core.spi.StoragePort;
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
class StoragePortTest {

    @Test
    void aLeaseOfAnotherCacheOrAForeignHandleIsRefusedAndChangesNothing() {
        try (SimRig a = SimRig.builder().layers(2, 0).pages(4, 64, 16).build();
             SimRig b = SimRig.builder().layers(2, 0).pages(4, 64, 16).build()) {
            StoragePort port = a.ctl[0].storagePort();
            StoragePort.Lease foreign = b.ctl[0].storagePort().reserveHost(0, 4, 4);
            int[] tokens = ControllerBasicTest.tokens(0, 16);
            assertThatThrownBy(() -> port.publishHost(foreign, tokens, 0, 4, null, 0, false))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a host lease of this cache");
            assertThatThrownBy(() -> port.releaseHost(foreign)).isInstanceOf(IllegalArgumentException.class);
            assertThat(b.ctl[0].hostLeasesOpen()).isEqualTo(1); // still the other cache's, still open
            assertThat(b.ctl[0].storagePort().releaseHost(foreign)).isTrue();

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
            StoragePort port = c.storagePort();
            assertThat(port.hasDraftPool()).isTrue();
            StoragePort.Lease lease = port.reserveHost(0, 4, 4);
            int[] offsets = new int[lease.pageCount()];
            assertThat(lease.ownedOffsets(offsets)).isEqualTo(4);
            MemorySegment[] bytes = port.hostPageSegments(false, lease.hostPage(2));
            long total = 0;
            for (MemorySegment s : bytes) {
                total += s.byteSize();
            }
            assertThat(total).isEqualTo(port.hostPageBytes(false));
            RadixNode n = port.publishHost(lease, ControllerBasicTest.tokens(0, 16), 0, 4, null, 0, true);
            StoragePort.HostCopy copy = port.hostCopy(n);
            assertThat(copy.hasDraft()).isTrue();
            assertThat(copy.hostPage(2)).isEqualTo(lease.hostPage(2));

            List<RadixNode> evicted = new ArrayList<>();
            List<StoragePort.HostCopy> copies = new ArrayList<>();
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
    void theCommittedPathIsHashedProtectedAndReportedThroughThePortWhichChecksEachCall() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 16).build()) {
            HiCacheController c = rig.ctl[0];
            StoragePort port = c.storagePort();
            int[] tokens = ControllerBasicTest.tokens(0, 16);
            RadixNode n = port.publishHost(port.reserveHost(0, 4, 4), tokens, 0, 4, null, 0, false);
            assertThat(port.root()).isSameAs(n.parent());

            byte[] hashes = new byte[4 * RadixNode.PAGE_HASH_BYTES];
            hashes[RadixNode.PAGE_HASH_BYTES] = 7;
            assertThat(port.setPageHashes(n, hashes, 0)).isTrue();
            assertThat(port.setPageHashes(n, new byte[hashes.length], 0)).isFalse(); // the first hashes stay
            byte[] page1 = new byte[RadixNode.PAGE_HASH_BYTES];
            n.copyPageHash(1, page1, 0);
            assertThat(page1[0]).isEqualTo((byte) 7);
            assertThatThrownBy(() -> port.setPageHashes(port.root(), hashes, 0))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> port.setPageHashes(n, new byte[3], 0)).isInstanceOf(IllegalArgumentException.class);

            port.protectHostCopy(n);
            assertThat(c.evictHost(64)).isZero(); // protected: stays
            port.releaseHostCopy(n);
            assertThatThrownBy(() -> port.releaseHostCopy(n)).isInstanceOf(IllegalStateException.class);

            assertThat(port.storageTransitions()).isNull(); // no listener
            List<String> told = new ArrayList<>();
            c.tierObserver(new io.hicache.radix.TierListener() {
                @Override
                public void onDeviceInserted(int[] t, int from, int len, int firstNewToken, RadixNode last) {
                }

                @Override
                public void onStored(int tier, RadixNode node) {
                }

                @Override
                public void onRemoving(int tier, RadixNode node) {
                }

                @Override
                public void onPagesStored(int tier, RadixNode node, int firstPage, int pages) {
                    told.add("pages " + tier + " " + firstPage + "+" + pages);
                }

                @Override
                public void onSequencePages(int tier, boolean stored, int[] t, int from, int firstPage, int pages) {
                    told.add("sequence " + tier + " " + stored + " " + firstPage + "+" + pages);
                }
            });
            StoragePort.StorageTransitions to = port.storageTransitions();
            assertThat(to).isNotNull().isSameAs(port.storageTransitions());
            to.pagesStored(n, 1, 2);
            to.sequencePages(false, tokens, 0, 3, 1);
            int storage = io.hicache.radix.TierListener.STORAGE;
            assertThat(told).containsExactly("pages " + storage + " 1+2", "sequence " + storage + " false 3+1");

            assertThat(c.evictHost(64)).isEqualTo(4); // released: evictable again
            assertThatThrownBy(() -> port.protectHostCopy(n)).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void anAttachedTierIsDrivenByTheCachesCallsUntilDetached() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 16).build()) {
            HiCacheController c = rig.ctl[0];
            StoragePort port = c.storagePort();
            assertThat(port).isSameAs(c.storagePort());
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
    private static final class Recorder implements StoragePort.Tier {
        final List<String> calls = new ArrayList<>();
        final List<RadixNode> committed = new ArrayList<>();
        private final StoragePort port;

        Recorder(StoragePort port) {
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
