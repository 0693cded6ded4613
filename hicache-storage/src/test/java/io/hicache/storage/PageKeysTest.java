package io.hicache.storage;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.core.memory.HostLayout;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PageKeysTest {

    private static JsonNode vectors() throws Exception {
        try (InputStream in = PageKeysTest.class.getResourceAsStream("/sglang_page_hash_vectors.json")) {
            assertThat(in).as("sglang_page_hash_vectors.json on the test class path").isNotNull();
            return new ObjectMapper().readTree(in);
        }
    }

    @Test
    void reproducesEverySglangVector() throws Exception {
        JsonNode cases = vectors().get("cases");
        assertThat(cases.size()).isGreaterThanOrEqualTo(40);
        int pagesChecked = 0;
        for (JsonNode c : cases) {
            JsonNode tokNode = c.get("tokens");
            int[] tokens = new int[tokNode.size()];
            for (int i = 0; i < tokens.length; i++) {
                tokens[i] = (int) tokNode.get(i).asLong(); // unsigned 32-bit ids
            }
            PageKey prior = c.get("prior_hex").isNull() ? null : PageKey.fromHex(c.get("prior_hex").asText());
            int pageSize = c.get("page_size").asInt();
            PageKey[] keys = c.get("bigram").asBoolean()
                    ? PageKeys.bigramChain(prior, tokens, pageSize)
                    : PageKeys.chain(prior, tokens, pageSize);
            List<String> expected = new ArrayList<>();
            c.get("page_hashes").forEach(h -> expected.add(h.asText()));
            List<String> actual = new ArrayList<>();
            for (PageKey k : keys) {
                actual.add(k.hex());
            }
            assertThat(actual).as(c.get("name").asText()).isEqualTo(expected);
            pagesChecked += expected.size();
        }
        assertThat(pagesChecked).isGreaterThan(100);
    }

    @Test
    void incrementalNextMatchesTheChain() {
        int[] tokens = new int[50];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = 0x9000_0000 + i * 7919; // above 2^31: taken as unsigned
        }
        PageKey[] chain = PageKeys.chain(null, tokens, 16);
        PageKey prev = null;
        for (int p = 0; p < chain.length; p++) {
            prev = PageKeys.next(prev, tokens, p * 16, Math.min(tokens.length, p * 16 + 16));
            assertThat(prev).isEqualTo(chain[p]);
        }
    }

    @Test
    void noneNamespaceIsExactlySglangAndSeedsDifferPerField() throws Exception {
        JsonNode first = vectors().get("cases").get(0);
        int[] tokens = new int[16];
        for (int i = 0; i < 16; i++) {
            tokens[i] = first.get("tokens").get(i).asInt();
        }
        assertThat(KeyNamespace.NONE.seed()).isNull();
        assertThat(PageKeys.chain(KeyNamespace.NONE.seed(), tokens, 16)[0].hex())
                .isEqualTo(first.get("page_hashes").get(0).asText());

        KeyNamespace base = ns().build();
        List<KeyNamespace> variants = List.of(base,
                ns().modelId("m2").build(), ns().kvDtype("fp8_e4m3").build(), ns().pageSizeTokens(32).build(),
                ns().hostLayout(HostLayout.LAYER_FIRST).build(), ns().role(KeyNamespace.Role.DRAFT).build(),
                ns().tp(2, 1).build(), ns().cp(2, 0).build(), ns().cp(2, 1).build(),
                ns().loraAdapterId("adapter-a").build(), ns().salt("tenant-a").build(), ns().salt("tenant-b").build());
        Set<PageKey> seeds = new HashSet<>();
        Set<PageKey> firstKeys = new HashSet<>();
        for (KeyNamespace v : variants) {
            seeds.add(v.seed());
            firstKeys.add(PageKeys.chain(v.seed(), tokens, 16)[0]);
        }
        assertThat(seeds).hasSize(variants.size());
        assertThat(firstKeys).hasSize(variants.size()).doesNotContain(PageKey.fromHex(first.get("page_hashes").get(0).asText()));
        // the same configuration built twice (two machines) makes the same keys
        assertThat(ns().build().chain(tokens)).containsExactly(base.chain(tokens));
        assertThat(base.withCpLane(0)).isEqualTo(base);
        assertThat(ns().cp(2, 0).build().withCpLane(1)).isEqualTo(ns().cp(2, 1).build());
    }

    @Test
    void seedIsAFixedFunctionOfTheDocumentedFields() {
        // pins the encoding: a change of the seed format changes every stored key and must be deliberate
        KeyNamespace n = ns().build();
        java.security.MessageDigest md = PageKeys.sha256();
        md.update("hicache.l3.namespace.v1\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        for (Object f : new Object[] {"llama-3-8b@main", "bfloat16", 16, "PAGE_FIRST_DIRECT", "target", 1, 0, 1, 0, "", ""}) {
            byte[] b = f instanceof String s ? s.getBytes(java.nio.charset.StandardCharsets.UTF_8) : null;
            int v = b != null ? b.length : (Integer) f;
            md.update(new byte[] {(byte) v, (byte) (v >>> 8), (byte) (v >>> 16), (byte) (v >>> 24)});
            if (b != null) {
                md.update(b);
            }
        }
        assertThat(n.seed()).isEqualTo(PageKey.ofDigest(md.digest()));
    }

    @Test
    void draftKeysDigestTheDraftSeedAndTheTargetKeyAndLeaveTheTargetChainAsItIs() {
        // pins the draft key encoding: SHA-256(draft seed ‖ target key), the draft seed being the namespace's seed
        // with the role "draft", or a fixed digest for the none namespace
        KeyNamespace n = ns().build();
        int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
        PageKey[] target = n.chain(tokens);
        assertThat(n.draftSeed()).isEqualTo(n.withRole(KeyNamespace.Role.DRAFT).seed());
        assertThat(n.withRole(KeyNamespace.Role.DRAFT).draftSeed()).isEqualTo(n.draftSeed());
        java.security.MessageDigest md = PageKeys.sha256();
        md.update("hicache.l3.draft.none.v1\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        PageKey noneDraftSeed = PageKey.ofDigest(md.digest());
        assertThat(KeyNamespace.NONE.draftSeed()).isEqualTo(noneDraftSeed);
        Set<PageKey> all = new HashSet<>(List.of(target));
        for (KeyNamespace ns : new KeyNamespace[] {n, KeyNamespace.NONE}) {
            PageKey[] keys = ns.isNone() ? PageKeys.chain(null, tokens, 16) : target;
            for (PageKey t : keys) {
                md.reset();
                md.update(ns.draftSeed().toBytes());
                md.update(t.toBytes());
                PageKey d = ns.draftKey(t);
                assertThat(d).isEqualTo(PageKey.ofDigest(md.digest()));
                assertThat(all.add(d)).as("a draft key is no other page's key").isTrue();
                all.add(t);
            }
        }
        assertThat(n.chain(tokens)).containsExactly(target); // the target chain does not depend on the draft
        assertThatThrownBy(() -> n.draftKey(null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("targetKey");
    }

    @Test
    void saltIsNeverPrinted() {
        KeyNamespace n = ns().salt("s3cr3t-salt").build();
        assertThat(n.toString()).doesNotContain("s3cr3t-salt").contains("salt=set");
    }

    @Test
    void onlyWellFormedHexParses() {
        String good = "5d85718ec594b982c252d0279e5966ffca33a5eaf2a455038d3ab331fde70cea";
        assertThat(PageKey.fromHex(good).hex()).isEqualTo(good);
        for (String bad : new String[] {"", good.substring(1), good + "0", good.toUpperCase(Locale.ROOT),
                "../" + good.substring(3), good.substring(0, 63) + "/", good.substring(0, 63) + "g"}) {
            assertThat(PageKey.isWellFormedHex(bad)).as(bad).isFalse();
            assertThatThrownBy(() -> PageKey.fromHex(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("64 lowercase hex");
        }
    }

    @Test
    void badArgumentsNameTheValue() {
        assertThatThrownBy(() -> PageKeys.chain(null, new int[4], 0)).hasMessageContaining("pageSizeTokens");
        assertThatThrownBy(() -> PageKeys.bigramChain(null, new int[1], 4)).hasMessageContaining("at least 2");
        assertThatThrownBy(() -> ns().cp(2, 2).build()).hasMessageContaining("cp lane");
        assertThatThrownBy(() -> ns().modelId("").build()).hasMessageContaining("modelId");
    }

    static KeyNamespace.Builder ns() {
        return KeyNamespace.builder().modelId("llama-3-8b@main").kvDtype("bfloat16").pageSizeTokens(16)
                .hostLayout(HostLayout.PAGE_FIRST_DIRECT);
    }
}
