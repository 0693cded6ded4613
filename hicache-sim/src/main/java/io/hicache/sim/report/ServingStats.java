package io.hicache.sim.report;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

import java.util.Arrays;

/**
 * What the clients of a timed run felt, and the deployment that served them; flattened into the result's
 * JSON object. Latencies are from arrival (TTFT, end-to-end, queueing) or between tokens (TPOT:
 * {@code (finish - first token) / (output tokens - 1)}, requests of one output token excluded);
 * throughputs are over the span from the first arrival to the last finish. Immutable and thread-safe.
 *
 * @param instances                  instances behind the router
 * @param router                     the router's rule
 * @param tp                         tensor-parallel GPUs per instance (per CP rank)
 * @param maxBatchTokens             token budget of a step
 * @param chunkTokens                largest prefill chunk
 * @param sloTtftMs                  TTFT objective
 * @param sloTpotMs                  TPOT objective
 * @param ttftMs                     time to first token
 * @param tpotMs                     time per output token
 * @param e2eMs                      arrival to last token
 * @param queueMs                    arrival to the first step that computes the request
 * @param throughputInputTokensPerS  prompt tokens per second
 * @param throughputOutputTokensPerS generated tokens per second
 * @param throughputRequestsPerS     finished requests per second
 * @param goodput                    share of requests meeting both objectives (SLO goodput)
 * @param goodputRequestsPerS        requests meeting both objectives per second
 * @param gpuBusyFraction            share of the simulated time the instances' GPUs computed
 * @param preemptions                requests preempted for lack of device pages (SGLang's retract)
 * @param admissionPageWaits         steps formed while the head of the queue waited for device pages: none free and
 *                                   none evictable (running requests hold them, or backups in flight lock them)
 * @param closedLoop                 whether a request that follows another (its trace says which) waited for it
 * @param followUpsWaited            requests that arrived after their trace time because the turn they follow had
 *                                   not finished then
 * @param steps                      forward steps run (all instances)
 * @param deviceForwards             steps run layer by layer on the simulated devices (they carried backups)
 * @param backupCopyNs               time the backup copies took on the host links (rank 0 of each instance)
 * @param backupHiddenFraction       share of that copy time hidden behind compute (1 - exposed / copy time)
 * @param loadOverlap                when host hits are loaded: {@code same-forward} or {@code previous-batch}
 * @param hostHitRequests            requests admitted with a host hit (loaded back)
 * @param hostHitPrefillMs           from the step that issued their load to the end of their prefill
 * @param ttftCdfMs                  TTFT at the percentiles 0, 1, ..., 100 (HTML only)
 * @param overload                   whether the instances kept up with the arrivals (see {@link Overload})
 * @param tierWeights                the routers' weight of a cached page by tier ({@code --tier-weights}:
 *                                   {@code device}, {@code host}, {@code l3}; 1 each by default)
 */
@JsonPropertyOrder({"instances", "router", "tp", "max_batch_tokens", "chunk_tokens", "slo_ttft_ms", "slo_tpot_ms",
        "ttft_ms", "tpot_ms", "e2e_ms", "queue_ms", "throughput_input_tokens_per_s", "throughput_output_tokens_per_s",
        "throughput_requests_per_s", "goodput", "goodput_requests_per_s", "gpu_busy_fraction", "preemptions",
        "admission_page_waits", "closed_loop", "follow_ups_waited", "steps",
        "device_forwards", "backup_copy_ns", "backup_hidden_fraction", "load_overlap", "host_hit_requests",
        "host_hit_prefill_ms", "overload", "tier_weights"})
public record ServingStats(
        @JsonProperty("instances") int instances,
        @JsonProperty("router") String router,
        @JsonProperty("tp") int tp,
        @JsonProperty("max_batch_tokens") int maxBatchTokens,
        @JsonProperty("chunk_tokens") int chunkTokens,
        @JsonProperty("slo_ttft_ms") double sloTtftMs,
        @JsonProperty("slo_tpot_ms") double sloTpotMs,
        @JsonProperty("ttft_ms") Latency ttftMs,
        @JsonProperty("tpot_ms") Latency tpotMs,
        @JsonProperty("e2e_ms") Latency e2eMs,
        @JsonProperty("queue_ms") Latency queueMs,
        @JsonProperty("throughput_input_tokens_per_s") double throughputInputTokensPerS,
        @JsonProperty("throughput_output_tokens_per_s") double throughputOutputTokensPerS,
        @JsonProperty("throughput_requests_per_s") double throughputRequestsPerS,
        @JsonProperty("goodput") double goodput,
        @JsonProperty("goodput_requests_per_s") double goodputRequestsPerS,
        @JsonProperty("gpu_busy_fraction") double gpuBusyFraction,
        @JsonProperty("preemptions") long preemptions,
        @JsonProperty("admission_page_waits") long admissionPageWaits,
        @JsonProperty("closed_loop") boolean closedLoop,
        @JsonProperty("follow_ups_waited") long followUpsWaited,
        @JsonProperty("steps") long steps,
        @JsonProperty("device_forwards") long deviceForwards,
        @JsonProperty("backup_copy_ns") long backupCopyNs,
        @JsonProperty("backup_hidden_fraction") double backupHiddenFraction,
        @JsonProperty("load_overlap") String loadOverlap,
        @JsonProperty("host_hit_requests") long hostHitRequests,
        @JsonProperty("host_hit_prefill_ms") Latency hostHitPrefillMs,
        @JsonIgnore double[] ttftCdfMs,
        @JsonProperty("overload") Overload overload,
        @JsonProperty("tier_weights") java.util.Map<String, Double> tierWeights) {

    /** Outcomes of routers that count every tier as 1. */
    public ServingStats(int instances, String router, int tp, int maxBatchTokens, int chunkTokens, double sloTtftMs,
                        double sloTpotMs, Latency ttftMs, Latency tpotMs, Latency e2eMs, Latency queueMs,
                        double throughputInputTokensPerS, double throughputOutputTokensPerS,
                        double throughputRequestsPerS, double goodput, double goodputRequestsPerS,
                        double gpuBusyFraction, long preemptions, long admissionPageWaits, boolean closedLoop,
                        long followUpsWaited, long steps, long deviceForwards, long backupCopyNs,
                        double backupHiddenFraction, String loadOverlap, long hostHitRequests, Latency hostHitPrefillMs,
                        double[] ttftCdfMs, Overload overload) {
        this(instances, router, tp, maxBatchTokens, chunkTokens, sloTtftMs, sloTpotMs, ttftMs, tpotMs, e2eMs, queueMs,
                throughputInputTokensPerS, throughputOutputTokensPerS, throughputRequestsPerS, goodput,
                goodputRequestsPerS, gpuBusyFraction, preemptions, admissionPageWaits, closedLoop, followUpsWaited,
                steps, deviceForwards, backupCopyNs, backupHiddenFraction, loadOverlap, hostHitRequests,
                hostHitPrefillMs, ttftCdfMs, overload, null);
    }

    /** Outcomes whose overload was not judged ({@link Overload#NONE}). */
    public ServingStats(int instances, String router, int tp, int maxBatchTokens, int chunkTokens, double sloTtftMs,
                        double sloTpotMs, Latency ttftMs, Latency tpotMs, Latency e2eMs, Latency queueMs,
                        double throughputInputTokensPerS, double throughputOutputTokensPerS,
                        double throughputRequestsPerS, double goodput, double goodputRequestsPerS,
                        double gpuBusyFraction, long preemptions, long admissionPageWaits, boolean closedLoop,
                        long followUpsWaited, long steps, long deviceForwards, long backupCopyNs,
                        double backupHiddenFraction, String loadOverlap, long hostHitRequests, Latency hostHitPrefillMs,
                        double[] ttftCdfMs) {
        this(instances, router, tp, maxBatchTokens, chunkTokens, sloTtftMs, sloTpotMs, ttftMs, tpotMs, e2eMs, queueMs,
                throughputInputTokensPerS, throughputOutputTokensPerS, throughputRequestsPerS, goodput,
                goodputRequestsPerS, gpuBusyFraction, preemptions, admissionPageWaits, closedLoop, followUpsWaited,
                steps, deviceForwards, backupCopyNs, backupHiddenFraction, loadOverlap, hostHitRequests,
                hostHitPrefillMs, ttftCdfMs, Overload.NONE);
    }

    /** Defaults a missing overload verdict to {@link Overload#NONE}, missing tier weights to 1 each. */
    public ServingStats {
        overload = overload == null ? Overload.NONE : overload;
        tierWeights = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(
                tierWeights == null ? io.hicache.sim.TierWeights.UNIT.asMap() : tierWeights));
    }

    /**
     * Latency percentiles in ms (nearest rank) and the mean.
     *
     * @param p50  median
     * @param p90  90th percentile
     * @param p99  99th percentile
     * @param max  maximum
     * @param mean mean
     */
    @JsonPropertyOrder({"p50", "p90", "p99", "max", "mean"})
    public record Latency(@JsonProperty("p50") double p50, @JsonProperty("p90") double p90,
                          @JsonProperty("p99") double p99, @JsonProperty("max") double max,
                          @JsonProperty("mean") double mean) {
        /** No samples. */
        public static final Latency NONE = new Latency(0, 0, 0, 0, 0);

        /** Percentiles of the first {@code count} values (ns) of {@code samples}, sorted in place unless {@code sorted}. */
        public static Latency ofNs(long[] samples, int count, boolean sorted) {
            if (count == 0) {
                return NONE;
            }
            if (!sorted) {
                Arrays.sort(samples, 0, count);
            }
            double sum = 0;
            for (int i = 0; i < count; i++) {
                sum += samples[i];
            }
            return new Latency(rank(samples, count, 0.50), rank(samples, count, 0.90), rank(samples, count, 0.99),
                    samples[count - 1] / 1e6, sum / count / 1e6);
        }

        private static double rank(long[] sorted, int count, double q) {
            int r = (int) Math.ceil(q * count);
            return sorted[Math.max(0, r - 1)] / 1e6;
        }
    }

    /** The values (ns) at percentiles 0..100 of the first {@code count} of {@code sorted}, in ms. */
    public static double[] cdf(long[] sorted, int count) {
        if (count == 0) {
            return new double[0];
        }
        double[] out = new double[101];
        for (int p = 0; p <= 100; p++) {
            int r = (int) Math.ceil(p / 100.0 * count);
            out[p] = sorted[Math.max(0, Math.min(count, r) - 1)] / 1e6;
        }
        return out;
    }
}
