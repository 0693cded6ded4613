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
 * The publisher thread's work on one thread, in wall time: drain a cache's ring, merge records into events, encode
 * the msgpack batch, keep it for replay and send it on the PUB socket, with the publisher's own encoder and
 * {@link Outbox} (what {@code KvEventPublisher}'s loop runs for one source), no publisher thread running.
 * Throughput per event, so the score is events per second on one core. The records (the untimed fixture, refilled
 * every invocation) are {@value #RUN}-page chains stored on alternating media, then removed from alternating media,
 * so that every record is its own event (the most events per block, the hardest case for an events/s target):
 * events = blocks = {@value #RECORDS} per invocation, {@value #PAGE_SIZE} tokens a block, batches of up to 1024.
 * The PUB socket has no subscriber (ZeroMQ drops at once), so the send is the call's cost, not the wire's. In the
 * events package (on the class path) to reach the package-private ring, encoder and outbox.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
public class KvEventsEncodeBenchmark {
    static final int PAGE_SIZE = 16;
    static final int RECORDS = 4096;
    static final int RUN = 16;
    /**
     * Batches kept for replay: 1,000 full batches (about 70 MB here) fill during warm-up, so B/op is the steady
     * state's; the default 10,000 would hold about 700 MB of such batches and not fill within a run.
     */
    static final int REPLAY_BATCHES = 1_000;

    private final EventRing ring = new EventRing(1 << 16, PAGE_SIZE, false);
    private final EventRing.Drained drained = new EventRing.Drained(1024, PAGE_SIZE);
    private final BatchEncoder encoder = new BatchEncoder("DISK", PAGE_SIZE);
    private final long seed = BlockHasher.root(0);
    private ZContext context;
    private Outbox outbox;
    private long nextHash = 1;

    @Setup(Level.Trial)
    public void open() {
        context = new ZContext();
        ZMQ.Socket pub = context.createSocket(SocketType.PUB);
        pub.setSndHWM(100_000);
        pub.bind("tcp://127.0.0.1:*");
        outbox = new Outbox(pub, new byte[0], true, REPLAY_BATCHES, KvEventsConfig.MAX_REPLAY_BYTES);
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
                ring.set(i, EventRing.REMOVED, p % 3, first + p, 0);
                ring.publish(i);
            }
        }
        ring.flush();
    }

    /** Drain, encode, keep and send every batch; per event (= block here). */
    @Benchmark
    @OperationsPerInvocation(RECORDS)
    public long drainEncodeSend() {
        long sent = 0;
        int n;
        while ((n = ring.drain(drained)) > 0) {
            int len = encoder.encodeInto(drained, 0, n, seed, System.currentTimeMillis() / 1000.0, 0);
            if (outbox.send(encoder.buffer(), len)) {
                sent += BatchEncoder.countEvents(drained, 0, n);
            }
        }
        return sent;
    }
}
