package io.hicache.storage.redis;

import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import io.hicache.storage.StoreConfig;
import io.hicache.storage.StoreStatus;
import io.hicache.storage.internal.AbstractPageStore;
import io.hicache.storage.internal.CommitMarker;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.SslOptions;
import io.lettuce.core.SslVerifyMode;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.BaseRedisAsyncCommands;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.codec.ToByteBufEncoder;
import io.lettuce.core.output.ByteArrayOutput;
import io.lettuce.core.output.CommandOutput;
import io.lettuce.core.output.IntegerOutput;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.ProtocolVersion;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.NettyCustomizer;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.ChannelOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.net.ssl.SSLHandshakeException;
import java.lang.foreign.MemorySegment;
import java.net.ConnectException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.zip.CRC32C;

/**
 * The {@code redis} backend: Redis or Valkey, one server or a Redis Cluster, through Lettuce.
 *
 * <p><b>Objects.</b> Key {@code hicache:<64 hex>}; value = the page's bytes followed by the 64-byte
 * {@link CommitMarker} (written last, CRC-32C of the data, the key). One {@code SET} writes the whole
 * value; the server applies a command atomically and its append-only file replays whole commands only,
 * so a value is either absent or complete: the staged state of the write protocol is the client's
 * buffer, the commit is the {@code SET}. A reader checks the marker, size and CRC; anything else
 * (foreign value, wrong size) is {@link StoreStatus#CORRUPT}. Two writers of a key both succeed and
 * the last {@code SET} leaves one valid object (data and marker cannot pair across writers).
 *
 * <p><b>Zero intermediate copies.</b> A put encodes the host page straight into Netty's outbound (direct)
 * buffer and checksums those bytes there; a get checks the reply where Netty's inbound buffer holds it and
 * copies it once, into the host page. No {@code byte[]} per page, no JDK socket staging copy.
 *
 * <p><b>Batches</b> are pipelined: every command of a batch is sent before the first reply is awaited, on
 * one connection (per node in a cluster), so a batch costs one round trip. Connections: a fixed set of
 * {@link StoreConfig#redisConnections()}, each used by one batch at a time. A connection error or a batch
 * that outlives {@link StoreConfig#redisTimeoutMs()} fails the attempt: the batch is abandoned (its
 * commands can no longer touch the host pages), the connection is closed, the base class retries with
 * backoff on a fresh connection.
 *
 * <p><b>Security.</b> {@code AUTH} with a password or an ACL user and password (from the location or
 * {@link StoreConfig#redisCredentials}), TLS with {@code rediss://} (server certificate and host name
 * verified against the JVM trust store or {@link StoreConfig#redisTlsCaCertificate()} / {@code ?cacert=}).
 * {@link #open} authenticates once: a wrong password or an untrusted certificate is one
 * {@link IllegalStateException} naming the endpoint and the cause, never the password. Credentials
 * never appear in logs, messages, {@link #toString()} or stats.
 *
 * <p>Thread-safe: each batch borrows one connection; replies are decoded on Lettuce's event-loop threads.
 */
public final class RedisPageStore extends AbstractPageStore {
    private static final Logger LOG = LoggerFactory.getLogger(RedisPageStore.class);
    private static final byte[] KEY_PREFIX = "hicache:".getBytes(StandardCharsets.US_ASCII);
    private static final byte OK = (byte) StoreStatus.OK.ordinal();
    private static final byte MISS = (byte) StoreStatus.MISS.ordinal();
    private static final byte FAILED = (byte) StoreStatus.FAILED.ordinal();
    private static final byte CORRUPT = (byte) StoreStatus.CORRUPT.ordinal();
    /** A put batch is written in groups of about this many bytes (one buffer, one write each). */
    private static final long FLUSH_BYTES = 1 << 20;
    /** Room for a SET's header and key in a group's buffer. */
    private static final int COMMAND_BYTES = 128;

    private final RedisLocation location;
    private final ClientResources resources;
    private final AbstractRedisClient client;
    private final RedisURI uri;
    private final boolean cluster;
    private final ArrayBlockingQueue<Link> links;

    private RedisPageStore(RedisLocation location, StoreConfig config, ClientResources resources,
                           AbstractRedisClient client, RedisURI uri, boolean cluster, Link first) {
        super("redis", "L3 redis store " + location.describe(), config);
        this.location = location;
        this.resources = resources;
        this.client = client;
        this.uri = uri;
        this.cluster = cluster;
        addSecret(location.password());
        addSecret(config.redisPassword());
        links = new ArrayBlockingQueue<>(config.redisConnections());
        links.add(first);
        for (int i = 1; i < config.redisConnections(); i++) {
            links.add(new Link());
        }
    }

    /** Opens every connection now rather than on a first batch. */
    private void connectAll() {
        for (Link l : links) {
            if (l.connection == null) {
                l.connect(client, uri);
            }
        }
    }

    /**
     * Connects to the location, authenticates and checks the server answers.
     *
     * @throws IllegalArgumentException when the location is malformed
     * @throws IllegalStateException    with one clear line (endpoint and cause, no credentials) when the
     *                                  server is unreachable, refuses the credentials, or its certificate
     *                                  is not trusted
     */
    public static RedisPageStore open(String locationText, StoreConfig config) {
        RedisLocation loc = RedisLocation.parse(locationText);
        String user = config.redisUser() != null ? config.redisUser() : loc.user();
        String password = config.redisPassword() != null ? config.redisPassword() : loc.password();
        Path ca = config.redisTlsCaCertificate() != null ? config.redisTlsCaCertificate() : loc.caCertificate();
        Duration timeout = Duration.ofMillis(config.redisTimeoutMs());
        List<RedisURI> uris = new ArrayList<>();
        for (RedisLocation.Endpoint ep : loc.endpoints()) {
            RedisURI.Builder b = RedisURI.Builder.redis(ep.host(), ep.port()).withTimeout(timeout)
                    .withClientName("hicache-l3").withDatabase(loc.database());
            if (password != null) {
                if (user != null) {
                    b.withAuthentication(user, password);
                } else {
                    b.withPassword(password.toCharArray());
                }
            }
            if (loc.tls()) {
                // FULL: the certificate chain and the host name
                b.withSsl(true).withVerifyPeer(SslVerifyMode.FULL);
            }
            uris.add(b.build());
        }
        SslOptions.Builder ssl = SslOptions.builder().jdkSslProvider();
        if (loc.tls() && ca != null) {
            if (!java.nio.file.Files.isReadable(ca)) {
                throw new IllegalArgumentException("redis TLS CA file " + ca + " cannot be read");
            }
            ssl.trustManager(ca.toFile());
        }
        SocketOptions socket = SocketOptions.builder().connectTimeout(timeout).build();
        ClientResources resources = DefaultClientResources.builder()
                .ioThreadPoolSize(Math.max(2, config.redisConnections())).computationThreadPoolSize(2)
                .nettyCustomizer(new NettyCustomizer() {
                    @Override
                    public void afterBootstrapInitialized(Bootstrap bootstrap) {
                        // replies are whole pages: read up to 1 MiB per call (Netty's default stops at 64 KiB),
                        // fewer reads and decode passes per page
                        bootstrap.option(ChannelOption.RCVBUF_ALLOCATOR, new AdaptiveRecvByteBufAllocator(64, 64 << 10, 1 << 20));
                    }
                }).build();
        AbstractRedisClient client = null;
        try {
            // one plain connection first: it surfaces the server's own answer (NOAUTH, WRONGPASS, TLS), and
            // tells a cluster node from a single server
            RedisClient single = RedisClient.create(resources);
            client = single;
            single.setOptions(options(ClientOptions.builder(), socket, ssl.build(), false).build());
            boolean enabled;
            try (StatefulRedisConnection<String, String> direct = single.connect(StringCodec.UTF8, uris.get(0))) {
                direct.sync().ping();
                enabled = loc.cluster() != null ? loc.cluster() : direct.sync().info("cluster").contains("cluster_enabled:1");
            }
            Link first = new Link();
            if (enabled) {
                single.shutdown(0, 0, TimeUnit.MILLISECONDS);
                RedisClusterClient c = RedisClusterClient.create(resources, uris);
                client = c;
                c.setOptions(((ClusterClientOptions.Builder) options(ClusterClientOptions.builder(), socket,
                        ssl.build(), true)).build());
                first.connect(c, null);
            } else {
                if (loc.endpoints().size() > 1) {
                    throw new IllegalArgumentException("redis location names " + loc.endpoints().size()
                            + " servers but " + loc.endpoints().get(0) + " is not in cluster mode; name one server, or a cluster");
                }
                first.connect(single, uris.get(0));
            }
            RedisPageStore store = new RedisPageStore(loc, config, resources, client, uris.get(0), enabled, first);
            store.connectAll();
            LOG.info("L3 redis store {} open ({}{}, {} connections{})", loc.describe(),
                    enabled ? "cluster" : "single server", loc.tls() ? ", TLS" : "", config.redisConnections(),
                    enabled ? " per node" : "");
            return store;
        } catch (IllegalArgumentException e) {
            shutdown(client, resources);
            throw e;
        } catch (RuntimeException e) {
            shutdown(client, resources);
            throw new IllegalStateException(startupMessage(loc, user, e, password));
        }
    }

    private static ClientOptions.Builder options(ClientOptions.Builder b, SocketOptions socket, SslOptions ssl,
                                                 boolean cluster) {
        // RESP2 (AUTH, no HELLO: the least-privilege ACL user needs no more); no automatic reconnect and
        // no command replay: a broken connection fails its batch, which the base class retries on a new one.
        // A cluster connection opens its node connections on first use: commands wait for them (bounded by
        // the batch timeout) instead of being rejected.
        return b.protocolVersion(ProtocolVersion.RESP2).autoReconnect(false)
                .disconnectedBehavior(cluster ? ClientOptions.DisconnectedBehavior.ACCEPT_COMMANDS
                        : ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .socketOptions(socket).sslOptions(ssl);
    }

    private static void shutdown(AbstractRedisClient client, ClientResources resources) {
        if (client != null) {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
        resources.shutdown(0, 2, TimeUnit.SECONDS);
    }

    private static String startupMessage(RedisLocation loc, String user, RuntimeException e, String password) {
        String where = "L3 redis store " + loc.describe();
        Throwable root = e;
        boolean tlsTrust = false;
        boolean refused = false;
        for (Throwable t = e; t != null; t = t.getCause()) {
            root = t;
            if (t instanceof SSLHandshakeException || t.getClass().getName().contains("CertPath")
                    || t.getClass().getName().contains("ValidatorException")) {
                tlsTrust = true;
            }
            if (t instanceof ConnectException) {
                refused = true;
            }
        }
        String text;
        if (contains(e, "WRONGPASS") || contains(e, "NOAUTH")
                || contains(e, "NOPERM") || contains(e, "invalid password")) {
            text = where + ": authentication failed" + (user != null ? " for user " + user : "")
                    + " (wrong user or password, or the ACL user may not run the store's commands)";
        } else if (tlsTrust) {
            text = where + ": TLS handshake failed, the server certificate is not trusted or does not match"
                    + " the host name (give its CA with ?cacert=PATH or StoreConfig.redisTlsCaCertificate)";
        } else if (refused) {
            text = where + ": cannot connect (connection refused)";
        } else {
            text = where + ": cannot connect: " + root.getClass().getSimpleName() + ": " + root.getMessage();
        }
        return password == null ? text : text.replace(password, "***");
    }

    private static boolean contains(Throwable e, String s) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t.getMessage() != null && t.getMessage().contains(s)) {
                return true;
            }
        }
        return false;
    }

    /** True when connected to a Redis Cluster. */
    public boolean isCluster() {
        return cluster;
    }

    static byte[] redisKey(PageKey key) {
        byte[] k = new byte[KEY_PREFIX.length + PageKey.HEX_CHARS];
        System.arraycopy(KEY_PREFIX, 0, k, 0, KEY_PREFIX.length);
        String hex = key.hex();
        for (int i = 0; i < PageKey.HEX_CHARS; i++) {
            k[KEY_PREFIX.length + i] = (byte) hex.charAt(i);
        }
        return k;
    }

    // ---------------------------------------------------------------- connections

    /** One connection (a cluster connection in a cluster), used by one batch at a time; reconnected when broken. */
    private static final class Link {
        StatefulConnection<byte[], Value> connection;
        BaseRedisAsyncCommands<byte[], Value> commands;

        void connect(AbstractRedisClient client, RedisURI uri) {
            if (client instanceof RedisClusterClient c) {
                StatefulRedisClusterConnection<byte[], Value> conn = c.connect(PageCodec.INSTANCE);
                connection = conn;
                commands = conn.async();
            } else {
                StatefulRedisConnection<byte[], Value> conn = ((RedisClient) client).connect(PageCodec.INSTANCE, uri);
                connection = conn;
                commands = conn.async();
            }
            // commands are written when a batch says so (flushCommands), not one by one
            connection.setAutoFlushCommands(false);
        }

        void close() {
            if (connection != null) {
                if (connection.isOpen()) {
                    connection.closeAsync();
                }
                connection = null;
                commands = null;
            }
        }
    }

    /** Runs one batch on a borrowed connection; a failure or timeout abandons the batch and drops the connection. */
    private void onLink(Batch batch, BatchBody body) throws Exception {
        Link link = links.poll(config.redisTimeoutMs(), TimeUnit.MILLISECONDS);
        if (link == null) {
            throw new TimeoutException("no redis connection free within " + config.redisTimeoutMs() + " ms");
        }
        boolean healthy = false;
        try {
            if (link.connection == null || !link.connection.isOpen()) {
                link.close();
                link.connect(client, uri);
            }
            List<RedisFuture<?>> futures = body.dispatch(link.commands, link.connection);
            link.connection.flushCommands();
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(config.redisTimeoutMs());
            // last first: on one connection replies come in order, so the thread wakes once per batch
            for (int i = futures.size() - 1; i >= 0; i--) {
                if (!futures.get(i).await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    throw new TimeoutException("redis batch of " + futures.size() + " commands not answered within "
                            + config.redisTimeoutMs() + " ms");
                }
            }
            for (int i = 0; i < futures.size(); i++) {
                try {
                    futures.get(i).get();
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof RedisCommandExecutionException)) {
                        throw e.getCause() instanceof Exception x ? x : e;
                    }
                    // a per-key server error (e.g. OOM with maxmemory): this key failed, the batch goes on
                    reportError(describe(e.getCause()));
                    body.failed(i);
                }
            }
            healthy = true;
        } finally {
            if (!healthy) {
                // nothing of this batch touches a host page any more, whatever its commands still do
                batch.abandon();
                link.close();
            }
            links.add(link);
        }
    }

    private interface BatchBody {
        /** Queues the batch's commands; they are written on the connection's flush. */
        List<RedisFuture<?>> dispatch(BaseRedisAsyncCommands<byte[], Value> commands, StatefulConnection<byte[], Value> connection);

        void failed(int i);
    }

    /**
     * One attempt at a batch: the lock its values and outputs take to touch host pages, and whether it was
     * abandoned (timed out or broken), after which they never touch them again.
     */
    private static final class Batch {
        private boolean abandoned;

        synchronized void abandon() {
            abandoned = true;
        }
    }

    // ---------------------------------------------------------------- values

    /** A page to store: encoded straight from host memory into Netty's buffer, then its marker. */
    static final class Value {
        final Batch batch;
        final PageKey key;
        final HostPage page;
        /** Bytes of this and the following commands written with it: what the buffer is sized for when it must grow. */
        final long reserve;

        Value(Batch batch, PageKey key, HostPage page, long reserve) {
            this.batch = batch;
            this.key = key;
            this.page = page;
            this.reserve = reserve;
        }

        int size() {
            return (int) page.byteSize() + CommitMarker.BYTES;
        }

        /** Runs on an event-loop thread when the command is written. */
        void writeTo(ByteBuf target) {
            synchronized (batch) {
                if (batch.abandoned) {
                    // the connection is closed with the command half written: the server discards it
                    throw new IllegalStateException("abandoned batch");
                }
                int start = target.writerIndex();
                int size = (int) page.byteSize();
                if (target.writableBytes() < size + CommitMarker.BYTES) {
                    target.ensureWritable((int) Math.min(Integer.MAX_VALUE - 64, Math.max(reserve, size + CommitMarker.BYTES)));
                }
                for (int p = 0; p < page.partCount(); p++) {
                    target.writeBytes(page.part(p).asByteBuffer());
                }
                // the checksum covers exactly the bytes that go out
                CRC32C crc = CRCS.get();
                crc.reset();
                crc.update(target.nioBuffer(start, size));
                ByteBuffer m = MARKERS.get().clear();
                CommitMarker.write(m, key, size, (int) crc.getValue());
                target.writeBytes(m.flip());
            }
        }
    }

    private static final ThreadLocal<CRC32C> CRCS = ThreadLocal.withInitial(CRC32C::new);
    private static final ThreadLocal<ByteBuffer> MARKERS =
            ThreadLocal.withInitial(() -> ByteBuffer.allocate(CommitMarker.BYTES).order(ByteOrder.LITTLE_ENDIAN));

    /** Keys are {@code byte[]}; values are {@link Value}s written into Netty's buffer, never decoded by the codec. */
    private enum PageCodec implements RedisCodec<byte[], Value>, ToByteBufEncoder<byte[], Value> {
        INSTANCE;

        @Override
        public byte[] decodeKey(ByteBuffer bytes) {
            byte[] b = new byte[bytes.remaining()];
            bytes.get(b);
            return b;
        }

        @Override
        public Value decodeValue(ByteBuffer bytes) {
            throw new UnsupportedOperationException("page values are read by PageOutput");
        }

        @Override
        public ByteBuffer encodeKey(byte[] key) {
            return ByteBuffer.wrap(key);
        }

        @Override
        public ByteBuffer encodeValue(Value value) {
            ByteBuf b = io.netty.buffer.Unpooled.buffer(value.size());
            value.writeTo(b);
            return b.nioBuffer();
        }

        @Override
        public void encodeKey(byte[] key, ByteBuf target) {
            target.writeBytes(key);
        }

        @Override
        public void encodeValue(Value value, ByteBuf target) {
            value.writeTo(target);
        }

        @Override
        public int estimateSize(Object keyOrValue) {
            return keyOrValue instanceof byte[] k ? k.length : ((Value) keyOrValue).size();
        }

        @Override
        public boolean isEstimateExact() {
            return true;
        }
    }

    /**
     * The reply to one GET: checked (size, marker, CRC-32C) where Netty's buffer holds it and copied once into
     * the host page, on the event-loop thread.
     */
    private final class PageOutput extends CommandOutput<byte[], Value, String> {
        private final Batch batch;
        private final PageKey key;
        private final HostPage page;
        private final byte[] status;
        private final int index;

        PageOutput(Batch batch, PageKey key, HostPage page, byte[] status, int index) {
            super(PageCodec.INSTANCE, null);
            this.batch = batch;
            this.key = key;
            this.page = page;
            this.status = status;
            this.index = index;
        }

        @Override
        public void set(ByteBuffer bytes) {
            synchronized (batch) {
                if (batch.abandoned) {
                    return;
                }
                if (bytes == null) {
                    status[index] = MISS;
                    return;
                }
                int at = bytes.position();
                int length = bytes.remaining();
                int data = length - CommitMarker.BYTES;
                String bad = CommitMarker.check(bytes, at + Math.max(0, data), key, length, page.byteSize());
                if (bad == null) {
                    int limit = bytes.limit();
                    CRC32C crc = CRCS.get();
                    crc.reset();
                    crc.update(bytes.limit(at + data));
                    bytes.limit(limit).position(at);
                    if ((int) crc.getValue() != CommitMarker.crc(bytes, at + data)) {
                        bad = "object whose data does not match its checksum";
                    }
                }
                if (bad != null) {
                    status[index] = CORRUPT;
                    reportCorrupt(bad);
                    return;
                }
                page.copyFrom(MemorySegment.ofBuffer(bytes), 0);
                status[index] = OK;
            }
        }
    }

    // ---------------------------------------------------------------- operations

    private static boolean erred(RedisFuture<?> f) {
        return f.toCompletableFuture().isCompletedExceptionally();
    }

    private static CommandArgs<byte[], Value> keyArgs(PageKey key) {
        return new CommandArgs<>(PageCodec.INSTANCE).addKey(redisKey(key));
    }

    @Override
    protected int doExistsPrefix(List<PageKey> keys) throws Exception {
        List<RedisFuture<Long>> lengths = new ArrayList<>(keys.size());
        List<RedisFuture<byte[]>> markers = new ArrayList<>(keys.size());
        onLink(new Batch(), new BatchBody() {
            @Override
            public List<RedisFuture<?>> dispatch(BaseRedisAsyncCommands<byte[], Value> c, StatefulConnection<byte[], Value> conn) {
                List<RedisFuture<?>> all = new ArrayList<>(2 * keys.size());
                for (PageKey key : keys) {
                    RedisFuture<Long> len = c.dispatch(CommandType.STRLEN, new IntegerOutput<>(PageCodec.INSTANCE), keyArgs(key));
                    RedisFuture<byte[]> m = c.dispatch(CommandType.GETRANGE, new ByteArrayOutput<>(PageCodec.INSTANCE),
                            keyArgs(key).add(-CommitMarker.BYTES).add(-1));
                    lengths.add(len);
                    markers.add(m);
                    all.add(len);
                    all.add(m);
                }
                return all;
            }

            @Override
            public void failed(int i) {
            }
        });
        for (int i = 0; i < keys.size(); i++) {
            if (erred(lengths.get(i)) || erred(markers.get(i))) {
                return i;
            }
            long len = lengths.get(i).get();
            if (len == 0) {
                return i;
            }
            byte[] m = markers.get(i).get();
            String bad = m == null || m.length != CommitMarker.BYTES ? "truncated object (" + len + " bytes, no commit marker)"
                    : CommitMarker.check(ByteBuffer.wrap(m), 0, keys.get(i), len, -1);
            if (bad != null) {
                reportCorrupt(bad);
                return i;
            }
        }
        return keys.size();
    }

    @Override
    protected void doPut(List<PageKey> keys, List<HostPage> pages, byte[] status) throws Exception {
        for (HostPage page : pages) {
            if (page.byteSize() + CommitMarker.BYTES > Integer.MAX_VALUE - 16) {
                throw new IllegalArgumentException("a page of " + page.byteSize() + " bytes exceeds a Redis value");
            }
        }
        Batch batch = new Batch();
        List<RedisFuture<String>> replies = new ArrayList<>(keys.size());
        onLink(batch, new BatchBody() {
            @Override
            public List<RedisFuture<?>> dispatch(BaseRedisAsyncCommands<byte[], Value> c, StatefulConnection<byte[], Value> conn) {
                // written in groups of about FLUSH_BYTES: each group is encoded into one buffer that its first
                // value sizes for the whole group (no copy when the buffer would otherwise grow), one write each
                int from = 0;
                while (from < keys.size()) {
                    int to = from;
                    long group = 0;
                    while (to < keys.size() && (to == from || group + pages.get(to).byteSize() <= FLUSH_BYTES)) {
                        group += pages.get(to).byteSize() + CommitMarker.BYTES + COMMAND_BYTES;
                        to++;
                    }
                    for (int i = from; i < to; i++) {
                        Value v = new Value(batch, keys.get(i), pages.get(i), group);
                        group -= pages.get(i).byteSize() + CommitMarker.BYTES + COMMAND_BYTES;
                        replies.add(c.dispatch(CommandType.SET, new StatusOutput<>(PageCodec.INSTANCE),
                                keyArgs(keys.get(i)).addValue(v)));
                    }
                    conn.flushCommands();
                    from = to;
                }
                return new ArrayList<>(replies);
            }

            @Override
            public void failed(int i) {
                status[i] = FAILED;
            }
        });
        for (int i = 0; i < keys.size(); i++) {
            if (!erred(replies.get(i))) {
                status[i] = "OK".equals(replies.get(i).get()) ? OK : FAILED;
            }
        }
    }

    @Override
    protected void doGet(List<PageKey> keys, List<HostPage> pages, byte[] status) throws Exception {
        Batch batch = new Batch();
        onLink(batch, new BatchBody() {
            @Override
            public List<RedisFuture<?>> dispatch(BaseRedisAsyncCommands<byte[], Value> c, StatefulConnection<byte[], Value> conn) {
                List<RedisFuture<?>> all = new ArrayList<>(keys.size());
                for (int i = 0; i < keys.size(); i++) {
                    status[i] = FAILED; // until its reply says otherwise
                    all.add(c.dispatch(CommandType.GET, new PageOutput(batch, keys.get(i), pages.get(i), status, i),
                            keyArgs(keys.get(i))));
                }
                return all;
            }

            @Override
            public void failed(int i) {
                status[i] = FAILED;
            }
        });
    }

    @Override
    protected void doRemove(List<PageKey> keys, byte[] status) throws Exception {
        List<RedisFuture<Long>> replies = new ArrayList<>(keys.size());
        onLink(new Batch(), new BatchBody() {
            @Override
            public List<RedisFuture<?>> dispatch(BaseRedisAsyncCommands<byte[], Value> c, StatefulConnection<byte[], Value> conn) {
                for (PageKey key : keys) {
                    replies.add(c.dispatch(CommandType.DEL, new IntegerOutput<>(PageCodec.INSTANCE), keyArgs(key)));
                }
                return new ArrayList<>(replies);
            }

            @Override
            public void failed(int i) {
                status[i] = FAILED;
            }
        });
        for (int i = 0; i < keys.size(); i++) {
            if (!erred(replies.get(i))) {
                status[i] = replies.get(i).get() > 0 ? OK : MISS;
            }
        }
    }

    @Override
    protected void closeBackend() {
        // a cluster connection closes its node connections itself, before the client would close them again
        for (Link l : links) {
            if (l.connection != null && l.connection.isOpen()) {
                l.connection.close();
            }
        }
        shutdown(client, resources);
    }

    @Override
    public String toString() {
        return "RedisPageStore{" + location.describe() + (cluster ? ", cluster" : "") + (location.tls() ? ", TLS" : "") + "}";
    }
}
