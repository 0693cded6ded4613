package io.hicache.bench;

import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import io.hicache.storage.PageKeys;
import io.hicache.storage.PageStore;
import io.hicache.storage.PageStores;
import io.hicache.storage.StoreConfig;
import io.hicache.storage.StoreOp;
import io.hicache.storage.StoreResult;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * L3 backend throughput side by side with the system's own tools on the same disk and server (run by
 * {@code bench/storage-bench.sh}): the file backend's batch put/get against {@code dd} writing and
 * reading the same number of bytes in blocks of one page (buffered, and with O_DIRECT on both sides);
 * the Redis backend's put/get against {@code redis-benchmark} SET/GET of the same value size with the same
 * connections and pipeline depth, on a keyspace of as many keys as ours ({@code -r}). Each round runs the
 * reference and then ours back to back; the ratio is the
 * median over rounds of the per-round ratios, the MB/s columns the best round of each side. Prints a Markdown
 * section and, with {@code --out}, writes it into that file between {@code <!-- storage-bench -->} markers.
 *
 * <p>Arguments: {@code --dir DIR} (scratch directory on the disk under test, required),
 * {@code --redis-port P} (a running redis-server on 127.0.0.1; omit to skip Redis), {@code --rounds N}
 * (default 3), {@code --file-mib N} (bytes per file run, default 512), {@code --file-page-mib N} (default 4),
 * {@code --io-threads N} (default 2), {@code --only file|redis}, {@code --out FILE}, {@code --command TEXT}
 * (shown in the report).
 */
public final class StorageBench {
    private static final String BEGIN = "<!-- storage-bench begin -->";
    private static final String END = "<!-- storage-bench end -->";
    private static int IO_THREADS = 2;

    /** One comparison measured round after round: each round runs the reference and ours back to back. */
    private static final class Paired {
        final List<Double> ours = new ArrayList<>();
        final List<Double> theirs = new ArrayList<>();
        private double pendingTheirs = Double.NaN;

        void theirs(double v) {
            pendingTheirs = v;
        }

        void ours(double v) {
            ours.add(v);
            theirs.add(pendingTheirs);
        }

        void clear() {
            ours.clear();
            theirs.clear();
        }

        double bestOurs() {
            return ours.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
        }

        double bestTheirs() {
            return theirs.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
        }

        /** Median over rounds of ours / reference in the same round: robust to load that drifts between rounds. */
        double medianRatio() {
            double[] r = new double[ours.size()];
            for (int i = 0; i < r.length; i++) {
                r[i] = ours.get(i) / theirs.get(i);
            }
            java.util.Arrays.sort(r);
            return r.length == 0 ? Double.NaN : r.length % 2 == 1 ? r[r.length / 2] : (r[r.length / 2 - 1] + r[r.length / 2]) / 2;
        }
    }

    private record Row(String backend, String op, long pageBytes, String reference, Paired p) {
        double ours() {
            return p.bestOurs();
        }

        double theirs() {
            return p.bestTheirs();
        }

        double ratio() {
            return p.medianRatio();
        }
    }

    public static void main(String[] args) throws Exception {
        Path dir = null;
        int redisPort = -1;
        int rounds = 3;
        long fileMib = 512;
        long filePageMib = 4;
        Path out = null;
        String command = "bench/storage-bench.sh";
        String only = "";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--dir" -> dir = Path.of(args[++i]);
                case "--redis-port" -> redisPort = Integer.parseInt(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--file-mib" -> fileMib = Long.parseLong(args[++i]);
                case "--file-page-mib" -> filePageMib = Long.parseLong(args[++i]);
                case "--only" -> only = args[++i];
                case "--out" -> out = Path.of(args[++i]);
                case "--command" -> command = args[++i];
                case "--io-threads" -> IO_THREADS = Integer.parseInt(args[++i]);
                default -> {
                    System.err.println("unknown argument " + args[i]
                            + "; use --dir DIR [--redis-port P] [--rounds N] [--file-mib N] [--out FILE]");
                    System.exit(2);
                }
            }
        }
        if (dir == null) {
            System.err.println("--dir DIR is required (a scratch directory on the disk under test)");
            System.exit(2);
        }
        if (rounds < 1) {
            System.err.println("--rounds must be >= 1, was " + rounds);
            System.exit(2);
        }
        Files.createDirectories(dir);
        List<Row> rows = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            long pageBytes = filePageMib << 20;
            int pages = (int) (fileMib / filePageMib);
            for (boolean direct : only.equals("redis") ? new boolean[0] : new boolean[] {false, true}) {
                rows.addAll(fileRows(arena, dir, direct, pageBytes, pages, rounds));
            }
            if (redisPort > 0 && !only.equals("file")) {
                rows.addAll(redisRows(arena, redisPort, 1 << 20, 256, 16, rounds));
                rows.addAll(redisRows(arena, redisPort, 64 << 10, 4096, 64, rounds));
            }
        }
        String md = markdown(rows, command, dir, rounds);
        System.out.println(md);
        if (out != null) {
            write(out, md);
        }
    }

    // ---------------------------------------------------------------- file

    private static List<Row> fileRows(Arena arena, Path dir, boolean direct, long pageBytes, int pages, int rounds)
            throws Exception {
        String mode = direct ? "O_DIRECT" : "buffered";
        Path storeDir = dir.resolve("store-" + (direct ? "direct" : "buffered"));
        Path ddFile = dir.resolve("dd-" + (direct ? "direct" : "buffered") + ".bin");
        int batch = (int) Math.max(1, Math.min(64, (64L << 20) / pageBytes));
        List<PageKey> keys = keys(pages, direct ? 7 : 5);
        List<HostPage> src = pages(arena, batch, pageBytes, true);
        List<List<HostPage>> dst = new ArrayList<>();
        for (int w = 0; w < IO_THREADS; w++) {
            dst.add(pages(arena, batch, pageBytes, false));
        }
        long bytes = pageBytes * pages;
        Paired put = new Paired();
        Paired get = new Paired();
        StoreConfig config = StoreConfig.builder().fileDirectIo(direct).ioThreads(IO_THREADS).maxBatchPages(batch).build();
        for (int r = -2; r < rounds; r++) { // rounds -2 and -1 warm the JIT up (CRC-32C, NIO) and are not counted
            if (r == 0) {
                put.clear();
                get.clear();
            }
            deleteTree(storeDir);
            Files.deleteIfExists(ddFile);
            String bs = "bs=" + pageBytes;
            String count = "count=" + pages;
            // each timed phase starts with no dirty data left by the one before (sync is untimed)
            sync();
            put.theirs(direct ? dd("if=/dev/zero", "of=" + ddFile, bs, count, "oflag=direct")
                    : dd("if=/dev/zero", "of=" + ddFile, bs, count));
            sync();
            try (PageStore store = PageStores.open("file:" + storeDir, config)) {
                put.ours(bytes / run(store, keys, List.of(src, src), true, batch));
            }
            sync();
            get.theirs(direct ? dd("if=" + ddFile, "of=/dev/null", bs, "iflag=direct")
                    : dd("if=" + ddFile, "of=/dev/null", bs));
            try (PageStore store = PageStores.open("file:" + storeDir, config)) {
                get.ours(bytes / run(store, keys, dst, false, batch));
            }
        }
        deleteTree(storeDir);
        Files.deleteIfExists(ddFile);
        return List.of(new Row("file (" + mode + ")", "put", pageBytes, "dd write " + mode, put),
                new Row("file (" + mode + ")", "get", pageBytes, "dd read " + mode, get));
    }

    private static void sync() throws IOException, InterruptedException {
        new ProcessBuilder("sync").inheritIO().start().waitFor(10, TimeUnit.MINUTES);
    }

    /** Runs {@code dd}; returns bytes per second as dd measured them. */
    private static double dd(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("dd"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
            throw new IllegalStateException("dd " + String.join(" ", args) + " failed: " + text);
        }
        Matcher m = Pattern.compile("(\\d+) bytes .* copied, ([0-9.e+-]+) s").matcher(text);
        if (!m.find()) {
            throw new IllegalStateException("cannot read dd's figures from: " + text);
        }
        return Long.parseLong(m.group(1)) / Double.parseDouble(m.group(2));
    }

    // ---------------------------------------------------------------- redis

    private static List<Row> redisRows(Arena arena, int port, long pageBytes, int pages, int pipeline, int rounds)
            throws Exception {
        List<PageKey> keys = keys(pages, (int) (pageBytes >> 10));
        List<HostPage> src = pages(arena, pipeline, pageBytes, true);
        // two batches per connection submitted: when a batch completes, its I/O thread starts the next one at
        // once, as redis-benchmark sends its next pipeline at once, instead of waiting for this driver to wake
        // up and submit; on the wire it is still one pipeline of the same depth per connection
        List<List<HostPage>> dst = new ArrayList<>();
        List<List<HostPage>> srcs = new ArrayList<>();
        for (int w = 0; w < 2 * IO_THREADS; w++) {
            dst.add(pages(arena, pipeline, pageBytes, false));
            srcs.add(src);
        }
        long bytes = pageBytes * pages;
        Paired put = new Paired();
        Paired get = new Paired();
        double singleKeySet = 0; // redis-benchmark on its default single key: best counted round
        double singleKeyGet = 0;
        StoreConfig config = StoreConfig.builder().ioThreads(IO_THREADS).redisConnections(IO_THREADS)
                .maxBatchPages(pipeline).build();
        for (int r = -2; r < rounds; r++) { // rounds -2 and -1 warm the JIT up and are not counted
            if (r == 0) {
                put.clear();
                get.clear();
            }
            double[] ref = redisBenchmark(port, pageBytes, pages, pipeline);
            put.theirs(ref[0] * pageBytes);
            get.theirs(ref[1] * pageBytes);
            if (r >= 0) {
                singleKeySet = Math.max(singleKeySet, ref[2] * pageBytes);
                singleKeyGet = Math.max(singleKeyGet, ref[3] * pageBytes);
            }
            cli(port, "FLUSHALL");
            try (PageStore store = PageStores.open("redis://127.0.0.1:" + port, config)) {
                put.ours(bytes / run(store, keys, srcs, true, pipeline));
                get.ours(bytes / run(store, keys, dst, false, pipeline));
            }
        }
        cli(port, "FLUSHALL");
        String ref = "redis-benchmark -c " + IO_THREADS + " -P " + pipeline + " -r ";
        SINGLE_KEY.add(String.format(Locale.ROOT, "%d B: SET %.1f MB/s, GET %.1f MB/s", pageBytes,
                singleKeySet / 1e6, singleKeyGet / 1e6));
        return List.of(new Row("redis", "put", pageBytes, ref + SET_KEYSPACE + " SET", put),
                new Row("redis", "get", pageBytes, ref + pages + " GET", get));
    }

    /** redis-benchmark's figures on its default single key, shown beside the rows (best round; SET then GET). */
    private static final List<String> SINGLE_KEY = new ArrayList<>();

    /** redis-benchmark's SET keyspace: so large that its random keys do not repeat, so every SET adds a key, as ours. */
    private static final int SET_KEYSPACE = 100_000_000;

    /**
     * Requests per second from redis-benchmark with our connection count, pipeline depth and value size, on
     * keys like ours ({@code -r}): SET of new keys on a flushed server (a keyspace so large that they do not
     * repeat: an overwrite reuses the old value's memory and costs the server less than a new key), then GET
     * on a keyspace of as many keys as we read, every one present (filled untimed first, so every GET returns
     * a value, as ours do). Without {@code -r} redis-benchmark reads and writes one key, whose value stays in
     * the server's CPU cache; those figures come back too, for the report. Returns {SET, GET, single-key SET,
     * single-key GET}.
     */
    private static double[] redisBenchmark(int port, long valueBytes, int requests, int pipeline) throws Exception {
        cli(port, "FLUSHALL");
        double set = rps(redisBenchmark(port, "set", valueBytes, requests, pipeline, SET_KEYSPACE), "SET");
        // every key:%012d of the keyspace, as redis-benchmark names them, with a value of the same size
        cli(port, "FLUSHALL");
        String filled = cli(port, "EVAL", "for i = 0, tonumber(ARGV[1]) - 1 do redis.call('SET', string.format('key:%012d', i),"
                + " string.rep('x', tonumber(ARGV[2]))) end return redis.call('DBSIZE')", "0",
                Integer.toString(requests), Long.toString(valueBytes)).trim();
        if (!filled.equals(Integer.toString(requests))) {
            throw new IllegalStateException("filling redis-benchmark's keyspace left " + filled + " keys, not " + requests);
        }
        double get = rps(redisBenchmark(port, "get", valueBytes, requests, pipeline, requests), "GET");
        cli(port, "FLUSHALL");
        String one = redisBenchmark(port, "set,get", valueBytes, requests, pipeline, 0);
        return new double[] {set, get, rps(one, "SET"), rps(one, "GET")};
    }

    /** Runs redis-benchmark; {@code keyspace} > 0 adds {@code -r keyspace} (random keys), 0 keeps its single key. */
    private static String redisBenchmark(int port, String tests, long valueBytes, int requests, int pipeline,
                                         int keyspace) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("redis-benchmark", "-h", "127.0.0.1", "-p", Integer.toString(port),
                "-t", tests, "-d", Long.toString(valueBytes), "-n", Integer.toString(requests), "-c",
                Integer.toString(IO_THREADS), "-P", Integer.toString(pipeline), "-q"));
        if (keyspace > 0) {
            cmd.addAll(List.of("-r", Integer.toString(keyspace)));
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
            throw new IllegalStateException("redis-benchmark failed: " + text);
        }
        return text;
    }

    private static double rps(String text, String op) {
        Matcher m = Pattern.compile(op + ": ([0-9.]+) requests per second").matcher(text.replace('\r', '\n'));
        double last = -1;
        while (m.find()) {
            last = Double.parseDouble(m.group(1));
        }
        if (last < 0) {
            throw new IllegalStateException("cannot read " + op + " from redis-benchmark output: " + text);
        }
        return last;
    }

    private static String cli(int port, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("redis-cli", "-h", "127.0.0.1", "-p", Integer.toString(port)));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(1, TimeUnit.MINUTES);
        return text;
    }

    // ---------------------------------------------------------------- shared

    /**
     * Puts or gets every key in batches, with one batch in flight per buffer set (as many as I/O threads);
     * returns elapsed seconds from the first submission to the last completion.
     */
    private static double run(PageStore store, List<PageKey> keys, List<List<HostPage>> buffers, boolean put, int batch)
            throws Exception {
        int slots = buffers.size();
        @SuppressWarnings("unchecked")
        StoreOp<StoreResult>[] inFlight = new StoreOp[slots];
        long start = System.nanoTime();
        int next = 0;
        int failed = 0;
        int oldest = 0;
        // fill every slot, then wait (blocking: this is a driver, not the scheduler) for the oldest and refill it
        for (int s = 0; s < slots && next < keys.size(); s++) {
            next = submit(store, keys, buffers.get(s), put, batch, next, inFlight, s);
        }
        while (anyPending(inFlight)) {
            StoreOp<StoreResult> op = inFlight[oldest];
            if (op != null) {
                StoreResult r = op.await(10, TimeUnit.MINUTES);
                failed += r.size() - r.leadingOk();
                inFlight[oldest] = null;
                if (next < keys.size()) {
                    next = submit(store, keys, buffers.get(oldest), put, batch, next, inFlight, oldest);
                }
            }
            oldest = (oldest + 1) % slots;
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        if (failed > 0) {
            throw new IllegalStateException(failed + " pages failed during the " + (put ? "put" : "get") + " run of " + store);
        }
        return seconds;
    }

    private static int submit(PageStore store, List<PageKey> keys, List<HostPage> buffer, boolean put, int batch,
                              int next, StoreOp<StoreResult>[] inFlight, int slot) {
        int n = Math.min(batch, keys.size() - next);
        List<PageKey> k = keys.subList(next, next + n);
        List<HostPage> b = buffer.subList(0, n);
        inFlight[slot] = put ? store.put(k, b) : store.get(k, b);
        return next + n;
    }

    private static boolean anyPending(StoreOp<?>[] ops) {
        for (StoreOp<?> op : ops) {
            if (op != null) {
                return true;
            }
        }
        return false;
    }

    private static List<PageKey> keys(int count, int salt) {
        int[] tokens = new int[count];
        for (int i = 0; i < count; i++) {
            tokens[i] = salt * 7_000_001 + i;
        }
        return List.of(PageKeys.chain(null, tokens, 1));
    }

    private static List<HostPage> pages(Arena arena, int count, long bytes, boolean fill) {
        List<HostPage> out = new ArrayList<>();
        SplittableRandom r = new SplittableRandom(count * 31L + bytes);
        for (int i = 0; i < count; i++) {
            MemorySegment s = arena.allocate(bytes, 4096);
            if (fill) {
                for (long o = 0; o < bytes; o += 8) {
                    s.set(ValueLayout.JAVA_LONG_UNALIGNED, o, r.nextLong());
                }
            }
            out.add(HostPage.of(s));
        }
        return out;
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (var walk = Files.walk(p)) {
            for (Path q : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(q);
            }
        }
    }

    private static String markdown(List<Row> rows, String command, Path dir, int rounds) {
        StringBuilder sb = new StringBuilder();
        sb.append("## L3 storage backends against dd and redis-benchmark (`").append(command).append("`)\n\n");
        String load = "";
        try {
            load = ", load average " + Files.readString(Path.of("/proc/loadavg")).trim().split(" ")[0] + " at the end";
        } catch (IOException | RuntimeException e) {
            // not Linux: no load figure
        }
        sb.append("Generated on ").append(Instant.now()).append(", ").append(Runtime.getRuntime().availableProcessors())
                .append(" CPUs").append(load).append(", scratch directory on the disk of `").append(dir.toAbsolutePath()).append("`. ")
                .append(rounds).append(" rounds after two warm-up rounds; each round runs the reference and then hicache ")
                .append("back to back. MB/s columns: the best round of each side; ratio: the median over rounds of ")
                .append("hicache / reference in the same round (robust to load that drifts between rounds). File rows: ").append(IO_THREADS)
                .append(" I/O threads, batches of 64 MiB, one object per page (atomic rename, commit marker, CRC-32C) ")
                .append("against `dd` moving the same bytes in blocks of one page to or from one file (`/dev/zero` source, `/dev/null` sink); ")
                .append("buffered rows run through the page cache on both sides, O_DIRECT rows bypass it on both sides; ")
                .append("`sync` (untimed) before each write, so neither side pays for the other's write-back. ")
                .append("Redis rows: a local redis-server without persistence, ").append(IO_THREADS)
                .append(" connections, pipelined batches of the depth named (two submitted per connection, so the next one ")
                .append("leaves as soon as one completes), distinct keys, against `redis-benchmark` ")
                .append("with the same connections, pipeline depth and value size on keys like ours (`-r`): SET of new keys on ")
                .append("a flushed server (a keyspace so large that its random keys do not repeat; an overwrite costs the server ")
                .append("less than a new key), GET on a keyspace of as many keys as ours, every one present (filled untimed). ")
                .append("Without `-r` redis-benchmark reads and writes one key whose value stays in the server's CPU cache, ")
                .append("which no cache of many pages sees; its figures that way are listed below the table.\n\n");
        sb.append("| backend | operation | page bytes | hicache MB/s | reference | reference MB/s | ratio (median) | target 0.8 |\n");
        sb.append("|---|---|---:|---:|---|---:|---:|---|\n");
        for (Row r : rows) {
            sb.append(String.format(Locale.ROOT, "| %s | %s | %d | %.1f | %s | %.1f | %.2f | %s |%n", r.backend(), r.op(),
                    r.pageBytes(), r.ours() / 1e6, r.reference(), r.theirs() / 1e6, r.ratio(), r.ratio() >= 0.8 ? "met" : "not met"));
        }
        sb.append('\n');
        for (Row r : rows) {
            sb.append(String.format(Locale.ROOT, "- ratio %s %s %d B: %.2f%n", r.backend(), r.op(), r.pageBytes(), r.ratio()));
        }
        for (String line : SINGLE_KEY) {
            sb.append("- redis-benchmark on its default single key (best round), ").append(line).append('\n');
        }
        return sb.toString();
    }

    private static void write(Path out, String section) throws IOException {
        String text = Files.exists(out) ? Files.readString(out) : "";
        String block = BEGIN + "\n" + section + END + "\n";
        int b = text.indexOf(BEGIN);
        int e = text.indexOf(END);
        if (b >= 0 && e > b) {
            text = text.substring(0, b) + block + text.substring(e + END.length() + (text.startsWith("\n", e + END.length()) ? 1 : 0));
        } else {
            text = text + (text.endsWith("\n") || text.isEmpty() ? "\n" : "\n\n") + block;
        }
        Files.writeString(out, text);
    }
}
