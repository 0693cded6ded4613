package io.hicache.storage.redis;

import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import org.apache.commons.pool2.PooledObject;
import org.apache.commons.pool2.impl.DefaultPooledObject;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionFactory;
import redis.clients.jedis.DefaultJedisSocketFactory;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.util.RedisInputStream;

/**
 * A Jedis connection that lands a GET's value in a host page without an array per value: while
 * {@link #readInto} waits for a reply, a bulk string is read into one array the connection reuses, then
 * checked and copied into the page by the store. Every other reply (and every other use of the connection:
 * AUTH, PING, pipelines) goes through Jedis's own protocol reader. Jedis still owns the socket, TLS, AUTH,
 * pooling and error replies.
 *
 * <p>Thread ownership: one thread at a time, the one that borrowed the connection from the pool.
 */
final class LandingConnection extends Connection {
    private byte[] scratch = new byte[0];
    private RedisPageStore store;
    private PageKey key;
    private HostPage page;

    LandingConnection(HostAndPort server, JedisClientConfig config) {
        super(new DefaultJedisSocketFactory(server, config), config);
    }

    /**
     * Reads the next reply: a value is landed in {@code page} and its status returned as a {@link Byte}
     * ({@code RedisPageStore}'s status codes); an absent key is {@code null}.
     *
     * @throws redis.clients.jedis.exceptions.JedisDataException       for an error reply (the connection stays usable)
     * @throws redis.clients.jedis.exceptions.JedisConnectionException when the connection breaks
     */
    Object readInto(RedisPageStore store, PageKey key, HostPage page) {
        this.store = store;
        this.key = key;
        this.page = page;
        try {
            return getOne();
        } finally {
            this.store = null;
            this.key = null;
            this.page = null;
        }
    }

    @Override
    protected Object protocolRead(RedisInputStream is) {
        if (store == null || !is.peek((byte) '$')) {
            return super.protocolRead(is);
        }
        is.readByte();
        int length = is.readIntCrLf();
        if (length < 0) {
            return null; // RESP2 null bulk string: no such key
        }
        if (scratch.length < length) {
            scratch = new byte[length];
        }
        for (int off = 0; off < length; ) {
            off += is.read(scratch, off, length - off);
        }
        if (is.readByte() != '\r' || is.readByte() != '\n') {
            throw new JedisConnectionException("bulk reply not terminated by CRLF");
        }
        return store.land(scratch, length, key, page);
    }

    /** Makes {@link LandingConnection}s for a Jedis pool; everything else is Jedis's own factory. */
    static final class Factory extends ConnectionFactory {
        private final HostAndPort server;
        private final JedisClientConfig config;

        Factory(HostAndPort server, JedisClientConfig config) {
            super(server, config);
            this.server = server;
            this.config = config;
        }

        @Override
        public PooledObject<Connection> makeObject() {
            return new DefaultPooledObject<>(new LandingConnection(server, config));
        }
    }
}
