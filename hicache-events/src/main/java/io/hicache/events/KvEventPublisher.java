package io.hicache.events;

import io.hicache.core.HiCache;
import io.hicache.radix.TierListener;
import io.hicache.radix.RadixNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Publishes caches' KV events (block stored on / removed from GPU, CPU and the L3 tier) on a ZeroMQ PUB socket in
 * vLLM's wire format: multipart {@code [topic, sequence (8-byte big-endian, from 0, +1 per batch), payload]}, the
 * payload a msgpack {@code [ts, [event, ...], data_parallel_rank]} (see docs/EVENTS.md). An optional ROUTER replay
 * endpoint answers a request carrying a start sequence (8 bytes, big-endian) with every buffered batch from there,
 * each as {@code [sequence, payload]}, then {@code [-1 as 8 bytes, empty]}.
 *
 * <p>Threads: each attached cache's scheduler thread records its transitions into that cache's preallocated
 * queue without locks or allocation; this publisher's own thread ({@code hicache-kv-events}) drains the queues,
 * encodes, sends and answers replay requests. Nothing ever blocks a scheduler thread under the default
 * {@link KvEventsConfig.Overflow#DROP_OLDEST}: a full queue loses its oldest records, counted in
 * {@link KvEventStats#blocksDropped()}, and the next batch's sequence skips one number, a gap no replay fills, so
 * a subscriber knows its view of the caches may be stale. A slow subscriber costs nothing either: past the send high-water mark
 * ZeroMQ drops its messages, a sequence gap it repairs through replay. Public methods are thread-safe except
 * where they say which thread calls them.
 */
public final class KvEventPublisher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KvEventPublisher.class);
    private static final byte[] EMPTY = new byte[0];
    private static final byte[] END = longBytes(-1L);

    private final KvEventsConfig config;
    private final boolean waitWhenFull;
    private final ZContext context;
    private final ZMQ.Socket pub;
    private final ZMQ.Socket replay;
    private final String boundEndpoint;
    private final String boundReplayEndpoint;
    private final byte[] topic;
    private final Outbox outbox;
    private final CopyOnWriteArrayList<Source> sources = new CopyOnWriteArrayList<>();
    private final Thread thread;
    private volatile boolean stopping;
    private final AtomicLong loops = new AtomicLong();

    private final AtomicLong batchesSent = new AtomicLong();
    private final AtomicLong eventsSent = new AtomicLong();
    private final AtomicLong blocksSent = new AtomicLong();
    private final AtomicLong blocksDropped = new AtomicLong();
    private final AtomicLong sendFailures = new AtomicLong();
    private final AtomicLong replayRequests = new AtomicLong();
    private final AtomicLong replayMalformed = new AtomicLong();
    private final AtomicLong replayBatchesSent = new AtomicLong();

    /**
     * One attached cache: its collector (scheduler side) and its drain scratch and encoder (publisher side). The
     * collector's constants are copied here so the publisher's thread never reads the collector's cache lines,
     * which the scheduler thread writes.
     */
    private static final class Source {
        final TierEventCollector collector;
        final EventRing ring;
        final long seed;
        final int rank;
        final EventRing.Drained drained;
        final BatchEncoder encoder;

        Source(TierEventCollector c, int maxBlocks, String storageMedium) {
            this.collector = c;
            this.ring = c.ring;
            this.seed = c.seed();
            this.rank = c.dataParallelRank;
            this.drained = new EventRing.Drained(maxBlocks, c.ring.pageSize);
            this.encoder = new BatchEncoder(storageMedium, c.ring.pageSize);
        }
    }

    private KvEventPublisher(KvEventsConfig config) {
        this.config = config;
        this.waitWhenFull = config.overflow() == KvEventsConfig.Overflow.WAIT;
        this.topic = config.topic().getBytes(java.nio.charset.StandardCharsets.UTF_8);
        ZContext ctx = new ZContext();
        try {
            pub = ctx.createSocket(SocketType.PUB);
            pub.setSndHWM(config.sendHighWaterMark());
            pub.setLinger((int) Math.min(Integer.MAX_VALUE, config.closeFlushMillis()));
            boundEndpoint = bind(pub, config.endpoint(), "KV events endpoint");
            if (config.replayEndpoint() != null) {
                replay = ctx.createSocket(SocketType.ROUTER);
                // a reply is at most the whole buffer: let it queue rather than be cut by the default HWM
                replay.setSndHWM((int) Math.min(Integer.MAX_VALUE, 2L * config.replayBufferBatches() + 16));
                replay.setLinger(0);
                boundReplayEndpoint = bind(replay, config.replayEndpoint(), "KV events replay endpoint");
            } else {
                replay = null;
                boundReplayEndpoint = null;
            }
        } catch (RuntimeException e) {
            ctx.close();
            throw e;
        }
        this.context = ctx;
        this.outbox = new Outbox(pub, topic, replay != null, config.replayBufferBatches(), config.replayBufferBytes());
        this.thread = new Thread(this::run, "hicache-kv-events");
        thread.setDaemon(true);
        thread.start();
    }

    /** A JeroMQ error in words, with the JDK's own reason where JeroMQ kept it (one line). */
    static String reason(org.zeromq.ZMQException e) {
        String why;
        try {
            why = ZMQ.Error.findByCode(e.getErrorCode()).getMessage();
        } catch (IllegalArgumentException unknown) {
            why = e.getMessage();
        }
        Throwable cause = e.getCause();
        if (cause != null && cause.getMessage() != null && !cause.getMessage().equalsIgnoreCase(why)) {
            why += " (" + cause.getMessage().replace('\n', ' ') + ")";
        }
        return why;
    }

    /**
     * Why the JDK cannot bind a {@code tcp://host:port} endpoint, or null (not such an endpoint, or it can). JeroMQ
     * reports every bind failure as "address in use", also for an address this host does not have.
     */
    static String tcpBindFailure(String endpoint) {
        if (!endpoint.startsWith("tcp://")) {
            return null;
        }
        String hostPort = endpoint.substring("tcp://".length());
        int colon = hostPort.lastIndexOf(':');
        if (colon < 0) {
            return null;
        }
        String host = hostPort.substring(0, colon);
        int port;
        try {
            port = Integer.parseInt(hostPort.substring(colon + 1));
        } catch (NumberFormatException e) {
            return null;
        }
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        try (java.net.ServerSocket probe = new java.net.ServerSocket()) {
            probe.bind(host.equals("*") ? new java.net.InetSocketAddress(port)
                    : new java.net.InetSocketAddress(host, port));
            return null;
        } catch (java.io.IOException | IllegalArgumentException e) {
            return e.getMessage();
        }
    }

    /**
     * Why {@code endpoint} is not a {@code tcp://HOST:PORT} endpoint JeroMQ can use, or null (it is, or it is not a
     * tcp endpoint). JeroMQ's own words for these are the host alone or a number parser's message.
     */
    static String tcpShapeProblem(String endpoint, boolean bind) {
        if (!endpoint.startsWith("tcp://")) {
            return null;
        }
        String hostPort = endpoint.substring("tcp://".length());
        int colon = hostPort.lastIndexOf(':');
        String port = colon < 0 ? "" : hostPort.substring(colon + 1);
        boolean number = !port.isEmpty() && port.length() <= 5 && port.chars().allMatch(Character::isDigit)
                && Integer.parseInt(port) <= 65_535;
        if (number || (bind && port.equals("*"))) {
            return null;
        }
        return "expected tcp://HOST:PORT with PORT a number from 0 to 65535" + (bind ? " (or * for any free port)" : "");
    }

    private static String bind(ZMQ.Socket s, String endpoint, String what) {
        String shape = tcpShapeProblem(endpoint, true);
        if (shape != null) {
            throw new IllegalArgumentException("cannot bind " + what + " " + endpoint + ": " + shape);
        }
        boolean ok;
        String why;
        try {
            ok = s.bind(endpoint);
            why = ok ? null : "bind returned false";
        } catch (org.zeromq.ZMQException e) { // its message is "Errno N": say what N means
            ok = false;
            why = e.getErrorCode() == ZMQ.Error.EADDRINUSE.getCode() ? tcpBindFailure(endpoint) : null;
            why = why != null ? why : reason(e);
        } catch (RuntimeException e) {
            ok = false;
            why = e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
        }
        if (!ok) {
            throw new IllegalArgumentException("cannot bind " + what + " " + endpoint + ": " + why);
        }
        return s.getLastEndpoint();
    }

    /**
     * Binds the endpoints and starts the publisher's thread; attach caches with {@link #attach(HiCache, int)}.
     *
     * @throws IllegalArgumentException if an endpoint cannot be bound (one line naming it)
     */
    public static KvEventPublisher open(KvEventsConfig config) {
        return new KvEventPublisher(config);
    }

    /**
     * The one call an engine makes: opens a publisher for {@code config} and attaches {@code cache} to it as
     * data-parallel rank {@link KvEventsConfig#dataParallelRank()}. Call on the cache's scheduler thread; close
     * the publisher before or with the cache. In a CP group attach one rank's cache (its events are the group's).
     *
     * @throws IllegalArgumentException if an endpoint cannot be bound (one line naming it)
     */
    public static KvEventPublisher attach(HiCache cache, KvEventsConfig config) {
        KvEventPublisher p = open(config);
        try {
            p.attach(cache, config.dataParallelRank());
        } catch (RuntimeException e) {
            p.close();
            throw e;
        }
        return p;
    }

    /**
     * Publishes {@code cache}'s tier transitions as rank {@code dataParallelRank}: sets this publisher's collector as
     * the cache's {@link TierListener}. Call on the cache's scheduler thread.
     *
     * @throws IllegalArgumentException if {@code dataParallelRank} is negative or another cache publishes as it here
     * @throws IllegalStateException    if the publisher is closed, the cache already has a live tier listener, or this
     *                                  module cannot read the tree's nodes (io.hicache.radix a named module and this
     *                                  one on the class path)
     */
    public void attach(HiCache cache, int dataParallelRank) {
        if (dataParallelRank < 0) {
            throw new IllegalArgumentException("data-parallel rank must be >= 0, got " + dataParallelRank);
        }
        if (stopping) {
            throw new IllegalStateException("KV event publisher is closed");
        }
        TierListener present = cache.tierListener();
        if (present != null && !(present instanceof TierEventCollector c && c.disabled())) {
            throw new IllegalStateException("this cache already publishes its tier transitions to a listener"
                + " (attach a publisher before observe)");
        }
        for (Source s : sources) {
            if (s.rank == dataParallelRank && !s.collector.disabled()) {
                throw new IllegalArgumentException("data-parallel rank " + dataParallelRank + " already publishes on"
                        + " this publisher: give each data-parallel instance its own rank (in a CP group, attach one"
                        + " rank's cache)");
            }
        }
        cache.tierListener(collector(cache.tree().pageSize(), dataParallelRank)); // replaces a closed one's
    }

    /**
     * Reports {@code cache}'s tier transitions, hashed exactly as a publisher hashes them, to {@code sink} in process
     * (no queue, no encoding, no sockets), beside a publisher attached before or after: a router in the same
     * process (the simulator's {@code kv-events} router). The sink runs on the cache's scheduler thread; call this
     * there.
     *
     * @param extraKey hashed into every block hash (see {@link BlockHasher})
     */
    public static void observe(HiCache cache, long extraKey, BlockEventSink sink) {
        TierListener own = observer(cache.tree().pageSize(), extraKey, sink);
        TierListener present = cache.tierListener();
        cache.tierListener(present == null ? own : new BothListeners(present, own));
    }

    /** Tells two listeners of one cache, in order (a publisher's collector and an in-process one; tests too). */
    record BothListeners(TierListener first, TierListener second)
            implements TierListener {
        @Override
        public void onDeviceInserted(int[] tokens, int from, int len, int firstNewToken, RadixNode last) {
            first.onDeviceInserted(tokens, from, len, firstNewToken, last);
            second.onDeviceInserted(tokens, from, len, firstNewToken, last);
        }

        @Override
        public void onStored(int tier, RadixNode node) {
            first.onStored(tier, node);
            second.onStored(tier, node);
        }

        @Override
        public void onRemoving(int tier, RadixNode node) {
            first.onRemoving(tier, node);
            second.onRemoving(tier, node);
        }

        @Override
        public void onPagesStored(int tier, RadixNode node, int firstPage, int pages) {
            first.onPagesStored(tier, node, firstPage, pages);
            second.onPagesStored(tier, node, firstPage, pages);
        }

        @Override
        public void onSequencePages(int tier, boolean stored, int[] tokens, int from, int firstPage, int pages) {
            first.onSequencePages(tier, stored, tokens, from, firstPage, pages);
            second.onSequencePages(tier, stored, tokens, from, firstPage, pages);
        }

        @Override
        public void onCleared() {
            first.onCleared();
            second.onCleared();
        }
    }

    /** A new source: the listener one cache reports to (tests set it on a bare tree through an adapter). */
    TierEventCollector collector(int pageSize, int dataParallelRank) {
        if (stopping) {
            throw new IllegalStateException("KV event publisher is closed");
        }
        EventRing ring = new EventRing(config.queueCapacity(), pageSize, waitWhenFull);
        TierEventCollector c = new TierEventCollector(ring, dataParallelRank, config.extraKey());
        sources.add(new Source(c, config.maxBlocksPerBatch(), config.storageMedium()));
        return c;
    }

    /**
     * A tier listener that hashes blocks exactly as a publisher does and hands each to {@code sink} in process
     * (no queue, no encoding, no sockets); {@link #observe} sets it on a cache. The sink runs on
     * the cache's scheduler thread.
     *
     * @param pageSize tokens per page of the cache
     * @param extraKey hashed into every block hash (see {@link BlockHasher})
     */
    static TierListener observer(int pageSize, long extraKey, BlockEventSink sink) {
        if (pageSize < 1 || sink == null) {
            throw new IllegalArgumentException("observer needs pageSize >= 1 and a sink, got " + pageSize + ", " + sink);
        }
        return new TierEventCollector(sink, pageSize, extraKey, TierEventCollector.CACHE_BITS);
    }

    /** The PUB endpoint as bound (a wildcard port resolved). */
    public String endpoint() {
        return boundEndpoint;
    }

    /** The replay endpoint as bound, or null without one. */
    public String replayEndpoint() {
        return boundReplayEndpoint;
    }

    /** True when this publisher's thread has read everything every attached cache recorded. Any thread. */
    private boolean ringsEmpty() {
        for (Source s : sources) {
            if (!s.ring.empty()) {
                return false;
            }
        }
        return true;
    }

    /** Batches kept for replay now (tests; read racily from another thread). */
    int batchesKept() {
        return outbox.replay == null ? 0 : outbox.replay.size();
    }

    /** The counters now. Any thread. */
    public KvEventStats stats() {
        return new KvEventStats(batchesSent.get(), eventsSent.get(), blocksSent.get(), blocksDropped.get(),
                sendFailures.get(), replayRequests.get(), replayMalformed.get(), replayBatchesSent.get());
    }

    /**
     * Waits until everything recorded before the call has been sent (or the timeout passed).
     *
     * @return true if it was all sent
     */
    public boolean flush(long timeout, TimeUnit unit) {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        // The thread empties a queue a moment before it sends and counts what it took; the loop it is in when the
        // queues first read empty may still be sending. Its end, and one whole loop after, are awaited: a mark
        // taken after the empty reading is at most one below that loop's count.
        long mark = -1;
        while (System.nanoTime() < deadline && thread.isAlive()) {
            if (!ringsEmpty()) {
                mark = -1;
            } else if (mark < 0) {
                mark = loops.get();
            } else if (loops.get() >= mark + 2) {
                return true;
            }
            LockSupport.parkNanos(200_000);
        }
        return false;
    }

    /**
     * Stops recording, sends what is queued for up to {@link KvEventsConfig#closeFlushMillis()} (what is left is
     * counted as dropped), closes the sockets and stops the thread. Idempotent.
     */
    @Override
    public void close() {
        if (stopping) {
            return;
        }
        for (Source s : sources) {
            s.collector.disable();
        }
        stopping = true;
        for (Source s : sources) {
            s.ring.close();
        }
        try {
            thread.join(config.closeFlushMillis() + 5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---------------------------------------------------------------- the publisher's thread

    private void run() {
        long flushDeadline = Long.MAX_VALUE;
        try {
            while (true) {
                // Drain again at once only if a batch came out full (more may be waiting) or a WAIT producer may be
                // parked on a full queue; else wait, so the records gather rather than this thread chasing the
                // producer slot by slot through lines it is still writing.
                boolean again = false;
                for (Source s : sources) {
                    int n = drainOne(s);
                    again |= n == s.drained.kind.length || (waitWhenFull && n > 0);
                }
                int replayed = serveReplay();
                loops.incrementAndGet();
                if (stopping) {
                    if (flushDeadline == Long.MAX_VALUE) {
                        flushDeadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(config.closeFlushMillis());
                    }
                    if (ringsEmpty() || System.nanoTime() >= flushDeadline) {
                        break;
                    }
                }
                if (!again && replayed == 0) {
                    LockSupport.parkNanos(200_000);
                }
            }
            for (Source s : sources) {
                while (s.ring.drain(s.drained) > 0 || s.drained.lost > 0) {
                    blocksDropped.addAndGet(s.drained.count + s.drained.lost);
                }
            }
        } catch (RuntimeException | Error e) {
            LOG.error("KV event publisher stopped: {}", e.toString(), e);
        } finally {
            context.close();
        }
    }

    private int drainOne(Source s) {
        EventRing.Drained d = s.drained;
        int n = s.ring.drain(d);
        if (d.lost > 0) { // records a full queue overwrote: make the loss a sequence gap subscribers can see
            blocksDropped.addAndGet(d.lost);
            outbox.skip();
        }
        if (n == 0) {
            return 0;
        }
        int len = s.encoder.encodeInto(d, 0, n, s.seed, System.currentTimeMillis() / 1000.0, s.rank);
        if (!outbox.send(s.encoder.buffer(), len)) {
            sendFailures.incrementAndGet();
        }
        batchesSent.incrementAndGet();
        eventsSent.addAndGet(BatchEncoder.countEvents(d, 0, n));
        blocksSent.addAndGet(n);
        return n;
    }

    /** Answers at most one replay request; returns 1 if one (well-formed or not) was read. */
    private int serveReplay() {
        if (replay == null) {
            return 0;
        }
        byte[] id = replay.recv(ZMQ.DONTWAIT);
        if (id == null) {
            return 0;
        }
        byte[] delimiter = null;
        byte[] body = null;
        int frames = 1;
        while (replay.hasReceiveMore()) {
            byte[] f = replay.recv(0);
            frames++;
            if (frames == 2) {
                delimiter = f;
            } else if (frames == 3) {
                body = f;
            }
        }
        if (frames != 3 || delimiter == null || delimiter.length != 0 || body == null || body.length != 8) {
            replayMalformed.incrementAndGet();
            return 1;
        }
        long start = java.nio.ByteBuffer.wrap(body).getLong();
        if (start < 0) {
            replayMalformed.incrementAndGet();
            return 1;
        }
        replayRequests.incrementAndGet();
        ReplayBuffer kept = outbox.replay;
        for (int i = kept.indexOf(start); i < kept.size(); i++) {
            replay.sendMore(id);
            replay.sendMore(EMPTY);
            replay.sendMore(longBytes(kept.seqAt(i)));
            // copied (JeroMQ copies with an offset): the bytes are reused for later batches while the reply is queued
            replay.send(kept.payloadAt(i), kept.offsetAt(i), kept.lengthAt(i), 0);
            replayBatchesSent.incrementAndGet();
        }
        replay.sendMore(id);
        replay.sendMore(EMPTY);
        replay.sendMore(END);
        replay.send(EMPTY, 0);
        return 1;
    }

    static byte[] longBytes(long v) {
        byte[] b = new byte[8];
        Outbox.putLong(b, v);
        return b;
    }
}
