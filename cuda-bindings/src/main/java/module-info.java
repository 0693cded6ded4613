/**
 * CUDA runtime bindings: the {@link io.hicache.cuda.CudaRuntime} interface and the native implementation over
 * libcudart (FFM downcalls), plus test doubles for code that has no GPU.
 *
 * <p>Exported: {@code io.hicache.cuda} (the API: {@code CudaRuntime}, {@code NativeCudaRuntime}, streams, events,
 * errors) and {@code io.hicache.cuda.simulated} (test doubles: {@code SimulatedCudaRuntime}, a deterministic device
 * on a virtual clock; {@code HostThreadCudaRuntime}, host memory and real stream threads; {@code BusyLayerKernel},
 * a forward stand-in for GPU checks). Not exported: {@code io.hicache.cuda.ffi} (generated FFM layouts and
 * downcall handles).
 */
// Agrona has no module descriptor; its automatic module name is stable (Automatic-Module-Name).
@SuppressWarnings("requires-automatic")
module io.hicache.cuda {
    requires org.agrona;

    exports io.hicache.cuda;
    exports io.hicache.cuda.simulated;
}
