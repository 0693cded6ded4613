package io.hicache.storage.redis;

import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import io.hicache.storage.StoreConfig;
import io.hicache.storage.StoreStatus;
import io.hicache.storage.internal.AbstractPageStore;
import io.hicache.storage.internal.CommitMarker;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.BuilderFactory;
import redis.clients.jedis.ClusterCommandArguments;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.PipeliningBase;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.args.Rawable;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisDataException;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.net.ConnectException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.zip.CRC32C;

/**
 * The {@code redis} backend: Redis or Valkey, one server or a Redis Cluster, through Jedis.
 *
 * <p><b>Objects.</b> Key {@code hicache:<64 hex>}; value = the page's bytes followed by the 64-byte
 * {@link CommitMarker} (written last, CRC-32C of the data, the key). One {@code SET} writes the whole
 * value; the server applies a command atomically and its append-only file replays whole commands only,
 * so a value is either absent or complete: the staged state of the write protocol is the client's
 * buffer, the commit is the {@code SET}. A reader checks the marker, size and CRC; anything else
 * (foreign value, wrong size) is {@link StoreStatus#CORRUPT}. Two writers of a key both succeed and
 * the last {@code SET} leaves one valid object (data and marker cannot pair across writers).
 *
 * <p><b>Batches</b> are pipelined: one round trip per batch (per node in a cluster). Replies are read in 1 MiB
 * steps (the system property {@code jedis.bufferSize.input}, set when absent); on one server a get lands each
 * value in its host page as its reply arrives ({@code LandingConnection}). A connection error
 * fails the attempt and the base class retries with backoff. Connections come from a pool of
 * {@link StoreConfig#redisConnections()}; a connection broken by a server restart fails one attempt and
 * is dropped, and the retry reconnects.
 *
 * <p><b>Security.</b> {@code AUTH} with a password or an ACL user and password (from the location or
 * {@link StoreConfig.Builder#redisCredentials}), TLS with {@code rediss://} (server certificate and host name
 * verified against the JVM trust store or {@link StoreConfig#redisTlsCaCertificate()} / {@code ?cacert=}).
 * {@link #open} authenticates once: a wrong password or an untrusted certificate is one
 * {@link IllegalStateException} naming the endpoint and the cause, never the password. Credentials
 * never appear in logs, messages, {@link #toString()} or stats.
 *
 * <p>Thread-safe: Jedis's pooled clients are thread-safe; each batch borrows one connection per node.
 */
public final class RedisPageStore extends AbstractPageStore {
    private static final Logger LOG = LoggerFactory.getLogger(RedisPageStore.class);
    private static final byte[] KEY_PREFIX = "hicache:".getBytes(StandardCharsets.US_ASCII);
    /** The key of the store's epoch ({@link #epoch()}): not a page key (those are {@code hicache:<64 hex>}). */
    static final byte[] EPOCH_KEY = "hicache:epoch".getBytes(StandardCharsets.US_ASCII);
    private static final java.security.SecureRandom EPOCH_RANDOM = new java.security.SecureRandom();

    static {
        // Jedis moves bytes through per-connection buffers (8 KiB unless set): pages are large, so read and
        // write in 1 MiB steps. Read once by Jedis when its stream classes load; an explicit setting wins.
        if (System.getProperty("jedis.bufferSize") == null) {
            for (String p : new String[] {"jedis.bufferSize.input", "jedis.bufferSize.output"}) {
                if (System.getProperty(p) == null) {
                    System.setProperty(p, Integer.toString(1 << 20));
                }
            }
        }
    }
    private static final byte OK = (byte) StoreStatus.OK.ordinal();
    private static final byte MISS = (byte) StoreStatus.MISS.ordinal();
    private static final byte FAILED = (byte) StoreStatus.FAILED.ordinal();
    private static final byte CORRUPT = (byte) StoreStatus.CORRUPT.ordinal();

    private final RedisLocation location;
    private final UnifiedJedis client;
    private final boolean cluster;
    private final ThreadLocal<CRC32C> crcs = ThreadLocal.withInitial(CRC32C::new);
    /** A single server's pipeline writes each command as it is appended, so one value buffer per thread serves a batch. */
    private final ThreadLocal<byte[]> values = new ThreadLocal<>();
    private volatile long usedMemory = -1;

    private RedisPageStore(RedisLocation location, StoreConfig config, UnifiedJedis client, boolean cluster) {
        super("redis", "L3 redis store " + location.describe(), config);
        this.location = location;
        this.client = client;
        this.cluster = cluster;
        addSecret(location.password());
        addSecret(config.redisPassword());
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
        DefaultJedisClientConfig.Builder cb = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis((int) config.redisTimeoutMs())
                .socketTimeoutMillis((int) config.redisTimeoutMs())
                .clientName("hicache-l3");
        if (user != null) {
            cb.user(user);
        }
        if (password != null) {
            cb.password(password);
        }
        if (loc.database() != 0) {
            cb.database(loc.database());
        }
        if (loc.tls()) {
            SSLParameters params = new SSLParameters();
            params.setEndpointIdentificationAlgorithm("HTTPS");
            cb.ssl(true).sslParameters(params);
            if (ca != null) {
                cb.sslSocketFactory(trusting(ca));
            }
        }
        JedisClientConfig clientConfig = cb.build();
        GenericObjectPoolConfig<Connection> pool = new GenericObjectPoolConfig<>();
        pool.setMaxTotal(config.redisConnections());
        pool.setMaxIdle(config.redisConnections());
        pool.setMinIdle(0);
        // no PING per borrow: a connection broken by a server restart fails one attempt and is dropped,
        // and the retry takes a fresh one
        pool.setTestOnBorrow(false);
        pool.setBlockWhenExhausted(true);
        pool.setMaxWait(Duration.ofMillis(config.redisTimeoutMs()));
        pool.setJmxEnabled(false);

        RedisLocation.Endpoint first = loc.endpoints().get(0);
        UnifiedJedis client = null;
        boolean cluster;
        try {
            // one plain connection first: it surfaces the server's own answer (NOAUTH, WRONGPASS, TLS)
            // where a pool would only say that it could not validate a connection
            boolean enabled;
            try (redis.clients.jedis.Jedis direct = new redis.clients.jedis.Jedis(
                    new HostAndPort(first.host(), first.port()), clientConfig)) {
                direct.ping();
                enabled = loc.cluster() != null ? loc.cluster() : direct.info("cluster").contains("cluster_enabled:1");
            }
            cluster = enabled;
            if (cluster) {
                Set<HostAndPort> nodes = new HashSet<>();
                for (RedisLocation.Endpoint ep : loc.endpoints()) {
                    nodes.add(new HostAndPort(ep.host(), ep.port()));
                }
                client = new JedisCluster(nodes, clientConfig, 3, pool);
            } else {
                if (loc.endpoints().size() > 1) {
                    throw new IllegalArgumentException("redis location names " + loc.endpoints().size()
                            + " servers but " + first + " is not in cluster mode; name one server, or a cluster");
                }
                // connections that can land a GET's value in a host page (see streamGet)
                client = new JedisPooled(
                        new LandingConnection.Factory(new HostAndPort(first.host(), first.port()), clientConfig), pool);
            }
            client.ping();
        } catch (IllegalArgumentException e) {
            throw e;
        } catch (RuntimeException e) {
            if (client != null) {
                client.close();
            }
            throw new IllegalStateException(startupMessage(loc, user, e, password));
        }
        RedisPageStore store = new RedisPageStore(loc, config, client, cluster);
        LOG.info("L3 redis store {} open ({}{}, {} connections per node)", loc.describe(),
                cluster ? "cluster" : "single server", loc.tls() ? ", TLS" : "", config.redisConnections());
        return store;
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
        if (e instanceof JedisAccessControlException || contains(e, "WRONGPASS") || contains(e, "NOAUTH")
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

    private static javax.net.ssl.SSLSocketFactory trusting(Path caPem) {
        try (InputStream in = Files.newInputStream(caPem)) {
            KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
            ks.load(null, null);
            int i = 0;
            for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                ks.setCertificateEntry("ca-" + i++, c);
            }
            if (i == 0) {
                throw new IllegalArgumentException("redis TLS CA file " + caPem + " holds no PEM certificate");
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(ks);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(null, tmf.getTrustManagers(), null);
            return ctx.getSocketFactory();
        } catch (IllegalArgumentException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalArgumentException("redis TLS CA file " + caPem + " cannot be read as PEM certificates: "
                    + e.getClass().getSimpleName() + ": " + e.getMessage());
        }
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

    /**
     * The value a put stores for {@code page} under {@code key}: data then marker. With {@code reuse}, the
     * thread's previous value array is refilled when it has the right size (a single server's pipeline has
     * written the previous command out before the next is appended); a cluster pipeline holds every value
     * until it syncs, so it gets fresh arrays.
     */
    byte[] encode(PageKey key, HostPage page, boolean reuse) {
        long size = page.byteSize();
        if (size + CommitMarker.BYTES > Integer.MAX_VALUE - 16) {
            throw new IllegalArgumentException("a page of " + size + " bytes exceeds a Redis value");
        }
        int length = (int) size + CommitMarker.BYTES;
        byte[] v = reuse ? values.get() : null;
        if (v == null || v.length != length) {
            v = new byte[length];
            if (reuse) {
                values.set(v);
            }
        }
        MemorySegment dst = MemorySegment.ofArray(v);
        page.copyTo(dst, 0);
        CRC32C crc = crcs.get();
        crc.reset();
        crc.update(v, 0, (int) size);
        ByteBuffer m = ByteBuffer.wrap(v, (int) size, CommitMarker.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        CommitMarker.write(m, key, size, (int) crc.getValue());
        return v;
    }

    /** A value argument that Jedis writes as it is (its {@code byte[]} arguments are copied first). */
    private static final class Value implements Rawable {
        private final byte[] raw;

        Value(byte[] raw) {
            this.raw = raw;
        }

        @Override
        public byte[] getRaw() {
            return raw;
        }

        @Override
        public boolean equals(Object o) {
            return o == this;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(this);
        }
    }

    private PipeliningBase pipeline() {
        return client.pipelined();
    }

    private static void close(PipeliningBase p) {
        ((AbstractPipeline) p).close();
    }

    private static void sync(PipeliningBase p) {
        ((AbstractPipeline) p).sync();
    }

    // ---------------------------------------------------------------- operations

    @Override
    protected int doExistsPrefix(List<PageKey> keys) {
        List<Response<Long>> lengths = new ArrayList<>(keys.size());
        List<Response<byte[]>> markers = new ArrayList<>(keys.size());
        PipeliningBase p = pipeline();
        try {
            for (PageKey key : keys) {
                byte[] k = redisKey(key);
                lengths.add(p.strlen(k));
                markers.add(p.getrange(k, -CommitMarker.BYTES, -1));
            }
            sync(p);
        } finally {
            close(p);
        }
        for (int i = 0; i < keys.size(); i++) {
            long len = lengths.get(i).get();
            if (len == 0) {
                return i;
            }
            byte[] m = markers.get(i).get();
            String bad = m.length != CommitMarker.BYTES ? "truncated object (" + len + " bytes, no commit marker)"
                    : CommitMarker.check(ByteBuffer.wrap(m), 0, keys.get(i), len, -1);
            if (bad != null) {
                reportCorrupt(bad);
                return i;
            }
        }
        return keys.size();
    }

    @Override
    protected void doPut(List<PageKey> keys, List<HostPage> pages, byte[] status) {
        List<Response<String>> replies = new ArrayList<>(keys.size());
        PipeliningBase p = pipeline();
        try {
            for (int i = 0; i < keys.size(); i++) {
                // the value as a Rawable of our own: Jedis's byte[] arguments copy the array first
                // (a cluster's arguments compute the key's hash slot, by which its pipeline picks the node)
                CommandArguments set = (cluster ? new ClusterCommandArguments(Protocol.Command.SET)
                        : new CommandArguments(Protocol.Command.SET)).key(redisKey(keys.get(i)))
                        .add(new Value(encode(keys.get(i), pages.get(i), !cluster)));
                if (config.redisTtlSeconds() > 0) {
                    set.add(Protocol.Keyword.EX).add(config.redisTtlSeconds());
                }
                replies.add(p.executeCommand(new CommandObject<>(set, BuilderFactory.STRING)));
            }
            sync(p);
        } finally {
            close(p);
        }
        for (int i = 0; i < keys.size(); i++) {
            try {
                status[i] = "OK".equals(replies.get(i).get()) ? OK : FAILED;
            } catch (JedisDataException e) {
                // a per-key server error (e.g. OOM with maxmemory): this key failed, the batch goes on
                reportError(describe(e));
                status[i] = FAILED;
            }
        }
    }

    @Override
    protected void doGet(List<PageKey> keys, List<HostPage> pages, byte[] status) {
        if (client instanceof JedisPooled pooled) {
            streamGet(pooled, keys, pages, status);
            return;
        }
        // a cluster pipeline routes each key to its node and hands the replies over only when all have come
        List<Response<byte[]>> values = new ArrayList<>(keys.size());
        PipeliningBase p = pipeline();
        try {
            for (PageKey key : keys) {
                values.add(p.get(redisKey(key)));
            }
            sync(p);
        } finally {
            close(p);
        }
        for (int i = 0; i < keys.size(); i++) {
            byte[] v;
            try {
                v = values.get(i).get();
            } catch (JedisDataException e) {
                reportError(describe(e));
                status[i] = FAILED;
                continue;
            }
            status[i] = v == null ? MISS : land(v, v.length, keys.get(i), pages.get(i));
        }
    }

    /**
     * One server: the batch's GETs leave together (one pipeline on one connection) and each reply is checked
     * and copied into its page as soon as it has been read, while the server is still sending the ones after
     * it: reading and landing overlap, and each value is copied while it is still in the CPU cache.
     */
    private void streamGet(JedisPooled pooled, List<PageKey> keys, List<HostPage> pages, byte[] status) {
        try (Connection c = pooled.getPool().getResource()) {
            LandingConnection landing = (LandingConnection) c;
            for (PageKey key : keys) {
                c.sendCommand(new CommandArguments(Protocol.Command.GET).key(redisKey(key)));
            }
            for (int i = 0; i < keys.size(); i++) {
                Object reply;
                try {
                    reply = landing.readInto(this, keys.get(i), pages.get(i));
                } catch (JedisDataException e) {
                    // a per-key error reply: the ones after it still follow on the connection
                    reportError(describe(e));
                    status[i] = FAILED;
                    continue;
                }
                status[i] = reply == null ? MISS : reply instanceof Byte b ? b : FAILED;
            }
        }
    }

    /**
     * Checks one stored value (its first {@code length} bytes of {@code v}) and copies its data into
     * {@code page}; returns the key's status (an invalid value is reported and is {@link StoreStatus#CORRUPT}).
     */
    byte land(byte[] v, int length, PageKey key, HostPage page) {
        String bad;
        int data = length - CommitMarker.BYTES;
        if (data < 0) {
            bad = "truncated object (" + length + " bytes, no commit marker)";
        } else {
            ByteBuffer m = ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN);
            bad = CommitMarker.check(m, data, key, length, page.byteSize());
            if (bad == null) {
                CRC32C crc = crcs.get();
                crc.reset();
                crc.update(v, 0, data);
                if ((int) crc.getValue() != CommitMarker.crc(m, data)) {
                    bad = "object whose data does not match its checksum";
                }
            }
        }
        if (bad != null) {
            reportCorrupt(bad);
            return CORRUPT;
        }
        page.copyFrom(MemorySegment.ofArray(v), 0);
        return OK;
    }

    /**
     * The value of {@link #EPOCH_KEY}, set to a fresh random one when absent ({@code SET NX}, so every client of one
     * store agrees): a server restarted without its data, or flushed, answers a new epoch. In a cluster the key
     * lives on one node, so only that node's losses are seen here (the tier's age bound covers the rest).
     */
    @Override
    protected long doEpoch() {
        byte[] fresh = new byte[16];
        EPOCH_RANDOM.nextBytes(fresh);
        client.set(EPOCH_KEY, java.util.HexFormat.of().formatHex(fresh).getBytes(StandardCharsets.US_ASCII),
                redis.clients.jedis.params.SetParams.setParams().nx());
        byte[] v = client.get(EPOCH_KEY);
        usedMemory = usedMemory(client.info("memory"));
        if (v == null) {
            return EPOCH_UNKNOWN; // removed between the two commands: asked again later
        }
        long h = 1125899906842597L;
        for (byte b : v) {
            h = 31 * h + b;
        }
        return h == EPOCH_UNKNOWN || h == 0 ? 1 : h;
    }

    /** {@code used_memory} of an {@code INFO memory} reply, or -1 when it has none. */
    static long usedMemory(String info) {
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("used_memory:")) {
                try {
                    return Long.parseLong(line.substring("used_memory:".length()).trim());
                } catch (NumberFormatException e) {
                    return -1;
                }
            }
        }
        return -1;
    }

    /**
     * The server's {@code used_memory} as of the last {@link #epoch()} (the tier asks every second by default): what
     * the server holds, its own overhead and other clients' keys included; -1 before the first answer. In a cluster,
     * the node that holds the epoch key.
     */
    @Override
    protected long storedBytes() {
        return usedMemory;
    }

    @Override
    protected void doRemove(List<PageKey> keys, byte[] status) {
        List<Response<Long>> replies = new ArrayList<>(keys.size());
        PipeliningBase p = pipeline();
        try {
            for (PageKey key : keys) {
                replies.add(p.del(redisKey(key)));
            }
            sync(p);
        } finally {
            close(p);
        }
        for (int i = 0; i < keys.size(); i++) {
            status[i] = replies.get(i).get() > 0 ? OK : MISS;
        }
    }

    @Override
    protected void closeBackend() {
        client.close();
    }

    @Override
    public String toString() {
        return "RedisPageStore{" + location.describe() + (cluster ? ", cluster" : "") + (location.tls() ? ", TLS" : "") + "}";
    }
}
