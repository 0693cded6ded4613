package io.hicache.sim.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.sim.DefaultEngineFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The storage options of {@code replay} and the {@code keys} subcommand. */
class StorageCliTest {

    @TempDir
    Path work;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        Main.Env env = new Main.Env(new DefaultEngineFactory(), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), work, MainTest.repoRoot(), false);
        return Main.run(env, args);
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void keysPrintsSglangKeysOnePerLineAndNothingElse() throws IOException {
        Files.writeString(work.resolve("t.txt"), "1 2 3 4\n5 6 7 8 9");
        int rc = run("keys", "--page-size", "4", "--namespace", "none", "t.txt");
        assertThat(rc).as(err()).isZero();
        String[] lines = out().split("\n");
        assertThat(lines).hasSize(3); // two whole pages and the partial last one
        for (String l : lines) {
            assertThat(l).matches("[0-9a-f]{64}");
        }
        // the first key is SHA-256 over the 16 little-endian bytes of ids 1..4, as SGLang's get_hash_str
        assertThat(lines[0]).isEqualTo(sha256Hex(new byte[] {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}));
        assertThat(err()).isEmpty();
    }

    @Test
    void keysWithANamespaceDifferAndBigramNeedsTwoIds() throws IOException {
        Files.writeString(work.resolve("t.txt"), "1 2 3 4");
        assertThat(run("keys", "--page-size", "4", "t.txt")).isZero();
        String none = out();
        out.reset();
        assertThat(run("keys", "--page-size", "4", "--namespace", "model=m,dtype=bf16,salt=s3cr3t", "t.txt")).isZero();
        assertThat(out()).isNotEqualTo(none).matches("[0-9a-f]{64}\n");
        out.reset();
        assertThat(run("keys", "--page-size", "2", "--bigram", "t.txt")).isZero();
        assertThat(out().split("\n")).hasSize(2); // 3 pairs in pages of 2
        Files.writeString(work.resolve("one.txt"), "7");
        assertThat(run("keys", "--page-size", "2", "--bigram", "one.txt")).isEqualTo(2);
        assertThat(err()).contains("--bigram needs at least 2");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "keys --page-size 0 t.txt|--page-size must be >= 1",
        "keys --page-size 4 missing.txt|FILE: cannot read missing.txt",
        "keys --page-size 4 bad.txt|FILE: token 2 of bad.txt is not an unsigned 32-bit id",
        "keys --page-size 4 --namespace model=m t.txt|--namespace: kvDtype must be non-empty",
        "keys --page-size 4 --namespace colour=red t.txt|--namespace: unknown field 'colour'",
        "replay --storage ftp://x|--storage must be model, file:DIR or redis://",
        "replay --storage model --cache-only|drop --cache-only",
        "replay --storage file:|--storage file: needs a directory",
        "replay --storage model --host-capacity-tokens 0|needs a host tier",
        "replay --prefetch-policy wait_complete|--prefetch-policy needs a storage tier",
        "replay --storage model --prefetch-policy soon|--prefetch-policy: unknown prefetch policy 'soon'",
        "replay --storage model --storage-write-policy never|--storage-write-policy: unknown storage write policy",
        "replay --storage file:/tmp/x --storage-capacity-tokens 1000|applies to --storage model only",
        "replay --storage-capacity-tokens 10 --page-size 64|at least one page (64 tokens)",
        "replay --storage model --storage-bandwidth-gbps 0|--storage-bandwidth-gbps must be in (0, 1e6]",
        "compare --storage model|runs with replay only",
    })
    void badStorageInputIsOneLineNamingTheFlagExit2(String args, String message) throws IOException {
        Files.writeString(work.resolve("t.txt"), "1 2 3 4");
        Files.writeString(work.resolve("bad.txt"), "1 x 3");
        int rc = run(args.split(" "));
        assertThat(rc).isEqualTo(2);
        assertThat(out()).isEmpty();
        assertThat(err().lines().findFirst().orElse("")).contains(message);
    }

    @Test
    void aPasswordInTheLocationNeverReachesTheOutput() {
        int rc = run("replay", "--storage", "redis://user:hunter2-topsecret@127.0.0.1:1", "--cache-only");
        assertThat(rc).isEqualTo(2);
        assertThat(err()).doesNotContain("hunter2").contains("redis://user:***@127.0.0.1:1");
        assertThat(Main.redacted(new String[] {"--storage=rediss://:pw-x@h:1", "--limit", "3"}))
                .containsExactly("--storage=rediss://:***@h:1", "--limit", "3");
    }

    @Test
    void modelStorageOnASmallCacheServesHitsAndWritesTheJsonFields() throws IOException {
        int rc = run("replay", "--limit", "300", "--device-capacity-tokens", "100000", "--host-capacity-tokens",
                "200000", "--storage-capacity-tokens", "inf", "--json", "r.json", "--html", "r.html",
                "--skip-oversized"); // the first 300 requests have prompts over 100k
        assertThat(rc).as(err()).isZero();
        JsonNode n = new ObjectMapper().readTree(work.resolve("r.json").toFile());
        assertThat(n.get("storage").asText()).isEqualTo("model");
        assertThat(n.get("storage_hit_tokens").asLong()).isPositive();
        assertThat(n.get("storage_write_bytes").asLong()).isPositive();
        assertThat(n.get("prefetch_pages_published").asLong()).isPositive();
        assertThat(n.get("host_hit_tokens").asLong()).isGreaterThanOrEqualTo(n.get("storage_hit_tokens").asLong());
        String html = Files.readString(work.resolve("r.html"));
        assertThat(html).contains("Storage tier (L3)", "of which storage", "without storage");
        try { // well-formed, like every report
            var f = javax.xml.parsers.DocumentBuilderFactory.newInstance();
            f.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
            f.newDocumentBuilder().parse(new org.xml.sax.InputSource(new java.io.StringReader(html)));
        } catch (javax.xml.parsers.ParserConfigurationException | org.xml.sax.SAXException e) {
            throw new AssertionError("report is not well-formed: " + e.getMessage(), e);
        }
        for (String f : new String[] {"prefetch_started", "prefetch_bytes", "prefetch_bytes_per_s",
            "storage_write_pages", "prefetch_wait_seconds", "prefetch_queue_peak"}) {
            assertThat(n.has(f)).as(f).isTrue();
        }
    }

    private static String sha256Hex(byte[] b) {
        try {
            byte[] d = java.security.MessageDigest.getInstance("SHA-256").digest(b);
            StringBuilder sb = new StringBuilder();
            for (byte x : d) {
                sb.append(String.format("%02x", x));
            }
            return sb.toString();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
