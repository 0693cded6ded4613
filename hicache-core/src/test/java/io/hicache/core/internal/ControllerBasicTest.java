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

    /**
     * An abort while copies are queued keeps the host pages and the device lock through every poll until the copies
     * drained (the device never reports a copy into a freed page), and releases them at the first poll after.
     */
    @Test
    void abortMidCopyReleasesPagesOnlyAfterDrain() {
        try (SimRig rig = SimRig.builder().layers(4, 0).pages(4, 64, 64).build()) {
            HiCacheController c = rig.ctl[0];
            RadixNode[] last = rig.insert(tokens(0, 16));
            List<List<Backup>> b = rig.reserveByPolicy(last, false);
            Backup backup = b.get(0).get(0);
            ForwardHandle h = c.beginForward(b.get(0));
            for (int l = 0; l < rig.layers; l++) {
                rig.rt[0].simulateKernel(c.computeStream(), 10_000);
                h.targetLayerStored(l);
            }
            h.endForward();
            c.doAgentWork(); // every layer's copies and the final event are queued; none has run
            assertThat(c.abort(backup, AbortReason.REQUEST_CANCELLED)).isTrue();
            assertThat(backup.state()).isEqualTo(BackupState.DRAINING);
            // poll while the copies are still queued or running: nothing may be released
            int polls = 0;
            while (!rig.rt[0].idle()) {
                c.doAgentWork();
                c.poll();
                polls++;
                assertThat(backup.state()).as("after poll %d with copies in flight", polls)
                    .isEqualTo(BackupState.DRAINING);
                assertThat(c.allocator().allocatedPages()).as("host pages after poll %d", polls).isEqualTo(4);
                assertThat(last[0].lockRef()).as("device lock after poll %d", polls).isPositive();
                assertThat(last[0].pending()).isSameAs(backup);
                rig.rt[0].advanceToNextEvent();
            }
            assertThat(polls).as("polls while copies were in flight").isGreaterThan(1);
            rig.drain();
            assertThat(backup.state()).isEqualTo(BackupState.ABORTED);
            assertThat(backup.abortReason()).isEqualTo(AbortReason.REQUEST_CANCELLED);
            assertThat(last[0].hostValue()).isNull();
            assertThat(last[0].pending()).isNull();
            assertThat(last[0].lockRef()).isZero();
            assertThat(c.allocator().allocatedPages()).isZero();
            assertThat(rig.rt[0].useAfterFreeCount()).as("%s", rig.rt[0].useAfterFreeReports()).isZero();
            assertThat(c.abort(backup, AbortReason.ENGINE)).isFalse();
        }
    }
}
