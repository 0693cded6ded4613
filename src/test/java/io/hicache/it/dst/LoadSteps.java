package io.hicache.it.dst;

import io.hicache.core.CacheInternals;
import io.hicache.core.LoadListener;
import io.hicache.core.WritePolicy;
import io.hicache.core.internal.HostPages;
import io.hicache.core.internal.LoadOp;
import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTestAccess;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import static io.hicache.it.dst.DstHarness.loadClass;

/**
 * The load-back model of {@link DstHarness} (the load suite; idle in the others): the engine's load steps,
 * identical on every rank (loadBack through scripted device allocators, startLoading with the ring of event sets,
 * forwards that wait per layer, H2D faults), the loads in flight, and the checks made as loads end: (l2), (l3) and
 * (l6). Owned by the harness; single-threaded.
 */
final class LoadSteps {
    private final DstHarness harness;
    // ---- configuration and shared state, copied from the harness
    private final SplittableRandom rnd;
    private final int cp;
    private final int layers;
    private final int draftLayers;
    private final int pageSize;
    private final int devicePages;
    private final int maxRequestPages;
    private final WritePolicy policy;
    private final double h2dFaultProbability;
    private final double refuseAllocationProbability;
    private final int[][] familyTokens;
    private final Rank[] ranks;
    private final List<String> violations;
    // ---- load-back state
    /** Loads not yet finished, in the order they were made. */
    final List<LoadRec> loadRecs = new ArrayList<>();
    /** Loads made since the last startLoading. */
    final List<LoadRec> queuedLoads = new ArrayList<>();
    private final Map<LoadOp, LoadRec> recOfOp = new IdentityHashMap<>();
    /** The ring of load event sets as the harness expects it: the batch that last used each set. */
    private final Batch[] ring = new Batch[3];
    private int ringNext;
    private int nextLoadId;
    /** Rank 0's allocation decisions during one loadBack, replayed by the other ranks' allocators. */
    final List<int[]> allocScript = new ArrayList<>();
    /** Rank 0's allocator refuses its next call (the evict-and-retry path); drawn for each loadBack. */
    boolean refuseNextAllocation;

    LoadSteps(DstHarness harness) {
        this.harness = harness;
        this.rnd = harness.rnd;
        this.cp = harness.cp;
        this.layers = harness.layers;
        this.draftLayers = harness.draftLayers;
        this.pageSize = harness.pageSize;
        this.devicePages = harness.devicePages;
        this.maxRequestPages = harness.maxRequestPages;
        this.policy = harness.policy;
        this.h2dFaultProbability = harness.h2dFaultProbability;
        this.refuseAllocationProbability = harness.refuseAllocationProbability;
        this.familyTokens = harness.familyTokens;
        this.ranks = harness.ranks;
        this.violations = harness.violations;
    }

    /** The load listener of {@code rank}'s controller. */
    LoadListener listener(Rank rank) {
        return new Loads(rank);
    }

    /** One engine load step; false when nothing was done. */
    boolean loadStep() {
        if (!harness.consistent()) {
            return false;
        }
        int k = rnd.nextInt(10);
        if (k < 4) {
            engineLoad();
            return true;
        }
        if (k < 6) {
            return engineStartLoading(rnd.nextInt(5) != 0);
        }
        if (k < 8) {
            // a burst: several batches without a poll in between, so the ring runs out of free sets
            for (int i = 0; i < 4; i++) {
                engineLoad();
                engineStartLoading(rnd.nextBoolean());
            }
            return true;
        }
        finishLoads();
        return true;
    }

    /** Rank 0's host-only nodes with no ancestor (or self) in the chain of a load in flight. */
    private List<RadixNode> hostOnlyNotLoading() {
        Set<RadixNode> loading = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        for (LoadRec rec : loadRecs) {
            LoadOp op = rec.op[0];
            if (loadClass(op.state()) == 0 && op.node(op.nodeCount() - 1).isAttached()) {
                for (RadixNode n = op.node(op.nodeCount() - 1); n.isDeviceEvicted(); n = n.parent()) {
                    loading.add(n);
                }
            }
        }
        List<RadixNode> out = new ArrayList<>();
        RadixTestAccess.forEachNode(ranks[0].tree, n -> {
            if (!n.isDeviceEvicted()) {
                return;
            }
            for (RadixNode a = n; !a.isRoot(); a = a.parent()) {
                if (loading.contains(a)) {
                    return;
                }
            }
            out.add(n);
        });
        return out;
    }

    /** Matches a prefix of a family on every rank and, when it has a host-only extension, loads it back. */
    private void engineLoad() {
        List<RadixNode> hostOnly = hostOnlyNotLoading();
        if (hostOnly.isEmpty() && rnd.nextInt(4) != 0) {
            harness.engine.engineEvict(1 + rnd.nextInt(Math.max(1, devicePages / 3))); // make host-only chains to load
            hostOnly = hostOnlyNotLoading();
        }
        int[] base;
        int pages;
        if (!hostOnly.isEmpty() && rnd.nextInt(4) != 0) {
            // a request whose prefix ends in (or runs past) a host-only node
            RadixNode target = hostOnly.get(rnd.nextInt(hostOnly.size()));
            int tokens = 0;
            for (RadixNode n = target; !n.isRoot(); n = n.parent()) {
                tokens += n.tokenCount();
            }
            int extra = rnd.nextInt(3) == 0 ? pageSize * (1 + rnd.nextInt(2)) : 0;
            base = new int[tokens + extra];
            int at = tokens;
            for (RadixNode n = target; !n.isRoot(); n = n.parent()) {
                at -= n.tokenCount();
                n.copyTokens(base, at);
            }
            for (int i = tokens; i < base.length; i++) {
                base[i] = harness.uniqueToken++;
            }
            pages = rnd.nextInt(4) == 0 ? 1 + rnd.nextInt(base.length / pageSize) : base.length / pageSize;
        } else {
            base = familyTokens[rnd.nextInt(familyTokens.length)];
            pages = 1 + rnd.nextInt(maxRequestPages);
        }
        MatchResult[] m = new MatchResult[cp];
        for (Rank rank : ranks) {
            m[rank.r] = rank.tree.match(base, 0, pages * pageSize, new MatchResult());
            if (rank.r > 0 && (m[rank.r].devicePageCount() != m[0].devicePageCount()
                || m[rank.r].hostPageCount() != m[0].hostPageCount())) {
                fail("match on rank " + rank.r + " found " + m[rank.r].devicePageCount() + "+"
                    + m[rank.r].hostPageCount() + " pages but rank 0 found " + m[0].devicePageCount() + "+"
                    + m[0].hostPageCount());
            }
        }
        int hostTokens = m[0].hostTokenCount();
        if (hostTokens == 0) {
            count("load.noHostHit");
            return;
        }
        int quota = rnd.nextInt(4) == 0 ? rnd.nextInt(hostTokens + 2 * pageSize + 1) : Integer.MAX_VALUE;
        refuseNextAllocation = rnd.nextDouble() < refuseAllocationProbability;
        allocScript.clear();
        int id = nextLoadId++;
        LoadOp[] ops = new LoadOp[cp];
        for (Rank rank : ranks) {
            rank.allocator.beginCall();
            ops[rank.r] = CacheInternals.load(rank.cache.loadBack(m[rank.r], id, quota, rank.allocator));
            if (!rank.allocator.scriptDone()) {
                fail("rank " + rank.r + " asked its device allocator less often than rank 0");
            }
            if ((ops[rank.r] == null) != (ops[0] == null)
                || ops[rank.r] != null && (ops[rank.r].pageCount() != ops[0].pageCount()
                || ops[rank.r].nodeCount() != ops[0].nodeCount())) {
                fail("loadBack on rank " + rank.r + " returned " + ops[rank.r] + " but on rank 0 " + ops[0]);
            }
        }
        refuseNextAllocation = false;
        if (policy == WritePolicy.WRITE_BACK) {
            harness.engine.registerWriteBacks(); // loadBack may have evicted device pages to make room
        }
        if (ops[0] == null) {
            trace("loadBack " + hostTokens + " host tokens (quota " + quota + ") -> none");
            count("load.none");
            return;
        }
        LoadRec rec = new LoadRec(id, ops, cp);
        for (Rank rank : ranks) {
            LoadOp op = ops[rank.r];
            if (op.state() != LoadOp.State.QUEUED) {
                fail("rank " + rank.r + " new load is " + op.state());
            }
            int[] hostOf = rec.hostOf[rank.r];
            boolean[] draftOf = rec.draftOf[rank.r];
            int pos = 0;
            for (int k = 0; k < op.nodeCount(); k++) {
                RadixNode n = op.node(k);
                HostPages hp = (HostPages) n.hostValue();
                int[] offsets = new int[n.pageCount()];
                int owned = hp.lanes().ownedOffsets(offsets);
                for (int j = 0; j < owned; j++) {
                    hostOf[pos + offsets[j]] = hp.hostPage(j);
                    draftOf[pos + offsets[j]] = hp.hasDraft() && draftLayers > 0;
                }
                pos += n.pageCount();
            }
            if (pos != op.pageCount()) {
                fail("rank " + rank.r + " load " + id + " covers " + op.pageCount() + " pages but its nodes " + pos);
            }
            recOfOp.put(op, rec);
        }
        loadRecs.add(rec);
        queuedLoads.add(rec);
        int[] devPages = new int[ops[0].pageCount()];
        for (int i = 0; i < devPages.length; i++) {
            devPages[i] = ops[0].devicePage(i);
        }
        trace("loadBack " + hostTokens + " host tokens (quota " + quota + ") -> load " + id + " of "
            + ops[0].pageCount() + " pages into " + Arrays.toString(devPages));
        count("load.queued");
    }

    /**
     * Issues the queued loads on every rank when the next event set is free on every rank; provokes a reuse when
     * it is certainly still in use on every rank (no poll since it was issued), which must throw and change
     * nothing; does nothing when it cannot tell.
     */
    boolean engineStartLoading(boolean forward) {
        if (queuedLoads.isEmpty()) {
            return false;
        }
        Batch cur = ring[ringNext];
        boolean freeAll = true;
        boolean busyAll = true;
        for (Rank rank : ranks) {
            boolean free = cur == null || cur.terminalOn(rank.r);
            freeAll &= free;
            busyAll &= !free && rank.polls == cur.pollsAtIssue[rank.r];
        }
        if (busyAll) {
            provokeRingReuse();
            return true;
        }
        if (!freeAll) {
            return false;
        }
        int faultRank = -1;
        int faultLayer = -1;
        if (rnd.nextDouble() < h2dFaultProbability) {
            faultRank = rnd.nextInt(cp);
            faultLayer = rnd.nextBoolean() ? -1 : rnd.nextInt(layers);
        }
        Batch b = new Batch(new ArrayList<>(queuedLoads), cp, layers + draftLayers + 1);
        for (Rank rank : ranks) {
            if (rank.r == faultRank) {
                installH2dFault(rank, b, faultLayer);
            }
            long before = rank.rt.opsIssued();
            long token = rank.cache.startLoading();
            long after = rank.rt.opsIssued();
            if (rank.r == faultRank) {
                rank.rt.failCopiesMatching(null, null);
            }
            if (token < 0 || (token & 3) != ringNext) {
                fail("rank " + rank.r + " startLoading returned token " + token + " but event set " + ringNext
                    + " was expected");
            }
            b.token[rank.r] = token;
            b.seqFrom[rank.r] = before;
            b.seqTo[rank.r] = after;
            b.pollsAtIssue[rank.r] = rank.polls;
            rank.timedBatches.add(b);
        }
        for (LoadRec rec : b.recs) {
            rec.batch = b;
            for (LoadOp op : rec.op) {
                if (op.state() != LoadOp.State.ISSUED) {
                    fail("load " + rec.id + " is " + op.state() + " after startLoading");
                }
            }
        }
        queuedLoads.clear();
        ring[ringNext] = b;
        ringNext = (ringNext + 1) % ring.length;
        trace("startLoading set " + (b.token[0] & 3) + " loads " + b.ids() + (faultRank >= 0 ? " with H2D fault on rank "
            + faultRank + (faultLayer >= 0 ? " layer " + faultLayer : " all layers") : "")
            + (forward ? " + forward waiting per layer" : ""));
        count("load.batch");
        if (faultRank >= 0) {
            count("load.faultInjected");
        }
        if (forward) {
            loadForward(b);
        }
        return true;
    }

    /** Fails the H2D copies of this batch on {@code rank}: all, or those writing target layer {@code layer}. */
    private void installH2dFault(Rank rank, Batch b, int layer) {
        List<long[]> ranges = new ArrayList<>();
        if (layer >= 0) {
            for (LoadRec rec : b.recs) {
                LoadOp op = rec.op[rank.r];
                for (int i = 0; i < op.pageCount(); i++) {
                    for (int buf = 0; buf < rank.target.bufferCount(); buf++) {
                        long a = rank.target.pageAddress(layer, buf, op.devicePage(i));
                        ranges.add(new long[] {a, a + rank.target.pageBytes()});
                    }
                }
            }
        }
        rank.rt.failCopiesMatching((dst, src, bytes, kind) -> {
            if (kind != CopyKind.HOST_TO_DEVICE) {
                return false;
            }
            if (layer < 0) {
                return true;
            }
            for (long[] r : ranges) {
                if (dst < r[1] && r[0] < dst + bytes) {
                    return true;
                }
            }
            return false;
        }, CudaError.UNKNOWN);
    }

    private void provokeRingReuse() {
        for (Rank rank : ranks) {
            int inFlight = rank.cache.loadsInFlight();
            long ops = rank.rt.opsIssued();
            try {
                long token = rank.cache.startLoading();
                fail("rank " + rank.r + " startLoading reused event set " + ringNext + " still in use (no poll since it "
                    + "was issued) and returned token " + token);
            } catch (IllegalStateException e) {
                if (e.getMessage() == null || !e.getMessage().contains("still in use")) {
                    fail("rank " + rank.r + " ring reuse threw " + e + " without saying the set is still in use");
                }
            }
            if (rank.cache.loadsInFlight() != inFlight || rank.rt.opsIssued() != ops) {
                fail("rank " + rank.r + " a refused startLoading changed state: loads in flight " + inFlight + " -> "
                    + rank.cache.loadsInFlight() + ", device ops " + ops + " -> " + rank.rt.opsIssued());
            }
        }
        for (LoadRec rec : queuedLoads) {
            for (LoadOp op : rec.op) {
                if (op.state() != LoadOp.State.QUEUED) {
                    fail("load " + rec.id + " is " + op.state() + " after a refused startLoading");
                }
            }
        }
        trace("startLoading refused: event set " + ringNext + " still in use");
        count("load.ringReuseRefused");
    }

    /** Record index on the load stream of (layer, draft): per layer the target event, then the draft event. */
    private int recordIndex(int layer, boolean isDraft) {
        int idx = 0;
        for (int l = 0; l < layer; l++) {
            idx += (l < layers ? 1 : 0) + (l < draftLayers ? 1 : 0);
        }
        return idx + (isDraft && layer < layers ? 1 : 0);
    }

    /**
     * The batch's forward on every rank: per layer a wait on the load, then a host function on the compute stream
     * that observes the loaded layer (its time and bytes), then the layer's compute.
     */
    private void loadForward(Batch b) {
        for (LoadRec rec : b.recs) {
            rec.forward = true;
        }
        int maxLayers = Math.max(layers, draftLayers);
        for (Rank rank : ranks) {
            for (int l = 0; l < maxLayers; l++) {
                for (int d = 0; d < 2; d++) {
                    boolean isDraft = d == 1;
                    if (l >= (isDraft ? draftLayers : layers)) {
                        continue;
                    }
                    if (isDraft) {
                        rank.cache.waitDraftLayer(b.token[rank.r], l);
                    } else {
                        rank.cache.waitLayer(b.token[rank.r], l);
                    }
                    int layer = l;
                    int idx = recordIndex(l, isDraft);
                    rank.rt.launchHostFunc(rank.cache.computeStream(), () -> observeLayer(rank, b, isDraft, layer, idx));
                    rank.rt.simulateKernel(rank.cache.computeStream(), 500 + rnd.nextInt(10_000));
                }
            }
            int r = rank.r;
            rank.rt.launchHostFunc(rank.cache.computeStream(), () -> {
                for (LoadRec rec : b.recs) {
                    rec.computeDone[r] = true;
                }
            });
        }
        count("load.forward");
    }

    /**
     * (l6) Runs on the compute stream just before the layer's compute: the layer's load event and every copy before
     * it on the load stream have completed by now; pages whose bytes differ from the host copy are remembered (the
     * load must then fail).
     */
    private void observeLayer(Rank rank, Batch b, boolean isDraft, int layer, int idx) {
        long now = rank.rt.nowNs();
        int r = rank.r;
        long eventNs = b.recordEndNs[r][idx];
        if (eventNs < 0 || eventNs > now || b.copiesDoneNs[r][idx] > now) {
            violations.add("rank " + r + " compute of " + (isDraft ? "draft" : "target") + " layer " + layer
                + " waiting on loads " + b.ids() + " started at " + now + " ns but the layer's load event completed at "
                + (eventNs < 0 ? "(not yet)" : eventNs + " ns") + " and its copies at " + b.copiesDoneNs[r][idx] + " ns");
        }
        for (LoadRec rec : b.recs) {
            LoadOp op = rec.op[r];
            for (int i = 0; i < op.pageCount(); i++) {
                int h = rec.hostOf[r][i];
                if (h < 0 || isDraft && !rec.draftOf[r][i]) {
                    continue;
                }
                if (!rank.deviceEqualsHost(isDraft, layer, op.devicePage(i), h)) {
                    rec.badRead[r].set(i);
                }
            }
        }
    }

    /** Op listener: times the load-stream copies and events of each batch in flight. */
    void onDeviceOp(Rank rank, long seq, int type, long stream, long endNs) {
        if (stream != rank.loadStream || rank.timedBatches.isEmpty()) {
            return;
        }
        int r = rank.r;
        for (Batch b : rank.timedBatches) {
            if (seq <= b.seqFrom[r] || seq > b.seqTo[r]) {
                continue;
            }
            if (type == SimulatedCudaRuntime.OP_COPY) {
                b.maxCopyEndNs[r] = Math.max(b.maxCopyEndNs[r], endNs);
            } else if (type == SimulatedCudaRuntime.OP_RECORD && b.nextRecord[r] < b.recordEndNs[r].length) {
                int k = b.nextRecord[r]++;
                b.recordEndNs[r][k] = endNs;
                b.copiesDoneNs[r][k] = b.maxCopyEndNs[r];
            }
        }
    }

    /**
     * After a poll on {@code rank}: (l2) a load that became LOADED has, on every page attached to the tree, the
     * committed host bytes of every layer, target and draft; the engine locks its last node while its forward
     * runs. (l3) one that FAILED returned every device page and left no page of it in the tree.
     */
    void onLoadsPolled(Rank rank) {
        int r = rank.r;
        for (LoadRec rec : loadRecs) {
            LoadOp op = rec.op[r];
            if (rec.terminalSeen[r] || loadClass(op.state()) == 0) {
                continue;
            }
            rec.terminalSeen[r] = true;
            if (op.state() == LoadOp.State.LOADED) {
                count("load.loaded");
                for (int i = 0; i < op.pageCount(); i++) {
                    int dp = op.devicePage(i);
                    if (rank.freeModel.get(dp)) {
                        count("load.duplicatePageFreed"); // an insert adopted the node meanwhile
                        continue;
                    }
                    rec.attached[r].set(i);
                    int h = rec.hostOf[r][i];
                    if (h < 0) {
                        continue;
                    }
                    for (int l = 0; l < layers; l++) {
                        if (!rank.deviceEqualsHost(false, l, dp, h)) {
                            violations.add("rank " + r + " load " + rec.id + " is LOADED but device page " + dp
                                + " (chain page " + i + ") target layer " + l + " differs from host page " + h);
                        }
                    }
                    for (int d = 0; d < draftLayers && rec.draftOf[r][i]; d++) {
                        if (!rank.deviceEqualsHost(true, d, dp, h)) {
                            violations.add("rank " + r + " load " + rec.id + " is LOADED but device page " + dp
                                + " (chain page " + i + ") draft layer " + d + " differs from host page " + h);
                        }
                    }
                }
                RadixNode last = op.node(op.nodeCount() - 1);
                rank.cache.lock(last);
                rec.locked[r] = last;
            } else {
                count("load.failed");
                for (int i = 0; i < op.pageCount(); i++) {
                    if (!rank.freeModel.get(op.devicePage(i))) {
                        violations.add("rank " + r + " load " + rec.id + " FAILED but its device page "
                            + op.devicePage(i) + " did not come back to the engine");
                    }
                }
            }
        }
    }

    /** Ends loads that are terminal on every rank and whose forward ran everywhere: unlocks, final checks. */
    void finishLoads() {
        for (Iterator<LoadRec> it = loadRecs.iterator(); it.hasNext(); ) {
            LoadRec rec = it.next();
            boolean done = true;
            for (int r = 0; r < cp; r++) {
                done &= rec.terminalSeen[r] && (!rec.forward || rec.computeDone[r]);
            }
            if (!done) {
                continue;
            }
            for (Rank rank : ranks) {
                int r = rank.r;
                if (rec.op[r].state() == LoadOp.State.LOADED && rec.badRead[r].intersects(rec.attached[r])) {
                    BitSet bad = (BitSet) rec.badRead[r].clone();
                    bad.and(rec.attached[r]);
                    violations.add("rank " + r + " load " + rec.id + " was agreed LOADED but the forward waiting on it "
                        + "read other bytes than the host copy on chain pages " + bad);
                }
                if (rec.locked[r] != null) {
                    rank.cache.unlock(rec.locked[r]);
                    rec.locked[r] = null;
                }
                recOfOp.remove(rec.op[r]);
            }
            it.remove();
            trace("load " + rec.id + " finished " + rec.op[0].state());
            if (rec.batch != null && rec.batch.finished(loadRecs)) {
                for (Rank rank : ranks) {
                    rank.timedBatches.remove(rec.batch);
                }
            }
        }
        throwViolations();
    }

    /** Told of loads that end; only checks that they are known. */
    private final class Loads implements LoadListener {
        private final Rank rank;

        Loads(Rank rank) {
            this.rank = rank;
        }

        @Override
        public void onLoaded(io.hicache.core.LoadHandle op) {
            known((LoadOp) op, "loaded");
        }

        @Override
        public void onLoadFailed(io.hicache.core.LoadHandle op) {
            known((LoadOp) op, "failed");
        }

        private void known(LoadOp op, String what) {
            LoadRec rec = recOfOp.get(op);
            if (rec == null || rec.op[rank.r] != op) {
                violations.add("rank " + rank.r + " listener told of an unknown load " + op + " " + what);
            }
            count("load.listener." + what);
        }
    }

    // ---- the harness's trace, counters and violations

    private void count(String what) {
        harness.count(what);
    }

    private void trace(String what) {
        harness.trace(what);
    }

    private void fail(String message) {
        harness.fail(message);
    }

    private void throwViolations() {
        harness.throwViolations();
    }
}
