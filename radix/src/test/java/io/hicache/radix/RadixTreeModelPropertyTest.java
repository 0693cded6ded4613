package io.hicache.radix;

import io.hicache.radix.spi.DeviceEvictionListener;
import io.hicache.radix.spi.HostEvictionListener;
import io.hicache.radix.spi.HostValue;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * Random operation sequences against a deliberately simple reference model: a map from every
 * cached page prefix to its state (device page, host committed, pending, lock and host refs).
 * Checks match lengths and pages, full state equality after every step, page conservation, that
 * pending is never visible as host, that no locked/pending/protected node is evicted, and that an
 * eviction stops short only when nothing evictable is left.
 */
class RadixTreeModelPropertyTest {

    /** State of one page prefix in the model. */
    static final class P {
        int dev = -1;
        boolean host;
        boolean pending;
        int lock;
        int hostRef;

        String state() {
            return "dev=" + dev + " host=" + host + " pending=" + pending + " lock=" + lock + " hostRef=" + hostRef;
        }
    }

    static final class Run implements DeviceEvictionListener, HostEvictionListener {
        final RadixTree tree;
        final int ps;
        final Map<List<Integer>, P> model = new HashMap<>();
        final Set<Integer> freed = new HashSet<>();
        int allocated;
        final List<RadixNode> handles = new ArrayList<>();
        final List<RadixNode> locked = new ArrayList<>();
        final List<RadixNode> protectedNodes = new ArrayList<>();
        final List<TestBackup> backups = new ArrayList<>();
        final MatchResult match = new MatchResult(1);
        List<List<Integer>> candidatePrefixes;
        int hostPage;

        Run(int pageSize, EvictionPolicy dev, EvictionPolicy host) {
            ps = pageSize;
            tree = RadixTree.builder().pageSize(pageSize).devicePolicy(dev).hostPolicy(host).build();
        }

        int[] key(int arg) {
            Random r = new Random(arg);
            int pages = 1 + r.nextInt(5);
            int[] k = new int[pages * ps + r.nextInt(ps)]; // sometimes a partial last page
            for (int i = 0; i < k.length; i++) {
                k[i] = r.nextInt(ps == 1 ? 3 : 2);
            }
            return k;
        }

        static List<Integer> prefix(int[] tokens, int len) {
            List<Integer> l = new ArrayList<>(len);
            for (int i = 0; i < len; i++) {
                l.add(tokens[i]);
            }
            return l;
        }

        /** @return the page prefixes covered by {@code node}, in order */
        List<List<Integer>> prefixesOf(RadixNode node) {
            List<RadixNode> path = new ArrayList<>();
            for (RadixNode x = node; !x.isRoot(); x = x.parent()) {
                path.add(0, x);
            }
            int total = 0;
            for (RadixNode x : path) {
                total += x.tokenCount();
            }
            int[] tokens = new int[total];
            int off = 0;
            for (RadixNode x : path) {
                x.copyTokens(tokens, off);
                off += x.tokenCount();
            }
            List<List<Integer>> out = new ArrayList<>();
            int start = total - node.tokenCount();
            for (int end = start + ps; end <= total; end += ps) {
                out.add(prefix(tokens, end));
            }
            return out;
        }

        /** @return all page prefixes from the root to the end of {@code node} */
        List<List<Integer>> pathPrefixes(RadixNode node) {
            List<List<Integer>> out = new ArrayList<>();
            for (RadixNode x = node; !x.isRoot(); x = x.parent()) {
                out.addAll(0, prefixesOf(x));
            }
            return out;
        }

        boolean hasExtension(List<Integer> prefix, boolean deviceOnly) {
            for (Map.Entry<List<Integer>, P> e : model.entrySet()) {
                List<Integer> k = e.getKey();
                if (k.size() == prefix.size() + ps && k.subList(0, prefix.size()).equals(prefix)
                        && (!deviceOnly || e.getValue().dev >= 0)) {
                    return true;
                }
            }
            return false;
        }

        void step(int v) {
            int op = v % 11;
            int arg = v / 11;
            switch (op) {
                case 0, 1 -> insert(key(arg));
                case 2 -> match(key(arg));
                case 3 -> {
                    RadixNode n = pick(arg);
                    if (n != null) {
                        tree.lock(n);
                        locked.add(n);
                        for (List<Integer> p : pathPrefixes(n)) {
                            model.get(p).lock++;
                        }
                    }
                }
                case 4 -> {
                    if (!locked.isEmpty()) {
                        RadixNode n = locked.remove(arg % locked.size());
                        for (List<Integer> p : pathPrefixes(n)) {
                            model.get(p).lock--;
                        }
                        tree.unlock(n);
                    }
                }
                case 5 -> {
                    RadixNode n = pick(arg);
                    if (n != null && !n.isRoot() && tree.canBackUp(n)) {
                        TestBackup b = new TestBackup(n);
                        tree.markPending(n, b);
                        backups.add(b);
                        for (List<Integer> p : prefixesOf(n)) {
                            model.get(p).pending = true;
                        }
                    }
                }
                case 6 -> {
                    if (!backups.isEmpty()) {
                        TestBackup b = backups.remove(arg % backups.size());
                        boolean commit = (arg & 1) == 0;
                        for (RadixNode f : b.fragments) {
                            for (List<Integer> p : prefixesOf(f)) {
                                P s = model.get(p);
                                s.pending = false;
                                s.host = commit;
                            }
                        }
                        if (commit) {
                            b.commit(tree, hostPage);
                            hostPage += 64;
                        } else {
                            b.abort(tree);
                        }
                    }
                }
                case 7 -> evictDevice(1 + arg % 4);
                case 8 -> evictHost(1 + arg % 4);
                case 9 -> {
                    RadixNode n = pick(arg);
                    if (n != null) {
                        tree.protectHost(n);
                        protectedNodes.add(n);
                        for (List<Integer> p : pathPrefixes(n)) {
                            model.get(p).hostRef++;
                        }
                    }
                }
                default -> {
                    if (!protectedNodes.isEmpty()) {
                        RadixNode n = protectedNodes.remove(arg % protectedNodes.size());
                        for (List<Integer> p : pathPrefixes(n)) {
                            model.get(p).hostRef--;
                        }
                        tree.releaseHost(n);
                    }
                }
            }
            verify();
        }

        RadixNode pick(int arg) {
            handles.removeIf(n -> !n.isAttached());
            return handles.isEmpty() ? null : handles.get(arg % handles.size());
        }

        void insert(int[] k) {
            int pages = k.length / ps;
            int[] devPages = new int[pages];
            for (int i = 0; i < pages; i++) {
                devPages[i] = allocated++;
            }
            int present = 0;
            while (present < pages && model.containsKey(prefix(k, (present + 1) * ps))
                    && model.get(prefix(k, (present + 1) * ps)).dev >= 0) {
                present++;
            }
            int r = tree.insert(k, 0, k.length, devPages, 0);
            assertThat(r).as("already present tokens").isEqualTo(present * ps);
            for (int i = 0; i < present; i++) {
                freed.add(devPages[i]);
            }
            for (int i = present; i < pages; i++) {
                P p = model.computeIfAbsent(prefix(k, (i + 1) * ps), x -> new P());
                assertThat(p.dev).isEqualTo(-1);
                p.dev = devPages[i];
            }
            if (!tree.lastInsertNode().isRoot()) {
                handles.add(tree.lastInsertNode());
            }
        }

        void match(int[] k) {
            int pages = k.length / ps;
            List<Integer> expectedDev = new ArrayList<>();
            int i = 0;
            for (; i < pages; i++) {
                P p = model.get(prefix(k, (i + 1) * ps));
                if (p == null || p.dev < 0) {
                    break;
                }
                expectedDev.add(p.dev);
            }
            int expectedHost = 0;
            for (; i < pages; i++) {
                P p = model.get(prefix(k, (i + 1) * ps));
                if (p == null || p.dev >= 0 || !p.host) {
                    break;
                }
                expectedHost++;
            }
            int nodes = tree.nodeCount();
            assertThat(tree.cachedPrefixPages(k, 0, k.length)).as("cached prefix pages")
                    .isEqualTo(expectedDev.size() + expectedHost);
            assertThat(tree.devicePrefixPages(k, 0, k.length)).as("device prefix pages")
                    .isEqualTo(expectedDev.size());
            assertThat(tree.nodeCount()).as("a look splits nothing").isEqualTo(nodes);
            tree.match(k, 0, k.length, match);
            List<Integer> got = new ArrayList<>();
            for (int j = 0; j < match.devicePageCount(); j++) {
                got.add(match.devicePage(j));
            }
            assertThat(got).as("device hit pages").isEqualTo(expectedDev);
            assertThat(match.hostPageCount()).as("host extension pages").isEqualTo(expectedHost);
            if (!match.lastDeviceNode().isRoot()) {
                handles.add(match.lastDeviceNode());
            }
            if (!match.lastHostNode().isRoot()) {
                handles.add(match.lastHostNode());
            }
        }

        void evictDevice(int pages) {
            int got = tree.evictDevice(pages, this);
            if (got < pages) {
                for (Map.Entry<List<Integer>, P> e : model.entrySet()) {
                    P p = e.getValue();
                    boolean evictable = p.dev >= 0 && p.lock == 0 && !p.pending && !hasExtension(e.getKey(), true)
                            && (p.host || (!hasExtension(e.getKey(), false) && p.hostRef == 0));
                    assertThat(evictable).as("device eviction stopped short but %s is evictable", e.getKey())
                            .isFalse();
                }
            }
        }

        void evictHost(int pages) {
            int got = tree.evictHost(pages, this);
            if (got < pages) {
                for (Map.Entry<List<Integer>, P> e : model.entrySet()) {
                    P p = e.getValue();
                    boolean evictable = p.dev < 0 && p.host && p.hostRef == 0 && p.lock == 0
                            && !hasExtension(e.getKey(), false);
                    assertThat(evictable).as("host eviction stopped short but %s is evictable", e.getKey()).isFalse();
                }
            }
        }

        @Override
        public boolean mayEvict(RadixNode node) {
            candidatePrefixes = prefixesOf(node);
            return true;
        }

        @Override
        public boolean mayEvictHost(RadixNode node) {
            candidatePrefixes = prefixesOf(node);
            return true;
        }

        @Override
        public void onDeviceEvicted(RadixNode node, int[] pages, int offset, int count) {
            assertThat(count).isEqualTo(candidatePrefixes.size());
            List<Integer> last = candidatePrefixes.get(count - 1);
            assertThat(hasExtension(last, true)).as("device-evicted node must be a device leaf").isFalse();
            for (int j = 0; j < count; j++) {
                P p = model.get(candidatePrefixes.get(j));
                assertThat(p.dev).isEqualTo(pages[offset + j]);
                assertThat(p.lock).as("locked page evicted").isZero();
                assertThat(p.pending).as("pending page evicted").isFalse();
                p.dev = -1;
                if (!p.host) {
                    assertThat(p.hostRef).as("protected page removed").isZero();
                    model.remove(candidatePrefixes.get(j));
                }
                assertThat(freed.add(pages[offset + j])).as("page freed twice").isTrue();
            }
            if (!model.containsKey(last)) {
                assertThat(hasExtension(last, false)).as("removed node had children").isFalse();
            }
        }

        @Override
        public void onHostEvicted(RadixNode node, HostValue value) {
            assertThat(value.pageCount()).isEqualTo(candidatePrefixes.size());
            assertThat(hasExtension(candidatePrefixes.get(candidatePrefixes.size() - 1), false)).isFalse();
            for (List<Integer> k : candidatePrefixes) {
                P p = model.remove(k);
                assertThat(p.dev).isEqualTo(-1);
                assertThat(p.host).isTrue();
                assertThat(p.hostRef).as("protected host page evicted").isZero();
                assertThat(p.lock).as("locked host page evicted").isZero();
            }
        }

        void verify() {
            tree.checkInvariants();
            Map<List<Integer>, String> actual = new HashMap<>();
            Set<Integer> held = new HashSet<>();
            List<RadixNode> stack = new ArrayList<>();
            stack.add(tree.root());
            while (!stack.isEmpty()) {
                RadixNode n = stack.remove(stack.size() - 1);
                if (n.childVals != null) {
                    for (RadixNode c : n.childVals) {
                        for (; c != null; c = c.hashNext) {
                            stack.add(c);
                        }
                    }
                }
                if (n.isRoot()) {
                    continue;
                }
                List<List<Integer>> prefixes = prefixesOf(n);
                for (int j = 0; j < prefixes.size(); j++) {
                    P s = new P();
                    s.dev = n.hasDeviceValue() ? n.devicePage(j) : -1;
                    s.host = n.isHostResident();
                    s.pending = n.pending() != null;
                    s.lock = n.lockRef();
                    s.hostRef = n.hostRef();
                    actual.put(prefixes.get(j), s.state());
                    if (s.dev >= 0) {
                        assertThat(held.add(s.dev)).as("page %d held twice", s.dev).isTrue();
                    }
                }
            }
            Map<List<Integer>, String> expected = new HashMap<>();
            model.forEach((k, p) -> expected.put(k, p.state()));
            assertThat(actual).isEqualTo(expected);
            for (int page : held) {
                assertThat(freed).as("page %d both held and freed", page).doesNotContain(page);
            }
            assertThat(held.size() + freed.size()).as("pages conserved").isEqualTo(allocated);
        }
    }

    @Property(tries = 300)
    void treeAgreesWithTheReferenceModel(@ForAll @IntRange(min = 0, max = 2) int pageShift,
            @ForAll EvictionPolicy devicePolicy, @ForAll EvictionPolicy hostPolicy,
            @ForAll @Size(min = 1, max = 150) List<@IntRange(min = 0, max = 1_000_000) Integer> script) {
        Run run = new Run(1 << pageShift, devicePolicy, hostPolicy);
        for (int v : script) {
            run.step(v);
        }
    }
}
