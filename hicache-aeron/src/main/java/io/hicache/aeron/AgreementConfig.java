package io.hicache.aeron;

/**
 * Membership and timing of one rank's agreement.
 *
 * @param groupId              identifies the CP group; frames of another group are dropped
 * @param token                per-group secret from configuration; frames without it are dropped. It keeps stray or
 *                             misconfigured processes out; it is not cryptographic authentication (see the docs: UDP
 *                             across hosts is for a trusted network)
 * @param groupSize            ranks in the group, 1 to {@value #MAX_RANKS}
 * @param rank                 this rank, 0 to groupSize-1
 * @param memberTimeoutNs      how long the coordinator waits for a rank's contribution to a round before declaring
 *                             it failed; followers suspect a silent coordinator after twice this plus two
 *                             retransmit intervals. Must exceed the longest pause a healthy rank takes between
 *                             polls (GC, JIT), or healthy ranks are failed
 * @param retransmitIntervalNs how often unanswered frames are sent again; well below {@code memberTimeoutNs}
 */
public record AgreementConfig(long groupId, long token, int groupSize, int rank, long memberTimeoutNs,
                              long retransmitIntervalNs) {
    /** Ranks fit a 64-bit mask. */
    public static final int MAX_RANKS = 64;

    public AgreementConfig {
        if (groupSize < 1 || groupSize > MAX_RANKS) {
            throw new IllegalArgumentException("groupSize " + groupSize + " outside [1, " + MAX_RANKS + "]");
        }
        if (rank < 0 || rank >= groupSize) {
            throw new IllegalArgumentException("rank " + rank + " outside [0, " + (groupSize - 1) + "]");
        }
        if (retransmitIntervalNs <= 0) {
            throw new IllegalArgumentException("retransmitIntervalNs " + retransmitIntervalNs + " must be positive");
        }
        if (memberTimeoutNs < 4 * retransmitIntervalNs) {
            throw new IllegalArgumentException("memberTimeoutNs " + memberTimeoutNs
                + " must be at least 4 x retransmitIntervalNs (" + retransmitIntervalNs + ")");
        }
    }

    /** How long a follower waits for the coordinator before suspecting it. */
    public long coordinatorTimeoutNs() {
        return 2 * memberTimeoutNs + 2 * retransmitIntervalNs;
    }

    /**
     * The bound within which a silent rank is declared failed and the rounds it holds up are degraded on every rank
     * that runs ({@link io.hicache.core.cp.RankAgreement#failureDetectionNs()}): a chain of at most {@code groupSize}
     * suspicions, each a coordinator timeout followed by an election of at most a member timeout and a resend.
     */
    public long failureDetectionNs() {
        return groupSize * (coordinatorTimeoutNs() + memberTimeoutNs + retransmitIntervalNs);
    }
}
