package io.hicache.sim;

/**
 * The engines the command line uses: {@link CacheOnlyEngine} for {@code --cache-only}; the timed
 * engine that drives the real backup controller is plugged in here once it exists. Stateless,
 * thread-safe.
 */
public final class DefaultEngineFactory implements EngineFactory {

    @Override
    public SimulationEngine create(SimConfig config) {
        if (config.cacheOnly()) {
            return new CacheOnlyEngine();
        }
        throw new EngineUnavailableException("the timed engine (backup mode " + config.backupMode().cliName()
                + ") is not available in this build yet; run with --cache-only for hit ratios");
    }
}
