// Generated-style struct in the layout jextract emits; see cuda-bindings/jextract/README.md.

package io.hicache.cuda.ffi;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout.OfInt;

/**
 * {@snippet lang=c :
 * struct cudaMemLocation {
 *     enum cudaMemLocationType type;
 *     int id;
 * }
 * }
 * Stateless accessors over a caller-owned segment; thread-safety is the segment's.
 */
public class cudaMemLocation {

    cudaMemLocation() {
        // Should not be called directly
    }

    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            cuda_runtime_api_h.C_INT.withName("type"),
            cuda_runtime_api_h.C_INT.withName("id")
    ).withName("cudaMemLocation");

    /** The layout of this struct. */
    public static final GroupLayout layout() {
        return $LAYOUT;
    }

    private static final OfInt type$LAYOUT = (OfInt) $LAYOUT.select(MemoryLayout.PathElement.groupElement("type"));
    private static final long type$OFFSET = $LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement("type"));
    private static final OfInt id$LAYOUT = (OfInt) $LAYOUT.select(MemoryLayout.PathElement.groupElement("id"));
    private static final long id$OFFSET = $LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement("id"));

    /** Getter for {@code type}. */
    public static int type(MemorySegment struct) {
        return struct.get(type$LAYOUT, type$OFFSET);
    }

    /** Setter for {@code type}. */
    public static void type(MemorySegment struct, int fieldValue) {
        struct.set(type$LAYOUT, type$OFFSET, fieldValue);
    }

    /** Getter for {@code id}. */
    public static int id(MemorySegment struct) {
        return struct.get(id$LAYOUT, id$OFFSET);
    }

    /** Setter for {@code id}. */
    public static void id(MemorySegment struct, int fieldValue) {
        struct.set(id$LAYOUT, id$OFFSET, fieldValue);
    }

    /** The size of this struct in bytes. */
    public static long sizeof() {
        return layout().byteSize();
    }
}
