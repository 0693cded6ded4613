package io.hicache.serve;

import io.hicache.serve.engine.Engine;
import io.hicache.serve.engine.ServeMetrics;
import io.hicache.serve.http.HttpServer;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@code scripts/serve}: builds the engine, binds the HTTP server, prints one {@code serve: ready on ...} line on
 * stdout once {@code GET /health} answers, and serves until SIGTERM or SIGINT: then it stops accepting, lets running
 * requests finish for {@code --shutdown-grace-s}, aborts the rest, waits for backups and L3 writes in flight, closes
 * the cache and exits 0. A bad command line prints one line and exits 2; a failed start prints one line and exits 1.
 * With {@code --calibrate FILE} it measures the engine instead and writes its profile ({@link Calibrate}).
 */
public final class ServeMain {
    private ServeMain() {
    }

    public static void main(String[] args) {
        ServeConfig cfg;
        String calibrate;
        try {
            var split = Calibrate.split(args);
            calibrate = split.getValue();
            cfg = ServeConfig.parse(split.getKey().toArray(String[]::new), System.getenv());
        } catch (ServeConfig.UsageException e) {
            System.err.println(e.getMessage().startsWith("usage:") ? e.getMessage() : "serve: " + e.getMessage());
            System.exit(e.getMessage().startsWith("usage:") ? 0 : 2);
            return;
        }
        if (!calibrate.isEmpty()) {
            System.exit(Calibrate.run(cfg, java.nio.file.Path.of(calibrate)));
            return;
        }
        long t0 = System.nanoTime();
        ServeMetrics metrics = new ServeMetrics();
        Engine engine = new Engine(cfg.engine(), metrics);
        HttpServer http;
        int port;
        try {
            engine.start();
            http = new HttpServer(engine, cfg.host(), cfg.port(), cfg.apiKey(), cfg.maxBodyBytes());
            port = http.start();
        } catch (RuntimeException e) {
            System.err.println("serve: " + e.getMessage());
            engine.shutdown(0);
            System.exit(1);
            return;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        AtomicBoolean stopping = new AtomicBoolean();
        Runnable stop = () -> {
            if (!stopping.compareAndSet(false, true)) {
                return;
            }
            System.err.println("serve: stopping: no new requests; running ones get " + cfg.graceS() + " s");
            http.closeListener();
            engine.shutdown(TimeUnit.SECONDS.toNanos(cfg.graceS()));
            http.stop();
            System.err.println("serve: stopped (cache closed)");
            stopped.countDown();
        };
        boolean signals = onSignal("TERM", stop) & onSignal("INT", stop);
        if (!signals) {
            Runtime.getRuntime().addShutdownHook(new Thread(stop, "serve-shutdown"));
        }
        System.out.printf(Locale.ROOT, "serve: ready on http://%s:%d %s (started in %.1f s)%n", cfg.host(), port,
            cfg.describe(), (System.nanoTime() - t0) / 1e9);
        System.out.flush();
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        System.exit(0);
    }

    /**
     * Runs {@code action} on a thread of its own when the process gets signal {@code name}, through the JDK's
     * {@code sun.misc.Signal} (jdk.unsupported), reached reflectively so that the build's warnings-as-errors accept
     * it. A handled SIGTERM lets {@code main} exit 0 after the graceful stop; without it the JVM's default would exit 143.
     *
     * @return false if the signal could not be handled (a shutdown hook is used instead)
     */
    private static boolean onSignal(String name, Runnable action) {
        try {
            Class<?> signal = Class.forName("sun.misc.Signal");
            Class<?> handler = Class.forName("sun.misc.SignalHandler");
            InvocationHandler ih = (proxy, method, a) -> {
                if (method.getName().equals("handle")) {
                    new Thread(action, "serve-signal-" + name).start();
                    return null;
                }
                return switch (method.getName()) {
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == a[0];
                    default -> "SignalHandler(" + name + ")";
                };
            };
            Object h = Proxy.newProxyInstance(handler.getClassLoader(), new Class<?>[] {handler}, ih);
            Object s = signal.getConstructor(String.class).newInstance(name);
            signal.getMethod("handle", signal, handler).invoke(null, s, h);
            return true;
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return false;
        }
    }
}
