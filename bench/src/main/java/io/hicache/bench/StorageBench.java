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
 * reading the same number of bytes in blocks of one page (buffered, and with O_DIRECT on both sides), and the
 * buffered get also against {@code fio} landing the bytes in as many page buffers per thread as our batches;
 * the Redis backend's put/get against {@code redis-benchmark} SET/GET of the same value size with the same
 * connections and pipeline depth, on a keyspace of as many keys as ours ({@code -r}). Each round runs the
 * reference and then ours back to back; the ratio is the
 * median over rounds of the per-round ratios, the MB/s columns the best round of each side. Prints a Markdown
 * section and, with {@code --out}, writes it into that file between {@code <!-- storage-bench -->} markers.
 *
 * <p>Arguments: {@code --dir DIR} (scratch directory on the disk under test, required),
 * {@code --redis-port P} (a running redis-server on 127.0.0.1; omit to skip Redis), {@code --rounds N}
 * (default 3), {@code --file-mib N} (MiB written per file run, default 512; a get run reads them
 * {@value #GET_PASSES} times), {@code --file-page-mib N} (default 4),
 * {@code --io-threads N} (default 2), {@code --only file|redis}, {@code --out FILE}, {@code --command TEXT}
 * (shown in the report).
 */
public final class StorageBench {
    private static int IO_THREADS = 2;
    /** A buffered read of 512 MiB lasts a few tens of milliseconds: each get run reads every page this many times. */
    private static final int GET_PASSES = 4;
    /** File writes: each side's better of this many runs per round. */
    private static final int PUT_ATTEMPTS = 2;

    /** One comparison measured round after round: each round runs the reference and ours back to back. */
    private static final class Paired {
        final List<Double> ours = new ArrayList<>();
        final List<Double> theirs = new ArrayList<>();
        private double pendingTheirs = Double.NaN;
        private final String label;

        Paired(String label) {
            this.label = label;
        }

        void theirs(double v) {
            pendingTheirs = v;
        }

        /** Records ours for the round (pairing it with the reference's) and prints both to stderr. */
        void ours(double v) {
            ours.add(v);
            theirs.add(pendingTheirs);
            System.err.printf(Locale.ROOT, "storage-bench: %s: hicache %.0f MB/s, reference %.0f MB/s, ratio %.2f%n",
                    label, v / 1e6, pendingTheirs / 1e6, v / pendingTheirs);
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

        /** The lowest and highest per-round ratio, as text: how far one round can stray from the median. */
        String ratioRange() {
            double lo = Double.POSITIVE_INFINITY;
            double hi = Double.NEGATIVE_INFINITY;
            for (int i = 0; i < ours.size(); i++) {
                double r = ours.get(i) / theirs.get(i);
                lo = Math.min(lo, r);
                hi = Math.max(hi, r);
            }
            return ours.isEmpty() ? "" : String.format(Locale.ROOT, "%.2f–%.2f", lo, hi);
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
        Paired put = new Paired("file (" + mode + ") put");
        Paired get = new Paired("file (" + mode + ") get vs dd");
        // buffered reads measure memory, not the disk: dd lands every block in one cache-resident buffer, while
        // a store lands each page in its own host memory; fio with our threads and our batch of page buffers per
        // thread lands the bytes in as much memory as we do (run when fio is installed)
        Paired getFio = !direct && FIO ? new Paired("file (" + mode + ") get vs fio") : null;
        StoreConfig config = StoreConfig.builder().fileDirectIo(direct).ioThreads(IO_THREADS).maxBatchPages(batch).build();
        for (int r = -2; r < rounds; r++) { // rounds -2 and -1 warm the JIT up (CRC-32C, NIO) and are not counted
            if (r == 0) {
                put.clear();
                get.clear();
                if (getFio != null) {
                    getFio.clear();
                }
            }
            String bs = "bs=" + pageBytes;
            String count = "count=" + pages;
            // each timed write starts on a fresh file or directory with no dirty data left by the one before
            // (deletes and sync are untimed); each side writes twice and keeps its better run, so that a
            // write-back stall of this VM's disk, which strikes either side at random, does not decide a round
            double ddPut = 0;
            double ourPut = 0;
            for (int attempt = 0; attempt < PUT_ATTEMPTS; attempt++) {
                Files.deleteIfExists(ddFile);
                sync();
                ddPut = Math.max(ddPut, direct ? dd("if=/dev/zero", "of=" + ddFile, bs, count, "oflag=direct")
                        : dd("if=/dev/zero", "of=" + ddFile, bs, count));
                deleteTree(storeDir);
                sync();
                try (PageStore store = PageStores.open("file:" + storeDir, config)) {
                    ourPut = Math.max(ourPut, bytes / run(store, keys, List.of(src, src), true, batch));
                }
            }
            put.theirs(ddPut);
            put.ours(ourPut);
            sync();
            double ddSeconds = 0;
            for (int pass = 0; pass < GET_PASSES; pass++) {
                ddSeconds += bytes / (direct ? dd("if=" + ddFile, "of=/dev/null", bs, "iflag=direct")
                        : dd("if=" + ddFile, "of=/dev/null", bs));
            }
            get.theirs(GET_PASSES * bytes / ddSeconds);
            if (getFio != null) {
                getFio.theirs(fioRead(ddFile, pageBytes, bytes, batch));
            }
            try (PageStore store = PageStores.open("file:" + storeDir, config)) {
                double rate = getRate(store, keys, dst, batch, bytes);
                get.ours(rate);
                if (getFio != null) {
                    getFio.ours(rate);
                }
            }
        }
        deleteTree(storeDir);
        Files.deleteIfExists(ddFile);
        List<Row> rows = new ArrayList<>(List.of(new Row("file (" + mode + ")", "put", pageBytes, "dd write " + mode, put),
                new Row("file (" + mode + ")", "get", pageBytes, "dd read " + mode, get)));
        if (getFio != null) {
            rows.add(new Row("file (" + mode + ")", "get", pageBytes, "fio read " + mode + ", " + IO_THREADS + " jobs × "
                    + batch + " page buffers", getFio));
        }
        return rows;
    }

    private static final boolean FIO = onPath("fio");

    private static boolean onPath(String tool) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!d.isEmpty() && Files.isExecutable(Path.of(d, tool))) {
                return true;
            }
        }
        return false;
    }

    /**
     * fio reading {@code bytes} of {@code file} {@link #GET_PASSES} times through the page cache: one job per
     * I/O thread of ours, each reading its share in blocks of one page into {@code depth} page buffers in turn
     * (libaio; buffered reads complete inside the submit, as ours do). Returns bytes per second as fio measured them.
     */
    private static double fioRead(Path file, long pageBytes, long bytes, int depth) throws IOException, InterruptedException {
        long share = bytes / IO_THREADS;
        List<String> cmd = List.of("fio", "--name=hicache-ref", "--filename=" + file, "--rw=read", "--bs=" + pageBytes,
                "--size=" + share, "--offset_increment=" + share, "--numjobs=" + IO_THREADS, "--ioengine=libaio",
                "--iodepth=" + depth, "--direct=0", "--invalidate=0", "--loops=" + GET_PASSES, "--group_reporting",
                "--output-format=terse", "--terse-version=3");
        String text = tool(cmd);
        for (String line : text.split("\n")) {
            String[] f = line.split(";");
            if (f.length > 9 && f[0].equals("3")) {
                // terse v3: field 6 read KiB, field 9 read runtime in ms
                return Long.parseLong(f[5]) * 1024.0 / (Long.parseLong(f[8]) / 1000.0);
            }
        }
        throw new IllegalStateException("cannot read fio's figures from: " + text);
    }

    private static void sync() throws IOException, InterruptedException {
        new ProcessBuilder("sync").inheritIO().start().waitFor(10, TimeUnit.MINUTES);
    }

    /**
     * Runs a tool to its end (at most 10 minutes) and returns what it printed, stdout and stderr together.
     *
     * @throws IllegalStateException with that text when the tool fails or overruns
     */
    private static String tool(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed: " + text);
        }
        return text;
    }

    /** Runs {@code dd}; returns bytes per second as dd measured them. */
    private static double dd(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("dd"));
        cmd.addAll(List.of(args));
        String text = tool(cmd);
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
        Paired put = new Paired("redis put " + pageBytes + " B");
        Paired get = new Paired("redis get " + pageBytes + " B");
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
                get.ours(getRate(store, keys, dst, pipeline, bytes));
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
     * a value, as ours do), {@link #GET_PASSES} requests per key as ours. Without {@code -r} redis-benchmark
     * reads and writes one key, whose value stays in the server's CPU cache; those figures come back too, for the
     * report. Returns {SET, GET, single-key SET, single-key GET}.
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
        double get = rps(redisBenchmark(port, "get", valueBytes, GET_PASSES * requests, pipeline, requests), "GET");
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
        return tool(cmd);
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
        StoreOp<StoreResult>[] inFlight = (StoreOp<StoreResult>[]) new StoreOp<?>[slots];
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

    /** Gets every key {@link #GET_PASSES} times ({@link #run}); returns bytes per second over all passes. */
    private static double getRate(PageStore store, List<PageKey> keys, List<List<HostPage>> buffers, int batch,
                                  long bytes) throws Exception {
        double seconds = 0;
        for (int pass = 0; pass < GET_PASSES; pass++) {
            seconds += run(store, keys, buffers, false, batch);
        }
        return GET_PASSES * bytes / seconds;
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
                .append("a get round reads every page ").append(GET_PASSES).append(" times on both sides (one short read is mostly noise); ")
                .append("buffered rows run through the page cache on both sides, O_DIRECT rows bypass it on both sides; ")
                .append("`sync` (untimed) before each write, so neither side pays for the other's write-back; each side writes ")
                .append(PUT_ATTEMPTS).append(" times per round and keeps its better run (this VM's disk stalls writes now and then, on either side). ")
                .append("Buffered reads measure memory rather than the disk, and `dd` lands every block in one buffer that ")
                .append("stays in the CPU cache, while a store lands each page in host memory of its own; so the buffered get is ")
                .append("also measured against `fio` (when installed) with one job per I/O thread of ours, each reading its share ")
                .append("in blocks of one page into as many page buffers in turn as our batch holds (libaio, whose buffered ")
                .append("reads complete inside the submit, as ours do): the same bytes landing in as much memory as ours. ")
                .append("Redis rows: a local redis-server without persistence, ").append(IO_THREADS)
                .append(" connections, pipelined batches of the depth named (two submitted per connection, so the next one ")
                .append("leaves as soon as one completes), distinct keys, against `redis-benchmark` ")
                .append("with the same connections, pipeline depth and value size on keys like ours (`-r`): SET of new keys on ")
                .append("a flushed server (a keyspace so large that its random keys do not repeat; an overwrite costs the server ")
                .append("less than a new key), GET on a keyspace of as many keys as ours, every one present (filled untimed), ")
                .append("each key read ").append(GET_PASSES).append(" times per round on both sides. ")
                .append("Without `-r` redis-benchmark reads and writes one key whose value stays in the server's CPU cache, ")
                .append("which no cache of many pages sees; its figures that way are listed below the table.\n\n");
        sb.append("| backend | operation | page bytes | hicache MB/s | reference | reference MB/s | ratio (median) | ratio per round (min–max) | target 0.8 |\n");
        sb.append("|---|---|---:|---:|---|---:|---:|---:|---|\n");
        for (Row r : rows) {
            sb.append(String.format(Locale.ROOT, "| %s | %s | %d | %.1f | %s | %.1f | %.2f | %s | %s |%n", r.backend(), r.op(),
                    r.pageBytes(), r.ours() / 1e6, r.reference(), r.theirs() / 1e6, r.ratio(), r.p().ratioRange(),
                    r.ratio() >= 0.8 ? "met" : "not met"));
        }
        sb.append('\n');
        for (Row r : rows) {
            sb.append(String.format(Locale.ROOT, "- ratio %s %s %d B against %s: %.2f%n", r.backend(), r.op(), r.pageBytes(),
                    r.reference(), r.ratio()));
        }
        for (String line : SINGLE_KEY) {
            sb.append("- redis-benchmark on its default single key (best round), ").append(line).append('\n');
        }
        return sb.toString();
    }

    private static void write(Path out, String section) throws IOException {
        ReportSection.write(out, "storage-bench", section);
    }
}
