package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupState;
import io.hicache.cuda.CudaError;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.List;

import static io.hicache.core.internal.ControllerBasicTest.tokens;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A sticky error while several forwards are in flight: the first failed ack stops the controller and releases
 * every backup; the acks of the other forwards, drained by later polls, must not release those backups again
 * (a double free of their host pages) nor move them out of ABORTED.
 */
@ExtendWith(LeakCheckExtension.class)
class StickyErrorInFlightTest {

    @Test
    void acksAfterTheStopReleaseNothingTwice() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64).build()) {
            HiCacheController c = rig.ctl[0];
            List<Backup> all = new ArrayList<>();
            for (int f = 0; f < 3; f++) {
                RadixNode[] last = rig.insert(tokens(1000 * f, 8));
                List<List<Backup>> b = rig.reserveByPolicy(last, false);
                all.addAll(b.get(0));
                rig.forward(b, 100, true);
                c.doAgentWork(); // sealed and queued to the completion agent
            }
            rig.rt[0].injectStickyError(CudaError.ILLEGAL_ADDRESS);
            for (int i = 0; i < 20; i++) {
                c.doAgentWork();
                c.poll();
            }
            assertThat(c.stickyError()).isNotNull();
            for (Backup b : all) {
                assertThat(b.state()).isEqualTo(BackupState.ABORTED);
                assertThat(b.abortReason()).isEqualTo(AbortReason.CUDA_ERROR);
            }
            assertThat(c.allocator().allocatedPages()).isZero();
            assertThat(c.hostBudgetUsedPages()).isZero();
            assertThat(c.metrics().get(io.hicache.core.metrics.Metric.BACKUPS_ABORTED)).isEqualTo(all.size());
            c.tree().checkInvariants();
        }
    }
}
