package io.hicache.storage.redis;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** A throw-away CA and a server certificate for 127.0.0.1, made with the {@code openssl} command. */
record TlsFiles(Path ca, Path cert, Path key) {

    static TlsFiles create(Path dir) throws Exception {
        String openssl = RedisServer.binary("openssl");
        Path caKey = dir.resolve("ca.key");
        Path ca = dir.resolve("ca.crt");
        Path key = dir.resolve("server.key");
        Path csr = dir.resolve("server.csr");
        Path cert = dir.resolve("server.crt");
        Path ext = dir.resolve("san.ext");
        Files.writeString(ext, "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
        run(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", caKey.toString(), "-out", ca.toString(),
                "-days", "2", "-subj", "/CN=hicache-test-ca");
        run(openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key.toString(), "-out", csr.toString(),
                "-subj", "/CN=127.0.0.1");
        run(openssl, "x509", "-req", "-in", csr.toString(), "-CA", ca.toString(), "-CAkey", caKey.toString(),
                "-CAcreateserial", "-out", cert.toString(), "-days", "2", "-extfile", ext.toString());
        return new TlsFiles(ca, cert, key);
    }

    private static void run(String... command) {
        String out = RedisServer.run(List.of(command));
        if (out.toLowerCase().contains("error")) {
            throw new AssertionError("openssl failed: " + out);
        }
    }
}
