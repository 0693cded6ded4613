package io.hicache.sim;

import io.hicache.sim.trace.Request;

/**
 * Hit counters of a replay, shared by every engine so hit ratios mean the same everywhere. Owned by
 * the engine's thread; not thread-safe; {@link #record} allocates nothing.
 *
 * <ul>
 *   <li>{@code block_hit_ratio} = leading trace blocks fully matched (device or host) / blocks.</li>
 *   <li>{@code token_hit_ratio} = prompt tokens served from cache / prompt tokens, where a request's
 *   served tokens are {@code min(hitTokens * blockSize / blockTokens, inputLength)}: exact when
 *   {@code blockTokens} equals the format's block size, whole blocks when it is 1 (the
 *   token-weighted figure of {@code conversation_lru_baseline.csv}).</li>
 *   <li>Hit token counts are in simulated tokens, like capacities.</li>
 * </ul>
 */
public final class HitStats {
    private final int blockTokens;
    private long requests;
    private long inputTokens;
    private long simulatedTokens;
    private long blocks;
    private long hitBlocks;
    private long hitPromptTokens;
    private long deviceHitTokens;
    private long hostHitTokens;

    /** @param blockTokens simulated tokens per trace block */
    public HitStats(int blockTokens) {
        this.blockTokens = blockTokens;
    }

    /**
     * Counts one request.
     *
     * @param r               the request
     * @param tokenCount      its simulated token count
     * @param deviceHitTokens leading simulated tokens found on the device
     * @param hostHitTokens   simulated tokens found on the host right after the device hit
     */
    public void record(Request r, int tokenCount, int deviceHitTokens, int hostHitTokens) {
        int hit = deviceHitTokens + hostHitTokens;
        if (hit > tokenCount || deviceHitTokens < 0 || hostHitTokens < 0) {
            throw new IllegalArgumentException("hit " + deviceHitTokens + "+" + hostHitTokens
                    + " tokens outside request " + r.index() + " of " + tokenCount + " tokens");
        }
        requests++;
        inputTokens += r.inputLength();
        simulatedTokens += tokenCount;
        blocks += r.blockCount();
        hitBlocks += hit == tokenCount ? r.blockCount() : hit / blockTokens;
        hitPromptTokens += Math.min((long) hit * r.blockSize() / blockTokens, r.inputLength());
        this.deviceHitTokens += deviceHitTokens;
        this.hostHitTokens += hostHitTokens;
    }

    /** Adds the counts of {@code other} (same block tokens) to these. */
    public void add(HitStats other) {
        if (other.blockTokens != blockTokens) {
            throw new IllegalArgumentException("cannot add hit counts of " + other.blockTokens + " block tokens to "
                    + blockTokens);
        }
        requests += other.requests;
        inputTokens += other.inputTokens;
        simulatedTokens += other.simulatedTokens;
        blocks += other.blocks;
        hitBlocks += other.hitBlocks;
        hitPromptTokens += other.hitPromptTokens;
        deviceHitTokens += other.deviceHitTokens;
        hostHitTokens += other.hostHitTokens;
    }

    /** Requests counted. */
    public long requests() {
        return requests;
    }

    /** Sum of input lengths (prompt tokens). */
    public long inputTokens() {
        return inputTokens;
    }

    /** Sum of simulated token counts. */
    public long simulatedTokens() {
        return simulatedTokens;
    }

    /** Trace blocks. */
    public long blocks() {
        return blocks;
    }

    /** Leading blocks fully matched. */
    public long hitBlocks() {
        return hitBlocks;
    }

    /** Simulated tokens hit on the device. */
    public long deviceHitTokens() {
        return deviceHitTokens;
    }

    /** Simulated tokens hit on the host. */
    public long hostHitTokens() {
        return hostHitTokens;
    }

    /** Simulated tokens that had to be computed (not hit). */
    public long missTokens() {
        return simulatedTokens - deviceHitTokens - hostHitTokens;
    }

    /** Leading blocks fully matched / blocks; 0 when there are no blocks. */
    public double blockHitRatio() {
        return blocks == 0 ? 0 : (double) hitBlocks / blocks;
    }

    /** Prompt tokens served from cache / prompt tokens; 0 when there are none. */
    public double tokenHitRatio() {
        return inputTokens == 0 ? 0 : (double) hitPromptTokens / inputTokens;
    }
}
