package io.hicache.it.dst;

import org.junit.jupiter.api.Test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.List;

/**
 * The entry point {@code scripts/dst} starts in each of its JVMs: runs the seed range {@code [from, from + count)}
 * of one DST suite in chunks, outside JUnit, by calling the suite's test method with its seed properties set. A
 * chunk stops at its first failing seed (the suites stop there), the failure is printed and the next chunk goes on,
 * so one run reports one failure per failing chunk with its first failing seed and the command that replays it.
 *
 * <p>Output (stdout, one line each, parsed by the script): {@code DST-CHUNK suite from ran ok|fail ms} per chunk
 * ({@code ran}: the chunk's seeds, or those up to its first failing seed)
 * and {@code DST-FAIL suite from count: message} per failing chunk (the message names the seed and the replay; a
 * chunk whose seeds all passed but missed a path the suite asserts it covers fails with no seed). Stack traces go
 * to stderr.
 * Exit status 0 when every chunk passed, 1 when one failed, 2 on bad arguments.
 *
 * <p>Usage: {@code DstRunner SUITE FROM COUNT [CHUNK]} where SUITE is {@code backup}, {@code lease}, {@code load},
 * {@code overlap}, {@code storage} or {@code diverge}. Single-threaded; the caller owns the JVM.
 */
public final class DstRunner {
    private DstRunner() {
    }

    /** A suite: its test class, the property naming its first seed and the one naming its seed count. */
    private record Suite(String name, String className, String firstProperty, String countProperty) {
    }

    private static final List<Suite> SUITES = List.of(
        new Suite("backup", "io.hicache.it.dst.BackupDstTest", "hicache.dst.firstSeed", "hicache.dst.seeds"),
        new Suite("lease", "io.hicache.it.dst.LeaseDstTest", "hicache.dst.firstSeed", "hicache.dst.leaseSeeds"),
        new Suite("load", "io.hicache.it.dst.LoadBackDstTest", "hicache.dst.firstSeed", "hicache.dst.loadSeeds"),
        new Suite("overlap", "io.hicache.it.dst.LoadOverlapDstTest", "hicache.dst.firstSeed",
            "hicache.dst.overlapSeeds"),
        new Suite("storage", "io.hicache.storage.tier.StorageTierDstTest", "hicache.dst.storageFirstSeed",
            "hicache.dst.storageSeeds"),
        new Suite("diverge", "io.hicache.it.dst.DivergenceDstTest", "hicache.dst.firstSeed",
            "hicache.dst.divergeSeeds"));

    public static void main(String[] args) throws Exception {
        if (args.length < 3 || args.length > 4) {
            System.err.println("usage: DstRunner SUITE FROM COUNT [CHUNK]; suites: "
                + SUITES.stream().map(Suite::name).toList());
            System.exit(2);
        }
        Suite suite = SUITES.stream().filter(s -> s.name().equals(args[0])).findFirst().orElse(null);
        if (suite == null) {
            System.err.println("DstRunner: unknown suite '" + args[0] + "'; suites: "
                + SUITES.stream().map(Suite::name).toList());
            System.exit(2);
        }
        long from = Long.parseLong(args[1]);
        long count = Long.parseLong(args[2]);
        long chunk = args.length == 4 ? Long.parseLong(args[3]) : 1_000;
        if (from < 1 || count < 0 || chunk < 1) {
            System.err.println("DstRunner: FROM must be >= 1, COUNT >= 0 and CHUNK >= 1");
            System.exit(2);
        }
        System.clearProperty("hicache.dst.seed");
        Class<?> type = Class.forName(suite.className());
        Method test = testMethod(type);
        int failures = 0;
        for (long start = from; start < from + count; start += chunk) {
            long n = Math.min(chunk, from + count - start);
            System.setProperty(suite.firstProperty(), Long.toString(start));
            System.setProperty(suite.countProperty(), Long.toString(n));
            long t0 = System.nanoTime();
            String failure = null;
            try {
                var ctor = type.getDeclaredConstructor();
                ctor.setAccessible(true);
                test.invoke(ctor.newInstance());
            } catch (InvocationTargetException e) {
                failure = String.valueOf(e.getCause()).replace('\n', ' ');
                e.getCause().printStackTrace();
            }
            long ms = (System.nanoTime() - t0) / 1_000_000;
            // seeds run: the whole chunk, or up to its first failing seed (the suites stop there)
            long ran = n;
            if (failure != null) {
                java.util.regex.Matcher m = java.util.regex.Pattern.compile("seed[ =](\\d+)").matcher(failure);
                long seed = m.find() ? Long.parseLong(m.group(1)) : -1;
                ran = seed >= start && seed < start + n ? seed - start + 1 : n;
            }
            System.out.println("DST-CHUNK " + suite.name() + " " + start + " " + ran + " "
                + (failure == null ? "ok" : "fail") + " " + ms);
            if (failure != null) {
                failures++;
                System.out.println("DST-FAIL " + suite.name() + " " + start + " " + n + ": " + failure);
            }
            System.out.flush();
        }
        System.exit(failures == 0 ? 0 : 1);
    }

    private static Method testMethod(Class<?> type) {
        for (Method m : type.getDeclaredMethods()) {
            if (m.isAnnotationPresent(Test.class)) {
                m.setAccessible(true);
                return m;
            }
        }
        throw new IllegalStateException(type + " has no @Test method");
    }
}
