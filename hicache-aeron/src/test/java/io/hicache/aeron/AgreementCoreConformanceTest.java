package io.hicache.aeron;

import io.hicache.core.cp.RankAgreement;
import io.hicache.testkit.RankAgreementConformance;
import io.hicache.testkit.RankAgreementConformanceSuite;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * The conformance kit over the protocol core {@link AgreementCore} (the state machine {@link AeronRankGroup} runs) on
 * an in-memory network that can lose frames and cut a rank off: each rank on its own thread, its core guarded by its
 * own monitor as the Aeron group's is, frames carried by lock-free queues. This is where the lost-message scenario
 * runs (Aeron's IPC loses nothing).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AgreementCoreConformanceTest extends RankAgreementConformanceSuite {
    private static final long MEMBER_TIMEOUT_NS = TimeUnit.MILLISECONDS.toNanos(750);
    private static final long RETRANSMIT_NS = TimeUnit.MILLISECONDS.toNanos(20);

    /** Ranks of one group over in-memory queues. */
    private static final class Network implements RankAgreementConformance.Group {
        final AgreementCore[] cores;
        final java.util.List<ConcurrentLinkedQueue<byte[]>> inbox = new java.util.ArrayList<>();
        final boolean[] dead;
        volatile double loss;

        Network(int n) {
            cores = new AgreementCore[n];
            dead = new boolean[n];
            for (int r = 0; r < n; r++) {
                inbox.add(new ConcurrentLinkedQueue<>());
            }
            for (int r = 0; r < n; r++) {
                int from = r;
                cores[r] = new AgreementCore(new AgreementConfig(9, 99, n, r, MEMBER_TIMEOUT_NS, RETRANSMIT_NS), 0,
                    (buf, off, len) -> {
                        synchronized (this) {
                            if (dead[from]) {
                                return false;
                            }
                        }
                        for (int to = 0; to < n; to++) {
                            if (to != from && ThreadLocalRandom.current().nextDouble() >= loss) {
                                byte[] b = new byte[len];
                                buf.getBytes(off, b);
                                inbox.get(to).add(b);
                            }
                        }
                        return true;
                    });
            }
        }

        /** Rank {@code r}'s inbound frames and timers (under its core's monitor). */
        private void pump(int r) {
            byte[] b;
            long now = System.nanoTime();
            boolean cut;
            synchronized (this) {
                cut = dead[r];
            }
            while ((b = inbox.get(r).poll()) != null) {
                if (!cut) {
                    cores[r].onMessage(new UnsafeBuffer(b), 0, b.length, now);
                }
            }
            if (!cut) {
                cores[r].doWork(now);
            }
        }

        @Override
        public RankAgreement agreement(int rank) {
            AgreementCore core = cores[rank];
            return new RankAgreement() {
                @Override
                public int groupSize() {
                    return cores.length;
                }

                @Override
                public void contribute(int r, long round, Contribution contribution) {
                    synchronized (core) {
                        pump(rank);
                        core.contribute(round, contribution, System.nanoTime());
                    }
                }

                @Override
                public boolean tryResult(int r, long round, Result out) {
                    synchronized (core) {
                        if (core.tryResult(round, out)) {
                            return true;
                        }
                        pump(rank);
                        return core.tryResult(round, out);
                    }
                }

                @Override
                public void leave(int r) {
                    synchronized (core) {
                        core.leave(System.nanoTime());
                    }
                }

                @Override
                public long failureDetectionNs() {
                    return core.config().failureDetectionNs();
                }
            };
        }

        @Override
        public void idle(int rank) {
            synchronized (cores[rank]) {
                pump(rank);
            }
        }

        @Override
        public synchronized boolean kill(int rank) {
            dead[rank] = true;
            return true;
        }

        @Override
        public boolean loseMessages(double probability) {
            loss = probability;
            return true;
        }

        @Override
        public void close() {
        }
    }

    @Override
    protected RankAgreementConformance kit() {
        return new RankAgreementConformance("AgreementCore over a lossy in-memory network",
            new RankAgreementConformance.Fixture() {
                @Override
                public RankAgreementConformance.Group open(int size) {
                    return new Network(size);
                }

                @Override
                public long stallNs() {
                    return 2 * (2 * MEMBER_TIMEOUT_NS + 2 * RETRANSMIT_NS) + 2 * MEMBER_TIMEOUT_NS;
                }
            });
    }
}
