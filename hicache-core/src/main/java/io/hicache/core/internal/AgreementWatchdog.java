package io.hicache.core.internal;

import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Watches the calls a controller's scheduler thread makes into its {@link io.hicache.core.cp.RankAgreement}
 * ({@code contribute}, {@code tryResult}), which must never block: one daemon thread per process samples every
 * registered {@link Watch} (it runs while any is registered) and, for a call still inside the agreement past the watch's bound, logs one WARN line and
 * counts it in {@link Metric#CP_AGREEMENT_BLOCKED} (once per blocked call). An engine whose collective blocks (an
 * all-reduce inside {@code contribute}) sees it here instead of a silently stuck {@code poll()}.
 *
 * <p>Threads: {@link Watch#enter()} and {@link Watch#exit()} are the scheduler thread's (a plain read and a release
 * store each: allocation-free, no atomic read-modify-write); the watchdog thread reads with acquire and counts through
 * an atomic increment. Registering and closing a watch are thread-safe.
 */
final class AgreementWatchdog {
    private static final Logger LOG = LoggerFactory.getLogger(AgreementWatchdog.class);
    private static final VarHandle CALLS;
    private static final CopyOnWriteArrayList<Watch> WATCHES = new CopyOnWriteArrayList<>();
    private static final long MAX_PERIOD_NS = TimeUnit.MILLISECONDS.toNanos(100);
    private static Thread thread;

    static {
        try {
            CALLS = MethodHandles.lookup().findVarHandle(Watch.class, "calls", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private AgreementWatchdog() {
    }

    /** A watch that never reports (the bound is 0: watching is off). */
    static Watch disabled() {
        return new Watch(null, 0, 0);
    }

    /** Watches the calls of the controller of {@code rank}, counting blocked ones in {@code metrics}. */
    static Watch watch(HiCacheMetrics metrics, int rank, long boundNs) {
        if (boundNs <= 0) {
            return disabled();
        }
        Watch w = new Watch(metrics, rank, boundNs);
        WATCHES.add(w);
        startThread();
        return w;
    }

    private static synchronized void startThread() {
        if (thread == null) {
            thread = new Thread(AgreementWatchdog::loop, "hicache-agreement-watchdog");
            thread.setDaemon(true);
            thread.start();
        }
    }

    private static void loop() {
        while (true) {
            if (WATCHES.isEmpty()) {
                synchronized (AgreementWatchdog.class) {
                    if (WATCHES.isEmpty()) {
                        thread = null; // the last watch closed; the next one starts a new thread
                        return;
                    }
                }
            }
            long period = MAX_PERIOD_NS;
            long now = System.nanoTime();
            for (Watch w : WATCHES) {
                w.sample(now);
                period = Math.min(period, Math.max(TimeUnit.MILLISECONDS.toNanos(1), w.boundNs / 4));
            }
            LockSupport.parkNanos(period);
        }
    }

    /** One controller's calls into its agreement. */
    static final class Watch implements AutoCloseable {
        private final HiCacheMetrics metrics;
        private final int rank;
        private final long boundNs;
        /** Odd while a call is inside the agreement; one writer (the scheduler thread). */
        @SuppressWarnings("unused") // through CALLS
        private volatile long calls;
        // the watchdog thread's own
        private long seenCalls = -1;
        private long seenAtNs;
        private long reportedCalls = -1;
        private long reports;

        private Watch(HiCacheMetrics metrics, int rank, long boundNs) {
            this.metrics = metrics;
            this.rank = rank;
            this.boundNs = boundNs;
        }

        /** The scheduler thread enters {@code contribute} or {@code tryResult}. */
        void enter() {
            CALLS.setRelease(this, (long) CALLS.getOpaque(this) + 1);
        }

        /** The call returned (or threw). */
        void exit() {
            CALLS.setRelease(this, (long) CALLS.getOpaque(this) + 1);
        }

        private void sample(long now) {
            long c = (long) CALLS.getAcquire(this);
            if (c != seenCalls) {
                seenCalls = c;
                seenAtNs = now;
                return;
            }
            if ((c & 1) == 1 && c != reportedCalls && now - seenAtNs >= boundNs) {
                reportedCalls = c;
                metrics.incrementShared(Metric.CP_AGREEMENT_BLOCKED);
                if (reports++ % 100 == 0) {
                    LOG.warn("HiCache CP rank {}: poll() has been blocked inside the RankAgreement for over {} ms "
                        + "(blocked calls so far: {}): contribute and tryResult must return at once; run a blocking "
                        + "collective on a thread of its own", rank, TimeUnit.NANOSECONDS.toMillis(now - seenAtNs),
                        reports);
                }
            }
        }

        /** Stops watching (the controller closed). */
        @Override
        public void close() {
            WATCHES.remove(this);
        }
    }
}
