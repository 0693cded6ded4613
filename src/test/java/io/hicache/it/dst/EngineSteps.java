package io.hicache.it.dst;

import io.hicache.core.CacheInternals;
import io.hicache.core.AbortReason;
import io.hicache.core.BackupMode;
import io.hicache.core.BackupState;
import io.hicache.core.WritePolicy;
import io.hicache.core.internal.Backup;
import io.hicache.core.internal.ForwardHandle;
import io.hicache.cuda.CudaException;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTestAccess;
import io.hicache.radix.spi.PendingBackup;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import static io.hicache.it.dst.DstHarness.UNSET;

/**
 * The engine steps of {@link DstHarness}, identical on every rank: requests (insert, reserve by policy or
 * explicitly, begin a forward), the forwards' per-layer writes and hooks with the expected bytes they set, aborts,
 * matches, device evictions with the write-backs they reserve, and finishing requests. Holds the engine's requests
 * and open forwards. Owned by the harness; single-threaded.
 */
final class EngineSteps {
    private static final int MAX_FORWARD_GROUPS = 5;
    private static final AbortReason[] ENGINE_REASONS = {AbortReason.REQUEST_CANCELLED, AbortReason.PREEMPTED,
        AbortReason.ENGINE};

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
    private final BackupMode mode;
    private final boolean leases;
    private final int[][] familyTokens;
    private final Rank[] ranks;
    private final Map<Long, Rec> recs;
    // ---- engine state
    /** Requests whose last node stays locked until their forward's compute work ran on every rank. */
    final List<Request> requests = new ArrayList<>();
    /** Forwards in progress (at most {@link DstHarness#maxOpenForwards}), in the order they began. */
    final List<Forward> opens = new ArrayList<>();
    private int nextGroup;
    private int nextForwardId;

    EngineSteps(DstHarness harness) {
        this.harness = harness;
        this.rnd = harness.rnd;
        this.cp = harness.cp;
        this.layers = harness.layers;
        this.draftLayers = harness.draftLayers;
        this.pageSize = harness.pageSize;
        this.devicePages = harness.devicePages;
        this.maxRequestPages = harness.maxRequestPages;
        this.policy = harness.policy;
        this.mode = harness.mode;
        this.leases = harness.leases;
        this.familyTokens = harness.familyTokens;
        this.ranks = harness.ranks;
        this.recs = harness.recs;
    }

    private int forwardGroupsInFlight() {
        Set<Integer> groups = new HashSet<>();
        for (Rec rec : recs.values()) {
            for (Backup b : rec.b) {
                if (b != null && b.state() == BackupState.COPYING || b.state() == BackupState.DRAINING) {
                    groups.add(rec.group);
                }
            }
        }
        return groups.size();
    }

    private int[] requestTokens(int pages) {
        int[] base = familyTokens[rnd.nextInt(familyTokens.length)];
        int shared = rnd.nextInt(pages + 1);
        if (rnd.nextInt(3) == 0) {
            shared = pages;
        }
        int[] t = new int[pages * pageSize];
        System.arraycopy(base, 0, t, 0, shared * pageSize);
        for (int i = shared * pageSize; i < t.length; i++) {
            t[i] = harness.uniqueToken++;
        }
        return t;
    }

    /**
     * An engine shares with a new request only KV whose forward has been launched: a request whose prefix another
     * open forward has yet to write would attend over KV not computed yet (and a write-back of that prefix, ordered
     * after the compute stream's work so far, would copy it unwritten). Where {@code tokens} would share a page an
     * open forward still writes, they diverge from the first such page on, with fresh tokens (no random draw).
     */
    private void divergeFromPagesBeingWritten(int[] tokens) {
        int pages = tokens.length / pageSize;
        int keep = pages;
        for (Forward f : opens) {
            int[] other = f.req.tokens;
            int same = Arrays.mismatch(tokens, other); // the common prefix's length; -1: equal arrays
            if (same < 0) {
                same = tokens.length;
            }
            if (same / pageSize > f.req.firstNewPage) {
                keep = Math.min(keep, f.req.firstNewPage);
            }
        }
        if (keep < pages) {
            for (int i = keep * pageSize; i < tokens.length; i++) {
                tokens[i] = harness.uniqueToken++;
            }
            trace("request diverges after " + keep + " pages: an open forward still writes the next");
            count("request.divergedFromOpenForward");
        }
    }

    void engineRequest() {
        engineRequest(DstHarness.SAME);
    }

    /**
     * A request: insert, reserve (by policy or explicitly) and begin its forward on every rank. With {@code divergent}
     * {@link DstHarness#SKIP} one rank's schedule skips the request's reservations; with {@link DstHarness#FLIP_DRAFT}
     * it reserves them with the draft flag flipped (the divergence suite).
     */
    void engineRequest(int divergent) {
        int pages = 1 + rnd.nextInt(maxRequestPages);
        int[] tokens = requestTokens(pages);
        divergeFromPagesBeingWritten(tokens);
        if (harness.devices.freeDevice.freePages() < pages) {
            engineEvict(pages - harness.devices.freeDevice.freePages());
            if (harness.devices.freeDevice.freePages() < pages) {
                trace("request of " + pages + " pages skipped: no device room");
                count("request.noDeviceRoom");
                return;
            }
        }
        int[] dev = new int[pages];
        for (int i = 0; i < pages; i++) {
            dev[i] = harness.devices.freeDevice.poll();
            for (Rank rank : ranks) {
                harness.devices.takeDevice(rank, dev[i]);
            }
        }
        int dup = -1;
        RadixNode[] last = new RadixNode[cp];
        for (Rank rank : ranks) {
            int d = rank.cache.insert(tokens, 0, tokens.length, dev, 0);
            if (dup >= 0 && d != dup) {
                fail("insert found " + d + " tokens present on rank " + rank.r + " but " + dup + " on rank 0");
            }
            dup = d;
            last[rank.r] = rank.cache.lastInsertNode();
        }
        int dupPages = dup / pageSize;
        for (int i = 0; i < dupPages; i++) {
            harness.devices.freeDevice.free(dev[i]);
            for (Rank rank : ranks) {
                rank.freeModel.set(dev[i]);
            }
        }
        int[] newPages = Arrays.copyOfRange(dev, dupPages, pages);
        trace("request " + pages + " pages (" + dupPages + " present) new device pages " + Arrays.toString(newPages));
        count("request");
        Request req = new Request(last, cp, newPages, tokens, dupPages);
        if (!last[0].isRoot()) {
            for (Rank rank : ranks) {
                rank.cache.lock(last[rank.r]);
            }
        }
        requests.add(req);

        List<List<Backup>> per = new ArrayList<>();
        for (int r = 0; r < cp; r++) {
            per.add(new ArrayList<>());
        }
        boolean withDraft = draftLayers > 0 && rnd.nextInt(4) != 0;
        int group = nextGroup++;
        List<Rec> forwardRecs = new ArrayList<>();
        // the rank whose schedule diverges in this request (the divergence suite), else -1
        int odd = divergent == DstHarness.SAME ? -1 : harness.divergeRnd.nextInt(cp);
        int sure = odd == 0 ? 1 : 0; // a rank that keeps the schedule
        if (forwardGroupsInFlight() < MAX_FORWARD_GROUPS && !last[0].isRoot() && !pathBeingWritten(last[0])) {
            if (rnd.nextInt(5) == 0) {
                boolean can = ranks[0].tree.canBackUp(last[0]);
                if (can) {
                    for (Rank rank : ranks) {
                        // (each rank asks its own tree: after a release past the sealed time limit they differ)
                        if (rank.r == odd && divergent == DstHarness.SKIP || !rank.tree.canBackUp(last[rank.r])) {
                            continue;
                        }
                        boolean draft = rank.r == odd ? !withDraft : withDraft;
                        Backup b = CacheInternals.backup(rank.cache.reserve(last[rank.r], draft));
                        if (b != null) {
                            per.get(rank.r).add(b);
                        }
                    }
                    trace("reserve explicit -> " + per.get(sure).size());
                }
            } else {
                for (Rank rank : ranks) {
                    if (rank.r == odd && divergent == DstHarness.SKIP) {
                        continue;
                    }
                    boolean draft = rank.r == odd ? !withDraft : withDraft;
                    long skippedBefore = rank.cache.metrics().skipped();
                    CacheInternals.reserveByPolicy(rank.cache, last[rank.r], draft, per.get(rank.r));
                    checkNoSilentSkip(rank, last[rank.r], skippedBefore);
                }
                trace("reserveByPolicy -> " + per.get(sure).size());
            }
            int most = 0;
            for (int r = 0; r < cp; r++) {
                most = Math.max(most, per.get(r).size());
                if (r != odd && per.get(r).size() != per.get(sure).size()) {
                    if (!releasedPastTimeLimit()) {
                        fail("rank " + r + " reserved " + per.get(r).size() + " backups but rank " + sure
                            + " reserved " + per.get(sure).size());
                    }
                    // a rank released a backup past the sealed time limit: its host room and tree differ from the
                    // others', so its reservations may too, and the group finds the schedules diverged
                    harness.diverged = true;
                    count("diverge.afterTimeLimit");
                }
            }
            if (odd >= 0 && !per.get(sure).isEmpty()) {
                harness.diverged = true;
                trace("DIVERGENT schedule: rank " + odd + (divergent == DstHarness.SKIP ? " skips the "
                    : " flips the draft flag of the ") + per.get(sure).size() + " reservations");
                count(divergent == DstHarness.SKIP ? "diverge.skip" : "diverge.flipDraft");
            }
            for (int i = 0; i < most; i++) {
                Backup[] bs = new Backup[cp];
                for (int r = 0; r < cp; r++) {
                    bs[r] = i < per.get(r).size() ? per.get(r).get(i) : null;
                }
                forwardRecs.add(register(bs, group));
            }
            if (odd >= 0 && divergent == DstHarness.SKIP && harness.diverged) {
                followUp(per, forwardRecs, group, withDraft);
            }
            // sometimes the engine drops a reservation before its forward starts
            if (odd < 0 && !forwardRecs.isEmpty() && rnd.nextInt(10) == 0) {
                int idx = rnd.nextInt(forwardRecs.size());
                Rec rec = forwardRecs.remove(idx);
                AbortReason reason = ENGINE_REASONS[rnd.nextInt(ENGINE_REASONS.length)];
                trace("abort RESERVED seq " + rec.seq + " " + reason);
                for (int r = 0; r < cp; r++) {
                    ranks[r].cache.abort(rec.b[r], reason);
                    per.get(r).remove(idx);
                }
            }
        }
        // sometimes the request is cancelled before its forward is launched (the lease suite keeps its schedules)
        if (!leases && rnd.nextInt(12) == 0) {
            cancelBeforeForward(req, forwardRecs);
            return;
        }
        count(forwardRecs.isEmpty() ? "forward.noBackup" : "forward.withBackups");
        ForwardHandle[] h = new ForwardHandle[cp];
        int[] counts = new int[cp];
        for (int r = 0; r < cp; r++) {
            counts[r] = per.get(r).size();
        }
        boolean noSlot = false;
        for (Rank rank : ranks) {
            try {
                h[rank.r] = CacheInternals.forward(rank.cache.beginForward(per.get(rank.r)));
            } catch (IllegalStateException e) {
                // every slot is leased (forwards in flight, or handles that have not let go): the engine drops
                // this forward's reservations on every rank and runs it without backups
                if (!leases || !e.getMessage().contains("forwards with backups in flight")) {
                    throw e;
                }
                noSlot = true;
            }
        }
        if (noSlot) {
            trace("beginForward: no free slot on some rank; reservations dropped");
            count("forward.noSlot");
            for (Rec rec : forwardRecs) {
                for (Rank rank : ranks) {
                    if (rec.b[rank.r] != null) {
                        rank.cache.abort(rec.b[rank.r], AbortReason.ENGINE);
                    }
                }
            }
            for (Rank rank : ranks) {
                if (h[rank.r] == null) {
                    h[rank.r] = CacheInternals.forward(rank.cache.beginForward(List.of()));
                    counts[rank.r] = 0;
                }
            }
            forwardRecs = new ArrayList<>();
        }
        Forward f = new Forward(h, forwardRecs, req, plan(), nextForwardId++, counts);
        trace("forward " + f.id + " begins with " + forwardRecs.size() + " backups");
        opens.add(f);
    }

    /**
     * A request cancelled after its insert and reservations, before its forward was launched: on every rank the engine
     * aborts the reservations, unlocks the request's node and withdraws what it inserted (never computed), as
     * {@code CacheRequest.cancel} does. The same pages leave every rank's tree, the prefix the request found stays on
     * the device, and every withdrawn page comes back to the engine: now, or when the backup still holding it is
     * released (checked by (l4) and the device page checks meanwhile).
     */
    private void cancelBeforeForward(Request req, List<Rec> forwardRecs) {
        AbortReason reason = rnd.nextBoolean() ? AbortReason.REQUEST_CANCELLED : AbortReason.PREEMPTED;
        for (Rec rec : forwardRecs) {
            for (Rank rank : ranks) {
                if (rec.b[rank.r] != null) {
                    rank.cache.abort(rec.b[rank.r], reason);
                }
            }
        }
        requests.remove(req);
        int computed = req.firstNewPage * pageSize;
        int withdrawn = -1;
        for (Rank rank : ranks) {
            if (!req.last[rank.r].isRoot()) {
                rank.cache.unlock(req.last[rank.r]);
            }
            int w = rank.cache.withdrawUncomputed(req.tokens, 0, req.tokens.length, computed, reason, (arr, off, n) -> {
                for (int i = 0; i < n; i++) {
                    harness.devices.releaseDevice(rank, arr[off + i]);
                }
            });
            if (withdrawn >= 0 && w != withdrawn) {
                fail("withdrawUncomputed took " + w + " pages on rank " + rank.r + " but " + withdrawn + " on rank 0");
            }
            withdrawn = w;
            MatchResult m = rank.tree.match(req.tokens, 0, req.tokens.length, new MatchResult());
            if (m.devicePageCount() != req.firstNewPage) {
                fail("rank " + rank.r + ": after withdrawing a cancelled request's " + w + " uncomputed pages a match "
                    + "finds " + m.devicePageCount() + " device pages; the request found " + req.firstNewPage);
            }
        }
        if (withdrawn != req.newPages.length) {
            fail("withdrawUncomputed took " + withdrawn + " pages of a request that inserted " + req.newPages.length);
        }
        trace("request cancelled before its forward (" + reason + "): " + withdrawn + " pages withdrawn, "
            + forwardRecs.size() + " reservations aborted");
        count("request.cancelledBeforeForward");
    }

    /** Whether any rank released a sealed backup past its time limit (its host state may differ from the others'). */
    private boolean releasedPastTimeLimit() {
        for (Rank rank : ranks) {
            if (rank.cache.metrics().abortedBy(AbortReason.AGREEMENT_TIMEOUT) > 0) {
                return true;
            }
        }
        return false;
    }

    /**
     * After a skipped reservation, a reservation every rank makes (a fresh one-page sequence under the root, in the same
     * forward): on the rank that skipped it takes the sequence number the others gave the skipped node, so the next
     * round that could retire it finds the fingerprints different.
     */
    private void followUp(List<List<Backup>> per, List<Rec> forwardRecs, int group, boolean withDraft) {
        if (harness.devices.freeDevice.freePages() < 1) {
            count("diverge.noFollowUp");
            return;
        }
        int[] tokens = new int[pageSize];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = harness.uniqueToken++;
        }
        int[] dev = {harness.devices.freeDevice.poll()};
        Backup[] bs = new Backup[cp];
        for (Rank rank : ranks) {
            harness.devices.takeDevice(rank, dev[0]);
            if (rank.cache.insert(tokens, 0, tokens.length, dev, 0) != 0) {
                fail("rank " + rank.r + ": a fresh sequence was found present");
            }
            bs[rank.r] = CacheInternals.backup(rank.cache.reserve(rank.cache.lastInsertNode(), withDraft));
        }
        int made = 0;
        for (Backup b : bs) {
            made += b == null ? 0 : 1;
        }
        if (made == 0) {
            count("diverge.followUpNoRoom");
            return;
        }
        if (made != cp) {
            // the rank that skipped has more host room than the others: the engine drops what it got
            for (Rank rank : ranks) {
                if (bs[rank.r] != null) {
                    rank.cache.abort(bs[rank.r], AbortReason.ENGINE);
                }
            }
            register(bs, group);
            count("diverge.followUpPartial");
            return;
        }
        for (Rank rank : ranks) {
            per.get(rank.r).add(bs[rank.r]);
        }
        forwardRecs.add(register(bs, group));
        trace("follow-up reservation on every rank");
        count("diverge.followUp");
    }

    /**
     * Nothing is skipped silently: after {@code reserveByPolicy}, every node of the path that is neither backed up
     * nor pending was counted under a {@code WritePolicy.SkipReason} by that call (loads in flight, failed loads,
     * lease expiries and CP ranks included: a node below a loading chain is reserved like any other).
     */
    private void checkNoSilentSkip(Rank rank, RadixNode last, long skippedBefore) {
        long notBackedUp = 0;
        for (RadixNode n = last; n != null && !n.isRoot(); n = n.parent()) {
            if (!n.isBackedUp()) {
                notBackedUp++;
            }
        }
        long counted = rank.cache.metrics().skipped() - skippedBefore;
        if (counted != notBackedUp) {
            fail("rank " + rank.r + ": reserveByPolicy left " + notBackedUp + " nodes of the path without a backup but"
                + " counted " + counted + " as skipped");
        }
        count(notBackedUp == 0 ? "reserve.pathCovered" : "reserve.pathSkipped");
    }

    /**
     * True when the path to {@code last} holds a page another open forward has not finished writing: an engine
     * does not back up KV still being computed (the expected bytes at a hook would be overtaken by that forward's
     * later writes, which no copy is ordered against).
     */
    private boolean pathBeingWritten(RadixNode last) {
        if (opens.isEmpty()) {
            return false;
        }
        BitSet writing = new BitSet(devicePages);
        for (Forward f : opens) {
            for (int p : f.req.newPages) {
                writing.set(p);
            }
        }
        for (RadixNode n = last; n != null && !n.isRoot(); n = n.parent()) {
            if (n.hasDeviceValue()) {
                for (int i = 0; i < n.pageCount(); i++) {
                    if (writing.get(n.devicePage(i))) {
                        count("reserve.pathBeingWritten");
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /** Target layers in order, draft layers in order interleaved among them, then END; sometimes a hook is left out. */
    private int[] plan() {
        int[] p = new int[layers + draftLayers + 1];
        int t = 0;
        int d = 0;
        int n = 0;
        boolean skips = mode == BackupMode.LAYERED;
        while (t < layers || d < draftLayers) {
            boolean takeDraft = d < draftLayers && (t == layers || rnd.nextInt(3) == 0);
            if (takeDraft) {
                boolean skip = skips && rnd.nextInt(25) == 0;
                p[n++] = ((skip ? Forward.DRAFT_NO_HOOK : Forward.DRAFT) << 16) | d++;
            } else {
                boolean skip = skips && rnd.nextInt(60) == 0;
                p[n++] = ((skip ? Forward.TARGET_NO_HOOK : Forward.TARGET) << 16) | t++;
            }
        }
        p[n] = Forward.END << 16;
        return p;
    }

    private Rec register(Backup[] bs, int group) {
        Backup first = null;
        for (Backup b : bs) {
            if (first == null && b != null) {
                first = b;
            }
        }
        long seq = first.seq();
        for (int r = 0; r < cp; r++) {
            if (bs[r] != null && (!harness.diverged && bs[r].seq() != seq || bs[r].pageCount() != first.pageCount())) {
                if (!releasedPastTimeLimit()) {
                    fail("rank " + r + " reserved seq " + bs[r].seq() + " (" + bs[r].pageCount() + " pages) where "
                        + "another rank reserved seq " + seq + " (" + first.pageCount() + " pages)");
                }
                // as in engineRequest: the trees differ since a release past the sealed time limit
                harness.diverged = true;
                count("diverge.afterTimeLimit");
            }
        }
        RadixNode node = first.node();
        int[] allDev = new int[node.pageCount()];
        node.copyDevicePages(allDev, 0);
        Rec rec = new Rec(seq, bs, allDev, first.withDraft(), RadixTestAccess.startPage(node), node.pageCount(), group);
        recs.put(harness.nextRecId++, rec);
        for (Backup b : bs) {
            if (b != null && harness.byBackup.put(b, rec) != null) {
                fail("backup " + b + " registered twice");
            }
        }
        for (Rank rank : ranks) {
            Backup b = bs[rank.r];
            if (b == null) {
                continue;
            }
            for (int i = 0; i < b.ownedPageCount(); i++) {
                int hp = b.hostPage(i);
                Arrays.fill(rank.expT[hp], UNSET);
                Arrays.fill(rank.expD[hp], UNSET);
                rank.hostDraft[hp] = b.withDraft();
            }
        }
        count("reserved");
        return rec;
    }

    void forwardStep(Forward f) {
        int op = f.plan[f.pos++];
        int kind = op >>> 16;
        int layer = op & 0xFFFF;
        try {
            switch (kind) {
                case Forward.TARGET, Forward.TARGET_NO_HOOK -> {
                    int tag = harness.nextTag++;
                    long kernelNs = 1_000L + rnd.nextInt(20_000);
                    trace("forward " + f.id + " target layer " + layer + (kind == Forward.TARGET ? " + hook" : " WITHOUT hook") + " tag " + tag);
                    for (Rank rank : ranks) {
                        rank.rt.simulateKernel(rank.cache.computeStream(), kernelNs);
                        queueWrite(rank, false, layer, f.req.newPages, tag);
                        if (kind == Forward.TARGET && hook(f, rank, false, layer)) {
                            if (mode == BackupMode.LAYERED) {
                                expectLayer(rank, f.recs, false, layer);
                            }
                        }
                    }
                    if (kind == Forward.TARGET_NO_HOOK) {
                        count("hook.targetSkipped");
                    }
                }
                case Forward.DRAFT, Forward.DRAFT_NO_HOOK -> {
                    int tag = harness.nextTag++;
                    trace("forward " + f.id + " draft layer " + layer + (kind == Forward.DRAFT ? " + hook" : " WITHOUT hook") + " tag " + tag);
                    for (Rank rank : ranks) {
                        rank.rt.simulateKernel(rank.cache.computeStream(), 500 + rnd.nextInt(5_000));
                        queueWrite(rank, true, layer, f.req.newPages, tag);
                        if (kind == Forward.DRAFT && hook(f, rank, true, layer)) {
                            if (mode == BackupMode.LAYERED) {
                                expectLayer(rank, f.recs, true, layer);
                            }
                        }
                    }
                    if (kind == Forward.DRAFT_NO_HOOK) {
                        count("hook.draftSkipped");
                    }
                }
                default -> {
                    trace("forward " + f.id + " endForward");
                    for (Rank rank : ranks) {
                        if (hook(f, rank, false, -1) && mode == BackupMode.ALL_LAYERS) {
                            for (int l = 0; l < layers; l++) {
                                expectLayer(rank, f.recs, false, l);
                            }
                            for (int d = 0; d < draftLayers; d++) {
                                expectLayer(rank, f.recs, true, d);
                            }
                        }
                        Request req = f.req;
                        int r = rank.r;
                        rank.rt.launchHostFunc(rank.cache.computeStream(), () -> req.computeDone[r] = true);
                    }
                    f.req.ended = true;
                    opens.remove(f);
                }
            }
        } catch (CudaException e) {
            if (!harness.stickyInjected) {
                throw e;
            }
            opens.clear();
        }
    }

    /**
     * Calls one hook ({@code layer} -1: endForward) of {@code f} on {@code rank}. Returns false when the hook threw
     * because the forward's lease expired: allowed only when the forward's backups on that rank were aborted, the
     * hook must have touched no CUDA state, and every later hook of the handle must throw too (the forward thread
     * goes on calling them, as a stalled engine would).
     */
    private boolean hook(Forward f, Rank rank, boolean isDraft, int layer) {
        ForwardHandle h = f.h[rank.r];
        long opsBefore = rank.rt.opsIssued();
        try {
            if (layer < 0) {
                h.endForward();
            } else if (isDraft) {
                h.draftLayerStored(layer);
            } else {
                h.targetLayerStored(layer);
            }
        } catch (IllegalStateException e) {
            if (!e.getMessage().contains("lease expired")) {
                throw e;
            }
            if (rank.rt.opsIssued() != opsBefore) {
                fail("rank " + rank.r + " forward " + f.id + ": a hook that threw for an expired lease issued "
                    + (rank.rt.opsIssued() - opsBefore) + " device operations");
            }
            for (Rec rec : f.recs) {
                if (rec.b[rank.r] == null) {
                    continue;
                }
                BackupState s = rec.b[rank.r].state();
                if (s != BackupState.DRAINING && s != BackupState.ABORTED) {
                    fail("rank " + rank.r + " forward " + f.id + " hook threw a lease expiry but backup seq "
                        + rec.seq + " is " + s);
                }
            }
            if (!f.revoked[rank.r]) {
                f.revoked[rank.r] = true;
                trace("forward " + f.id + " rank " + rank.r + " lease expired; its hooks now throw");
                count("lease.handleRevoked");
            } else {
                count("lease.hookAfterRevoked");
            }
            return false;
        }
        if (f.revoked[rank.r]) {
            fail("rank " + rank.r + " forward " + f.id + ": a hook succeeded after an earlier one threw a lease expiry");
        }
        // the poll that expired the lease revoked the handle at once: a hook that still succeeds acts on a slot its
        // forward no longer owns (before slot leases: re-recording the events of the forward that reused the slot)
        for (Rec rec : f.recs) {
            Backup b = rec.b[rank.r];
            if (b != null && b.abortReason() == AbortReason.LEASE_EXPIRED) {
                fail("rank " + rank.r + " forward " + f.id + ": a hook succeeded after the lease of backup seq "
                    + rec.seq + " expired");
            }
        }
        if (h.backupCount() != f.backupCounts[rank.r]) {
            fail("rank " + rank.r + " forward " + f.id + " carries " + f.backupCounts[rank.r] + " backups but its handle reports "
                + h.backupCount() + " (another forward's slot)");
        }
        return true;
    }

    /** Queues, on the compute stream, a write of a new pattern into layer {@code layer} of {@code pages}. */
    private void queueWrite(Rank rank, boolean isDraft, int layer, int[] pages, int tag) {
        int[][] tags = isDraft ? rank.devTagD : rank.devTagT;
        for (int pg : pages) {
            tags[layer][pg] = tag;
        }
        rank.rt.launchHostFunc(rank.cache.computeStream(), () -> {
            for (int pg : pages) {
                rank.writeDevice(isDraft, layer, pg, tag);
            }
        });
    }

    /** The hook of {@code layer} fired: every host page of the forward's backups must end up with the device's bytes now. */
    private void expectLayer(Rank rank, List<Rec> forwardRecs, boolean isDraft, int layer) {
        for (Rec rec : forwardRecs) {
            Backup b = rec.b[rank.r];
            if (b == null || isDraft && !b.withDraft()) {
                continue;
            }
            for (int i = 0; i < b.ownedPageCount(); i++) {
                int dp = b.ownedDevicePage(i);
                int tag = (isDraft ? rank.devTagD : rank.devTagT)[layer][dp];
                (isDraft ? rank.expD : rank.expT)[b.hostPage(i)][layer] = ((long) tag << 32) | dp;
            }
        }
    }

    void engineAbort() {
        List<Rec> live = new ArrayList<>();
        for (Rec rec : recs.values()) {
            if (rec.b[0] != null && !rec.b[0].state().terminal()) {
                live.add(rec);
            }
        }
        if (live.isEmpty()) {
            return;
        }
        List<Rec> parents = leases ? List.of() : parentsWithChildrenInFlight(live);
        boolean parent = !parents.isEmpty() && rnd.nextBoolean();
        Rec rec = parent ? parents.get(rnd.nextInt(parents.size())) : live.get(rnd.nextInt(live.size()));
        AbortReason reason = ENGINE_REASONS[rnd.nextInt(ENGINE_REASONS.length)];
        trace("abort seq " + rec.seq + " (" + rec.b[0].state() + ") " + reason
            + (parent ? ", a parent with backups in flight below it" : ""));
        count(parent ? "abort.parentWithChildrenInFlight" : "abort");
        for (Rank rank : ranks) {
            if (rec.b[rank.r] != null) {
                rank.cache.abort(rec.b[rank.r], reason);
            }
        }
    }

    /**
     * The live backups with another live backup reserved below their node (while they were pending): cancelling one of
     * them must take those along (h).
     */
    private static List<Rec> parentsWithChildrenInFlight(List<Rec> live) {
        List<Rec> parents = new ArrayList<>();
        for (Rec child : live) {
            RadixNode top = child.b[0].fragment(0);
            for (RadixNode p = top.parent(); p != null && !p.isRoot(); p = p.parent()) {
                if (p.pending() instanceof Backup b && !b.state().terminal()) {
                    for (Rec rec : live) {
                        if (rec.b[0] == b && !parents.contains(rec)) {
                            parents.add(rec);
                        }
                    }
                }
            }
        }
        return parents;
    }

    void engineMatch() {
        int[] base = familyTokens[rnd.nextInt(familyTokens.length)];
        int pages = 1 + rnd.nextInt(maxRequestPages);
        int dev = -1;
        int host = -1;
        for (Rank rank : ranks) {
            MatchResult m = rank.tree.match(base, 0, pages * pageSize, new MatchResult());
            if (dev >= 0 && (m.devicePageCount() != dev || m.hostPageCount() != host)) {
                fail("match on rank " + rank.r + " found " + m.devicePageCount() + "+" + m.hostPageCount()
                    + " pages but rank 0 found " + dev + "+" + host);
            }
            dev = m.devicePageCount();
            host = m.hostPageCount();
        }
        trace("match " + pages + " pages -> device " + dev + " host " + host);
        count("match");
    }

    void engineEvict(int pages) {
        if (policy == WritePolicy.WRITE_BACK && forwardGroupsInFlight() >= MAX_FORWARD_GROUPS) {
            return;
        }
        List<List<Integer>> freed = new ArrayList<>();
        int evicted = -1;
        for (Rank rank : ranks) {
            List<Integer> got = new ArrayList<>();
            freed.add(got);
            int e = rank.cache.evictDevice(pages, (arr, off, n) -> {
                for (int i = 0; i < n; i++) {
                    harness.devices.releaseDevice(rank, arr[off + i]);
                    got.add(arr[off + i]);
                }
            });
            if (evicted >= 0 && e != evicted && !harness.diverged) {
                fail("evictDevice evicted " + e + " pages on rank " + rank.r + " but " + evicted + " on rank 0");
            }
            evicted = e;
        }
        for (int r = 1; r < cp; r++) {
            // (once the schedules diverged, the ranks' trees may differ: a skipped reservation's host eviction)
            if (!freed.get(r).equals(freed.get(0)) && !harness.diverged) {
                fail("rank " + r + " freed device pages " + freed.get(r) + " but rank 0 freed " + freed.get(0));
            }
        }
        trace("evictDevice " + pages + " -> " + freed.get(0));
        count("evict");
        if (policy == WritePolicy.WRITE_BACK) {
            registerWriteBacks();
        }
    }

    /** Write-back reservations made inside evictDevice: registered, expected bytes are the device's now. */
    void registerWriteBacks() {
        List<List<Backup>> found = new ArrayList<>();
        for (Rank rank : ranks) {
            List<Backup> mine = new ArrayList<>();
            RadixTestAccess.forEachNode(rank.tree, n -> {
                PendingBackup pb = n.pending();
                if (pb instanceof Backup b && !harness.byBackup.containsKey(b) && !mine.contains(b)) {
                    mine.add(b);
                }
            });
            mine.sort((a, c) -> Long.compare(a.seq(), c.seq()));
            found.add(mine);
        }
        int group = nextGroup++;
        for (int i = 0; i < found.get(0).size(); i++) {
            Backup[] bs = new Backup[cp];
            for (int r = 0; r < cp; r++) {
                if (found.get(r).size() != found.get(0).size()) {
                    fail("rank " + r + " made " + found.get(r).size() + " write-backs but rank 0 made " + found.get(0).size());
                }
                bs[r] = found.get(r).get(i);
            }
            Rec rec = register(bs, group);
            List<Rec> one = List.of(rec);
            for (Rank rank : ranks) {
                for (int l = 0; l < layers; l++) {
                    expectLayer(rank, one, false, l);
                }
                for (int d = 0; d < draftLayers; d++) {
                    expectLayer(rank, one, true, d);
                }
            }
            count("writeBack");
            trace("write-back seq " + rec.seq);
        }
    }

    void finishRequests() {
        for (Iterator<Request> it = requests.iterator(); it.hasNext(); ) {
            Request req = it.next();
            boolean done = req.ended;
            for (boolean b : req.computeDone) {
                done &= b;
            }
            if (done) {
                if (!req.last[0].isRoot()) {
                    for (Rank rank : ranks) {
                        rank.cache.unlock(req.last[rank.r]);
                    }
                }
                it.remove();
                trace("request finished");
            }
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
}
