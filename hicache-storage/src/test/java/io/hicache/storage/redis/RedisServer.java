package io.hicache.storage.redis;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.hicache.storage.StoreTesting.pollUntil;

/**
 * A real {@code redis-server} process on a free 127.0.0.1 port, started and stopped by a test. When the
 * binary is missing, {@link #start} fails with one line naming the install command (tests never skip).
 */
final class RedisServer implements AutoCloseable {
    static final String INSTALL = "apt-get update && apt-get install -y redis-server redis-tools";

    final int port;
    final Path dir;
    private final List<String> args;
    private Process process;

    private RedisServer(int port, Path dir, List<String> args) {
        this.port = port;
        this.dir = dir;
        this.args = args;
    }

    static String binary(String name) {
        for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            Path p = Path.of(d, name);
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        for (String d : List.of("/usr/bin", "/usr/local/bin", "/usr/sbin")) {
            Path p = Path.of(d, name);
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        throw new AssertionError(name + " not found on PATH; the Redis tests need it: "
                + (name.equals("openssl") ? "apt-get update && apt-get install -y openssl" : INSTALL));
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new AssertionError("no free port on 127.0.0.1", e);
        }
    }

    /** Starts a server; {@code extra} are more {@code --option value} arguments. Waits until it accepts connections. */
    static RedisServer start(Path dir, String... extra) {
        return start(dir, freePort(), false, extra);
    }

    /** As {@link #start(Path, String...)} on {@code port}; with {@code tls} the port is the TLS port. */
    static RedisServer start(Path dir, int port, boolean tls, String... extra) {
        List<String> a = new ArrayList<>(List.of(binary("redis-server"), "--bind", "127.0.0.1",
                "--save", "", "--dir", dir.toString(), "--logfile", dir.resolve("redis.log").toString(),
                "--protected-mode", "no"));
        if (tls) {
            a.addAll(List.of("--port", "0", "--tls-port", Integer.toString(port)));
        } else {
            a.addAll(List.of("--port", Integer.toString(port)));
        }
        a.addAll(List.of(extra));
        RedisServer s = new RedisServer(port, dir, a);
        s.launch();
        return s;
    }

    private void launch() {
        try {
            Files.createDirectories(dir);
            Path log = dir.resolve("redis.log");
            long before = Files.exists(log) ? Files.size(log) : 0;
            process = new ProcessBuilder(args).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("redis.stdout").toFile()).start();
            boolean ready = pollUntil(20_000, () -> {
                try {
                    if (!process.isAlive()) {
                        return true;
                    }
                    return Files.exists(log) && Files.readString(log).substring((int) before)
                            .contains("Ready to accept connections");
                } catch (IOException e) {
                    return false;
                }
            });
            if (!ready || !process.isAlive()) {
                String tail = Files.exists(log) ? Files.readString(log) : "";
                tail = tail.length() > 800 ? tail.substring(tail.length() - 800) : tail;
                close();
                throw new AssertionError("redis-server on port " + port + " did not start: " + tail
                        + Files.readString(dir.resolve("redis.stdout")));
            }
        } catch (IOException e) {
            throw new AssertionError("cannot start redis-server", e);
        }
    }

    /** SIGKILL: the server dies at once, mid-command if one is running. */
    void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(20, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Starts the same server again (same port, directory and options). */
    void restart() {
        launch();
    }

    boolean isAlive() {
        return process != null && process.isAlive();
    }

    @Override
    public void close() {
        if (process == null || !process.isAlive()) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    /** Runs {@code redis-cli} with {@code args} against this server; returns its output. */
    String cli(String... cliArgs) {
        List<String> a = new ArrayList<>(List.of(binary("redis-cli"), "-h", "127.0.0.1", "-p", Integer.toString(port)));
        a.addAll(List.of(cliArgs));
        return run(a);
    }

    static String run(List<String> command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError(command.get(0) + " did not finish in 60 s");
            }
            return new String(out);
        } catch (IOException e) {
            throw new AssertionError("cannot run " + command.get(0), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
