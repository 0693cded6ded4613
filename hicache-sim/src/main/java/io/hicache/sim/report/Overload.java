package io.hicache.sim.report;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

import java.util.Arrays;
import java.util.Locale;

/**
 * Whether a timed run's instances kept up with its arrivals, and if not, how many would have. A run is
 * <b>overloaded</b> when both hold: its queueing grows through the run (the median queueing delay of the last
 * fifth of requests, by arrival, exceeds that of the first fifth by more than the TTFT objective) and its goodput
 * is below {@link #GOODPUT_THRESHOLD}. The instance count that would keep up is the GPU time the run needed over
 * the span of the trace's arrivals at {@link #TARGET_BUSY} utilisation, when that span is known (at least
 * {@link #MIN_REQUESTS} requests over a positive span) and the GPU time is what falls short (null otherwise: the
 * queue then grows for want of device pages, not compute). Immutable and thread-safe.
 *
 * @param overloaded         the verdict above
 * @param queueFirstFifthMs  median queueing delay of the first fifth of requests by arrival, ms
 * @param queueLastFifthMs   median queueing delay of the last fifth, ms
 * @param arrivalSpanS       first to last arrival of the trace (its times, divided by the time scale), s
 * @param gpuBusyS           GPU time the run's instances computed, all of them, s
 * @param instancesToKeepUp  instances whose GPUs would be busy about {@link #TARGET_BUSY} over the arrival span;
 *                           null when not overloaded or when the run cannot tell
 */
@JsonPropertyOrder({"overloaded", "queue_p50_first_fifth_ms", "queue_p50_last_fifth_ms", "arrival_span_s",
        "gpu_busy_s", "instances_to_keep_up"})
public record Overload(@JsonProperty("overloaded") boolean overloaded,
                       @JsonProperty("queue_p50_first_fifth_ms") double queueFirstFifthMs,
                       @JsonProperty("queue_p50_last_fifth_ms") double queueLastFifthMs,
                       @JsonProperty("arrival_span_s") double arrivalSpanS,
                       @JsonProperty("gpu_busy_s") double gpuBusyS,
                       @JsonProperty("instances_to_keep_up") @JsonInclude(JsonInclude.Include.ALWAYS)
                       Integer instancesToKeepUp) {

    /** Below this share of requests meeting both objectives, a run whose queue grows is overloaded. */
    public static final double GOODPUT_THRESHOLD = 0.8;
    /** GPU utilisation a fleet sized to keep up would run at (headroom for bursts). */
    public static final double TARGET_BUSY = 0.8;
    /** Fewest requests from which queue growth and the arrival span say anything. */
    public static final int MIN_REQUESTS = 20;
    /** Nothing measured (runs without serving figures). */
    public static final Overload NONE = new Overload(false, 0, 0, 0, 0, null);

    /**
     * The verdict on one run.
     *
     * @param arrivalNs  per finished request, its arrival (ns); not modified
     * @param queueNs    per finished request, its queueing delay (ns), parallel to {@code arrivalNs}
     * @param count      finished requests
     * @param goodput    the run's goodput
     * @param sloTtftMs  the TTFT objective
     * @param spanNs     first to last arrival in the trace's own times
     * @param busyNs     GPU time of all instances
     * @param instances  instances of the run
     */
    public static Overload of(long[] arrivalNs, long[] queueNs, int count, double goodput, double sloTtftMs,
                              long spanNs, long busyNs, int instances) {
        if (count < MIN_REQUESTS) {
            return new Overload(false, 0, 0, spanNs / 1e9, busyNs / 1e9, null);
        }
        Integer[] order = new Integer[count];
        for (int i = 0; i < count; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> Long.compare(arrivalNs[a], arrivalNs[b]));
        int fifth = Math.max(1, count / 5);
        double first = medianMs(queueNs, order, 0, fifth);
        double last = medianMs(queueNs, order, count - fifth, count);
        boolean overloaded = goodput < GOODPUT_THRESHOLD && last - first > sloTtftMs;
        Integer keepUp = null;
        if (overloaded && spanNs > 0) {
            int n = (int) Math.ceil(busyNs / (spanNs * TARGET_BUSY));
            keepUp = n > instances ? n : null;
        }
        return new Overload(overloaded, first, last, spanNs / 1e9, busyNs / 1e9, keepUp);
    }

    private static double medianMs(long[] v, Integer[] order, int from, int to) {
        long[] s = new long[to - from];
        for (int i = from; i < to; i++) {
            s[i - from] = v[order[i]];
        }
        Arrays.sort(s);
        return s[(s.length - 1) / 2] / 1e6;
    }

    /**
     * The warning for an overloaded run of {@code instances} instances, in one sentence; null when it kept up.
     *
     * @param label what the run is (e.g. {@code host 400k})
     */
    public String warning(String label, int instances, double goodput) {
        if (!overloaded) {
            return null;
        }
        String who = instances == 1 ? "the instance cannot" : "the " + instances + " instances cannot";
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT,
                "WARNING: overloaded (%s): %s keep up: queueing grows from %s to %s (median, first and last fifth of "
                        + "arrivals) and goodput is %.1f %%", label, who, Units.ms(queueFirstFifthMs),
                Units.ms(queueLastFifthMs), goodput * 100));
        if (instancesToKeepUp != null) {
            b.append(String.format(Locale.ROOT, "; about %d instances would keep up (%,.0f GPU-seconds of work over "
                            + "%,.0f s of arrivals at %.0f %% busy): rerun with --instances %d", instancesToKeepUp,
                    gpuBusyS, arrivalSpanS, TARGET_BUSY * 100, instancesToKeepUp));
        } else if (arrivalSpanS > 0 && gpuBusyS < arrivalSpanS * instances * TARGET_BUSY) {
            b.append("; the GPUs had time to spare, so the queue grows for want of device pages, not compute "
                    + "(see admission_page_waits and preemptions)");
        } else {
            b.append("; the trace's arrival span does not tell how many instances would keep up");
        }
        return b.append('.').toString();
    }
}
