package io.hicache.testkit;

import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.RankAgreement;

import java.util.concurrent.TimeUnit;

/**
 * The conformance kit over {@link InProcessRankAgreement}: ranks on their own threads sharing one agreement. It has no
 * failure detection (a stalled rank is waited for), so the crash scenario does not apply; a rank that leaves degrades
 * the group at once.
 */
class InProcessRankAgreementConformanceTest extends RankAgreementConformanceSuite {

    @Override
    protected RankAgreementConformance kit() {
        return new RankAgreementConformance("InProcessRankAgreement", new RankAgreementConformance.Fixture() {
            @Override
            public RankAgreementConformance.Group open(int size) {
                InProcessRankAgreement agreement = new InProcessRankAgreement(size);
                return new RankAgreementConformance.Group() {
                    @Override
                    public RankAgreement agreement(int rank) {
                        return agreement;
                    }

                    @Override
                    public void close() {
                    }
                };
            }

            @Override
            public long stallNs() {
                return TimeUnit.MILLISECONDS.toNanos(300);
            }
        });
    }
}
