package io.hicache.aeron;

import io.hicache.core.cp.RankAgreement;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.ArrayDeque;

/**
 * A group of {@link AgreementCore}s in one thread over in-memory queues and a manual clock, each rank seen as a
 * {@link RankAgreement} (backup channel, with a second group for loads): the protocol without Aeron, for driving real
 * controllers deterministically. A dead rank neither sends nor receives.
 */
final class InMemoryGroup {
    final int n;
    final AgreementCore[] cores;
    final boolean[] dead;
    @SuppressWarnings("unchecked")
    private final ArrayDeque<byte[]>[] inbox;
    long nowNs;
    InMemoryGroup loads;

    InMemoryGroup(int n, int channel, long memberTimeoutNs, long retransmitNs) {
        this.n = n;
        this.cores = new AgreementCore[n];
        this.dead = new boolean[n];
        @SuppressWarnings("unchecked")
        ArrayDeque<byte[]>[] in = (ArrayDeque<byte[]>[]) new ArrayDeque<?>[n];
        this.inbox = in;
        for (int r = 0; r < n; r++) {
            int from = r;
            inbox[r] = new ArrayDeque<>();
            cores[r] = new AgreementCore(new AgreementConfig(7, 77, n, r, memberTimeoutNs, retransmitNs), channel,
                (buf, off, len) -> {
                    if (dead[from]) {
                        return false;
                    }
                    for (int to = 0; to < n; to++) {
                        if (to != from && !dead[to]) {
                            byte[] b = new byte[len];
                            buf.getBytes(off, b);
                            inbox[to].add(b);
                        }
                    }
                    return true;
                });
        }
    }

    /** Rank {@code rank}'s view of the load group's agreement. */
    RankAgreement loadAgreement(int rank) {
        return loads.agreement(rank);
    }

    InMemoryGroup withLoads(InMemoryGroup loads) {
        this.loads = loads;
        return this;
    }

    private void pump(int rank) {
        byte[] b;
        while ((b = inbox[rank].poll()) != null) {
            cores[rank].onMessage(new UnsafeBuffer(b), 0, b.length, nowNs);
        }
        cores[rank].doWork(nowNs);
    }

    RankAgreement agreement(int rank) {
        return new RankAgreement() {
            @Override
            public int groupSize() {
                return n;
            }

            @Override
            public void contribute(int r, long round, Contribution contribution) {
                cores[rank].contribute(round, contribution, nowNs);
            }

            @Override
            public boolean tryResult(int r, long round, Result out) {
                pump(rank);
                return cores[rank].tryResult(round, out);
            }

            @Override
            public void leave(int r) {
                cores[rank].leave(nowNs);
            }

            @Override
            public long failureDetectionNs() {
                return cores[rank].config().failureDetectionNs();
            }
        };
    }
}
