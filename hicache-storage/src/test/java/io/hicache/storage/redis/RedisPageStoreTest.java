package io.hicache.storage.redis;

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
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

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

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisPageStoreTest {
    private static final long PAGE = 32 * 1024;

    @TempDir
    Path tmp;
    private final Arena arena = Arena.ofShared();
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
        arena.close();
    }

    private <T extends AutoCloseable> T track(T c) {
        closeables.add(c);
        return c;
    }

    private RedisServerProcess server(String... extra) {
        return track(RedisServerProcess.start(tmp.resolve("r" + closeables.size()), extra));
    }

    private PageStore open(String location, StoreConfig config) {
        return track(PageStores.open(location, config));
    }

    @Test
    void pipelinedBatchesRoundTripAndInvalidValuesAreReportedMisses() {
        RedisServerProcess r = server();
        PageStore s = open("redis://127.0.0.1:" + r.port, StoreConfig.defaults());
        assertThat(((RedisPageStore) s).isCluster()).isFalse();
        List<PageKey> keys = keys(8, 1);
        List<HostPage> src = new ArrayList<>(pages(arena, 6, PAGE, 1));
        src.add(twoPartPage(arena, PAGE / 2, 2));
        src.add(page(arena, 100, 3));
        assertThat(await(s.existsPrefix(keys))).isZero();
        assertThat(await(s.put(keys, src)).allOk()).isTrue();
        assertThat(await(s.existsPrefix(keys))).isEqualTo(8);
        List<HostPage> dst = blanks(arena, src);
        assertThat(await(s.get(keys, dst)).allOk()).isTrue();
        for (int i = 0; i < 8; i++) {
            assertThat(sameBytes(src.get(i), dst.get(i))).isTrue();
        }

        // foreign, truncated and wrong-size values are misses, reported
        r.command("SET", "hicache:" + keys.get(0).hex(), "not a page");
        r.command("SETRANGE", "hicache:" + keys.get(1).hex(), "100", "x"); // data altered
        r.command("EVAL", "redis.call('SET', KEYS[1], string.sub(redis.call('GET', KEYS[2]), 1, 1000)) return 1", "2",
                "hicache:" + keys.get(2).hex(), "hicache:" + keys.get(2).hex());
        List<HostPage> wrongSize = new ArrayList<>(blanks(arena, src));
        wrongSize.set(3, page(arena, 2 * PAGE, 0));
        StoreResult r2 = await(s.get(keys, wrongSize));
        assertThat(List.of(r2.status(0), r2.status(1), r2.status(2), r2.status(3), r2.status(4)))
                .containsExactly(StoreStatus.CORRUPT, StoreStatus.CORRUPT, StoreStatus.CORRUPT, StoreStatus.CORRUPT,
                        StoreStatus.OK);
        assertThat(await(s.existsPrefix(keys))).isZero();
        assertThat(await(s.existsPrefix(keys.subList(3, 8)))).isEqualTo(5);
        assertThat(s.stats().corruptPages()).isGreaterThanOrEqualTo(5);

        assertThat(await(s.remove(keys.subList(3, 5))).allOk()).isTrue();
        assertThat(await(s.remove(keys.subList(3, 4))).status(0)).isEqualTo(StoreStatus.MISS);
        assertThat(await(s.existsPrefix(keys.subList(3, 8)))).isZero();

        // in one batch: a key holding another type (an error reply), an absent key, then values that still land
        r.command("LPUSH", "hicache:" + keys.get(3).hex(), "x");
        List<HostPage> mixed = blanks(arena, src);
        StoreResult r3 = await(s.get(keys.subList(3, 8), mixed.subList(3, 8)));
        assertThat(List.of(r3.status(0), r3.status(1), r3.status(2), r3.status(3), r3.status(4)))
                .containsExactly(StoreStatus.FAILED, StoreStatus.MISS, StoreStatus.OK, StoreStatus.OK, StoreStatus.OK);
        for (int i = 5; i < 8; i++) {
            assertThat(sameBytes(src.get(i), mixed.get(i))).as("page %d after an error reply", i).isTrue();
        }
        assertThat(((RedisPageStore) s).distinctErrors().keySet()).anyMatch(e -> e.contains("WRONGTYPE"));
    }

    @Test
    void passwordAndAclUsersWorkAndBadCredentialsAreOneClearErrorThatNeverShowsThem() throws Exception {
        String pw = "pw-" + Long.toHexString(System.nanoTime()) + "-secret";
        String alicePw = "alice-" + Long.toHexString(System.nanoTime()) + "-pass";
        RedisServerProcess r = server("--requirepass", pw);
        // the least privilege docs/STORAGE.md recommends
        r.commandWithPassword(pw, "ACL", "SETUSER", "alice", "on", ">" + alicePw, "~hicache:*", "+get", "+set",
                "+del", "+strlen", "+getrange", "+exists", "+ping", "+info", "+client|setname");

        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        List<String> texts = new ArrayList<>();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            PageStore s = open("redis://:" + pw + "@127.0.0.1:" + r.port, StoreConfig.defaults());
            PageStore alice = open("redis://alice:" + alicePw + "@127.0.0.1:" + r.port, StoreConfig.defaults());
            PageStore viaConfig = open("redis://127.0.0.1:" + r.port,
                    StoreConfig.builder().redisCredentials("alice", alicePw).build());
            List<PageKey> keys = keys(4, 3);
            List<HostPage> src = pages(arena, 4, PAGE, 5);
            assertThat(await(s.put(keys, src)).allOk()).isTrue();
            assertThat(await(alice.existsPrefix(keys))).isEqualTo(4);
            assertThat(await(viaConfig.get(keys, blanks(arena, src))).allOk()).isTrue();
            texts.add(s.toString());
            texts.add(alice.toString());
            texts.add(s.stats().toString());
            texts.add(StoreConfig.builder().redisCredentials("alice", alicePw).build().toString());
            texts.add(PageStores.redact("redis://alice:" + alicePw + "@127.0.0.1:" + r.port));

            for (String bad : List.of("redis://:wrong-" + pw + "@127.0.0.1:" + r.port,
                    "redis://alice:wrong-" + alicePw + "@127.0.0.1:" + r.port, "redis://127.0.0.1:" + r.port)) {
                Throwable t = org.assertj.core.api.Assertions.catchThrowable(() -> open(bad, StoreConfig.defaults()));
                assertThat(t).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("authentication failed").hasMessageNotContaining("\n");
                texts.add(t.toString());
                java.io.StringWriter sw = new java.io.StringWriter();
                t.printStackTrace(new java.io.PrintWriter(sw));
                texts.add(sw.toString());
            }
            // the server goes away: errors are counted and logged, still without the credentials
            r.kill();
            StoreResult down = await(s.put(keys, src));
            assertThat(down.count(StoreStatus.OK)).isZero();
            assertThat(s.stats().errors()).isPositive();
            texts.add(((RedisPageStore) s).distinctErrors().toString());
        } finally {
            System.setErr(err);
        }
        texts.add(captured.toString(StandardCharsets.UTF_8));
        assertThat(texts.get(texts.size() - 1)).contains("L3 redis store");
        for (String text : texts) {
            assertThat(text).doesNotContain(pw).doesNotContain(alicePw);
        }
    }

    @Test
    void tlsWithATrustedCaWorksAndAnUntrustedCertificateIsOneClearError() throws Exception {
        Path certs = Files.createDirectories(tmp.resolve("certs"));
        TlsFiles tls = TlsFiles.create(certs);
        int port = track(RedisServerProcess.startTls(tmp.resolve("tls"), tls)).port;
        PageStore s = open("rediss://127.0.0.1:" + port + "?cacert=" + tls.ca(), StoreConfig.defaults());
        List<PageKey> keys = keys(3, 4);
        List<HostPage> src = pages(arena, 3, PAGE, 9);
        assertThat(await(s.put(keys, src)).allOk()).isTrue();
        List<HostPage> dst = blanks(arena, src);
        assertThat(await(s.get(keys, dst)).allOk()).isTrue();
        assertThat(sameBytes(src.get(2), dst.get(2))).isTrue();
        assertThat(s.toString()).contains("TLS");

        assertThatThrownBy(() -> open("rediss://127.0.0.1:" + port, StoreConfig.defaults()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("TLS handshake failed").hasMessageContaining("not trusted");
        // plain text against the TLS port is not a silent success either
        assertThatThrownBy(() -> open("redis://127.0.0.1:" + port,
                StoreConfig.builder().redisTimeoutMs(2000).build())).isInstanceOf(IllegalStateException.class);
    }

    /**
     * The server is killed while write batches are in flight and restarted on the same files: every put
     * that answered OK is read back exactly, nothing partial is ever read, and the store keeps answering
     * (failures counted, then it reconnects).
     */
    @Test
    void killAndRestartMidBatchLosesNothingCommittedAndNeverReadsAPartialPage() throws Exception {
        RedisServerProcess r = server("--appendonly", "yes", "--appendfsync", "always", "--aof-use-rdb-preamble", "no");
        PageStore s = open("redis://127.0.0.1:" + r.port, StoreConfig.builder().retryAttempts(2)
                .retryBackoffMs(5, 200).redisTimeoutMs(2000).ioThreads(2).build());
        int batches = 12;
        int perBatch = 16;
        long pageBytes = 64 * 1024;
        List<List<PageKey>> keys = new ArrayList<>();
        List<List<HostPage>> src = new ArrayList<>();
        List<StoreOp<StoreResult>> ops = new ArrayList<>();
        for (int b = 0; b < batches; b++) {
            keys.add(keys(perBatch, 100 + b));
            src.add(pages(arena, perBatch, pageBytes, 1000L * b));
        }
        for (int b = 0; b < batches / 2; b++) {
            ops.add(s.put(keys.get(b), src.get(b)));
        }
        // kill while those batches are being written
        pollUntil(5_000, () -> ops.get(0).isDone());
        r.kill();
        for (int b = batches / 2; b < batches; b++) {
            ops.add(s.put(keys.get(b), src.get(b)));
        }
        // the store keeps answering while the server is down
        for (StoreOp<StoreResult> op : ops) {
            await(op);
        }
        assertThat(await(s.existsPrefix(keys.get(0)))).isBetween(0, perBatch);
        r.restart();
        // it reconnects after its backoff
        List<PageKey> probeKey = keys(1, 999);
        HostPage probe = page(arena, pageBytes, 5);
        assertThat(pollUntil(30_000, () -> await(s.put(probeKey, List.of(probe))).allOk())).isTrue();

        int committed = 0;
        for (int b = 0; b < batches; b++) {
            StoreResult put = ops.get(b).result();
            List<HostPage> dst = blanks(arena, src.get(b));
            StoreResult got = await(s.get(keys.get(b), dst));
            for (int i = 0; i < perBatch; i++) {
                if (put.ok(i)) {
                    committed++;
                    assertThat(got.status(i)).as("committed page %d of batch %d", i, b).isEqualTo(StoreStatus.OK);
                }
                // whatever the outcome of the put, a page is either a miss or exactly its bytes
                assertThat(got.status(i)).isIn(StoreStatus.OK, StoreStatus.MISS);
                if (got.ok(i)) {
                    assertThat(sameBytes(src.get(b).get(i), dst.get(i))).isTrue();
                }
            }
        }
        assertThat(committed).isPositive();
        assertThat(s.stats().failedPages() + s.stats().rejectedPages()).isPositive();
        assertThat(s.stats().errors()).isPositive();
        // every error is counted under its distinct description (each logged once, then counted)
        java.util.Map<String, Long> distinct = ((RedisPageStore) s).distinctErrors();
        assertThat(distinct.values().stream().mapToLong(Long::longValue).sum()).isEqualTo(s.stats().errors());
        assertThat(distinct.size()).isLessThan((int) Math.max(2, s.stats().errors()));
    }

    @Test
    void redisClusterOfThreeMasters() {
        List<RedisServerProcess> nodes = new ArrayList<>();
        int[] busPorts = new int[3];
        for (int i = 0; i < 3; i++) {
            Path d = tmp.resolve("cluster" + i);
            // a bus port of its own: the default, port + 10000, is past 65535 for a free port above 55535
            busPorts[i] = RedisServerProcess.freePort();
            nodes.add(track(RedisServerProcess.start(d, "--cluster-enabled", "yes", "--cluster-config-file",
                    d.resolve("nodes.conf").toString(), "--cluster-port", Integer.toString(busPorts[i]),
                    "--appendonly", "no")));
        }
        // what redis-cli --cluster create does: a third of the slots to each master, then they meet
        for (int i = 0; i < 3; i++) {
            assertThat(nodes.get(i).command("CLUSTER", "ADDSLOTSRANGE", Integer.toString(16384 * i / 3),
                    Integer.toString(16384 * (i + 1) / 3 - 1))).isEqualTo("OK");
        }
        for (int i = 1; i < 3; i++) {
            assertThat(nodes.get(0).command("CLUSTER", "MEET", "127.0.0.1", Integer.toString(nodes.get(i).port),
                    Integer.toString(busPorts[i]))).isEqualTo("OK");
        }
        assertThat(pollUntil(30_000, () -> nodes.stream().allMatch(n -> {
            String info = (String) n.command("CLUSTER", "INFO");
            return info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3")
                    && info.contains("cluster_slots_assigned:16384");
        }))).isTrue();

        PageStore s = open("redis://127.0.0.1:" + nodes.get(0).port + ",127.0.0.1:" + nodes.get(1).port,
                StoreConfig.defaults());
        assertThat(((RedisPageStore) s).isCluster()).isTrue();
        List<PageKey> keys = keys(48, 6);
        List<HostPage> src = pages(arena, 48, 8 * 1024, 77);
        assertThat(await(s.put(keys, src)).allOk()).isTrue();
        assertThat(await(s.existsPrefix(keys))).isEqualTo(48);
        List<HostPage> dst = blanks(arena, src);
        assertThat(await(s.get(keys, dst)).allOk()).isTrue();
        for (int i = 0; i < 48; i++) {
            assertThat(sameBytes(src.get(i), dst.get(i))).isTrue();
        }
        // the keys spread over every master
        for (RedisServerProcess n : nodes) {
            assertThat((Long) n.command("DBSIZE")).isPositive();
        }
        assertThat(await(s.remove(keys)).allOk()).isTrue();
        assertThat(await(s.existsPrefix(keys))).isZero();
    }

    @Test
    void malformedLocationsNameTheProblemWithoutThePassword() {
        assertThatThrownBy(() -> PageStores.open("redis://:hunter2@127.0.0.1:notaport", StoreConfig.defaults()))
                .hasMessageContaining("port").hasMessageNotContaining("hunter2");
        assertThatThrownBy(() -> PageStores.open("redis://127.0.0.1:6379?bogus=1", StoreConfig.defaults()))
                .hasMessageContaining("unknown parameter 'bogus'");
        assertThatThrownBy(() -> PageStores.open("redis://127.0.0.1:" + RedisServerProcess.freePort(),
                StoreConfig.builder().redisTimeoutMs(1000).build()))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("cannot connect");
        assertThat(PageStores.redact("redis://u:p%40ss@h:1")).isEqualTo("redis://u:***@h:1");
        assertThat(PageStores.redact("redis://secret@h:1")).isEqualTo("redis://***@h:1");
        RedisLocation loc = RedisLocation.parse("rediss://u:p%40ss@a:1,b:2/3?cluster=true");
        assertThat(loc.password()).isEqualTo("p@ss");
        assertThat(loc.endpoints()).hasSize(2);
        assertThat(loc.database()).isEqualTo(3);
        assertThat(loc.toString()).doesNotContain("p@ss");
    }
}
