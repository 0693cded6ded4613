package io.hicache.events;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * A KV-events subscriber that delivers batches in sequence order and repairs gaps through the replay endpoint:
 * on start it asks for everything from sequence 0; whenever a batch arrives past a gap it asks for the gap.
 * A gap the replay buffer no longer holds is skipped (the result is then not contiguous). Used by the simulator's
 * {@code kv-events} command and the tests. One thread: the one calling {@link #run}.
 */
public final class KvEventSubscriber implements AutoCloseable {
    private final ZContext context = new ZContext();
    private final ZMQ.Socket sub;
    private final ZMQ.Socket replay;

    /**
     * The outcome of {@link #run}.
     *
     * @param batches        batches delivered
     * @param lastSequence   the last sequence delivered (-1 when none)
     * @param contiguous     true when every sequence from 0 to {@code lastSequence} was delivered
     * @param replayRequests replay requests sent
     * @param replayAnswered true when the replay endpoint answered every request
     * @param malformed      messages ignored as malformed
     */
    public record Result(long batches, long lastSequence, boolean contiguous, long replayRequests,
                         boolean replayAnswered, long malformed) {
    }

    /**
     * How long a connection's ZeroMQ handshake may take before it is dropped and made again. Now and then a JeroMQ
     * client's handshake stalls until this runs out (30 s by default, seen about once in ten fresh replay
     * connections on this project's test machine); 3 s bounds that, and is many round trips on any network.
     */
    static final int HANDSHAKE_MILLIS = 3_000;

    /**
     * Connects (ZeroMQ connects lazily: an endpoint nobody binds yet is not an error).
     *
     * @param endpoint       the publisher's PUB endpoint
     * @param replayEndpoint its replay endpoint, or null
     * @param topic          the topic to subscribe to ("" for all)
     * @throws IllegalArgumentException if an endpoint is malformed
     */
    public KvEventSubscriber(String endpoint, String replayEndpoint, String topic) {
        try {
            sub = context.createSocket(SocketType.SUB);
            sub.setRcvHWM(0);
            sub.setHandshakeIvl(HANDSHAKE_MILLIS);
            connect(sub, endpoint, "KV events endpoint");
            sub.subscribe(topic.getBytes(StandardCharsets.UTF_8));
            if (replayEndpoint != null) {
                replay = context.createSocket(SocketType.DEALER);
                replay.setRcvHWM(0);
                replay.setLinger(0);
                replay.setHandshakeIvl(HANDSHAKE_MILLIS);
                connect(replay, replayEndpoint, "KV events replay endpoint");
            } else {
                replay = null;
            }
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
    }

    private static void connect(ZMQ.Socket s, String endpoint, String what) {
        String shape = KvEventPublisher.tcpShapeProblem(endpoint, false);
        if (shape != null) {
            throw new IllegalArgumentException("cannot connect to " + what + " " + endpoint + ": " + shape);
        }
        boolean ok;
        String why = "connect returned false";
        try {
            ok = s.connect(endpoint);
        } catch (org.zeromq.ZMQException e) {
            ok = false;
            why = KvEventPublisher.reason(e); // JeroMQ's "Errno N" in words
        } catch (RuntimeException e) {
            ok = false;
            why = e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
        }
        if (!ok) {
            throw new IllegalArgumentException("cannot connect to " + what + " " + endpoint + ": " + why);
        }
    }

    /**
     * Receives until the replay endpoint has answered, no gap is open and nothing arrived for {@code idle}, or
     * until {@code max} passed; hands each batch to {@code sink} in sequence order.
     */
    public Result run(Duration idle, Duration max, Consumer<KvEventBatch> sink) {
        TreeMap<Long, byte[]> pending = new TreeMap<>();
        long next = 0;
        long delivered = 0;
        boolean contiguous = true;
        long requests = 0;
        long malformed = 0;
        boolean outstanding = false;
        long requestedFrom = -1;
        long lastActivity = System.nanoTime();
        long deadline = System.nanoTime() + max.toNanos();
        if (replay != null) {
            request(0);
            requests++;
            outstanding = true;
            requestedFrom = 0;
        }
        ZMQ.Poller poller = context.createPoller(2);
        int subIndex = poller.register(sub, ZMQ.Poller.POLLIN);
        int replayIndex = replay == null ? -1 : poller.register(replay, ZMQ.Poller.POLLIN);
        try {
            while (System.nanoTime() < deadline) {
                poller.poll(50);
                if (poller.pollin(subIndex)) {
                    while (true) {
                        byte[] t = sub.recv(ZMQ.DONTWAIT);
                        if (t == null) {
                            break;
                        }
                        byte[] seq = sub.hasReceiveMore() ? sub.recv(0) : null;
                        byte[] payload = sub.hasReceiveMore() ? sub.recv(0) : null;
                        boolean extra = false;
                        while (sub.hasReceiveMore()) {
                            sub.recv(0);
                            extra = true;
                        }
                        lastActivity = System.nanoTime();
                        if (seq == null || seq.length != 8 || payload == null || extra) {
                            malformed++;
                            continue;
                        }
                        long s = ByteBuffer.wrap(seq).getLong();
                        if (s >= next) {
                            pending.put(s, payload);
                        }
                    }
                }
                if (replayIndex >= 0 && poller.pollin(replayIndex)) {
                    while (true) {
                        byte[] first = replay.recv(ZMQ.DONTWAIT);
                        if (first == null) {
                            break;
                        }
                        byte[] seq = replay.hasReceiveMore() ? replay.recv(0) : null;
                        byte[] payload = replay.hasReceiveMore() ? replay.recv(0) : null;
                        while (replay.hasReceiveMore()) {
                            replay.recv(0);
                        }
                        lastActivity = System.nanoTime();
                        if (first.length != 0 || seq == null || seq.length != 8 || payload == null) {
                            malformed++;
                            continue;
                        }
                        long s = ByteBuffer.wrap(seq).getLong();
                        if (s == -1) {
                            outstanding = false;
                        } else if (s >= next) {
                            pending.put(s, payload);
                        }
                    }
                }
                // deliver what is in order
                while (!pending.isEmpty() && pending.firstKey() <= next) {
                    Map.Entry<Long, byte[]> e = pending.pollFirstEntry();
                    if (e.getKey() < next) {
                        continue;
                    }
                    try {
                        sink.accept(KvEventDecoder.decode(e.getKey(), e.getValue()));
                    } catch (IllegalArgumentException bad) {
                        malformed++;
                    }
                    delivered++;
                    next = e.getKey() + 1;
                }
                if (!pending.isEmpty() && !outstanding) {
                    if (replay != null && requestedFrom != next) {
                        request(next);
                        requests++;
                        outstanding = true;
                        requestedFrom = next;
                    } else {
                        contiguous = false; // the replay buffer no longer holds [next, first): skip the gap
                        next = pending.firstKey();
                    }
                    continue;
                }
                if (!outstanding && pending.isEmpty()
                        && System.nanoTime() - lastActivity >= idle.toNanos()) {
                    break;
                }
            }
        } finally {
            poller.close();
        }
        return new Result(delivered, next - 1, contiguous && delivered == next, requests, !outstanding, malformed);
    }

    private void request(long from) {
        replay.sendMore(new byte[0]);
        replay.send(KvEventPublisher.longBytes(from), 0);
    }

    @Override
    public void close() {
        context.close();
    }
}
