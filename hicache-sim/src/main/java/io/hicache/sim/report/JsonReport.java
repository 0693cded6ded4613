package io.hicache.sim.report;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Writes results as JSON: one object for {@code replay}, an array for {@code compare} and
 * {@code sweep}. Stateless and thread-safe (the mapper is shared, configured once).
 */
public final class JsonReport {
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .build();

    private JsonReport() {
    }

    /** One result as a JSON object text. */
    public static String toJson(SimResult result) {
        return write(result);
    }

    /** Results as a JSON array text. */
    public static String toJson(List<SimResult> results) {
        return write(results);
    }

    /**
     * Writes one object ({@code asArray == false}, exactly one result) or an array to {@code file}.
     *
     * @throws UncheckedIOException the file cannot be written
     */
    public static void write(Path file, List<SimResult> results, boolean asArray) {
        if (!asArray && results.size() != 1) {
            throw new IllegalArgumentException("a single JSON object needs exactly one result, got " + results.size());
        }
        String text = asArray ? toJson(results) : toJson(results.getFirst());
        try {
            Files.writeString(file, text + System.lineSeparator());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write JSON report " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * Writes the summary of a run to {@code file}: {@code {"recommendation": {...} or null, "overloaded",
     * "kv_bytes_per_token", "device_kv_tokens"}} (see {@link Recommendation} for the recommendation's fields).
     *
     * @param recommendation null for a replay, and for a sweep over device capacities
     * @param overloaded     whether any timed run of the invocation was overloaded
     * @param kv             the footprint: bytes per simulated token on one instance, the device's KV capacity
     * @throws UncheckedIOException the file cannot be written
     */
    public static void writeSummary(Path file, Recommendation recommendation, boolean overloaded, KvFootprint kv) {
        java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("recommendation", recommendation);
        m.put("overloaded", overloaded);
        m.put("kv_bytes_per_token", kv.bytesPerToken());
        m.put("device_kv_tokens", kv.deviceKvTokens());
        try {
            Files.writeString(file, write(m) + System.lineSeparator());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write summary JSON " + file + ": " + e.getMessage(), e);
        }
    }

    private static String write(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot serialise results: " + e.getMessage(), e);
        }
    }
}
