package io.hicache.aeron;

import io.hicache.core.cp.RankAgreement;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.Arrays;

/**
 * One rank's side of the agreement protocol for one channel (backups or loads), as a pure state machine: it is
 * driven only by {@link #contribute}, {@link #onMessage} and {@link #doWork} with the caller's clock, and talks only
 * through an {@link Outbox}. The Aeron transport and the deterministic simulation tests drive the same code.
 *
 * <h2>Protocol</h2>
 * Every rank contributes to every round, in order: a vector of words ({@link RankAgreement.Contribution}). Rounds are
 * decided by the <em>coordinator</em> of the current epoch (an epoch is {@code term << 8 | coordinatorRank}; epoch 0
 * is coordinated by rank 0):
 * <ul>
 *   <li>{@code CONTRIBUTION(epoch, round, words)}: every rank to the coordinator, resent until the round is
 *       decided.</li>
 *   <li>{@code RESULT(epoch, round, words)}: the coordinator's decision, once it holds every rank's contribution: the
 *       element-wise minimum, a pure function of them, so every rank applies the same words.</li>
 *   <li>A rank whose contribution the coordinator has not received {@link AgreementConfig#memberTimeoutNs} after
 *       its own is declared failed: {@code RESULT} then carries the failed ranks, and that round and every later
 *       one is <em>degraded</em>: nothing commits, everything in flight aborts ({@code RANK_FAILED}), until the
 *       group is restarted. Degradation is sticky, so no backup commits without every rank's lanes.</li>
 *   <li>A follower that hears no decision {@link AgreementConfig#coordinatorTimeoutNs} after contributing suspects
 *       the coordinator; the lowest-numbered rank not suspected runs an election: {@code PREPARE(newEpoch)};
 *       every rank that sees a higher epoch promises it (and from then on ignores older epochs) and answers
 *       {@code PROMISE} with the last round it applied and its degradation; when every rank not suspected has
 *       promised, or after the member timeout, the candidate sends {@code NEW_EPOCH} carrying the latest applied
 *       result (which any rank that applied a decision of the old coordinator reports), the union of failures, and
 *       the ranks that did not promise as failed. A round applied by any promiser is thus applied by all, so no
 *       decision is half-applied. If every rank promised, the new epoch continues normally under the candidate;
 *       otherwise it is degraded. No majority is needed: a degraded epoch commits nothing, so a lone survivor may
 *       declare one safely. A rank named failed leaves the group: everything it has in flight aborts and it must
 *       restart with an empty host tier to rejoin.</li>
 *   <li>A rank that stops on purpose (its controller stopped after a sticky CUDA error, or it shuts down) calls
 *       {@link #leave}: it sends {@code LEAVE} and the coordinator degrades the next undecided round at once,
 *       instead of after the member timeout.</li>
 * </ul>
 * Frames of another group, with the wrong token, from a rank outside the group, from an older epoch or malformed
 * are dropped and counted, never counted as contributions. The model: crash-stop and stalled ranks, and a network
 * that loses, delays, duplicates and reorders frames but delivers a resent frame within the member timeout.
 *
 * <p><b>Failure detection.</b> A silent rank is detected within {@link AgreementConfig#failureDetectionNs()} of the
 * others' contributions: at most {@code groupSize} links of a suspicion ({@link AgreementConfig#coordinatorTimeoutNs})
 * followed by an election (a member timeout) and a resend.
 *
 * <p>Threads: not thread-safe; one owner thread calls every method. Allocation-free after construction.
 */
public final class AgreementCore {
    private static final int RING = 4;
    private static final long NONE = Long.MAX_VALUE;

    private final AgreementConfig config;
    private final int channel;
    private final Outbox outbox;
    private static final int MAX = RankAgreement.MAX_WORDS;

    private final UnsafeBuffer frame = new UnsafeBuffer(new byte[Wire.MAX_LENGTH]);
    private final long[] inWords = new long[MAX];
    private final long[] minWords = new long[MAX];
    private final int me;
    private final int size;
    private final long fullMask;

    private long acceptedEpoch;
    private long promisedEpoch;

    private long lastNormalRound = -1;
    private final long[] ringRound = new long[RING];
    private final int[] ringWidth = new int[RING];
    private final long[][] ringWords = new long[RING][MAX];
    private long failedMask;
    private long degradedFrom = NONE;
    private boolean left;
    private boolean leaving;

    private long myRound = -1;
    private int myWidth;
    private final long[] myWords = new long[MAX];
    private long waitStartNs;
    private long suspectedMask;

    private final long[] contribRound;
    private final int[] contribWidth;
    private final long[][] contribWords;
    private long roundTimerStartNs = -1;

    private long electionEpoch;
    private long electionStartNs;
    private long promiseMask;
    private long bestRound;
    private int bestWidth;
    private final long[] bestWords = new long[MAX];
    private long unionFailed;
    private long minDegradedFrom;

    private long newEpochRound;
    private int newEpochWidth;
    private final long[] newEpochWords = new long[MAX];
    private long newEpochFailedMask;
    private long newEpochDegradedFrom;

    private long lastRetransmitNs = Long.MIN_VALUE;
    private boolean refused;

    private long droppedMalformed;
    private long droppedForeign;
    private long droppedBadRank;
    private long droppedStale;
    private long sendsRefused;
    private long elections;

    /** One rank's core for {@code channel} (0 backups, 1 loads), sending through {@code outbox}. */
    public AgreementCore(AgreementConfig config, int channel, Outbox outbox) {
        if (channel < 0 || channel > 127) {
            throw new IllegalArgumentException("channel " + channel + " outside [0, 127]");
        }
        this.config = config;
        this.channel = channel;
        this.outbox = outbox;
        this.me = config.rank();
        this.size = config.groupSize();
        this.fullMask = size == 64 ? -1L : (1L << size) - 1;
        this.contribRound = new long[size];
        this.contribWidth = new int[size];
        this.contribWords = new long[size][MAX];
        Arrays.fill(contribRound, -1L);
        Arrays.fill(ringRound, -1L);
    }

    // ------------------------------------------------------------------ the controller's side

    /**
     * Contributes this rank's words to {@code round} (copied).
     *
     * @throws IllegalStateException if rounds are skipped or repeated, or the previous round is not decided yet
     */
    public void contribute(long round, RankAgreement.Contribution contribution, long nowNs) {
        if (round != myRound + 1) {
            throw new IllegalStateException("rank " + me + " contributed round " + round + " after round " + myRound
                + ": rounds must be contributed in order, once each");
        }
        if (myRound >= 0 && !decided(myRound)) {
            throw new IllegalStateException("rank " + me + " contributed round " + round + " before round " + myRound
                + " was decided");
        }
        myRound = round;
        myWidth = contribution.width();
        contribution.copyTo(myWords, 0);
        waitStartNs = nowNs;
        if (degraded()) {
            return;
        }
        if (coordinator()) {
            if (round == lastNormalRound + 1) {
                record(me, round, myWords, myWidth, nowNs);
                maybeDecide(nowNs);
            }
        } else if (promisedEpoch == acceptedEpoch) {
            send(Wire.CONTRIBUTION, acceptedEpoch, round, 0, 0, myWords, myWidth);
        }
    }

    /**
     * Writes round {@code round}'s result into {@code out}: {@link RankAgreement.Result#setDecided} with the group's
     * element-wise minimum, or, for a degraded round, {@link RankAgreement.Result#setDegraded} with the mask of failed ranks
     * (never 0: every degradation names a rank); returns false, leaving {@code out} untouched, while the round is
     * undecided. Allocation-free.
     */
    public boolean tryResult(long round, RankAgreement.Result out) {
        if (round >= degradedFrom) {
            out.setDegraded(failedMask);
            return true;
        }
        if (round > lastNormalRound || round <= lastNormalRound - RING) {
            return false;
        }
        int s = (int) (round & (RING - 1));
        if (ringRound[s] != round) {
            return false;
        }
        out.setDecided(ringWords[s], 0, ringWidth[s]);
        return true;
    }

    private boolean decided(long round) {
        return round >= degradedFrom || round <= lastNormalRound;
    }

    // ------------------------------------------------------------------ inbound

    /** Handles one inbound frame (possibly foreign, stale, duplicated or malformed). */
    public void onMessage(DirectBuffer buf, int offset, int length, long nowNs) {
        if (!Wire.wellFormed(buf, offset, length)) {
            droppedMalformed++;
            return;
        }
        if (Wire.getLong(buf, offset, Wire.GROUP_OFFSET) != config.groupId()
            || Wire.getLong(buf, offset, Wire.TOKEN_OFFSET) != config.token()
            || Wire.channel(buf, offset) != channel) {
            droppedForeign++;
            return;
        }
        int sender = Wire.sender(buf, offset);
        if (sender < 0 || sender >= size) {
            droppedBadRank++;
            return;
        }
        if (sender == me) {
            return; // our own frame, looped back by a shared stream
        }
        long epoch = Wire.getLong(buf, offset, Wire.EPOCH_OFFSET);
        long round = Wire.getLong(buf, offset, Wire.ROUND_OFFSET);
        long mask = Wire.getLong(buf, offset, Wire.MASK_OFFSET);
        long from = Wire.getLong(buf, offset, Wire.FROM_OFFSET);
        int width = Wire.width(buf, offset);
        if (epoch < 0 || epoch < promisedEpoch && Wire.type(buf, offset) != Wire.PROMISE) {
            droppedStale++;
            return;
        }
        Wire.words(buf, offset, inWords, width);
        switch (Wire.type(buf, offset)) {
            case Wire.CONTRIBUTION -> onContribution(sender, epoch, round, width, nowNs);
            case Wire.RESULT -> onResult(sender, epoch, round, width, mask, from);
            case Wire.PREPARE -> onPrepare(sender, epoch, nowNs);
            case Wire.PROMISE -> onPromise(sender, epoch, round, width, mask, from, nowNs);
            case Wire.NEW_EPOCH -> onNewEpoch(sender, epoch, round, width, mask, from, nowNs);
            case Wire.LEAVE -> onLeave(sender, epoch);
            default -> droppedMalformed++;
        }
    }

    private void onContribution(int sender, long epoch, long round, int width, long nowNs) {
        if (epoch != acceptedEpoch || !coordinator() || degraded()) {
            return; // meant for another coordinator, or an epoch this rank has not joined yet
        }
        if (round == lastNormalRound + 1) {
            record(sender, round, inWords, width, nowNs);
            maybeDecide(nowNs);
        } else if (round > lastNormalRound + 1) {
            droppedStale++; // a rank cannot contribute past an undecided round
        }
        // an older round: the sender missed our result, which the periodic resend carries
    }

    private void onResult(int sender, long epoch, long round, int width, long mask, long from) {
        if (epoch != acceptedEpoch || promisedEpoch != acceptedEpoch) {
            return; // an epoch this rank has not joined yet: its NEW_EPOCH comes first
        }
        if (sender != leaderOf(epoch)) {
            droppedBadRank++;
            return;
        }
        if (mask != 0) {
            degrade(mask, from);
        } else if (round == lastNormalRound + 1 && round < degradedFrom) {
            storeNormal(round, inWords, width);
        }
    }

    private void onPrepare(int sender, long epoch, long nowNs) {
        if (leaderOf(epoch) != sender) {
            droppedBadRank++;
            return;
        }
        if (epoch > promisedEpoch) {
            promisedEpoch = epoch;
            if (electionEpoch != 0 && electionEpoch < epoch) {
                electionEpoch = 0; // a higher candidate runs: stand down
            }
            roundTimerStartNs = -1;
            waitStartNs = nowNs;
        }
        if (epoch == promisedEpoch && epoch != acceptedEpoch) {
            int s = (int) (lastNormalRound & (RING - 1));
            send(Wire.PROMISE, epoch, lastNormalRound, failedMask, degradedFrom, ringWords[s],
                lastNormalRound >= 0 ? ringWidth[s] : 0);
        }
    }

    private void onPromise(int sender, long epoch, long round, int width, long mask, long from, long nowNs) {
        if (electionEpoch == 0 || epoch != electionEpoch) {
            if (epoch < promisedEpoch) {
                droppedStale++;
            }
            return;
        }
        long bit = 1L << sender;
        if ((promiseMask & bit) != 0) {
            return; // duplicate
        }
        promiseMask |= bit;
        if (round > bestRound) {
            bestRound = round;
            bestWidth = width;
            System.arraycopy(inWords, 0, bestWords, 0, width);
        }
        unionFailed |= mask;
        minDegradedFrom = Math.min(minDegradedFrom, from);
        maybeConclude(nowNs);
    }

    private void onNewEpoch(int sender, long epoch, long round, int width, long mask, long from, long nowNs) {
        if (leaderOf(epoch) != sender) {
            droppedBadRank++;
            return;
        }
        if (epoch <= acceptedEpoch) {
            return; // duplicate
        }
        adopt(epoch, round, inWords, width, mask, from, nowNs);
    }

    private void onLeave(int sender, long epoch) {
        if (epoch != acceptedEpoch || !coordinator() || (failedMask & (1L << sender)) != 0) {
            return; // only the coordinator decides; a later coordinator learns of it through its election
        }
        degrade(1L << sender, lastNormalRound + 1);
        sendDegraded();
    }

    /**
     * This rank leaves the group now (its controller stopped, or it shuts down): every round it has not seen decided
     * is degraded here, and the group degrades the next undecided round without waiting for the member timeout.
     * Keep calling {@link #doWork} for a while (the leave is resent) before closing.
     */
    public void leave(long nowNs) {
        if (leaving) {
            return;
        }
        leaving = true;
        boolean wasCoordinator = coordinator();
        degrade(1L << me, lastNormalRound + 1);
        if (wasCoordinator) {
            sendDegraded();
        } else {
            send(Wire.LEAVE, acceptedEpoch, lastNormalRound, 0, 0, myWords, 0);
        }
    }

    // ------------------------------------------------------------------ timers and resends

    /** Runs timeouts and resends at {@code nowNs}; returns the work done (0: idle). */
    public int doWork(long nowNs) {
        int work = 0;
        if (electionEpoch != 0) {
            work += maybeConclude(nowNs) ? 1 : 0;
        }
        if (coordinator() && !degraded()) {
            work += maybeDecide(nowNs) ? 1 : 0;
        } else if (!degraded() && electionEpoch == 0 && myRound > lastNormalRound
            && nowNs - waitStartNs >= config.coordinatorTimeoutNs()) {
            // suspect whoever this rank was waiting on: a candidate it promised, else the coordinator, else the
            // candidate it expected to step up (the lowest rank not yet suspected)
            int waitingOn = leaderOf(promisedEpoch);
            if ((suspectedMask & (1L << waitingOn)) != 0) {
                waitingOn = Long.numberOfTrailingZeros(fullMask & ~suspectedMask);
            }
            suspectedMask |= 1L << waitingOn;
            waitStartNs = nowNs;
            if (Long.numberOfTrailingZeros(fullMask & ~suspectedMask) == me) {
                startElection(nowNs);
            }
            work++;
        }
        if (refused || lastRetransmitNs == Long.MIN_VALUE
            || nowNs - lastRetransmitNs >= config.retransmitIntervalNs()) {
            refused = false; // a frame the transport refused is offered again at the next duty cycle
            lastRetransmitNs = nowNs;
            work += resend();
        }
        return work;
    }

    private int resend() {
        int sent = 0;
        if (electionEpoch != 0) {
            send(Wire.PREPARE, electionEpoch, 0, 0, 0, myWords, 0);
            sent++;
        }
        if (leaderOf(acceptedEpoch) == me && promisedEpoch == acceptedEpoch) {
            if (acceptedEpoch != 0) {
                send(Wire.NEW_EPOCH, acceptedEpoch, newEpochRound, newEpochFailedMask, newEpochDegradedFrom,
                    newEpochWords, newEpochWidth);
                sent++;
            }
            if (lastNormalRound >= 0) {
                int s = (int) (lastNormalRound & (RING - 1));
                send(Wire.RESULT, acceptedEpoch, lastNormalRound, 0, NONE, ringWords[s], ringWidth[s]);
                sent++;
            }
            if (degraded()) {
                sendDegraded();
                sent++;
            }
        } else if (leaving && promisedEpoch == acceptedEpoch) {
            send(Wire.LEAVE, acceptedEpoch, lastNormalRound, 0, 0, myWords, 0);
            sent++;
        } else if (!degraded() && myRound > lastNormalRound && promisedEpoch == acceptedEpoch) {
            send(Wire.CONTRIBUTION, acceptedEpoch, myRound, 0, 0, myWords, myWidth);
            sent++;
        }
        return sent;
    }

    // ------------------------------------------------------------------ coordinator

    private boolean coordinator() {
        return leaderOf(acceptedEpoch) == me && promisedEpoch == acceptedEpoch;
    }

    private void record(int rank, long round, long[] words, int width, long nowNs) {
        contribRound[rank] = round;
        contribWidth[rank] = width;
        System.arraycopy(words, 0, contribWords[rank], 0, width);
        if (rank == me) {
            roundTimerStartNs = nowNs;
        }
    }

    private boolean maybeDecide(long nowNs) {
        long round = lastNormalRound + 1;
        long missing = 0;
        for (int i = 0; i < size; i++) {
            if (contribRound[i] != round) {
                missing |= 1L << i;
            }
        }
        if (missing == 0) {
            int width = contribWidth[me];
            java.util.Arrays.fill(minWords, 0, width, Long.MAX_VALUE);
            for (int i = 0; i < size; i++) {
                long[] w = contribWords[i];
                int n = Math.min(width, contribWidth[i]); // every rank contributes the channel's width
                for (int k = 0; k < n; k++) {
                    if (w[k] < minWords[k]) {
                        minWords[k] = w[k];
                    }
                }
            }
            storeNormal(round, minWords, width);
            roundTimerStartNs = -1;
            send(Wire.RESULT, acceptedEpoch, round, 0, NONE, minWords, width);
            return true;
        }
        if ((missing & (1L << me)) == 0 && roundTimerStartNs >= 0
            && nowNs - roundTimerStartNs >= config.memberTimeoutNs()) {
            degrade(missing, round);
            sendDegraded();
            return true;
        }
        return false;
    }

    // ------------------------------------------------------------------ elections

    private void startElection(long nowNs) {
        long term = (Math.max(promisedEpoch, acceptedEpoch) >>> 8) + 1;
        electionEpoch = term << 8 | me;
        promisedEpoch = electionEpoch;
        electionStartNs = nowNs;
        elections++;
        promiseMask = 1L << me;
        bestRound = lastNormalRound;
        int s = (int) (lastNormalRound & (RING - 1));
        bestWidth = lastNormalRound >= 0 ? ringWidth[s] : 0;
        System.arraycopy(ringWords[s], 0, bestWords, 0, bestWidth);
        unionFailed = failedMask;
        minDegradedFrom = degradedFrom;
        send(Wire.PREPARE, electionEpoch, 0, 0, 0, myWords, 0);
    }

    private boolean maybeConclude(long nowNs) {
        long expected = fullMask & ~suspectedMask;
        if ((promiseMask & expected) != expected && nowNs - electionStartNs < config.memberTimeoutNs()) {
            return false;
        }
        long epoch = electionEpoch;
        electionEpoch = 0;
        long failed = unionFailed | (fullMask & ~promiseMask);
        long from = minDegradedFrom;
        if (failed != 0 && from == NONE) {
            from = bestRound + 1;
        }
        adopt(epoch, bestRound, bestWords, bestWidth, failed, from, nowNs);
        send(Wire.NEW_EPOCH, epoch, bestRound, failed, from, bestWords, bestWidth);
        return true;
    }

    private void adopt(long epoch, long round, long[] words, int width, long mask, long from, long nowNs) {
        acceptedEpoch = epoch;
        promisedEpoch = epoch;
        if (electionEpoch != 0 && electionEpoch < epoch) {
            electionEpoch = 0;
        }
        if (round == lastNormalRound + 1 && round < degradedFrom) {
            storeNormal(round, words, width);
        } else if (round != lastNormalRound && (mask & (1L << me)) == 0) {
            mask |= 1L << me; // this rank missed decisions: it cannot stay a member
        }
        if (mask != 0) {
            degrade(mask, from);
        }
        Arrays.fill(contribRound, -1L);
        roundTimerStartNs = -1;
        suspectedMask = 0;
        waitStartNs = nowNs;
        if (leaderOf(epoch) == me) {
            newEpochRound = round;
            newEpochWidth = width;
            if (words != newEpochWords) {
                System.arraycopy(words, 0, newEpochWords, 0, width);
            }
            newEpochFailedMask = mask;
            newEpochDegradedFrom = from;
            if (!degraded() && myRound == lastNormalRound + 1) {
                record(me, myRound, myWords, myWidth, nowNs);
            }
        } else if (!degraded() && myRound == lastNormalRound + 1) {
            send(Wire.CONTRIBUTION, acceptedEpoch, myRound, 0, 0, myWords, myWidth);
        }
    }

    // ------------------------------------------------------------------ state

    private void storeNormal(long round, long[] words, int width) {
        int s = (int) (round & (RING - 1));
        ringRound[s] = round;
        ringWidth[s] = width;
        System.arraycopy(words, 0, ringWords[s], 0, width);
        lastNormalRound = round;
    }

    private void degrade(long mask, long from) {
        failedMask |= mask;
        degradedFrom = Math.min(degradedFrom, from);
        if ((failedMask & (1L << me)) != 0) {
            left = true;
            degradedFrom = Math.min(degradedFrom, lastNormalRound + 1);
        }
    }

    private boolean degraded() {
        return degradedFrom != NONE;
    }

    private static int leaderOf(long epoch) {
        return (int) (epoch & 0xFF);
    }

    private void sendDegraded() {
        send(Wire.RESULT, acceptedEpoch, degradedFrom, failedMask, degradedFrom, myWords, 0);
    }

    private void send(byte type, long epoch, long round, long mask, long from, long[] words, int width) {
        int length = Wire.encode(frame, type, channel, config.groupId(), config.token(), me, epoch, round, mask, from,
            words, width);
        if (!outbox.send(frame, 0, length)) {
            sendsRefused++;
            refused = true;
        }
    }

    // ------------------------------------------------------------------ observation

    /** This rank. */
    public int rank() {
        return me;
    }

    /** The membership and timing this core runs with. */
    public AgreementConfig config() {
        return config;
    }

    /** The epoch this rank has joined ({@code term << 8 | coordinator}). */
    public long epoch() {
        return acceptedEpoch;
    }

    /** Ranks declared failed (0 while the group is whole). */
    public long failedMask() {
        return failedMask;
    }

    /** True once rounds are degraded: from then on every round aborts everything in flight. */
    public boolean isDegraded() {
        return degraded();
    }

    /** The first degraded round ({@link Long#MAX_VALUE} while the group is whole). */
    public long degradedFromRound() {
        return degradedFrom;
    }

    /** True if this rank was declared failed (or left): it must restart empty to rejoin. */
    public boolean hasLeft() {
        return left;
    }

    /** The last round decided normally (-1 before the first). */
    public long lastNormalRound() {
        return lastNormalRound;
    }

    /** Frames dropped: malformed, foreign (group, token or channel), rank out of range, stale epoch. */
    public long droppedMalformed() {
        return droppedMalformed;
    }

    public long droppedForeign() {
        return droppedForeign;
    }

    public long droppedBadRank() {
        return droppedBadRank;
    }

    public long droppedStale() {
        return droppedStale;
    }

    /** Frames the transport refused (back pressure, not connected): resent later. */
    public long sendsRefused() {
        return sendsRefused;
    }

    /** Elections this rank started. */
    public long elections() {
        return elections;
    }
}
