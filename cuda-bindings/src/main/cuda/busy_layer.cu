// Forward stand-in for scripts/gpu-check: one launch per layer spins for a given number of clock
// cycles (the layer's compute time) and then writes the layer's KV pages with a pattern that the check
// recomputes on the host to verify committed host bytes.
//
// Compiled to PTX, which is committed beside this file and loaded at run time through
// cudaLibraryLoadData, so the GPU machine needs no compiler. Regenerate with (from the repository root):
//   cuda-bindings/src/main/cuda/regen-ptx
// The PTX must match the committed file byte for byte (PtxRegenerationTest checks it where nvcc exists).

// The 32-bit word at index w of layer `layer`'s KV; BusyLayerKernel.expectedWord computes the same.
__device__ __forceinline__ unsigned int hicache_pattern(unsigned int layer, unsigned long long w) {
    unsigned long long x = (w + 1ULL) * 0x9E3779B97F4A7C15ULL ^ ((unsigned long long) (layer + 1U) * 0xBF58476D1CE4E5B9ULL);
    x ^= x >> 31;
    return (unsigned int) (x ^ (x >> 32));
}

extern "C" __global__ void hicache_busy_layer(unsigned int *kv, unsigned long long words, unsigned int layer,
                                              long long spin_cycles) {
    long long start = clock64();
    while (clock64() - start < spin_cycles) {
    }
    unsigned long long stride = (unsigned long long) gridDim.x * blockDim.x;
    for (unsigned long long w = (unsigned long long) blockIdx.x * blockDim.x + threadIdx.x; w < words; w += stride) {
        kv[w] = hicache_pattern(layer, w);
    }
}
