package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupState;
import io.hicache.core.ThreadingMode;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.ArrayList;
import java.util.List;

import static io.hicache.core.internal.ControllerBasicTest.tokens;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code close()} while backups are reserved, copying (hooks half fired, copies queued on the device and not yet
 * run) or sealed, and while a load is in flight, in both threading modes: everything not committed is aborted with
 * {@link AbortReason#SHUTDOWN}, nothing pending or half copied is published, every host page not owned by a
 * committed node is freed, the device side holds nothing once the rig is closed (class-level leak check), and
 * later calls fail fast with an {@link IllegalStateException} naming "closed".
 */
@ExtendWith(LeakCheckExtension.class)
class ShutdownUnderLoadTest {

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void closeWithCopiesAndLoadsInFlightAbortsFreesAndFailsFast(ThreadingMode mode) {
        for (int round = 0; round < 10; round++) {
            SimRig rig = SimRig.builder().layers(4, 2).pages(4, 128, 64).seed(round)
                .controller(b -> b.threadingMode(mode)).build();
            HiCacheController c = rig.ctl[0];
            List<Backup> all = new ArrayList<>();
            try {
                // a committed chain, then evicted, so a load can be in flight at close
                backUpAndEvict(rig, mode);
                MatchResult m = c.tree().match(tokens(0, 16), 0, 16, new MatchResult());
                LoadOp load = c.loadBack(m, 7, 1 << 20, LoadBackTest.allocator(rig));
                assertThat(load).isNotNull();
                c.startLoading();

                // forwards in every stage: ended with all layers, half-hooked, reserved only
                for (int f = 0; f < 3; f++) {
                    RadixNode[] last = rig.insert(tokens(1000 * (f + 1), 8 + 4 * round % 3));
                    List<Backup> list = new ArrayList<>();
                    Backup b = c.reserve(last[0], true);
                    assertThat(b).isNotNull();
                    list.add(b);
                    all.add(b);
                    if (f == 2) {
                        continue; // stays RESERVED
                    }
                    ForwardHandle h = c.beginForward(list);
                    for (int l = 0; l < (f == 0 ? 4 : 2); l++) {
                        h.targetLayerStored(l);
                    }
                    if (f == 0) {
                        h.draftLayerStored(0);
                        h.draftLayerStored(1);
                        h.endForward();
                    }
                }
                if (mode == ThreadingMode.INVOKER) {
                    c.doAgentWork(); // copies issued, not yet run on the device
                }
                assertThat(rig.rt[0].idle()).isFalse();
            } finally {
                c.close();
            }
            for (Backup b : all) {
                assertThat(b.state()).isEqualTo(BackupState.ABORTED);
                assertThat(b.abortReason()).isEqualTo(AbortReason.SHUTDOWN);
                assertThat(b.node().hostValue()).isNull();
                assertThat(b.node().pending()).isNull();
            }
            assertThat(c.tree().hostPagesPending()).isZero();
            assertThat((long) c.allocator().allocatedPages()).isEqualTo(c.tree().hostPagesCommitted());
            assertThat(c.backupsInFlight()).isZero();
            assertThat(c.loadsInFlight()).isZero();
            assertThatThrownBy(() -> c.reserve(all.get(0).node(), false)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
            assertThatThrownBy(c::poll).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            assertThatThrownBy(() -> c.abort(all.get(0), AbortReason.ENGINE)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
            assertThatThrownBy(c::startLoading).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            assertThatThrownBy(() -> c.beginForward(List.of())).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
            c.close(); // idempotent
            rig.close();
            assertThat(rig.rt[0].leakReport().clean()).as("%s", rig.rt[0].leakReport()).isTrue();
        }
    }

    /**
     * Backs up tokens [0, 16) on rank 0 and evicts them from the device, stepping the agents itself in INVOKER
     * mode and, in DEDICATED mode, only advancing the device while the agents run on their threads.
     */
    static void backUpAndEvict(SimRig rig, ThreadingMode mode) {
        HiCacheController c = rig.ctl[0];
        RadixNode[] a = rig.insert(tokens(0, 16));
        rig.forward(rig.reserveByPolicy(a, rig.draftLayers > 0), 1_000, true);
        long deadlineNs = System.nanoTime() + 30_000_000_000L; // agent threads may be slow to get a core
        while (!a[0].isHostResident() && System.nanoTime() < deadlineNs) {
            if (mode == ThreadingMode.INVOKER) {
                c.doAgentWork();
            } else {
                Thread.onSpinWait();
            }
            rig.rt[0].advanceToNextEvent();
            c.poll();
        }
        assertThat(a[0].isHostResident()).as("chain committed").isTrue();
        c.evictDevice(16 / rig.pageSize, rig::freeDevicePages);
        assertThat(a[0].isDeviceEvicted()).isTrue();
    }
}
