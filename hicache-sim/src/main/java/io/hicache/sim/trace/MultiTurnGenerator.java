package io.hicache.sim.trace;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A seeded multi-turn chat workload written as a Mooncake trace, modelled on SGLang's
 * {@code benchmark/hicache/bench_multiturn.py}: {@code clients} conversations of {@code rounds} turns; a
 * turn's prompt is the whole history (every earlier prompt and answer) plus a new question of
 * {@code requestTokens}; answers are {@code outputTokens} long. Requests are sent at Poisson times of mean
 * rate {@code ratePerS}, each to a random client that is ready: one whose previous turn was sent at least
 * {@code turnGapS} earlier (the least think time). {@code bench_multiturn.py} also waits for the previous answer,
 * whose latency a trace cannot know in advance: each record names the turn it follows ({@code chat_id}, its index
 * in the file, and {@code parent_chat_id}, -1 for a first turn), and a replay sends a turn no earlier than that
 * turn finished (closed loop; {@code --no-closed-loop} replays the written times as they are).
 *
 * <p>Block ids name a conversation's 512-token blocks by position: a conversation is one growing token
 * stream (each turn appends its question, then its answer), so a block's first tokens never change and a turn
 * repeats the ids of every block of the history, the previous answer included. Each record's {@code hash_ids}
 * list the prompt's blocks and then go on over the answer ({@code ceil((input_length + output_length) / 512)}
 * ids, said by {@code "covers_answer": true}, see {@code Request.coversAnswer}), so a replay caches the answer under the keys the next turn matches,
 * as SGLang's {@code cache_finished_req} does. (A partial last block keeps its id when it fills: exact at
 * token-level pages, the simulator's default; the block-level view, {@code --block-tokens 1}, counts such a
 * block as hit from its first tokens.) Same arguments, same file. Not thread-safe; cold path.
 *
 * @param clients       conversations (>= 1)
 * @param rounds        turns per conversation (>= 1)
 * @param requestTokens tokens of each new question (>= 1)
 * @param outputTokens  tokens of each answer (>= 1)
 * @param ratePerS      mean requests per second (> 0)
 * @param turnGapS      least time between two turns of a conversation, s (>= 0)
 * @param seed          seed of the arrival times and client choices
 */
public record MultiTurnGenerator(int clients, int rounds, int requestTokens, int outputTokens, double ratePerS,
                                 double turnGapS, long seed) {
    private static final int BLOCK = MooncakeTraceReader.BLOCK_SIZE;

    /** Checks the values; messages name the command-line flags. */
    public MultiTurnGenerator {
        if (clients < 1) {
            throw new IllegalArgumentException("--clients must be >= 1, got " + clients);
        }
        if (rounds < 1) {
            throw new IllegalArgumentException("--rounds must be >= 1, got " + rounds);
        }
        if (requestTokens < 1) {
            throw new IllegalArgumentException("--request-tokens must be >= 1, got " + requestTokens);
        }
        if (outputTokens < 1) {
            throw new IllegalArgumentException("--output-tokens must be >= 1, got " + outputTokens);
        }
        if (!(ratePerS > 0) || Double.isInfinite(ratePerS)) {
            throw new IllegalArgumentException("--rate must be a finite number > 0 requests/s, got " + ratePerS);
        }
        if (!(turnGapS >= 0) || Double.isInfinite(turnGapS)) {
            throw new IllegalArgumentException("--turn-gap-s must be a finite number >= 0, got " + turnGapS);
        }
    }

    /** Writes the trace to {@code file}; returns the number of requests. */
    public long write(Path file) {
        SplittableRandom rng = new SplittableRandom(seed);
        int[] done = new int[clients];
        long[] lastRecord = new long[clients];
        java.util.Arrays.fill(lastRecord, -1);
        long[] lastSentMs = new long[clients];
        java.util.Arrays.fill(lastSentMs, Long.MIN_VALUE / 2);
        int[] promptTokens = new int[clients];
        List<List<Integer>> ids = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            ids.add(new ArrayList<>());
        }
        int nextId = 0;
        long total = (long) clients * rounds;
        double tS = 0;
        int[] ready = new int[clients];
        try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            for (long sent = 0; sent < total; ) {
                tS += -Math.log(1 - rng.nextDouble()) / ratePerS;
                long tMs = (long) (tS * 1000);
                int n = 0;
                for (int c = 0; c < clients; c++) {
                    if (done[c] < rounds && tMs - lastSentMs[c] >= (long) (turnGapS * 1000)) {
                        ready[n++] = c;
                    }
                }
                if (n == 0) {
                    continue; // every open conversation is waiting for its previous answer
                }
                int c = ready[rng.nextInt(n)];
                List<Integer> chain = ids.get(c); // the conversation's blocks so far, by position
                int previous = promptTokens[c];
                int history = done[c] == 0 ? 0 : previous + outputTokens;
                int prompt = history + requestTokens;
                int blocks = (prompt + outputTokens + BLOCK - 1) / BLOCK; // the prompt, then its answer
                while (chain.size() < blocks) {
                    chain.add(nextId++);
                }
                w.write("{\"chat_id\": " + sent + ", \"parent_chat_id\": " + lastRecord[c] + ", \"timestamp\": " + tMs
                        + ", \"input_length\": " + prompt + ", \"output_length\": " + outputTokens + ", \"hash_ids\": "
                        + chain.subList(0, blocks) + ", \"covers_answer\": true}\n");
                lastRecord[c] = sent;
                promptTokens[c] = prompt;
                lastSentMs[c] = tMs;
                done[c]++;
                sent++;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write trace " + file + ": " + e.getMessage(), e);
        }
        return total;
    }
}
