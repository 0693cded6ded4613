package io.hicache.sim.report;

import io.hicache.sim.OptionSpellings;

import java.util.List;
import java.util.Locale;

import static io.hicache.sim.report.Html.bytes;
import static io.hicache.sim.report.Html.capacity;
import static io.hicache.sim.report.Html.duration;
import static io.hicache.sim.report.Html.esc;
import static io.hicache.sim.report.Html.fmtInt;
import static io.hicache.sim.report.Html.fmtMs;
import static io.hicache.sim.report.Html.percent;
import static io.hicache.sim.report.Html.ratioCell;
import static io.hicache.sim.report.Html.skippedCell;

/**
 * The HTML report's tables: configurations (cache and backups), the storage tier, what clients felt. A baseline's
 * cells that mean nothing for it (a host capacity without host writes, backups of a run that makes none, a pool's
 * peak use when it is unlimited) stay empty. Stateless.
 */
final class HtmlTables {
    private HtmlTables() {
    }

    /** The two configuration tables: cache (capacities, hits) and backups; cells that mean nothing stay empty. */
    static void table(StringBuilder h, List<HtmlReport.Row> rows, KvFootprint kv) {
        h.append("<section><h2>Configurations: cache</h2>\n<div class=\"scroll\"><table>\n<thead><tr>")
                .append("<th>configuration</th><th>backup mode</th><th>write policy</th><th>eviction</th>")
                .append("<th>device cap (tokens")
                .append(kv == null ? "" : ", memory").append(")</th><th>host cap (tokens")
                .append(kv == null ? "" : ", memory").append(")</th><th>block hit ratio</th><th>token hit ratio</th>")
                .append("<th>device hits</th><th>host hits</th><th>of which storage</th><th>prefill computed</th></tr></thead>\n<tbody>\n");
        for (HtmlReport.Row row : rows) {
            SimResult r = row.result();
            var c = r.config();
            boolean writes = writesHost(r);
            boolean bound = c.deviceCapacityTokens() == Long.MAX_VALUE;
            h.append(row.baseline() ? "<tr class=\"baseline\">" : "<tr>")
                    .append("<td class=\"label\">").append(esc(row.label())).append("</td>")
                    .append("<td>").append(bound ? "" : esc(c.backupMode().cliName())).append("</td>")
                    .append("<td>").append(writes ? esc(OptionSpellings.of(c.writePolicy())) : "").append("</td>")
                    .append("<td>").append(bound ? "" : esc(OptionSpellings.of(c.eviction()))).append("</td>")
                    .append("<td class=\"n\">").append(bound ? "unlimited"
                            : capacity(c.deviceCapacityTokens(), false, kv)).append("</td>")
                    .append("<td class=\"n\">").append(writes || (!bound && !c.hasHostTier())
                            ? capacity(c.hostCapacityTokens(), true, kv) : "").append("</td>")
                    .append("<td class=\"n\">").append(ratioCell(r.blockHitRatio())).append("</td>")
                    .append("<td class=\"n\">").append(ratioCell(r.tokenHitRatio())).append("</td>")
                    .append("<td class=\"n\">").append(fmtInt(r.deviceHitTokens())).append("</td>")
                    .append("<td class=\"n\">").append(writes ? fmtInt(r.hostHitTokens()) : "").append("</td>")
                    .append("<td class=\"n\">").append(r.storage() == null ? ""
                            : fmtInt(r.storage().storageHitTokens())).append("</td>")
                    .append("<td class=\"n\">").append(fmtInt(r.prefillTokensComputed())).append("</td>")
                    .append("</tr>\n");
        }
        h.append("</tbody></table></div></section>\n");
        h.append("<section><h2>Configurations: backups</h2>\n<div class=\"scroll\"><table>\n<thead><tr>")
                .append("<th>configuration</th><th>backups committed / no room / aborted / fallback</th>")
                .append("<th>nodes not backed up</th><th>D2H</th>")
                .append("<th>exposed backup</th><th>hidden</th><th>commit p50 / p99 / max</th>")
                .append("<th>host peak (finite pools)</th><th>simulated</th><th>wall</th></tr></thead>\n<tbody>\n");
        for (HtmlReport.Row row : rows) {
            SimResult r = row.result();
            ServingStats sv = r.serving();
            boolean writes = writesHost(r);
            h.append(row.baseline() ? "<tr class=\"baseline\">" : "<tr>")
                    .append("<td class=\"label\">").append(esc(row.label())).append("</td>");
            if (writes) {
                h.append("<td class=\"n\">").append(r.backups().committed()).append(" / ").append(r.backups().noRoom())
                        .append(" / ").append(r.backups().aborted()).append(" / ").append(r.backups().fallback())
                        .append("</td>")
                        .append("<td class=\"n\">").append(skippedCell(r.backups())).append("</td>")
                        .append("<td class=\"n\">").append(bytes(r.d2hBytes())).append("</td>")
                        .append("<td class=\"n\">").append(sv == null && r.exposedBackupNs() == 0 ? ""
                                : duration(r.exposedBackupNs())).append("</td>")
                        .append("<td class=\"n\">").append(sv == null || sv.backupCopyNs() == 0 ? ""
                                : percent(sv.backupHiddenFraction())).append("</td>")
                        .append("<td class=\"n\">").append(r.backups().committed() == 0 || sv == null ? ""
                                : duration(r.commitLatencyNs().p50()) + " / " + duration(r.commitLatencyNs().p99())
                                + " / " + duration(r.commitLatencyNs().max())).append("</td>")
                        .append("<td class=\"n\">").append(hostPeak(r, kv)).append("</td>");
            } else {
                h.append("<td></td><td></td><td></td><td></td><td></td><td></td><td></td>");
            }
            h.append("<td class=\"n\">").append(r.simulatedSeconds() == 0 ? ""
                            : String.format(Locale.ROOT, "%.1f s", r.simulatedSeconds())).append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%.2f s", r.wallSeconds())).append("</td>")
                    .append("</tr>\n");
        }
        h.append("</tbody></table></div></section>\n");
    }

    /** Whether the run wrote a host tier (a backup mode other than none, a host capacity above 0). */
    static boolean writesHost(SimResult r) {
        return r.config().backupMode() != io.hicache.sim.BackupMode.NONE && r.config().hasHostTier();
    }

    /** A finite pool's peak use (share, and tokens and memory when known); empty for an unlimited pool. */
    private static String hostPeak(SimResult r, KvFootprint kv) {
        if (r.config().hostUnlimited()) {
            return "";
        }
        long t = r.occupancy().hostPeakTokens();
        String tokens = t == 0 ? "" : " (" + fmtInt(t) + (kv == null ? "" : " &#183; " + esc(kv.memory(t))) + ")";
        return percent(r.hostPoolPeakUtilization()) + tokens;
    }

    /** What clients felt, one row per timed configuration. */
    static void servingTable(StringBuilder h, List<HtmlReport.Row> rows) {
        boolean any = false;
        for (HtmlReport.Row row : rows) {
            any |= row.result().serving() != null;
        }
        if (!any) {
            return;
        }
        h.append("<section><h2>What clients felt</h2>\n<div class=\"scroll\"><table>\n<thead><tr>")
                .append("<th>configuration</th><th>fleet</th><th>TTFT p50 / p90 / p99 / max</th>")
                .append("<th>TPOT p50 / p99</th><th>end to end p50 / p99</th><th>queueing p50 / p99</th>")
                .append("</tr></thead>\n<tbody>\n");
        for (HtmlReport.Row row : rows) {
            ServingStats s = row.result().serving();
            if (s == null) {
                continue;
            }
            h.append(row.baseline() ? "<tr class=\"baseline\">" : "<tr>")
                    .append("<td class=\"label\">").append(esc(row.label()))
                    .append(s.overload().overloaded() ? " <b class=\"over\">overloaded</b>" : "").append("</td>")
                    .append("<td>").append(s.instances()).append(" × TP ").append(s.tp())
                    .append(s.instances() > 1 ? ", " + esc(s.router()) : "").append("</td>")
                    .append("<td class=\"n\">").append(fmtMs(s.ttftMs().p50())).append(" / ").append(fmtMs(s.ttftMs().p90()))
                    .append(" / ").append(fmtMs(s.ttftMs().p99())).append(" / ").append(fmtMs(s.ttftMs().max())).append("</td>")
                    .append("<td class=\"n\">").append(fmtMs(s.tpotMs().p50())).append(" / ").append(fmtMs(s.tpotMs().p99()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(fmtMs(s.e2eMs().p50())).append(" / ").append(fmtMs(s.e2eMs().p99()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(fmtMs(s.queueMs().p50())).append(" / ").append(fmtMs(s.queueMs().p99()))
                    .append("</td></tr>\n");
        }
        h.append("</tbody></table></div>\n<h3>Throughput and objectives</h3>\n<div class=\"scroll\"><table>\n<thead><tr>")
                .append("<th>configuration</th><th>output tok/s</th><th>input tok/s</th><th>req/s</th><th>goodput</th>")
                .append("<th>goodput req/s</th><th>GPU busy</th><th>preempted</th><th>steps / on device</th>")
                .append("</tr></thead>\n<tbody>\n");
        for (HtmlReport.Row row : rows) {
            ServingStats s = row.result().serving();
            if (s == null) {
                continue;
            }
            h.append(row.baseline() ? "<tr class=\"baseline\">" : "<tr>")
                    .append("<td class=\"label\">").append(esc(row.label())).append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%,.0f", s.throughputOutputTokensPerS()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%,.0f", s.throughputInputTokensPerS()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%.2f", s.throughputRequestsPerS()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(percent(s.goodput())).append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%.2f", s.goodputRequestsPerS()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(percent(s.gpuBusyFraction())).append("</td>")
                    .append("<td class=\"n\">").append(s.preemptions()).append("</td>")
                    .append("<td class=\"n\">").append(fmtInt(s.steps())).append(" / ").append(fmtInt(s.deviceForwards()))
                    .append("</td></tr>\n");
        }
        h.append("</tbody></table></div>\n<p class=\"note\">Objectives: TTFT ")
                .append(fmtMs(firstServing(rows).sloTtftMs())).append(", TPOT ")
                .append(fmtMs(firstServing(rows).sloTpotMs())).append(". Steps on device ran layer by layer through ")
                .append("the controller's hooks because they carried backups; the others only took their time.")
                .append(turnsNote(firstServing(rows))).append("</p></section>\n");
    }

    /** What closed-loop turns changed, in a sentence (empty when the trace names no turn that waited). */
    static String turnsNote(ServingStats s) {
        if (!s.closedLoop()) {
            return " Replayed open loop (--no-closed-loop): every request arrived at its trace time.";
        }
        return s.followUpsWaited() == 0 ? "" : String.format(Locale.ROOT, " %,d requests (first configuration) arrived "
                + "after their trace time: each waited for the answer of the turn it follows (closed loop).",
                s.followUpsWaited());
    }

    static ServingStats firstServing(List<HtmlReport.Row> rows) {
        for (HtmlReport.Row row : rows) {
            if (row.result().serving() != null) {
                return row.result().serving();
            }
        }
        throw new IllegalStateException("no timed row");
    }

    /** The third tier (L3): one row per configuration that ran with storage; nothing when none did. */
    static void storageTable(StringBuilder h, List<HtmlReport.Row> rows) {
        boolean any = false;
        for (HtmlReport.Row row : rows) {
            any |= row.result().storage() != null;
        }
        if (!any) {
            return;
        }
        h.append("<section><h2>Storage tier (L3)</h2>\n<div class=\"scroll\"><table>\n<thead><tr>")
                .append("<th>configuration</th><th>store</th><th>hits served from storage</th>")
                .append("<th>pages written / failed</th><th>written (true bytes)</th><th>write bandwidth (wall)</th>")
                .append("<th>prefetches / pages asked / published</th><th>prefetched (true bytes)</th>")
                .append("<th>read bandwidth (wall)</th><th>prefetch failed / no room</th><th>request wait</th>")
                .append("<th>queue peak prefetch / write</th></tr></thead>\n<tbody>\n");
        for (HtmlReport.Row row : rows) {
            StorageResult st = row.result().storage();
            if (st == null) {
                continue;
            }
            h.append("<tr>")
                    .append("<td class=\"label\">").append(esc(row.label())).append("</td>")
                    .append("<td>").append(esc(st.backend())).append("</td>")
                    .append("<td class=\"n\">").append(fmtInt(st.storageHitTokens())).append("</td>")
                    .append("<td class=\"n\">").append(fmtInt(st.writePages())).append(" / ")
                    .append(fmtInt(st.writeFailedPages())).append("</td>")
                    .append("<td class=\"n\">").append(bytes(st.writeBytes())).append("</td>")
                    .append("<td class=\"n\">").append(bytes(Math.round(st.writeBytesPerSecond()))).append("/s</td>")
                    .append("<td class=\"n\">").append(fmtInt(st.prefetchStarted())).append(" / ")
                    .append(fmtInt(st.prefetchPages())).append(" / ").append(fmtInt(st.prefetchPagesPublished()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(bytes(st.prefetchBytes())).append("</td>")
                    .append("<td class=\"n\">").append(bytes(Math.round(st.prefetchBytesPerSecond()))).append("/s</td>")
                    .append("<td class=\"n\">").append(fmtInt(st.prefetchFailedPages())).append(" / ")
                    .append(fmtInt(st.prefetchNoRoom())).append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%.2f s", st.prefetchWaitSeconds()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(st.prefetchQueuePeak()).append(" / ").append(st.writeQueuePeak())
                    .append("</td></tr>\n");
        }
        h.append("</tbody></table></div>\n<p>Hits served from storage are host hits a prefetch brought in from L3 for ")
                .append("the request (simulated tokens). Bandwidths are wall-clock figures of the real backend's I/O on ")
                .append("the simulator's one-byte-per-layer pages; true bytes scale them to the model's KV size.</p>")
                .append("</section>\n");
    }
}
