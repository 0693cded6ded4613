package io.hicache.sim.engine;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Runs the instances of a fleet on a few threads between the router's decisions. Instances share nothing
 * while they run up to the next arrival, so each is owned by one thread for the whole run (it is the
 * scheduler thread of that instance's controllers): the calling thread owns the instances {@code i} with
 * {@code i % threads == 0}, worker {@code k} those with {@code i % threads == k}. {@link #run} hands every
 * thread the same phase and returns when all are done; between phases the workers are parked, so the caller
 * may read and change any instance (route, enqueue) with the hand-off ordering the writes. Results do not
 * depend on the thread count. Used by one calling thread.
 */
final class FleetStepper implements AutoCloseable {
    /** Run every instance until its clock reaches the phase's time. */
    static final int RUN = 0;
    /** Run until every request has finished, drain the copies, check the end state. */
    static final int FINISH = 1;
    /** Close every instance (controllers, devices). */
    static final int CLOSE = 2;

    private final Instance[] instances;
    private final int threads;
    private final Thread caller;
    private final Thread[] workers;
    private final AtomicInteger pending = new AtomicInteger();
    private final java.util.List<io.hicache.cuda.simulated.SimulatedCudaRuntime.LeakReport>[] leaks;
    private final long[] ops;
    private volatile int generation;
    private volatile int phase;
    private volatile long timeNs;
    private volatile boolean closed;
    private volatile Throwable failure;

    @SuppressWarnings("unchecked")
    FleetStepper(Instance[] instances, int threads) {
        this.instances = instances;
        this.threads = Math.max(1, Math.min(threads, instances.length));
        this.caller = Thread.currentThread();
        this.workers = new Thread[this.threads - 1];
        this.leaks = (java.util.List<io.hicache.cuda.simulated.SimulatedCudaRuntime.LeakReport>[])
                new java.util.List<?>[instances.length];
        this.ops = new long[instances.length];
        for (int k = 1; k < this.threads; k++) {
            int part = k;
            Thread t = new Thread(() -> work(part), "hicache-sim-instances-" + k);
            t.setDaemon(true);
            workers[k - 1] = t;
            t.start();
        }
    }

    /** Runs {@code op} (at {@code t} for {@link #RUN}) on every instance; rethrows the first failure. */
    void run(int op, long t) {
        phase = op;
        timeNs = t;
        pending.set(threads - 1);
        generation = generation + 1;
        for (Thread w : workers) {
            LockSupport.unpark(w);
        }
        Throwable own = null;
        try {
            runPart(0);
        } catch (Throwable e) {
            own = e;
        }
        int spins = 0;
        while (pending.get() > 0) {
            if (++spins < 200) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(this, 50_000);
            }
        }
        Throwable f = own != null ? own : failure;
        if (f != null) {
            failure = null;
            if (f instanceof RuntimeException re) {
                throw re;
            }
            if (f instanceof Error er) {
                throw er;
            }
            throw new IllegalStateException(f);
        }
    }

    /** The leak reports and completed device operations the last {@link #CLOSE} gathered. */
    long close(java.util.List<io.hicache.cuda.simulated.SimulatedCudaRuntime.LeakReport> out) {
        run(CLOSE, 0);
        long total = 0;
        for (int i = 0; i < instances.length; i++) {
            if (leaks[i] != null) {
                out.addAll(leaks[i]);
            }
            total += ops[i];
        }
        return total;
    }

    private void work(int part) {
        int seen = 0;
        while (!closed) {
            int spins = 0;
            while (generation == seen && !closed) {
                if (++spins < 200) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.park(this);
                }
            }
            if (closed) {
                return;
            }
            seen = generation;
            try {
                runPart(part);
            } catch (Throwable e) {
                failure = e;
            }
            if (pending.decrementAndGet() == 0) {
                LockSupport.unpark(caller);
            }
        }
    }

    private void runPart(int part) {
        int op = phase;
        long t = timeNs;
        for (int i = part; i < instances.length; i += threads) {
            Instance in = instances[i];
            if (in == null) {
                continue;
            }
            switch (op) {
                case RUN -> in.runUntil(t);
                case FINISH -> {
                    in.runUntil(Long.MAX_VALUE);
                    in.drain();
                    in.checkEndState();
                }
                case CLOSE -> {
                    java.util.List<io.hicache.cuda.simulated.SimulatedCudaRuntime.LeakReport> l = new java.util.ArrayList<>();
                    ops[i] = in.close(l);
                    leaks[i] = l;
                }
                default -> throw new IllegalStateException("unknown phase " + op);
            }
        }
    }

    /** Stops the workers (after the last phase). */
    @Override
    public void close() {
        closed = true;
        for (Thread w : workers) {
            LockSupport.unpark(w);
        }
    }
}
