package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupHandle;
import io.hicache.core.BackupListener;
import io.hicache.core.LoadHandle;
import io.hicache.core.LoadListener;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;

import static io.hicache.core.internal.ControllerBasicTest.tokens;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Multi-turn chat in the same-forward load mode: a turn loads its history from the host tier and computes its new
 * pages in the same forward. Those pages are backed up by that forward's hooks like any other, and published only
 * after the load they were computed over is agreed; if the load fails they abort with {@link AbortReason#LOAD_FAILED}
 * and every page, host and device, returns once.
 */
@org.junit.jupiter.api.extension.ExtendWith(LeakCheckExtension.class)
class LoadDependentBackupTest {
    private static final int HISTORY = 32;
    private static final int TURN = 48;

    /** What the listeners saw, in order, on every rank. */
    private static final class Log implements BackupListener, LoadListener {
        final List<String> events = new ArrayList<>();

        @Override
        public void onCommitted(BackupHandle backup) {
            events.add("committed");
        }

        @Override
        public void onAborted(BackupHandle backup, AbortReason reason) {
            events.add("aborted " + reason);
        }

        @Override
        public void onLoaded(LoadHandle op) {
            events.add("loaded");
        }

        @Override
        public void onLoadFailed(LoadHandle op) {
            events.add("load failed");
        }
    }

    private static SimRig rig(int cp, Log[] logs) {
        int[] next = {0};
        return SimRig.builder().cp(cp, OwnerLanes.Standard.ROUND_ROBIN).layers(3, 1).pages(4, 64, 64)
            .controller(b -> {
                Log log = new Log();
                logs[next[0]++] = log;
                b.listener(log).loadListener(log).writePolicy(WritePolicy.WRITE_THROUGH);
            }).build();
    }

    /** The second turn: loads the history back, inserts the turn's pages below the loading chain, reserves them. */
    private static RadixNode[] secondTurn(SimRig rig, List<List<Backup>> reserved) {
        int[][] taken = new int[1][];
        for (int r = 0; r < rig.cp; r++) {
            HiCacheController c = rig.ctl[r];
            MatchResult m = c.tree().match(tokens(0, TURN), 0, TURN, new MatchResult());
            assertThat(m.hostPageCount()).isEqualTo(HISTORY / rig.pageSize);
            assertThat(c.loadBack(m, 2, 1 << 20, r == 0 ? leader(rig, taken) : follower(taken))).isNotNull();
        }
        for (int r = 0; r < rig.cp; r++) {
            assertThat(rig.ctl[r].startLoading()).isNotNegative();
        }
        RadixNode[] last = rig.insert(tokens(0, TURN));
        for (int r = 0; r < rig.cp; r++) {
            assertThat(rig.ctl[r].tree().dependsOnLoad(last[r])).isTrue();
            rig.writeDevicePage(r, false, 0, last[r].devicePage(0), 9);
        }
        reserved.addAll(rig.reserveByPolicy(last, true));
        return last;
    }

    /** Rank 0's allocator: the rig's pool; records what it took for the other ranks (identical scheduling). */
    private static io.hicache.core.DevicePageAllocator leader(SimRig rig, int[][] taken) {
        io.hicache.core.DevicePageAllocator pool = LoadBackTest.allocator(rig);
        return new io.hicache.core.DevicePageAllocator() {
            @Override
            public boolean allocate(int count, int[] out, int offset) {
                boolean ok = pool.allocate(count, out, offset);
                taken[0] = java.util.Arrays.copyOfRange(out, offset, offset + count);
                return ok;
            }

            @Override
            public void free(int[] pages, int offset, int count) {
                pool.free(pages, offset, count);
            }
        };
    }

    /** Another rank's allocator: the same page ids as rank 0; rank 0 alone returns them to the rig's pool. */
    private static io.hicache.core.DevicePageAllocator follower(int[][] taken) {
        return new io.hicache.core.DevicePageAllocator() {
            @Override
            public boolean allocate(int count, int[] out, int offset) {
                System.arraycopy(taken[0], 0, out, offset, count);
                return true;
            }

            @Override
            public void free(int[] pages, int offset, int count) {
            }
        };
    }

    private static void settle(SimRig rig) {
        rig.drain();
        for (int i = 0; i < 1000 && (rig.ctl[0].loadsInFlight() > 0 || rig.ctl[0].backupsInFlight() > 0); i++) {
            rig.advance();
            rig.stepAll();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void pagesComputedOverALoadingPrefixAreBackedUpInThatForwardAndPublishedAfterTheLoad(int cp) {
        Log[] logs = new Log[cp];
        try (SimRig rig = rig(cp, logs)) {
            LoadBackTest.backUpAndEvict(rig, HISTORY, 5);
            for (Log log : logs) {
                log.events.clear();
            }
            List<List<Backup>> reserved = new ArrayList<>();
            RadixNode[] last = secondTurn(rig, reserved);
            for (int r = 0; r < cp; r++) {
                assertThat(reserved.get(r)).as("the turn's new pages are reserved in the forward that loads").hasSize(1);
            }
            rig.forward(reserved, 1_000, true);
            settle(rig);
            for (int r = 0; r < cp; r++) {
                Backup b = reserved.get(r).get(0);
                assertThat(b.state()).isEqualTo(io.hicache.core.BackupState.COMMITTED);
                assertThat(logs[r].events).as("published only after its load").containsExactly("loaded", "committed");
                HostPages hp = (HostPages) last[r].hostValue();
                for (int i = 0; i < b.ownedPageCount(); i++) {
                    assertThat(rig.hostMatchesDevice(r, false, 0, b.ownedDevicePage(i), b.hostPage(i))).isTrue();
                }
                assertThat(hp).isNotNull();
                rig.ctl[r].tree().checkInvariants();
            }
            // the third turn finds the whole second turn on the host tier once the device dropped it
            for (int r = 0; r < cp; r++) {
                rig.ctl[r].evictDevice(TURN / rig.pageSize, r == 0 ? rig::freeDevicePages : (p, o, n) -> { });
                MatchResult m = rig.ctl[r].tree().match(tokens(0, TURN), 0, TURN, new MatchResult());
                assertThat(m.devicePageCount() + m.hostPageCount()).isEqualTo(TURN / rig.pageSize);
                assertThat(rig.ctl[r].metrics().snapshot().skipped()).isZero();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void aFailedLoadAbortsTheBackupsComputedOverItAndEveryPageReturnsOnce(int cp) {
        Log[] logs = new Log[cp];
        try (SimRig rig = rig(cp, logs)) {
            LoadBackTest.backUpAndEvict(rig, HISTORY, 5);
            for (Log log : logs) {
                log.events.clear();
            }
            int freeDevice = rig.freeDevicePageCount();
            long[] hostUsed = new long[cp];
            for (int r = 0; r < cp; r++) {
                hostUsed[r] = rig.ctl[r].allocator().allocatedPages();
            }
            rig.rt[cp - 1].failCopiesMatching((dst, src, bytes, kind) -> kind == CopyKind.HOST_TO_DEVICE,
                CudaError.UNKNOWN);
            List<List<Backup>> reserved = new ArrayList<>();
            secondTurn(rig, reserved);
            rig.forward(reserved, 1_000, true);
            settle(rig);
            for (int r = 0; r < cp; r++) {
                Backup b = reserved.get(r).get(0);
                assertThat(b.state()).isEqualTo(io.hicache.core.BackupState.ABORTED);
                assertThat(b.abortReason()).isEqualTo(AbortReason.LOAD_FAILED);
                assertThat(logs[r].events).containsExactly("load failed", "aborted LOAD_FAILED");
                assertThat(rig.ctl[r].allocator().allocatedPages()).as("host pages back").isEqualTo(hostUsed[r]);
                MatchResult m = rig.ctl[r].tree().match(tokens(0, TURN), 0, TURN, new MatchResult());
                assertThat(m.devicePageCount()).isZero();
                assertThat(m.hostPageCount()).as("nothing computed over the failed load is visible")
                    .isEqualTo(HISTORY / rig.pageSize);
                assertThat(rig.ctl[r].metrics().abortedBy(AbortReason.LOAD_FAILED)).isEqualTo(1);
                rig.ctl[r].tree().checkInvariants();
            }
            assertThat(rig.freeDevicePageCount()).as("every device page returned once").isEqualTo(freeDevice);
        }
    }
}
