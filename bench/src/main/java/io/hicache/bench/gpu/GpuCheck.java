package io.hicache.bench.gpu;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.NativeCudaRuntime;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The Java steps of {@code scripts/gpu-check}. Each step prints one JSON object on stdout:
 * <pre>
 *   probe [--smi TEXT]           runtime and driver versions, device count (exit 3 when no device)
 *   bandwidth [--quick] [--sim]  pinned host link bandwidth ({@link GpuBandwidth})
 *   layered [--quick] [--sim]    layered vs all-layers backup over the busy-kernel forward ({@link GpuLayeredRun})
 *   report DIR                   folds DIR/steps/*.json into DIR/gpu-check.json and gpu-check.md, prints the markdown
 * </pre>
 * {@code --sim} runs a step on the simulated device (how CI exercises the code without a GPU).
 */
public final class GpuCheck {

    static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private GpuCheck() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            System.err.println("usage: GpuCheck probe | bandwidth [--quick] [--sim] | layered [--quick] [--sim] | report DIR");
            System.exit(2);
        }
        List<String> rest = List.of(args).subList(1, args.length);
        boolean quick = rest.contains("--quick");
        boolean sim = rest.contains("--sim");
        switch (args[0]) {
            case "probe" -> System.exit(probe(rest.size() >= 2 && rest.get(0).equals("--smi") ? rest.get(1) : ""));
            case "bandwidth" -> {
                try (CudaRuntime cuda = open(sim)) {
                    print(new GpuBandwidth(cuda, quick || sim ? 256L << 20 : 1L << 30).run());
                }
            }
            case "layered" -> {
                try (CudaRuntime cuda = open(sim)) {
                    print(GpuLayeredRun.compare(cuda, quick || sim));
                }
            }
            case "report" -> {
                if (rest.isEmpty()) {
                    System.err.println("report needs the output directory");
                    System.exit(2);
                }
                System.out.print(report(Path.of(rest.get(0))));
            }
            default -> {
                System.err.println("unknown step '" + args[0] + "': expected probe, bandwidth, layered or report");
                System.exit(2);
            }
        }
    }

    private static CudaRuntime open(boolean sim) {
        if (sim) {
            return new SimulatedCudaRuntime();
        }
        NativeCudaRuntime cuda = NativeCudaRuntime.load();
        cuda.setDevice(0);
        return cuda;
    }

    private static int probe(String nvidiaSmi) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        if (!nvidiaSmi.isBlank()) {
            out.put("nvidia_smi", nvidiaSmi.strip()); // name, memory, driver, compute capability, PCIe gen and width
        }
        if (!NativeCudaRuntime.isLibraryAvailable()) {
            out.put("gpu", false);
            out.put("reason", "libcudart not found");
            print(out);
            return 3;
        }
        try (NativeCudaRuntime cuda = NativeCudaRuntime.load()) {
            out.put("runtime_version", cuda.runtimeVersion());
            out.put("driver_version", cuda.driverVersion());
            out.put("batched_copy_form", cuda.batchedCopyForm());
            out.put("critical_downcalls", cuda.criticalDowncalls());
            int devices;
            try {
                devices = cuda.deviceCount();
            } catch (CudaException e) {
                out.put("gpu", false);
                out.put("reason", e.getMessage());
                print(out);
                return 3;
            }
            out.put("device_count", devices);
            out.put("gpu", devices > 0);
            print(out);
            return devices > 0 ? 0 : 3;
        }
    }

    static void print(Object value) throws IOException {
        System.out.println(JSON.writeValueAsString(value));
    }

    /** Folds the step files into gpu-check.json and gpu-check.md; returns the markdown. */
    static String report(Path dir) throws IOException {
        ObjectNode root = JSON.createObjectNode();
        root.put("gpu", true);
        ObjectNode steps = root.putObject("steps");
        StringBuilder md = new StringBuilder("# GPU check\n\n| step | status | seconds |\n|---|---|---|\n");
        Path stepDir = dir.resolve("steps");
        List<Path> files = new ArrayList<>();
        if (Files.isDirectory(stepDir)) {
            try (var s = Files.list(stepDir)) {
                s.filter(p -> p.toString().endsWith(".status")).sorted().forEach(files::add);
            }
        }
        StringBuilder details = new StringBuilder();
        for (Path status : files) {
            String name = status.getFileName().toString().replaceFirst("^\\d+-", "").replace(".status", "");
            String[] st = Files.readString(status).strip().split("\\s+");
            ObjectNode step = steps.putObject(name);
            step.put("status", st[0]);
            step.put("seconds", st.length > 1 ? Double.parseDouble(st[1]) : -1);
            md.append("| ").append(name).append(" | ").append(st[0]).append(" | ").append(st.length > 1 ? st[1] : "?")
                    .append(" |\n");
            Path result = Path.of(status.toString().replace(".status", ".json"));
            if (Files.isRegularFile(result) && Files.size(result) > 0) {
                try {
                    JsonNode value = JSON.readTree(result.toFile());
                    step.set("result", value);
                    details.append("\n## ").append(name).append("\n\n");
                    if (isJmhResult(value)) {
                        jmhTable(value, details);
                    } else {
                        flatten("", value, details);
                    }
                } catch (IOException e) {
                    step.put("result_error", "not JSON: " + e.getMessage());
                }
            }
        }
        Files.writeString(dir.resolve("gpu-check.json"), JSON.writeValueAsString(root) + "\n");
        String text = md.append(details).toString();
        Files.writeString(dir.resolve("gpu-check.md"), text);
        return text;
    }

    /** JMH's {@code -rf json} output: an array of runs, each with a benchmark name and a primary metric. */
    private static boolean isJmhResult(JsonNode node) {
        return node.isArray() && !node.isEmpty() && node.get(0).has("benchmark") && node.get(0).has("primaryMetric");
    }

    /** One row per run: the benchmark's short name, its parameters, score ± error and unit. */
    private static void jmhTable(JsonNode runs, StringBuilder out) {
        out.append("| benchmark | params | score | error | unit |\n|---|---|---|---|---|\n");
        for (JsonNode run : runs) {
            String bench = run.path("benchmark").asText();
            StringBuilder params = new StringBuilder();
            for (Map.Entry<String, JsonNode> p : run.path("params").properties()) {
                params.append(params.isEmpty() ? "" : ", ").append(p.getKey()).append('=').append(p.getValue().asText());
            }
            JsonNode metric = run.path("primaryMetric");
            out.append("| ").append(bench.substring(bench.lastIndexOf('.') + 1)).append(" | ").append(params)
                    .append(" | ").append(String.format(Locale.ROOT, "%.1f", metric.path("score").asDouble()))
                    .append(" | ").append(String.format(Locale.ROOT, "%.1f", metric.path("scoreError").asDouble()))
                    .append(" | ").append(metric.path("scoreUnit").asText()).append(" |\n");
        }
    }

    private static void flatten(String prefix, JsonNode node, StringBuilder out) {
        if (node.isObject()) {
            for (Map.Entry<String, JsonNode> e : node.properties()) {
                flatten(prefix.isEmpty() ? e.getKey() : prefix + "." + e.getKey(), e.getValue(), out);
            }
        } else {
            out.append("- `").append(prefix).append("`: ").append(node.isTextual() ? node.asText() : node.toString())
                    .append('\n');
        }
    }
}
