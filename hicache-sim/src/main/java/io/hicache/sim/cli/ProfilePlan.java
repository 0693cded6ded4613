package io.hicache.sim.cli;

import io.hicache.sim.ServingConfig;
import io.hicache.sim.TierWeights;
import io.hicache.sim.model.EngineProfile;
import io.hicache.sim.report.KvFootprint;
import io.hicache.sim.trace.Request;
import io.hicache.sim.trace.TraceReader;
import io.hicache.sim.trace.TraceSource;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

import java.io.IOException;

/**
 * The {@code --engine-profile} part of a {@link RunPlan}: reads the profile, refuses the options it replaces or that
 * the profiled engine does not model (exit status 2, one line each), and derives what the plan needs from it (the
 * serving configuration, the KV footprint) and checks the trace, as the engine is sent it ({@code --block-tokens}
 * tokens a block), against the engine's context and device pool. Used on
 * the command line's thread.
 */
final class ProfilePlan {
    /** The preset that stands in for the model inside the simulator's configuration; its shape is never used. */
    static final io.hicache.sim.model.ModelPreset STAND_IN = io.hicache.sim.model.ModelPreset.LLAMA3_8B;

    private ProfilePlan() {
    }

    /** The profile {@code --engine-profile} names, or null without it; refuses what contradicts it. */
    static EngineProfile read(CommandLine cl, Main.SimOptions o, ServingOptions so, SizingOptions z, Main.Env env) {
        if (o.engineProfile == null) {
            if (o.maxRunning != null) {
                throw RunPlan.usage(cl, "--max-running needs --engine-profile (the preset engine batches by "
                        + "--max-batch-tokens)");
            }
            return null;
        }
        refuse(cl, o.model != null, "--model", "the profile names the model");
        refuse(cl, o.gpu != null, "--gpu", "the profile's timings are the engine's machine");
        refuse(cl, o.cacheOnly, "--cache-only", "cache-only ignores timing");
        refuse(cl, so.tp != null, "--tp", "the engine runs one process");
        refuse(cl, so.maxBatchTokens != null, "--max-batch-tokens", "the engine runs one chunk and the decodes per step");
        refuse(cl, so.hostBandwidthGbps != null, "--host-bandwidth-gbps", "the profile gives the copy rates");
        refuse(cl, o.cp != null && o.cp != 1, "--cp", "the engine has no CP group");
        refuse(cl, o.draftLayers != null && o.draftLayers != 0, "--draft-layers", "the engine has no draft model");
        refuse(cl, o.storage != null || o.storageCapacity != null, "--storage", "the profiled engine models no L3 tier yet");
        refuse(cl, z.hostMemory != null, "--host-memory", "give the engine's host tier with --host-capacity-tokens");
        if (o.maxRunning != null && o.maxRunning < 1) {
            throw RunPlan.usage(cl, "--max-running must be >= 1, got " + o.maxRunning);
        }
        try {
            EngineProfile p = EngineProfile.read(o.engineProfile.isAbsolute() ? o.engineProfile
                    : env.workDir().resolve(o.engineProfile));
            return o.maxRunning == null ? p : p.withMaxRunning(o.maxRunning);
        } catch (IllegalArgumentException e) {
            throw RunPlan.usage(cl, "--engine-profile: " + e.getMessage());
        }
    }

    private static void refuse(CommandLine cl, boolean given, String option, String why) {
        if (given) {
            throw RunPlan.usage(cl, "--engine-profile replaces " + option + " (" + why + "); drop " + option);
        }
    }

    /** The page size: the profile's; {@code --page-size} may only repeat it. */
    static int pageSize(CommandLine cl, Integer given, EngineProfile p) {
        if (given != null && given != p.pageSize()) {
            throw RunPlan.usage(cl, "--page-size " + given + " does not match the engine profile's page_size "
                    + p.pageSize() + "; drop --page-size or calibrate the engine at " + given);
        }
        return p.pageSize();
    }

    /**
     * Refuses block tokens the engine's pages cannot carry: the client sends each trace block as {@code blockTokens}
     * tokens ({@code --block-tokens}, the trace's block size when left out) and the engine caches whole pages, so the
     * profile's page size must divide them, as the simulator's page keys need.
     */
    static void checkBlockTokens(CommandLine cl, int blockTokens, int formatBlock, EngineProfile p) {
        if (blockTokens % p.pageSize() != 0) {
            throw RunPlan.usage(cl, "--block-tokens " + blockTokens + (blockTokens == formatBlock ? " (the trace's "
                    + "block size)" : "") + " is not a multiple of the engine profile's page_size " + p.pageSize()
                    + ": each trace block is sent as --block-tokens tokens and the engine caches whole pages");
        }
    }

    /** The serving configuration: one-process engines, the profile's chunk unless {@code --chunk-tokens} is given. */
    static ServingConfig serving(CommandLine cl, ServingOptions so, EngineProfile p, Main.Kind kind) {
        if (kind != Main.Kind.COMPARE && so.instances != null && so.instances.size() > 1) {
            throw RunPlan.usage(cl, "--instances takes one value here; compare takes a list, got " + so.instances);
        }
        if (kind != Main.Kind.COMPARE && so.routers != null && so.routers.size() > 1) {
            throw RunPlan.usage(cl, "--router takes one value here; compare takes a list, got " + so.routers);
        }
        int chunk = so.chunkTokens == null ? p.chunkTokens() : so.chunkTokens;
        if (chunk < 1) {
            throw RunPlan.usage(cl, "--chunk-tokens must be >= 1, got " + chunk);
        }
        boolean shared = false;
        if (so.copyEngines != null) {
            switch (so.copyEngines.trim().toLowerCase(java.util.Locale.ROOT)) {
                case "shared" -> shared = true;
                case "separate" -> shared = false;
                default -> throw RunPlan.usage(cl, "--copy-engines must be separate or shared, got '"
                        + so.copyEngines + "'");
            }
        }
        try {
            ServingConfig d = ServingConfig.defaults(STAND_IN, io.hicache.sim.model.GpuPreset.DEFAULT);
            return new ServingConfig(so.instances == null ? 1 : so.instances.getFirst(),
                    so.routers == null ? d.router() : so.routers.getFirst(), 1,
                    Math.max(chunk, ServingConfig.DEFAULT_MAX_BATCH_TOKENS), chunk,
                    so.sloTtftMs == null ? d.sloTtftMs() : so.sloTtftMs,
                    so.sloTpotMs == null ? d.sloTpotMs() : so.sloTpotMs, 0, shared,
                    so.closedLoop == null || so.closedLoop,
                    so.tierWeights == null ? TierWeights.UNIT : TierWeights.parse(so.tierWeights));
        } catch (IllegalArgumentException e) {
            throw RunPlan.usage(cl, e.getMessage());
        }
    }

    /**
     * Writes the runs' JSON as {@link io.hicache.sim.report.JsonReport} does, with the profile in place of the stand-in
     * presets: {@code model} is the profile's model id, {@code gpu} is {@code "engine-profile"}, and
     * {@code engine_profile} says which profile and scheduler limits timed the run.
     */
    static void writeJson(java.nio.file.Path file, java.util.List<io.hicache.sim.report.SimResult> results,
                          boolean asArray, EngineProfile p, String profileFile) {
        var mapper = new com.fasterxml.jackson.databind.ObjectMapper();
        var array = mapper.createArrayNode();
        for (io.hicache.sim.report.SimResult r : results) {
            try {
                var n = (com.fasterxml.jackson.databind.node.ObjectNode) mapper.readTree(
                        io.hicache.sim.report.JsonReport.toJson(r));
                n.put("model", p.model().id());
                n.put("gpu", "engine-profile");
                var e = n.putObject("engine_profile");
                e.put("file", profileFile);
                e.put("engine", p.engine());
                e.put("page_size", p.pageSize());
                e.put("max_running", p.maxRunning());
                e.put("context_tokens", p.model().contextTokens());
                array.add(n);
            } catch (com.fasterxml.jackson.core.JsonProcessingException ex) {
                throw new IllegalStateException("cannot re-read the JSON report: " + ex.getMessage(), ex);
            }
        }
        try {
            String text = mapper.writerWithDefaultPrettyPrinter().writeValueAsString(asArray ? array : array.get(0));
            java.nio.file.Files.writeString(file, text + System.lineSeparator());
        } catch (java.io.IOException ex) {
            throw new java.io.UncheckedIOException("cannot write JSON report " + file + ": " + ex.getMessage(), ex);
        }
    }

    /** The footprint the run header and the reports show: the profile's model and KV bytes, the given device. */
    static KvFootprint footprint(EngineProfile p, long deviceTokens) {
        EngineProfile.Model m = p.model();
        return new KvFootprint("profile " + m.id(), "engine " + (p.engine().isEmpty() ? "(unnamed)" : p.engine()), 1,
                1, m.layers(), 0, Math.max(1, p.kvBytesPerToken() / m.layers()), p.kvBytesPerToken(), deviceTokens,
                deviceTokens, KvFootprint.DeviceSource.OPTION, 0, 0, 1.0, true);
    }

    /**
     * Refuses a trace with a request the engine would refuse: prompt plus output beyond the model's context, or more
     * pages than the device pool holds (the engine reserves a request's pages for prompt and output at admission). A
     * record the trace cannot read is left to the preflight, which fails the run on it with its line.
     */
    static void checkTrace(CommandLine cl, TraceSource trace, EngineProfile p, long deviceTokens, int blockTokens) {
        int context = p.model().contextTokens();
        long devicePages = deviceTokens / p.pageSize();
        io.hicache.sim.trace.TokenExpander expander = new io.hicache.sim.trace.TokenExpander(blockTokens);
        try (TraceReader reader = trace.open()) {
            Request r;
            while ((r = reader.next()) != null) {
                int prompt = expander.tokenCount(r); // what the engine is sent: the trace's own at its block size
                long tokens = (long) prompt + Math.max(1, r.outputLength());
                if (tokens > context) {
                    throw RunPlan.usage(cl, "request " + r.index() + " of trace " + trace.name() + " holds "
                            + prompt + " prompt + " + r.outputLength() + " output tokens" + (prompt != r.inputLength()
                            ? " at --block-tokens " + blockTokens : "") + ", beyond the "
                            + "engine profile's context of " + context + " tokens (model.context_tokens); use a "
                            + "model with a longer context, a smaller --block-tokens or --limit");
                }
                long pages = (tokens + p.pageSize() - 1) / p.pageSize();
                if (pages > devicePages) {
                    throw RunPlan.usage(cl, "request " + r.index() + " of trace " + trace.name() + " needs " + pages
                            + " device pages for its prompt and output; --device-capacity-tokens " + deviceTokens
                            + " holds " + devicePages);
                }
            }
        } catch (ParameterException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            // a bad record: the preflight reports it (exit 1) with its line
        }
    }
}
