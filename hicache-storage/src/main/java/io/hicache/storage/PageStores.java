package io.hicache.storage;

import io.hicache.storage.file.FilePageStore;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/**
 * Opens a {@link PageStore} from a location string:
 * <ul>
 *   <li>{@code file:DIR} (or {@code file://DIR}): the local file backend in directory {@code DIR};</li>
 *   <li>{@code redis://[[user]:password@]host:port[/db]}: a Redis/Valkey server; {@code rediss://} for TLS;
 *       several {@code host:port} separated by commas, or {@code ?cluster=true}, for Redis Cluster.</li>
 * </ul>
 * Credentials in the location are used to connect and never printed: {@link #redact} is what logs show.
 */
public final class PageStores {
    private PageStores() {
    }

    /**
     * Opens the store named by {@code location}; for Redis this connects and authenticates once, so a wrong
     * password or an untrusted certificate fails here with one clear message.
     *
     * @throws IllegalArgumentException naming the problem (never the password) when the location is
     *                                  malformed or the scheme unknown
     * @throws IllegalStateException    with one line naming the endpoint and the cause (never the password) when
     *                                  a Redis server is unreachable, refuses the credentials or its certificate
     *                                  is not trusted
     * @throws java.io.UncheckedIOException when a file store's directory cannot be created, tightened or read
     */
    public static PageStore open(String location, StoreConfig config) {
        if (location == null || location.isBlank()) {
            throw new IllegalArgumentException("storage location must be file:DIR, redis://HOST:PORT or rediss://HOST:PORT");
        }
        if (location.startsWith("file:")) {
            String dir = location.startsWith("file://") ? location.substring("file://".length()) : location.substring("file:".length());
            if (dir.isEmpty()) {
                throw new IllegalArgumentException("storage location file: needs a directory, e.g. file:/var/cache/hicache");
            }
            try {
                return new FilePageStore(Path.of(dir), config);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot open file store " + dir + ": " + e.getMessage(), e);
            }
        }
        if (location.startsWith("redis://") || location.startsWith("rediss://")) {
            return io.hicache.storage.redis.RedisPageStore.open(location, config);
        }
        throw new IllegalArgumentException("storage location " + redact(location)
                + " has an unknown scheme; use file:DIR, redis://HOST:PORT or rediss://HOST:PORT");
    }

    /** {@code location} with any password in its user-info replaced by {@code ***} (safe to print). */
    public static String redact(String location) {
        if (location == null) {
            return null;
        }
        int scheme = location.indexOf("://");
        if (scheme < 0) {
            return location;
        }
        int start = scheme + 3;
        int at = location.lastIndexOf('@');
        if (at < start) {
            return location;
        }
        String userInfo = location.substring(start, at);
        int colon = userInfo.indexOf(':');
        String user = colon < 0 ? userInfo : userInfo.substring(0, colon);
        // "user@" alone may be a bare password (redis://password@host): hide it too
        return location.substring(0, start) + (colon < 0 ? "***" : user + ":***") + location.substring(at);
    }
}
