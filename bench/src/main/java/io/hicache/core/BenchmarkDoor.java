package io.hicache.core;

import io.hicache.core.internal.HiCacheController;

/**
 * The benchmark door: the one way the JMH rigs reach the controller behind a {@link HiCache} they built with the
 * public builder, so a benchmark times the controller's agents and pools themselves while the KV-event publisher and
 * the other modules attach to the facade as an engine's would. It works because the benchmarks run on the class
 * path, where this class shares the facade's package; on the module path (an engine's) the package is the core
 * module's alone and nothing can be added to it. Cold path; any thread.
 */
public final class BenchmarkDoor {
    private BenchmarkDoor() {
    }

    /**
     * The controller behind {@code cache}.
     *
     * @throws NullPointerException if {@code cache} is null
     */
    public static HiCacheController controller(HiCache cache) {
        return cache.controller();
    }
}
