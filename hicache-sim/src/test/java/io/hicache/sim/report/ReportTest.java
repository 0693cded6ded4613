package io.hicache.sim.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.sim.BackupMode;
import io.hicache.sim.SimConfig;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.xml.sax.InputSource;

import javax.xml.parsers.DocumentBuilderFactory;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ReportTest {

    static final List<String> ISSUE_FIELDS = List.of("requests", "input_tokens", "blocks", "block_hit_ratio",
            "token_hit_ratio", "device_hit_tokens", "host_hit_tokens", "prefill_tokens_computed", "backups",
            "backups_skipped", "d2h_bytes", "exposed_backup_ns", "commit_latency_ns", "host_pool_peak_utilization",
            "simulated_seconds", "wall_seconds", "trace", "model", "gpu", "backup_mode", "write_policy", "eviction", "page_size",
            "block_tokens", "device_capacity_tokens", "host_capacity_tokens", "cp", "draft_layers", "seed");

    static SimResult sample(SimConfig c, List<TimelineSegment> timeline) {
        return new SimResult(c, "traces/x.jsonl", 10, 5000, 5000, 12, 0.25, 0.26, 900, 300, 3800,
                new SimResult.Backups(7, 5, 1, 1, 0), 123_456, 42_000, new SimResult.CommitLatency(10, 20, 30), 0.5,
                12.5, 0.1, timeline);
    }

    @Test
    void jsonHasExactlyTheDocumentedSnakeCaseNames() throws Exception {
        SimConfig c = SimConfig.defaults(512);
        JsonNode n = new ObjectMapper().readTree(JsonReport.toJson(sample(c, List.of())));
        List<String> names = new ArrayList<>();
        n.fieldNames().forEachRemaining(names::add);
        assertThat(names).containsAll(ISSUE_FIELDS);
        assertThat(names).containsExactlyInAnyOrderElementsOf(concat(ISSUE_FIELDS,
                List.of("simulated_tokens", "lanes", "cache_only", "time_scale", "device_peak_tokens",
                        "host_peak_tokens")));
        assertThat(n.get("backups").properties()).extracting(e -> e.getKey())
                .containsExactly("reserved", "committed", "aborted", "no_room", "fallback");
        assertThat(n.get("commit_latency_ns").properties()).extracting(e -> e.getKey())
                .containsExactly("p50", "p99", "max");
        assertThat(n.get("backups").get("no_room").asLong()).isEqualTo(1);
        assertThat(n.get("model").asText()).isEqualTo("llama3-70b");
        assertThat(n.get("backup_mode").asText()).isEqualTo("layered");
        assertThat(n.get("write_policy").asText()).isEqualTo("write_through");
        assertThat(n.get("host_capacity_tokens").asLong()).isEqualTo(2 * c.deviceCapacityTokens());
    }

    @Test
    void unlimitedHostIsWrittenAsInfAndListsAsArrays() throws Exception {
        SimConfig c = SimConfig.defaults(512).withHostCapacityTokens(SimConfig.HOST_UNLIMITED);
        JsonNode n = new ObjectMapper().readTree(JsonReport.toJson(List.of(sample(c, List.of()),
                sample(c.withBackupMode(BackupMode.NONE), List.of()))));
        assertThat(n.isArray()).isTrue();
        assertThat(n).hasSize(2);
        assertThat(n.get(0).get("host_capacity_tokens").asText()).isEqualTo("inf");
        assertThat(n.get(1).get("backup_mode").asText()).isEqualTo("none");
    }

    @Test
    void commitLatencyUsesNearestRank() {
        long[] samples = new long[200];
        for (int i = 0; i < 100; i++) {
            samples[i] = 100L - i;
        }
        SimResult.CommitLatency l = SimResult.CommitLatency.of(samples, 100);
        assertThat(l).isEqualTo(new SimResult.CommitLatency(50, 99, 100));
        assertThat(SimResult.CommitLatency.of(samples, 0)).isEqualTo(SimResult.CommitLatency.NONE);
    }

    @Test
    void htmlIsWellFormedSelfContainedAndShowsEverySection() throws Exception {
        SimConfig c = SimConfig.defaults(512);
        List<TimelineSegment> layered = List.of(new TimelineSegment("compute", 0, 1000, "L0"),
                new TimelineSegment("compute", 1000, 2000, "L1"), new TimelineSegment("d2h copy", 1000, 1700, "L0"));
        List<TimelineSegment> allLayers = List.of(new TimelineSegment("compute", 0, 2000, "L0-1"),
                new TimelineSegment("d2h copy", 2000, 3400, "L0-1"));
        SimResult a = sample(c, layered);
        SimResult b = sample(c.withBackupMode(BackupMode.ALL_LAYERS), allLayers);
        List<SimResult> sweep = List.of(sample(c.withHostCapacityTokens(0), List.of()), a,
                sample(c.withHostCapacityTokens(SimConfig.HOST_UNLIMITED), List.of()));
        String html = HtmlReport.render(new HtmlReport.Report("HiCache <test> & co", "hicache-sim compare --x \"y\"",
                List.of(new HtmlReport.Row("layered", a, false), new HtmlReport.Row("all-layers", b, false),
                        new HtmlReport.Row("unlimited cache (bound)", a, true)),
                sweep, List.of(new HtmlReport.Timeline("layered", layered),
                        new HtmlReport.Timeline("all-layers", allLayers))));

        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
        Document doc = f.newDocumentBuilder().parse(new InputSource(new StringReader(html)));
        assertThat(doc.getDocumentElement().getTagName()).isEqualTo("html");
        assertThat(doc.getElementsByTagName("svg").getLength()).isEqualTo(3);
        // two tables (cache, backups) of a header and three rows each; no serving tables for untimed rows
        assertThat(doc.getElementsByTagName("tr").getLength()).isEqualTo(8);
        assertThat(doc.getElementsByTagName("title").item(0).getTextContent()).isEqualTo("HiCache <test> & co");

        assertThat(html).doesNotContain("http:", "https:", "<script", "<link", "src=", "@import", "url(");
        assertThat(html).contains("class=\"baseline\"", "Hit ratio vs host capacity", "d2h copy", "inf",
                ">none<", "0.2500");
    }

    static ServingStats serving(double ttftP50Ms, double ttftP99Ms, double outTokensPerS, double hidden) {
        return serving(ttftP50Ms, ttftP99Ms, outTokensPerS, hidden, true, 0);
    }

    static ServingStats serving(double ttftP50Ms, double ttftP99Ms, double outTokensPerS, double hidden,
                                boolean closedLoop, long followUpsWaited) {
        long[] ttft = {(long) (ttftP50Ms * 1e6), (long) (ttftP99Ms * 1e6)};
        return new ServingStats(8, "cache-aware", 4, 8192, 8192, 2000, 100,
                new ServingStats.Latency(ttftP50Ms, ttftP99Ms, ttftP99Ms, ttftP99Ms, ttftP50Ms),
                new ServingStats.Latency(12, 20, 30, 40, 15), new ServingStats.Latency(900, 2000, 3000, 4000, 1000),
                new ServingStats.Latency(5, 9, 10, 11, 6), 40_000, outTokensPerS, 3.4, 0.9, 3.0, 0.8, 3, 7, closedLoop, followUpsWaited, 1000, 100,
                1_000_000_000L, hidden, "same-forward", 0, ServingStats.Latency.NONE, ServingStats.cdf(ttft, 2));
    }

    @Test
    void theDecisionSaysWhatTheHostTierAndTheBackupModeChangeForClients() {
        SimConfig c = SimConfig.defaults(512);
        SimResult layered = sample(c, List.of()).withServing(serving(400, 2000, 1200, 0.98));
        SimResult allLayers = sample(c.withBackupMode(BackupMode.ALL_LAYERS), List.of())
                .withServing(serving(400, 2004, 1200, 0.1));
        SimResult none = sample(c.withBackupMode(BackupMode.NONE), List.of()).withServing(serving(800, 8000, 1000, 0));
        String d = Decision.of(List.of(layered, allLayers, none));
        assertThat(d).contains("TTFT p99 from 8,000 to 2,000 ms (0.25x)", "throughput 1.20x", "(layered)",
                "clients see no difference here");
        SimResult slower = sample(c.withBackupMode(BackupMode.ALL_LAYERS), List.of())
                .withServing(serving(400, 2500, 1200, 0.1));
        assertThat(Decision.of(List.of(layered, slower, none))).contains("per-layer better by 20.0 %");
        assertThat(Decision.of(List.of(layered))).as("no baseline, no decision").isNull();
        assertThat(HtmlReport.render(new HtmlReport.Report("t", "c", List.of(new HtmlReport.Row("layered", layered,
                false), new HtmlReport.Row("none (no backup)", none, true)), List.of(), List.of())))
                .contains("class=\"decision\"", "Decision: a host tier of");
    }

    @Test
    void servingRowsGetAHeadlineAgainstTheNoHostBaselineAndATtftCdf() throws Exception {
        SimConfig c = SimConfig.defaults(512);
        SimResult layered = sample(c, List.of()).withServing(serving(400, 2000, 1200, 0.98));
        SimResult none = sample(c.withBackupMode(BackupMode.NONE), List.of()).withServing(serving(800, 8000, 1000, 0));
        String html = HtmlReport.render(new HtmlReport.Report("t", "c",
                List.of(new HtmlReport.Row("layered", layered, false), new HtmlReport.Row("none (no backup)", none, true)),
                List.of(), List.of()));
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
        Document doc = f.newDocumentBuilder().parse(new InputSource(new StringReader(html)));
        assertThat(doc.getElementsByTagName("svg").getLength()).isEqualTo(1); // the TTFT CDF
        assertThat(html).contains("Headline: against no host tier", "0.50× no host tier (better)",
                "0.25× no host tier (better)", "1.20× no host tier (better)", "98.0%", "TTFT distribution",
                "What clients felt");
        JsonNode n = new ObjectMapper().readTree(JsonReport.toJson(layered));
        assertThat(n.get("ttft_ms").get("p99").asDouble()).isEqualTo(2000);
        assertThat(n.get("instances").asInt()).isEqualTo(8);
        assertThat(n.has("ttft_cdf_ms")).isFalse();
        assertThat(n.get("closed_loop").asBoolean()).isTrue();
        assertThat(html).doesNotContain("arrived after their trace time", "open loop");
    }

    /** The report says how the trace's follow-up turns were replayed. */
    @Test
    void theReportSaysWhetherFollowUpTurnsWaited() {
        SimConfig c = SimConfig.defaults(512);
        java.util.function.Function<ServingStats, String> render = st -> HtmlReport.render(new HtmlReport.Report("t",
                "c", List.of(new HtmlReport.Row("layered", sample(c, List.of()).withServing(st), false)), List.of(),
                List.of()));
        assertThat(render.apply(serving(400, 2000, 1200, 0.98, true, 1234)))
                .contains("1,234 requests (first configuration) arrived after their trace time");
        assertThat(render.apply(serving(400, 2000, 1200, 0.98, false, 0))).contains("Replayed open loop");
    }

    @Test
    void htmlWithoutTimelinesSaysWhy() {
        String html = HtmlReport.render(new HtmlReport.Report("t", "c",
                List.of(new HtmlReport.Row("layered", sample(SimConfig.defaults(512), List.of()), false)),
                List.of(), List.of()));
        assertThat(html).contains("No timeline recorded").doesNotContain("<svg");
    }

    private static java.util.Map<String, Double> circleX(String html, String series) {
        java.util.Map<String, Double> out = new java.util.LinkedHashMap<>();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("<circle cx=\"([0-9.]+)\"[^>]*><title>"
                + java.util.regex.Pattern.quote(series) + " at host ([^:]+):").matcher(html);
        while (m.find()) {
            out.putIfAbsent(m.group(2), Double.parseDouble(m.group(1)));
        }
        return out;
    }

    /** Before: the sweep's capacities sat evenly spaced as categories (0, 500k, 1M, ..., inf), bending the curve. */
    @Test
    void theSweepChartsLeadOnANumericLogAxisWithZeroAndInfSetApart() {
        SimConfig c = SimConfig.defaults(512);
        List<SimResult> sweep = new ArrayList<>();
        for (long h : new long[] {0, 100_000, 1_000_000, 10_000_000, SimConfig.HOST_UNLIMITED}) {
            sweep.add(sample(c.withHostCapacityTokens(h), List.of()).withServing(serving(400, 2000, 1200, 0.9)));
        }
        KvFootprint kv = KvFootprint.of(c, 4, 512, KvFootprint.DeviceSource.GPU_ROOM);
        Recommendation rec = Recommendation.of(Recommendation.pointsOf(sweep), 0.01, kv, 8);
        List<HtmlReport.Row> rows = new ArrayList<>();
        for (SimResult r : sweep) {
            rows.add(new HtmlReport.Row("host " + Units.tokensShort(r.config().hostCapacityTokens()), r, false));
        }
        String html = HtmlReport.render(new HtmlReport.Report("t", "c", rows, sweep, List.of(),
                new HtmlReport.Answer(kv, null, List.of("Recommendation: " + rec.reason() + "."), rec, List.of())));
        java.util.Map<String, Double> x = circleX(html, "block hit ratio");
        assertThat(x).containsOnlyKeys("0", "100k", "1M", "10M", "inf");
        // a decade is a decade: 100k to 1M as wide as 1M to 10M
        assertThat(x.get("1M") - x.get("100k")).isCloseTo(x.get("10M") - x.get("1M"), org.assertj.core.data.Offset.offset(0.2));
        // 0 and inf sit apart, past breaks, outside the log range
        assertThat(x.get("0")).isLessThan(x.get("100k") - 20);
        assertThat(x.get("inf")).isGreaterThan(x.get("10M") + 20);
        assertThat(html).contains("class=\"brk\"", "TTFT vs host capacity", "Recommendation");
        // the answer and both charts come before the tables and any card
        int charts = html.indexOf("Hit ratio vs host capacity");
        assertThat(html.indexOf("class=\"answer\"")).isLessThan(charts);
        assertThat(charts).isLessThan(html.indexOf("Configurations: cache"));
        assertThat(html).doesNotContain("class=\"card\"");
        // tick labels in tokens with memory under them
        assertThat(html).contains(">1M<", ">" + kv.memory(1_000_000) + "<");
    }

    /** Before: nine TTFT series shared three colours; the unlimited pool showed a use; the none row a host cap. */
    @Test
    void seriesHaveTheirOwnColoursAndBaselinesLeaveIrrelevantCellsEmpty() {
        SimConfig c = SimConfig.defaults(512);
        List<HtmlReport.Row> rows = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            rows.add(new HtmlReport.Row("host " + i, sample(c.withHostCapacityTokens(100_000L * (i + 1)), List.of())
                    .withServing(serving(400 + i, 2000 + i, 1200, 0.9)), false));
        }
        SimResult unlimited = sample(c.withHostCapacityTokens(SimConfig.HOST_UNLIMITED), List.of())
                .withServing(serving(400, 2000, 1200, 0.9));
        rows.add(new HtmlReport.Row("host unlimited", unlimited, false));
        SimResult none = sample(c.withBackupMode(io.hicache.sim.BackupMode.NONE), List.of())
                .withServing(serving(800, 8000, 1000, 0));
        rows.add(new HtmlReport.Row("none (no backup)", none, true));
        String html = HtmlReport.render(new HtmlReport.Report("t", "c", rows, List.of(), List.of()));
        java.util.Set<String> colours = new java.util.HashSet<>();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("<polyline fill=\"none\" stroke=\"(#[0-9a-f]{6})\"")
                .matcher(html.substring(html.indexOf("TTFT distribution")));
        int lines = 0;
        while (m.find()) {
            colours.add(m.group(1));
            lines++;
        }
        assertThat(lines).isEqualTo(11);
        assertThat(colours).hasSize(11);
        // host peak: a share for the nine finite pools only (the sample's 50 %), none for the unlimited one
        assertThat(html.split("50\\.0%", -1).length - 1).isEqualTo(9);
        String noneRow = html.substring(html.indexOf("<td class=\"label\">none (no backup)</td>"));
        noneRow = noneRow.substring(0, noneRow.indexOf("</tr>"));
        assertThat(noneRow).doesNotContain("write_through", Html.fmtInt(c.hostCapacityTokens()), "0 (none)");
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }
}
