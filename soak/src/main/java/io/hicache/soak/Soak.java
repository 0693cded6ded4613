package io.hicache.soak;

import io.aeron.driver.MediaDriver;
import io.hicache.aeron.EmbeddedDriver;

import java.io.IOException;
import java.io.Reader;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * {@code scripts/soak}: runs {@code --ranks} {@link SoakRank} processes that agree over Aeron IPC (an embedded media
 * driver in this process), with an L3 tier on a real {@code redis-server} this process starts on 127.0.0.1 (or, with
 * {@code --l3 file}, on a file store in one directory with a quota that fails writes as a full disk does), for
 * {@code --minutes}, under faults drawn from {@code --seed}: in each epoch one rank is killed ({@code kill -9}) and
 * the group restarts as a new epoch (new group id, fresh caches, the same L3); Redis is killed ({@code kill -9})
 * and restarted (empty: no persistence) on a schedule, or the full disk is freed between epochs; the ranks
 * themselves stall forwards past their lease and fail copy launches and event waits. Prints
 * a JSON line per minute and a final one (last line of stdout); exit 0 only when the run was clean: no mismatch,
 * something verified, no leak, every rank that was not killed exited 0.
 *
 * <p>Wall-clock sleeps here only pace the soak (when to kill, when to report); no result depends on them.
 */
public final class Soak {
    private final double minutes;
    private final int ranks;
    private final int draftLayers;
    private final long seed;
    private final Path out;
    private final String redisServer;
    private final long memberTimeoutMs = 1_000;
    private final long leaseMs = 250;
    private final double cudaFaults;
    private final double eventFaults;
    private final boolean fileStore;
    private final long fileQuotaBytes;
    private final SplittableRandom faults;
    private int diskFreed;
    private Process redis;
    private int redisPort;
    private int redisRestarts;
    private int ranksKilled;
    private int rankErrors;
    private int epochs;
    private final List<Long> forwardsPerMinute = new ArrayList<>();
    private final List<Long> residentMbPerMinute = new ArrayList<>();
    private final List<Long> residentMbPerRankPerMinute = new ArrayList<>();
    private final List<Long> directBytesPerMinute = new ArrayList<>();
    private final List<Process> live = new ArrayList<>();
    private long lastForwards;

    private Soak(double minutes, int ranks, int draftLayers, long seed, Path out, String redisServer,
                 double cudaFaults, double eventFaults, boolean fileStore, long fileQuotaBytes) {
        this.cudaFaults = cudaFaults;
        this.eventFaults = eventFaults;
        this.fileStore = fileStore;
        this.fileQuotaBytes = fileQuotaBytes;
        this.minutes = minutes;
        this.ranks = ranks;
        this.draftLayers = draftLayers;
        this.seed = seed;
        this.out = out;
        this.redisServer = redisServer;
        this.faults = new SplittableRandom(seed ^ 0x5eed5eedL);
    }

    public static void main(String[] args) throws Exception {
        double minutes = 60;
        int ranks = 2;
        int draft = 1;
        long seed = System.nanoTime() & 0xffffffffL;
        Path out = null;
        String redis = null;
        double cudaFaults = 0.002;
        double eventFaults = 0.001;
        String l3 = "redis";
        double quotaMb = 8;
        try {
            for (int i = 0; i < args.length; i += 2) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(args[i] + " needs a value");
                }
                String v = args[i + 1];
                switch (args[i]) {
                    case "--minutes" -> minutes = Double.parseDouble(v);
                    case "--ranks" -> ranks = Integer.parseInt(v);
                    case "--draft-layers" -> draft = Integer.parseInt(v);
                    case "--seed" -> seed = Long.parseLong(v);
                    case "--out" -> out = Path.of(v);
                    case "--redis-server" -> redis = v;
                    case "--cuda-faults" -> cudaFaults = Double.parseDouble(v);
                    case "--cuda-event-faults" -> eventFaults = Double.parseDouble(v);
                    case "--l3" -> l3 = v;
                    case "--file-quota-mb" -> quotaMb = Double.parseDouble(v);
                    default -> throw new IllegalArgumentException("unknown flag " + args[i]);
                }
            }
            if (minutes <= 0 || minutes > 24 * 60 || ranks < 2 || ranks > 8 || draft < 0 || draft > 4) {
                throw new IllegalArgumentException("need 0 < --minutes <= 1440, 2 <= --ranks <= 8 (a kill needs a "
                    + "survivor), 0 <= --draft-layers <= 4");
            }
            if (!l3.equals("redis") && !l3.equals("file")) {
                throw new IllegalArgumentException("--l3 must be redis or file, was " + l3);
            }
            if (cudaFaults < 0 || cudaFaults >= 1 || eventFaults < 0 || eventFaults >= 1 || !(quotaMb > 0)) {
                throw new IllegalArgumentException("need 0 <= --cuda-faults, --cuda-event-faults < 1 and "
                    + "--file-quota-mb > 0");
            }
            if (out == null || (redis == null && l3.equals("redis"))) {
                throw new IllegalArgumentException("--out and (for --l3 redis) --redis-server are required");
            }
        } catch (IllegalArgumentException e) {
            System.err.println("soak: " + e.getMessage());
            System.exit(2);
            return;
        }
        Files.createDirectories(out);
        System.exit(new Soak(minutes, ranks, draft, seed, out, redis, cudaFaults, eventFaults, l3.equals("file"),
            (long) (quotaMb * 1024 * 1024)).run());
    }

    private int run() throws Exception {
        long startMs = System.currentTimeMillis();
        long endMs = startMs + (long) (minutes * 60_000);
        System.err.printf("soak: %.1f min, %d ranks, %d draft layers, seed %d, L3 %s, out %s%n", minutes, ranks,
            draftLayers, seed, fileStore ? "file (quota " + fileQuotaBytes + " B)" : "redis", out);
        try (MediaDriver driver = EmbeddedDriver.launch(out.resolve("aeron").toString(), 1_000_000)) {
            long nextRedisKill = Long.MAX_VALUE;
            if (!fileStore) {
                redisPort = freePort();
                startRedis();
                nextRedisKill = startMs + (long) ((0.3 + 0.2 * faults.nextDouble()) * (endMs - startMs));
            }
            long nextReport = startMs + 60_000;
            while (System.currentTimeMillis() < endMs - 10_000) {
                // one epoch: a fresh group; one rank killed part-way when the epoch has time for it
                int epoch = epochs++;
                if (fileStore && epoch > 0 && faults.nextBoolean()) {
                    freeDisk(); // between epochs: no rank has the store open
                }
                Path dir = Files.createDirectories(out.resolve("epoch-" + epoch));
                List<Process> procs = startRanks(driver, epoch, dir, endMs);
                if (procs == null) {
                    rankErrors++;
                    break;
                }
                long epochStart = System.currentTimeMillis();
                long killAt = epochStart + 20_000 + faults.nextLong(20_000);
                int victim = faults.nextInt(ranks);
                boolean killed = false;
                while (procs.stream().anyMatch(Process::isAlive)) {
                    long now = System.currentTimeMillis();
                    if (!killed && now >= killAt && killAt < endMs - 15_000 && procs.get(victim).isAlive()) {
                        System.err.printf("soak: epoch %d: kill -9 rank %d%n", epoch, victim);
                        procs.get(victim).destroyForcibly();
                        killed = true;
                        ranksKilled++;
                    }
                    if (now >= nextRedisKill) {
                        restartRedis();
                        nextRedisKill = now + 60_000 + faults.nextLong(60_000);
                    }
                    if (now >= nextReport) {
                        System.out.println(report(false, (now - startMs) / 60_000));
                        System.out.flush();
                        nextReport += 60_000;
                    }
                    if (now > endMs + 120_000) {
                        System.err.println("soak: ranks still running 2 min after the end; killing them");
                        procs.forEach(Process::destroyForcibly);
                        rankErrors++;
                    }
                    Thread.sleep(100); // pacing of the soak's schedule, not synchronisation
                }
                for (int r = 0; r < ranks; r++) {
                    if (killed && r == victim) {
                        continue;
                    }
                    int status = procs.get(r).exitValue();
                    if (status != 0) {
                        rankErrors++;
                        System.err.printf("soak: epoch %d rank %d exited %d; log %s%n", epoch, r, status,
                            dir.resolve("rank-" + r + ".log"));
                    }
                }
                live.clear();
                if (rankErrors > 0) {
                    break;
                }
            }
        } finally {
            live.forEach(Process::destroyForcibly);
            if (redis != null) {
                redis.destroyForcibly();
                redis.waitFor(10, TimeUnit.SECONDS);
            }
        }
        String last = report(true, (System.currentTimeMillis() - startMs) / 60_000);
        System.out.println(last);
        return last.contains("\"clean\":true") ? 0 : 1;
    }

    private List<Process> startRanks(MediaDriver driver, int epoch, Path dir, long endMs)
        throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        String cp = System.getProperty("java.class.path");
        long groupId = (seed << 16) ^ (System.nanoTime() & 0xffff0000L) ^ (epoch * 4L);
        long token = new java.security.SecureRandom().nextLong();
        List<Process> procs = new ArrayList<>();
        for (int r = 0; r < ranks; r++) {
            List<String> cmd = new ArrayList<>(List.of(java, "-Xms32m", "-Xmx192m", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "--enable-native-access=ALL-UNNAMED",
                "--sun-misc-unsafe-memory-access=allow", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp,
                SoakRank.class.getName(), "--ranks", Integer.toString(ranks), "--rank", Integer.toString(r),
                "--draft-layers", Integer.toString(draftLayers), "--seed", Long.toString(seed), "--epoch",
                Integer.toString(epoch), "--group-id", Long.toString(groupId), "--token", Long.toString(token),
                "--aeron-dir", driver.aeronDirectoryName(), "--until-ms", Long.toString(endMs), "--stats",
                dir.resolve("stats-" + r + ".properties").toString(),
                "--member-timeout-ms", Long.toString(memberTimeoutMs), "--lease-ms", Long.toString(leaseMs),
                "--run-dir", dir.toString(), "--cuda-faults", Double.toString(cudaFaults), "--cuda-event-faults",
                Double.toString(eventFaults)));
            cmd.addAll(fileStore
                ? List.of("--l3", "file", "--l3-dir", l3Dir().toString(), "--file-quota-bytes",
                    Long.toString(fileQuotaBytes))
                : List.of("--l3", "redis", "--redis-port", Integer.toString(redisPort)));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(dir.resolve("rank-" + r + ".log").toFile()).start();
            procs.add(p);
            live.add(p);
        }
        long readyBy = System.currentTimeMillis() + 120_000;
        while (countFiles(dir, "ready-") < ranks) {
            if (System.currentTimeMillis() > readyBy || procs.stream().anyMatch(p -> !p.isAlive())) {
                System.err.println("soak: epoch " + epoch + ": ranks did not start; see " + dir);
                procs.forEach(Process::destroyForcibly);
                return null;
            }
            Thread.sleep(20); // waiting on other processes' files
        }
        Files.writeString(dir.resolve("start"), "go");
        System.err.printf("soak: epoch %d started (%d ranks)%n", epoch, ranks);
        return procs;
    }

    private void startRedis() throws IOException, InterruptedException {
        redis = new ProcessBuilder(redisServer, "--port", Integer.toString(redisPort), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--maxmemory", "256mb", "--maxmemory-policy", "allkeys-lru")
            .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(out.resolve("redis.log")
                .toFile())).start();
        long until = System.currentTimeMillis() + 30_000;
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", redisPort), 200);
                return;
            } catch (IOException e) {
                if (!redis.isAlive() || System.currentTimeMillis() > until) {
                    throw new IOException("redis-server did not start on 127.0.0.1:" + redisPort + "; see "
                        + out.resolve("redis.log"), e);
                }
                Thread.sleep(50); // waiting for another process to listen
            }
        }
    }

    private Path l3Dir() {
        return out.resolve("l3-file");
    }

    /** The operator frees the full disk: every object of the file store is deleted (the directories stay). */
    private void freeDisk() throws IOException {
        Path objects = l3Dir().resolve("objects");
        if (!Files.isDirectory(objects)) {
            return;
        }
        try (Stream<Path> files = Files.walk(objects)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                Files.deleteIfExists(f);
            }
        }
        diskFreed++;
        System.err.println("soak: file store emptied (the full disk freed)");
    }

    private void restartRedis() throws IOException, InterruptedException {
        System.err.println("soak: kill -9 redis-server, restart it");
        redis.destroyForcibly();
        redis.waitFor(10, TimeUnit.SECONDS);
        Thread.sleep(1_000 + faults.nextLong(2_000)); // Redis stays down a while: the schedule, not synchronisation
        startRedis();
        redisRestarts++;
    }

    /** Sums the counters of every rank of every epoch (the last stats each wrote) into one JSON line. */
    private String report(boolean last, long minute) throws IOException {
        Map<String, Long> sum = new TreeMap<>();
        long resident = 0;
        long direct = 0;
        try (Stream<Path> files = Files.walk(out)) {
            for (Path f : files.filter(p -> p.getFileName().toString().matches("stats-\\d+\\.properties")).toList()) {
                Properties p = new Properties();
                try (Reader r = Files.newBufferedReader(f)) {
                    p.load(r);
                } catch (IOException e) {
                    continue; // replaced while read: the next report sees it
                }
                for (String k : p.stringPropertyNames()) {
                    String v = p.getProperty(k);
                    if (v.matches("-?\\d+") && !k.equals("direct_bytes") && !k.equals("heap_used_bytes")) {
                        sum.merge(k, Long.parseLong(v), Long::sum);
                    }
                }
                if ("false".equals(p.getProperty("final"))) {
                    direct += Long.parseLong(p.getProperty("direct_bytes", "0"));
                }
            }
        }
        int measured = 0;
        for (Process p : live) {
            long kb = residentKb(p.pid());
            resident += kb;
            measured += kb > 0 ? 1 : 0;
        }
        long forwards = sum.getOrDefault("forwards", 0L);
        if (!last) {
            forwardsPerMinute.add(forwards - lastForwards);
            lastForwards = forwards;
            residentMbPerMinute.add(resident / 1024);
            residentMbPerRankPerMinute.add(measured == 0 ? 0 : resident / 1024 / measured);
            directBytesPerMinute.add(direct);
        }
        Map<String, Object> j = new LinkedHashMap<>();
        j.put(last ? "final" : "minute", last ? true : minute);
        j.put("ranks", ranks);
        j.put("draft_layers", draftLayers);
        j.put("seed", seed);
        j.put("epochs", epochs);
        j.put("ranks_killed", ranksKilled);
        for (String k : List.of("requests", "forwards", "backups_reserved", "backups_committed", "loads_verified",
            "loads_verified_after_l3", "bytes_verified", "mismatches", "stalls", "hooks_refused_after_lease",
            "host_pages_evicted", "l3_prefetches", "cuda_faults_injected", "cuda_event_faults_injected")) {
            j.put(k, sum.getOrDefault(k, 0L));
        }
        j.put("aborts", obj(sum, "aborts.", "lease_expired", "rank_failed", "cuda_error")
            .replace("}", ",\"load_failed\":" + sum.getOrDefault("loads_failed", 0L) + "}"));
        j.put("l3_store", fileStore ? "\"file\"" : "\"redis\"");
        j.put("l3", obj(sum, "l3.", "puts", "gets", "prefetch_pages_requested", "misses", "failed_prefetch_pages",
            "get_misses", "corrupt", "backend_errors", "failed_pages", "disk_full_errors"));
        j.put("redis_restarts", redisRestarts);
        j.put("disk_freed", diskFreed);
        j.put("forwards_per_minute", forwardsPerMinute.toString().replace(" ", ""));
        j.put("resident_mb_per_minute", residentMbPerMinute.toString().replace(" ", ""));
        j.put("direct_bytes_per_minute", directBytesPerMinute.toString().replace(" ", ""));
        if (last) {
            j.put("rss_per_rank_mb_per_minute", residentMbPerRankPerMinute.toString().replace(" ", ""));
            j.put("rss_growth_last_half_mb", growthLastHalf(residentMbPerRankPerMinute));
            String leaks = obj(sum, "leaks.", "pinned_host_bytes", "device_bytes", "streams", "events", "threads");
            j.put("leaks", leaks);
            j.put("rank_errors", rankErrors);
            boolean clean = sum.getOrDefault("mismatches", 0L) == 0 && sum.getOrDefault("loads_verified", 0L) > 0
                && rankErrors == 0 && !leaks.matches(".*:[1-9].*");
            j.put("clean", clean);
        }
        StringBuilder b = new StringBuilder("{");
        j.forEach((k, v) -> {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append('"').append(k).append("\":").append(v);
        });
        return b.append('}').toString();
    }

    /**
     * Memory growth over the last half of the run: the mean RSS per live rank at the last per-minute sample less
     * the one at the middle sample (minute ceil(n/2) of n); {@code null} with fewer than two samples.
     */
    static String growthLastHalf(List<Long> perMinute) {
        int n = perMinute.size();
        if (n < 2) {
            return "null";
        }
        return Long.toString(perMinute.get(n - 1) - perMinute.get((n - 1) / 2));
    }

    private static String obj(Map<String, Long> sum, String prefix, String... keys) {
        StringBuilder b = new StringBuilder("{");
        for (String k : keys) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append('"').append(k).append("\":").append(sum.getOrDefault(prefix + k, 0L));
        }
        return b.append('}').toString();
    }

    private static long residentKb(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("\\D", ""));
                }
            }
        } catch (IOException | RuntimeException e) {
            // the process ended, or no /proc: no figure
        }
        return 0;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static int countFiles(Path dir, String prefix) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return (int) s.filter(p -> p.getFileName().toString().startsWith(prefix)).count();
        }
    }
}
