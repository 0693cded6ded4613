package io.hicache.testkit;

import io.hicache.core.cp.RankAgreement;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A conformance kit for {@link RankAgreement} implementations: every obligation the interface states, checked against
 * a real group of ranks, each driven on its own thread the way a controller drives it (contribute a round, ask for
 * its result at every poll, then the next round). Run it in the implementation's own tests, either by extending
 * {@link RankAgreementConformanceSuite} (one test per scenario) or by calling the scenarios here; name the test class
 * {@code *ConformanceTest} so that one {@code -Dtest='*Conformance*'} finds every implementation's.
 *
 * <p>Scenarios: {@link #decidesTheMinimum}, {@link #toleratesDelays}, {@link #revealsDivergentContributions},
 * {@link #stalledRankAfterContributing}, {@link #stalledRankBeforeContributing}, {@link #killedRank},
 * {@link #leavingRank}, {@link #lostMessages} and {@link #roundsInOrder}. After each run the kit checks:
 * <ol>
 *   <li>one outcome per round on every live rank (the same words, or degraded on all); a rank the group declared
 *       failed in round {@code k} (it stalled across the timeout, its messages were held up) may have obtained round
 *       {@code k} itself decided, but obtains every later round degraded: it learns that it left;</li>
 *   <li>a decided round's words are the element-wise minimum of every rank's contribution, and no round is decided
 *       without a rank that never contributed it;</li>
 *   <li>degradation is sticky: after a degraded round every later round is degraded;</li>
 *   <li>no call blocks: every {@code contribute} and {@code tryResult} returns within {@code callBoundNs};</li>
 *   <li>liveness: every rank that keeps calling obtains each round's result within the implementation's
 *       {@link RankAgreement#failureDetectionNs()} (plus {@code slackNs} for a loaded machine) once every rank that
 *       can contribute has, or within {@code slackNs} when nothing went wrong;</li>
 *   <li>where the scenario has no fault, every round is decided normally.</li>
 * </ol>
 * A failing scenario throws {@link AssertionError} listing every violation it found. A scenario the fixture cannot
 * stage (it cannot kill a rank, or lose messages) returns false without running.
 *
 * <p>Threads: each scenario starts one daemon thread per rank and joins them before it returns; a rank still blocked
 * inside the agreement at the end is reported and interrupted. Not thread-safe: run one scenario at a time.
 */
public final class RankAgreementConformance {

    /** What the kit needs from an implementation: fresh groups, and how long a stall must be to cross its timeout. */
    public interface Fixture {
        /** A new group of {@code size} ranks. */
        Group open(int size) throws Exception;

        /**
         * How long the kit stalls a rank to cross the implementation's timeout (a stalled rank makes no call at all,
         * and its transport is not polled): longer than the time after which the implementation may declare a silent
         * rank failed. For an implementation without timeouts, any stall (the others wait for it).
         */
        long stallNs();
    }

    /** One group of ranks under test. */
    public interface Group extends AutoCloseable {
        /** Rank {@code rank}'s agreement (the same object for every rank of an in-process group). */
        RankAgreement agreement(int rank);

        /** Between two calls of rank {@code rank}: any duty work its transport needs (default none). */
        default void idle(int rank) {
        }

        /**
         * Rank {@code rank} crashes: it stops sending and receiving for good, without leaving (called on that rank's
         * thread, which then stops). Returns false if the fixture cannot do it.
         */
        default boolean kill(int rank) {
            return false;
        }

        /** From now on, every message the transport carries is lost with {@code probability}; false if it cannot. */
        default boolean loseMessages(double probability) {
            return false;
        }

        @Override
        void close();
    }

    private final Fixture fixture;
    private final String name;
    private long callBoundNs = TimeUnit.MILLISECONDS.toNanos(500);
    private long slackNs = TimeUnit.SECONDS.toNanos(5);
    private int width = 2 * RankAgreement.SECTION_WORDS;
    private long seed = 47;

    /** A kit for the implementation {@code name} that {@code fixture} builds. */
    public RankAgreementConformance(String name, Fixture fixture) {
        this.name = java.util.Objects.requireNonNull(name, "name");
        this.fixture = java.util.Objects.requireNonNull(fixture, "fixture");
    }

    /** The longest a single {@code contribute} or {@code tryResult} may take (default 500 ms: a loaded machine). */
    public RankAgreementConformance callBoundNs(long ns) {
        this.callBoundNs = ns;
        return this;
    }

    /** Added to every liveness bound for a loaded machine (default 5 s). */
    public RankAgreementConformance slackNs(long ns) {
        this.slackNs = ns;
        return this;
    }

    /** Words per contribution (default two controller sections). */
    public RankAgreementConformance width(int words) {
        if (words < 1 || words > RankAgreement.MAX_WORDS) {
            throw new IllegalArgumentException("width " + words + " outside [1, " + RankAgreement.MAX_WORDS + "]");
        }
        this.width = words;
        return this;
    }

    /** The seed of the contributions and delays (default 47). */
    public RankAgreementConformance seed(long seed) {
        this.seed = seed;
        return this;
    }

    // ------------------------------------------------------------------ scenarios

    /** Three ranks, 40 rounds of random words, no fault: every round decided, on every rank, with the minimum. */
    public boolean decidesTheMinimum() throws Exception {
        return run("decidesTheMinimum", new Script(3, 40), true);
    }

    /** Three ranks call at random moments (0 to 20 ms apart): the same, however the calls interleave. */
    public boolean toleratesDelays() throws Exception {
        Script s = new Script(3, 30);
        SplittableRandom rnd = new SplittableRandom(seed ^ 0xD1);
        for (int r = 0; r < 3; r++) {
            for (int k = 0; k < 30; k++) {
                s.delayBefore[r][k] = TimeUnit.MILLISECONDS.toNanos(rnd.nextInt(21));
                s.delayAfter[r][k] = rnd.nextInt(3) == 0 ? TimeUnit.MILLISECONDS.toNanos(rnd.nextInt(21)) : 0;
            }
        }
        return run("toleratesDelays", s, true);
    }

    /**
     * Four ranks contribute a value and its complement that sometimes differ between ranks: the result gives the
     * minimum and (complemented) the maximum of what they contributed, so any difference shows.
     */
    public boolean revealsDivergentContributions() throws Exception {
        Script s = new Script(4, 24);
        SplittableRandom rnd = new SplittableRandom(seed ^ 0xD2);
        for (int k = 0; k < 24; k++) {
            long same = rnd.nextLong();
            for (int r = 0; r < 4; r++) {
                long v = k % 3 == 0 ? same : rnd.nextLong();
                s.words[r][k][0] = v;
                s.words[r][k][1] = ~v;
            }
        }
        s.divergencePairs = true;
        return run("revealsDivergentContributions", s, true);
    }

    /**
     * Rank 1 stalls right after it contributed round 5 (a rank stuck inside its collective), for
     * {@link Fixture#stallNs()}: every rank, the stalled one included once it wakes, obtains the same outcome for every
     * round; the others obtain theirs within the failure-detection bound.
     */
    public boolean stalledRankAfterContributing() throws Exception {
        Script s = new Script(3, 14);
        s.delayAfter[1][5] = fixture.stallNs();
        return run("stalledRankAfterContributing", s, false);
    }

    /** Rank 0 (the coordinator of many implementations) stalls before it contributes round 4: as above. */
    public boolean stalledRankBeforeContributing() throws Exception {
        Script s = new Script(3, 12);
        s.delayBefore[0][4] = fixture.stallNs();
        return run("stalledRankBeforeContributing", s, false);
    }

    /**
     * Rank 2 crashes before it contributes round 6: the others obtain round 6 and every later one degraded within the
     * failure-detection bound. Runs only where the fixture can kill a rank and the implementation states a bound.
     */
    public boolean killedRank() throws Exception {
        Script s = new Script(3, 16);
        s.killBefore[2] = 6;
        s.needsKill = true;
        return run("killedRank", s, false);
    }

    /**
     * Rank 2 leaves after it read round 5: the others obtain every later round degraded, without waiting for any
     * timeout beyond the failure-detection bound.
     */
    public boolean leavingRank() throws Exception {
        Script s = new Script(3, 14);
        s.leaveAfter[2] = 5;
        return run("leavingRank", s, false);
    }

    /** A fifth of every message is lost: every round still decided, identically, with the minimum. */
    public boolean lostMessages() throws Exception {
        Script s = new Script(3, 30);
        s.lossProbability = 0.2;
        return run("lostMessages", s, true);
    }

    /** Contributing a round twice, or skipping one, throws {@link IllegalStateException} and changes nothing. */
    public boolean roundsInOrder() throws Exception {
        List<String> violations = new ArrayList<>();
        try (Group g = fixture.open(2)) {
            RankAgreement a = g.agreement(0);
            RankAgreement.Contribution c = new RankAgreement.Contribution(width);
            expectIllegalState(violations, "contributing round 1 before round 0", () -> a.contribute(0, 1, c));
            a.contribute(0, 0, c);
            expectIllegalState(violations, "contributing round 0 twice", () -> a.contribute(0, 0, c));
            RankAgreement b = g.agreement(1);
            b.contribute(1, 0, c);
            RankAgreement.Result out = new RankAgreement.Result();
            long deadline = System.nanoTime() + slackNs;
            boolean got = false;
            while (!got && System.nanoTime() < deadline) {
                g.idle(0);
                g.idle(1);
                got = a.tryResult(0, 0, out);
                b.tryResult(1, 0, new RankAgreement.Result());
            }
            if (!got || !out.decided()) {
                violations.add("after the refused contributions, round 0 was not decided normally: " + out);
            } else if (out.word(0) != Long.MAX_VALUE) {
                violations.add("a refused contribution changed round 0's result: " + out);
            }
        }
        throwIfAny("roundsInOrder", violations);
        return true;
    }

    // ------------------------------------------------------------------ the run

    /** What each rank contributes and the faults it meets. */
    private final class Script {
        final int ranks;
        final int rounds;
        final long[][][] words;
        final long[][] delayBefore;
        final long[][] delayAfter;
        final int[] killBefore;
        final int[] leaveAfter;
        boolean needsKill;
        boolean divergencePairs;
        double lossProbability;

        Script(int ranks, int rounds) {
            this.ranks = ranks;
            this.rounds = rounds;
            this.words = new long[ranks][rounds][width];
            this.delayBefore = new long[ranks][rounds];
            this.delayAfter = new long[ranks][rounds];
            this.killBefore = new int[ranks];
            this.leaveAfter = new int[ranks];
            Arrays.fill(killBefore, -1);
            Arrays.fill(leaveAfter, -1);
            SplittableRandom rnd = new SplittableRandom(seed);
            for (int r = 0; r < ranks; r++) {
                for (int k = 0; k < rounds; k++) {
                    for (int i = 0; i < width; i++) {
                        int kind = rnd.nextInt(4);
                        words[r][k][i] = kind == 0 ? Long.MAX_VALUE : kind == 1 ? rnd.nextLong() : k * 100L + rnd.nextInt(50);
                    }
                }
            }
        }

        boolean gone(int r, int k) {
            return killBefore[r] >= 0 && k >= killBefore[r] || leaveAfter[r] >= 0 && k > leaveAfter[r];
        }
    }

    /** One rank's record: what it obtained and when. */
    private static final class Record {
        final RankAgreement.Result[] results;
        final long[] contributedAtNs;
        final long[] resultAtNs;
        long maxCallNs;
        String maxCall = "";
        String stoppedBecause;
        volatile boolean inCall;
        volatile String callName = "";

        Record(int rounds) {
            results = new RankAgreement.Result[rounds];
            contributedAtNs = new long[rounds];
            resultAtNs = new long[rounds];
            Arrays.fill(contributedAtNs, -1);
            Arrays.fill(resultAtNs, -1);
        }
    }

    private boolean run(String scenario, Script s, boolean faultFree) throws Exception {
        List<String> violations = new ArrayList<>();
        Record[] rec = new Record[s.ranks];
        long detectNs;
        try (Group g = fixture.open(s.ranks)) {
            detectNs = g.agreement(0).failureDetectionNs();
            if (s.needsKill && detectNs == Long.MAX_VALUE) {
                return false; // the implementation cannot detect a crashed rank: nothing to check
            }
            if (s.lossProbability > 0 && !g.loseMessages(s.lossProbability)) {
                return false;
            }
            boolean[] killable = {true};
            java.util.concurrent.atomic.AtomicInteger finished = new java.util.concurrent.atomic.AtomicInteger();
            Thread[] threads = new Thread[s.ranks];
            long budgetNs = detectNs == Long.MAX_VALUE ? slackNs : saturatedAdd(detectNs, slackNs);
            for (int r = 0; r < s.ranks; r++) {
                rec[r] = new Record(s.rounds);
                int rank = r;
                threads[r] = new Thread(() -> {
                    boolean running = false;
                    try {
                        running = drive(g, s, rank, rec[rank], budgetNs, killable);
                    } finally {
                        finished.incrementAndGet();
                    }
                    // a rank that read its last round keeps answering the group (as a controller keeps polling)
                    // until every rank is done, so the others' last rounds can end
                    long until = System.nanoTime() + budgetNs + TimeUnit.SECONDS.toNanos(30);
                    while (running && finished.get() < s.ranks && System.nanoTime() < until) {
                        g.idle(rank);
                        LockSupport.parkNanos(100_000);
                    }
                }, "conformance-" + scenario + "-rank-" + r);
                threads[r].setDaemon(true);
            }
            for (Thread t : threads) {
                t.start();
            }
            long joinBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(60) + 4 * Math.min(budgetNs,
                TimeUnit.SECONDS.toNanos(30)) + s.rounds * TimeUnit.MILLISECONDS.toNanos(50) + sum(s);
            for (int r = 0; r < s.ranks; r++) {
                long left = joinBy - System.nanoTime();
                threads[r].join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                if (threads[r].isAlive()) {
                    violations.add("rank " + r + " did not finish: " + (rec[r].inCall ? "blocked inside "
                        + rec[r].callName : "still waiting") + " (no call may block)");
                    threads[r].interrupt();
                }
            }
            if (s.needsKill && !killable[0]) {
                return false;
            }
        }
        check(s, rec, faultFree, detectNs, violations);
        throwIfAny(scenario, violations);
        return true;
    }

    private static long sum(Script s) {
        long t = 0;
        for (int r = 0; r < s.ranks; r++) {
            for (int k = 0; k < s.rounds; k++) {
                t = saturatedAdd(t, saturatedAdd(s.delayBefore[r][k], s.delayAfter[r][k]));
            }
        }
        return t;
    }

    /** Runs rank {@code rank}'s script; true when it read every round (and so may keep answering the group). */
    private boolean drive(Group g, Script s, int rank, Record rec, long budgetNs, boolean[] killable) {
        RankAgreement a = g.agreement(rank);
        RankAgreement.Contribution c = new RankAgreement.Contribution(width);
        try {
            for (int k = 0; k < s.rounds; k++) {
                pause(s.delayBefore[rank][k]);
                if (s.killBefore[rank] == k) {
                    if (!g.kill(rank)) {
                        killable[0] = false;
                    }
                    rec.stoppedBecause = "killed";
                    return false;
                }
                for (int i = 0; i < width; i++) {
                    c.set(i, s.words[rank][k][i]);
                }
                long t0 = System.nanoTime();
                call(rec, "contribute(round " + k + ")");
                try {
                    a.contribute(rank, k, c);
                } finally {
                    rec.inCall = false;
                }
                long t1 = System.nanoTime();
                timed(rec, t1 - t0, "contribute of round " + k);
                rec.contributedAtNs[k] = t1;
                pause(s.delayAfter[rank][k]);
                RankAgreement.Result out = new RankAgreement.Result();
                long waitFrom = System.nanoTime();
                while (true) {
                    long t2 = System.nanoTime();
                    call(rec, "tryResult(round " + k + ")");
                    boolean got;
                    try {
                        got = a.tryResult(rank, k, out);
                    } finally {
                        rec.inCall = false;
                    }
                    long t3 = System.nanoTime();
                    timed(rec, t3 - t2, "tryResult of round " + k);
                    if (got) {
                        rec.results[k] = out;
                        rec.resultAtNs[k] = t3;
                        break;
                    }
                    if (t3 - waitFrom > budgetNs + TimeUnit.SECONDS.toNanos(30)) {
                        rec.stoppedBecause = "no result for round " + k + " after " + (t3 - waitFrom) / 1_000_000
                            + " ms";
                        return false;
                    }
                    g.idle(rank);
                    LockSupport.parkNanos(20_000);
                }
                if (s.leaveAfter[rank] == k) {
                    a.leave(rank);
                    rec.stoppedBecause = "left";
                    return false;
                }
            }
            return true;
        } catch (RuntimeException | Error e) {
            rec.stoppedBecause = "threw " + e;
            return false;
        }
    }

    private static void call(Record rec, String what) {
        rec.callName = what;
        rec.inCall = true;
    }

    private static void timed(Record rec, long ns, String what) {
        if (ns > rec.maxCallNs) {
            rec.maxCallNs = ns;
            rec.maxCall = what;
        }
    }

    private static void pause(long ns) {
        // a fault the script injects (a slow or stalled rank), not a wait for another thread
        long until = System.nanoTime() + ns;
        for (long left = ns; left > 0; left = until - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    // ------------------------------------------------------------------ the checks

    private void check(Script s, Record[] rec, boolean faultFree, long detectNs, List<String> violations) {
        for (int r = 0; r < s.ranks; r++) {
            if (rec[r].stoppedBecause != null && rec[r].stoppedBecause.startsWith("threw")) {
                violations.add("rank " + r + " " + rec[r].stoppedBecause);
            }
            if (rec[r].maxCallNs > callBoundNs) {
                violations.add("rank " + r + ": " + rec[r].maxCall + " took " + rec[r].maxCallNs / 1_000_000
                    + " ms: contribute and tryResult must not block (bound " + callBoundNs / 1_000_000 + " ms)");
            }
        }
        // the round from which each rank is named failed by some rank's degraded result
        long[] namedFailedFrom = new long[s.ranks];
        Arrays.fill(namedFailedFrom, Long.MAX_VALUE);
        for (int k = 0; k < s.rounds; k++) {
            for (int r = 0; r < s.ranks; r++) {
                RankAgreement.Result res = rec[r].results[k];
                if (res != null && res.degraded()) {
                    for (int q = 0; q < s.ranks; q++) {
                        if ((res.failedRanks() & (1L << q)) != 0) {
                            namedFailedFrom[q] = Math.min(namedFailedFrom[q], k);
                        }
                    }
                }
            }
        }
        for (int k = 0; k < s.rounds; k++) {
            int first = -1;
            for (int r = 0; r < s.ranks; r++) {
                RankAgreement.Result res = rec[r].results[k];
                if (res == null) {
                    continue;
                }
                if (res.decided() && k > namedFailedFrom[r]) {
                    violations.add("rank " + r + " was declared failed in round " + namedFailedFrom[r]
                        + " but obtained round " + k + " decided: a rank declared failed obtains every later round"
                        + " degraded");
                }
                if (k >= namedFailedFrom[r]) {
                    continue; // it left in this round: its own view of the round may differ (see the class comment)
                }
                if (first < 0) {
                    first = r;
                } else if (!res.sameOutcome(rec[first].results[k])) {
                    violations.add("round " + k + ": rank " + first + " obtained " + rec[first].results[k] + " but rank "
                        + r + " obtained " + res + ": one outcome per round on every live rank");
                }
                if (res.decided()) {
                    checkMinimum(s, rec, k, r, res, violations);
                }
                if (res.degraded() && faultFree) {
                    violations.add("round " + k + " degraded on rank " + r + " (" + res + ") although no rank failed");
                }
                if (k > 0 && rec[r].results[k - 1] != null && rec[r].results[k - 1].degraded() && res.decided()) {
                    violations.add("round " + k + " decided on rank " + r + " after round " + (k - 1)
                        + " was degraded there: degradation must be sticky");
                }
            }
        }
        // sticky across ranks: once any rank saw round k degraded, no rank may see a later round decided
        for (int k = 0; k < s.rounds; k++) {
            boolean degradedSomewhere = false;
            for (int r = 0; r < s.ranks; r++) {
                degradedSomewhere |= rec[r].results[k] != null && rec[r].results[k].degraded();
            }
            if (!degradedSomewhere) {
                continue;
            }
            for (int r = 0; r < s.ranks; r++) {
                for (int j = k + 1; j < s.rounds; j++) {
                    if (rec[r].results[j] != null && rec[r].results[j].decided()) {
                        violations.add("round " + j + " decided on rank " + r + " although round " + k
                            + " was degraded: degradation must be sticky on every rank");
                        j = s.rounds;
                    }
                }
            }
        }
        checkLiveness(s, rec, faultFree, detectNs, violations);
    }

    private void checkMinimum(Script s, Record[] rec, int k, int r, RankAgreement.Result res, List<String> violations) {
        if (res.width() != width) {
            violations.add("round " + k + " on rank " + r + ": " + res.width() + " words, " + width + " contributed");
            return;
        }
        for (int q = 0; q < s.ranks; q++) {
            if (s.gone(q, k) && rec[q].contributedAtNs[k] < 0) {
                violations.add("round " + k + " decided on rank " + r + " although rank " + q
                    + " never contributed it");
                return;
            }
        }
        for (int i = 0; i < width; i++) {
            long min = Long.MAX_VALUE;
            for (int q = 0; q < s.ranks; q++) {
                min = Math.min(min, s.words[q][k][i]);
            }
            if (res.word(i) != min) {
                violations.add("round " + k + " on rank " + r + ": word " + i + " is " + res.word(i)
                    + ", the minimum of the contributions is " + min + ": a decided round is their element-wise minimum");
                return;
            }
        }
        if (s.divergencePairs) {
            long max = Long.MIN_VALUE;
            for (int q = 0; q < s.ranks; q++) {
                max = Math.max(max, s.words[q][k][0]);
            }
            if (~res.word(1) != max) {
                violations.add("round " + k + ": the complement's minimum does not give the maximum " + max);
            }
        }
    }

    private void checkLiveness(Script s, Record[] rec, boolean faultFree, long detectNs, List<String> violations) {
        for (int r = 0; r < s.ranks; r++) {
            for (int k = 0; k < s.rounds; k++) {
                if (s.gone(r, k)) {
                    break;
                }
                if (rec[r].contributedAtNs[k] < 0) {
                    break; // stopped earlier (reported below, or by the round it waits on)
                }
                if (rec[r].results[k] == null) {
                    violations.add("rank " + r + " obtained no result for round " + k + " ("
                        + (rec[r].stoppedBecause != null ? rec[r].stoppedBecause : "its thread did not finish")
                        + "): every round ends on every rank that keeps calling");
                    break;
                }
                // from the moment every rank that could contribute this round had done so
                long allIn = rec[r].contributedAtNs[k];
                for (int q = 0; q < s.ranks; q++) {
                    if (!s.gone(q, k) && rec[q].contributedAtNs[k] > allIn) {
                        allIn = rec[q].contributedAtNs[k];
                    }
                }
                long took = rec[r].resultAtNs[k] - allIn;
                long bound = faultFree || detectNs == Long.MAX_VALUE ? slackNs : saturatedAdd(detectNs, slackNs);
                if (took > bound) {
                    violations.add("rank " + r + " obtained round " + k + " " + took / 1_000_000 + " ms after every"
                        + " rank that could contributed it: beyond the bound of " + bound / 1_000_000 + " ms ("
                        + (detectNs == Long.MAX_VALUE ? "no failure detection" : "failure detection "
                        + detectNs / 1_000_000 + " ms") + " plus slack)");
                }
            }
        }
    }

    private static long saturatedAdd(long a, long b) {
        long c = a + b;
        return ((a ^ c) & (b ^ c)) < 0 ? Long.MAX_VALUE : c;
    }

    private static void expectIllegalState(List<String> violations, String what, Runnable call) {
        try {
            call.run();
            violations.add(what + " was accepted: it must throw IllegalStateException");
        } catch (IllegalStateException expected) {
            // as the contract says
        } catch (RuntimeException e) {
            violations.add(what + " threw " + e + ", not IllegalStateException");
        }
    }

    private void throwIfAny(String scenario, List<String> violations) {
        if (!violations.isEmpty()) {
            throw new AssertionError("RankAgreement conformance: " + name + " fails " + scenario + ":\n  - "
                + String.join("\n  - ", violations));
        }
    }
}
