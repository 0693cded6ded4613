package io.hicache.serve;

import io.hicache.serve.engine.Calibration;
import io.hicache.serve.engine.EngineConfig;
import io.hicache.serve.engine.ForwardProbe;

import java.io.IOException;
import java.net.http.HttpClient;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.ToDoubleFunction;

/**
 * The calibration's {@code prefill_service_factor}: how much longer the serving engine's own prefill takes than the
 * forward grid says for the same shape, at the same machine speed. The grid times bare forwards back to back on a
 * scratch engine; a served prefill also runs the cache's hooks, reads a prefix the radix tree matched in the request's
 * pages, shares the cores with the HTTP layer and the cache's agents, and usually starts on an engine that was idle
 * (parked threads, cold caches: on this VM about 5 % slower than one right after another). Measured on synthetic
 * conversations of random ids (never a trace): {@link #CONVERSATIONS} of up to {@link #TURNS} turns, one request at a
 * time over HTTP, each turn its predecessor's prompt plus 16 answer-like tokens plus 64 to 255 new ones (fewer on a
 * small context or pool), one new token each. Before each request a short {@link ForwardProbe} reading (the one
 * {@code bench-serve --gap-probes} takes in a replay's idle gaps) and then {@link #IDLE_MS} of idle engine. A
 * request's ratio is its {@code hicache_timing.prefill_ms}, less its {@code load_wait_ms}, over the grid's reading of
 * its chunks (from the {@code cached_tokens} it reported; the logits on the last). The factor is the median ratio
 * over the grid scaled to the median reading (over the grid at the probe's shape), as {@code validate-sim} scales a
 * profile to the median reading in a replay's gaps: readings spread through the measurement follow the machine's
 * drift (tens of per cent between minutes here), and both sides are read the same way.
 *
 * <p>Runs on the calibrating thread against an engine nothing else is sending to.
 */
public final class ServiceFactor {
    static final int CONVERSATIONS = 8;
    static final int TURNS = 3;
    /** How long the engine idles between a probe reading and the request it prices. */
    public static final long IDLE_MS = 400;

    private ServiceFactor() {
    }

    /** A measurement: the factor, how many prefills it came from, and how many of those ran over a matched prefix. */
    record Measured(double factor, int prefills, int withPrefix) {
    }

    /** One served prefill: its prompt, its cached tokens, its prefill less load wait, the reading before it. */
    public record Sample(int promptTokens, int cachedTokens, double servedMs, double readingMs) {
    }

    /** What a one-token request reported: its prefill less its wait for loads, and the prompt tokens found cached. */
    public record Served(double servedMs, int cachedTokens) {
    }

    /** The engine the samples are taken on. Called on the sampling thread only. */
    public interface Target {
        /** A short speed-probe reading ({@link ForwardProbe#SHORT_RUNS} after {@link ForwardProbe#SHORT_WARM}). */
        double readingMs() throws IOException, InterruptedException;

        /** Sends {@code prompt} for one new token and reports it. */
        Served prefill(int[] prompt) throws IOException, InterruptedException;
    }

    /**
     * The factor for the engine at {@code url} started with {@code e}, on {@code m}'s grid, idling {@code idleMs}
     * before each request; factor 1 (with a line saying why) when its context or device pool leaves no room for two
     * turns, or fewer than three prefills could be priced (a timing or a grid reading at 0 prices none). Turns add 64
     * to 255 new tokens, fewer where the context or the device pool is under about 1,100 tokens.
     */
    static Measured measure(EngineConfig e, Calibration.Result m, HttpClient client, String url, SplittableRandom rnd,
                            long idleMs) throws IOException, InterruptedException {
        double gridProbe = Calibrate.interpolate(m.forward(), ForwardProbe.tokens(e.model().contextTokens()), 0);
        if (!(gridProbe > 0)) {
            Calibrate.progress("service factor: the grid reads 0 ms at the speed probe's shape, so nothing can be "
                + "scaled; factor 1");
            return new Measured(1, 0, 0);
        }
        List<Sample> samples;
        try (ForwardProbe probe = ForwardProbe.open(e)) {
            samples = samples(e.model().vocab(), e.model().contextTokens(), e.deviceTokens(), new Target() {
                @Override
                public double readingMs() {
                    return probe.medianMs(ForwardProbe.SHORT_RUNS, ForwardProbe.SHORT_WARM);
                }

                @Override
                public Served prefill(int[] prompt) throws IOException, InterruptedException {
                    Calibrate.Timed r = Calibrate.timed(client, url, prompt, 1);
                    return new Served(r.prefillMs() - r.loadWaitMs(), r.cachedTokens());
                }
            }, rnd, idleMs);
        }
        if (samples.isEmpty()) {
            Calibrate.progress("service factor: the context or the device pool has no room for two turns; factor 1");
            return new Measured(1, 0, 0);
        }
        Priced f = price(samples, x -> gridMs(m, e.chunkTokens(), x.promptTokens(), x.cachedTokens()), gridProbe);
        if (Double.isNaN(f.factor())) {
            Calibrate.progress("service factor: only " + f.prefills() + " served prefills could be priced (a reading "
                + "or a grid cell at 0); factor 1");
            return new Measured(1, f.prefills(), f.withPrefix());
        }
        Calibrate.progress(String.format(Locale.ROOT, "service factor: %d served prefills (%d over a matched prefix), "
            + "each after a short speed-probe reading and %d ms idle, take %.3f x the grid scaled to the readings' "
            + "median (%.3f; served over the grid: quartiles %.3f and %.3f of the scaled grid)", f.prefills(),
            f.withPrefix(), idleMs, f.factor(), f.scale(), f.lowQuartile(), f.highQuartile()));
        return new Measured(f.factor(), f.prefills(), f.withPrefix());
    }

    /**
     * A service factor priced from samples: the factor, the prefills it came from and how many of those ran over a
     * matched prefix, the speed scale (median reading over the grid at the probe's shape), and the quartiles of the
     * prefills over the scaled grid.
     */
    public record Priced(double factor, int prefills, int withPrefix, double scale, double lowQuartile,
                         double highQuartile) {
    }

    /**
     * The factor {@code samples} give where {@code gridMs} reads a sample's prefill on the grid and the grid reads
     * {@code gridProbe} ms at the speed probe's shape: the median of each prefill over its grid reading, over the
     * grid scaled to the median reading. A sample whose ratio or reading is not above 0 and finite prices nothing;
     * the factor, scale and quartiles are NaN when fewer than three are priced or {@code gridProbe} is not above 0.
     * Pure: any thread.
     */
    public static Priced price(List<Sample> samples, ToDoubleFunction<Sample> gridMs, double gridProbe) {
        double[] raw = new double[samples.size()];
        double[] readings = new double[raw.length];
        int n = 0;
        int withPrefix = 0;
        for (Sample x : samples) {
            double ratio = x.servedMs() / gridMs.applyAsDouble(x);
            if (ratio > 0 && Double.isFinite(ratio) && x.readingMs() > 0 && Double.isFinite(x.readingMs())) {
                raw[n] = ratio;
                readings[n++] = x.readingMs();
                withPrefix += x.cachedTokens() > 0 ? 1 : 0;
            }
        }
        if (n < 3 || !(gridProbe > 0)) {
            return new Priced(Double.NaN, n, withPrefix, Double.NaN, Double.NaN, Double.NaN);
        }
        double scale = Calibration.median(Arrays.copyOf(readings, n)) / gridProbe;
        return new Priced(Calibration.median(Arrays.copyOf(raw, n)) / scale, n, withPrefix, scale,
            quantile(raw, n, 0.25) / scale, quantile(raw, n, 0.75) / scale);
    }

    /**
     * The service factor's samples on {@code target}, an engine of {@code vocab} ids, {@code contextTokens} of
     * context and {@code deviceTokens} of device pool: {@link #CONVERSATIONS} synthetic conversations of up to
     * {@link #TURNS} turns of random ids from {@code rnd}, one request at a time, each after a short reading and
     * {@code idleMs} of idle engine. Empty when the context or the pool leaves no room for two turns. What is sent
     * stays in the engine's cache: flush it before a replay.
     */
    public static List<Sample> samples(int vocab, int contextTokens, int deviceTokens, Target target,
                                       SplittableRandom rnd, long idleMs) throws IOException, InterruptedException {
        int cap = Math.min(contextTokens - 32, deviceTokens * 3 / 4);
        int lo = Math.max(8, Math.min(64, cap / 12));
        int span = Math.min(192, cap / 3 - 16 - lo);
        List<Sample> out = new ArrayList<>();
        if (span < 1) {
            return out;
        }
        for (int c = 0; c < CONVERSATIONS; c++) {
            int[] prompt = new int[0];
            for (int t = 0; t < TURNS; t++) {
                int add = (t == 0 ? 0 : 16) + lo + rnd.nextInt(span);
                if (prompt.length + add > cap) {
                    break;
                }
                int[] next = Arrays.copyOf(prompt, prompt.length + add);
                System.arraycopy(Calibrate.ids(rnd, add, vocab), 0, next, prompt.length, add);
                prompt = next;
                double reading = target.readingMs();
                if (idleMs > 0) {
                    Thread.sleep(idleMs); // the measurement's idle period, not a wait for anything
                }
                Served r = target.prefill(prompt);
                out.add(new Sample(prompt.length, r.cachedTokens(), r.servedMs(), reading));
            }
        }
        return out;
    }

    private static double quantile(double[] v, int n, double q) {
        double[] s = Arrays.copyOf(v, n);
        Arrays.sort(s);
        return s[(int) Math.round(q * (n - 1))];
    }

    /** A forward of {@code tokens} new tokens over {@code context} cached ones, in ms, as some grid reads it. */
    @FunctionalInterface
    public interface Forward {
        double ms(int tokens, int context);
    }

    /**
     * The grid's reading of the engine's prefill of a {@code prompt}-token prompt with {@code cached} tokens matched:
     * its chunks of at most {@code chunk} tokens from the first uncached position, each over the context before it
     * ({@code forward}), and {@code logitsMs} after the last.
     */
    public static double gridMs(Forward forward, double logitsMs, int chunk, int prompt, int cached) {
        double ms = logitsMs;
        for (int from = Math.clamp(cached, 0, Math.max(0, prompt - 1)); from < prompt; from += chunk) {
            ms += forward.ms(Math.min(chunk, prompt - from), from);
        }
        return ms;
    }

    /** {@link #gridMs(Forward, double, int, int, int)} on the calibration's grid {@code m}. */
    static double gridMs(Calibration.Result m, int chunk, int prompt, int cached) {
        return gridMs((t, c) -> Calibrate.interpolate(m.forward(), t, c), m.logitsMs(), chunk, prompt, cached);
    }
}
