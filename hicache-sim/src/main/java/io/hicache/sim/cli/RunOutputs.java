package io.hicache.sim.cli;

import io.hicache.sim.BackupMode;
import io.hicache.sim.CacheOnlyEngine;
import io.hicache.sim.SimConfig;
import io.hicache.sim.SimulationEngine;
import io.hicache.sim.report.Decision;
import io.hicache.sim.report.HtmlReport;
import io.hicache.sim.report.JsonReport;
import io.hicache.sim.report.Overload;
import io.hicache.sim.report.Recommendation;
import io.hicache.sim.report.SimResult;
import picocli.CommandLine;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Runs a {@link RunPlan} and says what it found: the run header (deployment, KV bytes per token, device KV room)
 * before the runs, then the summary table, the answer (a sweep's recommendation, compare's decision, where the main
 * job's host size sits against the knee), overload warnings, and the JSON, summary and HTML files. Used once, on
 * one thread.
 */
final class RunOutputs {
    private final RunPlan plan;
    private final Main.Env env;

    RunOutputs(RunPlan plan) {
        this.plan = plan;
        this.env = plan.env;
    }

    int replayAndReport(String commandLine) {
        TracePreflight.check(env, plan.trace, plan.configs, plan.servings); // the whole trace, before any replay
        List<SimulationEngine> engines = new ArrayList<>();
        for (int i = 0; i < plan.configs.size(); i++) {
            // fails before any replay when an engine is missing
            engines.add(plan.profile != null ? new io.hicache.sim.engine.ServingEngine(plan.servings.get(i), plan.profile)
                    : plan.storage != null // the storage tier runs in the timed engine
                    ? new io.hicache.sim.engine.ServingEngine(plan.servings.get(i), plan.storage)
                    : env.engines().create(plan.configs.get(i), plan.servings.get(i)));
        }
        SimConfig first = plan.configs.getFirst();
        env.out().println(plan.kv.header(plan.servings.getFirst().instances(), !first.cacheOnly()));
        String assumptions = first.cacheOnly() ? null : plan.profile != null
                ? io.hicache.sim.report.Assumptions.profiled(plan.profileFile, plan.profile.engine(),
                        plan.profile.model().id())
                : io.hicache.sim.report.Assumptions.roofline();
        if (assumptions != null) {
            env.out().println(assumptions);
        }
        env.out().println();
        List<SimResult> results = new ArrayList<>();
        SummaryTable table = new SummaryTable(plan.kv);
        for (int i = 0; i < plan.configs.size(); i++) {
            SimResult r = engines.get(i).run(plan.configs.get(i), plan.trace, Main.progress(env));
            results.add(r);
            table.add(plan.labels.get(i), r);
        }
        List<HtmlReport.Row> baselines = plan.htmlFile == null ? List.of() : baselines(table);
        table.print(env.out());

        List<SimResult> decided = new ArrayList<>(results);
        SimResult probe = plan.kneeProbe < 0 ? null : decided.remove(plan.kneeProbe);
        Recommendation rec = recommendation(results);
        List<String> answer = new ArrayList<>();
        String headline = null;
        if (plan.kind == Main.Kind.SWEEP && !plan.deviceSweep) {
            if (rec != null) {
                answer.add("Recommendation: " + rec.reason() + ".");
            }
        } else {
            int groups = plan.groups.isEmpty() ? 1 : plan.groups.getLast() + 1;
            for (int g = 0; g < groups; g++) {
                String decision = Decision.of(group(results, g), plan.kv, g == 0 ? rec : recommendation(results, g));
                if (decision != null) {
                    answer.add(groups == 1 ? decision : decision.replaceFirst("^Decision: ",
                            "Decision (" + fleetOf(g) + "): "));
                }
            }
            if (probe != null && rec != null) {
                SimResult configured = configuredRun(decided);
                answer.add("Host tier: " + rec.position(configured.config().hostCapacityTokens(), configured,
                        noHostRun(decided), probe, plan.kv, plan.servings.getFirst().instances()) + ".");
                headline = rec.positionHeadline(configured.config().hostCapacityTokens(), configured,
                        noHostRun(decided), plan.kv);
            } else if (rec != null && rec.kind() == Recommendation.Kind.NO_HOST_TIER) {
                headline = "No host tier needed";
            }
        }
        List<String> warnings = warnings(results);
        for (String line : answer) {
            env.out().println(line);
        }
        for (String w : warnings) {
            env.out().println(w);
        }
        if (plan.jsonFile != null && plan.profile != null) {
            ProfilePlan.writeJson(plan.jsonFile, results, plan.kind != Main.Kind.REPLAY, plan.profile, plan.profileFile);
            env.out().println("wrote " + plan.jsonFile);
        } else if (plan.jsonFile != null) {
            JsonReport.write(plan.jsonFile, results, plan.kind != Main.Kind.REPLAY);
            env.out().println("wrote " + plan.jsonFile);
        }
        if (plan.summaryFile != null) {
            JsonReport.writeSummary(plan.summaryFile, plan.kind == Main.Kind.REPLAY ? null : rec,
                    !warnings.isEmpty(), plan.kv);
            env.out().println("wrote " + plan.summaryFile);
        }
        if (plan.htmlFile != null) {
            HtmlReport.write(plan.htmlFile, report(commandLine, results, baselines,
                    new HtmlReport.Answer(plan.kv, headline, answer, rec, warnings), assumptions));
            env.out().println("wrote " + plan.htmlFile);
        }
        return CommandLine.ExitCode.OK;
    }

    /**
     * The recommendation over the runs that vary the host size: a host sweep's runs, or compare's first group
     * (layered and none) with the main job's knee probe; null for a replay and a device sweep.
     */
    private Recommendation recommendation(List<SimResult> results) {
        return recommendation(results, 0);
    }

    /** The recommendation for compare's fleet-and-router group {@code g} (see {@link #recommendation(List)}). */
    private Recommendation recommendation(List<SimResult> results, int g) {
        List<Recommendation.Point> points = new ArrayList<>();
        if (plan.kind == Main.Kind.SWEEP && !plan.deviceSweep) {
            points.addAll(Recommendation.pointsOf(results));
        } else if (plan.kind == Main.Kind.COMPARE) {
            for (int i = 0; i < results.size(); i++) {
                BackupMode m = plan.configs.get(i).backupMode();
                if (plan.groups.get(i) == g && m != BackupMode.ALL_LAYERS) {
                    points.addAll(Recommendation.pointsOf(List.of(results.get(i))));
                }
            }
        }
        if (points.isEmpty()) {
            return null;
        }
        int instances = plan.servings.get(plan.groups.indexOf(g)).instances();
        return Recommendation.of(points, plan.tolerance, plan.kv, instances);
    }

    /** The runs of compare's fleet-and-router group {@code g} (every run elsewhere), knee probe left out. */
    private List<SimResult> group(List<SimResult> results, int g) {
        List<SimResult> out = new ArrayList<>();
        for (int i = 0; i < results.size(); i++) {
            if (i != plan.kneeProbe && (plan.kind != Main.Kind.COMPARE || plan.groups.get(i) == g)) {
                out.add(results.get(i));
            }
        }
        return out;
    }

    private String fleetOf(int g) {
        var s = plan.servings.get(plan.groups.indexOf(g));
        return s.instances() == 1 ? "1 instance" : s.instances() + "x " + s.router().cliName();
    }

    private static SimResult configuredRun(List<SimResult> decided) {
        for (SimResult r : decided) {
            if (r.config().backupMode() == BackupMode.LAYERED) {
                return r;
            }
        }
        return decided.getFirst();
    }

    private static SimResult noHostRun(List<SimResult> decided) {
        for (SimResult r : decided) {
            if (r.config().backupMode() == BackupMode.NONE || !r.config().hasHostTier()) {
                return r;
            }
        }
        return null;
    }

    /** One line per overloaded timed run. */
    private List<String> warnings(List<SimResult> results) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < results.size(); i++) {
            var s = results.get(i).serving();
            if (s == null) {
                continue;
            }
            Overload o = s.overload();
            String w = o.warning(plan.labels.get(i), s.instances(), s.goodput());
            if (w != null) {
                out.add(w);
            }
        }
        return out;
    }

    /** The report's reference runs (storage off, no backup, unlimited cache), added to the table too. */
    private List<HtmlReport.Row> baselines(SummaryTable table) {
        List<HtmlReport.Row> rows = new ArrayList<>();
        SimConfig first = plan.configs.getFirst();
        if (plan.storage != null) {
            SimResult r = env.engines().create(first, plan.servings.getFirst()).run(first, plan.trace,
                    Main.progress(env));
            rows.add(new HtmlReport.Row("without storage", r, true));
            table.add("without storage", r);
        }
        if (plan.kind == Main.Kind.REPLAY && first.backupMode() != BackupMode.NONE) {
            SimConfig none = first.withBackupMode(BackupMode.NONE);
            SimResult r = (plan.profile != null
                    ? new io.hicache.sim.engine.ServingEngine(plan.servings.getFirst(), plan.profile)
                    : env.engines().create(none, plan.servings.getFirst())).run(none, plan.trace,
                    Main.progress(env));
            rows.add(new HtmlReport.Row("no backup (baseline)", r, true));
            table.add("no backup (baseline)", r);
        }
        // The bound: everything ever seen stays cached; hit ratios depend only on the trace.
        SimConfig unlimited = first.withCacheOnly(true).withBackupMode(BackupMode.NONE)
                .withCapacities(Long.MAX_VALUE, SimConfig.HOST_NONE);
        SimResult bound = new CacheOnlyEngine().run(unlimited, plan.trace, Main.progress(env));
        rows.add(new HtmlReport.Row("unlimited cache (bound)", bound, true));
        table.add("unlimited cache (bound)", bound);
        return rows;
    }

    private HtmlReport.Report report(String commandLine, List<SimResult> results, List<HtmlReport.Row> baselines,
                                     HtmlReport.Answer answer, String assumptions) {
        List<HtmlReport.Row> rows = new ArrayList<>();
        for (int i = 0; i < results.size(); i++) {
            boolean baseline = (plan.kind == Main.Kind.COMPARE && plan.configs.get(i).backupMode() == BackupMode.NONE)
                    || i == plan.kneeProbe;
            rows.add(new HtmlReport.Row(plan.labels.get(i), results.get(i), baseline));
        }
        rows.addAll(baselines);
        List<HtmlReport.Timeline> timelines = new ArrayList<>();
        for (int i = 0; i < results.size(); i++) {
            if (!results.get(i).timeline().isEmpty() && i != plan.kneeProbe) {
                timelines.add(new HtmlReport.Timeline(plan.labels.get(i), results.get(i).timeline()));
            }
        }
        String title = "HiCache simulator: " + plan.kind.name().toLowerCase(Locale.ROOT);
        return new HtmlReport.Report(title, commandLine, rows,
                plan.kind == Main.Kind.SWEEP && !plan.deviceSweep ? results : List.of(), timelines, answer, assumptions);
    }
}
