package io.hicache.serve.engine;

import com.github.tjake.jlama.tensor.KvBufferCache;
import io.hicache.core.LoadHandle;
import io.hicache.serve.model.ByteTokenizer;
import io.hicache.radix.RadixNode;
import io.hicache.storage.L3Prefetch;

import java.util.SplittableRandom;

/**
 * One generation request. The protocol layer creates it (validated prompt ids and sampling) and may
 * {@link #cancel()} it from any thread (the client went away); everything else is the engine thread's: the fields
 * below the constructor are its state, written and read there only.
 *
 * <p>States: {@code QUEUED → (PREFETCH | LOADING) → PREFILL → DECODE → DONE}, or {@code → DONE} aborted from any of
 * them; no state holds a device page, lock, load or prefetch after {@code DONE}.
 */
public final class ServeRequest {
    /** Where a request is. */
    enum State { QUEUED, PREFETCH, LOADING, PREFILL, DECODE, DONE }

    final long id;
    final int[] prompt;
    final SamplingParams params;
    final long arrivalNs;
    final RequestSink sink;
    final String api;
    private volatile boolean cancelled;

    // ------------------------------------------------------------------ engine thread only
    State state = State.QUEUED;
    /** Prompt then generated tokens. */
    int[] seq;
    int generated;
    /** Device page of each page position of {@link #seq} (the tree's below {@link #ownFrom}, -1 where dropped). */
    int[] pages;
    /**
     * Device page of each page position of its KV buffer, where attention reads and writes (DeviceKvViews): the
     * tree's below {@link #restored}, its own from there (also where {@link #pages} names the tree's copy).
     */
    int[] kvPages;
    /** Page positions from here on are this request's own pages, not yet handed to the tree. */
    int ownFrom;
    /** Page positions from here on were this request's own at admission: it computes their KV into them. */
    int firstOwnPage;
    /** The deepest node this request holds locked (null before admission). */
    RadixNode held;
    /** Tokens of {@link #seq} in the tree along this request's path (a multiple of the page size). */
    int insertedTo;
    /** Prompt tokens restored from the cache (not computed); KV positions below it come from device pages. */
    int restored;
    /** KV positions computed or restored so far in {@link #kv}. */
    int computedTo;
    /** Its first prefill chunk ran: the loads its prefix came from were waited for layer by layer. */
    boolean prefixCopied;
    LoadHandle load;
    LoadHandle joined;
    L3Prefetch prefetch;
    boolean prefetchAsked;
    KvBufferCache.KvBuffer kv;
    SplittableRandom rng;
    final StringBuilder text = new StringBuilder();
    int emitted;
    String matchedStop;
    boolean stopped;
    Finish.CachedTokens cached = Finish.CachedTokens.NONE;
    int devReadyTokens;
    int joinedTokens;
    int loadedTokens;
    int storageTokens;
    long admittedNs;
    long prefixReadyNs;
    long loadWaitNs;
    long prefillNs;
    long lastStepEndNs;
    long otherStepsNs;
    long firstTokenNs;
    long lastTokenNs;
    boolean recompute;
    /** Set when its forward failed: it leaves the engine at the end of the step with this 500 message. */
    String error;

    /**
     * @param id        the engine-wide request id (also the cache's request id)
     * @param prompt    token ids, each in {@code [0, vocab)} (validated by the caller)
     * @param params    sampling
     * @param arrivalNs {@link System#nanoTime()} when the request arrived
     * @param sink      where the output goes
     * @param api       the API it came through, for metrics ({@code generate}, {@code completions}, {@code chat})
     */
    public ServeRequest(long id, int[] prompt, SamplingParams params, long arrivalNs, RequestSink sink, String api) {
        this.id = id;
        this.prompt = prompt;
        this.params = params;
        this.arrivalNs = arrivalNs;
        this.sink = sink;
        this.api = api;
    }

    /** The client went away: the engine aborts the request at its next step. Any thread; idempotent. */
    public void cancel() {
        cancelled = true;
    }

    /** Whether {@link #cancel()} was called. Any thread. */
    public boolean isCancelled() {
        return cancelled;
    }

    /** The request id. */
    public long id() {
        return id;
    }

    /** Prompt tokens. */
    public int promptTokens() {
        return prompt.length;
    }

    /** Adds a sampled token, finds stop strings, and sends the text that can no longer be part of one. Engine thread. */
    void append(ServeMetrics metrics, int token) {
        long now = System.nanoTime();
        if (lastTokenNs != 0) {
            ServeMetrics.record(metrics.itl, now - lastTokenNs);
        }
        lastTokenNs = now;
        seq[prompt.length + generated] = token;
        generated++;
        metrics.generationTokens.increment();
        text.append(ByteTokenizer.charOf(token));
        int longest = params.longestStop();
        if (longest > 0) {
            int searchFrom = Math.max(0, text.length() - longest);
            int best = -1;
            String found = null;
            for (String s : params.stop()) {
                int at = text.indexOf(s, searchFrom);
                if (at >= 0 && (best < 0 || at < best)) {
                    best = at;
                    found = s;
                }
            }
            if (found != null) {
                text.setLength(best);
                matchedStop = found;
                stopped = true;
            }
        }
        int sendable = done() || longest == 0 ? text.length() : Math.max(emitted, text.length() - (longest - 1));
        if (sendable > emitted) {
            sink.onText(text.substring(emitted, sendable), generated);
            emitted = sendable;
        }
    }

    /** Whether it generated all it may: a stop string, or {@code max_new_tokens}. */
    boolean done() {
        return stopped || generated >= params.maxNewTokens();
    }

    @Override
    public String toString() {
        return "ServeRequest{" + id + ", " + prompt.length + " prompt tokens, " + state + '}';
    }
}
