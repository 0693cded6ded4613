package io.hicache.cuda.simulated;

import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaStream;
import io.hicache.cuda.NativeCudaRuntime;

import io.hicache.cuda.ffi.cuda_runtime_api_h;
import io.hicache.cuda.ffi.dim3;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A forward stand-in with real compute, for checks on a GPU: one launch per layer spins for a given
 * number of clock cycles (the layer's compute) and then writes the layer's KV words with a pattern
 * {@link #expectedWord} recomputes, so committed host bytes can be verified.
 *
 * <p>The kernel ({@code cuda-bindings/src/main/cuda/busy_layer.cu}) ships as committed PTX and is loaded
 * through {@code cudaLibraryLoadData} / {@code cudaLibraryGetKernel} and launched with
 * {@code cudaLaunchKernel}: no compiler is needed where it runs.
 *
 * <p>Not a hot path: each launch allocates its argument block. Thread-safe as CUDA is; {@link #close}
 * must not race a launch.
 */
public final class BusyLayerKernel implements AutoCloseable {

    /** The kernel's entry point in the PTX. */
    public static final String ENTRY = "hicache_busy_layer";
    /** The PTX resource, next to this class. */
    public static final String PTX_RESOURCE = "busy_layer.ptx";

    private final NativeCudaRuntime cuda;
    private final long library;
    private final long kernel;
    private boolean closed;

    private BusyLayerKernel(NativeCudaRuntime cuda, long library, long kernel) {
        this.cuda = cuda;
        this.library = library;
        this.kernel = kernel;
    }

    /** The committed PTX text. */
    public static byte[] ptx() {
        try (InputStream in = BusyLayerKernel.class.getResourceAsStream(PTX_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("resource " + PTX_RESOURCE + " is missing from the cuda-bindings jar");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Loads the PTX into the current device's context and looks the kernel up.
     *
     * @throws CudaException when the runtime refuses (no driver, JIT failure, unknown entry)
     */
    public static BusyLayerKernel load(NativeCudaRuntime cuda) {
        Objects.requireNonNull(cuda, "cuda");
        byte[] text = ptx();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment image = arena.allocate(text.length + 1L); // NUL-terminated
            MemorySegment.copy(text, 0, image, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, text.length);
            MemorySegment libOut = arena.allocate(ADDRESS);
            check(cuda, cuda_runtime_api_h.cudaLibraryLoadData(libOut, image, MemorySegment.NULL, MemorySegment.NULL,
                    0, MemorySegment.NULL, MemorySegment.NULL, 0), "cudaLibraryLoadData");
            long lib = libOut.get(JAVA_LONG, 0);
            MemorySegment kernelOut = arena.allocate(ADDRESS);
            int code = cuda_runtime_api_h.cudaLibraryGetKernel(kernelOut, MemorySegment.ofAddress(lib),
                    arena.allocateFrom(ENTRY));
            if (code != 0) {
                cuda_runtime_api_h.cudaLibraryUnload(MemorySegment.ofAddress(lib));
                check(cuda, code, "cudaLibraryGetKernel");
            }
            return new BusyLayerKernel(cuda, lib, kernelOut.get(JAVA_LONG, 0));
        }
    }

    /**
     * Queues one layer on {@code stream}: spin {@code spinCycles} clock cycles, then write {@code words}
     * 32-bit words at device address {@code kv} with layer {@code layer}'s pattern.
     */
    public void launch(CudaStream stream, long kv, long words, int layer, long spinCycles, int blocks, int threads) {
        if (closed) {
            throw new IllegalStateException("BusyLayerKernel is closed");
        }
        if (words < 0 || blocks <= 0 || threads <= 0 || spinCycles < 0) {
            throw new IllegalArgumentException("words, spinCycles >= 0 and blocks, threads > 0 required");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment grid = dim(arena, blocks);
            MemorySegment block = dim(arena, threads);
            MemorySegment kvArg = arena.allocate(JAVA_LONG);
            kvArg.set(JAVA_LONG, 0, kv);
            MemorySegment wordsArg = arena.allocate(JAVA_LONG);
            wordsArg.set(JAVA_LONG, 0, words);
            MemorySegment layerArg = arena.allocate(JAVA_INT);
            layerArg.set(JAVA_INT, 0, layer);
            MemorySegment spinArg = arena.allocate(JAVA_LONG);
            spinArg.set(JAVA_LONG, 0, spinCycles);
            MemorySegment args = arena.allocate(ADDRESS, 4);
            args.setAtIndex(ADDRESS, 0, kvArg);
            args.setAtIndex(ADDRESS, 1, wordsArg);
            args.setAtIndex(ADDRESS, 2, layerArg);
            args.setAtIndex(ADDRESS, 3, spinArg);
            check(cuda, cuda_runtime_api_h.cudaLaunchKernel(MemorySegment.ofAddress(kernel), grid, block, args, 0L,
                    MemorySegment.ofAddress(stream.handle())), "cudaLaunchKernel");
        }
    }

    /** The word the kernel writes at index {@code w} of layer {@code layer} (mirror of {@code hicache_pattern}). */
    public static int expectedWord(int layer, long w) {
        long x = (w + 1L) * 0x9E3779B97F4A7C15L ^ ((Integer.toUnsignedLong(layer) + 1L) * 0xBF58476D1CE4E5B9L);
        x ^= x >>> 31;
        return (int) (x ^ (x >>> 32));
    }

    private static MemorySegment dim(Arena arena, int x) {
        MemorySegment d = dim3.allocate(arena);
        dim3.x(d, x);
        dim3.y(d, 1);
        dim3.z(d, 1);
        return d;
    }

    private static void check(NativeCudaRuntime cuda, int code, String call) {
        if (code != 0) {
            cuda_runtime_api_h.cudaGetLastError();
            throw new CudaException(code, cuda.errorName(code), cuda.errorString(code), call);
        }
    }

    /** Unloads the library. Idempotent. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            check(cuda, cuda_runtime_api_h.cudaLibraryUnload(MemorySegment.ofAddress(library)), "cudaLibraryUnload");
        }
    }
}
