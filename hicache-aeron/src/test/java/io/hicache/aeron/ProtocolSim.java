package io.hicache.aeron;

import io.hicache.core.cp.RankAgreement;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * A deterministic simulation of one agreement channel: {@code n} {@link AgreementCore}s on a virtual clock, a network
 * that delays, loses, duplicates and reorders frames, stray frames from outside the group, and ranks that stall or
 * die (also half-way through sending a frame to the group). Each rank runs a small engine that contributes a round,
 * waits for its result, thinks, and contributes the next one. Everything follows from the seed.
 */
final class ProtocolSim {
    static final long MEMBER_TIMEOUT_NS = 20_000_000;
    static final long RETRANSMIT_NS = 2_000_000;
    static final long STEP_NS = 200_000;

    final int n;
    final SplittableRandom random;
    final AgreementCore[] cores;
    final AgreementConfig[] configs;
    long nowNs;

    double lossRate;
    double duplicateRate;
    long maxDelayNs = 3_000_000;
    double strayRate;

    final boolean[] dead;
    final long[] stalledUntilNs;
    final long[] killAfterSends;
    final long[] sends;

    final long[] round;
    final boolean[] open;
    final long[] openSinceNs;
    final long[] nextContributionNs;
    final long[] maxOpenAgeNs;
    final List<Map<Long, long[]>> contributions = new ArrayList<>();
    final List<Map<Long, long[]>> decisions = new ArrayList<>();
    final List<String> violations = new ArrayList<>();
    long strayFramesInjected;

    private final PriorityQueue<Frame> network = new PriorityQueue<>();
    private long frameSeq;
    private final RankAgreement.Result out = new RankAgreement.Result();
    private final RankAgreement.Contribution words = new RankAgreement.Contribution(2);

    private record Frame(long deliverAtNs, long seq, int to, byte[] bytes) implements Comparable<Frame> {
        @Override
        public int compareTo(Frame o) {
            int c = Long.compare(deliverAtNs, o.deliverAtNs);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    ProtocolSim(int n, long seed) {
        this.n = n;
        this.random = new SplittableRandom(seed);
        this.cores = new AgreementCore[n];
        this.configs = new AgreementConfig[n];
        this.dead = new boolean[n];
        this.stalledUntilNs = new long[n];
        this.killAfterSends = new long[n];
        this.sends = new long[n];
        this.round = new long[n];
        this.open = new boolean[n];
        this.openSinceNs = new long[n];
        this.nextContributionNs = new long[n];
        this.maxOpenAgeNs = new long[n];
        java.util.Arrays.fill(killAfterSends, Long.MAX_VALUE);
        for (int r = 0; r < n; r++) {
            int rank = r;
            configs[r] = new AgreementConfig(42, 0x5EC_12E7L, n, r, MEMBER_TIMEOUT_NS, RETRANSMIT_NS);
            cores[r] = new AgreementCore(configs[r], 0, (buf, off, len) -> send(rank, buf, off, len));
            contributions.add(new HashMap<>());
            decisions.add(new HashMap<>());
        }
    }

    /** The longest any round may stay undecided on a rank that runs: a chain of suspicions and elections. */
    long roundBoundNs() {
        return (long) n * (configs[0].coordinatorTimeoutNs() + MEMBER_TIMEOUT_NS + 2 * STEP_NS)
            + 2 * MEMBER_TIMEOUT_NS;
    }

    private boolean send(int from, org.agrona.DirectBuffer buf, int off, int len) {
        if (dead[from]) {
            return false;
        }
        byte[] bytes = new byte[len];
        buf.getBytes(off, bytes);
        boolean dying = sends[from] == killAfterSends[from];
        int reach = dying ? random.nextInt(n) : n; // a dying rank's last frame reaches only some ranks
        int reached = 0;
        for (int to = 0; to < n; to++) {
            if (to == from) {
                continue;
            }
            if (reached++ >= reach) {
                break;
            }
            if (random.nextDouble() < lossRate) {
                continue;
            }
            enqueue(to, bytes);
            if (random.nextDouble() < duplicateRate) {
                enqueue(to, bytes);
            }
        }
        sends[from]++;
        if (dying) {
            dead[from] = true;
            return false;
        }
        return true;
    }

    private void enqueue(int to, byte[] bytes) {
        network.add(new Frame(nowNs + random.nextLong(maxDelayNs + 1), frameSeq++, to, bytes));
    }

    boolean running(int r) {
        return !dead[r] && stalledUntilNs[r] <= nowNs;
    }

    /** Runs until {@code endNs}, contributing at most {@code maxRounds} rounds per rank. */
    void run(long endNs, long maxRounds) {
        while (nowNs < endNs) {
            nowNs += STEP_NS;
            deliver();
            injectStrays();
            for (int r = 0; r < n; r++) {
                if (!running(r)) {
                    continue;
                }
                cores[r].doWork(nowNs);
                if (!running(r)) {
                    continue;
                }
                step(r, maxRounds);
            }
        }
    }

    private void deliver() {
        // frames to a stalled rank wait for it (an Aeron subscription's buffer); frames to a dead rank vanish
        List<Frame> held = null;
        while (!network.isEmpty() && network.peek().deliverAtNs <= nowNs) {
            Frame f = network.poll();
            if (dead[f.to]) {
                continue;
            }
            if (stalledUntilNs[f.to] > nowNs) {
                if (held == null) {
                    held = new ArrayList<>();
                }
                held.add(new Frame(stalledUntilNs[f.to], f.seq, f.to, f.bytes));
                continue;
            }
            UnsafeBuffer b = new UnsafeBuffer(f.bytes);
            cores[f.to].onMessage(b, 0, f.bytes.length, nowNs);
        }
        if (held != null) {
            network.addAll(held);
        }
    }

    private void step(int r, long maxRounds) {
        AgreementCore core = cores[r];
        if (open[r]) {
            if (core.tryResult(round[r], out)) {
                // {min completed, min failed, 0} for a decided round, {0, 0, failed ranks} for a degraded one
                decisions.get(r).put(round[r], out.decided()
                    ? new long[] {out.word(0), out.word(1), 0}
                    : new long[] {0, 0, out.failedRanks()});
                open[r] = false;
                round[r]++;
                nextContributionNs[r] = nowNs + random.nextLong(3 * STEP_NS);
            } else {
                maxOpenAgeNs[r] = Math.max(maxOpenAgeNs[r], nowNs - openSinceNs[r]);
            }
        }
        if (!open[r] && round[r] < maxRounds && nowNs >= nextContributionNs[r]) {
            long completed = round[r] * 4 + random.nextInt(4);
            long failed = random.nextInt(8) == 0 ? round[r] * 4 + random.nextInt(4) : Long.MAX_VALUE;
            contributions.get(r).put(round[r], new long[] {completed, failed});
            words.set(0, completed);
            words.set(1, failed);
            core.contribute(round[r], words, nowNs);
            open[r] = true;
            openSinceNs[r] = nowNs;
        }
    }

    /** Stalls rank {@code r} from now for {@code forNs}; its open round's age restarts when it wakes. */
    void stall(int r, long forNs) {
        stalledUntilNs[r] = nowNs + forNs;
        openSinceNs[r] = Math.max(openSinceNs[r], stalledUntilNs[r]);
    }

    private void injectStrays() {
        if (strayRate == 0 || random.nextDouble() >= strayRate) {
            return;
        }
        UnsafeBuffer b = new UnsafeBuffer(new byte[Wire.MAX_LENGTH]);
        int to = random.nextInt(n);
        int kind = random.nextInt(5);
        long group = kind == 0 ? 43 : 42;
        long token = kind == 1 ? 0xBADL : 0x5EC_12E7L;
        int sender = kind == 2 ? n + random.nextInt(3) : kind == 3 ? -1 : random.nextInt(n);
        long epoch = kind == 4 ? -1 : 0;
        // a contribution that would lower every minimum if it were ever counted
        int length = Wire.encode(b, Wire.CONTRIBUTION, 0, group, token, sender, epoch, round[to], 0, 0,
            new long[] {-999, -999}, 2);
        if (sender == to) {
            return;
        }
        strayFramesInjected++;
        cores[to].onMessage(b, 0, length, nowNs);
        if (random.nextInt(4) == 0) {
            cores[to].onMessage(b, 0, length - 8, nowNs); // malformed
        }
    }

    /** Ranks still in the group: not dead and not left. */
    boolean member(int r) {
        return !dead[r] && !cores[r].hasLeft();
    }

    /** Checks the invariants; returns the violations (empty when all hold). */
    List<String> check(boolean expectDecisionsEverywhere) {
        long bound = roundBoundNs();
        for (int r = 0; r < n; r++) {
            if (dead[r]) {
                continue;
            }
            long age = open[r] && stalledUntilNs[r] <= nowNs ? nowNs - openSinceNs[r] : 0;
            if (Math.max(maxOpenAgeNs[r], age) > bound) {
                violations.add("rank " + r + " waited " + Math.max(maxOpenAgeNs[r], age) / 1000 + " us for round "
                    + round[r] + " (bound " + bound / 1000 + " us)");
            }
            boolean degraded = false;
            for (long k = 0; k < round[r]; k++) {
                long[] d = decisions.get(r).get(k);
                if (degraded && d[2] == 0) {
                    violations.add("rank " + r + " round " + k + " normal after a degraded round");
                }
                degraded |= d[2] != 0;
                if (d[2] == 0) {
                    long minC = Long.MAX_VALUE;
                    long minF = Long.MAX_VALUE;
                    for (int q = 0; q < n; q++) {
                        long[] c = contributions.get(q).get(k);
                        if (c == null) {
                            violations.add("rank " + r + " round " + k + " decided normally without rank " + q);
                            break;
                        }
                        minC = Math.min(minC, c[0]);
                        minF = Math.min(minF, c[1]);
                    }
                    if (d[0] != minC || d[1] != minF) {
                        violations.add("rank " + r + " round " + k + " decided " + d[0] + "/" + d[1]
                            + ", not the minima " + minC + "/" + minF);
                    }
                }
            }
        }
        for (int r = 0; r < n; r++) {
            for (int q = r + 1; q < n; q++) {
                if (!member(r) || !member(q)) {
                    continue;
                }
                long common = Math.min(round[r], round[q]);
                for (long k = 0; k < common; k++) {
                    long[] a = decisions.get(r).get(k);
                    long[] b = decisions.get(q).get(k);
                    boolean aNormal = a[2] == 0;
                    boolean bNormal = b[2] == 0;
                    if (aNormal != bNormal || aNormal && (a[0] != b[0] || a[1] != b[1])) {
                        violations.add("ranks " + r + " and " + q + " decided round " + k + " differently: "
                            + java.util.Arrays.toString(a) + " vs " + java.util.Arrays.toString(b));
                    }
                }
            }
        }
        if (expectDecisionsEverywhere) {
            for (int r = 0; r < n; r++) {
                if (cores[r].isDegraded()) {
                    violations.add("rank " + r + " degraded without any fault: failed mask "
                        + Long.toBinaryString(cores[r].failedMask()));
                }
            }
        }
        return violations;
    }
}
