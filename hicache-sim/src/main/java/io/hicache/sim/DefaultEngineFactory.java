package io.hicache.sim;

import io.hicache.sim.engine.ServingEngine;

/**
 * The engines the command line uses: {@link CacheOnlyEngine} for {@code --cache-only}, otherwise the timed
 * {@link ServingEngine} that drives the real backup controller on simulated devices. Stateless,
 * thread-safe.
 */
public final class DefaultEngineFactory implements EngineFactory {

    /** The factory the command line uses. */
    public DefaultEngineFactory() {
    }

    @Override
    public SimulationEngine create(SimConfig config) {
        if (config.cacheOnly()) {
            return new CacheOnlyEngine();
        }
        return new ServingEngine();
    }

    @Override
    public SimulationEngine create(SimConfig config, ServingConfig serving) {
        if (config.cacheOnly()) {
            return new CacheOnlyEngine();
        }
        return new ServingEngine(serving);
    }
}
