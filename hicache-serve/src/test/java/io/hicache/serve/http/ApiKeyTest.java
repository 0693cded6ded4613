package io.hicache.serve.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.hicache.serve.TestServer;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;

class ApiKeyTest {

    @Test
    void everyRouteButHealthNeedsTheKeyAndNoAnswerShowsIt() throws Exception {
        String key = "k-" + System.nanoTime() + "-secret";
        try (TestServer s = TestServer.start(TestServer.config(1024, 0), key, 1 << 20)) {
            assertThat(s.get("/health").statusCode()).isEqualTo(200);
            HttpResponse<String> none = s.get("/v1/models");
            assertThat(none.statusCode()).isEqualTo(401);
            assertThat(none.headers().firstValue("www-authenticate")).hasValue("Bearer");
            HttpResponse<String> wrong = s.post("/generate", "{\"text\": \"hi\"}", "Authorization", "Bearer wrong");
            assertThat(wrong.statusCode()).isEqualTo(401);
            assertThat(wrong.body()).doesNotContain(key);
            assertThat(s.get("/metrics").statusCode()).isEqualTo(401);
            HttpResponse<String> ok = s.get("/v1/models", "Authorization", "Bearer " + key);
            assertThat(ok.statusCode()).isEqualTo(200);
            assertThat(s.get("/metrics", "Authorization", "Bearer " + key).body()).doesNotContain(key);
            assertThat(s.get("/get_server_info", "Authorization", "Bearer " + key).body()).doesNotContain(key);
        }
    }
}
