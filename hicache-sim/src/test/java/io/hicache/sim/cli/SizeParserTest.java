package io.hicache.sim.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SizeParserTest {

    @ParameterizedTest(name = "{0} = {1} tokens")
    @CsvSource({"0, 0", "3000000, 3000000", "400k, 400000", "400K, 400000", "1.5M, 1500000", "2.26M, 2260000",
        "3m, 3000000", "1_000_000, 1000000", "0.5k, 500", " 7 , 7"})
    void tokenCountsTakeKiloAndMegaAsTokenMultipliers(String text, long tokens) {
        assertThat(SizeParser.tokens("--host-capacity-tokens", text)).isEqualTo(tokens);
    }

    @Test
    void infAndUnlimitedAreUnlimited() {
        assertThat(SizeParser.tokens("--x", "inf")).isEqualTo(SizeParser.UNLIMITED);
        assertThat(SizeParser.tokens("--x", "unlimited")).isEqualTo(SizeParser.UNLIMITED);
        assertThat(SizeParser.memory("--host-memory", "inf").bytes()).isEqualTo(SizeParser.UNLIMITED);
    }

    /** Before: 64G was silently 64,000,000,000 tokens. A bare G names both readings in one line. */
    @Test
    void aBareGigaOnTokensIsAmbiguous() {
        assertThatThrownBy(() -> SizeParser.tokens("--host-capacity-tokens", "64G"))
                .hasMessage("--host-capacity-tokens 64G is ambiguous: 'G' could mean 64,000,000,000 tokens or 64 GB "
                        + "of memory; write 64000M for tokens, or --host-memory 64GB (or 64GiB) for memory")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
        assertThatThrownBy(() -> SizeParser.tokens("--host-capacity-tokens", "1.5g")).hasMessageContaining(
                "'g' could mean 1,500,000,000 tokens or 1.5 GB of memory; write 1500M for tokens");
        assertThatThrownBy(() -> SizeParser.tokens("--device-capacity-tokens", "2T"))
                .hasMessageContaining("2,000,000,000,000 tokens or 2 TB of memory").hasMessageNotContaining("--host-memory");
    }

    @Test
    void memoryOnATokenOptionPointsAtHostMemory() {
        assertThatThrownBy(() -> SizeParser.tokens("--host-capacity-tokens", "64GB"))
                .hasMessage("--host-capacity-tokens takes tokens, but '64GB' is an amount of memory; give it as "
                        + "--host-memory 64GB");
        assertThatThrownBy(() -> SizeParser.tokens("--host-capacity-tokens", "48GiB"))
                .hasMessageContaining("--host-memory 48GiB");
    }

    @ParameterizedTest(name = "[{0}]")
    @CsvSource({"lots, must be a token count", "12q, unknown suffix 'q'", "1.0005k, must be a whole number of tokens",
        "-5, must be >= 0 tokens", "'', must be a number", "99999999999999999999, more tokens than"})
    void badTokenCountsSayWhatIsWrong(String text, String message) {
        assertThatThrownBy(() -> SizeParser.tokens("--host-capacity-tokens", text)).hasMessageContaining(message)
                .hasMessageStartingWith("--host-capacity-tokens");
    }

    @ParameterizedTest(name = "{0} = {1} bytes")
    @CsvSource({"52GB, 52000000000, false", "48GiB, 51539607552, false", "1.5TB, 1500000000000, false",
        "512MiB, 536870912, false", "13GB/gpu, 13000000000, true", "52 gb, 52000000000, false", "0, 0, false",
        "100B, 100, false", "2TiB/GPU, 2199023255552, true"})
    void memoryTakesDecimalAndBinaryUnitsPerInstanceOrPerGpu(String text, long bytes, boolean perGpu) {
        SizeParser.Memory m = SizeParser.memory("--host-memory", text);
        assertThat(m.bytes()).isEqualTo(bytes);
        assertThat(m.perGpu()).isEqualTo(perGpu);
    }

    @Test
    void aBareUnitLetterOnMemoryIsAmbiguousAndAUnitIsNeeded() {
        assertThatThrownBy(() -> SizeParser.memory("--host-memory", "52G"))
                .hasMessage("--host-memory 52G is ambiguous: 52 GB (52,000,000,000 bytes) or 52 GiB (55,834,574,848 "
                        + "bytes); write 52GB or 52GiB");
        assertThatThrownBy(() -> SizeParser.memory("--host-memory", "1.5t")).hasMessageContaining("1.5 TB")
                .hasMessageContaining("1.5 TiB");
        assertThatThrownBy(() -> SizeParser.memory("--host-memory", "52")).hasMessageContaining("needs a unit");
        assertThatThrownBy(() -> SizeParser.memory("--host-memory", "52 parsecs"))
                .hasMessageContaining("unknown unit 'parsecs'");
    }
}
