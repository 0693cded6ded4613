package io.hicache.cuda.ffi;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A symbol the loaded library lacks fails only when its function is touched. Runs {@link Probe} in a
 * child JVM whose {@code HICACHE_CUDART} names a real library without CUDA symbols (the JDK's own
 * {@code libjava}), since the process-wide library is chosen once per JVM.
 */
class MissingSymbolTest {

    @Test
    void missing_symbols_fail_only_when_called() throws IOException, InterruptedException {
        Path javaHome = Path.of(System.getProperty("java.home"));
        Path libjava = javaHome.resolve("lib").resolve(System.mapLibraryName("java"));
        assumeTrue(Files.isRegularFile(libjava), "no " + libjava + " to stand in for a library without CUDA symbols");
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        Process p = new ProcessBuilder(List.of(javaHome.resolve("bin").resolve("java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", classpath,
                "-D" + CudartLibrary.PATH_ENV + "=" + libjava, Probe.class.getName()))
                .redirectErrorStream(true).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("probe finished").isTrue();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("loaded-from=" + libjava)
                .contains("hasSymbol(cudaMemcpyBatchAsync)=false")
                .contains("C_INT=4")
                .contains("cudaGetLastError: UnsatisfiedLinkError: unresolved symbol: cudaGetLastError")
                .contains("cudaMemcpyBatchAsync$address: UnsatisfiedLinkError: unresolved symbol: cudaMemcpyBatchAsync");
    }

    /** Child-JVM entry point: touches the header class, then individual functions. */
    public static final class Probe {
        private Probe() {
        }

        public static void main(String[] args) {
            System.out.println("loaded-from=" + CudartLibrary.loadedFrom());
            System.out.println("C_INT=" + cuda_runtime_api_h.C_INT.byteSize()); // the class itself initialises
            System.out.println("hasSymbol(cudaMemcpyBatchAsync)=" + cuda_runtime_api_h.hasSymbol("cudaMemcpyBatchAsync"));
            try {
                cuda_runtime_api_h.cudaGetLastError();
                System.out.println("cudaGetLastError: returned");
            } catch (UnsatisfiedLinkError e) {
                System.out.println("cudaGetLastError: UnsatisfiedLinkError: " + e.getMessage());
            }
            try {
                cuda_runtime_api_h.cudaMemcpyBatchAsync$address();
                System.out.println("cudaMemcpyBatchAsync$address: returned");
            } catch (UnsatisfiedLinkError e) {
                System.out.println("cudaMemcpyBatchAsync$address: UnsatisfiedLinkError: " + e.getMessage());
            }
        }
    }
}
