/**
 * CUDA runtime bindings: the {@link io.hicache.cuda.CudaRuntime} interface, the native implementation over
 * libcudart (FFM downcalls) and the simulated device used by tests and the simulator.
 *
 * <p>Exported: {@code io.hicache.cuda}. Not exported: {@code io.hicache.cuda.ffi} (generated FFM layouts and
 * downcall handles).
 */
module io.hicache.cuda {
    requires org.agrona;

    exports io.hicache.cuda;
}
