package io.hicache.serve.engine;

import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.FloatBufferTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import com.github.tjake.jlama.tensor.TensorShape;
import io.hicache.serve.model.StepModel;

import java.nio.ByteOrder;

/**
 * Jlama tensors over the device KV pool: one {@code [pageSize, kvWidth]} float tensor per device page, layer and one
 * of K and V, made the first time attention asks for it and kept (the pool's memory lives as long as the engine). A
 * request's KV buffer ({@link #bufferFor}) maps its positions onto device pages through {@link ServeRequest#kvPages},
 * so Jlama's attention reads a restored prefix where the cache loaded it and writes new positions straight into the
 * request's pages: a restore is the load's one copy, host tier to device pages. Engine thread only.
 */
final class DeviceKvViews {
    private final CacheTiers tiers;
    private final int layers;
    private final TensorShape shape;
    private final AbstractTensor[] views;

    DeviceKvViews(CacheTiers tiers) {
        this.tiers = tiers;
        this.layers = tiers.layout.layerCount();
        this.shape = TensorShape.of(tiers.pageSize, tiers.cfg.model().kvWidth());
        this.views = new AbstractTensor[layers * 2 * tiers.layout.pageCount()];
    }

    /** The tensor over device page {@code page} of {@code layer}, K (0) or V (1). */
    AbstractTensor view(int layer, int buffer, int page) {
        int i = (page * layers + layer) * 2 + buffer;
        AbstractTensor v = views[i];
        if (v == null) {
            long off = tiers.layout.pageAddress(layer, buffer, page) - tiers.kvBase;
            var fb = tiers.deviceKv.asSlice(off, tiers.layout.pageBytes()).asByteBuffer()
                .order(ByteOrder.nativeOrder()).asFloatBuffer();
            v = new FloatBufferTensor(fb, shape, true);
            views[i] = v;
        }
        return v;
    }

    /** A KV buffer for {@code r} over the device pages of {@code r.kvPages} (read when attention asks). */
    KvBufferCache.KvBuffer bufferFor(StepModel model, ServeRequest r) {
        return model.newKvBuffer(tiers.pageSize, (layer, buffer, index) -> {
            int page = index < r.kvPages.length ? r.kvPages[index] : -1;
            if (page < 0) {
                throw new IllegalStateException("request " + r.id + " has no device page for KV page " + index);
            }
            return view(layer, buffer, page);
        });
    }
}
