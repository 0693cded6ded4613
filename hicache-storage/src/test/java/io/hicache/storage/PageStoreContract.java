package io.hicache.storage;

import io.hicache.core.memory.HostLayout;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

import static io.hicache.storage.StoreTesting.await;
import static io.hicache.storage.StoreTesting.blanks;
import static io.hicache.storage.StoreTesting.keys;
import static io.hicache.storage.StoreTesting.page;
import static io.hicache.storage.StoreTesting.pages;
import static io.hicache.storage.StoreTesting.sameBytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The behaviour every {@link PageStore} backend shares, run over each of them. */
public abstract class PageStoreContract {
    protected static final long PAGE = 16 * 1024;

    /** For the subclass that names the backend under test. */
    protected PageStoreContract() {
    }

    protected final Arena arena = Arena.ofShared();
    private final List<PageStore> stores = new ArrayList<>();

    /** A new store instance on the backend's one shared location (a second instance sees the first's objects). */
    protected abstract PageStore openStore(StoreConfig config);

    protected final PageStore store(StoreConfig config) {
        PageStore s = openStore(config);
        stores.add(s);
        return s;
    }

    protected final PageStore store() {
        return store(StoreConfig.defaults());
    }

    @AfterEach
    void closeStores() {
        stores.forEach(PageStore::close);
        arena.close();
    }

    @Test
    void batchRoundTripWithPerKeyResults() {
        PageStore s = store();
        List<PageKey> keys = keys(12, 40);
        List<HostPage> src = pages(arena, 12, PAGE, 40);
        assertThat(await(s.put(keys.subList(0, 8), src.subList(0, 8))).allOk()).isTrue();
        assertThat(await(s.existsPrefix(keys))).isEqualTo(8);
        List<HostPage> dst = blanks(arena, src);
        StoreResult r = await(s.get(keys, dst));
        assertThat(r.leadingOk()).isEqualTo(8);
        assertThat(r.count(StoreStatus.MISS)).isEqualTo(4);
        for (int i = 0; i < 8; i++) {
            assertThat(sameBytes(src.get(i), dst.get(i))).isTrue();
        }
        // a gap stops the prefix
        assertThat(await(s.remove(keys.subList(3, 4))).allOk()).isTrue();
        assertThat(await(s.existsPrefix(keys))).isEqualTo(3);
        assertThat(await(s.existsPrefix(List.of()))).isZero();
        assertThat(await(s.get(List.of(), List.of())).size()).isZero();
    }

    @Test
    void twoTenantSaltsOnOneStoreSeeNoHitsFromEachOther() {
        PageStore s = store();
        int[] prompt = new int[64];
        for (int i = 0; i < prompt.length; i++) {
            prompt[i] = 1000 + i;
        }
        KeyNamespace.Builder base = KeyNamespace.builder().modelId("m").kvDtype("bfloat16").pageSizeTokens(16)
                .hostLayout(HostLayout.PAGE_FIRST_DIRECT);
        List<PageKey> a = List.of(base.salt("tenant-a").build().chain(prompt));
        List<PageKey> b = List.of(base.salt("tenant-b").build().chain(prompt));
        List<PageKey> lora = List.of(base.salt("tenant-a").loraAdapterId("adapter-1").build().chain(prompt));
        assertThat(await(s.put(a, pages(arena, a.size(), PAGE, 1))).allOk()).isTrue();
        assertThat(await(s.existsPrefix(a))).isEqualTo(4);
        assertThat(await(s.existsPrefix(b))).isZero();
        assertThat(await(s.existsPrefix(lora))).isZero();
        assertThat(await(s.get(b, blanks(arena, pages(arena, 4, PAGE, 0)))).count(StoreStatus.MISS)).isEqualTo(4);
    }

    @Test
    void twoInstancesWritingOneKeyBothSucceedAndLeaveOneValidObject() throws Exception {
        PageStore a = store();
        PageStore b = store();
        PageKey key = keys(1, 41).get(0);
        for (int round = 0; round < 10; round++) {
            HostPage pa = page(arena, PAGE, 100 + round);
            HostPage pb = page(arena, PAGE, 200 + round);
            CountDownLatch go = new CountDownLatch(1);
            AtomicReference<StoreOp<StoreResult>> oa = new AtomicReference<>();
            AtomicReference<StoreOp<StoreResult>> ob = new AtomicReference<>();
            Thread ta = Thread.ofPlatform().start(() -> {
                awaitLatch(go);
                oa.set(a.put(List.of(key), List.of(pa)));
            });
            Thread tb = Thread.ofPlatform().start(() -> {
                awaitLatch(go);
                ob.set(b.put(List.of(key), List.of(pb)));
            });
            go.countDown();
            ta.join();
            tb.join();
            assertThat(await(oa.get()).allOk()).isTrue();
            assertThat(await(ob.get()).allOk()).isTrue();
            HostPage got = page(arena, PAGE, 0);
            assertThat(await(b.get(List.of(key), List.of(got))).allOk()).isTrue();
            assertThat(sameBytes(got, pa) || sameBytes(got, pb)).isTrue();
        }
    }

    @Test
    void manySubmittingThreadsEachGetTheirOwnBytes() throws Exception {
        PageStore s = store(StoreConfig.builder().ioThreads(3).build());
        int threads = 4;
        List<Thread> ts = new ArrayList<>();
        List<Throwable> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            ts.add(Thread.ofPlatform().start(() -> {
                try {
                    for (int round = 0; round < 5; round++) {
                        List<PageKey> keys = keys(6, 500 + id * 10 + round);
                        List<HostPage> src = pages(arena, 6, 4096, id * 100L + round);
                        assertThat(await(s.put(keys, src)).allOk()).isTrue();
                        List<HostPage> dst = blanks(arena, src);
                        assertThat(await(s.get(keys, dst)).allOk()).isTrue();
                        for (int i = 0; i < 6; i++) {
                            assertThat(sameBytes(src.get(i), dst.get(i))).isTrue();
                        }
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            }));
        }
        for (Thread t : ts) {
            t.join();
        }
        assertThat(errors).isEmpty();
        assertThat(s.stats().queuedOps()).isZero();
    }

    @Test
    void closedStoresRejectAndBadBatchesFailAtTheCall() {
        PageStore s = store(StoreConfig.builder().maxBatchPages(4).build());
        assertThatThrownBy(() -> s.get(keys(5, 42), pages(arena, 5, 16, 1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxBatchPages 4");
        assertThatThrownBy(() -> s.put(keys(2, 42), pages(arena, 1, 16, 1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 host pages for 2 keys");
        List<PageKey> nullKey = new ArrayList<>(keys(2, 42));
        nullKey.set(1, null);
        assertThatThrownBy(() -> s.existsPrefix(nullKey)).hasMessageContaining("key 1");
        s.close();
        s.close();
        assertThat(await(s.put(keys(2, 43), pages(arena, 2, 16, 1))).count(StoreStatus.REJECTED)).isEqualTo(2);
        assertThat(await(s.existsPrefix(keys(2, 43)))).isZero();
        assertThat(s.stats().rejectedPages()).isEqualTo(2);
    }

    private static void awaitLatch(CountDownLatch l) {
        try {
            l.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
