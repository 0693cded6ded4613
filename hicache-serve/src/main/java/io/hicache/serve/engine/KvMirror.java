package io.hicache.serve.engine;

import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import io.hicache.core.ForwardHooks;
import io.hicache.serve.model.StepModel;

import java.lang.foreign.MemorySegment;

/**
 * The per-layer bridge between a request's Jlama KV buffer (where attention reads) and its pages in the device pool
 * (what the cache indexes, backs up and loads into), with the cache's hooks. Before block {@code l} of a request's
 * first prefill chunk, the restored prefix's layer {@code l} is copied from its device pages into the buffer (after
 * waiting for that layer's load, if it is loading); after block {@code l} the chunk's new positions are copied into
 * the request's own pages and {@code targetLayerStored(l)} is called. Copies are whole runs of positions contiguous on
 * both sides (a device page holds {@code pageSize} consecutive positions of one layer and one of K and V).
 *
 * <p>One instance per engine, reused per forward; engine thread only.
 */
final class KvMirror implements StepModel.LayerListener {
    private final CacheTiers tiers;
    private ServeRequest r;
    private ForwardHooks hooks;
    private long loadToken = -1;

    KvMirror(CacheTiers tiers) {
        this.tiers = tiers;
    }

    /** Arms the mirror for one prefill chunk of {@code r} (hooks may be null: nothing to back up). */
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
        if (!r.prefixCopied && r.restored > 0) {
            if (loadToken >= 0) {
                long t0 = System.nanoTime();
                // the compute stream waits for this layer's load; a CPU engine then waits for the compute stream
                tiers.cache.waitLayer(loadToken, layer);
                tiers.gpu.recordEvent(tiers.layerReady, tiers.cache.computeStream());
                tiers.gpu.synchronizeEvent(tiers.layerReady);
                r.loadWaitNs += System.nanoTime() - t0;
            }
            copy(kv, layer, 0, r.restored, false);
        }
    }

    @Override
    public void afterLayer(int layer, int startPos, int tokens, KvBufferCache.KvBuffer kv) {
        int from = Math.max(startPos, r.firstOwnPage * tiers.pageSize);
        int to = Math.min(startPos + tokens, r.pages.length * tiers.pageSize);
        if (from < to) {
            copy(kv, layer, from, to, true);
        }
        if (hooks != null) {
            hooks.targetLayerStored(layer); // layer's KV for every inserted page of this chunk is in device memory now
        }
    }

    /** After a decode step at {@code pos}: its KV of every layer into the request's own page. */
    void storeDecoded(ServeRequest r, int pos) {
        if (pos / tiers.pageSize < r.firstOwnPage) {
            return;
        }
        for (int l = 0; l < tiers.layout.layerCount(); l++) {
            copy(r.kv, r, l, pos, pos + 1, true);
        }
    }

    private void copy(KvBufferCache.KvBuffer kv, int layer, int from, int to, boolean toDevice) {
        copy(kv, r, layer, from, to, toDevice);
    }

    /** Copies K and V of positions {@code [from, to)} of {@code layer} between the buffer and the request's pages. */
    private void copy(KvBufferCache.KvBuffer kv, ServeRequest req, int layer, int from, int to, boolean toDevice) {
        int ps = tiers.pageSize;
        long tb = tiers.tokenBytes;
        boolean packed = tiers.layout.pageStrideBytes() == ps * tb; // consecutive pages are adjacent in memory
        for (int buffer = 0; buffer < 2; buffer++) {
            AbstractTensor[] parts = buffer == 0 ? kv.getKeyTensorsUptoPosition(layer, to - 1)
                : kv.getValTensorsUptoPosition(layer, to - 1);
            int per = parts[0].shape().first(); // positions per Jlama context page
            int p = from;
            while (p < to) {
                int pageIdx = p / ps;
                int devPage = req.pages[pageIdx];
                // one run over consecutive device pages, within one of Jlama's context pages
                int last = pageIdx;
                int limit = Math.min(to, (p / per + 1) * per);
                while (devPage >= 0 && packed && (last + 1) * ps < limit && req.pages[last + 1] == req.pages[last] + 1) {
                    last++;
                }
                int end = Math.min(limit, (last + 1) * ps);
                if (devPage >= 0) {
                    long dev = tiers.layout.pageAddress(layer, buffer, devPage) - tiers.kvBase + (long) (p % ps) * tb;
                    MemorySegment seg = parts[p / per].getMemorySegment();
                    long off = (long) (p % per) * tb;
                    long bytes = (end - p) * tb;
                    if (toDevice) {
                        MemorySegment.copy(seg, off, tiers.deviceKv, dev, bytes);
                    } else {
                        MemorySegment.copy(tiers.deviceKv, dev, seg, off, bytes);
                    }
                } else if (!toDevice) {
                    throw new IllegalStateException("request " + req.id + " restores page " + pageIdx
                        + " it does not hold");
                }
                p = end;
            }
        }
    }
}
