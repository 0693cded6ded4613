package io.hicache.serve.engine;

import io.hicache.serve.model.ModelSpec;
import io.hicache.serve.model.StepModel;

import java.util.SplittableRandom;

/**
 * How fast this JVM runs the engine's forward right now: one forward of {@link #TOKENS} fresh tokens over an empty
 * KV (the calibration grid's cell at that shape, measured the same way), on a model of its own (the served model's
 * shape and seed, so the same compiled code) over a device pool of its own, never the engine's. The calibration
 * stores a reading in the profile ({@code speed_probe}); the engine answers {@code POST /hicache/speed_probe} with one,
 * so that {@code validate-sim} can scale the profile to how fast the machine ran around a replay (a shared VM's speed
 * drifts by tens of per cent between minutes).
 *
 * <p>Not thread-safe: one caller at a time (the HTTP layer serialises its probes); it runs beside whatever the
 * engine serves, so read it on an idle engine. {@link #close} frees its model and pool.
 */
public final class ForwardProbe implements AutoCloseable {
    /** The probe's new tokens unless the context is shorter. */
    public static final int TOKENS = 128;
    /** Forwards per reading (the median is kept), after {@link #WARM} untimed ones. */
    public static final int RUNS = 15;
    /** Untimed forwards before a reading's timed ones unless told otherwise. */
    public static final int WARM = 3;
    /**
     * A short reading's timed and untimed forwards: the one {@code bench-serve --gap-probes} takes in a replay's idle
     * gaps and the calibration's service factor takes before each of its requests, so that both read alike.
     */
    public static final int SHORT_RUNS = 2;
    public static final int SHORT_WARM = 1;

    private final StepModel model;
    private final CacheTiers tiers;
    private final ServeRequest request;
    private final int[] pages;
    private final int[] ids;
    private final int tokens;
    private boolean closed;

    private ForwardProbe(StepModel model, CacheTiers tiers, ServeRequest request, int[] pages, int[] ids) {
        this.model = model;
        this.tiers = tiers;
        this.request = request;
        this.pages = pages;
        this.ids = ids;
        this.tokens = ids.length;
    }

    /** The probe's new tokens on a model of {@code contextTokens}. */
    public static int tokens(int contextTokens) {
        return Math.max(1, Math.min(TOKENS, contextTokens / 4));
    }

    /**
     * A probe for the engine {@code cfg} describes (its model and page size).
     *
     * @throws IllegalStateException its device pool cannot be made
     */
    public static ForwardProbe open(EngineConfig cfg) {
        ModelSpec spec = cfg.model();
        int ps = cfg.pageSize();
        int n = tokens(spec.contextTokens());
        int pageCount = (n + ps - 1) / ps;
        EngineConfig c = Calibration.scratch(cfg, (pageCount + 1) * ps, 0);
        StepModel model = spec.newModel();
        CacheTiers t = new CacheTiers(c);
        try {
            t.open();
            int[] dev = new int[pageCount];
            if (!t.pool.allocate(pageCount, dev, 0)) {
                throw new IllegalStateException("speed probe: no device pages");
            }
            SplittableRandom rnd = new SplittableRandom(13);
            int[] seq = new int[n];
            for (int i = 0; i < n; i++) {
                seq[i] = 3 + rnd.nextInt(spec.vocab() - 3);
            }
            ServeRequest r = new ServeRequest(0, seq, SamplingParams.greedy(1), System.nanoTime(), null, "probe");
            r.kvPages = dev;
            r.kv = new DeviceKvViews(t).bufferFor(model, r);
            return new ForwardProbe(model, t, r, dev, seq);
        } catch (RuntimeException e) {
            t.close();
            model.close();
            throw e;
        }
    }

    /** The new tokens of each timed forward. */
    public int tokens() {
        return tokens;
    }

    /** The median of {@code runs} timed forwards in ms, after {@link #WARM} untimed ones. */
    public double medianMs(int runs) {
        return medianMs(runs, WARM);
    }

    /**
     * The median of {@code runs} timed forwards in ms, after {@code warm} untimed ones.
     *
     * @throws IllegalArgumentException {@code runs < 1} or {@code warm < 0}
     */
    public double medianMs(int runs, int warm) {
        if (warm < 0) {
            throw new IllegalArgumentException("warm must be >= 0, got " + warm);
        }
        if (closed) {
            throw new IllegalStateException("the speed probe is closed");
        }
        if (runs < 1) {
            throw new IllegalArgumentException("runs must be >= 1, got " + runs);
        }
        double[] ms = new double[runs];
        for (int k = -warm; k < runs; k++) {
            double took = Calibration.forwardMs(model, ids, 0, tokens, request); // as the grid times a cell
            if (k >= 0) {
                ms[k] = took;
            }
        }
        return Calibration.median(ms);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        request.kv.close();
        tiers.pool.free(pages, 0, pages.length);
        tiers.close();
        model.close();
    }
}
