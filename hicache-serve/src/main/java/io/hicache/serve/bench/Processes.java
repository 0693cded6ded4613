package io.hicache.serve.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The processes a bench run starts and stops: an engine ({@code scripts/serve}, waited for until its ready line) and
 * a real redis-server (found as {@code scripts/redis-server-path} finds it, on a free loopback port). Each is stopped
 * with SIGTERM and waited for. Not thread-safe; the bench's main thread.
 */
final class Processes {
    private Processes() {
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }

    /** A started engine. */
    static final class EngineProcess implements AutoCloseable {
        final Process process;
        final int port;
        final Path log;
        final String readyLine;

        private EngineProcess(Process process, int port, Path log, String readyLine) {
            this.process = process;
            this.port = port;
            this.log = log;
            this.readyLine = readyLine;
        }

        static EngineProcess start(Path root, List<String> flags, Path log) throws IOException, InterruptedException {
            int port = freePort();
            List<String> cmd = new ArrayList<>();
            cmd.add(root.resolve("scripts/serve").toString());
            cmd.add("--port");
            cmd.add(Integer.toString(port));
            cmd.addAll(flags);
            Process p = new ProcessBuilder(cmd).directory(root.toFile()).redirectError(log.toFile()).start();
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
            String line;
            while ((line = out.readLine()) != null) {
                if (line.startsWith("serve: ready")) {
                    Thread drain = new Thread(() -> {
                        try {
                            while (out.readLine() != null) {
                                // keep the pipe empty
                            }
                        } catch (IOException ignored) {
                            // the process ended
                        }
                    }, "engine-stdout");
                    drain.setDaemon(true);
                    drain.start();
                    return new EngineProcess(p, port, log, line);
                }
                if (System.nanoTime() > deadline) {
                    break;
                }
            }
            p.destroyForcibly();
            throw new IOException("the engine did not start: " + tail(log));
        }

        /** SIGTERM, then waits (the engine drains its backups and writes); exit status. */
        int stop() throws InterruptedException {
            process.destroy();
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor();
            }
            return process.exitValue();
        }

        @Override
        public void close() {
            if (process.isAlive()) {
                try {
                    stop();
                } catch (InterruptedException e) {
                    process.destroyForcibly();
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /** A started redis-server. */
    static final class Redis implements AutoCloseable {
        final Process process;
        final int port;

        private Redis(Process process, int port) {
            this.process = process;
            this.port = port;
        }

        static Redis start(Path root, Path dir) throws IOException, InterruptedException {
            Process which = new ProcessBuilder(root.resolve("scripts/redis-server-path").toString())
                .redirectErrorStream(true).start();
            String path = new String(which.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (which.waitFor() != 0) {
                throw new IOException("no redis-server: " + path);
            }
            int port = freePort();
            Files.createDirectories(dir);
            Process p = new ProcessBuilder(path, "--port", Integer.toString(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", dir.toString()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("redis.log").toFile()).start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (System.nanoTime() < deadline) {
                try {
                    new Socket("127.0.0.1", port).close();
                    return new Redis(p, port);
                } catch (IOException e) {
                    Thread.sleep(50);
                }
            }
            p.destroyForcibly();
            throw new IOException("redis-server did not listen on " + port);
        }

        @Override
        public void close() {
            process.destroy();
            try {
                if (!process.waitFor(20, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join(" | ", lines.subList(Math.max(0, lines.size() - 3), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }
}
