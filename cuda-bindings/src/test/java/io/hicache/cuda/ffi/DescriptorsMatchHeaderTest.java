package io.hicache.cuda.ffi;

import io.hicache.cuda.ffi.CudaHeader.Kind;
import io.hicache.cuda.ffi.CudaHeader.Prototype;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Holds every {@code fn$descriptor()} of {@link cuda_runtime_api_h} against the prototype in the
 * installed {@code cuda_runtime_api.h}: parameter count, the kind of each parameter (pointer, 32-bit,
 * 64-bit) and the return kind. Skipped only where no header is installed.
 */
class DescriptorsMatchHeaderTest {

    /** The CUDA 12.8/12.9 prototype (from that toolkit's cuda_runtime_api.h), for the hand-added variant. */
    static final String BATCH_12_8 = "extern __host__ cudaError_t CUDARTAPI cudaMemcpyBatchAsync(void **dsts, "
            + "void **srcs, size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, "
            + "size_t numAttrs, size_t *failIdx, cudaStream_t stream);";
    static final String V12_8_SUFFIX = "_v12_8";

    static Path includeDir;
    static CudaHeader header;

    @BeforeAll
    static void readHeader() {
        includeDir = CudaHeader.locateIncludeDir().orElse(null);
        assumeTrue(includeDir != null,
                "cuda_runtime_api.h not found under $CUDA_HOME/include or /usr/local/cuda/include: no header to check against");
        header = CudaHeader.read(includeDir);
    }

    /** Every public {@code fn$descriptor()} of the header class, by function name. */
    static List<Method> descriptorMethods() {
        List<Method> out = new ArrayList<>();
        for (Method m : cuda_runtime_api_h.class.getMethods()) {
            if (Modifier.isStatic(m.getModifiers()) && m.getName().endsWith("$descriptor")
                    && m.getReturnType() == FunctionDescriptor.class) {
                out.add(m);
            }
        }
        out.sort((a, b) -> a.getName().compareTo(b.getName()));
        return out;
    }

    @Test
    void binds_every_function_of_the_brief() {
        List<String> names = descriptorMethods().stream()
                .map(m -> m.getName().substring(0, m.getName().length() - "$descriptor".length())).toList();
        assertThat(names).contains("cudaRuntimeGetVersion", "cudaDriverGetVersion", "cudaGetDeviceCount",
                "cudaSetDevice", "cudaGetErrorName", "cudaGetErrorString", "cudaGetLastError", "cudaMalloc",
                "cudaFree", "cudaHostAlloc", "cudaFreeHost", "cudaHostRegister", "cudaHostUnregister",
                "cudaStreamCreateWithPriority", "cudaStreamDestroy", "cudaStreamWaitEvent", "cudaStreamSynchronize",
                "cudaEventCreateWithFlags", "cudaEventRecord", "cudaEventQuery", "cudaEventSynchronize",
                "cudaEventElapsedTime", "cudaEventDestroy", "cudaMemcpyAsync", "cudaMemcpy2DAsync",
                "cudaMemcpyBatchAsync", "cudaMemcpyBatchAsync_v12_8", "cudaLaunchHostFunc", "cudaLibraryLoadData",
                "cudaLibraryUnload", "cudaLibraryGetKernel", "cudaLaunchKernel");
    }

    @TestFactory
    Stream<DynamicTest> every_descriptor_matches_its_prototype() {
        assumeTrue(CudartLibrary.isAvailable(), "libcudart does not load here: fn$descriptor() lives in the same"
                + " lazily initialised holder as the symbol address, as jextract emits, so it needs the library");
        return descriptorMethods().stream().map(m -> DynamicTest.dynamicTest(m.getName(), () -> {
            String fn = m.getName().substring(0, m.getName().length() - "$descriptor".length());
            Prototype proto;
            if (fn.endsWith(V12_8_SUFFIX)) {
                String symbol = fn.substring(0, fn.length() - V12_8_SUFFIX.length());
                proto = header.cudartVersion() >= 12080 && header.cudartVersion() < 13000
                        ? header.prototype(symbol).orElseThrow()
                        : CudaHeader.ofText(BATCH_12_8, header).prototype(symbol).orElseThrow();
            } else {
                proto = header.prototype(fn).orElse(null);
                if (proto == null && fn.equals("cudaMemcpyBatchAsync") && header.cudartVersion() < 12080) {
                    return; // optional symbol, absent before CUDA 12.8
                }
                assertThat(proto).as("prototype of %s in %s", fn, includeDir).isNotNull();
                if (fn.equals("cudaMemcpyBatchAsync") && header.cudartVersion() < 13000) {
                    return; // the 13.0 form is checked against the CUDA 13 header only; see the _v12_8 variant
                }
            }
            FunctionDescriptor d = (FunctionDescriptor) m.invoke(null);
            assertThat(CudaHeader.parameterKindsOf(d)).as("parameters of %s vs %s", fn, proto.text())
                    .isEqualTo(proto.parameterKinds());
            assertThat(CudaHeader.returnKindOf(d)).as("return of %s vs %s", fn, proto.text())
                    .isEqualTo(proto.returnKind());
        }));
    }

    @Test
    void parser_classifies_macros_typedefs_and_qualifiers() {
        Prototype wait = header.prototype("cudaStreamWaitEvent").orElseThrow();
        assertThat(wait.parameterKinds()).containsExactly(Kind.POINTER, Kind.POINTER, Kind.INT32); // __dv(0) flags
        Prototype host = header.prototype("cudaLaunchHostFunc").orElseThrow();
        assertThat(host.parameterKinds()).containsExactly(Kind.POINTER, Kind.POINTER, Kind.POINTER); // cudaHostFn_t
        Prototype name = header.prototype("cudaGetErrorName").orElseThrow();
        assertThat(name.returnKind()).isEqualTo(Kind.POINTER); // const char*
        assertThat(header.prototype("cudaGetLastError").orElseThrow().parameterKinds()).isEmpty(); // (void)
        assertThat(CudaHeader.ofText(BATCH_12_8, header).prototype("cudaMemcpyBatchAsync").orElseThrow()
                .parameterKinds()).hasSize(9);
    }

    @Test
    void memcpy_attributes_layout_matches_the_struct() throws IOException {
        Path driverTypes = includeDir.resolve("driver_types.h");
        assumeTrue(Files.isRegularFile(driverTypes), "driver_types.h not found next to cuda_runtime_api.h");
        List<Map.Entry<String, String>> fields =
                header.structFields("cudaMemcpyAttributes", Files.readString(driverTypes));
        assumeTrue(!fields.isEmpty(), "struct cudaMemcpyAttributes not declared (CUDA before 12.8)");
        GroupLayout layout = cudaMemcpyAttributes.layout();
        assertThat(layout.memberLayouts().stream().map(l -> l.name().orElseThrow()).toList())
                .containsExactlyElementsOf(fields.stream().map(Map.Entry::getKey).toList());
        assertThat(fields.stream().map(Map.Entry::getValue).toList()).containsExactly(
                "enum cudaMemcpySrcAccessOrder", "struct cudaMemLocation", "struct cudaMemLocation", "unsigned int");
        assertThat(layout.memberLayouts().stream().map(MemoryLayout::byteSize).toList()).containsExactly(4L, 8L, 8L, 4L);
        assertThat(cudaMemcpyAttributes.sizeof()).isEqualTo(24L);
        List<Map.Entry<String, String>> location =
                header.structFields("cudaMemLocation", Files.readString(driverTypes));
        assertThat(location.stream().map(Map.Entry::getKey).toList()).containsExactly("type", "id");
    }

    @Test
    void dim3_layout_matches_the_struct() throws IOException {
        Path vectorTypes = includeDir.resolve("vector_types.h");
        assumeTrue(Files.isRegularFile(vectorTypes), "vector_types.h not found next to cuda_runtime_api.h");
        // The struct's data members are one declaration ("unsigned int x, y, z;"); C++ constructors follow.
        String text = Files.readString(vectorTypes).replaceAll("(?s)/\\*.*?\\*/", " ");
        java.util.regex.Matcher m = java.util.regex.Pattern
                .compile("struct\\s+__device_builtin__\\s+dim3\\s*\\{\\s*([^;]*);").matcher(text);
        assertThat(m.find()).as("struct dim3 in %s", vectorTypes).isTrue();
        assertThat(m.group(1).replaceAll("\\s+", " ").strip()).isEqualTo("unsigned int x, y, z");
        assertThat(dim3.layout().memberLayouts().stream().map(l -> l.name().orElseThrow()).toList())
                .containsExactly("x", "y", "z");
        assertThat(dim3.sizeof()).isEqualTo(12L);
        Prototype launch = header.prototype("cudaLaunchKernel").orElseThrow();
        assertThat(launch.parameterKinds()).containsExactly(Kind.POINTER, Kind.STRUCT, Kind.STRUCT, Kind.POINTER,
                Kind.INT64, Kind.POINTER);
    }
}
