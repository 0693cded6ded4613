package io.hicache.serve.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The workload of SGLang's {@code benchmark/hicache/bench_multiturn.py}: each client starts with a question of
 * {@code requestTokens} tokens and, after each answer, sends its whole history (questions and answers, as text)
 * followed by a new question of the same length, for {@code rounds} turns, with {@code outputTokens} tokens per answer
 * ({@code ignore_eos}, greedy). Questions are random words drawn from a seed; with the engine's byte tokenizer one
 * character is one token, so a question of {@code n} characters is {@code n} prompt tokens. Immutable.
 */
public final class MultiTurnWorkload implements Workload {
    private static final String[] WORDS = ("the of and to in is was for on that with as by at from his her it an were "
        + "are which this be or has had not but one what all their there been when who will more if no out so said "
        + "up into than them can only other new some could time these two may then do first any my now such like our "
        + "over man me even most made after also did many before must through back years where much your way well "
        + "down should because each just those people how too little state good very make world still own see men "
        + "work long get here between both life being under never day same another know while last might us great "
        + "old year off come since against go came right used take three").split(" ");

    private final int clients;
    private final int rounds;
    private final int requestTokens;
    private final int outputTokens;
    private final long seed;
    private final String[][] questions;

    public MultiTurnWorkload(int clients, int rounds, int requestTokens, int outputTokens, long seed) {
        if (clients < 1 || rounds < 1 || requestTokens < 1 || outputTokens < 1) {
            throw new IllegalArgumentException("clients, rounds, request and output tokens must be >= 1");
        }
        this.clients = clients;
        this.rounds = rounds;
        this.requestTokens = requestTokens;
        this.outputTokens = outputTokens;
        this.seed = seed;
        this.questions = new String[clients][rounds];
        SplittableRandom r = new SplittableRandom(seed);
        for (int c = 0; c < clients; c++) {
            for (int t = 0; t < rounds; t++) {
                questions[c][t] = text(r, requestTokens, c, t);
            }
        }
    }

    /** Random words, exactly {@code n} characters, starting with a tag that makes every question distinct. */
    private static String text(SplittableRandom r, int n, int client, int turn) {
        StringBuilder sb = new StringBuilder(n + 16);
        sb.append("q").append(client).append('.').append(turn).append(' ');
        while (sb.length() < n) {
            sb.append(WORDS[r.nextInt(WORDS.length)]).append(' ');
        }
        sb.setLength(n);
        return sb.toString();
    }

    @Override
    public int sessions() {
        return clients;
    }

    @Override
    public int turns(int s) {
        return rounds;
    }

    @Override
    public Request request(int s, int t, List<String> answers) {
        StringBuilder h = new StringBuilder();
        for (int i = 0; i < t; i++) {
            h.append(questions[s][i]).append(answers.get(i));
        }
        h.append(questions[s][t]);
        return new Request(h.toString(), null, outputTokens);
    }

    @Override
    public Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", "multiturn");
        m.put("clients", clients);
        m.put("rounds", rounds);
        m.put("request_tokens", requestTokens);
        m.put("output_tokens", outputTokens);
        m.put("seed", seed);
        return m;
    }
}
