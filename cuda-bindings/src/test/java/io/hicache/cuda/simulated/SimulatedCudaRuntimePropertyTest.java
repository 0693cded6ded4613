package io.hicache.cuda.simulated;

import static org.assertj.core.api.Assertions.assertThat;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Random programs of copies, kernels, records, waits and clock advances, checked against a deliberately
 * simple reference: per-stream FIFO order and wait edges (as dependency edges on the completion log),
 * one op at a time per engine, exact durations, no idle engine while work is ready, event status from the
 * newest record, and the bytes a sequential replay of the completion log produces.
 */
class SimulatedCudaRuntimePropertyTest {

    static final int STREAMS = 3;
    static final int EVENTS = 3;
    static final int SLOTS = 6;
    static final int SLOT_BYTES = 64;
    static final long LATENCY_NS = 500;
    static final long COPY_NS = LATENCY_NS + SLOT_BYTES; // 1 byte per ns

    sealed interface Action permits Copy, Kernel, Record, Wait, Advance {
    }

    /** dir: 1 H2D, 2 D2H, 3 D2D (the CopyKind values). */
    record Copy(int stream, int dir, int src, int dst) implements Action {
    }

    record Kernel(int stream, int nanos) implements Action {
    }

    record Record(int event, int stream) implements Action {
    }

    record Wait(int stream, int event) implements Action {
    }

    record Advance(int deltaNs) implements Action {
    }

    record Done(long seq, int type, long stream, long startNs, long endNs, int error) {
    }

    @Provide
    Arbitrary<List<Action>> programs() {
        Arbitrary<Integer> stream = Arbitraries.integers().between(0, STREAMS - 1);
        Arbitrary<Integer> event = Arbitraries.integers().between(0, EVENTS - 1);
        Arbitrary<Integer> slot = Arbitraries.integers().between(0, SLOTS - 1);
        Arbitrary<Action> copy = net.jqwik.api.Combinators.combine(stream, Arbitraries.integers().between(1, 3), slot, slot)
                .as(Copy::new);
        Arbitrary<Action> kernel = net.jqwik.api.Combinators.combine(stream, Arbitraries.integers().between(0, 3_000))
                .as(Kernel::new);
        Arbitrary<Action> record = net.jqwik.api.Combinators.combine(event, stream).as(Record::new);
        Arbitrary<Action> wait = net.jqwik.api.Combinators.combine(stream, event).as(Wait::new);
        Arbitrary<Action> advance = Arbitraries.integers().between(0, 2_000).map(Advance::new);
        return Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(5, copy), net.jqwik.api.Tuple.of(2, kernel), net.jqwik.api.Tuple.of(3, record),
                net.jqwik.api.Tuple.of(3, wait), net.jqwik.api.Tuple.of(3, advance)).list().ofMinSize(1).ofMaxSize(60);
    }

    @Property(tries = 300)
    void followsCudaOrderingRulesAndMovesTheRightBytes(@ForAll("programs") List<Action> program,
                                                       @ForAll boolean sharedPcieLink, @ForAll boolean faults,
                                                       @ForAll long seed) {
        SimulatedCudaConfig config = SimulatedCudaConfig.builder().seed(seed).copyLaunchLatencyNs(LATENCY_NS)
                .pcieBytesPerSecond(1_000_000_000L).deviceToDeviceBytesPerSecond(1_000_000_000L)
                .sharedPcieLink(sharedPcieLink)
                .copyFailureProbability(faults ? 0.25 : 0.0, CudaError.LAUNCH_OUT_OF_RESOURCES).build();
        new Checker(config, program).run();
    }

    @Property(tries = 100)
    void sameSeedAndProgramGiveTheSameRun(@ForAll("programs") List<Action> program, @ForAll long seed) {
        SimulatedCudaConfig config = SimulatedCudaConfig.builder().seed(seed).copyLaunchLatencyNs(LATENCY_NS)
                .copyFailureProbability(0.2, CudaError.LAUNCH_OUT_OF_RESOURCES).delayedCompletions(0.5, 2_000).build();
        List<Done> first = execute(config, program);
        List<Done> second = execute(config, program);
        assertThat(second).isEqualTo(first);
    }

    private static List<Done> execute(SimulatedCudaConfig config, List<Action> program) {
        List<Done> log = new ArrayList<>();
        try (SimulatedCudaRuntime rt = new SimulatedCudaRuntime(config)) {
            rt.setOpListener((seq, type, stream, startNs, endNs, err) -> log.add(new Done(seq, type, stream, startNs,
                    endNs, err)));
            long host = rt.hostAlloc(SLOTS * SLOT_BYTES, 0);
            long dev = rt.deviceMalloc(SLOTS * SLOT_BYTES);
            CudaStream[] streams = {CudaStream.DEFAULT, rt.createStream(0), rt.createStream(0)};
            CudaEvent[] events = new CudaEvent[EVENTS];
            for (int i = 0; i < EVENTS; i++) {
                events[i] = rt.createEvent(false);
            }
            for (Action a : program) {
                switch (a) {
                    case Copy c -> rt.memcpyAsync(addr(c.dir() == 2 ? host : dev, c.dst()),
                            addr(c.dir() == 1 ? host : dev, c.src()), SLOT_BYTES, kind(c.dir()), streams[c.stream()]);
                    case Kernel k -> rt.simulateKernel(streams[k.stream()], k.nanos());
                    case Record r -> rt.recordEvent(events[r.event()], streams[r.stream()]);
                    case Wait w -> rt.streamWaitEvent(streams[w.stream()], events[w.event()]);
                    case Advance adv -> rt.advanceTo(rt.nowNs() + adv.deltaNs());
                }
            }
            rt.runUntilIdle();
        }
        return log;
    }

    static long addr(long base, int slot) {
        return base + (long) slot * SLOT_BYTES;
    }

    static CopyKind kind(int dir) {
        return switch (dir) {
            case 1 -> CopyKind.HOST_TO_DEVICE;
            case 2 -> CopyKind.DEVICE_TO_HOST;
            default -> CopyKind.DEVICE_TO_DEVICE;
        };
    }

    /** Runs one program on a runtime and checks it against the reference after every advance and at the end. */
    static final class Checker {
        final SimulatedCudaConfig config;
        final List<Action> program;
        final List<Done> log = new ArrayList<>();
        final Map<Long, Done> doneBySeq = new HashMap<>();
        final Map<Long, Action> actionBySeq = new HashMap<>();
        final Map<Long, Long> submitNsBySeq = new HashMap<>();
        final Map<Long, Long> prevOnStream = new HashMap<>();
        final Map<Long, Long> waitedRecord = new HashMap<>();
        final long[] lastSeqOnStream = new long[STREAMS];
        final long[] latestRecord = new long[EVENTS];
        final byte[][] deviceModel = new byte[SLOTS][SLOT_BYTES];
        final byte[][] hostModel = new byte[SLOTS][SLOT_BYTES];
        /** For each completed op, how many ops had been issued when the advancing call that completed it began. */
        final Map<Long, Long> issuedBeforeCompletingCall = new HashMap<>();
        long issuedAtCallStart;
        int replayed;

        Checker(SimulatedCudaConfig config, List<Action> program) {
            this.config = config;
            this.program = program;
        }

        void run() {
            try (SimulatedCudaRuntime rt = new SimulatedCudaRuntime(config)) {
                rt.setOpListener((seq, type, stream, startNs, endNs, err) -> {
                    Done d = new Done(seq, type, stream, startNs, endNs, err);
                    log.add(d);
                    assertThat(doneBySeq.put(seq, d)).as("op %s completed twice", seq).isNull();
                    issuedBeforeCompletingCall.put(seq, issuedAtCallStart);
                });
                long host = rt.hostAlloc(SLOTS * SLOT_BYTES, 0);
                long dev = rt.deviceMalloc(SLOTS * SLOT_BYTES);
                for (int i = 0; i < SLOTS; i++) {
                    for (int b = 0; b < SLOT_BYTES; b++) {
                        hostModel[i][b] = (byte) (i * 7 + b);
                        deviceModel[i][b] = (byte) (100 + i * 3 + b);
                    }
                    rt.hostMemory(addr(host, i), SLOT_BYTES).copyFrom(MemorySegment.ofArray(hostModel[i]));
                    rt.deviceMemory(addr(dev, i), SLOT_BYTES).copyFrom(MemorySegment.ofArray(deviceModel[i]));
                }
                CudaStream[] streams = {CudaStream.DEFAULT, rt.createStream(0), rt.createStream(0)};
                CudaEvent[] events = new CudaEvent[EVENTS];
                for (int i = 0; i < EVENTS; i++) {
                    events[i] = rt.createEvent(false);
                }
                for (Action a : program) {
                    int streamIndex = -1;
                    switch (a) {
                        case Copy c -> {
                            streamIndex = c.stream();
                            rt.memcpyAsync(addr(c.dir() == 2 ? host : dev, c.dst()),
                                    addr(c.dir() == 1 ? host : dev, c.src()), SLOT_BYTES, kind(c.dir()), streams[c.stream()]);
                        }
                        case Kernel k -> {
                            streamIndex = k.stream();
                            rt.simulateKernel(streams[k.stream()], k.nanos());
                        }
                        case Record r -> {
                            streamIndex = r.stream();
                            rt.recordEvent(events[r.event()], streams[r.stream()]);
                            latestRecord[r.event()] = rt.opsIssued();
                        }
                        case Wait w -> {
                            streamIndex = w.stream();
                            rt.streamWaitEvent(streams[w.stream()], events[w.event()]);
                            waitedRecord.put(rt.opsIssued(), latestRecord[w.event()]);
                        }
                        case Advance adv -> {
                            issuedAtCallStart = rt.opsIssued();
                            rt.advanceTo(rt.nowNs() + adv.deltaNs());
                            checkAt(rt, host, dev, events);
                        }
                    }
                    if (streamIndex >= 0) {
                        long seq = rt.opsIssued();
                        actionBySeq.put(seq, a);
                        submitNsBySeq.put(seq, rt.nowNs());
                        prevOnStream.put(seq, lastSeqOnStream[streamIndex]);
                        lastSeqOnStream[streamIndex] = seq;
                    }
                }
                issuedAtCallStart = rt.opsIssued();
                rt.runUntilIdle();
                assertThat(rt.idle()).isTrue();
                assertThat(log).hasSize((int) rt.opsIssued());
                assertThat(rt.opsCompleted()).isEqualTo(rt.opsIssued());
                checkAt(rt, host, dev, events);
                checkLog(rt);
            }
        }

        /** After an advance: nothing due is left, event status follows the newest record, bytes follow the log. */
        void checkAt(SimulatedCudaRuntime rt, long host, long dev, CudaEvent[] events) {
            long now = rt.nowNs();
            assertThat(rt.nextEventTimeNs()).isGreaterThan(now);
            for (Done d : log) {
                assertThat(d.endNs()).isLessThanOrEqualTo(now);
            }
            for (int e = 0; e < EVENTS; e++) {
                long rec = latestRecord[e];
                int expected = rec == 0 ? 0 : doneBySeq.containsKey(rec) ? expectedRecordStatus(rec)
                        : CudaError.NOT_READY.code();
                assertThat(rt.queryEventStatus(events[e])).as("event %s (record op %s)", e, rec).isEqualTo(expected);
            }
            // Replay newly completed copies, in completion order, on the slot model; a failed copy
            // writes only its first half.
            for (; replayed < log.size(); replayed++) {
                Done d = log.get(replayed);
                if (actionBySeq.get(d.seq()) instanceof Copy c) {
                    byte[] from = c.dir() == 1 ? hostModel[c.src()] : deviceModel[c.src()];
                    byte[] to = c.dir() == 2 ? hostModel[c.dst()] : deviceModel[c.dst()];
                    System.arraycopy(from, 0, to, 0, d.error() == 0 ? SLOT_BYTES : SLOT_BYTES / 2);
                }
            }
            for (int i = 0; i < SLOTS; i++) {
                assertThat(rt.hostMemory(addr(host, i), SLOT_BYTES).toArray(ValueLayout.JAVA_BYTE))
                        .as("host slot %s at %s ns", i, now).isEqualTo(hostModel[i]);
                assertThat(rt.deviceMemory(addr(dev, i), SLOT_BYTES).toArray(ValueLayout.JAVA_BYTE))
                        .as("device slot %s at %s ns", i, now).isEqualTo(deviceModel[i]);
            }
        }

        /**
         * The documented rule: a completed record reports the error of a failed op earlier on its stream
         * when the record had been issued before the call that completed the failure; else success.
         */
        int expectedRecordStatus(long rec) {
            Done r = doneBySeq.get(rec);
            int code = 0;
            for (Done f : log) {
                if (f.error() != 0 && f.stream() == r.stream() && f.seq() < rec
                        && rec <= issuedBeforeCompletingCall.get(f.seq())) {
                    code = f.error();
                }
            }
            return code;
        }

        int engineOf(Action a) {
            if (a instanceof Kernel) {
                return 0;
            }
            if (a instanceof Copy c) {
                return switch (c.dir()) {
                    case 1 -> 1;
                    case 2 -> config.sharedPcieLink() ? 1 : 2;
                    default -> 3;
                };
            }
            return -1;
        }

        void checkLog(SimulatedCudaRuntime rt) {
            Map<Long, Integer> position = new HashMap<>();
            for (int i = 0; i < log.size(); i++) {
                position.put(log.get(i).seq(), i);
                if (i > 0) {
                    assertThat(log.get(i).endNs()).as("completion times in log order").isGreaterThanOrEqualTo(
                            log.get(i - 1).endNs());
                }
            }
            for (Done d : log) {
                Action a = actionBySeq.get(d.seq());
                long ready = submitNsBySeq.get(d.seq());
                long prev = prevOnStream.get(d.seq());
                if (prev != 0) {
                    Done p = doneBySeq.get(prev);
                    assertThat(d.startNs()).as("FIFO: op %s starts after op %s ends", d.seq(), prev)
                            .isGreaterThanOrEqualTo(p.endNs());
                    assertThat(position.get(d.seq())).isGreaterThan(position.get(prev));
                    ready = Math.max(ready, p.endNs());
                }
                Long rec = waitedRecord.get(d.seq());
                if (rec != null && rec != 0) {
                    Done r = doneBySeq.get(rec);
                    assertThat(d.startNs()).as("wait %s after record %s", d.seq(), rec).isGreaterThanOrEqualTo(r.endNs());
                    assertThat(position.get(d.seq())).isGreaterThan(position.get(rec));
                    ready = Math.max(ready, r.endNs());
                }
                switch (a) {
                    case Copy c -> assertThat(d.endNs() - d.startNs()).isEqualTo(COPY_NS);
                    case Kernel k -> assertThat(d.endNs() - d.startNs()).isEqualTo(k.nanos());
                    default -> assertThat(d.endNs()).isEqualTo(d.startNs());
                }
                int engine = engineOf(a);
                if (engine < 0) {
                    assertThat(d.startNs()).as("zero-time op %s starts when ready", d.seq()).isEqualTo(ready);
                } else {
                    assertThat(d.startNs()).isGreaterThanOrEqualTo(ready);
                    if (d.startNs() > ready) {
                        // Work-conserving: it waited only because its engine was busy until it started.
                        boolean engineFreedThen = false;
                        for (Done o : log) {
                            if (o != d && engineOf(actionBySeq.get(o.seq())) == engine && o.endNs() == d.startNs()
                                    && o.startNs() <= ready) {
                                engineFreedThen = true;
                            }
                        }
                        boolean busyChain = engineFreedThen || busyThroughout(engine, ready, d);
                        assertThat(busyChain).as("op %s waited from %s to %s with its engine idle", d.seq(), ready,
                                d.startNs()).isTrue();
                    }
                    for (Done o : log) {
                        if (o != d && engineOf(actionBySeq.get(o.seq())) == engine && o.endNs() > o.startNs()
                                && d.endNs() > d.startNs()) {
                            boolean disjoint = o.endNs() <= d.startNs() || d.endNs() <= o.startNs();
                            assertThat(disjoint).as("engine %s runs ops %s and %s at once", engine, o.seq(), d.seq())
                                    .isTrue();
                        }
                    }
                }
            }
        }

        /** True when ops on {@code engine} cover [from, d.start) without a gap. */
        boolean busyThroughout(int engine, long from, Done d) {
            long t = from;
            boolean progressed = true;
            while (t < d.startNs() && progressed) {
                progressed = false;
                for (Done o : log) {
                    if (o != d && engineOf(actionBySeq.get(o.seq())) == engine && o.startNs() <= t && o.endNs() > t) {
                        t = o.endNs();
                        progressed = true;
                    }
                }
            }
            return t >= d.startNs();
        }
    }
}
