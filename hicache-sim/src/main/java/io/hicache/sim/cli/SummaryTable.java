package io.hicache.sim.cli;

import io.hicache.sim.BackupMode;
import io.hicache.sim.report.KvFootprint;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.report.Units;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The summary table a run prints on standard output: one row per configuration, capacities in tokens and in
 * memory side by side, then hit ratios, backups and (timed runs) what clients felt. Rows are collected and the
 * table printed in one piece once every run has finished, so nothing another part writes meanwhile (a log line on
 * standard error) lands inside it. Used on one thread.
 */
final class SummaryTable {

    /**
     * One row.
     *
     * @param label  the configuration
     * @param result its run
     */
    record Row(String label, SimResult result) {
    }

    private final KvFootprint kv;
    private final List<Row> rows = new ArrayList<>();

    SummaryTable(KvFootprint kv) {
        this.kv = kv;
    }

    void add(String label, SimResult r) {
        rows.add(new Row(label, r));
    }

    /** Prints the header and every row. */
    void print(PrintStream out) {
        int w = "configuration".length();
        for (Row row : rows) {
            w = Math.max(w, row.label().length());
        }
        String labelFormat = "%-" + w + "s";
        out.println(String.format(Locale.ROOT, labelFormat, "configuration") + String.format(Locale.ROOT,
                " %11s %10s %11s %10s %8s %8s %14s %14s %9s %12s %12s %8s %11s %11s %11s %10s %7s",
                "device_tok", "device_mem", "host_tok", "host_mem", "blk_hit", "tok_hit", "device_hit_tok",
                "host_hit_tok", "backups", "exposed_ms", "commit_p99ms", "wall_s", "ttft_p50ms", "ttft_p99ms",
                "tpot_p50ms", "out_tok/s", "goodput"));
        for (Row row : rows) {
            out.println(String.format(Locale.ROOT, labelFormat, row.label()) + cells(row));
        }
    }

    private String cells(Row row) {
        SimResult r = row.result();
        var c = r.config();
        boolean noHost = c.backupMode() == BackupMode.NONE || !c.hasHostTier();
        String deviceTok = Units.tokens(c.deviceCapacityTokens());
        String deviceMem = kv.memory(c.deviceCapacityTokens());
        String hostTok = noHost ? (c.hasHostTier() ? "-" : "0") : Units.tokens(c.hostCapacityTokens());
        String hostMem = noHost ? (c.hasHostTier() ? "-" : "0") : kv.memory(c.hostCapacityTokens());
        String line = String.format(Locale.ROOT,
                " %11s %10s %11s %10s %8.4f %8.4f %14d %14d %9d %12.3f %12.3f %8.2f",
                deviceTok, deviceMem, hostTok, hostMem, r.blockHitRatio(), r.tokenHitRatio(), r.deviceHitTokens(),
                r.hostHitTokens(), r.backups().committed(), r.exposedBackupNs() / 1e6,
                r.commitLatencyNs().p99() / 1e6, r.wallSeconds());
        var s = r.serving();
        if (s != null) {
            line += String.format(Locale.ROOT, " %11.1f %11.1f %11.1f %10.1f %7.3f", s.ttftMs().p50(),
                    s.ttftMs().p99(), s.tpotMs().p50(), s.throughputOutputTokensPerS(), s.goodput());
        }
        if (r.storage() != null) {
            line += String.format(Locale.ROOT,
                    "  storage=%s storage_hit_tok=%d storage_write_pages=%d prefetch_pages_published=%d",
                    r.storage().backend(), r.storage().storageHitTokens(), r.storage().writePages(),
                    r.storage().prefetchPagesPublished());
        }
        return line;
    }
}
