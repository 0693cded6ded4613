package io.hicache.soak;

import io.aeron.Aeron;
import io.hicache.aeron.AeronRankGroup;
import io.hicache.aeron.AgreementConfig;
import io.hicache.core.AbortReason;
import io.hicache.core.BackupHandle;
import io.hicache.core.DevicePageAllocator;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.LoadHandle;
import io.hicache.core.LoadOverlap;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.simulated.HostThreadCudaRuntime;
import io.hicache.radix.MatchResult;
import io.hicache.storage.KeyNamespace;
import io.hicache.storage.L3Prefetch;
import io.hicache.storage.L3Tier;
import io.hicache.storage.PageStore;
import io.hicache.storage.PageStores;
import io.hicache.storage.StorageMetric;
import io.hicache.storage.StorageTierConfig;
import io.hicache.storage.StoreConfig;
import io.hicache.storage.StoreStats;
import io.hicache.storage.file.FilePageStore;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.SystemNanoClock;

import java.io.IOException;
import java.io.Writer;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * One rank process of the soak ({@link Soak} starts them): joins the epoch's CP group over Aeron, drives a
 * {@link HiCache} on a {@link HostThreadCudaRuntime} (wrapped by {@link CountingRuntime}, which injects copy-launch
 * and event-wait errors) with draft layers and an L3 tier on Redis or on a file store with a quota (a full disk)
 * through the public API as an engine would, on a workload every rank derives from the same seed (so all ranks
 * schedule identically), and verifies every page a load brings back, target and draft, byte for byte against
 * {@link KvPattern}. It writes its counters to {@code --stats} every second and at the end (with the leaks found
 * after closing everything).
 *
 * <p>The epoch ends at {@code --until-ms} (wall clock) or 3 s after a peer was declared failed (the coordinator
 * killed it; the rank goes on serving in the degraded group meanwhile): the rank drains, closes and reports. Exit status: 0 done, 2 bad arguments, 3 a wait that no failure explains
 * ran past its bound (a hang), 4 a byte mismatch. One thread does everything (scheduler and forward).
 */
public final class SoakRank {
    static final int PAGE = 16;
    static final int LAYERS = 4;
    static final int DEVICE_PAGES = 192;
    static final int HOST_PAGES = 96;
    static final int MAX_PAGES = 20;
    static final int CONVERSATIONS = 24;

    private final Map<String, String> a;
    private final int ranks;
    private final int rank;
    private final int draftLayers;
    private final long untilMs;
    private final long waitBoundNs;
    private final Path statsFile;
    private final SplittableRandom rnd;
    private final IdleStrategy idle = new BackoffIdleStrategy(10, 20, 1_000, 100_000);
    private final Map<String, Long> c = new HashMap<>();
    private final int[] conversationPages = new int[CONVERSATIONS];
    private final int[] conversationGeneration = new int[CONVERSATIONS];
    private final int[] freePages = new int[DEVICE_PAGES];
    private int freeCount;
    private HostThreadCudaRuntime device;
    private CountingRuntime runtime;
    private HiCache cache;
    private L3Tier l3;
    private PageStore store;
    private AeronRankGroup group;
    private AeronRankGroup prefetchGroup;
    private DeviceKvLayout target;
    private DeviceKvLayout draft;
    private long nextStatsMs;
    private boolean peerFailed;

    private SoakRank(Map<String, String> a) {
        this.a = a;
        this.ranks = Integer.parseInt(a.get("ranks"));
        this.rank = Integer.parseInt(a.get("rank"));
        this.draftLayers = Integer.parseInt(a.get("draft-layers"));
        this.untilMs = Long.parseLong(a.get("until-ms"));
        this.waitBoundNs = 20 * TimeUnit.MILLISECONDS.toNanos(Long.parseLong(a.get("member-timeout-ms")));
        this.statsFile = Path.of(a.get("stats"));
        this.rnd = new SplittableRandom(Long.parseLong(a.get("seed")) * 1_000_003L + Long.parseLong(a.get("epoch")));
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            a.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        boolean file = "file".equals(a.getOrDefault("l3", "redis"));
        for (String k : List.of("ranks", "rank", "draft-layers", "seed", "epoch", "group-id", "token", "aeron-dir",
            file ? "l3-dir" : "redis-port", "until-ms", "stats", "member-timeout-ms", "lease-ms", "run-dir")) {
            if (!a.containsKey(k)) {
                System.err.println("soak rank: --" + k + " is required");
                System.exit(2);
            }
        }
        System.exit(new SoakRank(a).run());
    }

    private int run() throws Exception {
        long timeoutNs = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(a.get("member-timeout-ms")));
        long groupId = Long.parseLong(a.get("group-id"));
        long token = Long.parseLong(a.get("token"));
        SystemNanoClock clock = SystemNanoClock.INSTANCE;
        int status = 0;
        Set<Thread> threadsBefore;
        try (Aeron aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(a.get("aeron-dir")))) {
            group = new AeronRankGroup(aeron, "aeron:ipc?term-length=4m", 1701,
                new AgreementConfig(groupId, token, ranks, rank, timeoutNs, Math.max(timeoutNs / 20, 1_000_000)),
                clock, 1 << 20);
            prefetchGroup = new AeronRankGroup(aeron, "aeron:ipc?term-length=4m", 1702,
                new AgreementConfig(groupId + 1, token, ranks, rank, timeoutNs, Math.max(timeoutNs / 20, 1_000_000)),
                clock, 1 << 20);
            threadsBefore = Set.copyOf(Thread.getAllStackTraces().keySet());
            open();
            Files.writeString(Path.of(a.get("run-dir"), "ready-" + rank), "ready");
            Path start = Path.of(a.get("run-dir"), "start");
            while (!Files.exists(start)) {
                idle.idle(group.doWork() + prefetchGroup.doWork());
            }
            try {
                long failedAtMs = 0;
                while (System.currentTimeMillis() < untilMs) {
                    try {
                        step();
                    } catch (EpochOver e) {
                        break;
                    }
                    peerFailed |= group.failedMask() != 0 || prefetchGroup.failedMask() != 0;
                    writeStats(false, null);
                    // a peer failed: go on serving, as an engine does until its group is restarted (backups and loads
                    // of a degraded group abort with RANK_FAILED), then end the epoch
                    if (peerFailed && failedAtMs == 0) {
                        failedAtMs = System.currentTimeMillis();
                    }
                    if (failedAtMs > 0 && System.currentTimeMillis() > failedAtMs + 3_000) {
                        break;
                    }
                }
                drain();
            } catch (Mismatch m) {
                System.err.println("rank " + rank + ": " + m.getMessage());
                status = 4;
            } catch (Hang h) {
                System.err.println("rank " + rank + ": " + h.getMessage());
                status = 3;
            }
            Map<String, Long> leaks = close(threadsBefore);
            writeStats(true, leaks);
            group.close();
            prefetchGroup.close();
        }
        return status;
    }

    private void open() {
        device = new HostThreadCudaRuntime();
        runtime = new CountingRuntime(device, Long.parseLong(a.get("seed")) * 31 + rank,
            Double.parseDouble(a.getOrDefault("cuda-faults", "0")),
            Double.parseDouble(a.getOrDefault("cuda-event-faults", "0")));
        DeviceKvLayout.Builder tb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS).pageSizeTokens(PAGE)
            .bytesPerTokenPerBuffer(16).pageCount(DEVICE_PAGES);
        target = tb.packedFrom(runtime.deviceMalloc(tb.packedBytes())).build();
        HiCache.Builder b = HiCache.builder().runtime(runtime).targetLayout(target).hostPages(HOST_PAGES)
            .threadingMode(ThreadingMode.INVOKER).writePolicy(WritePolicy.WRITE_THROUGH)
            .leaseNs(TimeUnit.MILLISECONDS.toNanos(Long.parseLong(a.get("lease-ms"))))
            .loadOverlap(LoadOverlap.PREVIOUS_BATCH, "the soak verifies every loaded byte before the pages are used");
        if (draftLayers > 0) {
            DeviceKvLayout.Builder db = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(draftLayers)
                .pageSizeTokens(PAGE).bytesPerTokenPerBuffer(16).pageCount(DEVICE_PAGES);
            draft = db.packedFrom(runtime.deviceMalloc(db.packedBytes())).build();
            b.draftLayout(draft);
        }
        if (ranks > 1) {
            b.cpGroup(ranks, rank, OwnerLanes.Standard.ROUND_ROBIN, group.backupAgreement(), group.loadAgreement());
        }
        cache = b.build();
        for (int p = DEVICE_PAGES - 1; p >= 0; p--) {
            freePages[freeCount++] = p;
        }
        if ("file".equals(a.getOrDefault("l3", "redis"))) {
            // a directory shared by the ranks, with a quota that fails writes as a full disk does
            store = PageStores.open("file:" + a.get("l3-dir"), StoreConfig.builder()
                .fileQuotaBytes(Long.parseLong(a.getOrDefault("file-quota-bytes", "0"))).build());
        } else {
            store = PageStores.open("redis://127.0.0.1:" + a.get("redis-port"), StoreConfig.defaults());
        }
        KeyNamespace ns = KeyNamespace.builder().modelId("hicache-soak").kvDtype("bf16").pageSizeTokens(PAGE)
            .hostLayout(cache.hostPool().layout()).role(KeyNamespace.Role.TARGET).cp(ranks, rank).build();
        StorageTierConfig tc = StorageTierConfig.DEFAULT.withPrefetchThresholdTokens(PAGE);
        l3 = ranks > 1 ? L3Tier.attach(cache, store, ns, tc, prefetchGroup.backupAgreement())
            : L3Tier.attach(cache, store, ns, tc);
    }

    /** One request: match, L3 prefetch, load-back (verified), compute the rest, back it up in a forward. */
    private void step() {
        int conv = rnd.nextInt(4) == 0 ? -1 : rnd.nextInt(CONVERSATIONS);
        int pages;
        long id;
        if (conv < 0) {
            pages = 1 + rnd.nextInt(8);
            id = 1_000_000_000L + rnd.nextInt(1 << 30);
        } else {
            if (conversationPages[conv] >= MAX_PAGES) {
                conversationPages[conv] = 0;
                conversationGeneration[conv]++;
            }
            pages = Math.min(MAX_PAGES, conversationPages[conv] + 1 + rnd.nextInt(3));
            conversationPages[conv] = pages;
            id = ((long) conversationGeneration[conv] << 20) + conv;
        }
        boolean stall = rnd.nextInt(40) == 0;
        int stallAt = rnd.nextInt(LAYERS);
        int len = pages * PAGE;
        int[] tokens = new int[len];
        for (int i = 0; i < len; i++) {
            // conversations share one of 4 system prompts (their first 2 pages)
            long src = conv >= 0 && i < 2 * PAGE ? 7_000 + conv % 4 : id;
            tokens[i] = (int) (KvPattern.mix(src * 1_000_003L + i) & 0x7fffffff);
        }
        long[] prefix = new long[pages];
        for (int p = 0; p < pages; p++) {
            prefix[p] = KvPattern.chain(p == 0 ? 0 : prefix[p - 1], tokens, p, PAGE);
        }
        long requestId = count("requests", 1);
        ensureFree(pages);
        MatchResult m = cache.match(tokens, 0, len, new MatchResult());
        L3Prefetch pf = conv >= 0 ? l3.prefetch(tokens, 0, len, m, requestId) : null;
        boolean fromL3 = false;
        if (pf != null) {
            count("l3_prefetches", 1);
            waitFor(pf::isDone, "prefetch");
            fromL3 = pf.publishedPages() > 0;
            m = cache.match(tokens, 0, len, m);
        }
        if (m.hostPageCount() > 0) {
            int devicePrefix = m.devicePageCount();
            LoadHandle load = cache.loadBack(m, requestId, Integer.MAX_VALUE, allocator);
            if (load != null) {
                cache.startLoading();
                waitFor(() -> load.state() == LoadHandle.State.LOADED || load.state() == LoadHandle.State.FAILED,
                    "load");
                if (load.state() == LoadHandle.State.LOADED) {
                    verify(load, devicePrefix, prefix, fromL3);
                } else {
                    count("loads_failed", 1);
                }
            }
        }
        if (pf != null) {
            pf.consume();
        }
        compute(tokens, prefix, pages, stall, stallAt);
    }

    private void compute(int[] tokens, long[] prefix, int pages, boolean stall, int stallAt) {
        ensureFree(pages);
        if (freeCount < pages) {
            count("compute_skipped_no_device_room", 1);
            return;
        }
        int[] dev = new int[pages];
        for (int p = 0; p < pages; p++) {
            dev[p] = freePages[--freeCount];
            writeKv(dev[p], prefix[p]);
        }
        int dup = cache.insert(tokens, 0, pages * PAGE, dev, 0) / PAGE;
        free(dev, 0, dup);
        List<BackupHandle> backups = new ArrayList<>();
        cache.reserveByPolicy(cache.lastInsertNode(), draftLayers > 0, backups);
        if (backups.isEmpty()) {
            return;
        }
        ForwardHooks h = cache.beginForward(backups);
        count("forwards", 1);
        try {
            for (int l = 0; l < LAYERS; l++) {
                if (stall && l == stallAt) {
                    // the forward stalls past its lease; the same thread then goes on hooking its revoked handle
                    count("stalls", 1);
                    waitFor(() -> backups.stream().anyMatch(b -> b.abortReason() != null || b.state().terminal()),
                        "lease");
                }
                h.targetLayerStored(l);
            }
            for (int d = 0; d < draftLayers; d++) {
                h.draftLayerStored(d);
            }
            h.endForward();
        } catch (IllegalStateException e) {
            if (!String.valueOf(e.getMessage()).contains("lease")) {
                throw e;
            }
            count("hooks_refused_after_lease", 1);
        }
        waitFor(() -> backups.stream().allMatch(b -> b.state().terminal()), "backup");
    }

    private void writeKv(int page, long prefix) {
        for (int l = 0; l < LAYERS; l++) {
            for (int buf = 0; buf < target.bufferCount(); buf++) {
                KvPattern.fill(device.deviceMemory(target.pageAddress(l, buf, page), target.pageBytes()), prefix, l,
                    KvPattern.TARGET, buf, rank);
            }
        }
        for (int l = 0; l < draftLayers; l++) {
            for (int buf = 0; buf < draft.bufferCount(); buf++) {
                KvPattern.fill(device.deviceMemory(draft.pageAddress(l, buf, page), draft.pageBytes()), prefix, l,
                    KvPattern.DRAFT, buf, rank);
            }
        }
    }

    /** Checks every page of {@code load} this rank owns (position mod ranks), every layer, target and draft. */
    private void verify(LoadHandle load, int devicePrefix, long[] prefix, boolean fromL3) {
        long bytes = 0;
        for (int i = 0; i < load.pageCount(); i++) {
            int pos = devicePrefix + i;
            if (pos % ranks != rank) {
                continue;
            }
            int page = load.devicePage(i);
            for (int l = 0; l < LAYERS; l++) {
                for (int buf = 0; buf < target.bufferCount(); buf++) {
                    check(device.deviceMemory(target.pageAddress(l, buf, page), target.pageBytes()), prefix[pos], l,
                        KvPattern.TARGET, buf, pos);
                    bytes += target.pageBytes();
                }
            }
            for (int l = 0; l < draftLayers; l++) {
                for (int buf = 0; buf < draft.bufferCount(); buf++) {
                    check(device.deviceMemory(draft.pageAddress(l, buf, page), draft.pageBytes()), prefix[pos], l,
                        KvPattern.DRAFT, buf, pos);
                    bytes += draft.pageBytes();
                }
            }
        }
        count("loads_verified", 1);
        count("bytes_verified", bytes);
        if (fromL3) {
            count("loads_verified_after_l3", 1);
        }
    }

    private void check(java.lang.foreign.MemorySegment seg, long prefix, int layer, int role, int buf, int pos) {
        if (!KvPattern.matches(seg, prefix, layer, role, buf, rank)) {
            count("mismatches", 1);
            throw new Mismatch("loaded page at position " + pos + " layer " + layer + (role == KvPattern.DRAFT
                ? " (draft)" : " (target)") + " buffer " + buf + " does not hold the KV computed for it");
        }
    }

    private final DevicePageAllocator allocator = new DevicePageAllocator() {
        @Override
        public boolean allocate(int count, int[] out, int offset) {
            if (freeCount < count) {
                return false;
            }
            for (int i = 0; i < count; i++) {
                out[offset + i] = freePages[--freeCount];
            }
            return true;
        }

        @Override
        public void free(int[] pages, int offset, int count) {
            SoakRank.this.free(pages, offset, count);
        }
    };

    private void free(int[] pages, int offset, int count) {
        for (int i = 0; i < count; i++) {
            freePages[freeCount++] = pages[offset + i];
        }
    }

    private void ensureFree(int pages) {
        if (freeCount < pages + 8) {
            cache.evictDevice(pages + 8 - freeCount, this::free);
        }
    }

    /** Drives the cache, its agents and the group until {@code done}; bounded (a peer's failure ends the epoch). */
    private void waitFor(BooleanSupplier done, String what) {
        long deadline = System.nanoTime() + waitBoundNs;
        idle.reset();
        while (!done.getAsBoolean()) {
            int work = cache.doAgentWork() + cache.poll() + group.doWork() + prefetchGroup.doWork();
            if (System.nanoTime() > deadline) {
                if (group.failedMask() != 0 || prefetchGroup.failedMask() != 0) {
                    peerFailed = true;
                    throw new EpochOver();
                }
                throw new Hang(what + " did not finish within " + TimeUnit.NANOSECONDS.toMillis(waitBoundNs)
                    + " ms and no peer failed");
            }
            idle.idle(work);
        }
    }

    private void drain() {
        try {
            waitFor(() -> cache.backupsInFlight() == 0 && cache.loadsInFlight() == 0 && l3.inFlight() == 0, "drain");
        } catch (EpochOver e) {
            count("drain_cut_by_peer_failure", 1);
        }
    }

    private Map<String, Long> close(Set<Thread> threadsBefore) throws InterruptedException {
        snapshotCounters();
        cache.close(); // closes the L3 tier first
        store.close();
        runtime.deviceFree(target.bufferBase(0, 0));
        if (draft != null) {
            runtime.deviceFree(draft.bufferBase(0, 0));
        }
        Map<String, Long> leaks = new HashMap<>();
        long deviceBytes = 0;
        long pinnedBytes = 0;
        for (HostThreadCudaRuntime.Allocation x : device.liveAllocations()) {
            if (x.kind() == HostThreadCudaRuntime.MemoryKind.DEVICE) {
                deviceBytes += x.bytes();
            } else {
                pinnedBytes += x.bytes();
            }
        }
        leaks.put("device_bytes", deviceBytes);
        leaks.put("pinned_host_bytes", pinnedBytes);
        leaks.put("streams", runtime.liveStreams());
        leaks.put("events", runtime.liveEvents());
        runtime.close();
        long threads = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (!threadsBefore.contains(t) && t != Thread.currentThread()) {
                t.join(5_000); // a thread the cache, store or device started must end once they are closed
                if (t.isAlive()) {
                    System.err.println("rank " + rank + ": thread left running: " + t.getName());
                    threads++;
                }
            }
        }
        leaks.put("threads", threads);
        return leaks;
    }

    /** Copies the cache's and the store's counters into the rank's counters (before they are closed). */
    private void snapshotCounters() {
        var mt = cache.metrics();
        c.put("backups_committed", mt.get(Metric.BACKUPS_COMMITTED));
        c.put("backups_reserved", mt.get(Metric.BACKUPS_RESERVED));
        c.put("aborts.lease_expired", mt.abortedBy(AbortReason.LEASE_EXPIRED));
        c.put("aborts.rank_failed", mt.abortedBy(AbortReason.RANK_FAILED));
        c.put("aborts.cuda_error", mt.abortedBy(AbortReason.CUDA_ERROR));
        c.put("host_pages_evicted", mt.get(Metric.HOST_PAGES_EVICTED));
        c.put("cuda_faults_injected", runtime.copyFaults());
        c.put("cuda_event_faults_injected", runtime.eventFaults());
        StoreStats s = store.stats();
        c.put("l3.puts", s.putPages());
        c.put("l3.gets", s.getHitPages());
        // a miss: a page position a prefetch asked for that was not published (the store lacked it, or its read
        // failed: failed_prefetch_pages); the store's own get misses are keys gone between exists and get
        long requested = l3.metrics().get(StorageMetric.PREFETCH_PAGES_REQUESTED);
        long published = l3.metrics().get(StorageMetric.PREFETCH_PAGES_PUBLISHED);
        c.put("l3.prefetch_pages_requested", requested);
        c.put("l3.misses", requested - published);
        c.put("l3.failed_prefetch_pages", l3.metrics().get(StorageMetric.PREFETCH_FAILED_PAGES));
        c.put("l3.get_misses", s.missPages());
        c.put("l3.disk_full_errors", store instanceof FilePageStore f ? f.diskFullErrors() : 0L);
        c.put("l3.corrupt", s.corruptPages());
        c.put("l3.backend_errors", s.errors());
        c.put("l3.failed_pages", s.failedPages());
    }

    private long count(String key, long n) {
        return c.merge(key, n, Long::sum);
    }

    private void writeStats(boolean last, Map<String, Long> leaks) {
        long now = System.currentTimeMillis();
        if (!last && now < nextStatsMs) {
            return;
        }
        nextStatsMs = now + 1_000;
        if (!last) {
            snapshotCounters();
        }
        Properties p = new Properties();
        c.forEach((k, v) -> p.setProperty(k, Long.toString(v)));
        p.setProperty("final", Boolean.toString(last));
        p.setProperty("peer_failed", Boolean.toString(peerFailed));
        if (leaks != null) {
            leaks.forEach((k, v) -> p.setProperty("leaks." + k, Long.toString(v)));
        }
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (pool.getName().equals("direct")) {
                p.setProperty("direct_bytes", Long.toString(pool.getMemoryUsed()));
            }
        }
        p.setProperty("heap_used_bytes", Long.toString(Runtime.getRuntime().totalMemory()
            - Runtime.getRuntime().freeMemory()));
        try {
            Path tmp = statsFile.resolveSibling(statsFile.getFileName() + ".tmp");
            try (Writer w = Files.newBufferedWriter(tmp)) {
                p.store(w, null);
            }
            Files.move(tmp, statsFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            System.err.println("rank " + rank + ": cannot write " + statsFile + ": " + e);
        }
    }

    /** A loaded byte differs from the KV computed for it. */
    private static final class Mismatch extends RuntimeException {
        Mismatch(String message) {
            super(message);
        }
    }

    /** A wait ran past its bound with every peer alive. */
    private static final class Hang extends RuntimeException {
        Hang(String message) {
            super(message);
        }
    }

    /** A peer was declared failed during a wait: the epoch is over for this rank. */
    private static final class EpochOver extends RuntimeException {
    }
}
