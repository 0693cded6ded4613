package io.hicache.serve.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.serve.TestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * A real redis-server as the L3 store goes away while the engine serves: every request is still answered (from
 * device and host), the store's failures are counted, and once it is back on the same port its writes land again.
 * Skipped where no redis-server is installed ($HICACHE_REDIS_SERVER, PATH, /usr/bin); CI installs Debian's.
 */
class L3OutageTest {

    private static String redisServer() {
        String env = System.getenv("HICACHE_REDIS_SERVER");
        if (env != null && Files.isExecutable(Path.of(env))) {
            return env;
        }
        for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!d.isEmpty() && Files.isExecutable(Path.of(d, "redis-server"))) {
                return Path.of(d, "redis-server").toString();
            }
        }
        return Files.isExecutable(Path.of("/usr/bin/redis-server")) ? "/usr/bin/redis-server" : null;
    }

    private static Process startRedis(String bin, int port, Path dir) throws Exception {
        Process p = new ProcessBuilder(bin, "--port", Integer.toString(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", dir.toString()).redirectErrorStream(true)
            .redirectOutput(dir.resolve("redis-" + System.nanoTime() + ".log").toFile()).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            try {
                new Socket("127.0.0.1", port).close();
                return p;
            } catch (IOException e) {
                assertThat(p.isAlive()).as("redis-server exited").isTrue();
                Thread.onSpinWait();
            }
        }
        throw new IllegalStateException("redis-server did not listen on " + port);
    }

    /** Sum of the scrape's samples of a meter family. */
    private static double sample(String scrape, String family) {
        double sum = 0;
        for (String line : scrape.split("\n")) {
            if (line.startsWith(family) && !line.startsWith("#")) {
                sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return sum;
    }

    @Test
    void anL3StoreThatGoesAwayIsServedAroundAndUsedAgainWhenItReturns(@TempDir Path dir) throws Exception {
        String bin = redisServer();
        assumeTrue(bin != null, "no redis-server installed");
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Process redis = startRedis(bin, port, dir);
        ServeMetrics m = new ServeMetrics();
        Engine e = new Engine(TestServer.config(true, 256, 4096, 1, 8, "redis://127.0.0.1:" + port,
            LoadOverlap.SAME_FORWARD, WritePolicy.WRITE_THROUGH), m);
        e.start();
        try {
            EngineCacheTest.serve(e, "before the outage: " + "a".repeat(80), 6);
            assertThat(EngineCacheTest.awaitIdle(e).idle()).isTrue();
            double storedBefore = sample(e.scrape(), "hicache_storage_write_stored");
            assertThat(storedBefore).isPositive();

            redis.destroy();
            redis.waitFor(20, TimeUnit.SECONDS);
            for (int i = 0; i < 3; i++) {
                EngineCacheTest.Out o = EngineCacheTest.serve(e, "during the outage " + i + ": " + "b".repeat(80), 6);
                assertThat(o.text()).hasSize(6);
            }
            assertThat(EngineCacheTest.awaitIdle(e).idle()).isTrue();
            assertThat(sample(e.scrape(), "hicache_storage_write_failed")).isPositive();

            redis = startRedis(bin, port, dir);
            double storedDuring = sample(e.scrape(), "hicache_storage_write_stored");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            int i = 0;
            while (sample(e.scrape(), "hicache_storage_write_stored") <= storedDuring && System.nanoTime() < deadline) {
                EngineCacheTest.serve(e, "after the outage " + (i++) + ": " + "c".repeat(80), 2);
                EngineCacheTest.awaitIdle(e);
            }
            assertThat(sample(e.scrape(), "hicache_storage_write_stored")).isGreaterThan(storedDuring);
            assertThat(EngineCacheTest.awaitIdle(e).idle()).isTrue();
        } finally {
            e.shutdown(TimeUnit.SECONDS.toNanos(5));
            redis.destroy();
        }
    }
}
