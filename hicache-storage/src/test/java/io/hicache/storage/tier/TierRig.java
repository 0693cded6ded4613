package io.hicache.storage.tier;

import io.hicache.core.internal.Backup;
import io.hicache.core.DevicePageSink;
import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.internal.ControllerBuilder;
import io.hicache.core.internal.HiCacheController;
import io.hicache.core.internal.HostPages;
import io.hicache.core.ThreadingMode;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.cuda.simulated.SimulatedCudaConfig;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.core.memory.HostLayout;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.storage.KeyNamespace;
import io.hicache.storage.PageStore;
import io.hicache.storage.StorageTierConfig;
import io.hicache.core.DevicePagePool;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * A CP group of real controllers on simulated devices, each with a {@link StorageTier} on one shared store; the
 * test's thread is every rank's scheduler thread. Device bytes of a page are a pattern of (tag, position, layer),
 * identical on every rank, so a page's bytes are known wherever it went; with draft/MTP layers the draft KV is a
 * pattern of its own (see {@link #draftPattern}), backed up with the target KV.
 */
final class TierRig implements AutoCloseable {
    static final int LAYERS = 3;
    final int cp;
    final int pageSize;
    final SimulatedCudaRuntime[] rt;
    final HiCacheController[] ctl;
    final StorageTier[] tier;
    final DeviceKvLayout[] layout;
    final long[] base;
    final int draftLayers;
    final DeviceKvLayout[] draftLayout;
    final long[] draftBase;
    final PageStore store;
    /** Each rank's key namespace (its lane). */
    final KeyNamespace[] namespace;
    long clockNs;
    private final DevicePagePool freeDevice;

    TierRig(int cp, int pageSize, int devicePages, int hostPages, PageStore store, StorageTierConfig cfg, String salt) {
        this(cp, pageSize, devicePages, hostPages, store, cfg, salt, 0);
    }

    /** A rig whose caches have {@code draftLayers} draft/MTP layers (0: none), backed up with every forward. */
    TierRig(int cp, int pageSize, int devicePages, int hostPages, PageStore store, StorageTierConfig cfg, String salt,
            int draftLayers) {
        this.cp = cp;
        this.draftLayers = draftLayers;
        draftLayout = new DeviceKvLayout[cp];
        draftBase = new long[cp];
        this.pageSize = pageSize;
        this.store = store;
        rt = new SimulatedCudaRuntime[cp];
        ctl = new HiCacheController[cp];
        tier = new StorageTier[cp];
        layout = new DeviceKvLayout[cp];
        base = new long[cp];
        namespace = new KeyNamespace[cp];
        InProcessRankAgreement agreement = cp == 1 ? null : new InProcessRankAgreement(cp);
        InProcessRankAgreement loads = cp == 1 ? null : new InProcessRankAgreement(cp);
        InProcessRankAgreement storage = cp == 1 ? null : new InProcessRankAgreement(cp);
        for (int r = 0; r < cp; r++) {
            rt[r] = new SimulatedCudaRuntime(SimulatedCudaConfig.builder().seed(7 + r).build());
            DeviceKvLayout.Builder b = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS)
                    .pageSizeTokens(pageSize).bytesPerTokenPerBuffer(8).pageCount(devicePages);
            base[r] = rt[r].deviceMalloc(b.packedBytes());
            layout[r] = b.packedFrom(base[r]).build();
            ForwardingBackupListener fwd = new ForwardingBackupListener();
            SimulatedCudaRuntime runtime = rt[r];
            if (draftLayers > 0) {
                DeviceKvLayout.Builder db = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(draftLayers)
                        .pageSizeTokens(pageSize).bytesPerTokenPerBuffer(4).pageCount(devicePages);
                draftBase[r] = rt[r].deviceMalloc(db.packedBytes());
                draftLayout[r] = db.packedFrom(draftBase[r]).build();
            }
            ControllerBuilder hb = HiCacheController.builder().runtime(runtime).targetLayout(layout[r])
                    .draftLayout(draftLayout[r])
                    .hostPages(hostPages).threadingMode(ThreadingMode.INVOKER).clock(runtime::nowNs).leaseNs(0)
                    .checkThread(false).listener(fwd)
                    .writePolicy(io.hicache.core.WritePolicy.WRITE_THROUGH);
            if (cp > 1) {
                hb.cpGroup(cp, r, OwnerLanes.Standard.ROUND_ROBIN, agreement, loads);
            }
            ctl[r] = hb.build();
            KeyNamespace ns = KeyNamespace.builder().modelId("test-model").kvDtype("int8").pageSizeTokens(pageSize)
                    .hostLayout(HostLayout.LAYER_FIRST).cp(cp, r).salt(salt).build();
            namespace[r] = ns;
            tier[r] = new StorageTier(ctl[r].storagePort(), store, ns, cfg, storage, cp, () -> clockNs);
            fwd.target(tier[r]);
        }
        freeDevice = new DevicePagePool(devicePages);
    }

    int freeDevicePages() {
        return freeDevice.freePages();
    }

    /**
     * The L3 key of page {@code position} of the sequence {@code tokens[from, ..)} for the rank owning that position
     * (round-robin lanes), computed from the tokens alone.
     */
    io.hicache.storage.PageKey ownerKey(int[] tokens, int from, int position) {
        int r = OwnerLanes.Standard.ROUND_ROBIN.owner(position, position + 1, cp);
        int[] own = java.util.Arrays.copyOfRange(tokens, from, from + (position + 1) * pageSize);
        byte[] hashes = new PageHasher(ctl[r].storagePort(), namespace[r]).chainAfter(ctl[r].tree().root(), own, 0,
                position + 1);
        return PageHasher.key(hashes, position);
    }

    /** The L3 key of the draft/MTP part of that page, on its owner's lane. */
    io.hicache.storage.PageKey ownerDraftKey(int[] tokens, int from, int position) {
        int r = OwnerLanes.Standard.ROUND_ROBIN.owner(position, position + 1, cp);
        return new PageHasher(ctl[r].storagePort(), namespace[r]).draftKey(ownerKey(tokens, from, position));
    }

    static int[] tokens(int start, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = start + i;
        }
        return t;
    }

    /** The byte of (tag, position, layer, byte index) every rank writes. */
    static byte pattern(int tag, int position, int layer, int i) {
        return (byte) (tag * 31 + position * 7 + layer * 13 + i);
    }

    /** The byte of (tag, position, draft layer, buffer, byte index) every rank writes into its draft KV. */
    static byte draftPattern(int tag, int position, int layer, int buffer, int i) {
        return (byte) (pattern(tag, position, layer + 5 * buffer, i) ^ 0x3c);
    }

    /** Computes {@code tokens} on every rank (device pages written with {@code tag}), backs them up and commits. */
    RadixNode[] compute(int[] tokens, int tag) {
        int pages = tokens.length / pageSize;
        int[] dev = new int[pages];
        for (int i = 0; i < pages; i++) {
            dev[i] = freeDevice.poll();
        }
        RadixNode[] last = new RadixNode[cp];
        int dup = 0;
        List<List<Backup>> backups = new ArrayList<>();
        for (int r = 0; r < cp; r++) {
            for (int i = 0; i < pages; i++) {
                for (int l = 0; l < LAYERS; l++) {
                    MemorySegment s = rt[r].deviceMemory(layout[r].pageAddress(l, 0, dev[i]), layout[r].pageBytes());
                    for (int b = 0; b < s.byteSize(); b++) {
                        s.set(java.lang.foreign.ValueLayout.JAVA_BYTE, b, pattern(tag, i, l, b));
                    }
                }
                for (int l = 0; l < draftLayers; l++) {
                    for (int buf = 0; buf < draftLayout[r].bufferCount(); buf++) {
                        MemorySegment s = rt[r].deviceMemory(draftLayout[r].pageAddress(l, buf, dev[i]),
                                draftLayout[r].pageBytes());
                        for (int b = 0; b < s.byteSize(); b++) {
                            s.set(java.lang.foreign.ValueLayout.JAVA_BYTE, b, draftPattern(tag, i, l, buf, b));
                        }
                    }
                }
            }
            dup = ctl[r].tree().insert(tokens, 0, tokens.length, dev, 0);
            last[r] = ctl[r].tree().lastInsertNode();
            List<Backup> l = new ArrayList<>();
            ctl[r].reserveByPolicy(last[r], draftLayers > 0, l);
            backups.add(l);
        }
        for (int i = 0; i < dup / pageSize; i++) {
            freeDevice.free(dev[i]);
        }
        ForwardHandle[] h = new ForwardHandle[cp];
        for (int r = 0; r < cp; r++) {
            h[r] = ctl[r].beginForward(backups.get(r));
        }
        for (int l = 0; l < Math.max(LAYERS, draftLayers); l++) {
            for (int r = 0; r < cp; r++) {
                if (l < LAYERS) {
                    h[r].targetLayerStored(l);
                }
                if (l < draftLayers) {
                    h[r].draftLayerStored(l);
                }
            }
        }
        for (int r = 0; r < cp; r++) {
            h[r].endForward();
        }
        drain();
        return last;
    }

    /** Steps agents, devices, controllers and tiers until nothing moves (bounded). */
    void drain() {
        for (int i = 0; i < 10_000; i++) {
            int work = 0;
            for (int r = 0; r < cp; r++) {
                work += ctl[r].doAgentWork();
            }
            for (int r = 0; r < cp; r++) {
                work += ctl[r].poll();
            }
            for (int r = 0; r < cp; r++) {
                work += tier[r].poll();
            }
            boolean busy = false;
            for (int r = 0; r < cp; r++) {
                busy |= ctl[r].backupsInFlight() > 0;
            }
            if (work == 0 && !busy) {
                return;
            }
            if (work == 0) {
                long next = Long.MAX_VALUE;
                for (SimulatedCudaRuntime x : rt) {
                    next = Math.min(next, x.nextEventTimeNs());
                }
                if (next != Long.MAX_VALUE) {
                    for (SimulatedCudaRuntime x : rt) {
                        x.advanceTo(Math.max(next, x.nowNs()));
                    }
                }
            }
        }
        throw new AssertionError("rig did not settle");
    }

    /** Evicts every device page and then every host page on every rank. */
    void evictAll() {
        DevicePageSink sink = freeDevice;
        for (int r = 0; r < cp; r++) {
            ctl[r].evictDevice(Integer.MAX_VALUE, r == 0 ? sink : (p, o, c) -> { });
        }
        drain();
        for (int r = 0; r < cp; r++) {
            ctl[r].evictHost(Integer.MAX_VALUE);
        }
        drain();
    }

    MatchResult[] match(int[] tokens) {
        MatchResult[] m = new MatchResult[cp];
        for (int r = 0; r < cp; r++) {
            m[r] = ctl[r].tree().match(tokens, 0, tokens.length, new MatchResult());
        }
        return m;
    }

    /** Starts a prefetch on every rank (null where none started). */
    StorageTier.Prefetch[] prefetch(int[] tokens, long requestId) {
        MatchResult[] m = match(tokens);
        StorageTier.Prefetch[] p = new StorageTier.Prefetch[cp];
        for (int r = 0; r < cp; r++) {
            p[r] = tier[r].prefetch(tokens, 0, tokens.length, m[r], requestId);
        }
        return p;
    }

    /**
     * True when every host page of {@code node} (whose first page is at {@code startPosition}) holds tag's pattern;
     * in a rig with draft layers the node must carry draft KV and its draft pages must hold tag's draft pattern.
     */
    boolean hostHoldsPattern(int rank, RadixNode node, int startPosition, int tag) {
        HostPages hp = (HostPages) node.hostValue();
        if (draftLayers > 0 && !hp.hasDraft()) {
            return false; // a load-back would leave the device's draft pages as they were
        }
        int[] offsets = new int[hp.pageCount()];
        int owned = hp.ownedOffsets(offsets);
        var pool = ctl[rank].hostPool();
        var draftPool = ctl[rank].draftHostPool();
        for (int i = 0; i < owned; i++) {
            int position = startPosition + offsets[i];
            for (int l = 0; l < LAYERS; l++) {
                MemorySegment s = rt[rank].hostMemory(pool.pageAddress(l, 0, hp.hostPage(i)), layout[rank].pageBytes());
                for (int b = 0; b < s.byteSize(); b++) {
                    if (s.get(java.lang.foreign.ValueLayout.JAVA_BYTE, b) != pattern(tag, position, l, b)) {
                        return false;
                    }
                }
            }
            for (int l = 0; l < draftLayers; l++) {
                for (int buf = 0; buf < draftLayout[rank].bufferCount(); buf++) {
                    MemorySegment s = rt[rank].hostMemory(draftPool.pageAddress(l, buf, hp.hostPage(i)),
                            draftLayout[rank].pageBytes());
                    for (int b = 0; b < s.byteSize(); b++) {
                        if (s.get(java.lang.foreign.ValueLayout.JAVA_BYTE, b) != draftPattern(tag, position, l, buf,
                                b)) {
                            return false;
                        }
                    }
                }
            }
        }
        return true;
    }

    /** Host pages allocated equal pages referenced by the tree on every rank (nothing leaked). */
    void checkNoLeak() {
        for (int r = 0; r < cp; r++) {
            if (ctl[r].hostLeasesOpen() != 0) {
                throw new AssertionError("rank " + r + ": " + ctl[r].hostLeasesOpen() + " host leases open");
            }
            if (cp == 1 && ctl[r].allocator().allocatedPages() != ctl[r].tree().hostPagesCommitted()) {
                throw new AssertionError("host pages leaked: " + ctl[r].allocator().allocatedPages()
                        + " allocated, " + ctl[r].tree().hostPagesCommitted() + " in the tree");
            }
            ctl[r].tree().checkInvariants();
        }
    }

    @Override
    public void close() {
        for (int r = 0; r < cp; r++) {
            tier[r].close(5_000);
        }
        for (int r = 0; r < cp; r++) {
            ctl[r].close();
            rt[r].deviceFree(base[r]);
            if (draftBase[r] != 0) {
                rt[r].deviceFree(draftBase[r]);
            }
            rt[r].close();
        }
    }
}
