package io.hicache.serve;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The engine as a process: it prints its ready line, SIGTERM lets the request in flight finish, stops accepting,
 * closes the cache and exits 0; a second process on the same L3 store serves the first one's conversation from it.
 */
class ServeMainTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern READY = Pattern.compile("serve: ready on http://127\\.0\\.0\\.1:(\\d+) ");

    private record Engine(Process process, int port, Path err) {
    }

    private static Engine start(Path l3, Path err) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
            "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
            "--sun-misc-unsafe-memory-access=allow", "-XX:+UnlockDiagnosticVMOptions",
            "-XX:DisableIntrinsic=_VectorReductionCoerced", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp", System.getProperty("java.class.path"), "io.hicache.serve.ServeMain", "--port", "0", "--model",
            "2,64,2,1,64,320", "--context-tokens", "512", "--device-tokens", "512", "--host-tokens", "2048",
            "--chunk-tokens", "32", "--storage", "file:" + l3, "--shutdown-grace-s", "30", "--prefetch-policy",
            "wait_complete", "--prefetch-threshold-tokens", "0"));
        Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        assertThat(line).as("the ready line; stderr: %s", Files.exists(err) ? Files.readString(err) : "").isNotNull();
        Matcher m = READY.matcher(line);
        assertThat(m.find()).as(line).isTrue();
        return new Engine(p, Integer.parseInt(m.group(1)), err);
    }

    @Test
    void sigtermDrainsAndExitsZeroAndARestartServesFromL3(@TempDir Path dir) throws Exception {
        Path l3 = Files.createDirectories(dir.resolve("l3"));
        String prompt = "a conversation that outlives the process it was served by, twice over ".repeat(2);
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        Engine a = start(l3, dir.resolve("a.err"));
        String first;
        try {
            first = answer(http, a.port(), prompt, 6).path("text").asText();
            // a long stream in flight when SIGTERM arrives: it finishes within the grace period
            HttpRequest long1 = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + a.port() + "/generate"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"text\": \"keep going\", \"sampling_params\": "
                    + "{\"max_new_tokens\": 120, \"temperature\": 0}, \"stream\": true}")).build();
            HttpResponse<java.util.stream.Stream<String>> running = http.send(long1, HttpResponse.BodyHandlers.ofLines());
            assertThat(running.statusCode()).isEqualTo(200);
            CompletableFuture<List<String>> lines = CompletableFuture.supplyAsync(() -> running.body().toList());
            a.process().destroy(); // SIGTERM
            List<String> got = lines.get(60, TimeUnit.SECONDS);
            assertThat(got).contains("data: [DONE]");
            String last = got.stream().filter(l -> l.startsWith("data: {")).reduce((x, y) -> y).orElseThrow();
            assertThat(JSON.readTree(last.substring(6)).path("meta_info").path("completion_tokens").asInt())
                .isEqualTo(120);
            assertThat(a.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(a.process().exitValue()).as(Files.readString(a.err())).isZero();
            assertThat(Files.readString(a.err())).contains("serve: stopped");
        } finally {
            a.process().destroyForcibly();
        }
        Engine b = start(l3, dir.resolve("b.err"));
        try {
            JsonNode again = answer(http, b.port(), prompt, 6);
            assertThat(again.path("text").asText()).isEqualTo(first);
            assertThat(again.path("meta_info").path("cached_tokens_details").path("storage").asInt()).isPositive();
        } finally {
            b.process().destroy();
            assertThat(b.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(b.process().exitValue()).isZero();
        }
    }

    private static JsonNode answer(HttpClient http, int port, String prompt, int n) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/generate"))
            .POST(HttpRequest.BodyPublishers.ofString("{\"text\": " + JSON.writeValueAsString(prompt)
                + ", \"sampling_params\": {\"max_new_tokens\": " + n + ", \"temperature\": 0}}")).build(),
            HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }
}
