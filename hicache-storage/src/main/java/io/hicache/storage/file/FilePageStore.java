package io.hicache.storage.file;

import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import io.hicache.storage.StoreConfig;
import io.hicache.storage.StoreStatus;
import io.hicache.storage.internal.AbstractPageStore;
import io.hicache.storage.internal.CommitMarker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.zip.CRC32C;

/**
 * The {@code file} backend: one file per page key in a directory, published by atomic rename.
 *
 * <p><b>Layout.</b> {@code DIR/objects/ab/abcd…} (the key's 64 hex characters; {@code ab} its first two)
 * holds committed objects; {@code DIR/staging/} holds writes in progress. Only {@link PageKey#hex()} of a
 * parsed key ever becomes a file name, so no text from outside reaches the file system. {@code DIR} and
 * its subdirectories are owner-only ({@code rwx------}), files {@code rw-------}.
 *
 * <p><b>Object.</b> The page's bytes, then the 64-byte {@link CommitMarker} written last (magic, data
 * length, CRC-32C of the data, the key). A put writes the whole object under a unique staging name
 * ({@code <key>.<pid>.<nonce>-<seq>.tmp}), optionally fsyncs it, then renames it over the final name: readers see
 * the old object or the complete new one, never a part. Two writers of one key each rename a complete
 * object; the last rename wins and one valid object remains. A file without a valid marker, of the
 * wrong size, for another key, or whose CRC does not match is {@link StoreStatus#CORRUPT} (a miss,
 * reported). Because the marker travels inside the renamed file, a marker can never pair with another
 * writer's data.
 *
 * <p><b>Restart.</b> Opening scans {@code objects/} (committed keys are found again, verified lazily on
 * first use), reports foreign files, and deletes staging files whose writer process is gone
 * (interrupted writes). Several processes may share a directory.
 *
 * <p><b>Capacity.</b> With {@link StoreConfig#fileCapacityBytes()} set, the least recently used objects
 * (by this process's puts and gets; after a restart, by modification time) are deleted when a put would
 * exceed it; a page larger than the capacity is {@link StoreStatus#REJECTED}. With
 * {@link StoreConfig#fileQuotaBytes()} set, a write that would pass the quota fails as on a full disk
 * ({@code "No space left on device"}); {@link #diskFullErrors()} counts those and real ENOSPC/EDQUOT failures.
 *
 * <p><b>O_DIRECT.</b> With {@link StoreConfig#fileDirectIo()}, page data moves with {@code O_DIRECT}
 * (Java's {@code com.sun.nio.file.ExtendedOpenOption.DIRECT}) when every segment of the page is native memory whose
 * address and size are multiples of the file system's block size (the pinned host pool is 4 KiB aligned);
 * the object then ends with a zero-padded block holding the marker, so one {@code O_DIRECT} descriptor
 * writes all of it (the marker records the padding). Other pages use buffered I/O (a warning, once).
 *
 * <p>Thread-safe: I/O runs on the store's threads; the index is guarded by one lock held for map updates only.
 */
public final class FilePageStore extends AbstractPageStore {

    /**
     * {@code com.sun.nio.file.ExtendedOpenOption.DIRECT} (O_DIRECT), looked up by name so that neither javac nor
     * javadoc warns about the {@code jdk.unsupported} API; null where the JDK lacks it.
     */
    private static final OpenOption DIRECT = directOption();

    private static OpenOption directOption() {
        try {
            Class<?> c = Class.forName("com.sun.nio.file.ExtendedOpenOption");
            for (Object o : c.getEnumConstants()) {
                if (((Enum<?>) o).name().equals("DIRECT")) {
                    return (OpenOption) o;
                }
            }
        } catch (ClassNotFoundException e) {
            // no O_DIRECT on this JDK
        }
        return null;
    }

    private static final Logger LOG = LoggerFactory.getLogger(FilePageStore.class);
    static final int MARKER_BYTES = CommitMarker.BYTES;
    private static final long MAX_CHUNK = 1 << 30;
    private static final Set<PosixFilePermission> DIR_PERMS = PosixFilePermissions.fromString("rwx------");
    private static final FileAttribute<Set<PosixFilePermission>> FILE_ATTR =
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));
    private static final String STAGING_SUFFIX = ".tmp";
    /** The text of ENOSPC ({@code strerror}), as the JDK puts it in the {@code IOException} of a full disk. */
    private static final String NO_SPACE = "No space left on device";
    private final LongAdder diskFullErrors = new LongAdder();

    private final Path root;
    private final Path objects;
    private final Path staging;
    private final long pid = ProcessHandle.current().pid();
    /** Unique per JVM and instance: several stores (or containers with equal pids) may share a directory. */
    private static final AtomicLong STAGING_SEQ = new AtomicLong();
    private final String stagingNonce = Long.toHexString(new java.security.SecureRandom().nextLong());
    private final long blockSize;
    private final boolean directIo;
    private volatile boolean directSkipLogged;
    private final ThreadLocal<ByteBuffer> markerBuffers =
            ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(MARKER_BYTES).order(ByteOrder.LITTLE_ENDIAN));
    private final ThreadLocal<CRC32C> crcs = ThreadLocal.withInitial(CRC32C::new);
    private final ThreadLocal<ByteBuffer> directTails;

    /** Index of known objects in LRU order; guarded by itself. */
    private final LinkedHashMap<PageKey, Entry> index = new LinkedHashMap<>(1024, 0.75f, true);
    private long indexedBytes;
    private final int foreignFiles;
    private final int collectedStagingFiles;

    private static final class Entry {
        final long fileBytes;
        boolean verified;

        Entry(long fileBytes, boolean verified) {
            this.fileBytes = fileBytes;
            this.verified = verified;
        }
    }

    /**
     * Opens (creating if needed) the store in {@code dir}.
     *
     * @throws IllegalArgumentException when {@code dir} is not a directory or cannot be made owner-only
     * @throws IOException              when the directory cannot be created or scanned
     */
    public FilePageStore(Path dir, StoreConfig config) throws IOException {
        super("file", "L3 file store " + dir.toAbsolutePath().normalize(), config);
        this.root = dir.toAbsolutePath().normalize();
        this.objects = root.resolve("objects");
        this.staging = root.resolve("staging");
        ownerOnlyDirectory(root);
        ownerOnlyDirectory(objects);
        ownerOnlyDirectory(staging);
        this.blockSize = Math.max(512, Files.getFileStore(root).getBlockSize());
        this.directIo = config.fileDirectIo();
        int block = (int) blockSize;
        this.directTails = ThreadLocal.withInitial(() ->
                ByteBuffer.allocateDirect(2 * block).alignedSlice(block).limit(block).slice().order(ByteOrder.LITTLE_ENDIAN));
        this.collectedStagingFiles = collectStaging();
        this.foreignFiles = scanObjects();
        if (foreignFiles > 0) {
            LOG.warn("L3 file store {}: {} foreign files under objects/ are ignored (not page objects)", root, foreignFiles);
        }
        LOG.info("L3 file store {}: {} committed objects ({} bytes), {} interrupted writes removed",
                root, index.size(), indexedBytes, collectedStagingFiles);
    }

    /** The store's directory. */
    public Path directory() {
        return root;
    }

    /** Committed objects this process knows of. */
    public int indexedObjects() {
        synchronized (index) {
            return index.size();
        }
    }

    /** Foreign files found under {@code objects/} when the store opened. */
    public int foreignFilesAtOpen() {
        return foreignFiles;
    }

    /** Staging files of dead writers deleted when the store opened. */
    public int collectedStagingFilesAtOpen() {
        return collectedStagingFiles;
    }

    Path objectPath(PageKey key) {
        String hex = key.hex();
        return objects.resolve(hex.substring(0, 2)).resolve(hex);
    }

    // ---------------------------------------------------------------- open

    private static void ownerOnlyDirectory(Path dir) throws IOException {
        if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS) && !Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            throw new IllegalArgumentException("file store path " + dir + " exists and is not a directory");
        }
        if (!Files.exists(dir)) {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(DIR_PERMS));
        }
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(dir);
        if (!perms.equals(DIR_PERMS)) {
            try {
                Files.setPosixFilePermissions(dir, DIR_PERMS);
            } catch (IOException e) {
                throw new IllegalArgumentException("file store directory " + dir + " is "
                        + PosixFilePermissions.toString(perms) + " and cannot be made owner-only (rwx------): "
                        + e.getMessage(), e);
            }
        }
    }

    /** Deletes staging files of writers that are no longer alive (or of this pid, from a previous life). */
    private int collectStaging() throws IOException {
        int removed = 0;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(staging)) {
            for (Path p : ds) {
                String name = p.getFileName().toString();
                long writer = stagingWriter(name);
                if (writer >= 0 && writer != pid && ProcessHandle.of(writer).map(ProcessHandle::isAlive).orElse(false)) {
                    continue; // another live process is writing it
                }
                if (Files.deleteIfExists(p)) {
                    removed++;
                }
            }
        }
        return removed;
    }

    private static long stagingWriter(String name) {
        // <64 hex>.<pid>.<nonce>-<seq>.tmp
        String[] parts = name.split("\\.");
        if (parts.length != 4 || !PageKey.isWellFormedHex(parts[0])) {
            return -1;
        }
        try {
            return Long.parseLong(parts[1]);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private int scanObjects() throws IOException {
        record Found(PageKey key, long bytes, long mtimeMs) {
        }
        List<Found> found = new ArrayList<>();
        int foreign = 0;
        try (DirectoryStream<Path> fan = Files.newDirectoryStream(objects)) {
            for (Path sub : fan) {
                String subName = sub.getFileName().toString();
                if (!Files.isDirectory(sub, LinkOption.NOFOLLOW_LINKS) || subName.length() != 2) {
                    foreign++;
                    continue;
                }
                try (DirectoryStream<Path> ds = Files.newDirectoryStream(sub)) {
                    for (Path p : ds) {
                        String name = p.getFileName().toString();
                        BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                        if (!PageKey.isWellFormedHex(name) || !name.startsWith(subName) || !a.isRegularFile()) {
                            foreign++;
                            continue;
                        }
                        found.add(new Found(PageKey.fromHex(name), a.size(), a.lastModifiedTime().toMillis()));
                    }
                }
            }
        }
        found.sort(Comparator.comparingLong(Found::mtimeMs));
        synchronized (index) {
            for (Found f : found) {
                index.put(f.key(), new Entry(f.bytes(), false));
                indexedBytes += f.bytes();
            }
        }
        if (foreign > 0) {
            reportCorrupt("foreign file under objects/ (not named by a page key)");
        }
        return foreign;
    }

    // ---------------------------------------------------------------- operations

    @Override
    protected int doExistsPrefix(List<PageKey> keys) throws IOException {
        for (int i = 0; i < keys.size(); i++) {
            if (!exists(keys.get(i))) {
                return i;
            }
        }
        return keys.size();
    }

    private boolean exists(PageKey key) throws IOException {
        synchronized (index) {
            Entry e = index.get(key);
            if (e != null && e.verified) {
                return true;
            }
        }
        Path path = objectPath(key);
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = ch.size();
            String bad = readMarker(ch, size, key, -1);
            if (bad != null) {
                reportCorrupt(bad);
                return false;
            }
            remember(key, size, true);
            return true;
        } catch (NoSuchFileException e) {
            forget(key);
            return false;
        }
    }

    @Override
    protected void doPut(List<PageKey> keys, List<HostPage> pages, byte[] status) throws IOException {
        for (int i = 0; i < keys.size(); i++) {
            PageKey key = keys.get(i);
            HostPage page = pages.get(i);
            long fileBytes = page.byteSize() + (useDirect(page) ? blockSize : MARKER_BYTES);
            if (config.fileCapacityBytes() > 0 && fileBytes > config.fileCapacityBytes()) {
                status[i] = (byte) StoreStatus.REJECTED.ordinal();
                continue;
            }
            try {
                writeObject(key, page, fileBytes);
            } catch (IOException e) {
                if (isDiskFull(e)) {
                    diskFullErrors.increment();
                }
                throw e;
            }
            remember(key, fileBytes, true);
            evictOverCapacity(key);
            status[i] = (byte) StoreStatus.OK.ordinal();
        }
    }

    private void writeObject(PageKey key, HostPage page, long fileBytes) throws IOException {
        Path tmp = staging.resolve(key.hex() + "." + pid + "." + stagingNonce + "-" + STAGING_SEQ.incrementAndGet() + STAGING_SUFFIX);
        boolean published = false;
        try {
            CRC32C crc = crcs.get();
            crc.reset();
            boolean direct = useDirect(page);
            writeData(tmp, page, crc, direct, key, fileBytes);
            Path target = objectPath(key);
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (NoSuchFileException e) {
                if (!Files.exists(tmp)) {
                    throw e;
                }
                // the first object of this fan-out directory (made on demand: opening stays cheap)
                Files.createDirectories(target.getParent(), PosixFilePermissions.asFileAttribute(DIR_PERMS));
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("file store " + root + " needs a file system with atomic rename", e);
            }
            published = true;
            if (config.fileFsync()) {
                try (FileChannel d = FileChannel.open(target.getParent(), StandardOpenOption.READ)) {
                    d.force(true);
                }
            }
        } finally {
            if (!published) {
                Files.deleteIfExists(tmp);
            }
        }
    }

    /**
     * Writes the page's data and then its marker to a new staging file. With O_DIRECT the marker ends a
     * zero-padded block so the object stays block-aligned and one descriptor writes all of it.
     */
    private void writeData(Path tmp, HostPage page, CRC32C crc, boolean direct, PageKey key, long fileBytes)
            throws IOException {
        OpenOption[] opts = direct
                ? new OpenOption[] {StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, DIRECT}
                : new OpenOption[] {StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE};
        // one gathering write (writev) of every segment and the marker
        ByteBuffer[] bufs = dataBuffers(page, 1);
        int n = bufs.length - 1;
        for (int b = 0; b < n; b++) {
            crc.update(bufs[b].duplicate());
        }
        bufs[n] = direct ? directTail(key, page.byteSize(), (int) crc.getValue())
                : marker(key, page.byteSize(), (int) crc.getValue());
        try (FileChannel ch = FileChannel.open(tmp, Set.of(opts), FILE_ATTR)) {
            checkQuota(key, fileBytes);
            int first = 0;
            while (first < bufs.length) {
                ch.write(bufs, first, bufs.length - first);
                while (first < bufs.length && !bufs[first].hasRemaining()) {
                    first++;
                }
            }
            if (config.fileFsync()) {
                ch.force(true);
            }
        }
    }

    /** One block: zeros, then the marker in its last 64 bytes (recording the padding). */
    private ByteBuffer directTail(PageKey key, long dataBytes, int crc) {
        ByteBuffer b = directTails.get();
        b.clear();
        for (int i = 0; i < b.capacity() - MARKER_BYTES; i += 8) {
            b.putLong(i, 0L);
        }
        b.position(b.capacity() - MARKER_BYTES);
        CommitMarker.write(b, key, dataBytes, crc, b.capacity() - MARKER_BYTES);
        return b.clear();
    }

    private ByteBuffer marker(PageKey key, long dataBytes, int crc) {
        ByteBuffer m = markerBuffers.get().clear();
        CommitMarker.write(m, key, dataBytes, crc);
        return m.flip();
    }

    /**
     * Reads and checks the marker at the end of a file of {@code size} bytes; null when valid, else why
     * not. {@code expectedData < 0} accepts any data length consistent with the file size.
     */
    private String readMarker(FileChannel ch, long size, PageKey key, long expectedData) throws IOException {
        if (size < MARKER_BYTES) {
            return "truncated object (" + size + " bytes, no commit marker)";
        }
        ByteBuffer m = markerBuffers.get().clear();
        long at = size - MARKER_BYTES;
        while (m.hasRemaining()) {
            int n = ch.read(m, at);
            if (n < 0) {
                return "truncated object (short read of the commit marker)";
            }
            at += n;
        }
        return CommitMarker.check(m, 0, key, size, expectedData);
    }

    @Override
    protected void doGet(List<PageKey> keys, List<HostPage> pages, byte[] status) throws IOException {
        for (int i = 0; i < keys.size(); i++) {
            PageKey key = keys.get(i);
            HostPage page = pages.get(i);
            Path path = objectPath(key);
            boolean direct = useDirect(page);
            FileChannel ch;
            try {
                ch = direct ? FileChannel.open(path, StandardOpenOption.READ, DIRECT)
                        : FileChannel.open(path, StandardOpenOption.READ);
            } catch (NoSuchFileException e) {
                forget(key);
                status[i] = (byte) StoreStatus.MISS.ordinal();
                continue;
            }
            String bad;
            long size;
            try (ch) {
                size = ch.size();
                long tailBytes = direct ? blockSize : MARKER_BYTES;
                bad = size == page.byteSize() + tailBytes
                        ? readWhole(ch, page, direct ? directTails.get() : markerBuffers.get(), key, size)
                        : readOtherLayout(ch, path, size, page, key, direct);
            }
            if (bad != null) {
                corrupt(status, i, bad);
                continue;
            }
            remember(key, size, true);
            status[i] = (byte) StoreStatus.OK.ordinal();
        }
    }

    /**
     * The common case, an object in the layout this store writes for {@code page}: data and tail (the marker,
     * or under O_DIRECT the block that ends with it) in one scattering read, then the marker and the CRC.
     * Null when valid, else why not.
     */
    private String readWhole(FileChannel ch, HostPage page, ByteBuffer tail, PageKey key, long size) throws IOException {
        ByteBuffer[] bufs = dataBuffers(page, 1);
        bufs[bufs.length - 1] = tail.clear();
        readFully(ch, bufs);
        int at = tail.capacity() - MARKER_BYTES;
        String bad = CommitMarker.check(tail, at, key, size, page.byteSize());
        if (bad != null) {
            return bad;
        }
        return crcOf(bufs, bufs.length - 1) == CommitMarker.crc(tail, at) ? null
                : "object whose data does not match its checksum";
    }

    /**
     * An object of another size: written under the other I/O mode (its marker padded or not), or damaged.
     * The marker is read on its own first (through the page cache: an O_DIRECT descriptor cannot read 64
     * unaligned bytes), then the data through {@code ch}. Null when valid, else why not.
     */
    private String readOtherLayout(FileChannel ch, Path path, long size, HostPage page, PageKey key, boolean direct)
            throws IOException {
        String bad;
        if (direct) {
            try (FileChannel buffered = FileChannel.open(path, StandardOpenOption.READ)) {
                bad = readMarker(buffered, size, key, page.byteSize());
            }
        } else {
            bad = readMarker(ch, size, key, page.byteSize());
        }
        if (bad != null) {
            return bad;
        }
        int stored = CommitMarker.crc(markerBuffers.get(), 0);
        ByteBuffer[] bufs = dataBuffers(page, 0);
        readFully(ch, bufs);
        return crcOf(bufs, bufs.length) == stored ? null : "object whose data does not match its checksum";
    }

    /** The page's segments as buffers (in chunks a single buffer can hold), with {@code extra} empty slots after them. */
    private static ByteBuffer[] dataBuffers(HostPage page, int extra) {
        int parts = 0;
        for (int p = 0; p < page.partCount(); p++) {
            parts += (int) ((page.part(p).byteSize() + MAX_CHUNK - 1) / MAX_CHUNK);
        }
        ByteBuffer[] bufs = new ByteBuffer[parts + extra];
        int n = 0;
        for (int p = 0; p < page.partCount(); p++) {
            MemorySegment part = page.part(p);
            for (long off = 0; off < part.byteSize(); off += MAX_CHUNK) {
                bufs[n++] = part.asSlice(off, Math.min(part.byteSize() - off, MAX_CHUNK)).asByteBuffer();
            }
        }
        return bufs;
    }

    /** Scattering reads (readv) from offset 0 until every buffer is full. */
    private static void readFully(FileChannel ch, ByteBuffer[] bufs) throws IOException {
        ch.position(0);
        int first = 0;
        while (first < bufs.length) {
            if (ch.read(bufs, first, bufs.length - first) < 0) {
                throw new IOException("object shrank while being read");
            }
            while (first < bufs.length && !bufs[first].hasRemaining()) {
                first++;
            }
        }
    }

    /** CRC-32C of the first {@code count} buffers, each read in full. */
    private int crcOf(ByteBuffer[] bufs, int count) {
        CRC32C crc = crcs.get();
        crc.reset();
        for (int b = 0; b < count; b++) {
            crc.update(bufs[b].flip());
        }
        return (int) crc.getValue();
    }

    /** O_DIRECT only for native, block-aligned segments of block-multiple sizes. */
    private boolean useDirect(HostPage page) {
        if (!directIo || DIRECT == null) {
            return false;
        }
        for (int p = 0; p < page.partCount(); p++) {
            MemorySegment s = page.part(p);
            if (!s.isNative() || s.address() % blockSize != 0 || s.byteSize() % blockSize != 0) {
                if (!directSkipLogged) {
                    directSkipLogged = true;
                    LOG.warn("L3 file store {}: O_DIRECT skipped for pages whose segments are not {}-byte aligned"
                            + " native memory; they use buffered I/O", root, blockSize);
                }
                return false;
            }
        }
        return true;
    }

    @Override
    protected void doRemove(List<PageKey> keys, byte[] status) throws IOException {
        for (int i = 0; i < keys.size(); i++) {
            boolean deleted = Files.deleteIfExists(objectPath(keys.get(i)));
            forget(keys.get(i));
            status[i] = (byte) (deleted ? StoreStatus.OK : StoreStatus.MISS).ordinal();
        }
    }

    // ---------------------------------------------------------------- index and capacity

    /**
     * With {@link StoreConfig#fileQuotaBytes()} set: fails as a full file system does when the object would take
     * the store past its quota (the staging file exists by then and is deleted, as after a real ENOSPC).
     */
    private void checkQuota(PageKey key, long fileBytes) throws IOException {
        long quota = config.fileQuotaBytes();
        if (quota <= 0) {
            return;
        }
        synchronized (index) {
            Entry old = index.get(key);
            if (indexedBytes - (old == null ? 0 : old.fileBytes) + fileBytes > quota) {
                throw new IOException(NO_SPACE + " (file store quota of " + quota + " bytes reached)");
            }
        }
    }

    /** True for the errors of a full file system or an exhausted disk quota (ENOSPC, EDQUOT). */
    static boolean isDiskFull(IOException e) {
        String m = e instanceof java.nio.file.FileSystemException fse ? fse.getReason() : e.getMessage();
        return m != null && (m.startsWith(NO_SPACE) || m.startsWith("Disk quota exceeded"));
    }

    /**
     * Writes that failed because the file system was full or a disk quota exhausted (ENOSPC, EDQUOT, or
     * {@link StoreConfig#fileQuotaBytes()}), counting each failed attempt (the store retries a batch).
     */
    public long diskFullErrors() {
        return diskFullErrors.sum();
    }

    private void remember(PageKey key, long fileBytes, boolean verified) {
        synchronized (index) {
            Entry old = index.put(key, new Entry(fileBytes, verified));
            indexedBytes += fileBytes - (old == null ? 0 : old.fileBytes);
        }
    }

    private void forget(PageKey key) {
        synchronized (index) {
            Entry old = index.remove(key);
            if (old != null) {
                indexedBytes -= old.fileBytes;
            }
        }
    }

    private void evictOverCapacity(PageKey keep) throws IOException {
        long capacity = config.fileCapacityBytes();
        if (capacity <= 0) {
            return;
        }
        while (true) {
            PageKey victim = null;
            synchronized (index) {
                if (indexedBytes <= capacity) {
                    return;
                }
                Iterator<Map.Entry<PageKey, Entry>> it = index.entrySet().iterator();
                while (it.hasNext()) {
                    Map.Entry<PageKey, Entry> e = it.next();
                    if (!e.getKey().equals(keep)) {
                        victim = e.getKey();
                        indexedBytes -= e.getValue().fileBytes;
                        it.remove();
                        break;
                    }
                }
            }
            if (victim == null) {
                return;
            }
            Files.deleteIfExists(objectPath(victim));
            countEvicted(1);
        }
    }

    /** File-system errors are keyed by type, reason and area (objects/ or staging/), not by file name. */
    @Override
    protected String describe(Throwable t) {
        if (t instanceof java.nio.file.FileSystemException fse) {
            String file = fse.getFile();
            String area = file == null ? "" : file.startsWith(staging.toString()) ? " in staging/"
                    : file.startsWith(objects.toString()) ? " in objects/" : "";
            return redact(t.getClass().getSimpleName() + (fse.getReason() != null ? ": " + fse.getReason() : "")
                    + area + " of " + root);
        }
        return super.describe(t);
    }

    @Override
    protected long storedBytes() {
        synchronized (index) {
            return indexedBytes;
        }
    }

    @Override
    protected void closeBackend() {
        LOG.debug("L3 file store {} closed", root);
    }

    @Override
    public String toString() {
        return "FilePageStore{" + root + ", capacityBytes=" + config.fileCapacityBytes()
                + (config.fileQuotaBytes() > 0 ? ", quotaBytes=" + config.fileQuotaBytes() : "")
                + ", directIo=" + directIo + "}";
    }
}
