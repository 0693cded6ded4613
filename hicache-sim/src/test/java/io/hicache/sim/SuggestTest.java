package io.hicache.sim;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class SuggestTest {
    private static final List<String> OPTIONS = List.of("--host-capacity-tokens", "--device-capacity-tokens",
            "--host-memory", "--tolerance", "--trace", "--tp", "--limit");

    @Test
    void suggestsTheNearestByTyposTranspositionsAndPrefixes() {
        assertThat(Suggest.near("--host-capcity-tokens", OPTIONS)).containsExactly("--host-capacity-tokens");
        assertThat(Suggest.near("--tolreance", OPTIONS)).containsExactly("--tolerance");
        assertThat(Suggest.near("--host-capacity", OPTIONS)).containsExactly("--host-capacity-tokens");
        assertThat(Suggest.near("--HOST_MEMORY", OPTIONS)).isEmpty(); // the same name, loosely: not a suggestion
        assertThat(Suggest.near("--frobnicate", OPTIONS)).isEmpty();
        assertThat(Suggest.didYouMean("--trce", OPTIONS)).isEqualTo(" (did you mean '--trace'?)");
        assertThat(Suggest.didYouMean("zzz", OPTIONS)).isEmpty();
    }

    @Test
    void everyNameLookupSuggests() {
        assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> Router.byName("least-loadd")))
                .hasMessage("unknown router 'least-loadd' (did you mean 'least-loaded'?); valid values: round-robin, "
                        + "least-loaded, cache-aware, kv-events");
        assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> OptionSpellings.writePolicy("write-thru")))
                .hasMessageContaining("(did you mean 'write_through'?)");
        assertThat(org.assertj.core.api.Assertions.catchThrowable(
                () -> io.hicache.sim.model.ModelPreset.byName("llama3-7b")))
                .hasMessageContaining("(did you mean 'llama3-70b' or 'llama3-8b'?)");
    }
}
