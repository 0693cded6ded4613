package io.hicache.core.internal;

import io.hicache.core.HiCache;

import java.util.Objects;
import java.util.function.Function;

/**
 * The controller behind a {@link HiCache}, for the project's own modules that read it directly (the Micrometer
 * binder reads the live lock-free counters instead of allocating a snapshot per meter), and the conclusion of a
 * builder's settings for {@link ControllerBuilder}. This package is exported
 * only to those modules, so an engine cannot reach the controller through here. {@link HiCache} registers the
 * accessor when its class initialises. Any thread.
 */
public final class FacadeAccess {
    private static volatile Function<HiCache, HiCacheController> controllerOf;
    private static volatile Function<HiCache.Settings<?>, ControllerConfig> concluder;

    private FacadeAccess() {
    }

    /**
     * Called once, by {@link HiCache}'s static initialiser.
     *
     * @param accessor returns a facade's controller
     * @throws IllegalStateException if an accessor is already registered
     */
    public static synchronized void register(Function<HiCache, HiCacheController> accessor) {
        if (controllerOf != null) {
            throw new IllegalStateException("FacadeAccess: the accessor is already registered");
        }
        controllerOf = Objects.requireNonNull(accessor, "accessor");
    }

    /**
     * The controller behind {@code cache}.
     *
     * @param cache a built facade (its class is initialised, so the accessor is registered)
     * @return the controller; never null
     */
    public static HiCacheController controller(HiCache cache) {
        Objects.requireNonNull(cache, "cache");
        return controllerOf.apply(cache);
    }

    /**
     * Called once, by {@link HiCache.Settings}' static initialiser: how settings conclude into a configuration
     * (package-private there, so that the engine-facing builder exposes no internal type).
     *
     * @throws IllegalStateException if one is already registered
     */
    public static synchronized void registerConcluder(Function<HiCache.Settings<?>, ControllerConfig> conclude) {
        if (concluder != null) {
            throw new IllegalStateException("FacadeAccess: the concluder is already registered");
        }
        concluder = Objects.requireNonNull(conclude, "conclude");
    }

    /**
     * Validates {@code settings} and resolves their defaults into an immutable configuration, leaving them as they
     * were (see {@link HiCache.Settings}).
     *
     * @throws IllegalArgumentException naming the bad setting
     */
    static ControllerConfig conclude(HiCache.Settings<?> settings) {
        return concluder.apply(Objects.requireNonNull(settings, "settings"));
    }
}
