package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupState;
import io.hicache.core.DevicePageAllocator;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static io.hicache.core.internal.ControllerBasicTest.tokens;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * API misuse fuzzing: random sequences of public controller calls on the scheduler thread (and, for the
 * wrong-thread case, from another thread), legal and illegal mixed. Every illegal call must throw its documented
 * exception type with a message naming the rule, and change nothing: after every call the radix tree's
 * invariants hold and the host allocator's pages equal the host pages of committed nodes plus those of pending
 * backups. At the end every forward is ended, everything drains, and the pages of committed nodes are all that
 * is left; the class-level leak check then sees nothing live on the simulated device.
 */
class ControllerMisuseFuzzTest {
    private static final int LAYERS = 3;
    private static final int PAGE = 2;
    private static final int OPS = 15;
    private static long openPoolBytesBefore;

    @BeforeContainer
    static void recordPools() {
        openPoolBytesBefore = io.hicache.core.internal.memory.HostKvPool.openPoolBytes();
    }

    @AfterContainer
    static void noPoolLeft() {
        assertThat(io.hicache.core.internal.memory.HostKvPool.openPoolBytes()).as("host pools left open")
            .isEqualTo(openPoolBytesBefore);
    }

    @Property(tries = 500)
    void illegalCallsThrowTheirRuleAndChangeNothing(
        @ForAll @Size(min = 1, max = 80) List<@IntRange(min = 0, max = 100_000) Integer> ops,
        @ForAll boolean withDraftPool) {
        SimRig rig = SimRig.builder().layers(LAYERS, withDraftPool ? 2 : 0).pages(PAGE, 48, 24)
            .controller(b -> b.checkThread(true)).build();
        try {
            Fuzz f = new Fuzz(rig);
            for (int v : ops) {
                f.step(v % OPS, v / OPS);
                f.checkInvariants();
            }
            f.finish();
        } finally {
            rig.close();
        }
        for (var rt : rig.rt) {
            assertThat(rt.leakReport().clean()).as("simulated device after close: %s", rt.leakReport()).isTrue();
        }
    }

    private static final class Fuzz {
        final SimRig rig;
        final HiCacheController c;
        final List<int[]> sequences = new ArrayList<>();
        final List<RadixNode> nodes = new ArrayList<>();
        final List<Backup> backups = new ArrayList<>();
        final List<ForwardHandle> handles = new ArrayList<>();
        final DevicePageAllocator deviceAllocator;
        boolean closed;
        long requestId;

        Fuzz(SimRig rig) {
            this.rig = rig;
            this.c = rig.ctl[0];
            this.deviceAllocator = LoadBackTest.allocator(rig);
            c.tree(); // binds this thread as the scheduler thread (the first caller owns the controller)
        }

        void step(int action, int arg) {
            if (closed) {
                afterClose(action, arg);
                return;
            }
            switch (action) {
                case 0, 1 -> insert(arg);
                case 2 -> reserve(arg);
                case 3 -> beginForward(arg);
                case 4 -> targetHook(arg);
                case 5 -> draftHook(arg);
                case 6 -> endForward(arg);
                case 7 -> abort(arg);
                case 8, 9 -> stepAgentsAndPoll(arg);
                case 10 -> wrongThread();
                case 11 -> evict(arg);
                case 12 -> load(arg);
                case 13 -> reserveWithDraft(arg);
                default -> {
                    if (arg % 8 == 0) {
                        c.close();
                        closed = true;
                        c.close(); // idempotent
                    } else {
                        stepAgentsAndPoll(arg);
                    }
                }
            }
        }

        void insert(int arg) {
            int pages = 1 + arg % 6;
            int start = (arg / 6) % 3 == 0 ? 0 : 1000 * ((arg / 18) % 4);
            if (rig.freeDevicePageCount() < pages) {
                evict(pages);
                if (rig.freeDevicePageCount() < pages) {
                    return;
                }
            }
            int[] t = tokens(start, pages * PAGE);
            RadixNode[] last = rig.insert(t);
            sequences.add(t);
            nodes.add(last[0]);
        }

        RadixNode pickNode(int arg) {
            if (nodes.isEmpty() || arg % 7 == 0) {
                return c.tree().root();
            }
            return nodes.get(arg % nodes.size());
        }

        void reserve(int arg) {
            RadixNode n = pickNode(arg);
            String rule = reserveRule(n);
            if (rule == null) {
                Backup b = c.reserve(n, false);
                if (b != null) {
                    assertThat(b.state()).isEqualTo(BackupState.RESERVED);
                    assertThat(n.pending()).isSameAs(b);
                    backups.add(b);
                }
            } else {
                assertThatThrownBy(() -> c.reserve(n, false)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(rule);
            }
        }

        void reserveWithDraft(int arg) {
            RadixNode n = pickNode(arg);
            if (rig.draftLayers == 0) {
                assertThatThrownBy(() -> c.reserve(n, true)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("no draft KV layout");
                return;
            }
            String rule = reserveRule(n);
            if (rule == null) {
                Backup b = c.reserve(n, true);
                if (b != null) {
                    backups.add(b);
                }
            } else {
                assertThatThrownBy(() -> c.reserve(n, true)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(rule);
            }
        }

        /** The rule a reserve of {@code n} breaks, in the documented order; null if none. */
        String reserveRule(RadixNode n) {
            if (n.isRoot() || !n.isAttached()) {
                return "the root or no longer in the tree";
            }
            if (n.pending() != null) {
                return "already has a pending backup";
            }
            if (n.isHostResident()) {
                return "already backed up";
            }
            if (!c.tree().canBackUp(n)) {
                return "contiguity";
            }
            return null;
        }

        void beginForward(int arg) {
            List<Backup> list = new ArrayList<>();
            for (int i = 0; i < backups.size(); i++) {
                if (((arg >> (i % 16)) & 1) == 1) {
                    list.add(backups.get(i));
                }
            }
            boolean bad = false;
            for (Backup b : list) {
                bad |= b.state() != BackupState.RESERVED;
            }
            if (bad) {
                assertThatThrownBy(() -> c.beginForward(list)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("is not a RESERVED backup");
                return;
            }
            try {
                handles.add(c.beginForward(list));
            } catch (IllegalStateException e) {
                assertThat(e).hasMessageContaining("forwards with backups in flight");
                return;
            }
            for (Backup b : list) {
                assertThat(b.state()).isEqualTo(BackupState.COPYING);
            }
        }

        ForwardHandle pickHandle(int arg) {
            return handles.isEmpty() ? null : handles.get(arg % handles.size());
        }

        void targetHook(int arg) {
            ForwardHandle h = pickHandle(arg);
            if (h == null) {
                return;
            }
            int layer = (arg / 7) % (LAYERS + 2) - 1;
            if (h.ended()) {
                assertThatThrownBy(() -> h.targetLayerStored(layer)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("after endForward");
            } else if (layer < 0 || layer >= LAYERS) {
                assertThatThrownBy(() -> h.targetLayerStored(layer)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("outside [0, " + LAYERS + ")");
            } else {
                try {
                    h.targetLayerStored(layer);
                } catch (IllegalStateException e) {
                    assertThat(e).hasMessageContaining("already reported stored");
                }
            }
        }

        void draftHook(int arg) {
            ForwardHandle h = pickHandle(arg);
            if (h == null) {
                return;
            }
            int layer = (arg / 7) % 4 - 1;
            if (h.ended()) {
                assertThatThrownBy(() -> h.draftLayerStored(layer)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("after endForward");
            } else if (rig.draftLayers == 0) {
                assertThatThrownBy(() -> h.draftLayerStored(layer)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("no draft KV layout");
            } else if (layer < 0 || layer >= rig.draftLayers) {
                assertThatThrownBy(() -> h.draftLayerStored(layer)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("outside [0, " + rig.draftLayers + ")");
            } else {
                try {
                    h.draftLayerStored(layer);
                } catch (IllegalStateException e) {
                    assertThat(e).hasMessageContaining("already reported stored");
                }
            }
        }

        void endForward(int arg) {
            ForwardHandle h = pickHandle(arg);
            if (h == null) {
                return;
            }
            if (h.ended()) {
                assertThatThrownBy(h::endForward).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("after endForward");
            } else {
                if (arg % 3 != 0) {
                    for (int l = 0; l < LAYERS; l++) {
                        storeQuietly(h, l);
                    }
                }
                h.endForward();
            }
        }

        private static void storeQuietly(ForwardHandle h, int layer) {
            try {
                h.targetLayerStored(layer);
            } catch (IllegalStateException e) {
                assertThat(e).hasMessageContaining("already reported stored");
            }
        }

        void abort(int arg) {
            if (backups.isEmpty()) {
                assertThatThrownBy(() -> c.abort(null, AbortReason.ENGINE)).isInstanceOf(IllegalArgumentException.class);
                return;
            }
            Backup b = backups.get(arg % backups.size());
            BackupState before = b.state();
            boolean expected = !(before == BackupState.COMMITTED || before == BackupState.ABORTED
                || before == BackupState.DRAINING);
            assertThat(c.abort(b, AbortReason.ENGINE)).as("abort of a %s backup", before).isEqualTo(expected);
            assertThat(c.abort(b, AbortReason.PREEMPTED)).as("second abort").isFalse();
            assertThat(b.state()).isIn(BackupState.ABORTED, BackupState.DRAINING, BackupState.COMMITTED);
            assertThatThrownBy(() -> c.abort(b, null)).isInstanceOf(IllegalArgumentException.class);
        }

        void stepAgentsAndPoll(int arg) {
            for (int i = 0; i <= arg % 3; i++) {
                c.doAgentWork();
                rig.advance();
                c.doAgentWork();
                c.poll();
            }
        }

        void wrongThread() {
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    c.poll();
                } catch (Throwable e) {
                    thrown.set(e);
                }
            }, "not-the-scheduler");
            t.start();
            try {
                t.join();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            assertThat(thrown.get()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("scheduler-thread call from not-the-scheduler");
        }

        void evict(int arg) {
            c.evictDevice(1 + arg % 8, rig::freeDevicePages);
        }

        void load(int arg) {
            if (sequences.isEmpty()) {
                return;
            }
            int[] t = sequences.get(arg % sequences.size());
            MatchResult m = c.tree().match(t);
            c.loadBack(m, requestId++, Integer.MAX_VALUE, deviceAllocator);
            try {
                c.startLoading();
            } catch (IllegalStateException e) {
                assertThat(e).hasMessageContaining("still in use by an earlier batch");
            }
        }

        void afterClose(int action, int arg) {
            assertThat(c.isClosed()).isTrue();
            RadixNode n = nodes.isEmpty() ? null : nodes.get(arg % nodes.size());
            switch (action % 5) {
                case 0 -> assertThatThrownBy(() -> c.reserve(n, false)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("closed");
                case 1 -> assertThatThrownBy(c::poll).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("closed");
                case 2 -> assertThatThrownBy(() -> c.beginForward(List.of())).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("closed");
                case 3 -> {
                    if (!backups.isEmpty()) {
                        Backup b = backups.get(arg % backups.size());
                        assertThatThrownBy(() -> c.abort(b, AbortReason.ENGINE))
                            .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
                    }
                }
                default -> assertThatThrownBy(() -> c.evictDevice(1, rig::freeDevicePages))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            }
        }

        void checkInvariants() {
            if (closed) {
                // close aborted and released every pending backup; committed values stay on their nodes (their
                // memory went with the closed pool)
                assertThat(c.tree().hostPagesPending()).as("pending host pages after close").isZero();
                assertThat((long) c.allocator().allocatedPages()).as("host pages after close")
                    .isEqualTo(c.tree().hostPagesCommitted());
                assertThat(c.backupsInFlight()).isZero();
                return;
            }
            c.tree().checkInvariants();
            assertThat((long) c.allocator().allocatedPages()).as("allocator pages == committed + pending host pages")
                .isEqualTo(c.tree().hostPagesCommitted() + c.tree().hostPagesPending());
            assertThat(c.hostBudgetUsedPages()).isEqualTo(c.allocator().allocatedPages());
        }

        void finish() {
            if (closed) {
                return;
            }
            for (ForwardHandle h : handles) {
                if (!h.ended()) {
                    h.endForward();
                }
            }
            for (Backup b : backups) {
                if (b.state() == BackupState.RESERVED) {
                    c.abort(b, AbortReason.ENGINE); // never begun and no lease: the engine's to abort
                }
            }
            for (int i = 0; i < 10_000 && (c.backupsInFlight() > 0 || c.loadsInFlight() > 0); i++) {
                c.doAgentWork();
                if (!rig.advance()) {
                    c.doAgentWork();
                }
                c.poll();
            }
            assertThat(c.backupsInFlight()).as("backups in flight after draining").isZero();
            checkInvariants();
            assertThat(c.tree().hostPagesPending()).isZero();
            for (Backup b : backups) {
                assertThat(b.state()).isIn(BackupState.COMMITTED, BackupState.ABORTED);
            }
        }
    }
}
