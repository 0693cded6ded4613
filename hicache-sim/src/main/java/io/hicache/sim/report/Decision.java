package io.hicache.sim.report;

import io.hicache.sim.BackupMode;

import java.util.List;
import java.util.Locale;

/**
 * The decision a run of several configurations answers for its user, in one sentence: what a host tier does to
 * TTFT and throughput against the run without one, and whether copying per layer or after the forward changes
 * what clients see. Printed under the summary table and at the top of the report's headline. Stateless.
 */
public final class Decision {
    /** TTFT p99 differences below this share are called the same (the simulator's run-to-run noise is smaller). */
    private static final double SAME = 0.01;

    private Decision() {
    }

    /**
     * The sentence for {@code results}, or null when they hold no timed run without a host tier and with one; host
     * sizes in tokens only.
     */
    public static String of(List<SimResult> results) {
        return of(results, null, null);
    }

    /**
     * The sentence for {@code results} with host sizes in tokens and memory ({@code kv}), saying so when
     * {@code recommendation} finds no host tier needed; null when they hold no timed run without a host tier and
     * with one.
     *
     * @param kv             turns tokens into bytes; null: tokens only
     * @param recommendation the recommendation over the same runs, or null
     */
    public static String of(List<SimResult> results, KvFootprint kv, Recommendation recommendation) {
        SimResult base = null;
        SimResult best = null;
        SimResult layered = null;
        SimResult allLayers = null;
        for (SimResult r : results) {
            if (r.serving() == null) {
                continue;
            }
            BackupMode mode = r.config().backupMode();
            if (mode == BackupMode.NONE || !r.config().hasHostTier()) {
                base = base == null ? r : base;
                continue;
            }
            if (best == null || r.serving().ttftMs().p99() < best.serving().ttftMs().p99()) {
                best = r;
            }
            if (mode == BackupMode.LAYERED && layered == null) {
                layered = r;
            } else if (mode == BackupMode.ALL_LAYERS && allLayers == null) {
                allLayers = r;
            }
        }
        if (base == null || best == null) {
            return null;
        }
        ServingStats b = base.serving();
        ServingStats s = best.serving();
        String size = best.config().hostUnlimited() ? "unlimited"
                : String.format(Locale.ROOT, "%,d", best.config().hostCapacityTokens());
        String memory = kv == null ? "" : ", " + kv.memoryDetail(best.config().hostCapacityTokens(), s.instances());
        StringBuilder out;
        if (recommendation != null && recommendation.kind() == Recommendation.Kind.NO_HOST_TIER) {
            out = new StringBuilder(String.format(Locale.ROOT,
                    "Decision: a host tier of %s tokens (%s%s) buys nothing here: block hit %.3f vs %.3f without one, "
                            + "TTFT p99 %,.0f vs %,.0f ms (%.2fx); %s.", size,
                    best.config().backupMode().cliName(), memory, best.blockHitRatio(), base.blockHitRatio(),
                    s.ttftMs().p99(), b.ttftMs().p99(), ratio(s.ttftMs().p99(), b.ttftMs().p99()),
                    recommendation.reason()));
        } else {
            out = new StringBuilder(String.format(Locale.ROOT,
                    "Decision: a host tier of %s tokens (%s%s) takes TTFT p99 from %,.0f to %,.0f ms (%.2fx) and output "
                            + "throughput %.2fx; block hit %.3f vs %.3f without one.", size,
                    best.config().backupMode().cliName(), memory, b.ttftMs().p99(),
                    s.ttftMs().p99(), ratio(s.ttftMs().p99(), b.ttftMs().p99()),
                    ratio(s.throughputOutputTokensPerS(), b.throughputOutputTokensPerS()), best.blockHitRatio(),
                    base.blockHitRatio()));
        }
        if (layered != null && allLayers != null) {
            double l = layered.serving().ttftMs().p99();
            double a = allLayers.serving().ttftMs().p99();
            double diff = a == 0 ? 0 : (l - a) / a;
            out.append(String.format(Locale.ROOT, " Per-layer vs all-layer backup: TTFT p99 %,.0f vs %,.0f ms (%s); a"
                            + " backup is a host hit %.2f vs %.2f ms (p99) after its forward.", l, a,
                    Math.abs(diff) < SAME ? "clients see no difference here: the copies hide behind compute either way"
                            : String.format(Locale.ROOT, "per-layer %s by %.1f %%", diff < 0 ? "better" : "worse",
                            Math.abs(diff) * 100),
                    layered.commitLatencyNs().p99() / 1e6, allLayers.commitLatencyNs().p99() / 1e6));
        }
        return out.toString();
    }

    private static double ratio(double a, double b) {
        return b == 0 ? 0 : a / b;
    }
}
