package io.hicache.cuda.ffi;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The search order and the loader's failure message; needs no CUDA install. */
class CudartLibraryTest {

    @Test
    void without_an_explicit_path_tries_sonames_then_cuda_home_then_usr_local() {
        List<String> candidates = CudartLibrary.candidates(null, "/opt/cuda-x");
        assertThat(candidates).startsWith("libcudart.so.13", "libcudart.so.12", "libcudart.so",
                "/opt/cuda-x/lib64/libcudart.so.13", "/opt/cuda-x/lib64/libcudart.so.12", "/opt/cuda-x/lib64/libcudart.so");
        assertThat(candidates).endsWith("/usr/local/cuda/lib64/libcudart.so.13",
                "/usr/local/cuda/lib64/libcudart.so.12", "/usr/local/cuda/lib64/libcudart.so");
        assertThat(candidates).doesNotHaveDuplicates();
    }

    @Test
    void an_explicit_path_is_the_only_candidate() {
        assertThat(CudartLibrary.candidates(" /x/libcudart.so.13 ", "/opt/cuda")).containsExactly("/x/libcudart.so.13");
    }

    @Test
    void the_system_property_selects_the_file_and_failure_names_it() {
        String missing = Path.of(System.getProperty("java.io.tmpdir"), "no-such-dir", "libcudart.so.99").toString();
        String before = System.getProperty(CudartLibrary.PATH_ENV);
        System.setProperty(CudartLibrary.PATH_ENV, missing);
        try {
            List<String> candidates = CudartLibrary.candidates();
            assertThat(candidates).containsExactly(missing);
            assertThatThrownBy(() -> CudartLibrary.open(candidates, Arena.ofAuto()))
                    .isInstanceOf(UnsatisfiedLinkError.class)
                    .hasMessageContaining("Tried 1 candidate(s)")
                    .hasMessageContaining(missing)
                    .hasMessageContaining(CudartLibrary.PATH_ENV);
        } finally {
            if (before == null) {
                System.clearProperty(CudartLibrary.PATH_ENV);
            } else {
                System.setProperty(CudartLibrary.PATH_ENV, before);
            }
        }
    }

    @Test
    void failure_lists_every_candidate_tried() {
        List<String> candidates = List.of("libno-such-cudart.so.13", "/no/such/dir/libcudart.so");
        assertThatThrownBy(() -> CudartLibrary.open(candidates, Arena.ofAuto()))
                .isInstanceOf(UnsatisfiedLinkError.class)
                .hasMessageContaining("Tried 2 candidate(s)")
                .hasMessageContaining("libno-such-cudart.so.13")
                .hasMessageContaining("/no/such/dir/libcudart.so");
    }
}
