package io.hicache.sim.report;

import io.hicache.sim.OptionSpellings;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.annotation.JsonUnwrapped;
import io.hicache.sim.HitStats;
import io.hicache.sim.SimConfig;

import java.util.Arrays;
import java.util.List;

/**
 * What one replay produced, with the configuration that produced it; serialised by
 * {@link JsonReport} with the snake_case names below. Immutable and thread-safe.
 *
 * <p>JSON fields: {@code requests, input_tokens, simulated_tokens, blocks, block_hit_ratio,
 * token_hit_ratio, device_hit_tokens, host_hit_tokens, prefill_tokens_computed, backups {reserved,
 * committed, aborted, no_room, fallback}, backups_skipped {no_room, below_hit_threshold, ancestor_skipped,
 * write_back, not_on_device} (nodes the write policy passed over, by reason), d2h_bytes, exposed_backup_ns, commit_latency_ns {p50, p99,
 * max}, host_pool_peak_utilization (finite pools only), device_peak_tokens, host_peak_tokens (see
 * {@link Occupancy}), simulated_seconds, wall_seconds} and the configuration {@code
 * trace, model, gpu, backup_mode, write_policy, eviction, page_size, block_tokens,
 * device_capacity_tokens, host_capacity_tokens} (a number, or the string {@code "inf"} when
 * unlimited; 0 = no host tier) {@code , cp, lanes, draft_layers, cache_only, seed, time_scale}.
 * Token counts other than {@code input_tokens} are simulated tokens (see {@link HitStats}).
 *
 * @param config                  the configuration (flattened into the JSON object)
 * @param trace                   the trace's name as given
 * @param requests                requests replayed
 * @param inputTokens             sum of input lengths (prompt tokens)
 * @param simulatedTokens         sum of simulated (expanded) token counts
 * @param blocks                  trace blocks
 * @param blockHitRatio           leading blocks fully matched / blocks
 * @param tokenHitRatio           prompt tokens served from cache / prompt tokens
 * @param deviceHitTokens         simulated tokens hit on the device
 * @param hostHitTokens           simulated tokens hit on the host
 * @param prefillTokensComputed   simulated tokens prefilled (not hit)
 * @param backups                 backup outcomes
 * @param d2hBytes                bytes copied device to host
 * @param exposedBackupNs         backup time not hidden behind compute
 * @param commitLatencyNs         reserve-to-commit latency percentiles
 * @param hostPoolPeakUtilization peak fraction of the host pool in use (0 with no or unlimited host)
 * @param simulatedSeconds        simulated time span
 * @param wallSeconds             wall-clock time of the run
 * @param timeline                per-layer timeline of one forward (HTML only; empty when not recorded)
 * @param serving                 client-side outcomes and the deployment of a timed run (its fields are
 *                                flattened into the JSON object, see {@link ServingStats}); null for cache-only
 * @param storage                 the storage tier's figures (flattened after the others), or null without one
 * @param occupancy               what each tier held at its peak (flattened)
 */
@JsonPropertyOrder({"trace", "model", "gpu", "backup_mode", "write_policy", "eviction", "page_size", "block_tokens",
        "device_capacity_tokens", "host_capacity_tokens", "cp", "lanes", "draft_layers", "cache_only", "seed",
        "time_scale", "requests", "input_tokens", "simulated_tokens", "blocks", "block_hit_ratio", "token_hit_ratio",
        "device_hit_tokens", "host_hit_tokens", "prefill_tokens_computed", "backups", "backups_skipped", "d2h_bytes",
        "exposed_backup_ns", "commit_latency_ns", "host_pool_peak_utilization", "device_peak_tokens",
        "host_peak_tokens", "simulated_seconds",
        "wall_seconds"})
public record SimResult(
        @JsonIgnore SimConfig config,
        @JsonProperty("trace") String trace,
        @JsonProperty("requests") long requests,
        @JsonProperty("input_tokens") long inputTokens,
        @JsonProperty("simulated_tokens") long simulatedTokens,
        @JsonProperty("blocks") long blocks,
        @JsonProperty("block_hit_ratio") double blockHitRatio,
        @JsonProperty("token_hit_ratio") double tokenHitRatio,
        @JsonProperty("device_hit_tokens") long deviceHitTokens,
        @JsonProperty("host_hit_tokens") long hostHitTokens,
        @JsonProperty("prefill_tokens_computed") long prefillTokensComputed,
        @JsonProperty("backups") Backups backups,
        @JsonProperty("d2h_bytes") long d2hBytes,
        @JsonProperty("exposed_backup_ns") long exposedBackupNs,
        @JsonProperty("commit_latency_ns") CommitLatency commitLatencyNs,
        @JsonProperty("host_pool_peak_utilization") double hostPoolPeakUtilization,
        @JsonProperty("simulated_seconds") double simulatedSeconds,
        @JsonProperty("wall_seconds") double wallSeconds,
        @JsonIgnore List<TimelineSegment> timeline,
        @JsonUnwrapped ServingStats serving,
        @JsonIgnore StorageResult storage,
        @JsonUnwrapped Occupancy occupancy) {

    /**
     * The most of each tier a run held at once, per instance (the largest instance), in simulated tokens: what the
     * working set took. {@code device_peak_tokens} below the device capacity means the device never had to evict;
     * {@code host_peak_tokens} of an unlimited pool is the size beyond which a larger pool changes nothing.
     *
     * @param devicePeakTokens device KV in use at the peak (requests' pages and the tree's)
     * @param hostPeakTokens   host KV held at the peak (0 without a host tier)
     */
    @JsonPropertyOrder({"device_peak_tokens", "host_peak_tokens"})
    public record Occupancy(@JsonProperty("device_peak_tokens") long devicePeakTokens,
                            @JsonProperty("host_peak_tokens") long hostPeakTokens) {
        /** Not measured. */
        public static final Occupancy NONE = new Occupancy(0, 0);
    }

    /** A result with its storage tier's figures, occupancy not measured. */
    public SimResult(SimConfig config, String trace, long requests, long inputTokens, long simulatedTokens, long blocks,
                     double blockHitRatio, double tokenHitRatio, long deviceHitTokens, long hostHitTokens,
                     long prefillTokensComputed, Backups backups, long d2hBytes, long exposedBackupNs,
                     CommitLatency commitLatencyNs, double hostPoolPeakUtilization, double simulatedSeconds,
                     double wallSeconds, List<TimelineSegment> timeline, ServingStats serving, StorageResult storage) {
        this(config, trace, requests, inputTokens, simulatedTokens, blocks, blockHitRatio, tokenHitRatio,
                deviceHitTokens, hostHitTokens, prefillTokensComputed, backups, d2hBytes, exposedBackupNs,
                commitLatencyNs, hostPoolPeakUtilization, simulatedSeconds, wallSeconds, timeline, serving, storage,
                Occupancy.NONE);
    }

    /** A result without a storage tier. */
    public SimResult(SimConfig config, String trace, long requests, long inputTokens, long simulatedTokens, long blocks,
                     double blockHitRatio, double tokenHitRatio, long deviceHitTokens, long hostHitTokens,
                     long prefillTokensComputed, Backups backups, long d2hBytes, long exposedBackupNs,
                     CommitLatency commitLatencyNs, double hostPoolPeakUtilization, double simulatedSeconds,
                     double wallSeconds, List<TimelineSegment> timeline, ServingStats serving) {
        this(config, trace, requests, inputTokens, simulatedTokens, blocks, blockHitRatio, tokenHitRatio,
                deviceHitTokens, hostHitTokens, prefillTokensComputed, backups, d2hBytes, exposedBackupNs,
                commitLatencyNs, hostPoolPeakUtilization, simulatedSeconds, wallSeconds, timeline, serving, null);
    }

    /** The storage tier's fields (see {@link StorageResult}), after the others; none without a storage tier. */
    @com.fasterxml.jackson.annotation.JsonAnyGetter
    java.util.Map<String, Object> storageFields() {
        return storage == null ? java.util.Map.of() : storage.fields();
    }

    /** The same result with the storage tier's figures (null: none). */
    public SimResult withStorage(StorageResult s) {
        return new SimResult(config, trace, requests, inputTokens, simulatedTokens, blocks, blockHitRatio,
                tokenHitRatio, deviceHitTokens, hostHitTokens, prefillTokensComputed, backups, d2hBytes,
                exposedBackupNs, commitLatencyNs, hostPoolPeakUtilization, simulatedSeconds, wallSeconds, timeline,
                serving, s, occupancy);
    }

    /** The result of an engine that does not model serving (no {@link ServingStats}). */
    public SimResult(SimConfig config, String trace, long requests, long inputTokens, long simulatedTokens, long blocks,
                     double blockHitRatio, double tokenHitRatio, long deviceHitTokens, long hostHitTokens,
                     long prefillTokensComputed, Backups backups, long d2hBytes, long exposedBackupNs,
                     CommitLatency commitLatencyNs, double hostPoolPeakUtilization, double simulatedSeconds,
                     double wallSeconds, List<TimelineSegment> timeline) {
        this(config, trace, requests, inputTokens, simulatedTokens, blocks, blockHitRatio, tokenHitRatio,
                deviceHitTokens, hostHitTokens, prefillTokensComputed, backups, d2hBytes, exposedBackupNs,
                commitLatencyNs, hostPoolPeakUtilization, simulatedSeconds, wallSeconds, timeline, null);
    }

    /** Copies the timeline. */
    public SimResult {
        timeline = timeline == null ? List.of() : List.copyOf(timeline);
        occupancy = occupancy == null ? Occupancy.NONE : occupancy;
    }

    /** The same result with what each tier held at its peak. */
    public SimResult withOccupancy(Occupancy o) {
        return new SimResult(config, trace, requests, inputTokens, simulatedTokens, blocks, blockHitRatio,
                tokenHitRatio, deviceHitTokens, hostHitTokens, prefillTokensComputed, backups, d2hBytes,
                exposedBackupNs, commitLatencyNs, hostPoolPeakUtilization, simulatedSeconds, wallSeconds, timeline,
                serving, storage, o == null ? Occupancy.NONE : o);
    }

    /**
     * Backup outcomes, counted per backup (one radix node range per CP rank).
     *
     * @param reserved  reservations made
     * @param committed backups published on the node
     * @param aborted   backups aborted (never published)
     * @param noRoom    reservations refused for lack of host room (not errors)
     * @param fallback  backups issued in all-layer fallback mode
     */
    @JsonPropertyOrder({"reserved", "committed", "aborted", "no_room", "fallback"})
    public record Backups(@JsonProperty("reserved") long reserved, @JsonProperty("committed") long committed,
                          @JsonProperty("aborted") long aborted, @JsonProperty("no_room") long noRoom,
                          @JsonProperty("fallback") long fallback,
                          @JsonIgnore java.util.Map<String, Long> skipped) {
        /** No backups at all. */
        public static final Backups NONE = new Backups(0, 0, 0, 0, 0);

        /** Outcomes without a count of skipped nodes (an engine that does not apply a write policy per node). */
        public Backups(long reserved, long committed, long aborted, long noRoom, long fallback) {
            this(reserved, committed, aborted, noRoom, fallback, java.util.Map.of());
        }

        /** Copies the skipped counts (insertion order kept). */
        public Backups {
            skipped = skipped == null ? java.util.Map.of()
                    : java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(skipped));
        }

        /** Nodes the write policy passed over, all reasons. */
        public long skippedTotal() {
            long sum = 0;
            for (long v : skipped.values()) {
                sum += v;
            }
            return sum;
        }
    }

    /**
     * Nodes the engine inserted that the write policy did not back up, by reason (snake_case names of
     * {@code WritePolicy.SkipReason}, every reason present); nothing is skipped silently.
     */
    @JsonProperty("backups_skipped")
    public java.util.Map<String, Long> backupsSkipped() {
        return backups.skipped();
    }

    /**
     * Latency percentiles in ns (nearest-rank).
     *
     * @param p50 median
     * @param p99 99th percentile
     * @param max maximum
     */
    @JsonPropertyOrder({"p50", "p99", "max"})
    public record CommitLatency(@JsonProperty("p50") long p50, @JsonProperty("p99") long p99,
                                @JsonProperty("max") long max) {
        /** No samples. */
        public static final CommitLatency NONE = new CommitLatency(0, 0, 0);

        /** Percentiles of the first {@code count} values of {@code samples} (not modified). */
        public static CommitLatency of(long[] samples, int count) {
            if (count == 0) {
                return NONE;
            }
            long[] s = Arrays.copyOf(samples, count);
            Arrays.sort(s);
            return new CommitLatency(nearestRank(s, 0.50), nearestRank(s, 0.99), s[count - 1]);
        }

        private static long nearestRank(long[] sorted, double q) {
            int rank = (int) Math.ceil(q * sorted.length);
            return sorted[Math.max(0, rank - 1)];
        }
    }

    /**
     * A result with hit counters only (no backups, no timing): what the cache-only engine produces.
     */
    public static SimResult ofHits(SimConfig config, String trace, HitStats hits, double wallSeconds) {
        return new SimResult(config, trace, hits.requests(), hits.inputTokens(), hits.simulatedTokens(), hits.blocks(),
                hits.blockHitRatio(), hits.tokenHitRatio(), hits.deviceHitTokens(), hits.hostHitTokens(),
                hits.missTokens(), Backups.NONE, 0, 0, CommitLatency.NONE, 0, 0, wallSeconds, List.of());
    }

    /** The same result with another timeline. */
    public SimResult withTimeline(List<TimelineSegment> segments) {
        return new SimResult(config, trace, requests, inputTokens, simulatedTokens, blocks, blockHitRatio,
                tokenHitRatio, deviceHitTokens, hostHitTokens, prefillTokensComputed, backups, d2hBytes,
                exposedBackupNs, commitLatencyNs, hostPoolPeakUtilization, simulatedSeconds, wallSeconds, segments,
                serving, storage, occupancy);
    }

    /** The same result with serving outcomes. */
    public SimResult withServing(ServingStats stats) {
        return new SimResult(config, trace, requests, inputTokens, simulatedTokens, blocks, blockHitRatio,
                tokenHitRatio, deviceHitTokens, hostHitTokens, prefillTokensComputed, backups, d2hBytes,
                exposedBackupNs, commitLatencyNs, hostPoolPeakUtilization, simulatedSeconds, wallSeconds, timeline,
                stats, storage, occupancy);
    }

    @JsonProperty("model")
    String modelName() {
        return config.model().cliName();
    }

    @JsonProperty("gpu")
    String gpuName() {
        return config.gpu().cliName();
    }

    @JsonProperty("backup_mode")
    String backupModeName() {
        return config.backupMode().cliName();
    }

    @JsonProperty("write_policy")
    String writePolicyName() {
        return OptionSpellings.of(config.writePolicy());
    }

    @JsonProperty("eviction")
    String evictionName() {
        return io.hicache.sim.OptionSpellings.of(config.eviction());
    }

    @JsonProperty("page_size")
    int pageSize() {
        return config.pageSize();
    }

    @JsonProperty("block_tokens")
    int blockTokens() {
        return config.blockTokens();
    }

    @JsonProperty("device_capacity_tokens")
    long deviceCapacityTokens() {
        return config.deviceCapacityTokens();
    }

    @JsonProperty("host_capacity_tokens")
    Object hostCapacityTokens() {
        return config.hostUnlimited() ? "inf" : (Object) config.hostCapacityTokens();
    }

    @JsonProperty("cp")
    int cp() {
        return config.cp();
    }

    @JsonProperty("lanes")
    String lanesName() {
        return OptionSpellings.of(config.lanes());
    }

    @JsonProperty("draft_layers")
    int draftLayers() {
        return config.draftLayers();
    }

    @JsonProperty("cache_only")
    boolean cacheOnly() {
        return config.cacheOnly();
    }

    @JsonProperty("seed")
    long seed() {
        return config.seed();
    }

    @JsonProperty("time_scale")
    double timeScale() {
        return config.timeScale();
    }
}
