package io.hicache.core.internal.memory;

import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.memory.HostLayout;
import io.hicache.core.memory.HostMemoryKind;
import io.hicache.core.memory.InsufficientHostMemoryException;
import io.hicache.core.memory.KvPageShape;
import io.hicache.cuda.CudaRuntime;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Pinned host memory holding KV pages (the L2 tier): {@link #pageCount()} host pages, each holding every
 * layer and buffer of one {@link KvPageShape}, arranged by a {@link HostLayout}. Page ids are handed out
 * by a {@link HostPageAllocator}; a draft/MTP pool made with {@link #allocateDraft} shares the same page
 * ids 1:1, so one reservation covers target and draft.
 *
 * <p><b>Threads.</b> Owned by the scheduler thread. The address methods are read-only and allocation-free,
 * so other threads (the copy submitter) may call them while the pool is open. {@link #close()} is
 * idempotent and safe to call from any thread: the memory is released exactly once.
 *
 * <p><b>Failures.</b> Creation validates sizes first and throws {@link IllegalArgumentException} naming the
 * bad value, or {@link InsufficientHostMemoryException} when the pool exceeds available host memory, before
 * allocating anything. A {@link io.hicache.cuda.CudaException} from {@code cudaHostAlloc} or
 * {@code cudaHostRegister} propagates after everything allocated so far is released: a failed creation
 * leaks nothing and returns no half-built pool.
 */
public final class HostKvPool implements AutoCloseable {
    private static final long ALIGNMENT_BYTES = 4096;
    private static final AtomicLong OPEN_BYTES = new AtomicLong();
    private static final AtomicLong OPEN_POOLS = new AtomicLong();

    private final CudaRuntime runtime;
    private final KvPageShape shape;
    private final HostLayout layout;
    private final HostMemoryKind memoryKind;
    private final int pageCount;
    private final long totalBytes;
    private final long baseAddress;
    private final long pagePitchBytes;
    private final long tokenPitchBytes;
    /** Scope of {@link #segment}; for {@link HostMemoryKind#REGISTERED} it also owns the memory. */
    private final Arena arena;
    private final MemorySegment segment;
    private final AtomicBoolean closed = new AtomicBoolean();

    private HostKvPool(CudaRuntime runtime, KvPageShape shape, HostLayout layout, HostMemoryKind memoryKind,
                       int pageCount, long totalBytes, long baseAddress, Arena arena, MemorySegment segment) {
        this.runtime = runtime;
        this.shape = shape;
        this.layout = layout;
        this.memoryKind = memoryKind;
        this.pageCount = pageCount;
        this.totalBytes = totalBytes;
        this.baseAddress = baseAddress;
        this.pagePitchBytes = layout.pagePitchBytes(shape, pageCount);
        this.tokenPitchBytes = layout.tokenPitchBytes(shape);
        this.arena = arena;
        this.segment = segment;
    }

    /** A builder for a pool of the given shape on the given runtime. */
    public static Builder builder(CudaRuntime runtime, KvPageShape shape) {
        return new Builder(runtime, shape);
    }

    /**
     * Host memory available to a new pool, in bytes: Linux {@code MemAvailable} from {@code /proc/meminfo}
     * where readable, else {@code OperatingSystemMXBean.getFreeMemorySize()}.
     */
    public static long systemAvailableBytes() {
        Path meminfo = Path.of("/proc/meminfo");
        if (Files.isReadable(meminfo)) {
            try {
                List<String> lines = Files.readAllLines(meminfo);
                for (String line : lines) {
                    if (line.startsWith("MemAvailable:")) {
                        String[] parts = line.trim().split("\\s+");
                        return Long.parseLong(parts[1]) * 1024L;
                    }
                }
            } catch (IOException | RuntimeException e) {
                // fall through to the MXBean
            }
        }
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getFreeMemorySize();
        }
        return Long.MAX_VALUE;
    }

    /** Bytes held by every open pool in this process (a leak check: 0 once all are closed). */
    public static long openPoolBytes() {
        return OPEN_BYTES.get();
    }

    /** Number of open pools in this process. */
    public static long openPoolCount() {
        return OPEN_POOLS.get();
    }

    /**
     * A draft/MTP pool sharing this pool's host page ids 1:1: same page count, layout, memory kind and
     * runtime, sized by the draft's own shape, so it adds only the draft's bytes. The draft shape must
     * have the same tokens per page. Checked against {@link #systemAvailableBytes()}.
     *
     * @throws IllegalArgumentException       when the draft's page size differs
     * @throws InsufficientHostMemoryException when the draft bytes exceed available memory
     */
    public HostKvPool allocateDraft(KvPageShape draftShape) {
        return allocateDraft(draftShape, HostKvPool::systemAvailableBytes);
    }

    /** As {@link #allocateDraft(KvPageShape)} with an explicit source of available host bytes. */
    public HostKvPool allocateDraft(KvPageShape draftShape, LongSupplier availableBytes) {
        checkOpen();
        if (draftShape == null) {
            throw new IllegalArgumentException("draftShape must not be null");
        }
        if (draftShape.pageSizeTokens() != shape.pageSizeTokens()) {
            throw new IllegalArgumentException("draft pageSizeTokens must equal the target's ("
                    + shape.pageSizeTokens() + ") to share host page ids, was " + draftShape.pageSizeTokens());
        }
        return builder(runtime, draftShape).layout(layout).memoryKind(memoryKind).pageCount(pageCount)
                .availableBytes(availableBytes).allocate();
    }

    /** The page shape. */
    public KvPageShape shape() {
        return shape;
    }

    /** The byte order. */
    public HostLayout layout() {
        return layout;
    }

    /** Where the memory came from. */
    public HostMemoryKind memoryKind() {
        return memoryKind;
    }

    /** Host pages (page ids are {@code 0 .. pageCount-1}). */
    public int pageCount() {
        return pageCount;
    }

    /** Bytes of one page of one buffer of one layer. */
    public long pageBytes() {
        return shape.pageBytes();
    }

    /** Bytes of one host page over all layers and buffers. */
    public long bytesPerPageAllLayers() {
        return shape.bytesPerPageAllLayers();
    }

    /** Bytes of the whole pool: {@code pageCount * bytesPerPageAllLayers()}. */
    public long totalBytes() {
        return totalBytes;
    }

    /** Address of the first byte of the pool. */
    public long baseAddress() {
        return baseAddress;
    }

    /** Distance between the token rows of one (layer, buffer, page); see {@link HostLayout#tokenPitchBytes}. */
    public long tokenPitchBytes() {
        return tokenPitchBytes;
    }

    /** Distance from a (layer, buffer) page to the same layer and buffer of the next page id. */
    public long pagePitchBytes() {
        return pagePitchBytes;
    }

    /**
     * Address of token 0 of (layer, buffer, hostPage). The page's {@code pageSizeTokens} rows of
     * {@code bytesPerTokenPerBuffer} bytes lie {@link #tokenPitchBytes()} apart (contiguous except in
     * {@link HostLayout#PAGE_FIRST}). Allocation-free.
     *
     * @throws IndexOutOfBoundsException naming the value when an index is out of range
     */
    public long pageAddress(int layer, int buffer, int hostPage) {
        if (layer < 0 || layer >= shape.layerCount()) {
            throw new IndexOutOfBoundsException("layer " + layer + " out of [0, " + shape.layerCount() + ")");
        }
        if (buffer < 0 || buffer >= shape.bufferCount()) {
            throw new IndexOutOfBoundsException("buffer " + buffer + " out of [0, " + shape.bufferCount() + ")");
        }
        if (hostPage < 0 || hostPage >= pageCount) {
            throw new IndexOutOfBoundsException("hostPage " + hostPage + " out of [0, " + pageCount + ")");
        }
        return baseAddress + layout.pageOffsetBytes(shape, pageCount, layer, buffer, hostPage);
    }

    /**
     * Tells a runtime that checks use-after-free ({@link CudaRuntime#tracksRetiredMemory()}) that host pages
     * {@code pages[off .. off+n)} are freed now, every layer and buffer, row by row. Nothing happens (and nothing is
     * computed) on other runtimes. Allocation-free.
     */
    public void retirePages(int[] pages, int off, int n) {
        if (!runtime.tracksRetiredMemory()) {
            return;
        }
        long w = shape.bytesPerTokenPerBuffer();
        int rows = shape.pageSizeTokens();
        for (int i = 0; i < n; i++) {
            for (int layer = 0; layer < shape.layerCount(); layer++) {
                for (int buf = 0; buf < shape.bufferCount(); buf++) {
                    long addr = pageAddress(layer, buf, pages[off + i]);
                    if (tokenPitchBytes == w) {
                        runtime.retire(addr, w * rows);
                    } else {
                        for (int t = 0; t < rows; t++) {
                            runtime.retire(addr + t * tokenPitchBytes, w);
                        }
                    }
                }
            }
        }
    }

    /**
     * The pool's bytes for CPU reads and writes (tests, storage tiers). Invalid after {@link #close()}:
     * access then throws {@link IllegalStateException} instead of touching freed memory.
     */
    public MemorySegment segment() {
        checkOpen();
        return segment;
    }

    /**
     * Every byte of host page {@code hostPage} (all layers and buffers) as slices of {@link #segment()}, in the
     * pool's memory order with adjacent ranges merged: one slice per buffer in {@link HostLayout#PAGE_FIRST_DIRECT}
     * and {@link HostLayout#PAGE_FIRST}, one per (buffer, layer) in {@link HostLayout#LAYER_FIRST}. Their
     * concatenation is the page as a storage tier stores it, so the layout is part of a stored page's format. Cold
     * path (allocates); a caller keeps the result per page id.
     *
     * @throws IndexOutOfBoundsException when {@code hostPage} is outside the pool
     * @throws IllegalStateException     when the pool is closed
     */
    public MemorySegment[] pageSegments(int hostPage) {
        if (hostPage < 0 || hostPage >= pageCount) {
            throw new IndexOutOfBoundsException("hostPage " + hostPage + " out of [0, " + pageCount + ")");
        }
        MemorySegment all = segment();
        boolean contiguous = layout.pageContiguous(shape);
        int rowsPerRegion = contiguous ? 1 : shape.pageSizeTokens();
        long rowBytes = contiguous ? shape.pageBytes() : shape.bytesPerTokenPerBuffer();
        long[] starts = new long[shape.layerCount() * shape.bufferCount() * rowsPerRegion];
        int n = 0;
        for (int b = 0; b < shape.bufferCount(); b++) {
            for (int l = 0; l < shape.layerCount(); l++) {
                long off = pageAddress(l, b, hostPage) - baseAddress;
                for (int t = 0; t < rowsPerRegion; t++) {
                    starts[n++] = off + t * tokenPitchBytes;
                }
            }
        }
        Arrays.sort(starts);
        MemorySegment[] runs = new MemorySegment[starts.length];
        int count = 0;
        long runStart = starts[0];
        long runEnd = runStart + rowBytes;
        for (int i = 1; i < starts.length; i++) {
            if (starts[i] == runEnd) {
                runEnd += rowBytes;
            } else {
                runs[count++] = all.asSlice(runStart, runEnd - runStart);
                runStart = starts[i];
                runEnd = runStart + rowBytes;
            }
        }
        runs[count++] = all.asSlice(runStart, runEnd - runStart);
        return Arrays.copyOf(runs, count);
    }

    /** True once {@link #close()} has run. */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Releases the host memory exactly once ({@code cudaFreeHost}, or {@code cudaHostUnregister} then
     * free). Idempotent. A {@link io.hicache.cuda.CudaException} from the runtime propagates after the
     * library's own memory and scope are released.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        OPEN_BYTES.addAndGet(-totalBytes);
        OPEN_POOLS.decrementAndGet();
        try {
            if (memoryKind == HostMemoryKind.HOST_ALLOC) {
                runtime.hostFree(baseAddress);
            } else {
                runtime.hostUnregister(baseAddress);
            }
        } finally {
            arena.close();
        }
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("host KV pool is closed");
        }
    }

    @Override
    public String toString() {
        return "HostKvPool{" + layout + ", " + memoryKind + ", " + shape + ", pageCount=" + pageCount
                + ", totalBytes=" + totalBytes + (isClosed() ? ", closed" : "") + "}";
    }

    /**
     * Sizes and creates a {@link HostKvPool}. Set exactly one of {@link #pageCount}, {@link #bytes} or
     * {@link #ratioToDevice}. Not thread-safe; use on one thread and discard.
     */
    public static final class Builder {
        private final CudaRuntime runtime;
        private final KvPageShape shape;
        private HostLayout layout = HostLayout.LAYER_FIRST;
        private HostMemoryKind memoryKind = HostMemoryKind.HOST_ALLOC;
        private int pageCount = -1;
        private long bytes = -1;
        private DeviceKvLayout device;
        private double ratio = Double.NaN;
        private LongSupplier availableBytes = HostKvPool::systemAvailableBytes;

        private Builder(CudaRuntime runtime, KvPageShape shape) {
            if (runtime == null) {
                throw new IllegalArgumentException("runtime must not be null");
            }
            if (shape == null) {
                throw new IllegalArgumentException("shape must not be null");
            }
            this.runtime = runtime;
            this.shape = shape;
        }

        /** Byte order; default {@link HostLayout#LAYER_FIRST}. */
        public Builder layout(HostLayout layout) {
            if (layout == null) {
                throw new IllegalArgumentException("layout must not be null");
            }
            this.layout = layout;
            return this;
        }

        /** Memory source; default {@link HostMemoryKind#HOST_ALLOC}. */
        public Builder memoryKind(HostMemoryKind memoryKind) {
            if (memoryKind == null) {
                throw new IllegalArgumentException("memoryKind must not be null");
            }
            this.memoryKind = memoryKind;
            return this;
        }

        /** Size in host pages. */
        public Builder pageCount(int pageCount) {
            this.pageCount = pageCount;
            return this;
        }

        /** Size in bytes, rounded down to whole pages ({@link KvPageShape#bytesPerPageAllLayers()}). */
        public Builder bytes(long bytes) {
            this.bytes = bytes;
            return this;
        }

        /**
         * Size as a ratio to a device pool of the same shape: {@code floor(device.pageCount() * ratio)}
         * pages (SGLang's {@code hicache_ratio}, typically 2 or more).
         */
        public Builder ratioToDevice(DeviceKvLayout device, double ratio) {
            this.device = device;
            this.ratio = ratio;
            return this;
        }

        /** Source of available host bytes checked before allocating; default {@link #systemAvailableBytes()}. */
        public Builder availableBytes(LongSupplier availableBytes) {
            if (availableBytes == null) {
                throw new IllegalArgumentException("availableBytes must not be null");
            }
            this.availableBytes = availableBytes;
            return this;
        }

        /** The page count the current settings give; validates them. */
        public int resolvePageCount() {
            int set = (pageCount >= 0 ? 1 : 0) + (bytes >= 0 ? 1 : 0) + (device != null || !Double.isNaN(ratio) ? 1 : 0);
            if (set != 1) {
                throw new IllegalArgumentException("set exactly one of pageCount, bytes or ratioToDevice (" + set + " set)");
            }
            long pages;
            if (pageCount >= 0) {
                pages = pageCount;
            } else if (bytes >= 0) {
                pages = bytes / shape.bytesPerPageAllLayers();
                if (pages < 1) {
                    throw new IllegalArgumentException("bytes " + bytes + " is less than one host page ("
                            + shape.bytesPerPageAllLayers() + " bytes)");
                }
            } else {
                if (device == null) {
                    throw new IllegalArgumentException("ratioToDevice needs a device layout, was null");
                }
                if (!device.shape().equals(shape)) {
                    throw new IllegalArgumentException("device shape " + device.shape()
                            + " differs from host pool shape " + shape);
                }
                if (!(ratio > 0) || Double.isInfinite(ratio)) {
                    throw new IllegalArgumentException("ratio must be a finite number > 0, was " + ratio);
                }
                pages = (long) Math.floor(device.pageCount() * ratio);
                if (pages < 1) {
                    throw new IllegalArgumentException("ratio " + ratio + " of " + device.pageCount()
                            + " device pages gives no host page");
                }
            }
            if (pages < 1 || pages > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("pageCount must be in [1, " + (Integer.MAX_VALUE - 8)
                        + "], was " + pages);
            }
            return (int) pages;
        }

        /**
         * Validates, checks available memory, allocates and pins the pool.
         *
         * @throws IllegalArgumentException        for bad sizes (naming the value)
         * @throws InsufficientHostMemoryException when the pool exceeds available host memory
         * @throws io.hicache.cuda.CudaException    when pinning fails; nothing is left allocated
         */
        public HostKvPool allocate() {
            int pages = resolvePageCount();
            long total;
            try {
                total = Math.multiplyExact(shape.bytesPerPageAllLayers(), (long) pages);
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("pool bytes overflow a long: " + pages + " pages x "
                        + shape.bytesPerPageAllLayers() + " bytes", e);
            }
            long available = availableBytes.getAsLong();
            if (total > available) {
                throw new InsufficientHostMemoryException("host KV pool (" + pages + " pages x "
                        + shape.bytesPerPageAllLayers() + " bytes, " + layout + ")", total, available);
            }
            @SuppressWarnings("MustBeClosedChecker") // owned by the pool, closed by its close(), or below on failure
            Arena arena = Arena.ofShared();
            try {
                HostKvPool pool = memoryKind == HostMemoryKind.HOST_ALLOC
                        ? allocatePinned(arena, pages, total)
                        : allocateRegistered(arena, pages, total);
                OPEN_BYTES.addAndGet(total);
                OPEN_POOLS.incrementAndGet();
                return pool;
            } catch (RuntimeException | Error e) {
                arena.close();
                throw e;
            }
        }

        @SuppressWarnings("restricted") // reinterpret: the pinned memory lives as long as the pool's arena
        private HostKvPool allocatePinned(Arena arena, int pages, long total) {
            long base = runtime.hostAlloc(total, CudaRuntime.HOST_ALLOC_PORTABLE);
            try {
                MemorySegment view = runtime.hostMemory(base, total);
                MemorySegment scoped = view.isNative() ? view.reinterpret(arena, null) : view;
                return new HostKvPool(runtime, shape, layout, memoryKind, pages, total, base, arena, scoped);
            } catch (RuntimeException | Error e) {
                runtime.hostFree(base);
                throw e;
            }
        }

        private HostKvPool allocateRegistered(Arena arena, int pages, long total) {
            MemorySegment memory = arena.allocate(total, ALIGNMENT_BYTES);
            long base = memory.address();
            runtime.hostRegister(base, total, CudaRuntime.HOST_REGISTER_PORTABLE);
            return new HostKvPool(runtime, shape, layout, memoryKind, pages, total, base, arena, memory);
        }
    }
}
