package io.hicache.testkit;

import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.cuda.CudaRuntime;

/**
 * A packed MHA KV area on a (usually simulated) device: {@code layers} layers of {@code pages} pages of
 * {@code pageSize} tokens, {@code bytesPerToken} bytes per token per buffer, allocated with the runtime's
 * {@code deviceMalloc}; the layout tests hand to {@code HiCache.builder().targetLayout(..)} or {@code draftLayout(..)}.
 *
 * <p>Owned by the test thread that allocated it; {@link #free()} once, before the runtime closes.
 *
 * @param runtime the device the area lives on
 * @param base its device address
 * @param layout the packed layout over it
 */
public record SimKv(CudaRuntime runtime, long base, DeviceKvLayout layout) {
    /**
     * Allocates a packed MHA layout on {@code runtime}.
     *
     * @throws IllegalArgumentException when the layout's builder refuses a size (its message names it)
     */
    public static SimKv allocate(CudaRuntime runtime, int layers, int pageSize, long bytesPerToken, int pages) {
        DeviceKvLayout.Builder b = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(layers)
            .pageSizeTokens(pageSize).bytesPerTokenPerBuffer(bytesPerToken).pageCount(pages);
        long base = runtime.deviceMalloc(b.packedBytes());
        return new SimKv(runtime, base, b.packedFrom(base).build());
    }

    /** Frees the area on its runtime. */
    public void free() {
        runtime.deviceFree(base);
    }
}
