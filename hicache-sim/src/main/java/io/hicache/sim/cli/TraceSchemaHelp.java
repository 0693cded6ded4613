package io.hicache.sim.cli;

import picocli.CommandLine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The trace formats' fields as {@code --help} shows them (the same rules as docs/SIMULATION.md, "Your own logs"):
 * added to the help of every command that reads or writes a trace. Stateless.
 */
final class TraceSchemaHelp {
    /** The formats a replay reads. */
    static final String[] FORMATS = {
        "",
        "Trace formats (--trace FORMAT:FILE; one JSON object per line, unknown fields ignored, .gz read as gzip):",
        "  mooncake (default): timestamp (ms unless --time-unit), input_length and output_length (tokens), hash_ids",
        "    (one id per 512-token block of the prompt: ceil(input_length/512) ids); optional chat_id, parent_chat_id",
        "    (the turn it follows, -1 for a first turn) and covers_answer (true: hash_ids go on over the answer,",
        "    ceil((input_length+output_length)/512) ids).",
        "  bailian: chat_id, parent_chat_id, timestamp (s unless --time-unit), input_length, output_length, type, turn,",
        "    hash_ids (16-token blocks); optional covers_answer.",
        "  hicache (what 'convert' writes): timestamp_ms (ms, any origin), input_length, output_length, block_tokens",
        "    (tokens per block, the same on every line), hash_ids (ints >= 0, one per block), covers_answer (false:",
        "    ceil(input_length/block_tokens) ids; true: ceil((input_length+output_length)/block_tokens) ids);",
        "    optional chat_id, parent_chat_id, turn, conversation_id, unique_prefixes (blocks made up: never hit),",
        "    tokens (\"whitespace\": lengths counted in words).",
        "hash_ids rule: block k holds tokens [k*B, (k+1)*B), the last one possibly partial; two records share the id at",
        "  position k exactly when their first k+1 blocks hold the same tokens. 'convert' numbers each block's L3 page",
        "  key (SHA-256 of the previous block's key and the block's token ids as 4-byte little-endian; the keys",
        "  'hicache-sim keys --namespace none' prints) 0, 1, 2, ... in the order the file first has them.",
        "Time is measured from the first arrival. A record earlier than the one before it is refused with its line",
        "  unless --sort; a prompt larger than the device's KV capacity is refused with its line unless",
        "  --skip-oversized. The whole trace is checked before anything is replayed.",
    };

    private TraceSchemaHelp() {
    }

    /** Appends {@link #FORMATS} to the footers of {@code names}' subcommands of {@code cl}. */
    static void install(CommandLine cl, String... names) {
        for (String name : names) {
            CommandLine sub = cl.getSubcommands().get(name);
            if (sub != null) {
                var usage = sub.getCommandSpec().usageMessage();
                List<String> footer = new ArrayList<>(Arrays.asList(usage.footer()));
                footer.addAll(Arrays.asList(FORMATS));
                usage.footer(footer.toArray(String[]::new));
            }
        }
    }
}
