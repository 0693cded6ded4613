package io.hicache.example;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarFile;
import java.util.stream.Stream;

/**
 * Resolves, ahead of a measurement, the string literals that HotSpot would otherwise resolve lazily on the
 * measured thread. Before it queues a C2 compilation, the JVM resolves every string constant of the compiled
 * method's class, on the thread whose call crossed the compile threshold; each literal not yet interned costs a
 * {@code String} and its {@code byte[]} there, once per class and JVM, at a round that depends on the compiler
 * queue. That is JIT warm-up, not the hot path, and this removes exactly it (the literals of one class already
 * resolved by the JVM are not resolved again): every other allocation is still counted.
 *
 * <p>Only classes already initialized are touched (an unlinked class has no resolved-references array), so call it
 * after a warm-up that ran the measured path. Reaches the JDK's internals reflectively (no compile-time access under
 * {@code --release}): needs {@code --add-exports} of {@code java.base/jdk.internal.access}, {@code jdk.internal.reflect}
 * and {@code jdk.internal.misc} (set in this module's surefire {@code argLine}).
 */
final class StringLiterals {
    /**
     * JDK modules scanned: collections and atomics ({@code java.base}), {@code sun.misc.Unsafe} under JCTools and
     * Agrona ({@code jdk.unsupported}), {@code EventType.isEnabled} before each JFR event ({@code jdk.jfr}), and the
     * thread allocation counter itself ({@code java.management}, {@code jdk.management}).
     */
    static final List<String> JDK_MODULES =
        List.of("java.base", "jdk.unsupported", "jdk.jfr", "java.management", "jdk.management");

    private StringLiterals() {
    }

    /**
     * Resolves the string constants of every initialized class whose name starts with one of {@code prefixes},
     * from the class path and from the JDK modules the measured path and the measurement run
     * ({@link #JDK_MODULES}).
     *
     * @return how many string constants were looked at
     */
    static int resolveInitialized(String... prefixes) {
        ClassLoader loader = StringLiterals.class.getClassLoader();
        List<String> names = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            classNames(entry, names);
        }
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        for (String module : JDK_MODULES) {
            Path root = jrt.getPath("/modules", module);
            try (Stream<Path> files = Files.walk(root)) {
                files.map(f -> root.relativize(f).toString()).forEach(names::add);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        int resolved = 0;
        Method getConstantPool;
        Method size;
        Method tagAt;
        Method stringAt;
        Method shouldBeInitialized;
        Object javaLangAccess;
        Object unsafe;
        try {
            javaLangAccess = Class.forName("jdk.internal.access.SharedSecrets").getMethod("getJavaLangAccess")
                .invoke(null);
            getConstantPool = Class.forName("jdk.internal.access.JavaLangAccess").getMethod("getConstantPool",
                Class.class);
            Class<?> pool = Class.forName("jdk.internal.reflect.ConstantPool");
            size = pool.getMethod("getSize");
            tagAt = pool.getMethod("getTagAt", int.class);
            stringAt = pool.getMethod("getStringAt", int.class);
            Class<?> unsafeClass = Class.forName("jdk.internal.misc.Unsafe");
            unsafe = unsafeClass.getMethod("getUnsafe").invoke(null);
            shouldBeInitialized = unsafeClass.getMethod("shouldBeInitialized", Class.class);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("constant pools unreachable: run with --add-exports java.base/"
                + "jdk.internal.access, jdk.internal.reflect and jdk.internal.misc to ALL-UNNAMED", e);
        }
        for (String file : names) {
            if (!file.endsWith(".class") || file.endsWith("module-info.class") || file.startsWith("META-INF")) {
                continue;
            }
            String name = file.substring(0, file.length() - ".class".length()).replace('/', '.');
            if (!startsWithAny(name, prefixes)) {
                continue;
            }
            Class<?> c;
            try {
                c = Class.forName(name, false, loader);
            } catch (ClassNotFoundException | LinkageError e) {
                continue; // an optional dependency of a library class is absent: it never ran
            }
            try {
                if ((Boolean) shouldBeInitialized.invoke(unsafe, c)) {
                    continue; // never initialized, so none of its code ran and none is compiled
                }
                Object pool = getConstantPool.invoke(javaLangAccess, c);
                for (int i = 1, n = (Integer) size.invoke(pool); i < n; i++) {
                    if (((Enum<?>) tagAt.invoke(pool, i)).name().equals("STRING")) {
                        stringAt.invoke(pool, i);
                        resolved++;
                    }
                }
            } catch (IllegalAccessException | InvocationTargetException e) {
                throw new IllegalStateException("resolving the string constants of " + name, e);
            }
        }
        return resolved;
    }

    private static boolean startsWithAny(String name, String[] prefixes) {
        for (String p : prefixes) {
            if (name.startsWith(p)) {
                return true;
            }
        }
        return false;
    }

    private static void classNames(String entry, List<String> out) {
        Path path = Path.of(entry);
        try {
            if (Files.isDirectory(path)) {
                try (Stream<Path> files = Files.walk(path)) {
                    files.map(f -> path.relativize(f).toString().replace(File.separatorChar, '/')).forEach(out::add);
                }
            } else if (entry.endsWith(".jar") && Files.isRegularFile(path)) {
                try (JarFile jar = new JarFile(path.toFile())) {
                    jar.stream().forEach(e -> out.add(e.getName()));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
