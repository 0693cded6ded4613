package io.hicache.sim;

/**
 * How a fleet's router picks the instance for an arriving request. Immutable. The rules (all ties go to
 * the lower instance index):
 * <ul>
 *   <li>{@code round-robin}: instances in turn, ignoring load and cache.</li>
 *   <li>{@code least-loaded}: the instance with the fewest outstanding requests (queued plus running),
 *   then the fewest prompt tokens still to prefill (SGLang router's shortest-queue fallback).</li>
 *   <li>{@code cache-aware}: the instance with the lowest cost {@code (prompt tokens not cached there) +
 *   (prompt tokens it still has to prefill)}, where "cached" is the longest prefix of the request found in
 *   the instance's tree on the device or in committed host pages. This is the cost of Dynamo's KV router
 *   (blocks to compute plus the instance's load, overlap weight 1) over the instances' real trees, the
 *   way Dynamo learns block placement from the workers' KV events; SGLang's router instead keeps an
 *   approximate tree of what it routed and switches between best prefix match and shortest queue on a
 *   load-imbalance threshold.</li>
 *   <li>{@code kv-events}: {@code cache-aware}'s cost, but "cached" is what an index built only from the
 *   instance's KV events says (blocks on any tier, the prefix walked by block hash), each event applied
 *   {@code --kv-events-lag-ms} of simulated time after it happened: what a real router such as Dynamo's knows,
 *   late by its stream's delivery delay.</li>
 * </ul>
 */
public enum Router implements CliNamed {
    /** Instances in turn. */
    ROUND_ROBIN("round-robin"),
    /** Fewest outstanding requests. */
    LEAST_LOADED("least-loaded"),
    /** Longest cached prefix balanced against load. */
    CACHE_AWARE("cache-aware"),
    /** {@code cache-aware}'s cost over an index built from each instance's KV events, delivered with a lag. */
    KV_EVENTS("kv-events");

    private final String cliName;

    Router(String cliName) {
        this.cliName = cliName;
    }

    @Override
    public String cliName() {
        return cliName;
    }

    /**
     * The value spelled {@code name}.
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid ones
     */
    public static Router byName(String name) {
        return CliNamed.byName(Router.class, "router", name);
    }

    @Override
    public String toString() {
        return cliName;
    }
}
