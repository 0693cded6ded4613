/**
 * Test doubles of {@link io.hicache.cuda.CudaRuntime} for code that has no GPU, and a GPU forward stand-in.
 *
 * <ul>
 *   <li>{@link io.hicache.cuda.simulated.SimulatedCudaRuntime}: a deterministic device on a virtual clock
 *       ({@link io.hicache.cuda.simulated.SimulatedCudaConfig} sets its timing and faults); the tests, the DST and
 *       the simulator drive it.</li>
 *   <li>{@link io.hicache.cuda.simulated.HostThreadCudaRuntime}: host memory as the device and a thread per
 *       stream, for CPU engines and real-time tests.</li>
 *   <li>{@link io.hicache.cuda.simulated.BusyLayerKernel}: a kernel that spins and writes checkable KV words on a
 *       real GPU, for the GPU checks.</li>
 * </ul>
 *
 * <p>An engine links against {@code io.hicache.cuda} ({@code NativeCudaRuntime}); nothing here is needed in
 * production.
 */
package io.hicache.cuda.simulated;
