package io.hicache.cuda.simulated;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.NativeCudaRuntime;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The committed PTX of the forward stand-in: it is what its source compiles to, it declares the entry
 * {@link BusyLayerKernel} launches with the parameters it passes, and loading it without a driver fails
 * with the documented code. Launching it needs a GPU ({@code BusyLayerKernelGpuTest}).
 */
class BusyLayerKernelTest {

    private static final Path SOURCE_DIR = Path.of("src/main/cuda");

    @Test
    void ptxDeclaresTheEntryWithFourParameters() {
        String ptx = new String(BusyLayerKernel.ptx(), StandardCharsets.US_ASCII);
        assertThat(ptx).contains(".visible .entry " + BusyLayerKernel.ENTRY + "(");
        int open = ptx.indexOf(BusyLayerKernel.ENTRY + "(");
        String params = ptx.substring(open, ptx.indexOf(')', open));
        assertThat(params.split("\\.param")).hasSize(5); // u64 kv, u64 words, u32 layer, u64 spin
        assertThat(params).containsSubsequence(".u64", ".u64", ".u32", ".u64");
    }

    @Test
    void committedPtxIsWhatTheSourceCompilesTo(@TempDir Path tmp) throws IOException, InterruptedException {
        assumeTrue(nvcc() != null, "nvcc not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin: cannot regenerate");
        Path out = tmp.resolve("busy_layer.ptx");
        Process p = new ProcessBuilder(SOURCE_DIR.resolve("regen-ptx").toString(), out.toString())
                .redirectErrorStream(true).start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("regen-ptx finished").isTrue();
        assertThat(p.exitValue()).as("regen-ptx exit; output: %s", log).isZero();
        assertThat(Files.readAllBytes(out)).as("regenerated PTX vs the committed resource")
                .isEqualTo(BusyLayerKernel.ptx());
    }

    @Test
    void theHostMirrorOfThePatternSpreadsValues() {
        List<Integer> words = new ArrayList<>();
        for (int layer = 0; layer < 4; layer++) {
            for (long w = 0; w < 64; w++) {
                words.add(BusyLayerKernel.expectedWord(layer, w));
            }
        }
        assertThat(words).doesNotHaveDuplicates();
    }

    @Test
    void loadingWithoutADriverFailsWithInsufficientDriver() {
        assumeTrue(NativeCudaRuntime.isLibraryAvailable(), "libcudart not found");
        try (NativeCudaRuntime cuda = NativeCudaRuntime.load()) {
            assumeTrue(cuda.driverVersion() == 0, "a CUDA driver is installed; BusyLayerKernelGpuTest covers it");
            CudaException e = catchThrowableOfType(CudaException.class, () -> BusyLayerKernel.load(cuda));
            assertThat(e).isNotNull();
            assertThat(e.error()).isEqualTo(CudaError.INSUFFICIENT_DRIVER);
            assertThat(e.getMessage()).contains("cudaLibraryLoadData");
        }
    }

    static String nvcc() {
        List<Path> candidates = new ArrayList<>();
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!dir.isEmpty()) {
                candidates.add(Path.of(dir, "nvcc"));
            }
        }
        String cudaHome = System.getenv("CUDA_HOME");
        if (cudaHome != null && !cudaHome.isBlank()) {
            candidates.add(Path.of(cudaHome, "bin", "nvcc"));
        }
        candidates.add(Path.of("/usr/local/cuda/bin/nvcc"));
        return candidates.stream().filter(Files::isExecutable).map(Path::toString).findFirst().orElse(null);
    }
}
