package io.hicache.serve.engine;

/**
 * Smooths a measured forward-time grid with the shape a one-sequence forward has, so that one noisy cell (a machine
 * shared with other work) does not become a step in the profile: decode ({@code tokens == 1}, its own code path) as
 * {@code a + b * context}, and the prefill rows as {@code a + b*t + c*ctx + d*t*ctx + e*t^2} (weights and MLP linear in
 * the new tokens {@code t}, attention over the cached context {@code t * ctx} and within the chunk {@code t^2}),
 * each by least squares on relative errors (a cell counts by its share, not its milliseconds). A fit that comes out
 * negative anywhere on the grid, or a system the points cannot decide, keeps the measured values. Pure functions.
 */
final class GridFit {
    private GridFit() {
    }

    /** The fitted grid ({@code ms[i][j]} for {@code tokens[i]} x {@code context[j]}); {@code raw} is left alone. */
    static double[][] fit(int[] tokens, int[] context, double[][] raw) {
        double[][] out = new double[raw.length][];
        for (int i = 0; i < raw.length; i++) {
            out[i] = raw[i].clone();
        }
        int first = tokens[0] == 1 ? 1 : 0;
        if (first == 1) {
            double[][] x = new double[context.length][];
            double[] y = raw[0].clone();
            for (int j = 0; j < context.length; j++) {
                x[j] = new double[] {1, context[j]};
            }
            double[] c = solve(x, y);
            if (c != null) {
                double[] row = new double[context.length];
                boolean ok = true;
                for (int j = 0; j < context.length; j++) {
                    row[j] = c[0] + c[1] * context[j];
                    ok &= row[j] > 0;
                }
                if (ok) {
                    out[0] = row;
                }
            }
        }
        int rows = tokens.length - first;
        if (rows * context.length >= 8 && rows >= 3) {
            double[][] x = new double[rows * context.length][];
            double[] y = new double[x.length];
            int n = 0;
            for (int i = first; i < tokens.length; i++) {
                for (int j = 0; j < context.length; j++) {
                    x[n] = terms(tokens[i], context[j]);
                    y[n++] = raw[i][j];
                }
            }
            double[] c = solve(x, y);
            if (c != null) {
                double[][] f = new double[rows][context.length];
                boolean ok = true;
                for (int i = first; i < tokens.length; i++) {
                    for (int j = 0; j < context.length; j++) {
                        double[] t = terms(tokens[i], context[j]);
                        double v = 0;
                        for (int k = 0; k < t.length; k++) {
                            v += c[k] * t[k];
                        }
                        f[i - first][j] = v;
                        ok &= v > 0;
                    }
                }
                if (ok) {
                    System.arraycopy(f, 0, out, first, rows);
                }
            }
        }
        return out;
    }

    private static double[] terms(double t, double ctx) {
        return new double[] {1, t, ctx, t * ctx, t * t};
    }

    /**
     * Least squares on relative errors: minimizes {@code sum(((x·c) - y) / y)^2} (rows with {@code y <= 0} left out);
     * null when the normal equations are singular.
     */
    static double[] solve(double[][] x, double[] y) {
        int p = x[0].length;
        double[][] a = new double[p][p + 1];
        for (int n = 0; n < x.length; n++) {
            if (!(y[n] > 0)) {
                continue;
            }
            double w = 1 / (y[n] * y[n]);
            for (int r = 0; r < p; r++) {
                for (int c = 0; c < p; c++) {
                    a[r][c] += w * x[n][r] * x[n][c];
                }
                a[r][p] += w * x[n][r] * y[n];
            }
        }
        // scale the columns so that the elimination does not mix 1 with t * ctx in the millions
        double[] scale = new double[p];
        for (int c = 0; c < p; c++) {
            scale[c] = Math.sqrt(Math.abs(a[c][c]));
            if (scale[c] == 0) {
                return null;
            }
        }
        for (int r = 0; r < p; r++) {
            for (int c = 0; c < p; c++) {
                a[r][c] /= scale[r] * scale[c];
            }
            a[r][p] /= scale[r];
        }
        for (int c = 0; c < p; c++) {
            int best = c;
            for (int r = c + 1; r < p; r++) {
                if (Math.abs(a[r][c]) > Math.abs(a[best][c])) {
                    best = r;
                }
            }
            if (Math.abs(a[best][c]) < 1e-12) {
                return null;
            }
            double[] tmp = a[c];
            a[c] = a[best];
            a[best] = tmp;
            for (int r = 0; r < p; r++) {
                if (r != c) {
                    double f = a[r][c] / a[c][c];
                    for (int k = c; k <= p; k++) {
                        a[r][k] -= f * a[c][k];
                    }
                }
            }
        }
        double[] out = new double[p];
        for (int c = 0; c < p; c++) {
            out[c] = a[c][p] / a[c][c] / scale[c];
        }
        return out;
    }
}
