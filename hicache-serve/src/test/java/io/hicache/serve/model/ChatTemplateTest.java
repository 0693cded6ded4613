package io.hicache.serve.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

class ChatTemplateTest {

    /** A client that appends the answer it got and a new question finds the earlier prompt and the answer as a prefix. */
    @Property(tries = 200)
    void aNextTurnBeginsWithThePromptAndTheAnswer(@ForAll String system, @ForAll String q1, @ForAll String answer,
                                                  @ForAll String q2) {
        List<ChatTemplate.Message> turn1 = new ArrayList<>(List.of(new ChatTemplate.Message("system", system),
            new ChatTemplate.Message("user", q1)));
        String prompt1 = ChatTemplate.render(turn1);
        List<ChatTemplate.Message> turn2 = new ArrayList<>(turn1);
        turn2.add(new ChatTemplate.Message("assistant", answer));
        turn2.add(new ChatTemplate.Message("user", q2));
        assertThat(ChatTemplate.render(turn2)).startsWith(prompt1 + answer);
    }

    @Test
    void unknownRolesAreRefused() {
        assertThatThrownBy(() -> new ChatTemplate.Message("robot", "x")).hasMessageContaining("robot");
    }

    @Test
    void developerIsRenderedAsSystem() {
        assertThat(ChatTemplate.render(List.of(new ChatTemplate.Message("developer", "be brief"))))
            .isEqualTo("<|system|>\nbe brief<|end|>\n<|assistant|>\n");
    }

    @Test
    void modelShapesAreCheckedAndNamed() {
        assertThat(ModelSpec.parse("tiny", 4096, 17).id()).isEqualTo("hicache-llama-tiny");
        assertThat(ModelSpec.parse("2,64,2,1,64,320", 512, 3).id()).isEqualTo("hicache-llama-2x64-h2kv1-f64-v320-s3");
        assertThatThrownBy(() -> ModelSpec.parse("2,64,2,1,64,100", 512, 3)).hasMessageContaining("vocab 100");
        assertThatThrownBy(() -> ModelSpec.parse("2,64,x,1,64,320", 512, 3)).hasMessageContaining("'x'");
        assertThatThrownBy(() -> ModelSpec.parse("huge", 512, 3)).hasMessageContaining("six numbers");
    }
}
