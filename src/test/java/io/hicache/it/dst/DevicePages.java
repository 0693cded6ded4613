package io.hicache.it.dst;

import io.hicache.core.internal.Backup;
import io.hicache.core.DevicePagePool;

import java.util.List;
import java.util.Map;

/**
 * Device page accounting of {@link DstHarness}: the engine's free list (one for the group: the ranks take the same
 * pages), and what happens to a page that comes back to the engine on a rank: checked against the model of free
 * pages, retired on the simulated device and, during the run, overwritten with a new pattern (check (c) and the
 * poison). Owned by the harness; single-threaded.
 */
final class DevicePages {
    private final DstHarness harness;
    // ---- configuration and shared state, copied from the harness
    private final int layers;
    private final int draftLayers;
    private final int devicePages;
    private final Map<Long, Rec> recs;
    private final List<String> violations;
    /** The engine's free device pages, in the order they are handed out (rank 0's; the others mirror it). */
    final DevicePagePool freeDevice;

    DevicePages(DstHarness harness) {
        this.harness = harness;
        this.layers = harness.layers;
        this.draftLayers = harness.draftLayers;
        this.devicePages = harness.devicePages;
        this.recs = harness.recs;
        this.violations = harness.violations;
        this.freeDevice = new DevicePagePool(devicePages);
    }

    /** The engine takes free page {@code page} on {@code rank}. */
    void takeDevice(Rank rank, int page) {
        if (!rank.freeModel.get(page)) {
            fail("rank " + rank.r + " engine takes device page " + page + " that is not free");
        }
        rank.freeModel.clear(page);
    }

    /** A page comes back to the engine on {@code rank} (eviction, failed or duplicate load): checked, overwritten. */
    void releaseDevice(Rank rank, int page) {
        if (page < 0 || page >= devicePages || rank.freeModel.get(page)) {
            violations.add("rank " + rank.r + " device page " + page + " returned to the engine but it is already free "
                + "(double free) or out of range");
            if (!harness.closing) {
                throwViolations();
            }
            return;
        }
        rank.freeModel.set(page);
        retireDevicePage(rank, page);
        if (!harness.closing && !harness.stickyInjected) {
            onDeviceFreed(rank, page);
        }
        if (rank.r == 0) {
            freeDevice.free(page);
        }
    }

    /** The device learns the page is free now: a copy queued before that still touching it is a use-after-free. */
    private void retireDevicePage(Rank rank, int page) {
        for (int l = 0; l < layers; l++) {
            for (int buf = 0; buf < rank.target.bufferCount(); buf++) {
                rank.rt.retire(rank.target.pageAddress(l, buf, page), rank.target.pageBytes());
            }
        }
        for (int d = 0; d < draftLayers; d++) {
            for (int buf = 0; buf < rank.draft.bufferCount(); buf++) {
                rank.rt.retire(rank.draft.pageAddress(d, buf, page), rank.draft.pageBytes());
            }
        }
    }

    /** Check (c) and the poison: a freed device page is overwritten at once, as an engine reusing it would. */
    private void onDeviceFreed(Rank rank, int page) {
        for (Rec rec : recs.values()) {
            Backup b = rec.b[rank.r];
            if (b == null || b.state().terminal()) {
                continue;
            }
            for (int p : rec.allDev) {
                if (p == page) {
                    fail("device page " + page + " freed on rank " + rank.r + " while backup seq " + rec.seq
                        + " holding it is " + b.state());
                }
            }
        }
        for (Request req : harness.engine.requests) {
            for (int p : req.newPages) {
                if (p == page) {
                    fail("device page " + page + " freed on rank " + rank.r + " while its request still runs");
                }
            }
        }
        int tag = harness.nextTag++;
        for (int l = 0; l < layers; l++) {
            rank.devTagT[l][page] = tag;
            rank.writeDevice(false, l, page, tag);
        }
        for (int d = 0; d < draftLayers; d++) {
            rank.devTagD[d][page] = tag;
            rank.writeDevice(true, d, page, tag);
        }
    }

    // ---- the harness's trace, counters and violations

    private void fail(String message) {
        harness.fail(message);
    }

    private void throwViolations() {
        harness.throwViolations();
    }
}
