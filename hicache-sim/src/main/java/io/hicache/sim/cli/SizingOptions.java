package io.hicache.sim.cli;

import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.List;

/**
 * Options about sizing the host tier: its capacity as memory, the tolerance of the recommendation and the summary
 * file that carries it. Shared by replay, compare and sweep. Filled by picocli; null means "not given".
 */
final class SizingOptions {
    @Option(names = "--host-memory", paramLabel = "SIZE", split = ",",
            description = "Host KV capacity as memory per instance, instead of --host-capacity-tokens: 52GB, 48GiB, "
                    + "1.5TB (GB = 10^9 bytes, GiB = 2^30; a bare G is refused as ambiguous), or per GPU as 13GB/gpu "
                    + "(times the instance's GPUs, like SGLang's per-rank --hicache-size); 0 = no host tier, inf = "
                    + "unlimited. Converted with the KV bytes per token the run header prints. sweep: a "
                    + "comma-separated list.")
    List<String> hostMemory;

    @Option(names = "--tolerance", paramLabel = "FRACTION",
            description = "sweep, compare: the recommendation is the smallest host size whose block hit ratio is "
                    + "within this relative fraction of the best (default 0.01 = 1 %%).")
    Double tolerance;

    @Option(names = "--summary-json", paramLabel = "FILE",
            description = "Write {\"recommendation\": {host_tokens, host_bytes, block_hit_ratio, best_block_hit_ratio, "
                    + "tolerance, reason} (null for replay), \"overloaded\", \"kv_bytes_per_token\", "
                    + "\"device_kv_tokens\"} to FILE.")
    Path summaryJson;
}
