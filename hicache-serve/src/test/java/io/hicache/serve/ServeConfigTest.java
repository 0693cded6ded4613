package io.hicache.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import org.junit.jupiter.api.Test;

import java.util.Map;

class ServeConfigTest {

    private static ServeConfig parse(String... args) {
        return ServeConfig.parse(args, Map.of());
    }

    @Test
    void defaultsServeAFourThousandTokenContextOnLoopback() {
        ServeConfig c = parse();
        assertThat(c.host()).isEqualTo("127.0.0.1");
        assertThat(c.port()).isEqualTo(30000);
        assertThat(c.engine().model().contextTokens()).isGreaterThanOrEqualTo(4096);
        assertThat(c.engine().hostTier()).isTrue();
        assertThat(c.apiKey()).isNull();
    }

    @Test
    void flagsAreRead() {
        ServeConfig c = parse("--port", "0", "--host-tokens", "0", "--write-policy", "write_back", "--load-overlap",
            "previous-batch", "--model", "2,64,2,1,64,320", "--context-tokens", "512", "--chunk-tokens", "64");
        assertThat(c.engine().hostTier()).isFalse();
        assertThat(c.engine().writePolicy()).isEqualTo(WritePolicy.WRITE_BACK);
        assertThat(c.engine().loadOverlap()).isEqualTo(LoadOverlap.PREVIOUS_BATCH);
        assertThat(parse("--disable-radix-cache").engine().radixCache()).isFalse();
    }

    @Test
    void theKeyMayComeFromTheEnvironmentAndIsNeverDescribed() {
        ServeConfig c = ServeConfig.parse(new String[0], Map.of(ServeConfig.API_KEY_ENV, "sekrit-123"));
        assertThat(c.apiKey()).isEqualTo("sekrit-123");
        assertThat(c.describe()).doesNotContain("sekrit-123").contains("api_key=on");
        assertThat(parse("--storage", "redis://:pw9876@127.0.0.1:1").describe()).doesNotContain("pw9876");
    }

    @Test
    void badValuesNameTheirFlag() {
        assertThatThrownBy(() -> parse("--port", "x")).hasMessageContaining("--port");
        assertThatThrownBy(() -> parse("--bogus")).hasMessageContaining("--bogus");
        assertThatThrownBy(() -> parse("--chunk-tokens", "10")).hasMessageContaining("--chunk-tokens");
        assertThatThrownBy(() -> parse("--device-tokens", "100")).hasMessageContaining("--device-tokens");
        assertThatThrownBy(() -> parse("--write-policy", "sometimes")).hasMessageContaining("write_through");
        assertThatThrownBy(() -> parse("--storage", "s3://b")).hasMessageContaining("--storage");
        assertThatThrownBy(() -> parse("--host-tokens", "0", "--storage", "file:/tmp/x"))
            .hasMessageContaining("host tier");
        assertThatThrownBy(() -> parse("--api-key")).hasMessageContaining("needs a value");
    }
}
