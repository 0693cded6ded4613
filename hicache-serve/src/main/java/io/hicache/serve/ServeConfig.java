package io.hicache.serve;

import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.serve.engine.EngineConfig;
import io.hicache.serve.model.ModelSpec;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageWritePolicy;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The command line of {@code scripts/serve}: every flag, its default, and the checks that turn a bad value into one
 * line naming the flag ({@link UsageException}, exit 2). The API key may come from {@value #API_KEY_ENV} instead of
 * the command line; it is never printed. Immutable once parsed.
 *
 * @param engine       the engine's settings
 * @param host         the address to bind
 * @param port         the port (0: any free one)
 * @param apiKey       the key required on every route but {@code /health}, or null
 * @param maxBodyBytes request bodies past this get 413
 * @param graceS       seconds SIGTERM lets running requests finish before it aborts them
 */
public record ServeConfig(EngineConfig engine, String host, int port, String apiKey, int maxBodyBytes, int graceS) {
    /** The environment variable that may hold the API key. */
    public static final String API_KEY_ENV = "HICACHE_API_KEY";

    /** A bad command line: one line for the user. */
    public static final class UsageException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message, null, false, false);
        }
    }

    /** Flags that take a value (the engine's flags, which {@code bench-serve} passes through). */
    public static final List<String> VALUE_FLAGS = List.of("--host", "--port", "--model", "--context-tokens",
        "--device-tokens", "--host-tokens", "--storage", "--kv-events", "--max-running", "--max-queued",
        "--chunk-tokens", "--page-size", "--seed", "--write-policy", "--load-overlap", "--storage-write-policy",
        "--prefetch-policy", "--prefetch-threshold-tokens", "--api-key", "--max-body-bytes", "--shutdown-grace-s");
    /** Flags without a value. */
    public static final List<String> SWITCHES = List.of("--disable-radix-cache");

    static final String USAGE = """
        usage: scripts/serve [--port 30000] [--host 127.0.0.1] [--model tiny|small|LAYERS,HIDDEN,HEADS,KV_HEADS,FFN,VOCAB]
                             [--context-tokens 4096] [--device-tokens 16384] [--host-tokens 65536|0]
                             [--storage file:DIR|redis://HOST:PORT] [--kv-events tcp://*:5557]
                             [--max-running 8] [--max-queued 64] [--chunk-tokens 256] [--page-size 16] [--seed 17]
                             [--write-policy write_through|write_through_selective|write_back]
                             [--load-overlap same_forward|previous_batch] [--disable-radix-cache]
                             [--storage-write-policy write_through|write_through_selective|write_back]
                             [--prefetch-policy timeout|best_effort|wait_complete] [--prefetch-threshold-tokens 64]
                             [--api-key KEY (or $HICACHE_API_KEY)] [--max-body-bytes 16777216] [--shutdown-grace-s 30]
                             [--calibrate PROFILE.json (measure the engine, write its profile, exit)]
        Serves a seeded Llama on Jlama with HiCache as its prefix cache, behind SGLang's /generate and OpenAI's
        /v1/completions and /v1/chat/completions; docs/SERVING.md has the details.""";

    /**
     * Parses the arguments ({@code env} supplies {@value #API_KEY_ENV}).
     *
     * @throws UsageException naming the flag and what is wrong
     */
    public static ServeConfig parse(String[] args, Map<String, String> env) {
        String host = "127.0.0.1";
        int port = 30000;
        String model = "tiny";
        int context = ModelSpec.DEFAULT_CONTEXT;
        int device = 16384;
        int hostTokens = 65536;
        String storage = null;
        String kvEvents = null;
        int maxRunning = 8;
        int maxQueued = 64;
        int chunk = 256;
        int page = 16;
        long seed = ModelSpec.DEFAULT_SEED;
        WritePolicy write = WritePolicy.WRITE_THROUGH;
        LoadOverlap overlap = LoadOverlap.SAME_FORWARD;
        StorageWritePolicy storageWrite = StorageWritePolicy.WRITE_THROUGH;
        PrefetchPolicy prefetch = PrefetchPolicy.TIMEOUT;
        int prefetchThreshold = 64;
        boolean radix = true;
        String apiKey = env.get(API_KEY_ENV);
        int maxBody = 16 << 20;
        int grace = 30;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--help") || a.equals("-h")) {
                throw new UsageException(USAGE);
            }
            if (SWITCHES.contains(a)) {
                radix = false;
                continue;
            }
            if (!VALUE_FLAGS.contains(a)) {
                throw new UsageException("unknown argument " + a + " (--help lists the flags)");
            }
            if (i + 1 >= args.length) {
                throw new UsageException(a + " needs a value");
            }
            String v = args[++i];
            switch (a) {
                case "--host" -> host = v;
                case "--port" -> port = intArg(a, v, 0, 65535);
                case "--model" -> model = v;
                case "--context-tokens" -> context = intArg(a, v, 32, 1 << 20);
                case "--device-tokens" -> device = intArg(a, v, 1, Integer.MAX_VALUE);
                case "--host-tokens" -> hostTokens = intArg(a, v, 0, Integer.MAX_VALUE);
                case "--storage" -> storage = v;
                case "--kv-events" -> kvEvents = v;
                case "--max-running" -> maxRunning = intArg(a, v, 1, 4096);
                case "--max-queued" -> maxQueued = intArg(a, v, 0, 1 << 20);
                case "--chunk-tokens" -> chunk = intArg(a, v, 1, 1 << 20);
                case "--page-size" -> page = intArg(a, v, 1, 1024);
                case "--seed" -> seed = intArg(a, v, 0, Integer.MAX_VALUE);
                case "--write-policy" -> write = enumArg(a, v, WritePolicy.class);
                case "--load-overlap" -> overlap = enumArg(a, v, LoadOverlap.class);
                case "--storage-write-policy" -> storageWrite = enumArg(a, v, StorageWritePolicy.class);
                case "--prefetch-policy" -> prefetch = enumArg(a, v, PrefetchPolicy.class);
                case "--prefetch-threshold-tokens" -> prefetchThreshold = intArg(a, v, 0, Integer.MAX_VALUE);
                case "--api-key" -> apiKey = v;
                case "--max-body-bytes" -> maxBody = intArg(a, v, 1024, Integer.MAX_VALUE);
                case "--shutdown-grace-s" -> grace = intArg(a, v, 0, 3600);
                default -> throw new UsageException("unknown argument " + a);
            }
        }
        if (apiKey != null && apiKey.isBlank()) {
            throw new UsageException("--api-key must not be empty");
        }
        if (storage != null && !(storage.startsWith("file:") || storage.startsWith("redis://")
            || storage.startsWith("rediss://"))) {
            throw new UsageException("--storage must be file:DIR, redis://HOST:PORT or rediss://HOST:PORT, got "
                + io.hicache.storage.PageStores.redact(storage));
        }
        try {
            ModelSpec spec = ModelSpec.parse(model, context, seed);
            EngineConfig e = new EngineConfig(spec, radix, device, radix ? hostTokens : 0, page, chunk, maxRunning,
                maxQueued, write, overlap, storage, storageWrite, prefetch, prefetchThreshold, kvEvents, seed);
            return new ServeConfig(e, host, port, apiKey, maxBody, grace);
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
    }

    private static int intArg(String flag, String v, int min, int max) {
        try {
            int x = Integer.parseInt(v.trim());
            if (x >= min && x <= max) {
                return x;
            }
        } catch (NumberFormatException e) {
            // the line below names the flag
        }
        throw new UsageException(flag + " must be an integer in " + min + ".." + max + ", got " + v);
    }

    private static <E extends Enum<E>> E enumArg(String flag, String v, Class<E> type) {
        String want = v.trim().toUpperCase(Locale.ROOT).replace('-', '_');
        for (E e : type.getEnumConstants()) {
            if (e.name().equals(want)) {
                return e;
            }
        }
        StringBuilder names = new StringBuilder();
        for (E e : type.getEnumConstants()) {
            names.append(names.isEmpty() ? "" : ", ").append(e.name().toLowerCase(Locale.ROOT));
        }
        throw new UsageException(flag + " must be one of " + names + ", got " + v);
    }

    /** One line describing the configuration, for the ready line (no secrets: the key and store password hidden). */
    public String describe() {
        EngineConfig e = engine;
        return String.format(Locale.ROOT, "model=%s prefix_cache=%s device_tokens=%d host_tokens=%d storage=%s "
                + "page=%d chunk=%d max_running=%d max_queued=%d write_policy=%s load_overlap=%s api_key=%s",
            e.model().id(), e.radixCache() ? "on" : "off", e.deviceTokens(), e.hostTokens(),
            e.storage() == null ? "none" : io.hicache.storage.PageStores.redact(e.storage()), e.pageSize(),
            e.chunkTokens(), e.maxRunning(), e.maxQueued(), e.writePolicy().name().toLowerCase(Locale.ROOT),
            e.loadOverlap().name().toLowerCase(Locale.ROOT), apiKey == null ? "off" : "on");
    }
}
