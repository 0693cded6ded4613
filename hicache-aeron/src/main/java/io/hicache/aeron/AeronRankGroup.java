package io.hicache.aeron;

import io.aeron.Aeron;
import io.aeron.Publication;
import io.aeron.Subscription;
import io.aeron.logbuffer.FragmentHandler;
import io.aeron.logbuffer.Header;
import io.hicache.core.cp.RankAgreement;
import org.agrona.CloseHelper;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.NanoClock;

/**
 * One rank's membership of a CP group over Aeron: a publication and a subscription on one channel and stream that
 * every rank of the group shares ({@code aeron:ipc} on one host; a UDP multicast channel such as
 * {@code aeron:udp?endpoint=239.0.1.1:40456|interface=10.0.0.0/8} across hosts, for a trusted network only), and two
 * {@link AgreementCore}s, one for backups and one for loads. The transport is thin: frames go out with one
 * {@code offer} (a refused offer counts as a loss, which the protocol resends) and come in through a fragment
 * handler that hands them to the core named in the frame.
 *
 * <p>Threads: thread-safe. Every method takes this object's monitor, so the scheduler thread (which calls the
 * {@link RankAgreement} views) and an optional {@link org.agrona.concurrent.AgentRunner} running {@link #doWork}
 * (which keeps answering the group while the scheduler is busy elsewhere) may share it. If nothing runs
 * {@code doWork}, the views poll inside {@code tryResult}; the engine must then call {@code tryResult} or
 * {@link #doWork} at least every few retransmit intervals, or this rank looks dead to the group.
 *
 * <p>The Aeron client is the caller's: this class closes only its publication and subscription.
 */
public final class AeronRankGroup implements Agent, AutoCloseable {
    /** Channel of the backup agreement. */
    public static final int BACKUP_CHANNEL = 0;
    /** Channel of the load agreement. */
    public static final int LOAD_CHANNEL = 1;

    private static final int FRAGMENT_LIMIT = 64;

    private final AgreementConfig config;
    private final NanoClock clock;
    private final Publication publication;
    private final Subscription subscription;
    private final AgreementCore[] cores = new AgreementCore[2];
    private final FragmentHandler handler = this::onFragment;
    private final View backup;
    private final View load;
    private final RoundLatencies backupLatencies;
    private long droppedUnknownChannel;
    private boolean closed;

    /**
     * Joins the group on {@code channel}/{@code streamId} through {@code aeron}.
     *
     * @param latencySamples how many backup round latencies to keep for {@link #backupRoundLatencies()} (0: none)
     */
    public AeronRankGroup(Aeron aeron, String channel, int streamId, AgreementConfig config, NanoClock clock,
                          int latencySamples) {
        this.config = config;
        this.clock = clock;
        this.publication = aeron.addPublication(channel, streamId);
        this.subscription = aeron.addSubscription(channel, streamId);
        Outbox outbox = this::offer;
        cores[BACKUP_CHANNEL] = new AgreementCore(config, BACKUP_CHANNEL, outbox);
        cores[LOAD_CHANNEL] = new AgreementCore(config, LOAD_CHANNEL, outbox);
        this.backupLatencies = new RoundLatencies(latencySamples);
        this.load = new View(cores[LOAD_CHANNEL], new RoundLatencies(0));
        this.backup = new View(cores[BACKUP_CHANNEL], backupLatencies);
    }

    private boolean offer(DirectBuffer buffer, int offset, int length) {
        for (int attempt = 0; attempt < 4; attempt++) {
            long result = publication.offer(buffer, offset, length);
            if (result > 0) {
                return true;
            }
            if (result != Publication.ADMIN_ACTION) {
                return false; // back pressure or not connected: the protocol resends
            }
            // the log rotated to its next term: offer again at once
        }
        return false;
    }

    private void onFragment(DirectBuffer buffer, int offset, int length, Header header) {
        int ch = length >= Wire.HEADER ? Wire.channel(buffer, offset) : BACKUP_CHANNEL;
        if (ch != BACKUP_CHANNEL && ch != LOAD_CHANNEL) {
            droppedUnknownChannel++;
            return;
        }
        cores[ch].onMessage(buffer, offset, length, clock.nanoTime());
    }

    /**
     * The agreement for backups (pass it alone to {@code cpGroup} and it carries the loads' rounds too, or pass
     * {@link #loadAgreement()} beside it).
     */
    public RankAgreement backupAgreement() {
        return backup;
    }

    /** The agreement for loads. */
    public RankAgreement loadAgreement() {
        return load;
    }

    /** Polls inbound frames and runs the protocol's timers and resends. */
    @Override
    public synchronized int doWork() {
        if (closed) {
            return 0;
        }
        int work = pollInbound();
        long now = clock.nanoTime();
        work += cores[BACKUP_CHANNEL].doWork(now);
        work += cores[LOAD_CHANNEL].doWork(now);
        return work;
    }

    private int pollInbound() {
        int work = 0;
        int n;
        do {
            n = subscription.poll(handler, FRAGMENT_LIMIT);
            work += n;
        } while (n == FRAGMENT_LIMIT);
        return work;
    }

    @Override
    public String roleName() {
        return "hicache-cp-agreement-" + config.groupId() + "-" + config.rank();
    }

    /**
     * This rank leaves the group on both channels (call it when the controller stopped, e.g. after a sticky CUDA
     * error, or before an orderly shutdown): the others degrade at once instead of after the member timeout. Keep
     * {@link #doWork} running for a few retransmit intervals before {@link #close()} so the leave is resent.
     */
    public synchronized void leave() {
        long now = clock.nanoTime();
        cores[BACKUP_CHANNEL].leave(now);
        cores[LOAD_CHANNEL].leave(now);
    }

    /** True once any rank has been declared failed on either channel: backups abort until the group restarts. */
    public synchronized boolean degraded() {
        return cores[BACKUP_CHANNEL].isDegraded() || cores[LOAD_CHANNEL].isDegraded();
    }

    /** True if this rank has left the group (declared failed by the others, or {@link #leave()} called). */
    public synchronized boolean hasLeft() {
        return cores[BACKUP_CHANNEL].hasLeft() || cores[LOAD_CHANNEL].hasLeft();
    }

    /** Ranks declared failed, over both channels. */
    public synchronized long failedMask() {
        return cores[BACKUP_CHANNEL].failedMask() | cores[LOAD_CHANNEL].failedMask();
    }

    /** Frames dropped over both channels (malformed, foreign, rank out of range, stale epoch, unknown channel). */
    public synchronized long droppedFrames() {
        long n = droppedUnknownChannel;
        for (AgreementCore c : cores) {
            n += c.droppedMalformed() + c.droppedForeign() + c.droppedBadRank() + c.droppedStale();
        }
        return n;
    }

    /** Latencies of this rank's normal backup rounds, contribution to result, in the order they were decided. */
    public synchronized long[] backupRoundLatencies() {
        return backupLatencies.copy();
    }

    /** The backup channel's core, for inspection (owned by this group; call under its monitor). */
    AgreementCore backupCore() {
        return cores[BACKUP_CHANNEL];
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            CloseHelper.closeAll(subscription, publication);
        }
    }

    @Override
    public void onClose() {
        close();
    }

    /** Keeps the first {@code capacity} round latencies; allocation-free when recording. */
    static final class RoundLatencies {
        private final long[] samples;
        private int count;

        RoundLatencies(int capacity) {
            samples = new long[capacity];
        }

        void record(long ns) {
            if (count < samples.length) {
                samples[count++] = ns;
            }
        }

        long[] copy() {
            return java.util.Arrays.copyOf(samples, count);
        }
    }

    /** One channel as a {@link RankAgreement} for this process's rank. */
    private final class View implements RankAgreement {
        private final AgreementCore core;
        private final RoundLatencies latencies;
        private long contributedAtNs;
        private long openRound = -1;

        View(AgreementCore core, RoundLatencies latencies) {
            this.core = core;
            this.latencies = latencies;
        }

        @Override
        public int groupSize() {
            return config.groupSize();
        }

        @Override
        public void contribute(int rank, long round, Contribution contribution) {
            checkRank(rank);
            synchronized (AeronRankGroup.this) {
                if (closed) {
                    throw new IllegalStateException("agreement of rank " + rank + " is closed");
                }
                pollInbound(); // a rank waking from a stall reads what the group decided before it acts
                long now = clock.nanoTime();
                core.contribute(round, contribution, now);
                contributedAtNs = now;
                openRound = round;
            }
        }

        @Override
        public boolean tryResult(int rank, long round, Result out) {
            checkRank(rank);
            java.util.Objects.requireNonNull(out, "out");
            synchronized (AeronRankGroup.this) {
                if (!core.tryResult(round, out)) {
                    doWork();
                    if (!core.tryResult(round, out)) {
                        return false;
                    }
                }
                if (round == openRound) {
                    if (out.decided()) {
                        latencies.record(clock.nanoTime() - contributedAtNs); // degraded rounds are decided locally
                    }
                    openRound = -1;
                }
                return true;
            }
        }

        @Override
        public void leave(int rank) {
            checkRank(rank);
            synchronized (AeronRankGroup.this) {
                core.leave(clock.nanoTime());
            }
        }

        /** {@link AgreementConfig#failureDetectionNs()}. */
        @Override
        public long failureDetectionNs() {
            return config.failureDetectionNs();
        }

        private void checkRank(int rank) {
            if (rank != config.rank()) {
                throw new IllegalArgumentException("rank " + rank + " is not this process's rank " + config.rank());
            }
        }
    }
}
