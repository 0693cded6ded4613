package io.hicache.core;

import io.hicache.core.internal.Backup;
import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.internal.LoadOp;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.internal.memory.HostPageAllocator;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;

import java.util.ArrayList;
import java.util.List;

/**
 * The one door through which the cross-module suites (the deterministic simulation tests under {@code it/dst} and
 * the stress test) read a {@link HiCache}'s internal state for their invariants, and step its agents by hand. They
 * build and drive the cache through its public API, as an engine does; what an engine cannot see (the radix tree
 * itself, the host page allocator and pools, the agents' duty cycles, the internal side of a handle) they ask for
 * here, so the suites name no controller and a change of the cache's insides changes this file, not the suites.
 *
 * <p>Test sources only (the suites run on the class path, so this package-mate of the facade reaches its
 * package-private {@code controller()}). Every method is a cheap read, a cast or one duty cycle (cold test code). Thread: the
 * cache's scheduler thread (the tree, allocator and pools are its), except {@link #backup}, {@link #forward} and
 * {@link #load}, which only cast. Failure: a handle not made by a {@link HiCache} throws
 * {@link IllegalArgumentException}; the agent steps throw what the agent's duty cycle throws.
 */
public final class CacheInternals {
    private CacheInternals() {
    }

    /** The cache's radix tree (read it, or change it only the way the engine's own calls would). */
    public static RadixTree tree(HiCache cache) {
        return cache.controller().tree();
    }

    /** The host page allocator (target and draft pools share its page ids). */
    public static HostPageAllocator hostAllocator(HiCache cache) {
        return cache.controller().allocator();
    }

    /** The target host KV pool, or with {@code draft} the draft pool (null without draft layers). */
    public static HostKvPool hostPool(HiCache cache, boolean draft) {
        return draft ? cache.controller().draftHostPool() : cache.controller().hostPool();
    }

    /**
     * One duty cycle of the submitter agent ({@link ThreadingMode#INVOKER} caches only; the caller is the only one
     * stepping it). {@link HiCache#doAgentWork()} steps both agents; the deterministic tests choose the order.
     *
     * @return work done (0 when idle)
     * @throws Exception what the agent's duty cycle throws
     */
    public static int stepSubmitter(HiCache cache) throws Exception {
        return cache.controller().submitterAgent().doWork();
    }

    /**
     * One duty cycle of the completion agent (as {@link #stepSubmitter}).
     *
     * @return work done (0 when idle)
     * @throws Exception what the agent's duty cycle throws
     */
    public static int stepCompletion(HiCache cache) throws Exception {
        return cache.controller().completionAgent().doWork();
    }

    /** Sealed batches the completion agent still polls for. */
    public static int completionInFlight(HiCache cache) {
        return cache.controller().completionAgent().inFlight();
    }

    /**
     * {@link HiCache#reserveByPolicy}, adding the backups behind the handles it returns to {@code out} in its order.
     *
     * @return what {@link HiCache#reserveByPolicy} returns
     */
    public static int reserveByPolicy(HiCache cache, RadixNode node, boolean withDraft, List<? super Backup> out) {
        List<BackupHandle> handles = new ArrayList<>();
        int n = cache.reserveByPolicy(node, withDraft, handles);
        for (BackupHandle h : handles) {
            out.add(backup(h));
        }
        return n;
    }

    /**
     * The backup behind a handle {@link HiCache#reserve} or {@link HiCache#reserveByPolicy} returned (null, no room,
     * stays null).
     */
    public static Backup backup(BackupHandle handle) {
        if (handle == null || handle instanceof Backup) {
            return (Backup) handle;
        }
        throw new IllegalArgumentException("backup " + handle + " was not created by a HiCache");
    }

    /** The forward behind the hooks {@link HiCache#beginForward} returned. */
    public static ForwardHandle forward(ForwardHooks hooks) {
        if (hooks instanceof ForwardHandle f) {
            return f;
        }
        throw new IllegalArgumentException("hooks " + hooks + " were not created by a HiCache");
    }

    /** The load behind a handle {@link HiCache#loadBack} or {@link HiCache#joinLoad} returned (null stays null). */
    public static LoadOp load(LoadHandle handle) {
        if (handle == null || handle instanceof LoadOp) {
            return (LoadOp) handle;
        }
        throw new IllegalArgumentException("load " + handle + " was not created by a HiCache");
    }
}
