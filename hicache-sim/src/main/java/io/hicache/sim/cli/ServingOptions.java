package io.hicache.sim.cli;

import io.hicache.sim.Router;
import picocli.CommandLine.Option;

import java.util.List;

/**
 * Options of the serving model (deployment, scheduler budgets, objectives), shared by every subcommand.
 * Filled by picocli; null means "not given". {@code compare} takes lists of instances and routers as axes.
 */
final class ServingOptions {
    @Option(names = "--instances", paramLabel = "N", split = ",",
            description = "Serving instances behind the router (default 1); compare: a comma-separated list.")
    List<Integer> instances;

    @Option(names = "--router", paramLabel = "RULE", split = ",",
            description = "round-robin, least-loaded, cache-aware (default: longest cached prefix against load), kv-events "
                    + "(cache-aware from each instance's KV events, --kv-events-lag-ms late); "
                    + "compare: a comma-separated list.")
    List<Router> routers;

    @Option(names = "--tp", paramLabel = "GPUS",
            description = "Tensor-parallel GPUs per instance; must divide the model's KV heads "
                    + "(default: the preset's, e.g. 4 for llama3-70b).")
    Integer tp;

    @Option(names = "--max-batch-tokens", paramLabel = "TOKENS",
            description = "Token budget of one forward step: prefill chunks plus one per decoding request (default 8192).")
    Integer maxBatchTokens;

    @Option(names = "--chunk-tokens", paramLabel = "TOKENS",
            description = "Largest prefill chunk of one request per step, <= --max-batch-tokens (default: the budget).")
    Integer chunkTokens;

    @Option(names = "--slo-ttft-ms", paramLabel = "MS", description = "Time-to-first-token objective (default 2000).")
    Double sloTtftMs;

    @Option(names = "--slo-tpot-ms", paramLabel = "MS", description = "Time-per-output-token objective (default 100).")
    Double sloTpotMs;

    @Option(names = "--host-bandwidth-gbps", paramLabel = "GB/S",
            description = "Host DRAM / PCIe-switch bandwidth the instance's GPUs share when they copy at once: each GPU "
                    + "copies at min(its link, this / GPUs). Default 0: not shared.")
    Double hostBandwidthGbps;

    @Option(names = "--copy-engines", paramLabel = "KIND",
            description = "separate (default: one copy engine per direction) or shared (loads and backups serialize).")
    String copyEngines;

    @Option(names = "--closed-loop", negatable = true, fallbackValue = "true",
            description = "A request whose trace names the turn it follows (gen-multiturn's traces, Qwen-Bailian's "
                    + "parent_chat_id) arrives no earlier than that turn finished, as a chat client waits for the "
                    + "answer (default); --no-closed-loop replays the trace's times as they are.")
    Boolean closedLoop;

    @Option(names = "--tier-weights", paramLabel = "TIER=W,...",
            description = "cache-aware and kv-events routers: how much a cached page counts by the tier holding it, "
                    + "each in [0, 1], e.g. device=1,host=0.75,l3=0.25 (Dynamo's weights; a host hit still costs a "
                    + "load, an L3 hit a read). Tiers: device, host, l3; one not named counts 1. Default: 1 each.")
    String tierWeights;

    /** Whether any serving option was given (they mean nothing with --cache-only). */
    boolean any() {
        return instances != null || routers != null || tp != null || maxBatchTokens != null || chunkTokens != null
                || sloTtftMs != null || sloTpotMs != null || hostBandwidthGbps != null || copyEngines != null
                || closedLoop != null || tierWeights != null;
    }
}
