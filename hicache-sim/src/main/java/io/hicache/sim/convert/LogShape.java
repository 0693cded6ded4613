package io.hicache.sim.convert;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** The log shapes {@code hicache-sim convert --from} reads. Immutable. */
public enum LogShape {
    /** OpenAI-style chat JSON lines: {@code timestamp}, {@code messages}, {@code completion}; text, so a tokenizer. */
    OPENAI_CHAT("openai-chat"),
    /** Token-id JSON lines: {@code timestamp}, {@code input_ids}, {@code output_length} (or {@code output_ids}). */
    TOKEN_IDS("token-ids"),
    /** Session logs: {@code timestamp}, {@code conversation_id}, {@code turn}, {@code input_length}, {@code output_length}. */
    SESSIONS("sessions"),
    /** The Azure LLM inference trace CSV: {@code TIMESTAMP, ContextTokens, GeneratedTokens}; no prefix information. */
    AZURE_CSV("azure-csv");

    private final String cliName;

    LogShape(String cliName) {
        this.cliName = cliName;
    }

    /** The name used on the command line. */
    public String cliName() {
        return cliName;
    }

    /** Whether the log holds text that needs a tokenizer. */
    public boolean needsTokenizer() {
        return this == OPENAI_CHAT;
    }

    /** Whether the log says which prompts share what (else it converts only with {@code --unique-prefixes}). */
    public boolean hasPrefixInformation() {
        return this != AZURE_CSV;
    }

    /**
     * The shape with this name.
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid ones
     */
    public static LogShape byName(String name) {
        for (LogShape s : values()) {
            if (s.cliName.equals(name.trim().toLowerCase(Locale.ROOT))) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown log shape '" + name + "'; valid: " + names());
    }

    /** The valid names, separated by {@code |}. */
    public static String names() {
        return Arrays.stream(values()).map(LogShape::cliName).collect(Collectors.joining("|"));
    }

    @Override
    public String toString() {
        return cliName;
    }
}
