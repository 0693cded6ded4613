package io.hicache.sim.cli;

import io.hicache.sim.Suggest;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.UnmatchedArgumentException;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * How a usage error is reported: one line {@code hicache-sim: <what is wrong>}, with "did you mean" for a mistyped
 * option or subcommand (the candidates are the command's own options and subcommands, so options added later are
 * covered), then where to find the options. Exit status 2. Stateless.
 */
final class UsageErrors {
    private UsageErrors() {
    }

    /** Prints {@code ex} to {@code err}; returns the usage exit status. */
    static int report(PrintStream err, ParameterException ex) {
        CommandLine cl = ex.getCommandLine();
        String message = ex.getMessage();
        if (ex instanceof UnmatchedArgumentException u && cl != null && !u.getUnmatched().isEmpty()) {
            message = unmatched(cl.getCommandSpec(), u.getUnmatched());
        }
        err.println("hicache-sim: " + message);
        err.println("Try 'hicache-sim " + subcommandName(cl) + "--help' for the options.");
        return CommandLine.ExitCode.USAGE;
    }

    private static String unmatched(CommandSpec spec, List<String> args) {
        String first = args.getFirst();
        if (first.startsWith("-")) {
            String name = first.contains("=") ? first.substring(0, first.indexOf('=')) : first;
            List<String> options = new ArrayList<>();
            for (OptionSpec o : spec.options()) {
                options.addAll(List.of(o.names()));
            }
            return "unknown option '" + name + "'" + Suggest.didYouMean(name, options);
        }
        List<String> subcommands = new ArrayList<>(spec.subcommands().keySet());
        if (!subcommands.isEmpty()) {
            return "unknown command '" + first + "'" + Suggest.didYouMean(first, subcommands) + "; commands: "
                    + String.join(", ", subcommands);
        }
        return "unexpected argument '" + first + "'" + (args.size() > 1 ? " (and " + (args.size() - 1) + " more)" : "");
    }

    private static String subcommandName(CommandLine c) {
        return c == null || c.getParent() == null ? "" : c.getCommandName() + " ";
    }
}
