package io.hicache.cuda.ffi;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Finds and loads {@code libcudart} for {@link cuda_runtime_api_h}.
 *
 * <p><b>Search order.</b> An explicit path, from the system property {@value #PATH_PROPERTY} (alias
 * {@value #PATH_ENV}) or else the environment variable {@value #PATH_ENV}, is the only candidate when
 * set: asking for one file and silently getting another would hide a misconfiguration. Otherwise:
 * {@code libcudart.so.13}, {@code libcudart.so.12}, {@code libcudart.so} through the dynamic loader's
 * search path, then the same names under {@code $CUDA_HOME/lib64} and {@code /usr/local/cuda/lib64}.
 *
 * <p><b>Threads.</b> Thread-safe: the process-wide library is loaded once, on first use, into the
 * global arena (never unloaded). <b>Failures.</b> When nothing loads, {@link #lookup()} throws
 * {@link UnsatisfiedLinkError} naming every candidate and why it failed; the attempt is not repeated.
 */
@SuppressWarnings("restricted")
public final class CudartLibrary {

    /** System property naming the {@code libcudart} file to load. */
    public static final String PATH_PROPERTY = "hicache.cudart";
    /** Environment variable (and system property alias) naming the {@code libcudart} file to load. */
    public static final String PATH_ENV = "HICACHE_CUDART";

    private static final String[] SONAMES = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};

    private CudartLibrary() {
    }

    /** The result of one load attempt: a lookup and where it came from, or the failure text. */
    private record Loaded(SymbolLookup lookup, String from, String failure) {
    }

    private static final class Global {
        static final Loaded LOADED = load(candidates(), Arena.global());
    }

    /**
     * The process-wide lookup over the loaded {@code libcudart}.
     *
     * @throws UnsatisfiedLinkError when no candidate loaded; the message names each one tried
     */
    public static SymbolLookup lookup() {
        Loaded loaded = Global.LOADED;
        if (loaded.lookup == null) {
            throw new UnsatisfiedLinkError(loaded.failure);
        }
        return loaded.lookup;
    }

    /** True when {@link #lookup()} succeeds. */
    public static boolean isAvailable() {
        return Global.LOADED.lookup != null;
    }

    /** The candidate that loaded, or {@code "(not loaded)"}. */
    public static String loadedFrom() {
        Loaded loaded = Global.LOADED;
        return loaded.lookup == null ? "(not loaded)" : loaded.from;
    }

    /**
     * The candidates, in order, for the current system properties and environment.
     * See the class comment for the order.
     */
    public static List<String> candidates() {
        String explicit = System.getProperty(PATH_PROPERTY);
        if (explicit == null || explicit.isBlank()) {
            explicit = System.getProperty(PATH_ENV);
        }
        if (explicit == null || explicit.isBlank()) {
            explicit = System.getenv(PATH_ENV);
        }
        return candidates(explicit, System.getenv("CUDA_HOME"));
    }

    /**
     * The candidates for an explicit path (may be null) and a {@code CUDA_HOME} (may be null).
     */
    public static List<String> candidates(String explicitPath, String cudaHome) {
        if (explicitPath != null && !explicitPath.isBlank()) {
            return List.of(explicitPath.strip());
        }
        Set<String> out = new LinkedHashSet<>();
        for (String soname : SONAMES) {
            out.add(soname);
        }
        List<String> dirs = new ArrayList<>(2);
        if (cudaHome != null && !cudaHome.isBlank()) {
            dirs.add(Path.of(cudaHome.strip(), "lib64").toString());
        }
        dirs.add("/usr/local/cuda/lib64");
        for (String dir : dirs) {
            for (String soname : SONAMES) {
                out.add(Path.of(dir, soname).toString());
            }
        }
        return List.copyOf(out);
    }

    /**
     * Opens the first candidate that loads into {@code arena}.
     *
     * @return the lookup over it
     * @throws UnsatisfiedLinkError naming every candidate and the loader's reason for each
     */
    public static SymbolLookup open(List<String> candidates, Arena arena) {
        Loaded loaded = load(candidates, arena);
        if (loaded.lookup == null) {
            throw new UnsatisfiedLinkError(loaded.failure);
        }
        return loaded.lookup;
    }

    private static Loaded load(List<String> candidates, Arena arena) {
        StringBuilder why = new StringBuilder(256);
        for (String candidate : candidates) {
            try {
                SymbolLookup lookup = candidate.indexOf('/') >= 0
                        ? SymbolLookup.libraryLookup(Path.of(candidate), arena)
                        : SymbolLookup.libraryLookup(candidate, arena);
                return new Loaded(lookup, candidate, null);
            } catch (IllegalArgumentException | IllegalCallerException e) {
                why.append("\n  ").append(candidate).append(": ").append(e.getMessage());
            }
        }
        String failure = "CUDA runtime library (libcudart) not found; set " + PATH_ENV
                + " (environment variable or system property) or -D" + PATH_PROPERTY
                + " to its path. Tried " + candidates.size() + " candidate(s):" + why;
        return new Loaded(null, null, failure);
    }
}
