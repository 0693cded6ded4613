package io.hicache.aeron.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.aeron.driver.MediaDriver;
import io.hicache.aeron.EmbeddedDriver;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * {@code cp-cluster}: starts a media driver (embedded in this process) and {@code N} {@link CpRank} processes that
 * agree over Aeron IPC, optionally kills ({@code destroyForcibly}) or stalls ({@code SIGSTOP}/{@code SIGCONT}) one
 * rank part-way, waits for the ranks, and prints one JSON line: {@code ranks}, {@code rounds},
 * {@code round_latency_us} ({@code p50}, {@code p99}, {@code max}), {@code committed_per_rank} (null for a rank
 * without a report), {@code aborted_rank_failed}, {@code identical_commits} (every surviving rank committed the same
 * backups), {@code survivors}, {@code failed_ranks}, {@code exit_reason}.
 *
 * <p>Exit status: 0 when every surviving rank finished and they committed identically; 1 otherwise; 2 for bad
 * arguments. A rank that was declared failed (killed, or stalled past the timeout) is not a survivor.
 */
public final class CpCluster {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What to run. */
    public record Options(int ranks, double seconds, int killRank, double killAfterSeconds, int stallRank,
                          double stallAfterSeconds, double stallForSeconds, long seed, long memberTimeoutMs,
                          long periodUs) {
    }

    /** What happened: the JSON line and the exit status. */
    public record Result(String json, int exitStatus, boolean identicalCommits, long abortedRankFailed,
                         List<Integer> survivors) {
    }

    private static final String USAGE = "usage: cp-cluster N [--seconds S] [--kill R --after S2] "
        + "[--stall R --for S3 [--after S2]] [--seed X] [--member-timeout-ms T]";

    private CpCluster() {
    }

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("cp-cluster: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
            return;
        }
        Result r = run(o, System.err);
        System.out.println(r.json());
        System.exit(r.exitStatus());
    }

    static Options parse(String[] args) {
        if (args.length == 0) {
            throw new IllegalArgumentException("N (the number of ranks) is required");
        }
        int n = intArg("N", args[0], 2, 16);
        double seconds = 20;
        int kill = -1;
        int stall = -1;
        double after = -1;
        double stallFor = -1;
        long seed = 1;
        long timeoutMs = 1000;
        for (int i = 1; i < args.length; i += 2) {
            String flag = args[i];
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(flag + " needs a value");
            }
            String v = args[i + 1];
            switch (flag) {
                case "--seconds" -> seconds = doubleArg(flag, v, 1, 3600);
                case "--kill" -> kill = intArg(flag, v, 0, n - 1);
                case "--after" -> after = doubleArg(flag, v, 0, 3600);
                case "--stall" -> stall = intArg(flag, v, 0, n - 1);
                case "--for" -> stallFor = doubleArg(flag, v, 0.001, 3600);
                case "--seed" -> seed = longArg(flag, v);
                case "--member-timeout-ms" -> timeoutMs = (long) doubleArg(flag, v, 10, 60_000);
                default -> throw new IllegalArgumentException("unknown flag " + flag);
            }
        }
        if (kill >= 0 && stall >= 0) {
            throw new IllegalArgumentException("--kill and --stall: choose one");
        }
        if (kill >= 0 && after < 0) {
            throw new IllegalArgumentException("--kill needs --after S2 (seconds after the start, below --seconds)");
        }
        if (stall >= 0 && stallFor < 0) {
            throw new IllegalArgumentException("--stall needs --for S3 (seconds)");
        }
        if (after >= seconds) {
            throw new IllegalArgumentException("--after " + after + " must be below --seconds " + seconds);
        }
        if (stall >= 0 && after < 0) {
            after = seconds / 4;
        }
        return new Options(n, seconds, kill, kill >= 0 ? after : -1, stall, stall >= 0 ? after : -1, stallFor, seed,
            timeoutMs, 5_000);
    }

    private static int intArg(String flag, String v, int min, int max) {
        try {
            int x = Integer.parseInt(v);
            if (x >= min && x <= max) {
                return x;
            }
        } catch (NumberFormatException e) {
            // fall through
        }
        throw new IllegalArgumentException(flag + " " + v + " must be an integer in [" + min + ", " + max + "]");
    }

    private static long longArg(String flag, String v) {
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(flag + " " + v + " must be an integer", e);
        }
    }

    private static double doubleArg(String flag, String v, double min, double max) {
        try {
            double x = Double.parseDouble(v);
            if (x >= min && x <= max) {
                return x;
            }
        } catch (NumberFormatException e) {
            // fall through
        }
        throw new IllegalArgumentException(flag + " " + v + " must be a number in [" + min + ", " + max + "]");
    }

    /** Runs the cluster; progress goes to {@code log}. */
    public static Result run(Options o, java.io.PrintStream log) throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("cp-cluster");
        String aeronDir = dir.resolve("aeron").toString();
        long steps = Math.max(1, (long) (o.seconds() * 1_000_000 / o.periodUs()));
        long groupId = System.nanoTime() ^ o.seed();
        long token = new java.security.SecureRandom().nextLong();
        List<Process> procs = new ArrayList<>();
        String java = ProcessHandle.current().info().command().orElse("java");
        String cp = System.getProperty("hicache.cluster.classpath", System.getProperty("java.class.path"));
        Result result;
        try (MediaDriver driver = EmbeddedDriver.launch(aeronDir, 1_000_000)) {
            for (int r = 0; r < o.ranks(); r++) {
                List<String> cmd = new ArrayList<>(List.of(java, "-Xms32m", "-Xmx192m", "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1", "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
                    "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, CpRank.class.getName(),
                    "--aeron-dir", driver.aeronDirectoryName(), "--channel", "aeron:ipc?term-length=4m",
                    "--stream", "1601", "--group-id", Long.toString(groupId), "--token", Long.toString(token),
                    "--ranks", Integer.toString(o.ranks()), "--rank", Integer.toString(r), "--steps",
                    Long.toString(steps), "--period-us", Long.toString(o.periodUs()), "--member-timeout-ms",
                    Long.toString(o.memberTimeoutMs()), "--seed", Long.toString(o.seed()), "--run-dir",
                    dir.toString()));
                procs.add(new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("rank-" + r + ".log").toFile()).start());
            }
            long readyBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (countFiles(dir, "ready-") < o.ranks()) {
                if (System.nanoTime() > readyBy || procs.stream().anyMatch(p -> !p.isAlive())) {
                    procs.forEach(Process::destroyForcibly);
                    return failed(o, "ranks did not start: see " + dir, log);
                }
                Thread.sleep(20); // waiting on other processes' files, not synchronising threads
            }
            long startMs = System.currentTimeMillis() + 300;
            Files.writeString(dir.resolve("start.tmp"), Long.toString(startMs));
            Files.move(dir.resolve("start.tmp"), dir.resolve("start"));
            log.printf("cp-cluster: %d ranks, %d steps of %d us, member timeout %d ms, run dir %s%n", o.ranks(), steps,
                o.periodUs(), o.memberTimeoutMs(), dir);
            if (o.killRank() >= 0) {
                sleepUntil(startMs + (long) (o.killAfterSeconds() * 1000));
                log.printf("cp-cluster: killing rank %d%n", o.killRank());
                procs.get(o.killRank()).destroyForcibly();
            } else if (o.stallRank() >= 0) {
                sleepUntil(startMs + (long) (o.stallAfterSeconds() * 1000));
                long pid = procs.get(o.stallRank()).pid();
                log.printf("cp-cluster: stalling rank %d for %.1f s%n", o.stallRank(), o.stallForSeconds());
                signal("STOP", pid);
                sleepUntil(System.currentTimeMillis() + (long) (o.stallForSeconds() * 1000));
                signal("CONT", pid);
            }
            long deadline = startMs + (long) (o.seconds() * 1000) + 60_000 + 30 * o.memberTimeoutMs();
            boolean timedOut = false;
            for (Process p : procs) {
                long left = deadline - System.currentTimeMillis();
                if (!p.waitFor(Math.max(left, 1), TimeUnit.MILLISECONDS)) {
                    timedOut = true;
                }
            }
            procs.forEach(Process::destroyForcibly);
            result = summarise(o, dir, procs, timedOut, log);
        } finally {
            for (Process p : procs) {
                p.destroyForcibly();
            }
        }
        return result;
    }

    private static Result summarise(Options o, Path dir, List<Process> procs, boolean timedOut,
                                    java.io.PrintStream log) throws IOException {
        Long[] committed = new Long[o.ranks()];
        List<Integer> survivors = new ArrayList<>();
        List<Integer> failedRanks = new ArrayList<>();
        String digest = null;
        boolean identical = true;
        long abortedRankFailed = 0;
        long rounds = 0;
        boolean allOk = !timedOut;
        long failedMask = 0;
        List<long[]> samples = new ArrayList<>();
        for (int r = 0; r < o.ranks(); r++) {
            Path f = dir.resolve("report-" + r);
            if (!Files.exists(f)) {
                failedRanks.add(r);
                if (r != o.killRank()) {
                    allOk = false;
                    log.printf("cp-cluster: rank %d wrote no report (exit %s); log %s%n", r,
                        procs.get(r).isAlive() ? "none" : procs.get(r).exitValue(), dir.resolve("rank-" + r + ".log"));
                }
                continue;
            }
            JsonNode rep = JSON.readTree(f.toFile());
            log.println("cp-cluster: " + rep);
            committed[r] = rep.path("committed").asLong();
            failedMask |= rep.path("failed_mask").asLong();
            samples.add(readLatencies(dir.resolve("latency-" + r)));
            if (rep.path("left").asBoolean()) {
                failedRanks.add(r);
                continue;
            }
            survivors.add(r);
            if (rep.path("status").asInt() != 0) {
                allOk = false;
            }
            abortedRankFailed += rep.path("aborted_rank_failed").asLong();
            rounds = Math.max(rounds, rep.path("rounds").asLong());
            String d = rep.path("digest").asText() + "/" + committed[r];
            if (digest == null) {
                digest = d;
            } else if (!digest.equals(d)) {
                identical = false;
            }
        }
        for (int r = 0; r < o.ranks(); r++) {
            if ((failedMask & (1L << r)) != 0 && !failedRanks.contains(r)) {
                failedRanks.add(r);
            }
        }
        identical &= !survivors.isEmpty();
        long[] all = samples.stream().flatMapToLong(Arrays::stream).sorted().toArray();
        String reason = timedOut ? "timeout" : !allOk ? "rank_error" : failedMask != 0 ? "rank_failed" : "completed";
        ObjectNode json = JSON.createObjectNode().put("ranks", o.ranks()).put("rounds", rounds);
        json.putObject("round_latency_us").put("p50", us(pct(all, 0.50))).put("p99", us(pct(all, 0.99)))
            .put("max", us(all.length == 0 ? 0 : all[all.length - 1]));
        ArrayNode perRank = json.putArray("committed_per_rank");
        Arrays.stream(committed).forEach(perRank::add);
        json.put("aborted_rank_failed", abortedRankFailed).put("identical_commits", identical);
        survivors.forEach(json.putArray("survivors")::add);
        failedRanks.stream().sorted().forEach(json.putArray("failed_ranks")::add);
        json.put("member_timeout_ms", o.memberTimeoutMs()).put("exit_reason", reason);
        boolean ok = allOk && identical;
        if (ok) {
            deleteRecursively(dir);
        }
        return new Result(json.toString(), ok ? 0 : 1, identical, abortedRankFailed, survivors);
    }

    private static Result failed(Options o, String why, java.io.PrintStream log) {
        log.println("cp-cluster: " + why);
        String json = JSON.createObjectNode().put("ranks", o.ranks()).put("identical_commits", false)
            .put("exit_reason", "start_failed").toString();
        return new Result(json, 1, false, 0, List.of());
    }

    private static long pct(long[] sorted, double q) {
        if (sorted.length == 0) {
            return 0;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)];
    }

    /** Microseconds with one decimal, written as a plain JSON number. */
    private static BigDecimal us(long ns) {
        return BigDecimal.valueOf(ns).movePointLeft(3).setScale(1, RoundingMode.HALF_UP);
    }

    private static long[] readLatencies(Path f) throws IOException {
        if (!Files.exists(f)) {
            return new long[0];
        }
        long[] out = new long[(int) (Files.size(f) / 8)];
        try (InputStream in = Files.newInputStream(f); DataInputStream d = new DataInputStream(
            new java.io.BufferedInputStream(in))) {
            for (int i = 0; i < out.length; i++) {
                out[i] = d.readLong();
            }
        } catch (EOFException e) {
            throw new IOException("truncated latency file " + f, e);
        }
        return out;
    }

    private static int countFiles(Path dir, String prefix) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return (int) s.filter(p -> p.getFileName().toString().startsWith(prefix)).count();
        }
    }

    private static void sleepUntil(long wallMs) throws InterruptedException {
        long d = wallMs - System.currentTimeMillis();
        if (d > 0) {
            Thread.sleep(d); // the scenario's schedule (when to kill or stall), not synchronisation
        }
    }

    private static void signal(String sig, long pid) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IOException("kill -" + sig + " " + pid + " failed");
        }
    }

    private static void deleteRecursively(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
