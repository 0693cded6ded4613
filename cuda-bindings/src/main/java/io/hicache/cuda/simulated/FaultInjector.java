package io.hicache.cuda.simulated;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;

import java.util.Objects;
import java.util.SplittableRandom;

import org.agrona.collections.Long2LongHashMap;

/**
 * The simulated device's faults: the n-th work operation failing, copies a predicate selects failing, and
 * random copy failures and extra latency drawn from the seeded generator. Each decision is a pure function of
 * the seed and the call sequence. Guarded by the runtime's lock; allocation-free on the decision paths.
 */
final class FaultInjector {
    private final SimulatedCudaConfig config;
    private final SplittableRandom random;
    private final Long2LongHashMap failAtWorkOp = new Long2LongHashMap(0L);
    private SimulatedCudaRuntime.CopyFaultPredicate copyFaultPredicate;
    private int copyFaultCode;
    private double copyFailureProbability;
    private int randomFailureCode;
    private double delayProbability;
    private long maxExtraDelayNs;

    FaultInjector(SimulatedCudaConfig config) {
        this.config = config;
        this.random = new SplittableRandom(config.seed());
        this.copyFailureProbability = config.copyFailureProbability();
        this.randomFailureCode = config.randomFailureError().code();
        this.delayProbability = config.delayProbability();
        this.maxExtraDelayNs = config.maxExtraDelayNs();
    }

    /** Fails work op {@code workOpNumber}, which must come after {@code workOpsIssued}. */
    void failWorkOp(long workOpNumber, CudaError error, long workOpsIssued) {
        requireFailureCode(error);
        if (workOpNumber <= workOpsIssued) {
            throw new IllegalArgumentException("failWorkOp(" + workOpNumber + "): work op already issued; next is "
                    + (workOpsIssued + 1));
        }
        failAtWorkOp.put(workOpNumber, error.code());
    }

    void failCopiesMatching(SimulatedCudaRuntime.CopyFaultPredicate predicate, CudaError error) {
        if (predicate != null) {
            requireFailureCode(error);
            copyFaultCode = error.code();
        }
        copyFaultPredicate = predicate;
    }

    void setRandomFaults(double copyFailureProbability, CudaError error, double delayProbability,
                         long maxExtraDelayNs) {
        SimulatedCudaConfig checked = config.toBuilder().copyFailureProbability(copyFailureProbability, error)
                .delayedCompletions(delayProbability, maxExtraDelayNs).build();
        this.copyFailureProbability = checked.copyFailureProbability();
        this.randomFailureCode = checked.randomFailureError().code();
        this.delayProbability = checked.delayProbability();
        this.maxExtraDelayNs = checked.maxExtraDelayNs();
    }

    /** The code work op {@code workOpNumber} fails with (0: none), consuming a {@link #failWorkOp} entry. */
    int workOpFault(long workOpNumber) {
        return (int) failAtWorkOp.remove(workOpNumber);
    }

    /**
     * The code the validated copy {@code op} fails with, given the work-op fault {@code failCode} already
     * decided: the predicate's, then a random failure. Draws from the generator whenever random failures are on.
     */
    int copyFault(SimOp op, int failCode) {
        int code = failCode;
        if (code == 0 && copyFaultPredicate != null) {
            CopyKind kind = CallChecks.kindOf(op.direction);
            for (int i = 0; i < op.segCount; i++) {
                if (copyFaultPredicate.test(op.dstAddress(i), op.srcAddress(i), op.width[i] * op.height[i], kind)) {
                    code = copyFaultCode;
                    break;
                }
            }
        }
        if (copyFailureProbability > 0 && random.nextDouble() < copyFailureProbability && code == 0) {
            code = randomFailureCode;
        }
        return code;
    }

    /** {@code durationNs} plus any random extra latency. */
    long delayed(long durationNs) {
        if (delayProbability > 0 && random.nextDouble() < delayProbability) {
            return VirtualClockDriver.saturatingAdd(durationNs, random.nextLong(maxExtraDelayNs + 1));
        }
        return durationNs;
    }

    private static void requireFailureCode(CudaError error) {
        Objects.requireNonNull(error, "error");
        if (error == CudaError.SUCCESS || error == CudaError.NOT_READY || error == CudaError.UNKNOWN_CODE) {
            throw new IllegalArgumentException("a fault needs a failure code, was " + error);
        }
    }
}
