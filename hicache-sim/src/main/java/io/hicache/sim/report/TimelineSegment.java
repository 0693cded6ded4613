package io.hicache.sim.report;

/**
 * One bar of the per-layer timeline of a forward: what ran on which lane and when. Immutable.
 *
 * @param lane    the row, e.g. {@code compute} or {@code d2h copy}
 * @param startNs start, ns from the start of the forward
 * @param endNs   end, ns ({@code >= startNs})
 * @param label   short text, e.g. {@code L12}
 */
public record TimelineSegment(String lane, long startNs, long endNs, String label) {
    /** Checks the interval. */
    public TimelineSegment {
        if (lane == null || label == null) {
            throw new IllegalArgumentException("lane and label must not be null");
        }
        if (startNs < 0 || endNs < startNs) {
            throw new IllegalArgumentException("segment '" + label + "' on " + lane + " must have 0 <= startNs <= endNs, got ["
                    + startNs + ", " + endNs + "]");
        }
    }
}
