package io.hicache.testkit;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Compiles a one-class engine module ({@code module probe { requires <module>; }}) with javac on the module path, to
 * test a module boundary as an engine sees it: code using the exported API compiles, code naming an internal is
 * refused ("not visible"). The module path is the running test's class path reduced to the named libraries' main
 * classes or jars (a test's own {@code test-classes} never), so the probe sees exactly what a consumer of those
 * artifacts would.
 *
 * <p>Immutable; any thread. Each {@link #compile} writes only under the directory it is given.
 */
public final class ProbeModule {
    private final String requires;
    private final String[] markers;

    private ProbeModule(String requires, String[] markers) {
        this.requires = requires;
        this.markers = markers;
    }

    /**
     * A probe module that requires {@code module}, compiled against {@code artifacts}: Maven artifact ids (e.g.
     * {@code "hicache-core"}, {@code "agrona"}), each matching a reactor module's directory ({@code /id/}) or a jar
     * ({@code /id-<version>.jar}) on the class path.
     *
     * @throws IllegalArgumentException when no artifact is named
     */
    public static ProbeModule requiring(String module, String... artifacts) {
        if (artifacts.length == 0) {
            throw new IllegalArgumentException("name the artifacts the probe module compiles against");
        }
        String[] m = new String[artifacts.length * 2];
        for (int i = 0; i < artifacts.length; i++) {
            m[2 * i] = "/" + artifacts[i] + "/";
            m[2 * i + 1] = "/" + artifacts[i] + "-";
        }
        return new ProbeModule(module, m);
    }

    /** The module path: the class path entries of the named artifacts (main classes and jars, never test classes). */
    public String modulePath() {
        List<String> keep = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            String n = e.replace('\\', '/');
            if (n.endsWith("/test-classes") || n.endsWith("/test-classes/")) {
                continue;
            }
            for (String m : markers) {
                if (n.contains(m)) {
                    keep.add(e);
                    break;
                }
            }
        }
        return String.join(File.pathSeparator, keep);
    }

    /**
     * Compiles {@code package probe; <imports> public class Engine { <body> }} in module {@code probe} under
     * {@code dir}.
     *
     * @return javac's errors, or {@code ""} when the probe compiled
     * @throws IOException when the sources cannot be written under {@code dir}
     * @throws IllegalStateException when the running JDK has no system Java compiler
     */
    public String compile(Path dir, String imports, String body) throws IOException {
        Path src = dir.resolve("src");
        Files.createDirectories(src.resolve("probe"));
        Files.writeString(src.resolve("module-info.java"), "module probe { requires " + requires + "; }\n");
        Files.writeString(src.resolve("probe/Engine.java"),
            "package probe;\n" + imports + "\npublic class Engine {\n" + body + "\n}\n");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        if (javac == null) {
            throw new IllegalStateException("no system Java compiler: run the tests on a JDK, not a JRE");
        }
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = javac.run(null, null, err, "-d", dir.resolve("out").toString(), "--module-path", modulePath(),
            src.resolve("module-info.java").toString(), src.resolve("probe/Engine.java").toString());
        String out = err.toString(StandardCharsets.UTF_8);
        return rc == 0 ? "" : out.isEmpty() ? "javac failed" : out;
    }

    /** What a probe's run ended with: its exit status ({@code -1}: killed at the timeout) and its output. */
    public record Run(int exitStatus, String output) {
    }

    /**
     * Runs the probe {@link #compile compiled} under {@code dir} (its body declares {@code public static void
     * main(String[])}) in a JVM of its own, on the module path only: {@code java <jvmArgs> -p <its classes>:<the
     * module path> -m probe/probe.Engine}, as an engine's launcher would, with no other flag.
     *
     * @return its exit status and output (stdout and stderr together)
     * @throws IOException when the JVM cannot be started
     * @throws InterruptedException if interrupted while waiting for it
     */
    public Run run(Path dir, long timeoutSeconds, String... jvmArgs) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(List.of(jvmArgs));
        cmd.add("-p");
        cmd.add(dir.resolve("out") + File.pathSeparator + modulePath());
        cmd.add("-m");
        cmd.add("probe/probe.Engine");
        Path log = dir.resolve("run.log");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!p.waitFor(timeoutSeconds, java.util.concurrent.TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            return new Run(-1, Files.readString(log, StandardCharsets.UTF_8));
        }
        return new Run(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
    }
}
