package io.hicache.serve.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.serve.TestServer;
import io.hicache.serve.engine.Inspection;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** Both APIs over real HTTP, as SGLang's and OpenAI's clients read them, and the refusals the issue lists. */
class ServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static TestServer s;

    @BeforeAll
    static void start() {
        s = TestServer.start(TestServer.config(true, 2048, 8192, 2, 1, null, io.hicache.core.LoadOverlap.SAME_FORWARD,
            io.hicache.core.WritePolicy.WRITE_THROUGH), null, 4096);
    }

    @AfterAll
    static void stop() {
        s.close();
    }

    /** SSE payloads of a body: every event is one {@code data: } line followed by a blank line. */
    static List<String> sse(String body) {
        List<String> out = new ArrayList<>();
        String[] events = body.split("\n\n", -1);
        for (int i = 0; i < events.length - 1; i++) {
            assertThat(events[i]).startsWith("data: ").doesNotContain("\n");
            out.add(events[i].substring("data: ".length()));
        }
        assertThat(events[events.length - 1]).isEmpty();
        return out;
    }

    @Test
    void generateStreamsWhatItAnswersWhole() throws Exception {
        String body = "{\"text\": \"hello there, how are you\", \"sampling_params\": {\"max_new_tokens\": 6, "
            + "\"temperature\": 0, \"ignore_eos\": true}";
        HttpResponse<String> whole = s.post("/generate", body + "}");
        assertThat(whole.statusCode()).isEqualTo(200);
        assertThat(whole.body()).doesNotContain("\n");
        JsonNode w = JSON.readTree(whole.body());
        assertThat(w.path("text").asText()).hasSize(6);
        assertThat(w.path("meta_info").path("completion_tokens").asInt()).isEqualTo(6);
        assertThat(w.path("meta_info").path("prompt_tokens").asInt()).isEqualTo(24);
        assertThat(w.path("meta_info").path("finish_reason").path("type").asText()).isEqualTo("length");

        HttpResponse<String> st = s.post("/generate", body + ", \"stream\": true}");
        assertThat(st.headers().firstValue("content-type").orElse("")).startsWith("text/event-stream");
        List<String> ev = sse(st.body());
        assertThat(ev.getLast()).isEqualTo("[DONE]");
        JsonNode last = JSON.readTree(ev.get(ev.size() - 2));
        assertThat(last.path("text").asText()).isEqualTo(w.path("text").asText());
        JsonNode first = JSON.readTree(ev.getFirst());
        assertThat(w.path("text").asText()).startsWith(first.path("text").asText()); // cumulative text
        assertThat(last.path("meta_info").path("cached_tokens").asInt()).isGreaterThan(0); // the same prompt again
    }

    @Test
    void chatSecondTurnReusesTheFirstAndStreamsUsage() throws Exception {
        String q = "tell me about the sea and the sky and the wind over the hills";
        String req1 = "{\"model\": \"default\", \"messages\": [{\"role\": \"user\", \"content\": \"" + q + "\"}], "
            + "\"max_tokens\": 8, \"temperature\": 0, \"stream\": true, \"stream_options\": {\"include_usage\": true}}";
        List<String> ev = sse(s.post("/v1/chat/completions", req1).body());
        assertThat(ev.getLast()).isEqualTo("[DONE]");
        JsonNode role = JSON.readTree(ev.getFirst());
        assertThat(role.path("choices").get(0).path("delta").path("role").asText()).isEqualTo("assistant");
        StringBuilder answer = new StringBuilder();
        JsonNode usage = null;
        for (String e : ev.subList(0, ev.size() - 1)) {
            JsonNode c = JSON.readTree(e);
            assertThat(c.path("object").asText()).isEqualTo("chat.completion.chunk");
            if (c.path("choices").isEmpty()) {
                usage = c.path("usage");
            } else {
                answer.append(c.path("choices").get(0).path("delta").path("content").asText());
            }
        }
        assertThat(answer).hasSize(8);
        assertThat(usage).isNotNull();
        assertThat(usage.path("completion_tokens").asInt()).isEqualTo(8);
        assertThat(usage.path("prompt_tokens_details").has("cached_tokens")).isTrue();

        String req2 = "{\"model\": \"" + s.engine.model().id() + "\", \"messages\": [{\"role\": \"user\", \"content\": \""
            + q + "\"}, {\"role\": \"assistant\", \"content\": " + JSON.writeValueAsString(answer.toString())
            + "}, {\"role\": \"user\", \"content\": \"and then?\"}], \"max_tokens\": 4, \"temperature\": 0}";
        HttpResponse<String> r2 = s.post("/v1/chat/completions", req2);
        assertThat(r2.statusCode()).isEqualTo(200);
        JsonNode b2 = JSON.readTree(r2.body());
        assertThat(b2.path("choices").get(0).path("message").path("role").asText()).isEqualTo("assistant");
        int prompt1 = ("<|user|>\n" + q + "<|end|>\n<|assistant|>\n").length();
        // the first turn's prompt and answer are whole pages of the second's prefix, up to the page the answer ends in
        assertThat(b2.path("usage").path("prompt_tokens_details").path("cached_tokens").asInt())
            .isGreaterThanOrEqualTo((prompt1 + 8 - 1) / 16 * 16);
    }

    @Test
    void completionsTakeTokenIdsAndTheModelsAreListed() throws Exception {
        HttpResponse<String> r = s.post("/v1/completions", "{\"model\": \"default\", \"prompt\": [40, 50, 60, 70], "
            + "\"max_tokens\": 3, \"temperature\": 0}");
        assertThat(r.statusCode()).isEqualTo(200);
        JsonNode b = JSON.readTree(r.body());
        assertThat(b.path("object").asText()).isEqualTo("text_completion");
        assertThat(b.path("choices").get(0).path("text").asText()).hasSize(3);
        assertThat(b.path("usage").path("prompt_tokens").asInt()).isEqualTo(4);
        JsonNode models = JSON.readTree(s.get("/v1/models").body());
        assertThat(models.path("data").get(0).path("id").asText()).isEqualTo(s.engine.model().id());
        assertThat(s.get("/get_model_info").statusCode()).isEqualTo(200);
        assertThat(s.get("/health").statusCode()).isEqualTo(200);
    }

    @Test
    void badInputGets400WithOneLineSayingWhat() throws Exception {
        expect400("/generate", "{not json", "not valid JSON");
        expect400("/v1/chat/completions", "{\"model\": \"default\", \"messages\": \"not a list\"}", "messages");
        expect400("/v1/completions", "{\"model\": \"gpt-9\", \"prompt\": \"hi\"}", "gpt-9");
        expect400("/v1/completions", "{\"prompt\": \"hi\", \"max_tokens\": 0}", "max_tokens");
        expect400("/generate", "{\"text\": \"hi\", \"sampling_params\": {\"max_new_tokens\": -3}}", "max_new_tokens");
        expect400("/generate", "{\"text\": \"hi\", \"sampling_params\": {\"max_new_tokens\": \"ten\"}}", "integer");
        expect400("/generate", "{\"text\": \"" + "x".repeat(600) + "\"}", "context");
        expect400("/generate", "{\"input_ids\": [1, 2, 99999]}", "vocabulary");
        expect400("/v1/completions", "{\"prompt\": \"hi\", \"temperature\": -1}", "temperature");
        assertThat(s.get("/nope").statusCode()).isEqualTo(404);
        assertThat(s.awaitIdle().idle()).isTrue();
    }

    private static void expect400(String path, String body, String says) throws Exception {
        HttpResponse<String> r = s.post(path, body);
        assertThat(r.statusCode()).as(body).isEqualTo(400);
        JsonNode e = JSON.readTree(r.body()).path("error");
        assertThat(e.path("message").asText()).contains(says).doesNotContain("\n");
        assertThat(e.path("type").asText()).isEqualTo("invalid_request_error");
    }

    @Test
    void aBodyPastTheLimitGets413() throws Exception {
        HttpResponse<String> r = s.post("/generate", "{\"text\": \"" + "y".repeat(8000) + "\"}");
        assertThat(r.statusCode()).isEqualTo(413);
        assertThat(JSON.readTree(r.body()).path("error").path("message").asText()).contains("larger than");
    }

    @Test
    void theSpeedProbeTimesAForwardOfItsShapeAndLeavesTheCacheAlone() throws Exception {
        Inspection before = s.awaitIdle();
        HttpResponse<String> r = s.post("/hicache/speed_probe?runs=3", "");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode p = JSON.readTree(r.body());
        assertThat(p.path("tokens").asInt()).isEqualTo(io.hicache.serve.engine.ForwardProbe.tokens(
            s.engine.config().model().contextTokens()));
        assertThat(p.path("runs").asInt()).isEqualTo(3);
        assertThat(p.path("forward_ms").asDouble()).isPositive();
        Inspection after = s.engine.inspect().join();
        assertThat(after.devicePagesCached()).isEqualTo(before.devicePagesCached()); // its own pool, not the engine's
        assertThat(after.hostPagesCommitted()).isEqualTo(before.hostPagesCommitted());
        assertThat(s.post("/hicache/speed_probe?runs=0", "").statusCode()).isEqualTo(400);
        assertThat(s.post("/hicache/speed_probe?runs=x", "").statusCode()).isEqualTo(400);
        HttpResponse<String> cold = s.post("/hicache/speed_probe?runs=1&warm=0", "");
        assertThat(cold.statusCode()).as(cold.body()).isEqualTo(200);
        assertThat(JSON.readTree(cold.body()).path("warm").asInt()).isZero();
        assertThat(JSON.readTree(r.body()).path("warm").asInt()).isEqualTo(io.hicache.serve.engine.ForwardProbe.WARM);
        assertThat(s.post("/hicache/speed_probe?warm=11", "").statusCode()).isEqualTo(400);
        assertThat(s.post("/hicache/speed_probe?warm=-1", "").statusCode()).isEqualTo(400);
        HttpResponse<String> get = s.client().send(HttpRequest.newBuilder(URI.create(s.url("/hicache/speed_probe")))
            .GET().build(), HttpResponse.BodyHandlers.ofString());
        assertThat(get.statusCode()).isEqualTo(405);
    }

    @Test
    void aFullQueueGets503WithRetryAfterAndAFlushWhileBusyGets409() throws Exception {
        // max-running 2 + max-queued 1: three long streams are held; a fourth request is refused
        List<InputStream> held = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            HttpRequest req = HttpRequest.newBuilder(URI.create(s.url("/generate"))).POST(HttpRequest.BodyPublishers
                .ofString("{\"text\": \"long " + i + "\", \"sampling_params\": {\"max_new_tokens\": 400, "
                    + "\"temperature\": 0}, \"stream\": true}")).build();
            HttpResponse<InputStream> r = s.client().send(req, HttpResponse.BodyHandlers.ofInputStream());
            assertThat(r.statusCode()).isEqualTo(200);
            held.add(r.body());
        }
        HttpResponse<String> refused = s.post("/generate", "{\"text\": \"one more\"}");
        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(refused.headers().firstValue("retry-after")).hasValue("1");
        HttpResponse<String> flush = s.post("/flush_cache", "");
        assertThat(flush.statusCode()).isEqualTo(409);
        for (InputStream in : held) {
            in.readAllBytes();
        }
        Inspection idle = s.awaitIdle();
        assertThat(idle.idle()).as(idle.toString()).isTrue();
        assertThat(s.post("/flush_cache", "").statusCode()).isEqualTo(200);
        Inspection flushed = s.engine.inspect().join();
        assertThat(flushed.devicePagesCached()).isZero();
        assertThat(flushed.hostPagesCommitted()).isZero();
    }

    @Test
    void aClientThatDisconnectsMidStreamIsAbortedAndNothingLeaks() throws Exception {
        long before = s.metrics.disconnects();
        try (Socket sock = new Socket("127.0.0.1", s.port)) {
            String body = "{\"text\": \"a stream nobody reads to the end\", \"sampling_params\": {\"max_new_tokens\": 400},"
                + " \"stream\": true}";
            OutputStream out = sock.getOutputStream();
            out.write(("POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
            out.flush();
            byte[] buf = new byte[4096];
            String got = "";
            while (!got.contains("data: ")) {
                int n = sock.getInputStream().read(buf);
                assertThat(n).isPositive();
                got += new String(buf, 0, n, StandardCharsets.UTF_8);
            }
        } // closed mid-stream
        Inspection i = s.awaitIdle();
        assertThat(i.idle()).as(i.toString()).isTrue();
        assertThat(s.metrics.disconnects()).isEqualTo(before + 1);
    }

    @Test
    void aClientThatDisconnectsMidPrefillIsAbortedAndNothingLeaks() throws Exception {
        long before = s.metrics.disconnects();
        try (Socket sock = new Socket("127.0.0.1", s.port)) {
            String body = "{\"text\": \"" + "z".repeat(450) + "\", \"sampling_params\": {\"max_new_tokens\": 40}}";
            sock.getOutputStream().write(("POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
            sock.getOutputStream().flush();
        } // closed before any answer: 450 tokens are 15 chunks of 32
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (s.metrics.disconnects() == before && System.nanoTime() < deadline) {
            s.engine.inspect().join(); // one round trip through the engine's queue per look: the abort lands at a step
        }
        Inspection i = s.awaitIdle();
        assertThat(i.idle()).as(i.toString()).isTrue();
        assertThat(s.metrics.disconnects()).isEqualTo(before + 1);
    }

    @Test
    void metricsAreInPrometheusTextWithTheServersAndTheLibrarysNames() throws Exception {
        s.post("/generate", "{\"text\": \"count me\", \"sampling_params\": {\"max_new_tokens\": 2}}");
        String m = s.get("/metrics").body();
        assertThat(m).contains("# TYPE", "hicache_serve_prompt_tokens_total", "hicache_serve_cached_tokens_total{",
            "cache_source=\"host\"", "hicache_serve_time_to_first_token_seconds_bucket",
            "hicache_serve_inter_token_latency_seconds_bucket", "hicache_serve_num_running_reqs",
            "hicache_serve_num_queue_reqs", "hicache_serve_token_usage", "hicache_backup_committed_total",
            "hicache_load_completed_total");
    }
}
