package io.hicache.serve.bench;

import io.hicache.serve.engine.Calibration;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Speed-probe readings taken while a replay runs ({@code bench-serve --trace --gap-probes}), only in its idle gaps:
 * no request of the replay in flight and the next one not due before a reading would end (its last length plus
 * {@link #MARGIN_MS}). A shared VM's speed wanders within a replay, so readings only before and after it miss the
 * speed the replay's own requests ran at; readings in its gaps follow it without holding a request back. A request
 * is never delayed for a reading: one that falls due while a reading runs is sent, and that reading (which shared
 * the cores with it) is dropped and counted as overlapped.
 *
 * <p>Threads: the replay's request threads call {@link #sending} and {@link #finished}; the readings are taken on a
 * virtual thread of its own, started by {@link #start}; {@link #close} (the replay's thread) stops it, after the
 * reading in progress, and {@link #readings} is read after that.
 */
final class GapProbes implements AutoCloseable {
    /** Timed forwards per reading in a gap (the median is kept) and untimed ones before them. */
    static final int RUNS = io.hicache.serve.engine.ForwardProbe.SHORT_RUNS;
    static final int WARM = io.hicache.serve.engine.ForwardProbe.SHORT_WARM;
    /** Room left in a gap after a reading's expected end. */
    static final long MARGIN_MS = 100;

    /** One reading of the engine's speed probe, in ms; fails with the probe's error. */
    @FunctionalInterface
    interface Reader {
        double forwardMs() throws IOException, InterruptedException;
    }

    /** A reading in a gap: when it started (ms since the replay's start) and the forward it timed. */
    record Reading(double atMs, double forwardMs) {
    }

    private final Reader reader;
    private final Object lock = new Object();
    private final List<Reading> readings = new ArrayList<>();
    private long[] due = new long[0]; // System.nanoTime() each request may be sent at, in trace order
    private boolean[] sent = new boolean[0];
    private long t0;
    private int firstUnsent;
    private int inFlight;
    private long sends;
    private int overlapped;
    private long expectNs;
    private boolean closed;
    private String failure;
    private Thread thread;

    /** A prober reading through {@code reader}, expecting a reading to take about {@code expectMs} at first. */
    GapProbes(Reader reader, double expectMs) {
        this.reader = reader;
        this.expectNs = (long) (Math.max(0, expectMs) * 1e6);
    }

    /**
     * Starts reading in the gaps of a replay that began at {@code t0} (System.nanoTime()) whose request {@code i} may
     * be sent from {@code due[i]} on ({@code due} in trace order, non-decreasing).
     */
    void start(long t0, long[] due) {
        synchronized (lock) {
            if (thread != null) {
                throw new IllegalStateException("already started");
            }
            this.t0 = t0;
            this.due = due.clone();
            this.sent = new boolean[due.length];
            thread = Thread.ofVirtual().name("hicache-gap-probes").start(this::loop);
        }
    }

    /** Request {@code i} goes to the engine now. Any thread. */
    void sending(int i) {
        synchronized (lock) {
            if (!sent[i]) {
                sent[i] = true;
                while (firstUnsent < sent.length && sent[firstUnsent]) {
                    firstUnsent++;
                }
            }
            inFlight++;
            sends++;
            lock.notifyAll();
        }
    }

    /** A request sent with {@link #sending} has its answer (or failed). Any thread. */
    void finished() {
        synchronized (lock) {
            inFlight--;
            lock.notifyAll();
        }
    }

    private void loop() {
        try {
            while (true) {
                long sendsBefore;
                synchronized (lock) {
                    while (!closed && !inGap(System.nanoTime())) {
                        lock.wait(); // sending, finished and close notify
                    }
                    if (closed) {
                        return;
                    }
                    sendsBefore = sends;
                }
                long s = System.nanoTime();
                double ms = reader.forwardMs();
                long e = System.nanoTime();
                synchronized (lock) {
                    if (sends == sendsBefore) {
                        readings.add(new Reading((s - t0) / 1e6, ms));
                    } else {
                        overlapped++;
                    }
                    expectNs = e - s;
                }
            }
        } catch (IOException e) {
            synchronized (lock) {
                failure = e.getMessage();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Nothing in flight and the next request not due before a reading started now would end (under the lock). */
    private boolean inGap(long now) {
        if (inFlight > 0 || firstUnsent >= due.length) {
            return false;
        }
        long next = Long.MAX_VALUE;
        for (int i = firstUnsent; i < due.length && due[i] < next; i++) {
            if (!sent[i]) {
                next = due[i];
            }
        }
        return next - now >= expectNs + TimeUnit.MILLISECONDS.toNanos(MARGIN_MS);
    }

    /** Whether a reading started at {@code now} (System.nanoTime()) would fit in a gap. Any thread. */
    boolean gapAt(long now) {
        synchronized (lock) {
            return inGap(now);
        }
    }

    /** Stops reading, after the reading in progress. The replay's thread. */
    @Override
    public void close() {
        Thread t;
        synchronized (lock) {
            closed = true;
            lock.notifyAll();
            t = thread;
        }
        if (t != null) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The readings kept, in the order taken (after {@link #close}). */
    List<Reading> readings() {
        synchronized (lock) {
            return List.copyOf(readings);
        }
    }

    /** Readings dropped because a request was sent while they ran. */
    int overlapped() {
        synchronized (lock) {
            return overlapped;
        }
    }

    /** Why reading stopped early (the probe failed), or null. */
    String failure() {
        synchronized (lock) {
            return failure;
        }
    }

    /** The readings' forward times, in the order taken. */
    double[] forwardMs() {
        return readings().stream().mapToDouble(Reading::forwardMs).toArray();
    }

    /** The readings for the measured JSON's {@code engine_speed_probe.gaps} (after {@link #close}). */
    Map<String, Object> summary() {
        List<Reading> r = readings();
        Map<String, Object> g = new LinkedHashMap<>();
        g.put("runs", RUNS);
        g.put("warm", WARM);
        g.put("at_ms", r.stream().map(x -> Math.round(x.atMs() * 10) / 10.0).toList());
        g.put("forward_ms", r.stream().map(x -> Math.round(x.forwardMs() * 1000) / 1000.0).toList());
        g.put("overlapped", overlapped());
        if (failure() != null) {
            g.put("failure", failure());
        }
        return g;
    }

    /** One line on the readings: how many, their median, how many were dropped, and a failure. */
    @Override
    public String toString() {
        double[] ms = forwardMs();
        return String.format(Locale.ROOT, "%d readings in its gaps (median %.1f ms; %d dropped for a request sent "
            + "meanwhile)%s", ms.length, ms.length == 0 ? Double.NaN : Calibration.median(ms), overlapped(),
            failure() == null ? "" : "; the probe failed: " + failure());
    }
}
