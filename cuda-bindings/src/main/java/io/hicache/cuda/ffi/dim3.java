// Generated-style struct in the layout jextract emits; see cuda-bindings/jextract/README.md.

package io.hicache.cuda.ffi;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout.OfInt;

/**
 * {@snippet lang=c :
 * struct dim3 {
 *     unsigned int x;
 *     unsigned int y;
 *     unsigned int z;
 * }
 * }
 * Stateless accessors over a caller-owned segment; thread-safety is the segment's. Passed by value to
 * {@code cudaLaunchKernel}.
 */
public class dim3 {

    dim3() {
        // Should not be called directly
    }

    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            cuda_runtime_api_h.C_INT.withName("x"),
            cuda_runtime_api_h.C_INT.withName("y"),
            cuda_runtime_api_h.C_INT.withName("z")
    ).withName("dim3");

    /** The layout of this struct. */
    public static final GroupLayout layout() {
        return $LAYOUT;
    }

    private static final OfInt x$LAYOUT = (OfInt) $LAYOUT.select(MemoryLayout.PathElement.groupElement("x"));
    private static final long x$OFFSET = $LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement("x"));
    private static final OfInt y$LAYOUT = (OfInt) $LAYOUT.select(MemoryLayout.PathElement.groupElement("y"));
    private static final long y$OFFSET = $LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement("y"));
    private static final OfInt z$LAYOUT = (OfInt) $LAYOUT.select(MemoryLayout.PathElement.groupElement("z"));
    private static final long z$OFFSET = $LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement("z"));

    /** Getter for {@code x}. */
    public static int x(MemorySegment struct) {
        return struct.get(x$LAYOUT, x$OFFSET);
    }

    /** Setter for {@code x}. */
    public static void x(MemorySegment struct, int fieldValue) {
        struct.set(x$LAYOUT, x$OFFSET, fieldValue);
    }

    /** Getter for {@code y}. */
    public static int y(MemorySegment struct) {
        return struct.get(y$LAYOUT, y$OFFSET);
    }

    /** Setter for {@code y}. */
    public static void y(MemorySegment struct, int fieldValue) {
        struct.set(y$LAYOUT, y$OFFSET, fieldValue);
    }

    /** Getter for {@code z}. */
    public static int z(MemorySegment struct) {
        return struct.get(z$LAYOUT, z$OFFSET);
    }

    /** Setter for {@code z}. */
    public static void z(MemorySegment struct, int fieldValue) {
        struct.set(z$LAYOUT, z$OFFSET, fieldValue);
    }

    /** Allocates a new segment with this struct's layout. */
    public static MemorySegment allocate(SegmentAllocator allocator) {
        return allocator.allocate(layout());
    }

    /** The size of this struct in bytes. */
    public static long sizeof() {
        return layout().byteSize();
    }
}
