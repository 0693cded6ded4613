package io.hicache.sim.trace;

import java.util.List;

/**
 * What to do about a trace the readers cannot use: the hints appended to a {@link TraceFormatException} when a
 * record lacks a required field or is not JSON at all. A log of a shape people keep (token ids, chat messages,
 * sessions, the Azure CSV) has no per-block prefix hashes; the hint names the {@code convert} command that makes a
 * trace of it. Stateless.
 */
final class TraceHints {
    /** How to learn the shapes. */
    static final String SEE = "docs/SIMULATION.md, \"Your own logs\", or 'hicache-sim convert --help'";

    private TraceHints() {
    }

    /**
     * The hint for a record of {@code format} that lacks {@code missing} but has {@code otherKeys}: which converter
     * or which format reads it; "" when there is nothing to add.
     */
    static String missingField(String format, String missing, List<String> otherKeys) {
        String from = null;
        if (otherKeys.contains("input_ids")) {
            from = "token-ids";
        } else if (otherKeys.contains("messages") || otherKeys.contains("prompt")) {
            from = "openai-chat";
        } else if (otherKeys.contains("conversation_id") || otherKeys.contains("session_id")) {
            from = "sessions";
        }
        if (from != null) {
            return ": this looks like a " + from + " log, which has no per-block prefix hashes; convert it with"
                    + " 'hicache-sim convert --from " + from + " FILE --out OUT.jsonl' and replay"
                    + " --trace hicache:OUT.jsonl (" + SEE + ")";
        }
        if (!format.equals("hicache") && otherKeys.contains("timestamp_ms") && otherKeys.contains("block_tokens")) {
            return ": this is a hicache trace (timestamp_ms, block_tokens): read it with --trace hicache:FILE";
        }
        if (format.equals("hicache") && otherKeys.contains("timestamp") && !otherKeys.contains("block_tokens")) {
            return ": this looks like a Mooncake trace (timestamp in ms, 512-token blocks): read it with"
                    + " --trace mooncake:FILE, or --trace bailian:FILE for Qwen-Bailian's";
        }
        if (missing.equals("hash_ids") || missing.equals("input_length")) {
            return ": this trace has no per-block prefix hashes (hash_ids) the simulator could match; make a trace of"
                    + " your log with 'hicache-sim convert --from openai-chat|token-ids|sessions|azure-csv FILE"
                    + " --out OUT.jsonl' (" + SEE + ")";
        }
        return "";
    }

    /** The hint for a line that is not JSON, from its first characters; "" when there is nothing to add. */
    static String notJson(String start) {
        String s = start.strip();
        if (!s.isEmpty() && Character.isLetter(s.charAt(0)) && s.contains(",")) {
            return "; this looks like a CSV file, not JSON lines: the Azure LLM inference trace (TIMESTAMP,"
                    + " ContextTokens, GeneratedTokens) has no prefix information and converts only as unique"
                    + " prefixes: 'hicache-sim convert --from azure-csv FILE --out OUT.jsonl --unique-prefixes' ("
                    + SEE + ")";
        }
        return "";
    }
}
