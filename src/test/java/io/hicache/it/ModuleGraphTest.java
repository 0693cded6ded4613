package io.hicache.it;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The house of docs/ARCHITECTURE.md, checked against the sources: every {@code io.hicache} package a module's main
 * sources name (in an import or a qualified name; comments and string literals do not count) must belong to the
 * module itself or to a module its row allows, and a package its owner does not export to everyone (a module's
 * non-exported and qualified-exported packages; every package of a module without a descriptor) needs a door: an
 * allowed package prefix, named in the picture with why. The picture is {@link #HOUSE}; the doors are
 * {@link #DOORS}. An import the picture forbids fails this test with the file that has it.
 */
class ModuleGraphTest {
    private static final Path ROOT = Paths.get(System.getProperty("hicache.repo.root", "..")).toAbsolutePath().normalize();

    private static final List<String> API = List.of("cuda-bindings", "radix", "hicache-core");

    /** Module directory → the modules whose public packages its main sources may name. */
    static final Map<String, List<String>> HOUSE = new LinkedHashMap<>();

    static {
        HOUSE.put("cuda-bindings", List.of());
        HOUSE.put("radix", List.of());
        HOUSE.put("hicache-core", List.of("cuda-bindings", "radix"));
        HOUSE.put("hicache-testkit", API);
        HOUSE.put("hicache-storage", API);
        HOUSE.put("hicache-events", API);
        HOUSE.put("hicache-micrometer", with(API, "hicache-storage"));
        HOUSE.put("hicache-aeron", API);
        HOUSE.put("hicache-sim", with(API, "hicache-storage", "hicache-events"));
        // hicache-sim: its trace readers and token expansion, so a trace replays against the engine as the simulator expands it
        HOUSE.put("hicache-serve", with(API, "hicache-storage", "hicache-events", "hicache-micrometer", "hicache-sim"));
        HOUSE.put("soak", with(API, "hicache-storage", "hicache-aeron"));
        HOUSE.put("bench", with(API, "hicache-storage", "hicache-events", "hicache-sim", "hicache-aeron"));
        HOUSE.put("engine-example", with(API, "hicache-testkit"));
        HOUSE.put("examples/jlama", with(API, "hicache-micrometer"));
        HOUSE.put("examples/consumer", with(API, "hicache-micrometer"));
    }

    /** A way into a package its owner does not export to everyone, and why it is there. */
    record Door(String module, String packagePrefix, String why) {
    }

    /**
     * The doors of the picture. A door whose {@code why} starts with {@code "EXCEPTION"} is not part of the target
     * house: it records a known departure and the work that removes it.
     */
    static final List<Door> DOORS = List.of(
        new Door("hicache-core", "io.hicache.radix.spi", "the tree's plug-in values and listeners, which core implements"),
        new Door("hicache-storage", "io.hicache.core.spi",
            "the storage SPI: the port the L3 tier attaches through, its bandwidth histogram and the error log"),
        new Door("hicache-events", "io.hicache.radix.spi",
            "KeyTokensReader: the publisher's thread reads a node's tokens where the node keeps them"),
        new Door("hicache-sim", "io.hicache.radix.spi", "the cache-only engine's host and device values"),
        new Door("hicache-sim", "io.hicache.storage.tier", "the timed L3 tier the simulator steps (a qualified export)"),
        new Door("bench", "io.hicache.core.internal",
            "the benchmark door: JMH rigs time the controller's agents and pools themselves (class path only)"),
        new Door("bench", "io.hicache.cuda.ffi", "the downcall benchmark times the generated FFM bindings"),
        new Door("bench", "io.hicache.radix.spi", "the radix replay benchmarks give the tree host values"),
        new Door("soak", "io.hicache.storage.file",
            "the soak reports the file store's disk-full errors, which the store SPI does not count (class path)"));

    private static final Pattern NAME = Pattern.compile("\\bio\\.hicache((?:\\.[a-z_][a-z0-9_]*)+)");
    private static final Pattern PACKAGE = Pattern.compile("^\\s*package\\s+([\\w.]+)\\s*;", Pattern.MULTILINE);
    private static final Pattern EXPORTS = Pattern.compile("\\bexports\\s+([\\w.]+)\\s*(to\\b[^;]*)?;");

    @Test
    void everyModuleNamesOnlyWhatThePictureAllows() {
        Map<String, String> ownerOf = new TreeMap<>();
        Map<String, Set<String>> publicOf = new TreeMap<>();
        for (String m : HOUSE.keySet()) {
            for (Path f : mainSources(m)) {
                Matcher p = PACKAGE.matcher(code(f));
                if (p.find()) {
                    ownerOf.putIfAbsent(p.group(1), m);
                }
            }
            publicOf.put(m, unqualifiedExports(m));
        }
        List<String> broken = new ArrayList<>();
        for (Map.Entry<String, List<String>> row : HOUSE.entrySet()) {
            String m = row.getKey();
            for (Path f : sourcesChecked(m)) {
                String code = code(f);
                Matcher p = PACKAGE.matcher(code);
                String own = p.find() ? p.group(1) : "";
                Matcher n = NAME.matcher(code);
                Set<String> named = new TreeSet<>();
                while (n.find()) {
                    named.add("io.hicache" + n.group(1));
                }
                for (String pkg : named) {
                    String why = forbidden(m, own, pkg, ownerOf, publicOf, row.getValue());
                    if (why != null) {
                        broken.add(ROOT.relativize(f) + ": " + pkg + " (" + why + ")");
                    }
                }
            }
        }
        assertThat(broken).as("imports the house of docs/ARCHITECTURE.md forbids").isEmpty();
    }

    @Test
    void theTestSeesEveryModuleAndCatchesAForbiddenImport() {
        // every module of the reactor is in the picture, so none escapes the check
        assertThat(HOUSE.keySet()).containsAll(reactorModules());
        Map<String, String> owners = Map.of("io.hicache.core.internal", "hicache-core", "io.hicache.core.spi",
            "hicache-core", "io.hicache.core", "hicache-core", "io.hicache.sim.engine", "hicache-sim");
        Map<String, Set<String>> pub = Map.of("hicache-core", Set.of("io.hicache.core"), "hicache-sim",
            Set.of("io.hicache.sim.engine"));
        assertThat(forbidden("hicache-events", "io.hicache.events", "io.hicache.core.internal", owners, pub, API))
            .contains("not exported");
        assertThat(forbidden("hicache-events", "io.hicache.events", "io.hicache.core.spi", owners, pub, API))
            .as("the storage SPI is storage's door, no one else's").contains("not exported");
        assertThat(forbidden("hicache-events", "io.hicache.events", "io.hicache.sim.engine", owners, pub, API))
            .contains("may not use hicache-sim");
        assertThat(forbidden("hicache-events", "io.hicache.events", "io.hicache.core", owners, pub, API)).isNull();
        assertThat(forbidden("hicache-storage", "io.hicache.storage", "io.hicache.core.spi", owners, pub, API))
            .as("the storage SPI is a door").isNull();
        assertThat(forbidden("hicache-storage", "io.hicache.storage", "io.hicache.core.internal", owners, pub, API))
            .as("storage has no door into core internals").contains("not exported");
        assertThat(DOORS).filteredOn(d -> d.why().startsWith("EXCEPTION")).isEmpty();
    }

    /** Why {@code module} may not name {@code pkg}, or null when it may. */
    static String forbidden(String module, String ownPackage, String pkg, Map<String, String> ownerOf,
                            Map<String, Set<String>> publicOf, List<String> allowed) {
        String owner = owner(pkg, ownerOf);
        if (owner == null || owner.equals(module) || pkg.equals(ownPackage)) {
            return null; // a module name in a string we missed, a class name, or the module's own package
        }
        if (!allowed.contains(owner)) {
            return module + " may not use " + owner;
        }
        if (publicOf.getOrDefault(owner, Set.of()).contains(ownerPackage(pkg, ownerOf))) {
            return null;
        }
        for (Door d : DOORS) {
            if (d.module().equals(module) && (pkg.equals(d.packagePrefix()) || pkg.startsWith(d.packagePrefix() + "."))) {
                return null;
            }
        }
        return "not exported by " + owner + " to everyone, and no door of " + module + " leads there";
    }

    /** The package a qualified name's longest known package prefix names (a name may go on into a class). */
    private static String ownerPackage(String name, Map<String, String> ownerOf) {
        for (String p = name; ; p = p.substring(0, p.lastIndexOf('.'))) {
            if (ownerOf.containsKey(p)) {
                return p;
            }
            if (p.indexOf('.') < 0) {
                return null;
            }
        }
    }

    private static String owner(String name, Map<String, String> ownerOf) {
        String p = ownerPackage(name, ownerOf);
        return p == null ? null : ownerOf.get(p);
    }

    private static Set<String> unqualifiedExports(String module) {
        Path info = ROOT.resolve(module).resolve("src/main/java/module-info.java");
        Set<String> out = new TreeSet<>();
        if (Files.exists(info)) {
            Matcher e = EXPORTS.matcher(code(info));
            while (e.find()) {
                if (e.group(2) == null) {
                    out.add(e.group(1));
                }
            }
        }
        return out;
    }

    /** Main sources; the engine example's engine code is its tests, so they are checked too. */
    private static List<Path> sourcesChecked(String module) {
        List<Path> out = new ArrayList<>(mainSources(module));
        if (module.equals("engine-example")) {
            out.addAll(javaFiles(ROOT.resolve(module).resolve("src/test/java")));
        }
        return out;
    }

    private static List<Path> mainSources(String module) {
        return javaFiles(ROOT.resolve(module).resolve("src/main/java"));
    }

    private static List<Path> javaFiles(Path dir) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(p -> p.toString().endsWith(".java") && !p.endsWith("module-info.java")).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Set<String> reactorModules() {
        try {
            String pom = Files.readString(ROOT.resolve("pom.xml"), StandardCharsets.UTF_8);
            Set<String> out = new TreeSet<>();
            Matcher m = Pattern.compile("<module>([^<]+)</module>").matcher(pom);
            while (m.find()) {
                String dir = m.group(1);
                if (Files.isDirectory(ROOT.resolve(dir).resolve("src/main/java"))) {
                    out.add(dir);
                }
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The source without comments, string and character literals and text blocks. */
    static String code(Path f) {
        String s;
        try {
            s = Files.readString(f, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        StringBuilder out = new StringBuilder(s.length());
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (s.startsWith("//", i)) {
                i = s.indexOf('\n', i) < 0 ? s.length() : s.indexOf('\n', i);
            } else if (s.startsWith("/*", i)) {
                int end = s.indexOf("*/", i + 2);
                i = end < 0 ? s.length() : end + 2;
                out.append(' ');
            } else if (s.startsWith("\"\"\"", i)) {
                int end = s.indexOf("\"\"\"", i + 3);
                while (end > 0 && s.charAt(end - 1) == '\\') {
                    end = s.indexOf("\"\"\"", end + 1);
                }
                i = end < 0 ? s.length() : end + 3;
                out.append("\"\"");
            } else if (c == '"' || c == '\'') {
                int j = i + 1;
                while (j < s.length() && s.charAt(j) != c) {
                    j += s.charAt(j) == '\\' ? 2 : 1;
                }
                i = j + 1;
                out.append(c).append(c);
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    private static List<String> with(List<String> base, String... more) {
        List<String> out = new ArrayList<>(base);
        out.addAll(List.of(more));
        return List.copyOf(out);
    }
}
