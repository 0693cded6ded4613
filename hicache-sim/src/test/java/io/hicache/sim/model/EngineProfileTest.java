package io.hicache.sim.model;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class EngineProfileTest {

    /** A valid profile; {@code grid} replaces the forward_ms object, {@code extra} is spliced into the top level. */
    static String profile(String grid, String extra) {
        return """
                {"format": "hicache-engine-profile", "version": 1, "engine": "hicache-serve",
                 "model": {"id": "tiny", "layers": 4, "hidden": 256, "heads": 4, "kv_heads": 2, "ffn": 512,
                           "vocab": 1000, "context_tokens": 4096},
                 "page_size": 16, "kv_bytes_per_token": 4096,
                 "scheduler": {"chunk_tokens": 256, "max_running": 8, "policy": "one chunk, then decodes"},
                 "forward_ms": %s,
                 "logits_ms": 0.5, "step_overhead_ms": 0.1, "request_overhead_ms": 2,
                 "load": {"bytes_per_s": 1e9, "fixed_ms": 0.05},
                 "backup": {"bytes_per_s": 2e9, "fixed_ms": 0.02},
                 "calibration": {"date": "2026-12-07", "runs": 3},
                 "unknown_field": [1, 2, 3]%s}
                """.formatted(grid, extra);
    }

    static final String GRID = """
            {"tokens": [1, 16, 64], "context": [0, 512, 2048],
             "ms": [[1, 2, 4], [3, 4, 8], [10, 12, 20]]}""";

    static EngineProfile valid() {
        return EngineProfile.parse(profile(GRID, ""), "p.json");
    }

    @Test
    void parsesEveryField() {
        EngineProfile p = valid();
        assertThat(p.engine()).isEqualTo("hicache-serve");
        assertThat(p.model()).isEqualTo(new EngineProfile.Model("tiny", 4, 256, 4, 2, 512, 1000, 4096));
        assertThat(p.pageSize()).isEqualTo(16);
        assertThat(p.kvBytesPerToken()).isEqualTo(4096);
        assertThat(p.chunkTokens()).isEqualTo(256);
        assertThat(p.maxRunning()).isEqualTo(8);
        assertThat(p.policy()).isEqualTo("one chunk, then decodes");
        assertThat(p.logitsMs()).isEqualTo(0.5);
        assertThat(p.stepOverheadMs()).isEqualTo(0.1);
        assertThat(p.requestOverheadMs()).isEqualTo(2);
        assertThat(p.load()).isEqualTo(new EngineProfile.CopyRate(1e9, 0.05));
        assertThat(p.backup()).isEqualTo(new EngineProfile.CopyRate(2e9, 0.02));
        assertThat(p.load().ms(1e6)).isCloseTo(1.05, within(1e-9));
        assertThat(p.calibration()).contains("2026-12-07");
        assertThat(p.tokenAxis()).containsExactly(1, 16, 64);
        assertThat(p.contextAxis()).containsExactly(0, 512, 2048);
    }

    @Test
    void theBusyFactorIsOptionalAndMustBePositive() {
        assertThat(valid().prefillBusyFactor()).isEqualTo(1.0);
        assertThat(EngineProfile.parse(profile(GRID, ", \"prefill_busy_factor\": 1.3"), "p.json").prefillBusyFactor())
            .isEqualTo(1.3);
        assertThatThrownBy(() -> EngineProfile.parse(profile(GRID, ", \"prefill_busy_factor\": 0"), "p.json"))
            .hasMessageContaining("prefill_busy_factor");
        assertThatThrownBy(() -> EngineProfile.parse(profile(GRID, ", \"prefill_busy_factor\": \"x\""), "p.json"))
            .hasMessageContaining("prefill_busy_factor");
    }

    @Test
    void theServiceFactorIsOptionalAndMustBePositive() {
        assertThat(valid().prefillServiceFactor()).isEqualTo(1.0);
        assertThat(EngineProfile.parse(profile(GRID, ", \"prefill_service_factor\": 1.12"), "p.json")
            .prefillServiceFactor()).isEqualTo(1.12);
        for (String bad : new String[] {"0", "-1", "\"x\"", "1e400"}) {
            assertThatThrownBy(() -> EngineProfile.parse(profile(GRID, ", \"prefill_service_factor\": " + bad),
                "p.json")).hasMessageContaining("prefill_service_factor");
        }
    }

    @Test
    void readsAFile(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("p.json");
        Files.writeString(f, profile(GRID, ""));
        assertThat(EngineProfile.read(f).model().id()).isEqualTo("tiny");
        assertThatThrownBy(() -> EngineProfile.read(dir.resolve("none.json")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("none.json")
                .hasMessageContaining("cannot read");
    }

    @Test
    void gridPointsAreExact() {
        EngineProfile p = valid();
        assertThat(p.forwardMs(1, 0)).isEqualTo(1);
        assertThat(p.forwardMs(16, 512)).isEqualTo(4);
        assertThat(p.forwardMs(64, 2048)).isEqualTo(20);
    }

    @Test
    void interpolatesBilinearly() {
        EngineProfile p = valid();
        // along tokens at context 0: halfway from 16 (3) to 64 (10)
        assertThat(p.forwardMs(40, 0)).isCloseTo(6.5, within(1e-9));
        // along context at 16 tokens: a quarter from 512 (4) to 2048 (8)
        assertThat(p.forwardMs(16, 896)).isCloseTo(5, within(1e-9));
        // the centre of the cell (16..64) x (512..2048): mean of its corners 4, 8, 12, 20
        assertThat(p.forwardMs(40, 1280)).isCloseTo((4 + 8 + 12 + 20) / 4.0, within(1e-9));
    }

    @Test
    void extrapolatesLinearlyFromTheLastTwoPoints() {
        EngineProfile p = valid();
        // tokens past 64 at context 0: slope (10 - 3) / 48 per token
        assertThat(p.forwardMs(112, 0)).isCloseTo(10 + 7.0 * 48 / 48, within(1e-9));
        // context past 2048 at 1 token: slope (4 - 2) / 1536
        assertThat(p.forwardMs(1, 3584)).isCloseTo(6, within(1e-9));
        // both axes past the grid: the bilinear form of the last cell
        double tx = (112 - 16) / 48.0;
        double ty = (3584 - 512) / 1536.0;
        double expect = (1 - tx) * (1 - ty) * 4 + tx * (1 - ty) * 12 + (1 - tx) * ty * 8 + tx * ty * 20;
        assertThat(p.forwardMs(112, 3584)).isCloseTo(expect, within(1e-9));
    }

    @Test
    void extrapolationIsClampedAtZero() {
        String falling = """
                {"tokens": [1, 2], "context": [0, 100], "ms": [[5, 1], [6, 2]]}""";
        EngineProfile p = EngineProfile.parse(profile(falling, ""), "p.json");
        // context 1000 at 1 token: 5 - 4 * 10 < 0
        assertThat(p.forwardMs(1, 1000)).isZero();
        assertThat(p.forwardMs(1, 50)).isCloseTo(3, within(1e-9));
    }

    @Test
    void aOnePointAxisIsConstant() {
        String one = """
                {"tokens": [1], "context": [0, 1000], "ms": [[2, 4]]}""";
        EngineProfile p = EngineProfile.parse(profile(one, ""), "p.json");
        assertThat(p.forwardMs(500, 500)).isCloseTo(3, within(1e-9));
        assertThat(p.forwardMs(1, 2000)).isCloseTo(6, within(1e-9));
    }

    @Test
    void refusesAnotherFormatOrVersion() {
        String text = profile(GRID, "");
        assertThatThrownBy(() -> EngineProfile.parse(text.replace("\"hicache-engine-profile\"", "\"other\""), "p.json"))
                .hasMessage("engine profile p.json: format must be \"hicache-engine-profile\", got \"other\"");
        assertThatThrownBy(() -> EngineProfile.parse(text.replace("\"version\": 1", "\"version\": 2"), "p.json"))
                .hasMessageContaining("version 2 is not supported");
        assertThatThrownBy(() -> EngineProfile.parse("[1]", "p.json")).hasMessageContaining("not a JSON object");
        assertThatThrownBy(() -> EngineProfile.parse("{", "p.json")).hasMessageStartingWith("engine profile p.json: not JSON")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }

    @Test
    void refusesAMissingFieldNamingIt() {
        String text = profile(GRID, "");
        assertThatThrownBy(() -> EngineProfile.parse(text.replace("\"kv_heads\": 2,", ""), "p.json"))
                .hasMessage("engine profile p.json: missing field model.kv_heads");
        assertThatThrownBy(() -> EngineProfile.parse(text.replace("\"logits_ms\": 0.5,", ""), "p.json"))
                .hasMessage("engine profile p.json: missing field logits_ms");
        assertThatThrownBy(() -> EngineProfile.parse(text.replace("\"fixed_ms\": 0.05", "\"x\": 0"), "p.json"))
                .hasMessage("engine profile p.json: missing field load.fixed_ms");
        assertThatThrownBy(() -> EngineProfile.parse(text.replace("\"page_size\": 16", "\"page_size\": \"16\""),
                "p.json")).hasMessageContaining("page_size must be an integer");
        assertThatThrownBy(() -> EngineProfile.parse(text.replace("\"page_size\": 16", "\"page_size\": 12"),
                "p.json")).hasMessageContaining("page_size must be a power of two");
        assertThatThrownBy(() -> EngineProfile.parse(text.replace("\"bytes_per_s\": 1e9", "\"bytes_per_s\": 0"),
                "p.json")).hasMessageContaining("load.bytes_per_s must be > 0");
    }

    @Test
    void refusesAnAxisThatDoesNotAscend() {
        String bad = """
                {"tokens": [1, 64, 16], "context": [0, 512, 2048], "ms": [[1, 2, 4], [3, 4, 8], [10, 12, 20]]}""";
        assertThatThrownBy(() -> EngineProfile.parse(profile(bad, ""), "p.json"))
                .hasMessageContaining("forward_ms.tokens must be strictly ascending");
        String dup = """
                {"tokens": [1, 16, 64], "context": [0, 512, 512], "ms": [[1, 2, 4], [3, 4, 8], [10, 12, 20]]}""";
        assertThatThrownBy(() -> EngineProfile.parse(profile(dup, ""), "p.json"))
                .hasMessageContaining("forward_ms.context must be strictly ascending");
        String empty = """
                {"tokens": [], "context": [0], "ms": []}""";
        assertThatThrownBy(() -> EngineProfile.parse(profile(empty, ""), "p.json"))
                .hasMessageContaining("forward_ms.tokens must be a non-empty array");
    }

    @Test
    void refusesARaggedOrNegativeGrid() {
        String ragged = """
                {"tokens": [1, 16, 64], "context": [0, 512, 2048], "ms": [[1, 2, 4], [3, 4], [10, 12, 20]]}""";
        assertThatThrownBy(() -> EngineProfile.parse(profile(ragged, ""), "p.json"))
                .hasMessageContaining("forward_ms.ms[1] must hold 3 numbers");
        String rows = """
                {"tokens": [1, 16, 64], "context": [0, 512, 2048], "ms": [[1, 2, 4], [3, 4, 8]]}""";
        assertThatThrownBy(() -> EngineProfile.parse(profile(rows, ""), "p.json"))
                .hasMessageContaining("forward_ms.ms must be an array of 3 rows");
        String negative = """
                {"tokens": [1, 16, 64], "context": [0, 512, 2048], "ms": [[1, 2, 4], [3, -4, 8], [10, 12, 20]]}""";
        assertThatThrownBy(() -> EngineProfile.parse(profile(negative, ""), "p.json"))
                .hasMessage("engine profile p.json: forward_ms.ms[1][1] must be >= 0 ms, got -4.0");
        String text = profile(GRID, "");
        assertThatThrownBy(() -> EngineProfile.parse(text.replace("\"step_overhead_ms\": 0.1",
                "\"step_overhead_ms\": -1"), "p.json")).hasMessageContaining("step_overhead_ms must be >= 0");
    }
}
