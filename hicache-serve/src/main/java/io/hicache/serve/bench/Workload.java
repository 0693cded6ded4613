package io.hicache.serve.bench;

import java.util.List;
import java.util.Map;

/**
 * What {@code bench-serve} sends: sessions of turns, each turn's request built from the answers the session got so
 * far (a multi-turn client appends them to its history). The client drives any workload the same way (turn
 * {@code t + 1} of a session is ready once turn {@code t} answered; ready turns go out at Poisson times, at most
 * {@code --max-parallel} in flight), so a trace-driven workload is another implementation. Implementations are
 * immutable and deterministic: the same workload gives the same requests for the same answers.
 */
public interface Workload {
    /** One request: a {@code /generate} body's prompt (text or token ids) and its output length. */
    record Request(String text, int[] inputIds, int maxNewTokens) {
    }

    /** Sessions (clients). */
    int sessions();

    /** Turns of session {@code s}. */
    int turns(int s);

    /** Turn {@code t} of session {@code s}, given its answers to turns {@code 0 .. t-1}. */
    Request request(int s, int t, List<String> answers);

    /** The workload's parameters, for the JSON report. */
    Map<String, Object> describe();
}
