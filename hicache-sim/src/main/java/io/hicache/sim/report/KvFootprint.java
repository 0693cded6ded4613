package io.hicache.sim.report;

import io.hicache.sim.ServingConfig;
import io.hicache.sim.SimConfig;

import java.util.Locale;

/**
 * What one token of KV costs in memory on one serving instance, and how much the instance's devices hold: the
 * conversion between the simulator's token capacities and the bytes people buy. Tokens here are simulated
 * tokens (prompt tokens with the default {@code --block-tokens}). Immutable and thread-safe.
 *
 * <p>{@link #bytesPerToken} is the KV one token takes on the whole instance, over its target and draft layers and
 * all its {@code tp x cp} GPUs: TP splits GQA/MHA heads (the GPUs hold one copy between them) but every TP GPU holds
 * MLA's latent whole; CP ranks own disjoint pages. A host tier of {@code N} tokens therefore takes
 * {@code N x bytesPerToken} bytes of host memory per instance, {@code 1/(tp x cp)} of that per GPU (what SGLang's
 * per-rank {@code --hicache-size} gives in GB).
 *
 * @param model            the model preset's name
 * @param gpu              the GPU preset's name
 * @param tp               tensor-parallel GPUs per CP rank
 * @param cp               context-parallel ranks
 * @param layers           target layers
 * @param draftLayers      draft layers backed up with them
 * @param bytesPerLayer    KV bytes of one token in one layer (the model's, before TP)
 * @param bytesPerToken    KV bytes of one simulated token on the whole instance (see above)
 * @param deviceKvTokens   the device KV capacity of the runs, simulated tokens per instance
 * @param gpuRoomTokens    the KV room the instance's GPUs leave after the weights, simulated tokens
 * @param deviceSource     where {@code deviceKvTokens} came from
 * @param weightBytes      the whole model's weights (embeddings, LM head and draft included)
 * @param hbmBytes         HBM of one GPU as the driver reports it
 * @param promptPerSim     prompt tokens one simulated token stands for (1 with the default block tokens)
 * @param weightsFit       whether the weights leave any room for KV on the GPUs (when not, the room is one
 *                         512-token block per GPU, a placeholder)
 */
public record KvFootprint(String model, String gpu, int tp, int cp, int layers, int draftLayers, long bytesPerLayer,
                          long bytesPerToken, long deviceKvTokens, long gpuRoomTokens, DeviceSource deviceSource,
                          long weightBytes, long hbmBytes, double promptPerSim, boolean weightsFit) {

    /** Where the device capacity came from. */
    public enum DeviceSource {
        /** The GPUs' KV room after the weights (the default of a timed run). */
        GPU_ROOM,
        /** {@code --device-capacity-tokens}. */
        OPTION,
        /** The cache-only default (a reference point of the bundled trace). */
        CACHE_ONLY_DEFAULT
    }

    /**
     * The footprint of {@code config} served at TP {@code tp} from a trace whose blocks hold {@code formatBlock}
     * tokens.
     */
    public static KvFootprint of(SimConfig config, int tp, int formatBlock, DeviceSource source) {
        var m = config.model();
        double promptPerSim = (double) formatBlock / config.blockTokens();
        double perGpu = ServingConfig.kvBytesPerTokenPerGpu(m, tp, config.draftLayers());
        long perToken = Math.round(perGpu * tp * promptPerSim);
        long room = (long) (ServingConfig.kvRoomPromptTokens(m, config.gpu(), tp, config.cp(), config.draftLayers())
                / promptPerSim);
        long weights = m.weightBytes(config.draftLayers());
        boolean fits = config.gpu().hbmBytes() * ServingConfig.MEMORY_FRACTION_STATIC - (double) weights / tp > 0;
        return new KvFootprint(m.cliName(), config.gpu().cliName(), tp, config.cp(), m.layers(), config.draftLayers(),
                m.kvBytesPerTokenPerLayer(), perToken, config.deviceCapacityTokens(), room, source, weights,
                config.gpu().hbmBytes(), promptPerSim, fits);
    }

    /** GPUs per instance. */
    public int gpus() {
        return tp * cp;
    }

    /** Bytes of {@code tokens} tokens of KV on one instance; {@link Long#MAX_VALUE} for unlimited. */
    public long bytes(long tokens) {
        if (tokens == Long.MAX_VALUE) {
            return Long.MAX_VALUE;
        }
        long hi = Math.multiplyHigh(tokens, bytesPerToken);
        long lo = tokens * bytesPerToken;
        return hi != 0 || lo < 0 ? Long.MAX_VALUE - 1 : lo;
    }

    /** Whole tokens that {@code bytes} of memory per instance hold. */
    public long tokensIn(long bytes) {
        return bytes == Long.MAX_VALUE ? Long.MAX_VALUE : bytes / bytesPerToken;
    }

    /** {@code tokens} as memory per instance, e.g. {@code 52.4 GB}; {@code unlimited} for unlimited. */
    public String memory(long tokens) {
        return Units.bytes(bytes(tokens));
    }

    /**
     * {@code tokens} as memory with the figures a buyer needs: {@code 52.4 GB per instance}, and per GPU when the
     * instance has several, and for the fleet when there are several instances.
     */
    public String memoryDetail(long tokens, int instances) {
        if (tokens == Long.MAX_VALUE) {
            return "unlimited";
        }
        long b = bytes(tokens);
        StringBuilder s = new StringBuilder(Units.bytes(b)).append(" per instance");
        if (gpus() > 1) {
            s.append(", ").append(Units.bytes(b / gpus())).append(" per GPU");
        }
        if (instances > 1) {
            s.append(", ").append(Units.bytes(b * (double) instances >= Long.MAX_VALUE ? Long.MAX_VALUE - 1
                    : b * instances)).append(" for the fleet of ").append(instances);
        }
        return s.toString();
    }

    /** The run header: the deployment, KV bytes per token and the device's KV room, in two lines. */
    public String header(int instances, boolean timed) {
        StringBuilder h = new StringBuilder();
        h.append(String.format(Locale.ROOT, "%s on %s: %s%s%s", model, gpu,
                instances == 1 ? "1 instance" : instances + " instances",
                gpus() == 1 ? " of 1 GPU" : String.format(Locale.ROOT, " of %d GPUs (TP %d%s)", gpus(), tp,
                        cp > 1 ? ", CP " + cp : ""), timed ? "" : " (cache-only: no timing)"));
        long modelBytes = bytesPerLayer * (layers + draftLayers);
        h.append(String.format(Locale.ROOT, "%nKV %,d B per token (%d layers%s x %,d B)", modelBytes, layers,
                draftLayers > 0 ? " + " + draftLayers + " draft" : "", bytesPerLayer));
        long instanceBytesPerPromptToken = Math.round(bytesPerToken / promptPerSim);
        if (instanceBytesPerPromptToken != modelBytes) {
            h.append(String.format(Locale.ROOT, ", %,d B on the instance (each of its %d TP GPUs holds the whole "
                    + "latent)", instanceBytesPerPromptToken, tp));
        } else if (gpus() > 1) {
            h.append(String.format(Locale.ROOT, ", %,.0f B of it on each of the %d GPUs", (double) modelBytes / gpus(),
                    gpus()));
        }
        if (promptPerSim != 1) {
            h.append(String.format(Locale.ROOT, "; 1 simulated token = %s prompt tokens = %,d B on the instance",
                    trimmed(promptPerSim), bytesPerToken));
        }
        h.append(String.format(Locale.ROOT, "%ndevice KV %s tokens = %s per instance", Units.tokens(deviceKvTokens),
                memory(deviceKvTokens)));
        switch (deviceSource) {
            case GPU_ROOM -> h.append(weightsFit ? String.format(Locale.ROOT, ": the GPUs' room, %.0f %% of %s HBM%s "
                            + "less %s of weights%s", ServingConfig.MEMORY_FRACTION_STATIC * 100, Units.bytes(hbmBytes),
                    gpus() > 1 ? " per GPU" : "", Units.bytes(weightBytes / tp), tp > 1 ? " per GPU" : "")
                    : String.format(Locale.ROOT, "%nWARNING: the weights (%s per GPU) do not fit in %.0f %% of %s HBM; "
                            + "the device KV is a placeholder of one 512-token block per GPU: give more GPUs (--tp) or "
                            + "a larger --gpu", Units.bytes(weightBytes / tp), ServingConfig.MEMORY_FRACTION_STATIC * 100,
                    Units.bytes(hbmBytes)));
            case OPTION -> h.append(" (--device-capacity-tokens; the GPUs' room is ").append(Units.tokens(gpuRoomTokens))
                    .append(" tokens)");
            case CACHE_ONLY_DEFAULT -> h.append(" (the cache-only default; the GPUs' room is ")
                    .append(Units.tokens(gpuRoomTokens)).append(" tokens)");
        }
        return h.toString();
    }

    private static String trimmed(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : String.format(Locale.ROOT, "%.3f", v);
    }
}
