// Generated-style struct in the layout jextract emits; see cuda-bindings/jextract/README.md.

package io.hicache.cuda.ffi;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout.OfInt;

/**
 * {@snippet lang=c :
 * struct cudaMemcpyAttributes {
 *     enum cudaMemcpySrcAccessOrder srcAccessOrder;
 *     struct cudaMemLocation srcLocHint;
 *     struct cudaMemLocation dstLocHint;
 *     unsigned int flags;
 * }
 * }
 * The same in CUDA 12.8 and 13.0. Stateless accessors over a caller-owned segment; thread-safety
 * is the segment's.
 */
public class cudaMemcpyAttributes {

    cudaMemcpyAttributes() {
        // Should not be called directly
    }

    /** {@code cudaMemcpySrcAccessOrderStream}: the source is read in stream order. */
    public static final int SRC_ACCESS_ORDER_STREAM = 1;

    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            cuda_runtime_api_h.C_INT.withName("srcAccessOrder"),
            cudaMemLocation.layout().withName("srcLocHint"),
            cudaMemLocation.layout().withName("dstLocHint"),
            cuda_runtime_api_h.C_INT.withName("flags")
    ).withName("cudaMemcpyAttributes");

    /** The layout of this struct. */
    public static final GroupLayout layout() {
        return $LAYOUT;
    }

    private static final OfInt srcAccessOrder$LAYOUT =
            (OfInt) $LAYOUT.select(MemoryLayout.PathElement.groupElement("srcAccessOrder"));
    private static final long srcAccessOrder$OFFSET =
            $LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement("srcAccessOrder"));
    private static final long srcLocHint$OFFSET =
            $LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement("srcLocHint"));
    private static final long dstLocHint$OFFSET =
            $LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement("dstLocHint"));
    private static final OfInt flags$LAYOUT =
            (OfInt) $LAYOUT.select(MemoryLayout.PathElement.groupElement("flags"));
    private static final long flags$OFFSET =
            $LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement("flags"));

    /** Getter for {@code srcAccessOrder}. */
    public static int srcAccessOrder(MemorySegment struct) {
        return struct.get(srcAccessOrder$LAYOUT, srcAccessOrder$OFFSET);
    }

    /** Setter for {@code srcAccessOrder}. */
    public static void srcAccessOrder(MemorySegment struct, int fieldValue) {
        struct.set(srcAccessOrder$LAYOUT, srcAccessOrder$OFFSET, fieldValue);
    }

    /** Slice for {@code srcLocHint}. */
    public static MemorySegment srcLocHint(MemorySegment struct) {
        return struct.asSlice(srcLocHint$OFFSET, cudaMemLocation.layout().byteSize());
    }

    /** Slice for {@code dstLocHint}. */
    public static MemorySegment dstLocHint(MemorySegment struct) {
        return struct.asSlice(dstLocHint$OFFSET, cudaMemLocation.layout().byteSize());
    }

    /** Getter for {@code flags}. */
    public static int flags(MemorySegment struct) {
        return struct.get(flags$LAYOUT, flags$OFFSET);
    }

    /** Setter for {@code flags}. */
    public static void flags(MemorySegment struct, int fieldValue) {
        struct.set(flags$LAYOUT, flags$OFFSET, fieldValue);
    }

    /** The size of this struct in bytes. */
    public static long sizeof() {
        return layout().byteSize();
    }
}
