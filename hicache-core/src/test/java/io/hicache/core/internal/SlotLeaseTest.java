package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupState;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Slot leases: a forward slot belongs to one handle from {@code beginForward} until that handle ended or was
 * invalidated and the forward was acknowledged. Before the fix, a lease expiry returned the slot to the free pool at
 * the ack while the stalled forward thread still held its handle; the next {@code beginForward} got the same slot,
 * and the old handle's late hooks re-recorded the new forward's events and reported its backup count.
 */
@ExtendWith(LeakCheckExtension.class)
class SlotLeaseTest {
    private static final int LAYERS = 4;

    @Test
    void expiredLeaseKeepsTheSlotUntilTheStalledHandleLetsGoAndItsHooksNeverTouchTheNewForward() {
        try (SimRig rig = SimRig.builder().layers(LAYERS, 0).pages(4, 64, 64)
            .controller(b -> b.leaseNs(10_000).maxForwardsInFlight(1)).build()) {
            HiCacheController c = rig.ctl[0];
            RadixNode[] a = rig.insert(ControllerBasicTest.tokens(0, 16));
            List<List<Backup>> ba = rig.reserveByPolicy(a, false);
            ForwardHandle stalled = c.beginForward(ba.get(0));
            stalled.targetLayerStored(0);
            c.doAgentWork();
            rig.rt[0].simulateKernel(c.computeStream(), 50_000); // the forward stalls past its lease
            rig.drain();
            assertThat(ba.get(0).get(0).abortReason()).isEqualTo(AbortReason.LEASE_EXPIRED);

            // the stalled handle still owns the only slot: a new forward with backups cannot start yet
            RadixNode[] n = rig.insert(ControllerBasicTest.tokens(1_000, 16));
            int[] dev = new int[4];
            n[0].copyDevicePages(dev, 0);
            List<List<Backup>> bn = rig.reserveByPolicy(n, false);
            assertThatThrownBy(() -> c.beginForward(bn.get(0))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("forwards with backups in flight");

            // its next hook learns of the expiry, records nothing, and lets the slot go
            long opsBefore = rig.rt[0].opsIssued();
            assertThatThrownBy(() -> stalled.targetLayerStored(1)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("lease expired");
            assertThat(rig.rt[0].opsIssued()).isEqualTo(opsBefore);

            // the slot is reused at once; the stalled thread keeps hooking its old handle meanwhile
            ForwardHandle fresh = c.beginForward(bn.get(0));
            assertThat(fresh).isNotSameAs(stalled);
            for (int l = 0; l < LAYERS; l++) {
                for (int p : dev) {
                    rig.writeDevicePage(0, false, l, p, 40 + l);
                }
                rig.rt[0].simulateKernel(c.computeStream(), 1_000);
                fresh.targetLayerStored(l);
                int layer = l;
                long ops = rig.rt[0].opsIssued();
                assertThatThrownBy(() -> stalled.targetLayerStored(layer == 0 ? 2 : layer))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("lease expired");
                assertThat(rig.rt[0].opsIssued()).as("a revoked handle touches no CUDA state").isEqualTo(ops);
                assertThat(stalled.backupCount()).isEqualTo(1);
            }
            assertThatThrownBy(stalled::endForward).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("lease expired");
            fresh.endForward();
            rig.drain();
            Backup backup = bn.get(0).get(0);
            assertThat(backup.state()).isEqualTo(BackupState.COMMITTED);
            for (int i = 0; i < 4; i++) {
                for (int l = 0; l < LAYERS; l++) {
                    assertThat(rig.hostMatchesDevice(0, false, l, dev[i], backup.hostPage(i))).isTrue();
                }
            }
        }
    }

    @Test
    void everyCallAfterCloseThrowsNamingClosedWithoutTouchingCuda() {
        SimRig rig = SimRig.builder().layers(LAYERS, 1).pages(4, 64, 64).build();
        HiCacheController c = rig.ctl[0];
        RadixNode[] a = rig.insert(ControllerBasicTest.tokens(0, 16));
        List<List<Backup>> ba = rig.reserveByPolicy(a, true);
        ForwardHandle open = c.beginForward(ba.get(0));
        open.targetLayerStored(0);
        ForwardHandle empty = c.beginForward(List.of());
        rig.close();
        long ops = rig.rt[0].opsIssued();
        List<org.assertj.core.api.ThrowableAssert.ThrowingCallable> calls = List.of(
            () -> open.targetLayerStored(1), () -> open.draftLayerStored(0), open::endForward,
            () -> empty.targetLayerStored(0), empty::endForward,
            () -> c.waitLayer(0, 0), () -> c.waitDraftLayer(0, 0), c::poll, c::startLoading, c::doAgentWork,
            () -> c.beginForward(List.of()), () -> c.reserve(a[0], false), c::hostPool,
            () -> c.abort(ba.get(0).get(0), AbortReason.ENGINE), () -> c.evictDevice(1, rig::freeDevicePages));
        for (var call : calls) {
            assertThatThrownBy(call).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        }
        assertThat(rig.rt[0].opsIssued()).as("no CUDA call after close").isEqualTo(ops);
        assertThat(rig.rt[0].leakReport().clean()).as("%s", rig.rt[0].leakReport()).isTrue();
    }
}
