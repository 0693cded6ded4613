package io.hicache.sim.model;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A serving engine's measured costs, as its calibration run wrote them ({@code hicache-engine-profile} version 1, the
 * format in docs/SIMULATION.md, "Engine profiles"): the model's shape, the engine's page size and scheduler limits, the
 * time of one forward of one sequence over a grid of (new tokens x context tokens), the per-forward, per-step and
 * per-request overheads, and the host-to-device load and device-to-host backup copy rates. The simulator takes one with
 * {@code --engine-profile FILE} in place of a model and GPU preset and times the engine's own schedule with it.
 *
 * <p><b>Interpolation.</b> {@link #forwardMs} is bilinear between the grid's points; outside the grid it extrapolates
 * linearly from the two outermost points of each axis (an axis of one point is constant), and a result below 0 is
 * taken as 0.
 *
 * <p><b>Failures.</b> {@link #parse} and {@link #read} refuse a profile of another format or version, a missing or
 * ill-typed required field, an axis that does not ascend, a ragged grid and a negative or non-finite figure, each with
 * an {@link IllegalArgumentException} whose one-line message names the field (e.g. {@code forward_ms.ms[2]}); unknown
 * fields are ignored. Immutable and thread-safe.
 */
public final class EngineProfile {
    /** The {@code format} a profile must declare. */
    public static final String FORMAT = "hicache-engine-profile";
    /** The {@code version} this class reads. */
    public static final int VERSION = 1;

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * The served model's shape.
     *
     * @param id            the engine's model id (free text)
     * @param layers        transformer layers
     * @param hidden        hidden size
     * @param heads         attention heads
     * @param kvHeads       KV heads
     * @param ffn           MLP intermediate size
     * @param vocab         vocabulary size: token ids sent to the engine lie in {@code [0, vocab)}
     * @param contextTokens the most tokens (prompt plus output) one request may hold
     */
    public record Model(String id, int layers, int hidden, int heads, int kvHeads, int ffn, int vocab,
                        int contextTokens) {
    }

    /**
     * A copy direction's rate: {@code fixedMs + bytes / bytesPerS} per copy of {@code bytes}.
     *
     * @param bytesPerS bytes per second (> 0)
     * @param fixedMs   fixed cost of one copy, ms (>= 0)
     */
    public record CopyRate(double bytesPerS, double fixedMs) {
        /** Milliseconds to copy {@code bytes}. */
        public double ms(double bytes) {
            return fixedMs + bytes / bytesPerS * 1e3;
        }
    }

    private final String source;
    private final String engine;
    private final Model model;
    private final int pageSize;
    private final long kvBytesPerToken;
    private final int chunkTokens;
    private final int maxRunning;
    private final String policy;
    private final double[] tokens;
    private final double[] context;
    private final double[][] ms;
    private final double logitsMs;
    private final double stepOverheadMs;
    private final double requestOverheadMs;
    private final double prefillBusyFactor;
    private final double prefillServiceFactor;
    private final CopyRate load;
    private final CopyRate backup;
    private final String calibration;

    private EngineProfile(String source, JsonNode root) {
        this.source = source;
        String format = text(root, "format");
        if (!FORMAT.equals(format)) {
            throw error("format must be \"" + FORMAT + "\", got \"" + format + "\"");
        }
        long version = integer(root, "version", Long.MIN_VALUE);
        if (version != VERSION) {
            throw error("version " + version + " is not supported (this simulator reads version " + VERSION + ")");
        }
        JsonNode e = root.get("engine");
        this.engine = e != null && e.isTextual() ? e.asText() : "";
        JsonNode m = object(root, "model");
        this.model = new Model(text(m, "model.id"), positive(m, "model.layers"), positive(m, "model.hidden"),
                positive(m, "model.heads"), positive(m, "model.kv_heads"), positive(m, "model.ffn"),
                positive(m, "model.vocab"), positive(m, "model.context_tokens"));
        this.pageSize = positive(root, "page_size");
        if (Integer.bitCount(pageSize) != 1) {
            throw error("page_size must be a power of two, got " + pageSize);
        }
        this.kvBytesPerToken = integer(root, "kv_bytes_per_token", 1);
        JsonNode s = object(root, "scheduler");
        this.chunkTokens = positive(s, "scheduler.chunk_tokens");
        this.maxRunning = positive(s, "scheduler.max_running");
        JsonNode p = s.get("policy");
        this.policy = p != null && p.isTextual() ? p.asText() : "";
        JsonNode f = object(root, "forward_ms");
        this.tokens = axis(f, "forward_ms.tokens", 1);
        this.context = axis(f, "forward_ms.context", 0);
        this.ms = grid(f);
        this.logitsMs = nonNegative(root, "logits_ms");
        this.stepOverheadMs = nonNegative(root, "step_overhead_ms");
        this.requestOverheadMs = nonNegative(root, "request_overhead_ms");
        this.prefillBusyFactor = factor(root, "prefill_busy_factor");
        this.prefillServiceFactor = factor(root, "prefill_service_factor");
        this.load = rate(root, "load");
        this.backup = rate(root, "backup");
        JsonNode c = root.get("calibration");
        this.calibration = c == null ? "" : c.toString();
    }

    private EngineProfile(EngineProfile p, int maxRunning) {
        this.source = p.source;
        this.engine = p.engine;
        this.model = p.model;
        this.pageSize = p.pageSize;
        this.kvBytesPerToken = p.kvBytesPerToken;
        this.chunkTokens = p.chunkTokens;
        this.maxRunning = maxRunning;
        this.policy = p.policy;
        this.tokens = p.tokens;
        this.context = p.context;
        this.ms = p.ms;
        this.logitsMs = p.logitsMs;
        this.stepOverheadMs = p.stepOverheadMs;
        this.requestOverheadMs = p.requestOverheadMs;
        this.prefillBusyFactor = p.prefillBusyFactor;
        this.prefillServiceFactor = p.prefillServiceFactor;
        this.load = p.load;
        this.backup = p.backup;
        this.calibration = p.calibration;
    }

    /**
     * This profile with the engine run at another {@code max_running} (its {@code --max-running}); the forward costs
     * do not depend on it, since the engine computes one sequence per forward.
     *
     * @throws IllegalArgumentException {@code maxRunning < 1}
     */
    public EngineProfile withMaxRunning(int maxRunning) {
        if (maxRunning < 1) {
            throw new IllegalArgumentException("max running must be >= 1, got " + maxRunning);
        }
        return new EngineProfile(this, maxRunning);
    }

    /**
     * Reads the profile in {@code file}.
     *
     * @throws IllegalArgumentException the file cannot be read, is not JSON, or is not a valid profile (one line,
     *     naming the file and the field)
     */
    public static EngineProfile read(Path file) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException ex) {
            throw new IllegalArgumentException("engine profile " + file + ": cannot read it: " + ex.getMessage(), ex);
        }
        return parse(text, file.toString());
    }

    /**
     * Parses a profile from JSON text; {@code source} names it in error messages.
     *
     * @throws IllegalArgumentException not JSON, or not a valid profile (one line, naming the field)
     */
    public static EngineProfile parse(String json, String source) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (JsonProcessingException ex) {
            String msg = ex.getOriginalMessage() == null ? ex.toString() : ex.getOriginalMessage();
            throw new IllegalArgumentException("engine profile " + source + ": not JSON: "
                    + msg.replace('\n', ' '), ex);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("engine profile " + source + ": not a JSON object");
        }
        return new EngineProfile(source, root);
    }

    // ------------------------------------------------------------------ figures

    /**
     * Milliseconds of one forward of one sequence computing {@code newTokens} tokens over {@code contextTokens}
     * tokens already in its KV, logits excluded: bilinear on the grid, linear extrapolation outside it, at least 0.
     */
    public double forwardMs(double newTokens, double contextTokens) {
        int i = segment(tokens, newTokens);
        int j = segment(context, contextTokens);
        double tx = weight(tokens, i, newTokens);
        double ty = weight(context, j, contextTokens);
        int i1 = Math.min(i + 1, tokens.length - 1);
        int j1 = Math.min(j + 1, context.length - 1);
        double v = (1 - tx) * (1 - ty) * ms[i][j] + tx * (1 - ty) * ms[i1][j] + (1 - tx) * ty * ms[i][j1]
                + tx * ty * ms[i1][j1];
        return Math.max(0, v);
    }

    /** The lower index of the segment {@code x} falls in, or extrapolates from (0 for a one-point axis). */
    private static int segment(double[] axis, double x) {
        if (axis.length == 1) {
            return 0;
        }
        int k = Arrays.binarySearch(axis, x);
        int i = k >= 0 ? k : -k - 2; // the last point <= x
        return Math.clamp(i, 0, axis.length - 2);
    }

    private static double weight(double[] axis, int i, double x) {
        if (axis.length == 1) {
            return 0;
        }
        return (x - axis[i]) / (axis[i + 1] - axis[i]);
    }

    /** An optional factor field: 1 when absent, else a finite number > 0. */
    private double factor(JsonNode root, String field) {
        JsonNode n = root.get(field); // optional: profiles before it read as 1
        double v = n == null ? 1 : number(n, field);
        if (!(v > 0) || Double.isInfinite(v)) {
            throw error(field + " must be a finite number > 0, got " + v);
        }
        return v;
    }

    /** Where the profile came from (its file), as error messages name it. */
    public String source() {
        return source;
    }

    /** The engine that was calibrated (free text; empty when not given). */
    public String engine() {
        return engine;
    }

    /** The served model's shape. */
    public Model model() {
        return model;
    }

    /** Tokens per KV page, as the engine runs. */
    public int pageSize() {
        return pageSize;
    }

    /** Device KV bytes of one token, every layer, K and V. */
    public long kvBytesPerToken() {
        return kvBytesPerToken;
    }

    /** The engine's largest prefill chunk, in tokens. */
    public int chunkTokens() {
        return chunkTokens;
    }

    /** Requests the engine runs at once. */
    public int maxRunning() {
        return maxRunning;
    }

    /** The scheduler as the calibration describes it (free text; empty when not given). */
    public String policy() {
        return policy;
    }

    /** Sampling and logits of one forward that emits a token, ms. */
    public double logitsMs() {
        return logitsMs;
    }

    /** Per engine step, beyond its forwards, ms. */
    public double stepOverheadMs() {
        return stepOverheadMs;
    }

    /** Per request (admission, HTTP, respond), ms. */
    public double requestOverheadMs() {
        return requestOverheadMs;
    }

    /**
     * How much longer a prefill chunk's forward takes in a step where other requests decode (their tokens
     * streaming to their clients beside it, on the same cores) than the grid, measured without them; 1 when the profile does
     * not say.
     */
    public double prefillBusyFactor() {
        return prefillBusyFactor;
    }

    /**
     * How much longer the serving engine's own prefill of a chunk takes (its scheduler's path: the cache's hooks, a
     * prefix in the request's pages, the HTTP layer running beside it) than the grid's forward of that shape, measured
     * on the same machine at the same speed; 1 when the profile does not say. It applies to every prefill chunk.
     */
    public double prefillServiceFactor() {
        return prefillServiceFactor;
    }

    /** Host to device (load-back) copy rate. */
    public CopyRate load() {
        return load;
    }

    /** Device to host (backup) copy rate. */
    public CopyRate backup() {
        return backup;
    }

    /** The {@code calibration} object as JSON text (empty when not given). */
    public String calibration() {
        return calibration;
    }

    /** The grid's new-token axis (a copy). */
    public double[] tokenAxis() {
        return tokens.clone();
    }

    /** The grid's context axis (a copy). */
    public double[] contextAxis() {
        return context.clone();
    }

    // ------------------------------------------------------------------ validation

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("engine profile " + source + ": " + what);
    }

    private static String leaf(String path) {
        int dot = path.lastIndexOf('.');
        return dot < 0 ? path : path.substring(dot + 1);
    }

    private JsonNode field(JsonNode parent, String path) {
        JsonNode n = parent.get(leaf(path));
        if (n == null || n.isNull()) {
            throw error("missing field " + path);
        }
        return n;
    }

    private JsonNode object(JsonNode parent, String path) {
        JsonNode n = field(parent, path);
        if (!n.isObject()) {
            throw error(path + " must be an object");
        }
        return n;
    }

    private String text(JsonNode parent, String path) {
        JsonNode n = field(parent, path);
        if (!n.isTextual()) {
            throw error(path + " must be a string, got " + n);
        }
        return n.asText();
    }

    private double number(JsonNode n, String path) {
        if (!n.isNumber() || !Double.isFinite(n.asDouble())) {
            throw error(path + " must be a finite number, got " + n);
        }
        return n.asDouble();
    }

    private long integer(JsonNode parent, String path, long min) {
        JsonNode n = field(parent, path);
        if (!n.isIntegralNumber() || !n.canConvertToLong()) {
            throw error(path + " must be an integer, got " + n);
        }
        long v = n.asLong();
        if (v < min) {
            throw error(path + " must be >= " + min + ", got " + v);
        }
        return v;
    }

    private int positive(JsonNode parent, String path) {
        long v = integer(parent, path, 1);
        if (v > Integer.MAX_VALUE) {
            throw error(path + " must be at most " + Integer.MAX_VALUE + ", got " + v);
        }
        return (int) v;
    }

    private double nonNegative(JsonNode parent, String path) {
        double v = number(field(parent, path), path);
        if (v < 0) {
            throw error(path + " must be >= 0, got " + v);
        }
        return v;
    }

    private CopyRate rate(JsonNode root, String path) {
        JsonNode r = object(root, path);
        double bps = number(field(r, path + ".bytes_per_s"), path + ".bytes_per_s");
        if (!(bps > 0)) {
            throw error(path + ".bytes_per_s must be > 0, got " + bps);
        }
        return new CopyRate(bps, nonNegative(r, path + ".fixed_ms"));
    }

    private double[] axis(JsonNode f, String path, double min) {
        JsonNode a = field(f, path);
        if (!a.isArray() || a.isEmpty()) {
            throw error(path + " must be a non-empty array of numbers");
        }
        double[] out = new double[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = number(a.get(i), path + "[" + i + "]");
            if (out[i] < min) {
                throw error(path + "[" + i + "] must be >= " + (long) min + ", got " + out[i]);
            }
            if (i > 0 && !(out[i] > out[i - 1])) {
                throw error(path + " must be strictly ascending, but [" + (i - 1) + "] = " + out[i - 1] + " and ["
                        + i + "] = " + out[i]);
            }
        }
        return out;
    }

    private double[][] grid(JsonNode f) {
        JsonNode a = field(f, "forward_ms.ms");
        if (!a.isArray() || a.size() != tokens.length) {
            throw error("forward_ms.ms must be an array of " + tokens.length + " rows (one per forward_ms.tokens), got "
                    + (a.isArray() ? a.size() + " rows" : a.getNodeType().toString().toLowerCase(java.util.Locale.ROOT)));
        }
        double[][] out = new double[tokens.length][];
        for (int i = 0; i < tokens.length; i++) {
            String row = "forward_ms.ms[" + i + "]";
            JsonNode r = a.get(i);
            if (!r.isArray() || r.size() != context.length) {
                throw error(row + " must hold " + context.length + " numbers (one per forward_ms.context), got "
                        + (r.isArray() ? r.size() : r.toString()));
            }
            out[i] = new double[context.length];
            for (int j = 0; j < context.length; j++) {
                String cell = row + "[" + j + "]";
                double v = number(r.get(j), cell);
                if (v < 0) {
                    throw error(cell + " must be >= 0 ms, got " + v);
                }
                out[i][j] = v;
            }
        }
        return out;
    }
}
