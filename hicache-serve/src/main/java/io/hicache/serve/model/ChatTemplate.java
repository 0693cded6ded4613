package io.hicache.serve.model;

import java.util.List;
import java.util.Set;

/**
 * The chat template of {@code /v1/chat/completions}: every message is {@code <|ROLE|>\n} + content + {@code <|end|>\n},
 * and the prompt ends with {@code <|assistant|>\n}, after which the model writes its answer. An assistant message is
 * rendered exactly as the model's answer followed by the end marker, so a conversation that appends the answer it
 * received and a new user message renders to the previous prompt, the answer's tokens, and the new part: the cache
 * finds the whole earlier turn, answer included. Roles: {@code system} (also {@code developer}), {@code user},
 * {@code assistant}, {@code tool}. Stateless; thread-safe.
 */
public final class ChatTemplate {
    /** The roles a message may have. */
    public static final Set<String> ROLES = Set.of("system", "developer", "user", "assistant", "tool");
    /** What ends every message. */
    public static final String END = "<|end|>\n";
    /** What the prompt ends with: the answer follows it. */
    public static final String GENERATION_PROMPT = "<|assistant|>\n";

    /** One message: a role and its text. */
    public record Message(String role, String content) {
        public Message {
            if (!ROLES.contains(role)) {
                throw new IllegalArgumentException("message role '" + role + "' is not one of " + ROLES);
            }
            if (content == null) {
                throw new IllegalArgumentException("message content must not be null");
            }
        }
    }

    private ChatTemplate() {
    }

    /** The prompt for {@code messages}, ending with the generation prompt. */
    public static String render(List<Message> messages) {
        StringBuilder sb = new StringBuilder();
        for (Message m : messages) {
            String role = m.role().equals("developer") ? "system" : m.role();
            sb.append("<|").append(role).append("|>\n").append(m.content()).append(END);
        }
        return sb.append(GENERATION_PROMPT).toString();
    }
}
