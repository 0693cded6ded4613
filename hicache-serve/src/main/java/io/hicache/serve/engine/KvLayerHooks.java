package io.hicache.serve.engine;

import com.github.tjake.jlama.tensor.KvBufferCache;
import io.hicache.core.ForwardHooks;
import io.hicache.serve.model.StepModel;

/**
 * The cache's per-layer hooks around a request's prefill chunk. A request's KV buffer is its device pages
 * ({@link DeviceKvViews}): attention reads the restored prefix where the load put it and writes the chunk's KV into the
 * request's own pages, so nothing is copied here. Before block {@code l} of the first chunk of a request whose prefix
 * is still loading, it waits for that layer's load (the compute stream waits for the load stream's layer event, then
 * this CPU engine for the compute stream): layer {@code l} is read only once it landed, and later layers go on
 * loading meanwhile. After block {@code l} it calls {@code targetLayerStored(l)}: the chunk's layer-{@code l} KV is in
 * device memory, and the write policy's backups of it may start.
 *
 * <p>One instance per engine, reused per forward; engine thread only; allocates nothing.
 */
final class KvLayerHooks implements StepModel.LayerListener {
    private final CacheTiers tiers;
    private ServeRequest r;
    private ForwardHooks hooks;
    private long loadToken = -1;

    KvLayerHooks(CacheTiers tiers) {
        this.tiers = tiers;
    }

    /**
     * Arms the hooks for one prefill chunk of {@code r}: {@code hooks} may be null (nothing to back up), and
     * {@code loadToken} is the load consumer to wait on per layer, or -1 for none.
     */
    void start(ServeRequest r, ForwardHooks hooks, long loadToken) {
        this.r = r;
        this.hooks = hooks;
        this.loadToken = loadToken;
    }

    void clear() {
        r = null;
        hooks = null;
        loadToken = -1;
    }

    @Override
    public void beforeLayer(int layer, int startPos, int tokens, KvBufferCache.KvBuffer kv) {
        if (loadToken >= 0 && !r.prefixCopied && r.restored > 0) {
            long t0 = System.nanoTime();
            tiers.cache.waitLayer(loadToken, layer);
            tiers.gpu.recordEvent(tiers.layerReady, tiers.cache.computeStream());
            tiers.gpu.synchronizeEvent(tiers.layerReady);
            r.loadWaitNs += System.nanoTime() - t0;
        }
    }

    @Override
    public void afterLayer(int layer, int startPos, int tokens, KvBufferCache.KvBuffer kv) {
        if (hooks != null) {
            hooks.targetLayerStored(layer);
        }
    }
}
