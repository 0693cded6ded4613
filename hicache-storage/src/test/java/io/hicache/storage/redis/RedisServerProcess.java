package io.hicache.storage.redis;

import org.junit.jupiter.api.Assumptions;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.commands.ProtocolCommand;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.JarURLConnection;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import static io.hicache.storage.StoreTesting.pollUntil;

/**
 * A real {@code redis-server} process on a free 127.0.0.1 port with its own directory, started and stopped by a
 * test. Used by one test thread at a time; every process it starts is also killed when the JVM exits.
 *
 * <p>The binary, in this order: the path in {@code $HICACHE_REDIS_SERVER}; {@code redis-server} on {@code PATH}
 * (Debian's package, which CI installs); the one the build brings ({@code org.signal:embedded-redis}, a test
 * dependency: a statically linked redis-server built with TLS for linux and macOS on x86-64 and arm64, and linux on x86), extracted
 * once per JVM into a temporary directory. Where none fits this platform the calling test is skipped with one line
 * naming the package to install. {@code scripts/redis-server-path} chooses the same way for the scripts.
 */
public final class RedisServerProcess implements AutoCloseable {
    /** An explicit redis-server to use, ahead of {@code PATH} and the bundled one. */
    static final String OVERRIDE_ENV = "HICACHE_REDIS_SERVER";
    static final String INSTALL = "apt-get update && apt-get install -y redis-server";
    private static final String BUNDLE_POM = "META-INF/maven/org.signal/embedded-redis/pom.properties";
    /** Printed only by a redis-server whose TLS support is built in (OpenSSL linked statically or as libssl). */
    private static final byte[] TLS_MARK = "No tls-cert-file configured".getBytes(StandardCharsets.US_ASCII);

    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();
    private static final Map<String, Optional<Path>> EXTRACTED = new ConcurrentHashMap<>();
    private static final Set<Path> ANNOUNCED = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly),
                "redis-server-reaper"));
    }

    final int port;
    final Path dir;
    final Path binary;
    private final List<String> args;
    private Process process;

    private RedisServerProcess(int port, Path dir, Path binary, List<String> args) {
        this.port = port;
        this.dir = dir;
        this.binary = binary;
        this.args = args;
    }

    // ---- which binary ----------------------------------------------------------------------------------------

    /** The redis-server the tests start here (see the class comment); skips the calling test where there is none. */
    static Path binary() {
        Path p = locate(System.getenv(OVERRIDE_ENV), System.getenv("PATH"), System.getProperty("os.name"),
                System.getProperty("os.arch"));
        if (ANNOUNCED.add(p)) {
            System.out.println("Redis tests: redis-server " + p);
        }
        return p;
    }

    /**
     * A redis-server built with TLS: {@link #binary()} when it is, else the bundled one; skips the calling test
     * with one line naming the package where neither is.
     */
    static Path tlsBinary() {
        Path preferred = binary();
        Path p = tlsBinary(preferred, () -> bundled(System.getProperty("os.name"), System.getProperty("os.arch")));
        if (!p.equals(preferred) && ANNOUNCED.add(p)) {
            System.out.println("Redis tests: " + preferred + " lacks TLS; the TLS test uses " + p);
        }
        return p;
    }

    /** {@link #tlsBinary()} from explicit inputs: the preferred binary and where to find the bundled one. */
    static Path tlsBinary(Path preferred, Supplier<Optional<Path>> bundledOne) {
        if (supportsTls(preferred)) {
            return preferred;
        }
        Optional<Path> bundled = bundledOne.get();
        Assumptions.assumeTrue(bundled.isPresent() && supportsTls(bundled.get()),
                () -> "the TLS test needs a redis-server built with TLS (" + preferred + " is not): " + INSTALL);
        return bundled.get();
    }

    /** {@link #binary()} from explicit inputs: {@code override} (may be null or empty), {@code PATH}, platform. */
    static Path locate(String override, String pathEnv, String osName, String osArch) {
        if (override != null && !override.isEmpty()) {
            Path p = Path.of(override);
            if (!Files.isExecutable(p)) {
                throw new AssertionError(OVERRIDE_ENV + "=" + override + " is not an executable file");
            }
            return p;
        }
        Optional<Path> system = onPath("redis-server", pathEnv);
        if (system.isPresent()) {
            return system.get();
        }
        Optional<Path> bundled = bundled(osName, osArch);
        Assumptions.assumeTrue(bundled.isPresent(), () -> "no redis-server for " + osName + "/" + osArch
                + " on PATH or in the build: " + INSTALL);
        return bundled.get();
    }

    static Optional<Path> onPath(String name, String pathEnv) {
        if (pathEnv == null) {
            return Optional.empty();
        }
        for (String d : pathEnv.split(":")) {
            if (d.isEmpty()) {
                continue;
            }
            Path p = Path.of(d, name);
            if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                return Optional.of(p);
            }
        }
        return Optional.empty();
    }

    /** The bundled redis-server for this platform, extracted on first use; empty where the bundle has none. */
    static Optional<Path> bundled(String osName, String osArch) {
        String suffix = platformSuffix(osName, osArch);
        if (suffix == null) {
            return Optional.empty();
        }
        return EXTRACTED.computeIfAbsent(suffix, RedisServerProcess::extract);
    }

    /** The bundle's name ending for a platform ({@code -linux-amd64}), or null where it ships none. */
    static String platformSuffix(String osName, String osArch) {
        String os = osName == null ? "" : osName.toLowerCase(Locale.ROOT);
        String system = os.startsWith("linux") ? "linux" : os.startsWith("mac") ? "darwin" : null;
        String arch = switch (osArch == null ? "" : osArch) {
            case "amd64", "x86_64" -> "amd64";
            case "aarch64", "arm64" -> "arm64";
            case "x86", "i386", "i686" -> "386";
            default -> null;
        };
        return system == null || arch == null ? null : "-" + system + "-" + arch;
    }

    private static Optional<Path> extract(String suffix) {
        URL pom = RedisServerProcess.class.getClassLoader().getResource(BUNDLE_POM);
        if (pom == null || !pom.getProtocol().equals("jar")) {
            return Optional.empty();
        }
        try {
            Path jar = Path.of(((JarURLConnection) pom.openConnection()).getJarFileURL().toURI());
            try (JarFile jf = new JarFile(jar.toFile())) {
                Optional<JarEntry> entry = jf.stream()
                        .filter(e -> e.getName().startsWith("redis-server-") && e.getName().endsWith(suffix))
                        .findFirst();
                if (entry.isEmpty()) {
                    return Optional.empty();
                }
                Path dir = Files.createTempDirectory("hicache-redis-server-");
                Path bin = dir.resolve("redis-server");
                try (InputStream in = jf.getInputStream(entry.get())) {
                    Files.copy(in, bin, StandardCopyOption.REPLACE_EXISTING);
                }
                if (!bin.toFile().setExecutable(true, true)) {
                    throw new AssertionError("cannot make " + bin + " executable");
                }
                dir.toFile().deleteOnExit(); // deleted after the file, which is registered later
                bin.toFile().deleteOnExit();
                return Optional.of(bin);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot extract the bundled redis-server", e);
        } catch (URISyntaxException e) {
            throw new AssertionError("bad jar location " + pom, e);
        }
    }

    /** Whether {@code binary} has TLS built in (its OpenSSL-only startup message is in the file). */
    static boolean supportsTls(Path binary) {
        try {
            byte[] b = Files.readAllBytes(binary);
            outer:
            for (int i = 0; i + TLS_MARK.length <= b.length; i++) {
                for (int j = 0; j < TLS_MARK.length; j++) {
                    if (b[i + j] != TLS_MARK[j]) {
                        continue outer;
                    }
                }
                return true;
            }
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + binary, e);
        }
    }

    // ---- processes ---------------------------------------------------------------------------------------------

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new AssertionError("no free port on 127.0.0.1", e);
        }
    }

    /** Starts a server on a free port; {@code extra} are more {@code --option value} arguments. Returns once it answers. */
    public static RedisServerProcess start(Path dir, String... extra) {
        return startWith(binary(), dir, extra);
    }

    /** As {@link #start} with the given redis-server binary. */
    static RedisServerProcess startWith(Path bin, Path dir, String... extra) {
        int port = freePort();
        List<String> a = new ArrayList<>(List.of("--port", Integer.toString(port)));
        a.addAll(List.of(extra));
        return launch(bin, port, dir, a);
    }

    /** Starts a server whose only port is a TLS port with {@code tls}'s certificate (clients not authenticated). */
    static RedisServerProcess startTls(Path dir, TlsFiles tls, String... extra) {
        Path bin = tlsBinary();
        int port = freePort();
        List<String> a = new ArrayList<>(List.of("--port", "0", "--tls-port", Integer.toString(port),
                "--tls-cert-file", tls.cert().toString(), "--tls-key-file", tls.key().toString(),
                "--tls-ca-cert-file", tls.ca().toString(), "--tls-auth-clients", "no"));
        a.addAll(List.of(extra));
        return launch(bin, port, dir, a);
    }

    private static RedisServerProcess launch(Path bin, int port, Path dir, List<String> options) {
        List<String> a = new ArrayList<>(List.of(bin.toString(), "--bind", "127.0.0.1", "--save", "",
                "--dir", dir.toString(), "--logfile", dir.resolve("redis.log").toString(), "--protected-mode", "no"));
        a.addAll(options);
        RedisServerProcess s = new RedisServerProcess(port, dir, bin, a);
        s.launch();
        return s;
    }

    private boolean tls() {
        return args.contains("--tls-port");
    }

    /**
     * Starts the process and waits until it is ready: its own log says it accepts connections (printed once its
     * listeners are bound) and, on a plain port, it answers a PING (PONG, or NOAUTH where a password is set).
     */
    private void launch() {
        try {
            Files.createDirectories(dir);
            Path log = dir.resolve("redis.log");
            long before = Files.exists(log) ? Files.size(log) : 0;
            process = new ProcessBuilder(args).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("redis.stdout").toFile()).start();
            LIVE.add(process);
            boolean ready = pollUntil(20_000, () -> !process.isAlive()
                    || logSays(log, before, "Ready to accept connections") && (tls() || answersPing()));
            if (!ready || !process.isAlive()) {
                String tail = Files.exists(log) ? Files.readString(log) : "";
                tail = tail.length() > 800 ? tail.substring(tail.length() - 800) : tail;
                close();
                throw new AssertionError(binary + " on port " + port + " did not start: " + tail
                        + Files.readString(dir.resolve("redis.stdout")));
            }
        } catch (IOException e) {
            throw new AssertionError("cannot start " + binary, e);
        }
    }

    private static boolean logSays(Path log, long from, String text) {
        try {
            return Files.exists(log) && Files.readString(log).substring((int) from).contains(text);
        } catch (IOException e) {
            return false;
        }
    }

    private boolean answersPing() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1000);
            s.setSoTimeout(1000);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            int first = s.getInputStream().read();
            return first == '+' || first == '-';
        } catch (IOException e) {
            return false;
        }
    }

    /** SIGKILL: the server dies at once, mid-command if one is running. */
    public void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(20, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        LIVE.remove(process);
    }

    /** Starts the same server again (same binary, port, directory and options). */
    public void restart() {
        launch();
    }

    /** The server's port on 127.0.0.1. */
    public int port() {
        return port;
    }

    boolean isAlive() {
        return process != null && process.isAlive();
    }

    @Override
    public void close() {
        if (process == null) {
            return;
        }
        if (process.isAlive()) {
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
        LIVE.remove(process);
    }

    // ---- commands (what the tests used redis-cli for) ----------------------------------------------------------

    /** Sends one command on a fresh plain connection; bulk and status replies come back as strings. */
    public Object command(String... commandAndArgs) {
        return commandWithPassword(null, commandAndArgs);
    }

    /** As {@link #command}, authenticated as the default user with {@code password} (none when null). */
    Object commandWithPassword(String password, String... commandAndArgs) {
        byte[] name = commandAndArgs[0].getBytes(StandardCharsets.UTF_8);
        ProtocolCommand cmd = () -> name;
        try (Jedis j = new Jedis(new HostAndPort("127.0.0.1", port),
                DefaultJedisClientConfig.builder().password(password).timeoutMillis(10_000).build())) {
            return text(j.sendCommand(cmd, Arrays.copyOfRange(commandAndArgs, 1, commandAndArgs.length)));
        }
    }

    private static Object text(Object reply) {
        if (reply instanceof byte[] b) {
            return new String(b, StandardCharsets.UTF_8);
        }
        if (reply instanceof List<?> l) {
            return l.stream().map(RedisServerProcess::text).toList();
        }
        return reply;
    }
}
