package io.hicache.it.dst;

import io.hicache.core.CacheInternals;
import io.hicache.core.internal.Backup;
import io.hicache.core.BackupState;
import io.hicache.core.DevicePageAllocator;
import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.HiCache;
import io.hicache.core.internal.LoadOp;
import io.hicache.core.ThreadingMode;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.memory.HostLayout;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.simulated.SimulatedCudaConfig;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Bytes loaded back equal bytes backed up, for every host layout, MHA and MLA, with and without draft KV, on one
 * rank and in a CP group: a sequence is written on the device, backed up layer by layer, evicted from the device
 * (its old pages overwritten), loaded back into other device pages while a forward waits per layer, and every
 * loaded page of every layer, target and draft, must hold the original device bytes on the rank that owns it;
 * pages another rank owns are left untouched. H2D bytes equal the D2H bytes of the backup.
 */
class LoadBackLayoutTest {
    private static final int LAYERS = 3;
    private static final int DRAFT_LAYERS = 2;
    private static final int PAGE_SIZE = 4;
    private static final int SEQ_PAGES = 6;
    private static final int DEVICE_PAGES = 2 * SEQ_PAGES;
    private static final long BYTES_PER_TOKEN = 16;
    private static final int ORIGINAL_TAG = 7;
    private static final int GARBAGE_TAG = 99;

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (HostLayout layout : HostLayout.values()) {
            for (AttentionKind kind : AttentionKind.values()) {
                for (boolean draft : new boolean[] {false, true}) {
                    for (int cp : new int[] {1, 3}) {
                        out.add(Arguments.of(layout, kind, draft, cp));
                    }
                }
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} {1} draft={2} cp={3}")
    @MethodSource("cases")
    void bytesLoadedEqualBytesBackedUp(HostLayout layout, AttentionKind kind, boolean withDraft, int cp) {
        Rank[] ranks = new Rank[cp];
        InProcessRankAgreement agreement = cp == 1 ? null : new InProcessRankAgreement(cp);
        try {
            for (int r = 0; r < cp; r++) {
                ranks[r] = new Rank(r, cp, agreement, layout, kind, withDraft);
            }
            int[] tokens = new int[SEQ_PAGES * PAGE_SIZE];
            for (int i = 0; i < tokens.length; i++) {
                tokens[i] = 5_000 + i;
            }
            int[] original = new int[SEQ_PAGES];
            for (int i = 0; i < SEQ_PAGES; i++) {
                original[i] = i;
            }
            // 1. write, insert and back up layer by layer
            List<List<Backup>> backups = new ArrayList<>();
            for (Rank rank : ranks) {
                for (int p : original) {
                    rank.writeAllLayers(p, ORIGINAL_TAG);
                }
                rank.cache.insert(tokens, 0, tokens.length, original, 0);
                List<Backup> mine = new ArrayList<>();
                CacheInternals.reserveByPolicy(rank.cache, rank.cache.lastInsertNode(), withDraft, mine);
                assertThat(mine).isNotEmpty();
                backups.add(mine);
                ForwardHandle h = CacheInternals.forward(rank.cache.beginForward(mine));
                for (int l = 0; l < LAYERS; l++) {
                    rank.rt.simulateKernel(rank.cache.computeStream(), 2_000);
                    h.targetLayerStored(l);
                }
                for (int d = 0; withDraft && d < DRAFT_LAYERS; d++) {
                    rank.rt.simulateKernel(rank.cache.computeStream(), 1_000);
                    h.draftLayerStored(d);
                }
                h.endForward();
            }
            runUntil(ranks, () -> backups.stream().flatMap(List::stream).allMatch(b -> b.state().terminal()));
            assertThat(backups.stream().flatMap(List::stream)).allMatch(b -> b.state() == BackupState.COMMITTED);
            // 2. evict from the device and overwrite the old pages
            for (Rank rank : ranks) {
                assertThat(rank.cache.evictDevice(SEQ_PAGES, (pages, off, n) -> { })).isEqualTo(SEQ_PAGES);
                for (int p : original) {
                    rank.writeAllLayers(p, GARBAGE_TAG);
                }
                for (int p = SEQ_PAGES; p < DEVICE_PAGES; p++) {
                    rank.writeAllLayers(p, GARBAGE_TAG);
                }
            }
            // 3. load back into other pages; the forward waits per layer
            LoadOp[] ops = new LoadOp[cp];
            for (Rank rank : ranks) {
                MatchResult m = CacheInternals.tree(rank.cache).match(tokens, 0, tokens.length, new MatchResult());
                assertThat(m.devicePageCount()).isZero();
                assertThat(m.hostPageCount()).isEqualTo(SEQ_PAGES);
                ops[rank.r] = CacheInternals.load(rank.cache.loadBack(m, 1, Integer.MAX_VALUE, new SecondHalf()));
                assertThat(ops[rank.r]).isNotNull();
                long token = rank.cache.startLoading();
                for (int l = 0; l < LAYERS; l++) {
                    rank.cache.waitLayer(token, l);
                    rank.rt.simulateKernel(rank.cache.computeStream(), 1_000);
                }
                for (int d = 0; withDraft && d < DRAFT_LAYERS; d++) {
                    rank.cache.waitDraftLayer(token, d);
                    rank.rt.simulateKernel(rank.cache.computeStream(), 1_000);
                }
            }
            runUntil(ranks, () -> Stream.of(ops).allMatch(op -> op.state() == LoadOp.State.LOADED
                || op.state() == LoadOp.State.FAILED));
            // 4. every owned page of every layer holds the original bytes; other ranks' pages are untouched
            for (Rank rank : ranks) {
                LoadOp op = ops[rank.r];
                assertThat(op.state()).isEqualTo(LoadOp.State.LOADED);
                RadixNode node = op.node(0);
                LaneDescription lanes = LaneDescription.singleRank(0, SEQ_PAGES, SEQ_PAGES);
                if (cp > 1) {
                    lanes = new LaneDescription(OwnerLanes.Standard.ZIGZAG, cp, rank.r, 0, SEQ_PAGES, SEQ_PAGES);
                }
                int owned = 0;
                for (int i = 0; i < SEQ_PAGES; i++) {
                    int dev = op.devicePage(i);
                    assertThat(node.devicePage(i)).isEqualTo(dev);
                    int expectTag = lanes.ownsOffset(i) ? ORIGINAL_TAG : GARBAGE_TAG;
                    int expectPage = lanes.ownsOffset(i) ? original[i] : dev;
                    owned += lanes.ownsOffset(i) ? 1 : 0;
                    for (int l = 0; l < LAYERS; l++) {
                        assertThat(rank.holds(false, l, dev, expectTag, expectPage))
                            .as("rank %d target layer %d chain page %d (device page %d)", rank.r, l, i, dev).isTrue();
                    }
                    for (int d = 0; withDraft && d < DRAFT_LAYERS; d++) {
                        assertThat(rank.holds(true, d, dev, expectTag, expectPage))
                            .as("rank %d draft layer %d chain page %d (device page %d)", rank.r, d, i, dev).isTrue();
                    }
                }
                long d2h = rank.cache.metric(Metric.D2H_TARGET_BYTES) + rank.cache.metric(Metric.D2H_DRAFT_BYTES);
                long expected = owned * (rank.target.pageBytes() * rank.target.bufferCount() * LAYERS
                    + (withDraft ? rank.draft.pageBytes() * rank.draft.bufferCount() * DRAFT_LAYERS : 0));
                assertThat(d2h).isEqualTo(expected);
                assertThat(rank.cache.metric(Metric.H2D_BYTES)).isEqualTo(d2h);
                CacheInternals.tree(rank.cache).checkInvariants();
            }
        } finally {
            for (Rank rank : ranks) {
                if (rank != null) {
                    rank.close();
                }
            }
        }
    }

    /** Steps agents, devices and polls of every rank until {@code done}. */
    private static void runUntil(Rank[] ranks, java.util.function.BooleanSupplier done) {
        for (int i = 0; i < 10_000; i++) {
            for (Rank rank : ranks) {
                rank.cache.doAgentWork();
                rank.cache.poll();
            }
            if (done.getAsBoolean()) {
                return;
            }
            for (Rank rank : ranks) {
                if (!rank.rt.advanceToNextEvent()) {
                    rank.rt.advanceTo(rank.rt.nowNs() + 1_000);
                }
            }
        }
        throw new AssertionError("did not finish");
    }

    /** Hands out the second half of the device pages, in order, on every rank. */
    private static final class SecondHalf implements DevicePageAllocator {
        @Override
        public boolean allocate(int count, int[] out, int offset) {
            for (int i = 0; i < count; i++) {
                out[offset + i] = SEQ_PAGES + i;
            }
            return true;
        }

        @Override
        public void free(int[] pages, int offset, int count) {
            throw new AssertionError("nothing is freed in this test");
        }
    }

    /** One rank: its simulated device, KV areas and controller. */
    private static final class Rank implements AutoCloseable {
        final int r;
        final SimulatedCudaRuntime rt;
        final DeviceKvLayout target;
        final DeviceKvLayout draft;
        final long targetBase;
        final long draftBase;
        final MemorySegment targetDev;
        final MemorySegment draftDev;
        final HiCache cache;

        Rank(int r, int cp, InProcessRankAgreement agreement, HostLayout layout, AttentionKind kind, boolean withDraft) {
            this.r = r;
            rt = new SimulatedCudaRuntime(SimulatedCudaConfig.builder().seed(17 + r).build());
            DeviceKvLayout.Builder tb = DeviceKvLayout.builder(kind).layerCount(LAYERS).pageSizeTokens(PAGE_SIZE)
                .bytesPerTokenPerBuffer(BYTES_PER_TOKEN).pageCount(DEVICE_PAGES);
            targetBase = rt.deviceMalloc(tb.packedBytes());
            target = tb.packedFrom(targetBase).build();
            targetDev = rt.deviceMemory(targetBase, tb.packedBytes());
            if (withDraft) {
                DeviceKvLayout.Builder db = DeviceKvLayout.builder(kind).layerCount(DRAFT_LAYERS)
                    .pageSizeTokens(PAGE_SIZE).bytesPerTokenPerBuffer(BYTES_PER_TOKEN / 2).pageCount(DEVICE_PAGES);
                draftBase = rt.deviceMalloc(db.packedBytes());
                draft = db.packedFrom(draftBase).build();
                draftDev = rt.deviceMemory(draftBase, db.packedBytes());
            } else {
                draftBase = 0;
                draft = null;
                draftDev = null;
            }
            HiCache.Builder hb = HiCache.builder().runtime(rt).targetLayout(target)
                .draftLayout(draft).hostPages(4 * SEQ_PAGES).hostLayout(layout).threadingMode(ThreadingMode.INVOKER)
                .clock(rt::nowNs).leaseNs(0).checkThread(false).loadThresholdTokens(1);
            if (cp > 1) {
                hb.cpGroup(cp, r, OwnerLanes.Standard.ZIGZAG, agreement);
            }
            cache = hb.build();
        }

        private MemorySegment area(boolean isDraft) {
            return isDraft ? draftDev : targetDev;
        }

        void writeAllLayers(int page, int tag) {
            for (int l = 0; l < LAYERS; l++) {
                write(false, l, page, tag);
            }
            for (int d = 0; draft != null && d < DRAFT_LAYERS; d++) {
                write(true, d, page, tag);
            }
        }

        private void write(boolean isDraft, int layer, int page, int tag) {
            DeviceKvLayout l = isDraft ? draft : target;
            MemorySegment seg = area(isDraft);
            long base = isDraft ? draftBase : targetBase;
            for (int buf = 0; buf < l.bufferCount(); buf++) {
                long off = l.pageAddress(layer, buf, page) - base;
                for (long w = 0; w < l.pageBytes() / 8; w++) {
                    seg.set(ValueLayout.JAVA_LONG_UNALIGNED, off + w * 8, DstHarness.pattern(tag, r, isDraft, layer,
                        buf, page, w));
                }
            }
        }

        /** True when layer {@code layer} of device page {@code page} holds what was written as {@code srcPage}. */
        boolean holds(boolean isDraft, int layer, int page, int tag, int srcPage) {
            DeviceKvLayout l = isDraft ? draft : target;
            MemorySegment seg = area(isDraft);
            long base = isDraft ? draftBase : targetBase;
            for (int buf = 0; buf < l.bufferCount(); buf++) {
                long off = l.pageAddress(layer, buf, page) - base;
                for (long w = 0; w < l.pageBytes() / 8; w++) {
                    if (seg.get(ValueLayout.JAVA_LONG_UNALIGNED, off + w * 8)
                        != DstHarness.pattern(tag, r, isDraft, layer, buf, srcPage, w)) {
                        return false;
                    }
                }
            }
            return true;
        }

        @Override
        public void close() {
            try {
                cache.close();
                rt.deviceFree(targetBase);
                if (draftBase != 0) {
                    rt.deviceFree(draftBase);
                }
                assertThat(rt.leakReport().clean()).as("leaks: %s", rt.leakReport()).isTrue();
            } finally {
                rt.close();
            }
        }
    }
}
