// Generated-style bindings in the layout jextract emits; see cuda-bindings/jextract/README.md.
// Regenerate with jextract @cuda-bindings/jextract/cudart.args and keep the hand-edits marked "Hand-edit".

package io.hicache.cuda.ffi;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * Downcalls to the CUDA runtime ({@code cuda_runtime_api.h}), one lazily initialised holder per
 * function, in the layout jextract generates from {@code cuda-bindings/jextract/cudart.args}.
 *
 * <p>Each function {@code fn} has {@code fn(...)} (the call), {@code fn$descriptor()},
 * {@code fn$handle()} and {@code fn$address()}. The symbol is resolved on first use of any of them,
 * so a symbol the loaded library lacks (e.g. {@code cudaMemcpyBatchAsync} before CUDA 12.8) fails
 * with {@link UnsatisfiedLinkError} only when that function is touched; {@link #hasSymbol(String)}
 * asks without failing. The library is found by {@link CudartLibrary}.
 *
 * <p><b>Threads.</b> Stateless and thread-safe; the CUDA runtime itself is thread-safe.
 * <b>Failures.</b> The calls return the raw {@code cudaError_t}; they throw only
 * {@link UnsatisfiedLinkError} when the library or the symbol is missing.
 *
 * <p>Hand-edits against jextract's output: the symbol lookup comes from {@link CudartLibrary}
 * (search order, {@code HICACHE_CUDART}); {@link #hasSymbol(String)}; and
 * {@link #cudaMemcpyBatchAsync_v12_8}, the CUDA 12.8/12.9 signature of the same symbol.
 */
@SuppressWarnings({"restricted", "unused"})
public class cuda_runtime_api_h {

    cuda_runtime_api_h() {
        // Should not be called directly
    }

    /** C {@code int}, {@code unsigned int} and enums. */
    public static final ValueLayout.OfInt C_INT = ValueLayout.JAVA_INT;
    /** C {@code size_t} (LP64 and LLP64 alike). */
    public static final ValueLayout.OfLong C_LONG = ValueLayout.JAVA_LONG;
    /** C {@code float}. */
    public static final ValueLayout.OfFloat C_FLOAT = ValueLayout.JAVA_FLOAT;
    /** Any C pointer or opaque handle ({@code cudaStream_t}, {@code cudaEvent_t}, function pointers). */
    public static final AddressLayout C_POINTER = ValueLayout.ADDRESS
            .withTargetLayout(MemoryLayout.sequenceLayout(Long.MAX_VALUE, JAVA_BYTE));

    // Hand-edit: jextract emits SymbolLookup.libraryLookup(System.mapLibraryName("cudart"), ...) here.
    static MemorySegment findOrThrow(String symbol) {
        return CudartLibrary.lookup().find(symbol)
                .orElseThrow(() -> new UnsatisfiedLinkError("unresolved symbol: " + symbol
                        + " in " + CudartLibrary.loadedFrom()));
    }

    /**
     * Hand-edit: true when the loaded library exports {@code symbol}; never throws for a missing
     * symbol, but throws {@link UnsatisfiedLinkError} when no library loads at all.
     */
    public static boolean hasSymbol(String symbol) {
        return CudartLibrary.lookup().find(symbol).isPresent();
    }

    private static class cudaRuntimeGetVersion {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaRuntimeGetVersion");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
     * }
     */
    public static FunctionDescriptor cudaRuntimeGetVersion$descriptor() {
        return cudaRuntimeGetVersion.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
     * }
     */
    public static MethodHandle cudaRuntimeGetVersion$handle() {
        return cudaRuntimeGetVersion.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
     * }
     */
    public static MemorySegment cudaRuntimeGetVersion$address() {
        return cudaRuntimeGetVersion.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
     * }
     */
    public static int cudaRuntimeGetVersion(MemorySegment runtimeVersion) {
        var mh$ = cudaRuntimeGetVersion.HANDLE;
        try {
            return (int) mh$.invokeExact(runtimeVersion);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaDriverGetVersion {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaDriverGetVersion");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaDriverGetVersion(int *driverVersion)
     * }
     */
    public static FunctionDescriptor cudaDriverGetVersion$descriptor() {
        return cudaDriverGetVersion.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaDriverGetVersion(int *driverVersion)
     * }
     */
    public static MethodHandle cudaDriverGetVersion$handle() {
        return cudaDriverGetVersion.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaDriverGetVersion(int *driverVersion)
     * }
     */
    public static MemorySegment cudaDriverGetVersion$address() {
        return cudaDriverGetVersion.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaDriverGetVersion(int *driverVersion)
     * }
     */
    public static int cudaDriverGetVersion(MemorySegment driverVersion) {
        var mh$ = cudaDriverGetVersion.HANDLE;
        try {
            return (int) mh$.invokeExact(driverVersion);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaGetDeviceCount {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaGetDeviceCount");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaGetDeviceCount(int *count)
     * }
     */
    public static FunctionDescriptor cudaGetDeviceCount$descriptor() {
        return cudaGetDeviceCount.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaGetDeviceCount(int *count)
     * }
     */
    public static MethodHandle cudaGetDeviceCount$handle() {
        return cudaGetDeviceCount.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaGetDeviceCount(int *count)
     * }
     */
    public static MemorySegment cudaGetDeviceCount$address() {
        return cudaGetDeviceCount.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaGetDeviceCount(int *count)
     * }
     */
    public static int cudaGetDeviceCount(MemorySegment count) {
        var mh$ = cudaGetDeviceCount.HANDLE;
        try {
            return (int) mh$.invokeExact(count);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaSetDevice {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_INT
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaSetDevice");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaSetDevice(int device)
     * }
     */
    public static FunctionDescriptor cudaSetDevice$descriptor() {
        return cudaSetDevice.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaSetDevice(int device)
     * }
     */
    public static MethodHandle cudaSetDevice$handle() {
        return cudaSetDevice.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaSetDevice(int device)
     * }
     */
    public static MemorySegment cudaSetDevice$address() {
        return cudaSetDevice.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaSetDevice(int device)
     * }
     */
    public static int cudaSetDevice(int device) {
        var mh$ = cudaSetDevice.HANDLE;
        try {
            return (int) mh$.invokeExact(device);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaGetErrorName {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_INT
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaGetErrorName");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern const char * cudaGetErrorName(cudaError_t error)
     * }
     */
    public static FunctionDescriptor cudaGetErrorName$descriptor() {
        return cudaGetErrorName.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern const char * cudaGetErrorName(cudaError_t error)
     * }
     */
    public static MethodHandle cudaGetErrorName$handle() {
        return cudaGetErrorName.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern const char * cudaGetErrorName(cudaError_t error)
     * }
     */
    public static MemorySegment cudaGetErrorName$address() {
        return cudaGetErrorName.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern const char * cudaGetErrorName(cudaError_t error)
     * }
     */
    public static MemorySegment cudaGetErrorName(int error) {
        var mh$ = cudaGetErrorName.HANDLE;
        try {
            return (MemorySegment) mh$.invokeExact(error);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaGetErrorString {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_INT
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaGetErrorString");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern const char * cudaGetErrorString(cudaError_t error)
     * }
     */
    public static FunctionDescriptor cudaGetErrorString$descriptor() {
        return cudaGetErrorString.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern const char * cudaGetErrorString(cudaError_t error)
     * }
     */
    public static MethodHandle cudaGetErrorString$handle() {
        return cudaGetErrorString.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern const char * cudaGetErrorString(cudaError_t error)
     * }
     */
    public static MemorySegment cudaGetErrorString$address() {
        return cudaGetErrorString.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern const char * cudaGetErrorString(cudaError_t error)
     * }
     */
    public static MemorySegment cudaGetErrorString(int error) {
        var mh$ = cudaGetErrorString.HANDLE;
        try {
            return (MemorySegment) mh$.invokeExact(error);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaGetLastError {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaGetLastError");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaGetLastError(void)
     * }
     */
    public static FunctionDescriptor cudaGetLastError$descriptor() {
        return cudaGetLastError.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaGetLastError(void)
     * }
     */
    public static MethodHandle cudaGetLastError$handle() {
        return cudaGetLastError.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaGetLastError(void)
     * }
     */
    public static MemorySegment cudaGetLastError$address() {
        return cudaGetLastError.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaGetLastError(void)
     * }
     */
    public static int cudaGetLastError() {
        var mh$ = cudaGetLastError.HANDLE;
        try {
            return (int) mh$.invokeExact();
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaMalloc {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_LONG
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaMalloc");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMalloc(void **devPtr, size_t size)
     * }
     */
    public static FunctionDescriptor cudaMalloc$descriptor() {
        return cudaMalloc.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMalloc(void **devPtr, size_t size)
     * }
     */
    public static MethodHandle cudaMalloc$handle() {
        return cudaMalloc.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMalloc(void **devPtr, size_t size)
     * }
     */
    public static MemorySegment cudaMalloc$address() {
        return cudaMalloc.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaMalloc(void **devPtr, size_t size)
     * }
     */
    public static int cudaMalloc(MemorySegment devPtr, long size) {
        var mh$ = cudaMalloc.HANDLE;
        try {
            return (int) mh$.invokeExact(devPtr, size);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaFree {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaFree");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaFree(void *devPtr)
     * }
     */
    public static FunctionDescriptor cudaFree$descriptor() {
        return cudaFree.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaFree(void *devPtr)
     * }
     */
    public static MethodHandle cudaFree$handle() {
        return cudaFree.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaFree(void *devPtr)
     * }
     */
    public static MemorySegment cudaFree$address() {
        return cudaFree.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaFree(void *devPtr)
     * }
     */
    public static int cudaFree(MemorySegment devPtr) {
        var mh$ = cudaFree.HANDLE;
        try {
            return (int) mh$.invokeExact(devPtr);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaHostAlloc {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_LONG,
            cuda_runtime_api_h.C_INT
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaHostAlloc");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
     * }
     */
    public static FunctionDescriptor cudaHostAlloc$descriptor() {
        return cudaHostAlloc.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
     * }
     */
    public static MethodHandle cudaHostAlloc$handle() {
        return cudaHostAlloc.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
     * }
     */
    public static MemorySegment cudaHostAlloc$address() {
        return cudaHostAlloc.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
     * }
     */
    public static int cudaHostAlloc(MemorySegment pHost, long size, int flags) {
        var mh$ = cudaHostAlloc.HANDLE;
        try {
            return (int) mh$.invokeExact(pHost, size, flags);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaFreeHost {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaFreeHost");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaFreeHost(void *ptr)
     * }
     */
    public static FunctionDescriptor cudaFreeHost$descriptor() {
        return cudaFreeHost.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaFreeHost(void *ptr)
     * }
     */
    public static MethodHandle cudaFreeHost$handle() {
        return cudaFreeHost.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaFreeHost(void *ptr)
     * }
     */
    public static MemorySegment cudaFreeHost$address() {
        return cudaFreeHost.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaFreeHost(void *ptr)
     * }
     */
    public static int cudaFreeHost(MemorySegment ptr) {
        var mh$ = cudaFreeHost.HANDLE;
        try {
            return (int) mh$.invokeExact(ptr);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaHostRegister {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_LONG,
            cuda_runtime_api_h.C_INT
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaHostRegister");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
     * }
     */
    public static FunctionDescriptor cudaHostRegister$descriptor() {
        return cudaHostRegister.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
     * }
     */
    public static MethodHandle cudaHostRegister$handle() {
        return cudaHostRegister.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
     * }
     */
    public static MemorySegment cudaHostRegister$address() {
        return cudaHostRegister.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
     * }
     */
    public static int cudaHostRegister(MemorySegment ptr, long size, int flags) {
        var mh$ = cudaHostRegister.HANDLE;
        try {
            return (int) mh$.invokeExact(ptr, size, flags);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaHostUnregister {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaHostUnregister");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaHostUnregister(void *ptr)
     * }
     */
    public static FunctionDescriptor cudaHostUnregister$descriptor() {
        return cudaHostUnregister.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaHostUnregister(void *ptr)
     * }
     */
    public static MethodHandle cudaHostUnregister$handle() {
        return cudaHostUnregister.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaHostUnregister(void *ptr)
     * }
     */
    public static MemorySegment cudaHostUnregister$address() {
        return cudaHostUnregister.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaHostUnregister(void *ptr)
     * }
     */
    public static int cudaHostUnregister(MemorySegment ptr) {
        var mh$ = cudaHostUnregister.HANDLE;
        try {
            return (int) mh$.invokeExact(ptr);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaStreamCreateWithPriority {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_INT
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaStreamCreateWithPriority");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
     * }
     */
    public static FunctionDescriptor cudaStreamCreateWithPriority$descriptor() {
        return cudaStreamCreateWithPriority.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
     * }
     */
    public static MethodHandle cudaStreamCreateWithPriority$handle() {
        return cudaStreamCreateWithPriority.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
     * }
     */
    public static MemorySegment cudaStreamCreateWithPriority$address() {
        return cudaStreamCreateWithPriority.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
     * }
     */
    public static int cudaStreamCreateWithPriority(MemorySegment pStream, int flags, int priority) {
        var mh$ = cudaStreamCreateWithPriority.HANDLE;
        try {
            return (int) mh$.invokeExact(pStream, flags, priority);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaStreamDestroy {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaStreamDestroy");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamDestroy(cudaStream_t stream)
     * }
     */
    public static FunctionDescriptor cudaStreamDestroy$descriptor() {
        return cudaStreamDestroy.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamDestroy(cudaStream_t stream)
     * }
     */
    public static MethodHandle cudaStreamDestroy$handle() {
        return cudaStreamDestroy.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamDestroy(cudaStream_t stream)
     * }
     */
    public static MemorySegment cudaStreamDestroy$address() {
        return cudaStreamDestroy.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamDestroy(cudaStream_t stream)
     * }
     */
    public static int cudaStreamDestroy(MemorySegment stream) {
        var mh$ = cudaStreamDestroy.HANDLE;
        try {
            return (int) mh$.invokeExact(stream);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaStreamWaitEvent {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_INT
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaStreamWaitEvent");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
     * }
     */
    public static FunctionDescriptor cudaStreamWaitEvent$descriptor() {
        return cudaStreamWaitEvent.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
     * }
     */
    public static MethodHandle cudaStreamWaitEvent$handle() {
        return cudaStreamWaitEvent.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
     * }
     */
    public static MemorySegment cudaStreamWaitEvent$address() {
        return cudaStreamWaitEvent.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
     * }
     */
    public static int cudaStreamWaitEvent(MemorySegment stream, MemorySegment event, int flags) {
        var mh$ = cudaStreamWaitEvent.HANDLE;
        try {
            return (int) mh$.invokeExact(stream, event, flags);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaStreamSynchronize {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaStreamSynchronize");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamSynchronize(cudaStream_t stream)
     * }
     */
    public static FunctionDescriptor cudaStreamSynchronize$descriptor() {
        return cudaStreamSynchronize.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamSynchronize(cudaStream_t stream)
     * }
     */
    public static MethodHandle cudaStreamSynchronize$handle() {
        return cudaStreamSynchronize.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamSynchronize(cudaStream_t stream)
     * }
     */
    public static MemorySegment cudaStreamSynchronize$address() {
        return cudaStreamSynchronize.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaStreamSynchronize(cudaStream_t stream)
     * }
     */
    public static int cudaStreamSynchronize(MemorySegment stream) {
        var mh$ = cudaStreamSynchronize.HANDLE;
        try {
            return (int) mh$.invokeExact(stream);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaEventCreateWithFlags {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_INT
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaEventCreateWithFlags");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
     * }
     */
    public static FunctionDescriptor cudaEventCreateWithFlags$descriptor() {
        return cudaEventCreateWithFlags.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
     * }
     */
    public static MethodHandle cudaEventCreateWithFlags$handle() {
        return cudaEventCreateWithFlags.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
     * }
     */
    public static MemorySegment cudaEventCreateWithFlags$address() {
        return cudaEventCreateWithFlags.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
     * }
     */
    public static int cudaEventCreateWithFlags(MemorySegment event, int flags) {
        var mh$ = cudaEventCreateWithFlags.HANDLE;
        try {
            return (int) mh$.invokeExact(event, flags);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaEventRecord {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaEventRecord");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
     * }
     */
    public static FunctionDescriptor cudaEventRecord$descriptor() {
        return cudaEventRecord.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
     * }
     */
    public static MethodHandle cudaEventRecord$handle() {
        return cudaEventRecord.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
     * }
     */
    public static MemorySegment cudaEventRecord$address() {
        return cudaEventRecord.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
     * }
     */
    public static int cudaEventRecord(MemorySegment event, MemorySegment stream) {
        var mh$ = cudaEventRecord.HANDLE;
        try {
            return (int) mh$.invokeExact(event, stream);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaEventQuery {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaEventQuery");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventQuery(cudaEvent_t event)
     * }
     */
    public static FunctionDescriptor cudaEventQuery$descriptor() {
        return cudaEventQuery.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventQuery(cudaEvent_t event)
     * }
     */
    public static MethodHandle cudaEventQuery$handle() {
        return cudaEventQuery.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventQuery(cudaEvent_t event)
     * }
     */
    public static MemorySegment cudaEventQuery$address() {
        return cudaEventQuery.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaEventQuery(cudaEvent_t event)
     * }
     */
    public static int cudaEventQuery(MemorySegment event) {
        var mh$ = cudaEventQuery.HANDLE;
        try {
            return (int) mh$.invokeExact(event);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaEventSynchronize {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaEventSynchronize");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventSynchronize(cudaEvent_t event)
     * }
     */
    public static FunctionDescriptor cudaEventSynchronize$descriptor() {
        return cudaEventSynchronize.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventSynchronize(cudaEvent_t event)
     * }
     */
    public static MethodHandle cudaEventSynchronize$handle() {
        return cudaEventSynchronize.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventSynchronize(cudaEvent_t event)
     * }
     */
    public static MemorySegment cudaEventSynchronize$address() {
        return cudaEventSynchronize.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaEventSynchronize(cudaEvent_t event)
     * }
     */
    public static int cudaEventSynchronize(MemorySegment event) {
        var mh$ = cudaEventSynchronize.HANDLE;
        try {
            return (int) mh$.invokeExact(event);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaEventElapsedTime {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaEventElapsedTime");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
     * }
     */
    public static FunctionDescriptor cudaEventElapsedTime$descriptor() {
        return cudaEventElapsedTime.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
     * }
     */
    public static MethodHandle cudaEventElapsedTime$handle() {
        return cudaEventElapsedTime.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
     * }
     */
    public static MemorySegment cudaEventElapsedTime$address() {
        return cudaEventElapsedTime.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
     * }
     */
    public static int cudaEventElapsedTime(MemorySegment ms, MemorySegment start, MemorySegment end) {
        var mh$ = cudaEventElapsedTime.HANDLE;
        try {
            return (int) mh$.invokeExact(ms, start, end);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaEventDestroy {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaEventDestroy");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventDestroy(cudaEvent_t event)
     * }
     */
    public static FunctionDescriptor cudaEventDestroy$descriptor() {
        return cudaEventDestroy.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventDestroy(cudaEvent_t event)
     * }
     */
    public static MethodHandle cudaEventDestroy$handle() {
        return cudaEventDestroy.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaEventDestroy(cudaEvent_t event)
     * }
     */
    public static MemorySegment cudaEventDestroy$address() {
        return cudaEventDestroy.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaEventDestroy(cudaEvent_t event)
     * }
     */
    public static int cudaEventDestroy(MemorySegment event) {
        var mh$ = cudaEventDestroy.HANDLE;
        try {
            return (int) mh$.invokeExact(event);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaMemcpyAsync {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_LONG,
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaMemcpyAsync");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
     * }
     */
    public static FunctionDescriptor cudaMemcpyAsync$descriptor() {
        return cudaMemcpyAsync.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
     * }
     */
    public static MethodHandle cudaMemcpyAsync$handle() {
        return cudaMemcpyAsync.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
     * }
     */
    public static MemorySegment cudaMemcpyAsync$address() {
        return cudaMemcpyAsync.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
     * }
     */
    public static int cudaMemcpyAsync(MemorySegment dst, MemorySegment src, long count, int kind, MemorySegment stream) {
        var mh$ = cudaMemcpyAsync.HANDLE;
        try {
            return (int) mh$.invokeExact(dst, src, count, kind, stream);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaMemcpy2DAsync {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_LONG,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_LONG,
            cuda_runtime_api_h.C_LONG,
            cuda_runtime_api_h.C_LONG,
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaMemcpy2DAsync");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
     * }
     */
    public static FunctionDescriptor cudaMemcpy2DAsync$descriptor() {
        return cudaMemcpy2DAsync.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
     * }
     */
    public static MethodHandle cudaMemcpy2DAsync$handle() {
        return cudaMemcpy2DAsync.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
     * }
     */
    public static MemorySegment cudaMemcpy2DAsync$address() {
        return cudaMemcpy2DAsync.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
     * }
     */
    public static int cudaMemcpy2DAsync(MemorySegment dst, long dpitch, MemorySegment src, long spitch, long width, long height, int kind, MemorySegment stream) {
        var mh$ = cudaMemcpy2DAsync.HANDLE;
        try {
            return (int) mh$.invokeExact(dst, dpitch, src, spitch, width, height, kind, stream);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaMemcpyBatchAsync {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_LONG,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_LONG,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaMemcpyBatchAsync");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, cudaStream_t stream)
     * }
     */
    public static FunctionDescriptor cudaMemcpyBatchAsync$descriptor() {
        return cudaMemcpyBatchAsync.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, cudaStream_t stream)
     * }
     */
    public static MethodHandle cudaMemcpyBatchAsync$handle() {
        return cudaMemcpyBatchAsync.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, cudaStream_t stream)
     * }
     */
    public static MemorySegment cudaMemcpyBatchAsync$address() {
        return cudaMemcpyBatchAsync.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, cudaStream_t stream)
     * }
     */
    public static int cudaMemcpyBatchAsync(MemorySegment dsts, MemorySegment srcs, MemorySegment sizes, long count, MemorySegment attrs, MemorySegment attrsIdxs, long numAttrs, MemorySegment stream) {
        var mh$ = cudaMemcpyBatchAsync.HANDLE;
        try {
            return (int) mh$.invokeExact(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaLaunchHostFunc {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaLaunchHostFunc");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
     * }
     */
    public static FunctionDescriptor cudaLaunchHostFunc$descriptor() {
        return cudaLaunchHostFunc.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
     * }
     */
    public static MethodHandle cudaLaunchHostFunc$handle() {
        return cudaLaunchHostFunc.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
     * }
     */
    public static MemorySegment cudaLaunchHostFunc$address() {
        return cudaLaunchHostFunc.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
     * }
     */
    public static int cudaLaunchHostFunc(MemorySegment stream, MemorySegment fn, MemorySegment userData) {
        var mh$ = cudaLaunchHostFunc.HANDLE;
        try {
            return (int) mh$.invokeExact(stream, fn, userData);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaMemcpyBatchAsync_v12_8 {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_LONG,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_LONG,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaMemcpyBatchAsync");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, cudaStream_t stream)
     * }
     * Hand-added: the CUDA 12.8/12.9 form of the same symbol (extra {@code failIdx}); call it only when {@link #cudaRuntimeGetVersion} reports 12080..12999.
     */
    public static FunctionDescriptor cudaMemcpyBatchAsync_v12_8$descriptor() {
        return cudaMemcpyBatchAsync_v12_8.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, cudaStream_t stream)
     * }
     * Hand-added: the CUDA 12.8/12.9 form of the same symbol (extra {@code failIdx}); call it only when {@link #cudaRuntimeGetVersion} reports 12080..12999.
     */
    public static MethodHandle cudaMemcpyBatchAsync_v12_8$handle() {
        return cudaMemcpyBatchAsync_v12_8.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, cudaStream_t stream)
     * }
     * Hand-added: the CUDA 12.8/12.9 form of the same symbol (extra {@code failIdx}); call it only when {@link #cudaRuntimeGetVersion} reports 12080..12999.
     */
    public static MemorySegment cudaMemcpyBatchAsync_v12_8$address() {
        return cudaMemcpyBatchAsync_v12_8.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, cudaStream_t stream)
     * }
     * Hand-added: the CUDA 12.8/12.9 form of the same symbol (extra {@code failIdx}); call it only when {@link #cudaRuntimeGetVersion} reports 12080..12999.
     */
    public static int cudaMemcpyBatchAsync_v12_8(MemorySegment dsts, MemorySegment srcs, MemorySegment sizes, long count, MemorySegment attrs, MemorySegment attrsIdxs, long numAttrs, MemorySegment failIdx, MemorySegment stream) {
        var mh$ = cudaMemcpyBatchAsync_v12_8.HANDLE;
        try {
            return (int) mh$.invokeExact(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, stream);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaLibraryLoadData {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_INT
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaLibraryLoadData");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code, enum cudaJitOption *jitOptions, void **jitOptionsValues, unsigned int numJitOptions, enum cudaLibraryOption *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions)
     * }
     */
    public static FunctionDescriptor cudaLibraryLoadData$descriptor() {
        return cudaLibraryLoadData.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code, enum cudaJitOption *jitOptions, void **jitOptionsValues, unsigned int numJitOptions, enum cudaLibraryOption *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions)
     * }
     */
    public static MethodHandle cudaLibraryLoadData$handle() {
        return cudaLibraryLoadData.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code, enum cudaJitOption *jitOptions, void **jitOptionsValues, unsigned int numJitOptions, enum cudaLibraryOption *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions)
     * }
     */
    public static MemorySegment cudaLibraryLoadData$address() {
        return cudaLibraryLoadData.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code, enum cudaJitOption *jitOptions, void **jitOptionsValues, unsigned int numJitOptions, enum cudaLibraryOption *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions)
     * }
     */
    public static int cudaLibraryLoadData(MemorySegment library, MemorySegment code, MemorySegment jitOptions, MemorySegment jitOptionsValues, int numJitOptions, MemorySegment libraryOptions, MemorySegment libraryOptionValues, int numLibraryOptions) {
        var mh$ = cudaLibraryLoadData.HANDLE;
        try {
            return (int) mh$.invokeExact(library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions, libraryOptionValues, numLibraryOptions);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaLibraryUnload {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaLibraryUnload");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLibraryUnload(cudaLibrary_t library)
     * }
     */
    public static FunctionDescriptor cudaLibraryUnload$descriptor() {
        return cudaLibraryUnload.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLibraryUnload(cudaLibrary_t library)
     * }
     */
    public static MethodHandle cudaLibraryUnload$handle() {
        return cudaLibraryUnload.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLibraryUnload(cudaLibrary_t library)
     * }
     */
    public static MemorySegment cudaLibraryUnload$address() {
        return cudaLibraryUnload.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaLibraryUnload(cudaLibrary_t library)
     * }
     */
    public static int cudaLibraryUnload(MemorySegment library) {
        var mh$ = cudaLibraryUnload.HANDLE;
        try {
            return (int) mh$.invokeExact(library);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaLibraryGetKernel {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaLibraryGetKernel");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLibraryGetKernel(cudaKernel_t *pKernel, cudaLibrary_t library, const char *name)
     * }
     */
    public static FunctionDescriptor cudaLibraryGetKernel$descriptor() {
        return cudaLibraryGetKernel.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLibraryGetKernel(cudaKernel_t *pKernel, cudaLibrary_t library, const char *name)
     * }
     */
    public static MethodHandle cudaLibraryGetKernel$handle() {
        return cudaLibraryGetKernel.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLibraryGetKernel(cudaKernel_t *pKernel, cudaLibrary_t library, const char *name)
     * }
     */
    public static MemorySegment cudaLibraryGetKernel$address() {
        return cudaLibraryGetKernel.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaLibraryGetKernel(cudaKernel_t *pKernel, cudaLibrary_t library, const char *name)
     * }
     */
    public static int cudaLibraryGetKernel(MemorySegment pKernel, MemorySegment library, MemorySegment name) {
        var mh$ = cudaLibraryGetKernel.HANDLE;
        try {
            return (int) mh$.invokeExact(pKernel, library, name);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }

    private static class cudaLaunchKernel {
        public static final FunctionDescriptor DESC = FunctionDescriptor.of(
            cuda_runtime_api_h.C_INT,
            cuda_runtime_api_h.C_POINTER,
            dim3.layout(),
            dim3.layout(),
            cuda_runtime_api_h.C_POINTER,
            cuda_runtime_api_h.C_LONG,
            cuda_runtime_api_h.C_POINTER
        );

        public static final MemorySegment ADDR = cuda_runtime_api_h.findOrThrow("cudaLaunchKernel");

        public static final MethodHandle HANDLE = Linker.nativeLinker().downcallHandle(ADDR, DESC);
    }

    /**
     * Function descriptor for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
     * }
     */
    public static FunctionDescriptor cudaLaunchKernel$descriptor() {
        return cudaLaunchKernel.DESC;
    }

    /**
     * Downcall method handle for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
     * }
     */
    public static MethodHandle cudaLaunchKernel$handle() {
        return cudaLaunchKernel.HANDLE;
    }

    /**
     * Address for:
     * {@snippet lang=c :
     * extern cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
     * }
     */
    public static MemorySegment cudaLaunchKernel$address() {
        return cudaLaunchKernel.ADDR;
    }

    /**
     * {@snippet lang=c :
     * extern cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
     * }
     */
    public static int cudaLaunchKernel(MemorySegment func, MemorySegment gridDim, MemorySegment blockDim, MemorySegment args, long sharedMem, MemorySegment stream) {
        var mh$ = cudaLaunchKernel.HANDLE;
        try {
            return (int) mh$.invokeExact(func, gridDim, blockDim, args, sharedMem, stream);
        } catch (Error | RuntimeException ex) {
            throw ex;
        } catch (Throwable ex$) {
            throw new AssertionError("should not reach here", ex$);
        }
    }
}
