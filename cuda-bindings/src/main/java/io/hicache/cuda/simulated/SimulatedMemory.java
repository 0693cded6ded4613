package io.hicache.cuda.simulated;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

import static io.hicache.cuda.simulated.CallChecks.cudaException;
import static io.hicache.cuda.simulated.CallChecks.hex;

/**
 * The simulated device's memory: device allocations at simulated addresses (above every host address, with
 * an unmapped guard gap between them), pinned host allocations and registered host ranges, each backed by
 * real off-heap memory, and the resolution of copy ranges to the allocations they lie in.
 *
 * <p>Guarded by the runtime's lock. Resolving a copy range allocates nothing (see {@link MemoryTable}).
 */
final class SimulatedMemory {
    /** First simulated device address: above every user-space host address on x86-64 and arm64. */
    static final long DEVICE_BASE_ADDRESS = 1L << 60;
    /** Alignment of device allocations (cudaMalloc guarantees 256 bytes). */
    static final long DEVICE_ALIGNMENT_BYTES = 256;
    /** Unmapped gap between device allocations, so off-by-one pointers do not land in a neighbour. */
    static final long DEVICE_GUARD_BYTES = 1L << 20;
    private static final long HOST_ALIGNMENT_BYTES = 4096;

    private final SimulatedCudaConfig config;
    private final MemoryTable deviceTable = new MemoryTable();
    private final MemoryTable hostTable = new MemoryTable();
    private long nextDevicePtr = DEVICE_BASE_ADDRESS;
    private long liveDeviceBytes;
    private int liveHostAllocations;
    private int liveHostRegistrations;

    SimulatedMemory(SimulatedCudaConfig config) {
        this.config = config;
    }

    long deviceMalloc(long bytes) {
        CallChecks.requirePositiveBytes(bytes, "cudaMalloc");
        if (bytes > config.deviceMemoryBytes() - liveDeviceBytes) {
            throw cudaException(CudaError.MEMORY_ALLOCATION.code(), "cudaMalloc(" + bytes + " bytes; "
                    + liveDeviceBytes + " of " + config.deviceMemoryBytes() + " in use)");
        }
        @SuppressWarnings("MustBeClosedChecker") // owned by the allocation's record, closed when it is freed
        Arena arena = Arena.ofShared();
        MemorySegment segment = arena.allocate(bytes, DEVICE_ALIGNMENT_BYTES);
        if (config.deviceMemoryFill() != 0) {
            segment.fill(config.deviceMemoryFill());
        }
        long ptr = nextDevicePtr;
        long span = (bytes + DEVICE_ALIGNMENT_BYTES - 1) / DEVICE_ALIGNMENT_BYTES * DEVICE_ALIGNMENT_BYTES;
        nextDevicePtr = ptr + span + DEVICE_GUARD_BYTES;
        deviceTable.insert(new MemoryRange(ptr, bytes, segment, arena, MemoryRange.DEVICE));
        liveDeviceBytes += bytes;
        return ptr;
    }

    void deviceFree(long devicePtr) {
        MemoryRange a = deviceTable.startingAt(devicePtr);
        if (a == null) {
            throw new IllegalArgumentException("cudaFree(" + hex(devicePtr)
                    + "): not the start of a live device allocation (double free, or never returned by deviceMalloc)");
        }
        requireNoPendingOps(a, "cudaFree");
        deviceTable.remove(a);
        liveDeviceBytes -= a.bytes;
        a.arena.close();
    }

    long hostAlloc(long bytes) {
        CallChecks.requirePositiveBytes(bytes, "cudaHostAlloc");
        @SuppressWarnings("MustBeClosedChecker") // owned by the allocation's record, closed when it is freed
        Arena arena = Arena.ofShared();
        MemorySegment segment = arena.allocate(bytes, HOST_ALIGNMENT_BYTES);
        long ptr = segment.address();
        if (hostTable.overlaps(ptr, bytes)) {
            arena.close();
            throw new IllegalStateException("cudaHostAlloc: new memory at " + hex(ptr)
                    + " overlaps a registered range; was registered memory freed without hostUnregister?");
        }
        hostTable.insert(new MemoryRange(ptr, bytes, segment, arena, MemoryRange.PINNED_HOST));
        liveHostAllocations++;
        return ptr;
    }

    void hostFree(long hostPtr) {
        MemoryRange a = hostTable.startingAt(hostPtr);
        if (a == null || a.kind != MemoryRange.PINNED_HOST) {
            throw new IllegalArgumentException("cudaFreeHost(" + hex(hostPtr)
                    + "): not the start of a live hostAlloc allocation (double free, or never returned by hostAlloc)");
        }
        requireNoPendingOps(a, "cudaFreeHost");
        hostTable.remove(a);
        liveHostAllocations--;
        a.arena.close();
    }

    @SuppressWarnings("restricted") // reinterpret: the caller vouches for [hostPtr, hostPtr + bytes), as with cudaHostRegister
    void hostRegister(long hostPtr, long bytes) {
        CallChecks.requireRegisterArgs(hostPtr, bytes);
        if (hostPtr >= DEVICE_BASE_ADDRESS || deviceTable.containing(hostPtr, 0) != null) {
            throw new IllegalArgumentException("cudaHostRegister(" + hex(hostPtr) + "): a device pointer");
        }
        if (hostTable.overlaps(hostPtr, bytes)) {
            throw cudaException(CudaError.HOST_MEMORY_ALREADY_REGISTERED.code(),
                    "cudaHostRegister(" + hex(hostPtr) + ", " + bytes + ")");
        }
        MemorySegment segment = MemorySegment.ofAddress(hostPtr).reinterpret(bytes);
        hostTable.insert(new MemoryRange(hostPtr, bytes, segment, null, MemoryRange.REGISTERED_HOST));
        liveHostRegistrations++;
    }

    void hostUnregister(long hostPtr) {
        MemoryRange a = hostTable.startingAt(hostPtr);
        if (a == null || a.kind != MemoryRange.REGISTERED_HOST) {
            throw cudaException(CudaError.HOST_MEMORY_NOT_REGISTERED.code(), "cudaHostUnregister(" + hex(hostPtr) + ")");
        }
        requireNoPendingOps(a, "cudaHostUnregister");
        hostTable.remove(a);
        liveHostRegistrations--;
    }

    MemorySegment hostMemory(long hostPtr, long bytes) {
        MemoryRange a = hostTable.containing(hostPtr, bytes);
        if (a == null) {
            throw new IllegalArgumentException("hostMemory(" + hex(hostPtr) + ", " + bytes
                    + "): range is not inside one hostAlloc allocation or registered range");
        }
        return a.segment.asSlice(hostPtr - a.base, bytes);
    }

    MemorySegment deviceMemory(long devicePtr, long bytes) {
        MemoryRange a = deviceTable.containing(devicePtr, bytes);
        if (a == null) {
            throw new IllegalArgumentException("deviceMemory(" + hex(devicePtr) + ", " + bytes
                    + "): range is not inside one live device allocation");
        }
        return a.segment.asSlice(devicePtr - a.base, bytes);
    }

    int liveDeviceAllocations() {
        return deviceTable.size();
    }

    long liveDeviceBytes() {
        return liveDeviceBytes;
    }

    int liveHostAllocations() {
        return liveHostAllocations;
    }

    int liveHostRegistrations() {
        return liveHostRegistrations;
    }

    /**
     * Resolves copy range {@code i} of {@code op}: both ends inside one allocation each, of the kind the
     * copy kind demands. Sets {@code op.direction} (all ranges of an op must share it). Changes no state.
     */
    void resolve(SimOp op, int i, long dst, long dstPitch, long src, long srcPitch, long width, long height,
                 CopyKind kind, String call) {
        Objects.requireNonNull(kind, "kind");
        if (width < 0) {
            throw new IllegalArgumentException(call + ": bytes must be >= 0, was " + width);
        }
        long dstSpan = CallChecks.span(dstPitch, width, height, call);
        long srcSpan = CallChecks.span(srcPitch, width, height, call);
        MemoryRange dstRange = find(dst, dstSpan);
        if (dstRange == null) {
            throw CallChecks.notInside(call, "destination", dst, dstSpan);
        }
        MemoryRange srcRange = find(src, srcSpan);
        if (srcRange == null) {
            throw CallChecks.notInside(call, "source", src, srcSpan);
        }
        CallChecks.requireKindMatches(kind, dst, dstRange.device(), src, srcRange.device(), call);
        int direction = CallChecks.direction(dstRange.device(), srcRange.device());
        if (i > 0 && op.direction != direction) {
            throw new IllegalArgumentException(call + ": range " + i + " is " + CallChecks.kindOf(direction)
                    + " but range 0 is " + CallChecks.kindOf(op.direction) + "; one batch has one direction");
        }
        op.direction = direction;
        op.dst[i] = dstRange;
        op.dstOff[i] = dst - dstRange.base;
        op.dstPitch[i] = dstPitch;
        op.src[i] = srcRange;
        op.srcOff[i] = src - srcRange.base;
        op.srcPitch[i] = srcPitch;
        op.width[i] = width;
        op.height[i] = height;
        op.segCount = i + 1;
    }

    private MemoryRange find(long ptr, long span) {
        MemoryRange r = deviceTable.containing(ptr, span);
        return r != null ? r : hostTable.containing(ptr, span);
    }

    /** Frees every allocation exactly once (registered ranges belong to their callers) and forgets them all. */
    void closeAll() {
        for (MemoryRange a : deviceTable.snapshot()) {
            a.arena.close();
        }
        for (MemoryRange a : hostTable.snapshot()) {
            if (a.arena != null) {
                a.arena.close();
            }
        }
        deviceTable.clear();
        hostTable.clear();
        liveDeviceBytes = 0;
        liveHostAllocations = 0;
        liveHostRegistrations = 0;
    }

    private static void requireNoPendingOps(MemoryRange a, String call) {
        if (a.pendingOps != 0) {
            throw new IllegalStateException(call + "(" + hex(a.base) + "): " + a.pendingOps
                    + " queued copy range(s) still use this memory; synchronize before freeing it");
        }
    }
}
