package io.hicache.sim.cli;

import io.hicache.sim.HitStats;
import io.hicache.sim.report.SimResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every {@code hicache-sim} / {@code ./hicache-sim.sh} command line the README and docs/ show parses and passes the
 * simulator's checks (it would start; nothing runs), and every other tool's flag that docs/SIMULATION.md and the
 * README cite is marked as that tool's. Before: docs/SIMULATION.md cited {@code --hicache-ratio 2} as if the
 * simulator took it.
 */
class DocsCommandLinesTest {

    @TempDir
    Path work;

    /** A launcher token: {@code ./hicache-sim.sh}, {@code hicache-sim.sh} or {@code hicache-sim}, not a path under it. */
    private static final Pattern LAUNCHER = Pattern.compile("(?<![\\w./-])(?:\\./)?hicache-sim(?:\\.sh)?(?![\\w/.-])");
    /** Tools whose flags the docs cite beside the simulator's. */
    private static final List<String> OTHER_TOOLS = List.of("SGLang", "sglang", "vLLM", "Dynamo", "bench_multiturn",
            "LMCache", "Mooncake", "hicache-serve");

    record Command(String file, int line, String text) {
        @Override
        public String toString() {
            return file + ":" + line + ": " + text;
        }
    }

    private static List<Path> docs() throws IOException {
        Path root = MainTest.repoRoot();
        List<Path> out = new ArrayList<>();
        out.add(root.resolve("README.md"));
        try (Stream<Path> s = Files.list(root.resolve("docs"))) {
            s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(out::add);
        }
        return out;
    }

    /** Lines of code blocks (continuations joined) and inline code spans, with their line numbers. */
    private static List<Command> codeOf(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file);
        List<Command> out = new ArrayList<>();
        boolean block = false;
        String launcherVar = null;
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i);
            if (l.trim().startsWith("```")) {
                block = !block;
                continue;
            }
            if (block) {
                int at = i;
                StringBuilder joined = new StringBuilder(l);
                while (joined.toString().endsWith("\\") && i + 1 < lines.size()) {
                    joined.setLength(joined.length() - 1);
                    joined.append(' ').append(lines.get(++i).trim());
                }
                String code = joined.toString();
                Matcher var = Pattern.compile("^\\s*(\\w+)=\\./hicache-sim\\.sh\\s*$").matcher(code);
                if (var.find()) {
                    launcherVar = var.group(1);
                    continue;
                }
                if (launcherVar != null) {
                    code = code.replaceAll("\\$" + launcherVar + "(?!\\w)", "./hicache-sim.sh");
                }
                out.add(new Command(file.getFileName().toString(), at + 1, code));
            } else {
                Matcher m = Pattern.compile("`([^`]+)`").matcher(l);
                while (m.find()) {
                    out.add(new Command(file.getFileName().toString(), i + 1, m.group(1)));
                }
            }
        }
        return out;
    }

    /** The simulator's command lines in a piece of code: from each launcher to the end of its shell command. */
    private static List<Command> simCommands(Command code) {
        List<Command> out = new ArrayList<>();
        Matcher m = LAUNCHER.matcher(code.text());
        List<Integer> starts = new ArrayList<>();
        while (m.find()) {
            String before = code.text().substring(0, m.start()).trim();
            if (!before.endsWith("-pl") && !before.endsWith(",")) { // a Maven module list names the module, not the tool
                starts.add(m.end());
            }
        }
        for (int s : starts) {
            String rest = code.text().substring(s);
            int end = rest.length();
            for (String stop : new String[] {" #", "&&", ";", " > ", " 2>", " >/dev", "||"}) {
                int k = rest.indexOf(stop);
                if (k >= 0 && k < end) {
                    end = k;
                }
            }
            if (!rest.contains("[")) { // a pipe inside a synopsis' brackets is an alternative, not a pipe
                int k = rest.indexOf(" | ");
                if (k >= 0 && k < end) {
                    end = k;
                }
            }
            out.add(new Command(code.file(), code.line(), rest.substring(0, end).trim()));
        }
        return out;
    }

    private static List<String> words(String text) {
        List<String> out = new ArrayList<>();
        Matcher m = Pattern.compile("\"([^\"]*)\"|'([^']*)'|(\\S+)").matcher(text);
        while (m.find()) {
            String w = m.group(1) != null ? m.group(1) : m.group(2) != null ? m.group(2) : m.group(3);
            out.add(w.replaceAll("\\$\\{?\\w+}?", "x"));
        }
        return out;
    }

    /** A synopsis rather than a command: alternatives in brackets, ellipses or ALL-CAPS placeholders. */
    private static boolean synopsis(List<String> words) {
        for (String w : words) {
            if (w.contains("[") || w.contains("]") || w.contains("…") || w.contains("...") || w.matches("[A-Z][A-Z_]*")
                    || w.contains("<") || w.matches("--\\w[\\w-]*=?[A-Z][A-Z_:]*")) {
                return true;
            }
        }
        return false;
    }

    private Main.Env env(ByteArrayOutputStream err) {
        io.hicache.sim.EngineFactory none = config -> (c, trace, progress) ->
                SimResult.ofHits(c, trace.name(), new HitStats(c.blockTokens()), 0);
        return new Main.Env(none, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), work, MainTest.repoRoot(), false);
    }

    /** Every option name of the simulator, per subcommand ("" for the top level). */
    private static CommandSpec spec() {
        Main.Env env = new Main.Env(config -> null, System.out, System.err, Path.of("."), MainTest.repoRoot(), false);
        return Main.commandLine(env).getCommandSpec();
    }

    @Test
    void everyDocumentedCommandLineParses() throws IOException {
        List<String> failures = new ArrayList<>();
        int commands = 0;
        int synopses = 0;
        CommandSpec top = spec();
        for (Path doc : docs()) {
            for (Command code : codeOf(doc)) {
                for (Command c : simCommands(code)) {
                    List<String> args = words(c.text());
                    commands++;
                    if (args.size() == 1 && top.subcommands().containsKey(args.getFirst())) {
                        continue; // prose naming a subcommand (`hicache-sim keys` prints them)
                    }
                    if (synopsis(args)) {
                        synopses++;
                        CommandSpec sub = args.isEmpty() ? top : top.subcommands().containsKey(args.getFirst())
                                ? top.subcommands().get(args.getFirst()).getCommandSpec() : top;
                        for (String a : args) {
                            String name = a.replaceAll("^[\\[(]+", "").replaceAll("[=\\])].*$", "");
                            if (name.startsWith("--") && name.length() > 2 && sub.findOption(name) == null) {
                                failures.add(c + "  (no option " + name + " in '" + sub.name() + "')");
                            }
                        }
                        continue;
                    }
                    for (int i = 0; i + 1 < args.size(); i++) {
                        if (args.get(i).equals("--trace")) {
                            Path t = work.resolve(args.get(i + 1).replaceFirst("^\\w+:", ""));
                            Files.createDirectories(t.toAbsolutePath().getParent());
                            if (!Files.exists(t)) {
                                Files.writeString(t, "");
                            }
                        }
                    }
                    ByteArrayOutputStream err = new ByteArrayOutputStream();
                    int rc = Main.check(env(err), args.toArray(String[]::new));
                    if (rc != 0) {
                        failures.add(c + "  -> " + err.toString(StandardCharsets.UTF_8).lines().findFirst().orElse(""));
                    }
                }
            }
        }
        assertThat(failures).as("documented command lines that do not parse").isEmpty();
        assertThat(commands).as("command lines found").isGreaterThan(40);
        assertThat(commands - synopses).as("concrete command lines checked").isGreaterThan(30);
    }

    @Test
    void otherToolsFlagsAreMarkedAsTheirs() throws IOException {
        Set<String> ours = new HashSet<>();
        collect(spec(), ours);
        List<String> failures = new ArrayList<>();
        Path root = MainTest.repoRoot();
        for (Path doc : List.of(root.resolve("README.md"), root.resolve("docs/SIMULATION.md"))) {
            List<String> lines = Files.readAllLines(doc);
            for (Command code : codeOf(doc)) {
                String t = code.text().trim();
                boolean ownCommand = !LAUNCHER.matcher(t).find() && t.matches("^(scripts/|bench/|\\./|jar |jextract |mvn |java |"
                        + "python|bash |curl |redis-).*");
                Matcher f = Pattern.compile("(?<![\\w-])--[a-z][a-z0-9-]*").matcher(t);
                while (f.find()) {
                    String flag = f.group();
                    if (ours.contains(flag) || ownCommand) {
                        continue;
                    }
                    String line = lines.get(code.line() - 1);
                    int at = line.indexOf(flag);
                    String before = line.substring(Math.max(0, at - 90), Math.max(0, at));
                    if (OTHER_TOOLS.stream().noneMatch(before::contains)) {
                        failures.add(code.file() + ":" + code.line() + ": " + flag + " is not a hicache-sim option "
                                + "and the text does not say whose it is");
                    }
                }
            }
        }
        assertThat(failures).isEmpty();
    }

    private static void collect(CommandSpec spec, Set<String> out) {
        for (OptionSpec o : spec.options()) {
            out.addAll(List.of(o.names()));
            if (o.negatable()) {
                for (String n : o.names()) {
                    out.add(n.replaceFirst("^--", "--no-"));
                }
            }
        }
        for (CommandLine sub : spec.subcommands().values()) {
            collect(sub.getCommandSpec(), out);
        }
    }
}
