package io.hicache.events;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.util.concurrent.TimeUnit;

/**
 * The publisher thread's work on one thread: drain a cache's ring, merge records into events, encode the msgpack
 * batch, keep it for replay and send it on the PUB socket, exactly as {@code KvEventPublisher}'s loop does for one
 * source, with no publisher thread running. Per page record (block), so 1e9 / score is blocks per second. The
 * records (the untimed fixture, refilled every invocation) are {@value #RUN}-page chains stored on alternating media
 * (so each stored page is its own {@code BlockStored}), then removed from the device (one {@code BlockRemoved} per
 * chain), {@value #PAGE_SIZE} tokens a page. The PUB socket has no subscriber (ZeroMQ
 * drops at once), so the send is the call's cost, not the wire's. In the events package (on the class path) to
 * reach the package-private ring and encoder.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
public class KvEventsEncodeBenchmark {
    static final int PAGE_SIZE = 16;
    static final int RECORDS = 4096;
    static final int RUN = 16;

    private final EventRing ring = new EventRing(1 << 16, PAGE_SIZE, false);
    private final EventRing.Drained drained = new EventRing.Drained(1024, PAGE_SIZE);
    private final BatchEncoder encoder = new BatchEncoder("DISK", PAGE_SIZE);
    private final ReplayBuffer replay = new ReplayBuffer(10_000);
    private final long seed = BlockHasher.root(0);
    private final byte[] topic = new byte[0];
    private ZContext context;
    private ZMQ.Socket pub;
    private long seq;
    private long nextHash = 1;

    @Setup(Level.Trial)
    public void open() {
        context = new ZContext();
        pub = context.createSocket(SocketType.PUB);
        pub.setSndHWM(100_000);
        pub.bind("tcp://127.0.0.1:*");
    }

    @TearDown(Level.Trial)
    public void close() {
        context.close();
    }

    /** Untimed: what a scheduler thread recorded (chains of stored pages, then their removal). */
    @Setup(Level.Invocation)
    public void produce() {
        int[] tokens = ring.tokens();
        for (int r = 0; r < RECORDS; r += 2 * RUN) {
            long parent = seed;
            long first = nextHash;
            for (int p = 0; p < RUN; p++) {
                int i = ring.claim();
                ring.set(i, EventRing.STORED, p % 3, nextHash, parent);
                for (int k = 0; k < PAGE_SIZE; k++) {
                    tokens[i * PAGE_SIZE + k] = (int) nextHash + k;
                }
                ring.publish(i);
                parent = nextHash++;
            }
            for (int p = 0; p < RUN; p++) {
                int i = ring.claim();
                ring.set(i, EventRing.REMOVED, 0, first + p, 0);
                ring.publish(i);
            }
        }
        ring.flush();
    }

    /** Drain, encode, keep and send every batch; per record. */
    @Benchmark
    @OperationsPerInvocation(RECORDS)
    public long drainEncodeSend() {
        long sent = 0;
        int n;
        while ((n = ring.drain(drained)) > 0) {
            byte[] payload = encoder.encode(drained, 0, n, seed, System.currentTimeMillis() / 1000.0, 0);
            long s = seq++;
            replay.add(s, payload);
            if (pub.sendMore(topic) && pub.sendMore(KvEventPublisher.longBytes(s)) && pub.send(payload, ZMQ.DONTWAIT)) {
                sent += n;
            }
        }
        return sent;
    }
}
