package io.hicache.storage.file;

import io.hicache.storage.PageStore;
import io.hicache.storage.PageStoreContract;
import io.hicache.storage.StoreConfig;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

class FilePageStoreContractTest extends PageStoreContract {
    @TempDir
    Path dir;

    @Override
    protected PageStore openStore(StoreConfig config) {
        try {
            return new FilePageStore(dir.resolve("l3"), config);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
