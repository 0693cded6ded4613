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
 * connections and pipeline depth. Each figure is the best of {@code --rounds}. Prints a Markdown section
 * and, with {@code --out}, writes it into that file between {@code <!-- storage-bench -->} markers.
 *
 * <p>Arguments: {@code --dir DIR} (scratch directory on the disk under test, required),
 * {@code --redis-port P} (a running redis-server on 127.0.0.1; omit to skip Redis), {@code --rounds N}
 * (default 3), {@code --file-mib N} (bytes per file run, default 256), {@code --out FILE},
 * {@code --command TEXT} (shown in the report).
 */
public final class StorageBench {
    private static final String BEGIN = "<!-- storage-bench begin -->";
    private static final String END = "<!-- storage-bench end -->";
    private static int IO_THREADS = 2;

    private record Row(String backend, String op, long pageBytes, double ours, String reference, double theirs) {
        double ratio() {
            return ours / theirs;
        }
    }

    public static void main(String[] args) throws Exception {
        Path dir = null;
        int redisPort = -1;
        int rounds = 3;
        long fileMib = 256;
        Path out = null;
        String command = "bench/storage-bench.sh";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--dir" -> dir = Path.of(args[++i]);
                case "--redis-port" -> redisPort = Integer.parseInt(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--file-mib" -> fileMib = Long.parseLong(args[++i]);
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
            long pageBytes = 1 << 20;
            int pages = (int) fileMib;
            for (boolean direct : new boolean[] {false, true}) {
                rows.addAll(fileRows(arena, dir, direct, pageBytes, pages, rounds));
            }
            if (redisPort > 0) {
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
        int batch = 64;
        List<PageKey> keys = keys(pages, direct ? 7 : 5);
        List<HostPage> src = pages(arena, batch, pageBytes, true);
        List<List<HostPage>> dst = new ArrayList<>();
        for (int w = 0; w < IO_THREADS; w++) {
            dst.add(pages(arena, batch, pageBytes, false));
        }
        long bytes = pageBytes * pages;
        double bestPut = 0, bestGet = 0, bestDdW = 0, bestDdR = 0;
        StoreConfig config = StoreConfig.builder().fileDirectIo(direct).ioThreads(IO_THREADS).maxBatchPages(batch).build();
        for (int r = -2; r < rounds; r++) { // rounds -2 and -1 warm the JIT up (CRC-32C, NIO) and are not counted
            if (r == 0) {
                bestPut = bestGet = bestDdW = bestDdR = 0;
            }
            deleteTree(storeDir);
            Files.deleteIfExists(ddFile);
            String bs = "bs=" + pageBytes;
            String count = "count=" + pages;
            bestDdW = Math.max(bestDdW, direct ? dd("if=/dev/zero", "of=" + ddFile, bs, count, "oflag=direct")
                    : dd("if=/dev/zero", "of=" + ddFile, bs, count));
            try (PageStore store = PageStores.open("file:" + storeDir, config)) {
                bestPut = Math.max(bestPut, bytes / run(store, keys, List.of(src, src), true, batch));
            }
            bestDdR = Math.max(bestDdR, direct ? dd("if=" + ddFile, "of=/dev/null", bs, "iflag=direct")
                    : dd("if=" + ddFile, "of=/dev/null", bs));
            try (PageStore store = PageStores.open("file:" + storeDir, config)) {
                bestGet = Math.max(bestGet, bytes / run(store, keys, dst, false, batch));
            }
        }
        deleteTree(storeDir);
        Files.deleteIfExists(ddFile);
        return List.of(new Row("file (" + mode + ")", "put", pageBytes, bestPut, "dd write " + mode, bestDdW),
                new Row("file (" + mode + ")", "get", pageBytes, bestGet, "dd read " + mode, bestDdR));
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
        List<List<HostPage>> dst = new ArrayList<>();
        for (int w = 0; w < IO_THREADS; w++) {
            dst.add(pages(arena, pipeline, pageBytes, false));
        }
        long bytes = pageBytes * pages;
        double bestPut = 0, bestGet = 0, bestSet = 0, bestBGet = 0;
        StoreConfig config = StoreConfig.builder().ioThreads(IO_THREADS).redisConnections(IO_THREADS)
                .maxBatchPages(pipeline).build();
        for (int r = -2; r < rounds; r++) { // rounds -2 and -1 warm the JIT up and are not counted
            if (r == 0) {
                bestPut = bestGet = bestSet = bestBGet = 0;
            }
            cli(port, "FLUSHALL");
            double[] ref = redisBenchmark(port, pageBytes, pages, pipeline);
            bestSet = Math.max(bestSet, ref[0] * pageBytes);
            bestBGet = Math.max(bestBGet, ref[1] * pageBytes);
            cli(port, "FLUSHALL");
            try (PageStore store = PageStores.open("redis://127.0.0.1:" + port, config)) {
                bestPut = Math.max(bestPut, bytes / run(store, keys, List.of(src, src), true, pipeline));
                bestGet = Math.max(bestGet, bytes / run(store, keys, dst, false, pipeline));
            }
        }
        cli(port, "FLUSHALL");
        String ref = "redis-benchmark -c " + IO_THREADS + " -P " + pipeline;
        return List.of(new Row("redis", "put", pageBytes, bestPut, ref + " SET", bestSet),
                new Row("redis", "get", pageBytes, bestGet, ref + " GET", bestBGet));
    }

    /** SET and GET requests per second from redis-benchmark with our connection count and pipeline depth. */
    private static double[] redisBenchmark(int port, long valueBytes, int requests, int pipeline) throws Exception {
        Process p = new ProcessBuilder("redis-benchmark", "-h", "127.0.0.1", "-p", Integer.toString(port), "-t", "set,get",
                "-d", Long.toString(valueBytes), "-n", Integer.toString(requests), "-c", Integer.toString(IO_THREADS),
                "-P", Integer.toString(pipeline), "-q").redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
            throw new IllegalStateException("redis-benchmark failed: " + text);
        }
        return new double[] {rps(text, "SET"), rps(text, "GET")};
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

    private static void cli(int port, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("redis-cli", "-h", "127.0.0.1", "-p", Integer.toString(port)));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        p.waitFor(1, TimeUnit.MINUTES);
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
        sb.append("Generated on ").append(Instant.now()).append(", ").append(Runtime.getRuntime().availableProcessors())
                .append(" CPUs, scratch directory on the disk of `").append(dir.toAbsolutePath()).append("`. ")
                .append("Best of ").append(rounds).append(" rounds each. File rows: ").append(IO_THREADS)
                .append(" I/O threads, batches of 64 pages of 1 MiB, one object per page (atomic rename, commit marker, CRC-32C) ")
                .append("against `dd` moving the same bytes in 1 MiB blocks to or from one file (`/dev/zero` source, `/dev/null` sink); ")
                .append("buffered rows run through the page cache on both sides, O_DIRECT rows bypass it on both sides. ")
                .append("Redis rows: a local redis-server without persistence, ").append(IO_THREADS)
                .append(" connections, pipelined batches of the depth named, distinct keys, against `redis-benchmark` ")
                .append("with the same connections, pipeline depth and value size.\n\n");
        sb.append("| backend | operation | page bytes | hicache MB/s | reference | reference MB/s | ratio | target 0.8 |\n");
        sb.append("|---|---|---:|---:|---|---:|---:|---|\n");
        for (Row r : rows) {
            sb.append(String.format(Locale.ROOT, "| %s | %s | %d | %.1f | %s | %.1f | %.2f | %s |%n", r.backend(), r.op(),
                    r.pageBytes(), r.ours() / 1e6, r.reference(), r.theirs() / 1e6, r.ratio(), r.ratio() >= 0.8 ? "met" : "not met"));
        }
        sb.append('\n');
        for (Row r : rows) {
            sb.append(String.format(Locale.ROOT, "- ratio %s %s %d B: %.2f%n", r.backend(), r.op(), r.pageBytes(), r.ratio()));
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
