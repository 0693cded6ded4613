/**
 * CUDA runtime bindings: the {@link io.hicache.cuda.CudaRuntime} interface, the native implementation over
 * libcudart (FFM downcalls) and the simulated device used by tests and the simulator.
 *
 * <p>Exported: {@code io.hicache.cuda}. Not exported: {@code io.hicache.cuda.ffi} (generated FFM layouts and
 * downcall handles).
 */
// Agrona has no module descriptor; its automatic module name is stable (Automatic-Module-Name).
@SuppressWarnings("requires-automatic")
module io.hicache.cuda {
    requires org.agrona;

    exports io.hicache.cuda;
}
