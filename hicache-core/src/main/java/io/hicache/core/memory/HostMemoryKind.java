package io.hicache.core.memory;

/** Where a host KV pool's pinned memory comes from. Immutable; thread-safe. */
public enum HostMemoryKind {
    /** {@code cudaHostAlloc}; released with {@code cudaFreeHost}. */
    HOST_ALLOC,
    /**
     * A page-aligned region the library allocates itself (an FFM {@link java.lang.foreign.Arena}, backed by
     * anonymous memory), pinned with {@code cudaHostRegister}; released with {@code cudaHostUnregister} then
     * freed.
     */
    REGISTERED
}
