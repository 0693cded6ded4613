package io.hicache.core.internal;

import io.hicache.core.cp.RankAgreement;
import io.hicache.core.internal.jfr.AgreementRoundEvent;
import io.hicache.core.internal.jfr.HiCacheEvents;

import java.util.function.LongSupplier;

/**
 * One {@link RankAgreement} of a controller and the rounds it runs: every round carries one section per
 * {@link AgreedFifo} (backups, loads; both in one round when the cache has a single agreement), in a fixed order.
 * {@link #run()} opens a round whenever none is open (idle or not: no rank can skip a round), reads its result without
 * waiting, applies it section by section and, while results come at once and retire something, goes on (at most
 * {@value #MAX_ROUNDS_PER_RUN} rounds). Every call into the agreement is watched ({@link AgreementWatchdog}): one
 * that blocks past the bound is logged and counted.
 *
 * <p>Owned by the scheduler thread; allocation-free (one contribution and one result holder, reused).
 */
final class AgreementChannel {
    static final int MAX_ROUNDS_PER_RUN = 64;

    private final RankAgreement agreement;
    private final int rank;
    private final int cpSize;
    private final AgreedFifo<?>[] sections;
    private final RankAgreement.Contribution contribution;
    private final RankAgreement.Result result = new RankAgreement.Result();
    private final AgreementWatchdog.Watch watch;
    private final LongSupplier clock;
    private final boolean recordRounds;
    private long round;
    private boolean open;
    private long openedAtNs;
    /** The open round's JFR event, or null when none is open or the event is disabled. */
    private AgreementRoundEvent roundEvent;

    AgreementChannel(RankAgreement agreement, int rank, int cpSize, AgreementWatchdog.Watch watch, LongSupplier clock,
                     boolean recordRounds, AgreedFifo<?>... sections) {
        this.agreement = agreement;
        this.rank = rank;
        this.cpSize = cpSize;
        this.sections = sections;
        this.watch = watch;
        this.clock = clock;
        this.recordRounds = recordRounds;
        this.contribution = new RankAgreement.Contribution(sections.length * RankAgreement.SECTION_WORDS);
    }

    /** The agreement this channel runs rounds on. */
    RankAgreement agreement() {
        return agreement;
    }

    /**
     * How long the open round has waited for its result, on the controller's clock, or 0 when none is open.
     * Scheduler thread.
     */
    long openForNs() {
        return open ? clock.getAsLong() - openedAtNs : 0;
    }

    /** Rounds whose results this rank applied. */
    long roundsApplied() {
        return round;
    }

    /**
     * Opens a round if none is open, applies its result if it is in, and repeats while results come at once and
     * retire something.
     *
     * @return items retired over every section
     */
    int run() {
        int total = 0;
        for (int i = 0; i < MAX_ROUNDS_PER_RUN; i++) {
            if (!open) {
                for (int s = 0; s < sections.length; s++) {
                    sections[s].fill(contribution, s * RankAgreement.SECTION_WORDS);
                }
                if (recordRounds) {
                    roundEvent = HiCacheEvents.beginRound();
                }
                watch.enter();
                try {
                    agreement.contribute(rank, round, contribution);
                } finally {
                    watch.exit();
                }
                open = true;
                openedAtNs = clock.getAsLong();
            }
            boolean in;
            watch.enter();
            try {
                in = agreement.tryResult(rank, round, result);
            } finally {
                watch.exit();
            }
            if (!in) {
                return total;
            }
            open = false;
            long closed = round++;
            int retired = 0;
            for (int s = 0; s < sections.length; s++) {
                retired += sections[s].apply(result, s * RankAgreement.SECTION_WORDS);
            }
            if (recordRounds) {
                HiCacheEvents.endRound(roundEvent, cpSize, closed, retired, rank);
                roundEvent = null;
            }
            total += retired;
            if (retired == 0) {
                return total;
            }
        }
        return total;
    }
}
