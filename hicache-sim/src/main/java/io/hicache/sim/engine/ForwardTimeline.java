package io.hicache.sim.engine;

import io.hicache.core.HiCache;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.sim.report.TimelineSegment;

import java.util.ArrayList;
import java.util.List;

/**
 * Captures the device operations of one forward on one rank (its loads, kernels and copies) for the
 * report's per-layer timeline: the first forward with backups from {@link ServingEngine#TIMELINE_FORWARD}
 * on, or an earlier one when the run is shorter. Owned by the replay's thread.
 */
final class ForwardTimeline implements SimulatedCudaRuntime.OpListener {
    private final SimulatedCudaRuntime runtime;
    private final HiCache cache;
    private final int layers;
    private final int draftLayers;
    private final Runnable markerFn = this::onMarker;
    private List<TimelineSegment> segments = List.of();
    private boolean finalCapture;
    private boolean capturing;
    private long forwardIndex;
    private long windowStart;
    private long windowEnd = Long.MAX_VALUE;
    private long originNs;
    private boolean markerDone;
    private boolean computeDone;
    private long computeHandle;
    private long backupHandle;
    private long loadHandle;
    private final ArrayList<long[]> ops = new ArrayList<>();

    ForwardTimeline(SimulatedCudaRuntime runtime, HiCache cache, int layers, int draftLayers) {
        this.runtime = runtime;
        this.cache = cache;
        this.layers = layers;
        this.draftLayers = draftLayers;
    }

    boolean wants(long index) {
        return !finalCapture && !capturing && (index >= ServingEngine.TIMELINE_FORWARD || segments.isEmpty());
    }

    void begin(long index, long seqStart, long nowNs) {
        capturing = true;
        forwardIndex = index;
        windowStart = seqStart;
        windowEnd = Long.MAX_VALUE;
        originNs = nowNs;
        markerDone = false;
        computeDone = false;
        ops.clear();
        computeHandle = cache.computeStream().handle();
        backupHandle = cache.backupStream().handle();
        loadHandle = cache.loadStream().handle();
        runtime.setOpListener(this);
    }

    void endWindow() {
        runtime.launchHostFunc(cache.backupStream(), markerFn);
        windowEnd = runtime.opsIssued();
    }

    void computeDone() {
        if (capturing) {
            computeDone = true;
        }
    }

    private void onMarker() {
        markerDone = true;
    }

    @Override
    public void onComplete(long opSeq, int opType, long streamHandle, long startNs, long endNs, int errorCode) {
        if (opSeq > windowStart && opSeq <= windowEnd
                && (opType == SimulatedCudaRuntime.OP_KERNEL || opType == SimulatedCudaRuntime.OP_COPY)) {
            ops.add(new long[] {opSeq, opType, streamHandle, startNs, endNs});
        }
    }

    void maybeFinish() {
        if (!capturing || !markerDone || !computeDone) {
            return;
        }
        capturing = false;
        runtime.setOpListener(null);
        ops.sort((a, b) -> Long.compare(a[0], b[0]));
        int kernels = 0;
        int copies = 0;
        int loads = 0;
        int copyCount = 0;
        for (long[] op : ops) {
            if (op[1] == SimulatedCudaRuntime.OP_COPY && op[2] == backupHandle) {
                copyCount++;
            }
        }
        List<TimelineSegment> out = new ArrayList<>();
        for (long[] op : ops) {
            long start = Math.max(0, op[3] - originNs);
            long end = Math.max(start, op[4] - originNs);
            if (op[1] == SimulatedCudaRuntime.OP_KERNEL && op[2] == computeHandle) {
                out.add(new TimelineSegment("compute", start, end, layerLabel(kernels++)));
            } else if (op[1] == SimulatedCudaRuntime.OP_COPY && op[2] == backupHandle) {
                String label = copyCount == layers + draftLayers ? layerLabel(copies) : "copy " + copies;
                copies++;
                out.add(new TimelineSegment("d2h backup", start, end, label));
            } else if (op[1] == SimulatedCudaRuntime.OP_COPY && op[2] == loadHandle) {
                out.add(new TimelineSegment("h2d load", start, end, "load " + loads++));
            }
        }
        ops.clear();
        segments = out;
        if (forwardIndex >= ServingEngine.TIMELINE_FORWARD) {
            finalCapture = true;
        }
    }

    private String layerLabel(int i) {
        return i < layers ? "L" + i : "D" + (i - layers);
    }

    List<TimelineSegment> segments() {
        return segments;
    }
}
