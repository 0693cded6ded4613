package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupState;
import io.hicache.core.metrics.Metric;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

@org.junit.jupiter.api.extension.ExtendWith(LeakCheckExtension.class)
class ControllerBasicTest {

    static int[] tokens(int start, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = start + i;
        }
        return t;
    }

    @Test
    void backupCommitsOnlyAfterAllLayersAndHostBytesEqualDevice() {
        try (SimRig rig = SimRig.builder().layers(4, 0).pages(4, 64, 64).build()) {
            RadixNode[] last = rig.insert(tokens(0, 16));
            int[] dev = new int[4];
            last[0].copyDevicePages(dev, 0);
            for (int l = 0; l < rig.layers; l++) {
                for (int p : dev) {
                    rig.writeDevicePage(0, false, l, p, 7);
                }
            }
            List<List<Backup>> b = rig.reserveByPolicy(last, false);
            assertThat(b.get(0)).hasSize(1);
            Backup backup = b.get(0).get(0);
            assertThat(backup.state()).isEqualTo(BackupState.RESERVED);
            assertThat(last[0].pending()).isSameAs(backup);

            rig.forward(b, 1_000, true);
            // nothing visible before the copies landed and were acked
            MatchResult m = rig.ctl[0].tree().match(tokens(0, 16), 0, 16, new MatchResult());
            assertThat(m.devicePageCount()).isEqualTo(4);
            assertThat(last[0].hostValue()).isNull();

            rig.drain();
            assertThat(backup.state()).isEqualTo(BackupState.COMMITTED);
            assertThat(last[0].isHostResident()).isTrue();
            assertThat(last[0].lockRef()).isZero();
            for (int l = 0; l < rig.layers; l++) {
                for (int i = 0; i < 4; i++) {
                    assertThat(rig.hostMatchesDevice(0, false, l, dev[i], backup.hostPage(i))).isTrue();
                }
            }
            assertThat(rig.ctl[0].metrics().get(Metric.BACKUPS_COMMITTED)).isEqualTo(1);
            assertThat(rig.ctl[0].allocator().allocatedPages()).isEqualTo(4);
        }
    }

    @Test
    void abortMidCopyReleasesPagesOnlyAfterDrain() {
        try (SimRig rig = SimRig.builder().layers(4, 0).pages(4, 64, 64).build()) {
            RadixNode[] last = rig.insert(tokens(0, 16));
            List<List<Backup>> b = rig.reserveByPolicy(last, false);
            Backup backup = b.get(0).get(0);
            ForwardHandle h = rig.ctl[0].beginForward(b.get(0));
            h.targetLayerStored(0);
            rig.ctl[0].doAgentWork();
            assertThat(rig.ctl[0].abort(backup, AbortReason.REQUEST_CANCELLED)).isTrue();
            assertThat(backup.state()).isEqualTo(BackupState.DRAINING);
            assertThat(rig.ctl[0].allocator().allocatedPages()).isEqualTo(4);
            assertThat(last[0].lockRef()).isPositive();
            for (int l = 1; l < rig.layers; l++) {
                h.targetLayerStored(l);
            }
            h.endForward();
            rig.drain();
            assertThat(backup.state()).isEqualTo(BackupState.ABORTED);
            assertThat(backup.abortReason()).isEqualTo(AbortReason.REQUEST_CANCELLED);
            assertThat(last[0].hostValue()).isNull();
            assertThat(last[0].pending()).isNull();
            assertThat(last[0].lockRef()).isZero();
            assertThat(rig.ctl[0].allocator().allocatedPages()).isZero();
            assertThat(rig.ctl[0].abort(backup, AbortReason.ENGINE)).isFalse();
        }
    }
}
