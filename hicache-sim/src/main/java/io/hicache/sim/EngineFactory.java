package io.hicache.sim;

/**
 * Chooses the engine for a configuration. Stateless implementations are thread-safe.
 */
@FunctionalInterface
public interface EngineFactory {

    /**
     * The engine for {@code config}.
     *
     * @throws EngineUnavailableException no engine can run this configuration
     */
    SimulationEngine create(SimConfig config);

    /**
     * The engine for {@code config} served as {@code serving}; engines that do not model serving ignore it.
     *
     * @throws EngineUnavailableException no engine can run this configuration
     */
    default SimulationEngine create(SimConfig config, ServingConfig serving) {
        return create(config);
    }
}
