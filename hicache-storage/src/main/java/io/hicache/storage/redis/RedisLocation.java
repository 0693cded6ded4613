package io.hicache.storage.redis;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A parsed {@code redis://} or {@code rediss://} location:
 * {@code redis[s]://[[user]:password@]host:port[,host:port...][/db][?cluster=true|false&cacert=PATH]}.
 * A user-info without a colon is a password (Redis's {@code requirepass}). Percent-escapes in the user and
 * password are decoded. {@link #toString()} never shows the password.
 */
record RedisLocation(boolean tls, String user, String password, List<Endpoint> endpoints, int database,
                     Boolean cluster, Path caCertificate) {

    record Endpoint(String host, int port) {
        @Override
        public String toString() {
            return host + ":" + port;
        }
    }

    static RedisLocation parse(String location) {
        boolean tls;
        String rest;
        if (location.startsWith("rediss://")) {
            tls = true;
            rest = location.substring("rediss://".length());
        } else if (location.startsWith("redis://")) {
            tls = false;
            rest = location.substring("redis://".length());
        } else {
            throw new IllegalArgumentException("redis location must start with redis:// or rediss://");
        }
        String user = null;
        String password = null;
        int at = rest.lastIndexOf('@');
        if (at >= 0) {
            String info = rest.substring(0, at);
            rest = rest.substring(at + 1);
            int colon = info.indexOf(':');
            if (colon < 0) {
                password = decode(info);
            } else {
                user = colon == 0 ? null : decode(info.substring(0, colon));
                password = decode(info.substring(colon + 1));
            }
            if (password != null && password.isEmpty()) {
                password = null;
            }
        }
        String query = null;
        int q = rest.indexOf('?');
        if (q >= 0) {
            query = rest.substring(q + 1);
            rest = rest.substring(0, q);
        }
        int database = 0;
        int slash = rest.indexOf('/');
        if (slash >= 0) {
            String db = rest.substring(slash + 1);
            rest = rest.substring(0, slash);
            if (!db.isEmpty()) {
                try {
                    database = Integer.parseInt(db);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("redis location: database must be a number, was '" + db + "'");
                }
                if (database < 0) {
                    throw new IllegalArgumentException("redis location: database must be >= 0, was " + database);
                }
            }
        }
        List<Endpoint> endpoints = new ArrayList<>();
        for (String hp : rest.split(",")) {
            if (hp.isEmpty()) {
                continue;
            }
            int colon = hp.lastIndexOf(':');
            String host = colon < 0 ? hp : hp.substring(0, colon);
            int port = 6379;
            if (colon >= 0) {
                try {
                    port = Integer.parseInt(hp.substring(colon + 1));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("redis location: port of " + host + " must be a number in [1, 65535]");
                }
            }
            if (host.isEmpty() || host.contains("[") || host.contains(":")) {
                throw new IllegalArgumentException("redis location: host must be a name or IPv4 address, was '" + host + "'");
            }
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("redis location: port must be in [1, 65535], was " + port);
            }
            endpoints.add(new Endpoint(host, port));
        }
        if (endpoints.isEmpty()) {
            throw new IllegalArgumentException("redis location names no host:port");
        }
        Boolean cluster = null;
        Path ca = null;
        if (query != null && !query.isEmpty()) {
            for (String kv : query.split("&")) {
                int eq = kv.indexOf('=');
                String k = eq < 0 ? kv : kv.substring(0, eq);
                String v = eq < 0 ? "" : decode(kv.substring(eq + 1));
                switch (k) {
                    case "cluster" -> {
                        if (!v.equals("true") && !v.equals("false")) {
                            throw new IllegalArgumentException("redis location: cluster must be true or false, was '" + v + "'");
                        }
                        cluster = Boolean.valueOf(v);
                    }
                    case "cacert" -> ca = Path.of(v);
                    default -> throw new IllegalArgumentException("redis location: unknown parameter '" + k
                            + "' (known: cluster, cacert)");
                }
            }
        }
        return new RedisLocation(tls, user, password, List.copyOf(endpoints), database, cluster, ca);
    }

    private static String decode(String s) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == '%' && i + 2 < s.length() && Character.digit(s.charAt(i + 1), 16) >= 0
                    && Character.digit(s.charAt(i + 2), 16) >= 0) {
                out.write(Character.digit(s.charAt(i + 1), 16) << 4 | Character.digit(s.charAt(i + 2), 16));
                i += 3;
                continue;
            }
            int cp = s.codePointAt(i);
            byte[] b = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
            out.write(b, 0, b.length);
            i += Character.charCount(cp);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** Scheme and endpoints only: what logs and messages show. */
    String describe() {
        return (tls ? "rediss://" : "redis://") + (user != null ? user + "@" : "")
                + String.join(",", endpoints.stream().map(Endpoint::toString).toList())
                + (database != 0 ? "/" + database : "");
    }

    @Override
    public String toString() {
        return describe() + (password != null ? " (password set)" : "");
    }
}
