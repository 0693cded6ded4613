package io.hicache.aeron.cluster;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.aeron.Aeron;
import io.hicache.aeron.AeronRankGroup;
import io.hicache.aeron.AgreementConfig;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.SystemNanoClock;

import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One rank process of {@link CpCluster}: connects to the host's media driver, joins the group, announces itself
 * ready, waits for the common start time, then runs {@code --steps} lockstep steps of its {@link RankWorkload}, one
 * every {@code --period-us} after the start (catching up when behind), and writes its report. After the last step it
 * keeps answering the group for two member timeouts so that slower ranks can finish their last round.
 *
 * <p>Exit status: 0 done, 2 bad arguments, 3 a step did not retire within 20 member timeouts (a hang).
 */
public final class CpRank {
    private static final ObjectMapper JSON = new ObjectMapper();

    private CpRank() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = parse(args);
        int ranks = Integer.parseInt(a.get("ranks"));
        int rank = Integer.parseInt(a.get("rank"));
        long steps = Long.parseLong(a.get("steps"));
        long periodNs = TimeUnit.MICROSECONDS.toNanos(Long.parseLong(a.get("period-us")));
        long timeoutNs = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(a.get("member-timeout-ms")));
        Path dir = Path.of(a.get("run-dir"));
        AgreementConfig config = new AgreementConfig(Long.parseLong(a.get("group-id")), Long.parseLong(a.get("token")),
            ranks, rank, timeoutNs, Math.max(timeoutNs / 20, 1_000_000));
        IdleStrategy idle = new BackoffIdleStrategy(10, 20, 1_000, 200_000);
        SystemNanoClock clock = SystemNanoClock.INSTANCE;
        int status = 0;
        try (Aeron aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(a.get("aeron-dir")));
             AeronRankGroup group = new AeronRankGroup(aeron, a.get("channel"), Integer.parseInt(a.get("stream")),
                 config, clock, 1 << 20);
             RankWorkload w = new RankWorkload(ranks, rank, group.backupAgreement(), group.loadAgreement(),
                 Long.parseLong(a.get("seed")))) {
            Files.writeString(dir.resolve("ready-" + rank), "ready");
            Path start = dir.resolve("start");
            while (!Files.exists(start)) {
                idle.idle(group.doWork());
            }
            long startWallMs = Long.parseLong(Files.readString(start).trim());
            long t0 = clock.nanoTime() + TimeUnit.MILLISECONDS.toNanos(startWallMs - System.currentTimeMillis());
            for (long i = 0; i < steps && status == 0; i++) {
                long due = t0 + i * periodNs;
                idle.reset();
                while (clock.nanoTime() < due) {
                    idle.idle(group.doWork());
                }
                w.begin();
                long deadline = clock.nanoTime() + 20 * timeoutNs;
                idle.reset();
                while (!w.poll()) {
                    if (clock.nanoTime() > deadline) {
                        System.err.println("rank " + rank + ": step " + i + " did not retire within "
                            + TimeUnit.NANOSECONDS.toMillis(20 * timeoutNs) + " ms");
                        status = 3;
                        break;
                    }
                    idle.idle(group.doWork());
                }
            }
            // what this rank saw while it ran its steps: a peer that finishes and goes quiet later is not a failure
            long failedMask = group.failedMask();
            boolean degraded = group.degraded();
            Files.writeString(dir.resolve("done-" + rank), "done");
            // keep answering (heartbeats) until every peer not known failed has finished its steps too, so that a
            // slower survivor never takes this one's silence for a failure; bounded, then a short linger
            long waitUntil = clock.nanoTime() + 20 * timeoutNs;
            idle.reset();
            while (!peersDone(dir, ranks, rank, group.failedMask()) && clock.nanoTime() < waitUntil) {
                idle.idle(group.doWork());
            }
            long lingerUntil = clock.nanoTime() + 2 * timeoutNs;
            while (clock.nanoTime() < lingerUntil) {
                idle.idle(group.doWork());
            }
            long[] latencies = group.backupRoundLatencies();
            try (DataOutputStream out = new DataOutputStream(Files.newOutputStream(dir.resolve("latency-" + rank)))) {
                for (long ns : latencies) {
                    out.writeLong(ns);
                }
            }
            ObjectNode report = JSON.createObjectNode()
                .put("rank", rank).put("steps", w.steps()).put("committed", w.committed())
                .put("aborted", w.aborted()).put("aborted_rank_failed", w.abortedRankFailed())
                .put("digest", Long.toHexString(w.commitDigest())).put("left", group.hasLeft())
                .put("degraded", degraded).put("failed_mask", failedMask)
                .put("rounds", latencies.length).put("dropped_frames", group.droppedFrames())
                .put("status", status);
            JSON.writeValue(dir.resolve("report-" + rank + ".tmp").toFile(), report);
            Files.move(dir.resolve("report-" + rank + ".tmp"), dir.resolve("report-" + rank));
        }
        System.exit(status);
    }

    /** Whether every rank but {@code self} and those in {@code failedMask} has written its done marker. */
    private static boolean peersDone(Path dir, int ranks, int self, long failedMask) {
        for (int r = 0; r < ranks; r++) {
            if (r != self && (failedMask & (1L << r)) == 0 && !Files.exists(dir.resolve("done-" + r))) {
                return false;
            }
        }
        return true;
    }

    private static Map<String, String> parse(String[] args) throws IOException {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IOException("expected --name value pairs, got " + args[i]);
            }
            m.put(args[i].substring(2), args[i + 1]);
        }
        return m;
    }
}
