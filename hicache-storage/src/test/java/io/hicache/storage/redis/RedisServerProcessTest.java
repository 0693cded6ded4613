package io.hicache.storage.redis;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.opentest4j.TestAbortedException;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Where the Redis tests' redis-server comes from, and the bundled one working where the system has its own. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisServerProcessTest {
    private static final String OS = System.getProperty("os.name");
    private static final String ARCH = System.getProperty("os.arch");

    @TempDir
    Path tmp;

    private Path executable(Path dir, String name) throws IOException {
        Files.createDirectories(dir);
        Path p = dir.resolve(name);
        Files.writeString(p, "#!/bin/sh\nexit 0\n");
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwx------"));
        return p;
    }

    @Test
    void anOverrideComesFirstThenRedisServerOnPathThenTheBundledOne() throws IOException {
        Path system = executable(tmp.resolve("bin"), "redis-server");
        Path mine = executable(tmp.resolve("mine"), "my-redis-server");
        String path = tmp.resolve("empty") + ":" + tmp.resolve("bin");

        assertThat(RedisServerProcess.locate(mine.toString(), path, "Linux", "amd64")).isEqualTo(mine);
        assertThat(RedisServerProcess.locate("", path, "Linux", "amd64")).isEqualTo(system);
        assertThat(RedisServerProcess.locate(null, path, "Linux", "amd64")).isEqualTo(system);
        // a directory or a plain file of that name on PATH is not a server
        Files.createDirectories(tmp.resolve("dir/redis-server"));
        Files.writeString(Files.createDirectories(tmp.resolve("plain")).resolve("redis-server"), "");
        assertThat(RedisServerProcess.onPath("redis-server", tmp.resolve("dir") + ":" + tmp.resolve("plain")))
                .isEmpty();
        assertThatThrownBy(() -> RedisServerProcess.locate(tmp.resolve("nope").toString(), path, "Linux", "amd64"))
                .isInstanceOf(AssertionError.class)
                .hasMessage("HICACHE_REDIS_SERVER=" + tmp.resolve("nope") + " is not an executable file");
        // the fake has no TLS built in
        assertThat(RedisServerProcess.supportsTls(system)).isFalse();
    }

    @Test
    void aPlatformTheBuildBringsNoServerForSkipsWithOneLineNamingThePackage() {
        assertThat(RedisServerProcess.platformSuffix("SunOS", "sparcv9")).isNull();
        assertThat(RedisServerProcess.platformSuffix("Linux", "amd64")).isEqualTo("-linux-amd64");
        assertThat(RedisServerProcess.platformSuffix("Mac OS X", "aarch64")).isEqualTo("-darwin-arm64");
        assertThatThrownBy(() -> RedisServerProcess.locate(null, "", "SunOS", "sparcv9"))
                .isInstanceOf(TestAbortedException.class)
                .hasMessage("Assumption failed: no redis-server for SunOS/sparcv9 on PATH or in the build: "
                        + "apt-get update && apt-get install -y redis-server");
    }

    @Test
    void aServerWithoutTlsGivesWayToTheBundledOneOrSkipsTheTlsTestWithOneLine() throws IOException {
        Path noTls = executable(tmp.resolve("bin"), "redis-server");
        assertThatThrownBy(() -> RedisServerProcess.tlsBinary(noTls, Optional::empty))
                .isInstanceOf(TestAbortedException.class)
                .hasMessage("Assumption failed: the TLS test needs a redis-server built with TLS (" + noTls
                        + " is not): apt-get update && apt-get install -y redis-server");
        Optional<Path> bundled = RedisServerProcess.bundled(OS, ARCH);
        assumeTrue(bundled.isPresent(), "the build brings no redis-server for " + OS + "/" + ARCH);
        assertThat(RedisServerProcess.tlsBinary(noTls, () -> bundled)).isEqualTo(bundled.get());
        assertThat(RedisServerProcess.tlsBinary(bundled.get(), Optional::empty)).isEqualTo(bundled.get());
    }

    /** Runs even where a system redis-server is installed (as in CI), so the bundled path stays tested. */
    @Test
    void theBundledServerStartsWithTlsBuiltInAnswersAndStopsOnClose() {
        Optional<Path> bundled = RedisServerProcess.bundled(OS, ARCH);
        assumeTrue(bundled.isPresent(), "the build brings no redis-server for " + OS + "/" + ARCH);
        assertThat(RedisServerProcess.locate(null, "", OS, ARCH)).isEqualTo(bundled.get());
        assertThat(RedisServerProcess.supportsTls(bundled.get())).isTrue();

        RedisServerProcess r = RedisServerProcess.startWith(bundled.get(), tmp.resolve("r"));
        try {
            assertThat(r.command("PING")).isEqualTo("PONG");
            assertThat((String) r.command("INFO", "server")).contains("redis_version:7.");
            assertThat(r.command("SET", "k", "v")).isEqualTo("OK");
            assertThat(r.command("GET", "k")).isEqualTo("v");
        } finally {
            r.close();
        }
        assertThat(r.isAlive()).isFalse();
        assertThat(accepts(r.port)).isFalse();
    }

    private static boolean accepts(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
