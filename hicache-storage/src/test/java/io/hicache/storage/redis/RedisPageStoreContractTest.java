package io.hicache.storage.redis;

import io.hicache.storage.PageStore;
import io.hicache.storage.PageStoreContract;
import io.hicache.storage.PageStores;
import io.hicache.storage.StoreConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisPageStoreContractTest extends PageStoreContract {
    @TempDir
    static Path dir;
    private static RedisServerProcess server;

    @BeforeAll
    static void startServer() {
        server = RedisServerProcess.start(dir);
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @Override
    protected PageStore openStore(StoreConfig config) {
        return PageStores.open("redis://127.0.0.1:" + server.port, config);
    }
}
