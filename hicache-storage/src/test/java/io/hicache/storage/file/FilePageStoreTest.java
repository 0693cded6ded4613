package io.hicache.storage.file;

import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import io.hicache.storage.PageStore;
import io.hicache.storage.PageStores;
import io.hicache.storage.StoreConfig;
import io.hicache.storage.StoreOp;
import io.hicache.storage.StoreResult;
import io.hicache.storage.StoreStatus;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import static io.hicache.storage.StoreTesting.await;
import static io.hicache.storage.StoreTesting.blanks;
import static io.hicache.storage.StoreTesting.keys;
import static io.hicache.storage.StoreTesting.page;
import static io.hicache.storage.StoreTesting.pages;
import static io.hicache.storage.StoreTesting.pollUntil;
import static io.hicache.storage.StoreTesting.sameBytes;
import static io.hicache.storage.StoreTesting.twoPartPage;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class FilePageStoreTest {
    private static final long PAGE = 16 * 1024;

    @TempDir
    Path tmp;
    private final Arena arena = Arena.ofShared();
    private final List<PageStore> open = new ArrayList<>();

    @AfterEach
    void tearDown() {
        open.forEach(PageStore::close);
        arena.close();
    }

    private FilePageStore store(StoreConfig config) throws IOException {
        FilePageStore s = new FilePageStore(tmp.resolve("l3"), config);
        open.add(s);
        return s;
    }

    private FilePageStore store() throws IOException {
        return store(StoreConfig.defaults());
    }

    @Test
    void putThenGetReturnsTheSameBytesAndExistsCountsTheCommittedPrefix() throws IOException {
        FilePageStore s = store();
        List<PageKey> keys = keys(8, 1);
        List<HostPage> src = new ArrayList<>(pages(arena, 4, PAGE, 10));
        src.addAll(List.of(twoPartPage(arena, PAGE / 2, 7), twoPartPage(arena, PAGE / 2, 8),
                page(arena, 1000, 9), page(arena, 1, 10)));
        assertThat(await(s.existsPrefix(keys))).isZero();

        StoreResult put = await(s.put(keys.subList(0, 6), src.subList(0, 6)));
        assertThat(put.allOk()).as(put.toString()).isTrue();
        assertThat(await(s.existsPrefix(keys))).isEqualTo(6);

        List<HostPage> dst = blanks(arena, src);
        StoreResult got = await(s.get(keys, dst));
        assertThat(got.leadingOk()).isEqualTo(6);
        assertThat(got.status(6)).isEqualTo(StoreStatus.MISS);
        for (int i = 0; i < 6; i++) {
            assertThat(sameBytes(src.get(i), dst.get(i))).as("page " + i).isTrue();
        }
        assertThat(s.stats().getHitPages()).isEqualTo(6);
        assertThat(s.stats().missPages()).isEqualTo(2);
        assertThat(s.stats().putBytes()).isEqualTo(4 * PAGE + 2 * PAGE);

        StoreResult removed = await(s.remove(keys.subList(0, 2)));
        assertThat(removed.allOk()).isTrue();
        assertThat(await(s.existsPrefix(keys))).isZero();
        assertThat(await(s.remove(keys.subList(0, 1))).status(0)).isEqualTo(StoreStatus.MISS);
    }

    @Test
    void badCallsFailAtTheCallNamingTheProblem() throws IOException {
        FilePageStore s = store(StoreConfig.builder().maxBatchPages(4).build());
        assertThatThrownBy(() -> s.existsPrefix(keys(5, 1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxBatchPages 4");
        assertThatThrownBy(() -> s.put(keys(2, 1), pages(arena, 1, PAGE, 1)))
                .hasMessageContaining("1 host pages for 2 keys");
        assertThatThrownBy(() -> StoreConfig.builder().maxBatchPages(0).build()).hasMessageContaining("maxBatchPages");
        assertThatThrownBy(() -> PageStores.open("ftp://x", StoreConfig.defaults())).hasMessageContaining("unknown scheme");
    }

    @Test
    void directoryIsOwnerOnlyAndFilesAreNamedOnlyByKeys() throws IOException {
        Path dir = tmp.resolve("l3");
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        FilePageStore s = store();
        await(s.put(keys(3, 2), pages(arena, 3, PAGE, 1)));
        for (Path d : List.of(dir, dir.resolve("objects"), dir.resolve("staging"))) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(d))).isEqualTo("rwx------");
        }
        try (var files = Files.walk(dir.resolve("objects"))) {
            List<Path> objects = files.filter(Files::isRegularFile).toList();
            assertThat(objects).hasSize(3);
            for (Path p : objects) {
                assertThat(PageKey.isWellFormedHex(p.getFileName().toString())).isTrue();
                assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(p))).isEqualTo("rw-------");
                assertThat(Files.size(p)).isEqualTo(PAGE + FilePageStore.MARKER_BYTES);
            }
        }
    }

    @Test
    void restartFindsEveryCommittedKeyAndNoUncommittedOneAndCollectsInterruptedWrites() throws IOException {
        List<PageKey> committed = keys(10, 3);
        List<PageKey> uncommitted = keys(3, 4);
        List<HostPage> src = pages(arena, 10, PAGE, 100);
        FilePageStore first = store();
        assertThat(await(first.put(committed, src)).allOk()).isTrue();
        first.close();
        // interrupted writes: staging files of a dead writer and of this process's earlier life
        Path staging = tmp.resolve("l3/staging");
        long deadPid = deadPid();
        Files.write(staging.resolve(uncommitted.get(0).hex() + "." + deadPid + ".ab12-1.tmp"), new byte[(int) PAGE]);
        Files.write(staging.resolve(uncommitted.get(1).hex() + "." + ProcessHandle.current().pid() + ".cd34-9.tmp"), new byte[100]);
        // a write torn before its marker, left at the final name (a crash on a file system without atomic rename)
        Path torn = tmp.resolve("l3/objects/" + uncommitted.get(2).hex().substring(0, 2) + "/" + uncommitted.get(2).hex());
        Files.createDirectories(torn.getParent());
        Files.write(torn, new byte[(int) PAGE / 2]);

        FilePageStore second = store();
        assertThat(second.collectedStagingFilesAtOpen()).isEqualTo(2);
        try (var left = Files.list(staging)) {
            assertThat(left.count()).isZero();
        }
        assertThat(await(second.existsPrefix(committed))).isEqualTo(10);
        List<HostPage> dst = blanks(arena, src);
        assertThat(await(second.get(committed, dst)).allOk()).isTrue();
        for (int i = 0; i < 10; i++) {
            assertThat(sameBytes(src.get(i), dst.get(i))).isTrue();
        }
        for (PageKey k : uncommitted) {
            assertThat(await(second.existsPrefix(List.of(k)))).isZero();
        }
        StoreResult tornGet = await(second.get(List.of(uncommitted.get(2)), blanks(arena, src.subList(0, 1))));
        assertThat(tornGet.status(0)).isEqualTo(StoreStatus.CORRUPT);
        assertThat(second.stats().corruptPages()).isPositive();
    }

    private static long deadPid() {
        try {
            Process p = new ProcessBuilder("true").start();
            p.waitFor();
            long pid = p.pid();
            assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)).isFalse();
            return pid;
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @ParameterizedTest(name = "O_DIRECT {0}")
    @ValueSource(booleans = {false, true})
    void foreignTruncatedWrongSizeAndAlteredObjectsAreReportedMisses(boolean direct) throws IOException {
        StoreConfig config = StoreConfig.builder().fileDirectIo(direct).build();
        FilePageStore s = store(config);
        List<PageKey> keys = keys(5, 5);
        List<HostPage> src = pages(arena, 5, PAGE, 200);
        assertThat(await(s.put(keys, src)).allOk()).isTrue();
        // 0: truncated
        try (FileChannel ch = FileChannel.open(s.objectPath(keys.get(0)), StandardOpenOption.WRITE)) {
            ch.truncate(PAGE - 10);
        }
        // 1: one data byte flipped
        try (FileChannel ch = FileChannel.open(s.objectPath(keys.get(1)), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, 123);
            b.put(0, (byte) ~b.get(0)).rewind();
            ch.write(b, 123);
        }
        // 2: another key's object copied over it (marker names the other key)
        Files.copy(s.objectPath(keys.get(3)), s.objectPath(keys.get(2)), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        // 3: read into a page of another size
        // 4: intact
        List<HostPage> dst = new ArrayList<>(blanks(arena, src));
        dst.set(3, page(arena, PAGE * 2, 0));
        StoreResult r = await(s.get(keys, dst));
        assertThat(List.of(r.status(0), r.status(1), r.status(2), r.status(3), r.status(4))).containsExactly(
                StoreStatus.CORRUPT, StoreStatus.CORRUPT, StoreStatus.CORRUPT, StoreStatus.CORRUPT, StoreStatus.OK);
        assertThat(sameBytes(src.get(4), dst.get(4))).isTrue();
        assertThat(s.stats().corruptPages()).isEqualTo(4);
        assertThat(s.distinctErrors().keySet()).anyMatch(e -> e.contains("checksum"))
                .anyMatch(e -> e.contains("another key")).anyMatch(e -> e.contains("was expected"));

        // a foreign file in the object tree is reported when the store opens and never read as a page
        s.close();
        Files.write(tmp.resolve("l3/objects/zz-not-a-key"), new byte[] {1, 2, 3});
        Files.write(tmp.resolve("l3/objects/" + keys.get(4).hex().substring(0, 2) + "/README"), new byte[] {1});
        FilePageStore reopened = store(config);
        assertThat(reopened.foreignFilesAtOpen()).isEqualTo(2);
        assertThat(await(reopened.existsPrefix(keys.subList(4, 5)))).isEqualTo(1);
    }

    @Test
    void twoWritersOfOneKeyBothSucceedAndLeaveOneValidObject() throws Exception {
        FilePageStore a = store();
        FilePageStore b = store(); // a second instance on the same directory
        PageKey key = keys(1, 6).get(0);
        for (int round = 0; round < 20; round++) {
            HostPage pa = page(arena, PAGE, 1000 + round);
            HostPage pb = page(arena, PAGE, 2000 + round);
            CountDownLatch go = new CountDownLatch(1);
            List<StoreOp<StoreResult>> ops = new ArrayList<>();
            Thread ta = Thread.ofPlatform().start(() -> {
                awaitLatch(go);
                synchronized (ops) {
                    ops.add(a.put(List.of(key), List.of(pa)));
                }
            });
            Thread tb = Thread.ofPlatform().start(() -> {
                awaitLatch(go);
                synchronized (ops) {
                    ops.add(b.put(List.of(key), List.of(pb)));
                }
            });
            go.countDown();
            ta.join();
            tb.join();
            for (StoreOp<StoreResult> op : ops) {
                assertThat(await(op).allOk()).isTrue();
            }
            HostPage got = page(arena, PAGE, 0);
            assertThat(await(a.get(List.of(key), List.of(got))).allOk()).isTrue();
            assertThat(sameBytes(got, pa) || sameBytes(got, pb)).isTrue();
        }
        try (var left = Files.list(tmp.resolve("l3/staging"))) {
            assertThat(left.count()).isZero();
        }
    }

    private static void awaitLatch(CountDownLatch l) {
        try {
            l.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void capacityEvictsLeastRecentlyUsedPages() throws IOException {
        long object = PAGE + FilePageStore.MARKER_BYTES;
        FilePageStore s = store(StoreConfig.builder().fileCapacityBytes(3 * object).build());
        List<PageKey> keys = keys(5, 7);
        List<HostPage> src = pages(arena, 5, PAGE, 300);
        assertThat(await(s.put(keys.subList(0, 3), src.subList(0, 3))).allOk()).isTrue();
        // touch key 0, so key 1 is the least recently used
        assertThat(await(s.get(keys.subList(0, 1), blanks(arena, src.subList(0, 1)))).allOk()).isTrue();
        assertThat(await(s.put(keys.subList(3, 4), src.subList(3, 4))).allOk()).isTrue();
        assertThat(s.stats().evictedPages()).isEqualTo(1);
        assertThat(s.stats().storedBytes()).isLessThanOrEqualTo(3 * object);
        assertThat(await(s.existsPrefix(keys.subList(1, 2)))).isZero();
        assertThat(await(s.existsPrefix(List.of(keys.get(0), keys.get(2), keys.get(3))))).isEqualTo(3);
        // a page larger than the whole capacity is rejected, nothing is evicted for it
        StoreResult big = await(s.put(keys.subList(4, 5), List.of(page(arena, 4 * PAGE, 1))));
        assertThat(big.status(0)).isEqualTo(StoreStatus.REJECTED);
        assertThat(s.stats().evictedPages()).isEqualTo(1);
    }

    @Test
    void quotaFailsWritesAsAFullDiskDoesKeepsReadsAndRecoversWhenSpaceIsFreed() throws IOException {
        long object = PAGE + FilePageStore.MARKER_BYTES;
        FilePageStore s = store(StoreConfig.builder().fileQuotaBytes(3 * object).retryAttempts(2)
            .retryBackoffMs(1, 5).build());
        List<PageKey> keys = keys(5, 11);
        List<HostPage> src = pages(arena, 5, PAGE, 500);
        assertThat(await(s.put(keys.subList(0, 3), src.subList(0, 3))).allOk()).isTrue();
        // the fourth object would pass the quota: the write fails (retried, then FAILED), nothing is evicted
        StoreResult full = await(s.put(keys.subList(3, 4), src.subList(3, 4)));
        assertThat(full.status(0)).isEqualTo(StoreStatus.FAILED);
        assertThat(s.diskFullErrors()).isEqualTo(2);
        assertThat(s.stats().evictedPages()).isZero();
        assertThat(s.stats().failedPages()).isEqualTo(1);
        assertThat(s.distinctErrors().keySet()).singleElement().asString().contains("No space left on device");
        // no staging file is left behind, the committed objects still read back
        try (var staged = Files.list(tmp.resolve("l3/staging"))) {
            assertThat(staged).isEmpty();
        }
        List<HostPage> dst = blanks(arena, src.subList(0, 3));
        assertThat(await(s.get(keys.subList(0, 3), dst)).allOk()).isTrue();
        assertThat(sameBytes(src.get(2), dst.get(2))).isTrue();
        assertThat(await(s.existsPrefix(keys.subList(3, 4)))).isZero();
        // rewriting a stored key needs no more room; removing one frees room for the next write
        assertThat(pollUntil(10_000, () -> await(s.put(keys.subList(0, 1), src.subList(0, 1))).allOk())).isTrue();
        assertThat(pollUntil(10_000, () -> await(s.remove(keys.subList(1, 2))).allOk())).isTrue();
        assertThat(pollUntil(10_000, () -> await(s.put(keys.subList(3, 4), src.subList(3, 4))).allOk())).isTrue();
        assertThat(s.stats().storedBytes()).isEqualTo(3 * object);
        assertThatThrownBy(() -> StoreConfig.builder().fileQuotaBytes(-1).build())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fileQuotaBytes");
    }

    @Test
    void directIoRoundTripsAlignedPagesAndFallsBackForOthers() throws IOException {
        FilePageStore s = store(StoreConfig.builder().fileDirectIo(true).build());
        List<PageKey> keys = keys(3, 8);
        List<HostPage> src = List.of(page(arena, 64 * 1024, 1), twoPartPage(arena, 8192, 2), page(arena, 1000, 3));
        assertThat(await(s.put(keys, src)).allOk()).isTrue();
        List<HostPage> dst = blanks(arena, src);
        assertThat(await(s.get(keys, dst)).allOk()).isTrue();
        for (int i = 0; i < 3; i++) {
            assertThat(sameBytes(src.get(i), dst.get(i))).isTrue();
        }
    }

    @Test
    void objectsWrittenUnderOneIoModeAreReadUnderTheOther() throws IOException {
        List<PageKey> keys = keys(4, 9);
        List<HostPage> src = pages(arena, 4, PAGE, 300);
        StoreConfig buffered = StoreConfig.defaults();
        StoreConfig direct = StoreConfig.builder().fileDirectIo(true).build();
        FilePageStore w = store(buffered);
        assertThat(await(w.put(keys.subList(0, 2), src.subList(0, 2))).allOk()).isTrue();
        w.close();
        FilePageStore d = store(direct);
        assertThat(await(d.put(keys.subList(2, 4), src.subList(2, 4))).allOk()).isTrue();
        // the direct store reads the buffered objects (marker right after the data) and its own (padded)
        List<HostPage> dst = blanks(arena, src);
        assertThat(await(d.get(keys, dst)).allOk()).isTrue();
        d.close();
        // and the buffered store reads both layouts as well
        List<HostPage> again = blanks(arena, src);
        assertThat(await(store(buffered).get(keys, again)).allOk()).isTrue();
        for (int i = 0; i < 4; i++) {
            assertThat(sameBytes(src.get(i), dst.get(i))).as("direct read of page %d", i).isTrue();
            assertThat(sameBytes(src.get(i), again.get(i))).as("buffered read of page %d", i).isTrue();
        }
    }

    @Test
    void backendFailuresAreRetriedCountedLoggedOnceAndTheStoreRecovers() throws IOException {
        FilePageStore s = store(StoreConfig.builder().retryAttempts(2).retryBackoffMs(1, 50).build());
        Path staging = tmp.resolve("l3/staging");
        Files.delete(staging); // every write now fails with NoSuchFileException
        List<PageKey> keys = keys(2, 9);
        List<HostPage> src = pages(arena, 2, PAGE, 1);
        StoreResult failed = await(s.put(keys, src));
        assertThat(failed.count(StoreStatus.FAILED)).isEqualTo(2);
        assertThat(s.stats().retries()).isEqualTo(1);
        assertThat(s.stats().failedPages()).isEqualTo(2);
        // while backing off, the store answers at once without I/O
        StoreResult during = await(s.put(keys, src));
        assertThat(during.count(StoreStatus.FAILED) + during.count(StoreStatus.REJECTED)).isEqualTo(2);
        Files.createDirectories(staging);
        assertThat(pollUntil(10_000, () -> await(s.put(keys, src)).allOk())).isTrue();
        assertThat(s.distinctErrors()).hasSize(1);
        assertThat(s.distinctErrors().values().iterator().next()).isGreaterThanOrEqualTo(2);
    }

    @Test
    void openedThroughTheLocationString() throws IOException {
        PageStore s = PageStores.open("file:" + tmp.resolve("viaUri"), StoreConfig.defaults());
        open.add(s);
        assertThat(s).isInstanceOf(FilePageStore.class);
        assertThat(await(s.put(keys(1, 11), pages(arena, 1, PAGE, 1))).allOk()).isTrue();
    }
}
