package io.hicache.cuda.ffi;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.AddressLayout;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A small reader for the CUDA runtime headers, enough to classify the parameters of
 * {@code extern __host__ cudaError_t CUDARTAPI name(...)} prototypes as pointer / 32-bit / 64-bit,
 * resolving typedefs from {@code driver_types.h}. Not a C parser: it handles what the runtime headers
 * use (qualifiers, {@code __dv(x)} defaults, {@code CUDART_CB} function-pointer typedefs). Test-only.
 */
final class CudaHeader {

    /** How a C type is passed. */
    enum Kind { POINTER, INT32, INT64, FLOAT32, VOID, STRUCT }

    /** A parsed prototype. */
    record Prototype(String name, Kind returnKind, List<Kind> parameterKinds, String text) {
    }

    private static final Pattern DV = Pattern.compile("__dv\\s*\\([^)]*\\)");
    private static final Pattern NOISE = Pattern.compile(
            "\\b(?:extern|__host__|__device__|__cudart_builtin__|__device_builtin__|CUDARTAPI|CUDART_CB"
                    + "|const|volatile|__restrict__|restrict|__CUDA_DEPRECATED|CUDART_DEPRECATED)\\b");
    private static final Pattern FN_POINTER_TYPEDEF =
            Pattern.compile("\\(\\s*\\*\\s*(\\w+)\\s*\\)\\s*\\(");
    private static final Pattern CUDART_VERSION = Pattern.compile("#define\\s+CUDART_VERSION\\s+(\\d+)");

    private final String api;
    private final Map<String, String> typedefs = new HashMap<>();
    private final int cudartVersion;

    private CudaHeader(String apiText, List<String> typedefSources) {
        this.api = stripComments(apiText);
        Matcher v = CUDART_VERSION.matcher(api);
        this.cudartVersion = v.find() ? Integer.parseInt(v.group(1)) : -1;
        for (String source : typedefSources) {
            collectTypedefs(stripBraces(stripComments(source)));
        }
    }

    /** The include directory: {@code $CUDA_HOME/include}, else {@code /usr/local/cuda/include}, if it has the header. */
    static Optional<Path> locateIncludeDir() {
        List<Path> dirs = new ArrayList<>();
        String cudaHome = System.getenv("CUDA_HOME");
        if (cudaHome != null && !cudaHome.isBlank()) {
            dirs.add(Path.of(cudaHome, "include"));
        }
        dirs.add(Path.of("/usr/local/cuda/include"));
        for (Path dir : dirs) {
            if (Files.isRegularFile(dir.resolve("cuda_runtime_api.h"))) {
                return Optional.of(dir);
            }
        }
        return Optional.empty();
    }

    static CudaHeader read(Path includeDir) {
        try {
            String apiText = Files.readString(includeDir.resolve("cuda_runtime_api.h"));
            List<String> sources = new ArrayList<>();
            for (String file : new String[] {"driver_types.h", "vector_types.h", "cuda_runtime_api.h"}) {
                Path p = includeDir.resolve(file);
                if (Files.isRegularFile(p)) {
                    sources.add(Files.readString(p));
                }
            }
            return new CudaHeader(apiText, sources);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** For prototypes given as text (e.g. a signature of another CUDA version). */
    static CudaHeader ofText(String apiText, CudaHeader typedefsFrom) {
        CudaHeader h = new CudaHeader(apiText, List.of());
        h.typedefs.putAll(typedefsFrom.typedefs);
        return h;
    }

    /** {@code CUDART_VERSION} from the header, or -1. */
    int cudartVersion() {
        return cudartVersion;
    }

    /** The first {@code extern ... CUDARTAPI name(...)} prototype, if declared. */
    Optional<Prototype> prototype(String name) {
        Matcher m = Pattern.compile("\\bCUDARTAPI\\s+" + Pattern.quote(name) + "\\s*\\(").matcher(api);
        if (!m.find()) {
            return Optional.empty();
        }
        int externAt = api.lastIndexOf("extern", m.start());
        int stmtStart = Math.max(api.lastIndexOf(';', m.start()), api.lastIndexOf('}', m.start()));
        if (externAt < 0 || externAt < stmtStart) {
            throw new IllegalStateException("no 'extern' before CUDARTAPI " + name);
        }
        String returnType = api.substring(externAt, m.start());
        int open = m.end() - 1;
        int close = matchingParen(api, open);
        String params = api.substring(open + 1, close);
        List<Kind> kinds = new ArrayList<>();
        for (String param : splitTopLevel(params)) {
            String p = param.strip();
            if (p.isEmpty() || p.equals("void")) {
                continue;
            }
            kinds.add(kindOfParameter(p));
        }
        String text = (returnType + name + "(" + params + ")").replaceAll("\\s+", " ").strip();
        return Optional.of(new Prototype(name, kindOfType(returnType), List.copyOf(kinds), text));
    }

    /** The member names and kinds of {@code struct name { ... };} as declared, in order. */
    List<Map.Entry<String, String>> structFields(String name, String source) {
        String text = stripComments(source);
        Matcher m = Pattern.compile("struct\\s+(?:__device_builtin__\\s+)?" + Pattern.quote(name) + "\\s*\\{").matcher(text);
        if (!m.find()) {
            return List.of();
        }
        int end = text.indexOf('}', m.end());
        List<Map.Entry<String, String>> fields = new ArrayList<>();
        for (String decl : text.substring(m.end(), end).split(";")) {
            String d = decl.strip().replaceAll("\\s+", " ");
            if (d.isEmpty()) {
                continue;
            }
            int sp = d.lastIndexOf(' ');
            fields.add(Map.entry(d.substring(sp + 1), d.substring(0, sp)));
        }
        return fields;
    }

    /** The kind a descriptor layout passes. */
    static Kind kindOf(MemoryLayout layout) {
        if (layout instanceof AddressLayout) {
            return Kind.POINTER;
        }
        if (layout instanceof ValueLayout.OfInt) {
            return Kind.INT32;
        }
        if (layout instanceof ValueLayout.OfLong) {
            return Kind.INT64;
        }
        if (layout instanceof ValueLayout.OfFloat) {
            return Kind.FLOAT32;
        }
        return Kind.STRUCT;
    }

    static Kind returnKindOf(FunctionDescriptor d) {
        return d.returnLayout().map(CudaHeader::kindOf).orElse(Kind.VOID);
    }

    static List<Kind> parameterKindsOf(FunctionDescriptor d) {
        return d.argumentLayouts().stream().map(CudaHeader::kindOf).toList();
    }

    // ---- parsing ----

    private Kind kindOfParameter(String param) {
        String p = DV.matcher(param).replaceAll(" ");
        if (p.contains("*") || p.contains("[")) {
            return Kind.POINTER;
        }
        String[] tokens = NOISE.matcher(p).replaceAll(" ").strip().split("\\s+");
        // the last token is the parameter name when more than one token remains
        int typeTokens = tokens.length > 1 ? tokens.length - 1 : tokens.length;
        return kindOfTokens(String.join(" ", java.util.Arrays.copyOf(tokens, typeTokens)), 0);
    }

    private Kind kindOfType(String type) {
        String t = NOISE.matcher(DV.matcher(type).replaceAll(" ")).replaceAll(" ").strip();
        if (t.contains("*")) {
            return Kind.POINTER;
        }
        return kindOfTokens(t.replaceAll("\\s+", " "), 0);
    }

    private Kind kindOfTokens(String type, int depth) {
        if (depth > 16) {
            throw new IllegalStateException("typedef cycle at " + type);
        }
        switch (type) {
            case "void":
                return Kind.VOID;
            case "int", "unsigned int", "unsigned", "signed int", "int32_t", "uint32_t":
                return Kind.INT32;
            case "size_t", "long long", "unsigned long long", "long long int", "unsigned long long int",
                 "int64_t", "uint64_t":
                return Kind.INT64;
            case "float":
                return Kind.FLOAT32;
            default:
                break;
        }
        if (type.startsWith("enum ")) {
            return Kind.INT32;
        }
        if (type.startsWith("struct ")) {
            return Kind.STRUCT;
        }
        String target = typedefs.get(type);
        if (target == null) {
            throw new IllegalStateException("unknown C type '" + type + "': not a builtin and no typedef found");
        }
        if (target.equals("*")) {
            return Kind.POINTER;
        }
        return kindOfTokens(target, depth + 1);
    }

    private void collectTypedefs(String text) {
        Matcher m = Pattern.compile("\\btypedef\\b([^;]*);").matcher(text);
        while (m.find()) {
            String body = NOISE.matcher(m.group(1)).replaceAll(" ").strip().replaceAll("\\s+", " ");
            Matcher fp = FN_POINTER_TYPEDEF.matcher(body);
            if (fp.find()) {
                typedefs.put(fp.group(1), "*");
                continue;
            }
            int sp = Math.max(body.lastIndexOf(' '), body.lastIndexOf('*'));
            if (sp <= 0) {
                continue;
            }
            String name = body.substring(sp + 1).strip();
            String base = body.substring(0, sp + 1).strip();
            typedefs.put(name, base.contains("*") ? "*" : base);
        }
    }

    private static String stripComments(String s) {
        return s.replaceAll("(?s)/\\*.*?\\*/", " ").replaceAll("//[^\n]*", " ");
    }

    private static String stripBraces(String s) {
        String prev;
        String cur = s;
        do {
            prev = cur;
            cur = cur.replaceAll("\\{[^{}]*\\}", " ");
        } while (!cur.equals(prev));
        return cur;
    }

    private static int matchingParen(String s, int open) {
        int depth = 0;
        for (int i = open; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '(') {
                depth++;
            } else if (c == ')' && --depth == 0) {
                return i;
            }
        }
        throw new IllegalStateException("unbalanced parentheses after index " + open);
    }

    private static List<String> splitTopLevel(String params) {
        List<String> out = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i < params.length(); i++) {
            char c = params.charAt(i);
            if (c == '(') {
                depth++;
            } else if (c == ')') {
                depth--;
            } else if (c == ',' && depth == 0) {
                out.add(params.substring(start, i));
                start = i + 1;
            }
        }
        out.add(params.substring(start));
        return out;
    }
}
