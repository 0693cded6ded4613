package io.hicache.sim.cli;

import io.hicache.sim.trace.MultiTurnGenerator;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code gen-multiturn}: writes a seeded multi-turn chat workload as a Mooncake trace (see
 * {@link MultiTurnGenerator}), to replay with {@code --trace FILE}. Defaults are those of SGLang's
 * {@code bench_multiturn.py} (256 clients, 5 rounds, 512-token questions, 64-token answers) at its highest
 * auto-run rate (16 requests/s).
 */
@Command(name = "gen-multiturn", mixinStandardHelpOptions = true,
        description = "Write a seeded multi-turn chat trace (Mooncake format) modelled on SGLang's bench_multiturn.py.")
final class GenerateMultiTurn implements Callable<Integer> {
    private final Main.Env env;
    @Spec
    CommandSpec spec;

    @Option(names = "--out", paramLabel = "FILE", required = true, description = "Trace file to write.")
    Path out;
    @Option(names = "--clients", paramLabel = "N", description = "Conversations (default 256).")
    int clients = 256;
    @Option(names = "--rounds", paramLabel = "N", description = "Turns per conversation (default 5).")
    int rounds = 5;
    @Option(names = "--request-tokens", paramLabel = "N", description = "Tokens of each new question (default 512).")
    int requestTokens = 512;
    @Option(names = "--output-tokens", paramLabel = "N", description = "Tokens of each answer (default 64).")
    int outputTokens = 64;
    @Option(names = "--rate", paramLabel = "PER_S", description = "Mean requests per second, Poisson (default 16).")
    double rate = 16;
    @Option(names = "--turn-gap-s", paramLabel = "S",
            description = "Least time between the sends of two turns of one conversation (default 2); a replay "
                    + "also holds a turn until the one it follows has finished (closed loop).")
    double turnGapS = 2;
    @Option(names = "--seed", paramLabel = "N", description = "Seed (default 1, as bench_multiturn.py).")
    long seed = 1;

    GenerateMultiTurn(Main.Env env) {
        this.env = env;
    }

    @Override
    public Integer call() {
        CommandLine cl = spec.commandLine();
        MultiTurnGenerator g;
        try {
            g = new MultiTurnGenerator(clients, rounds, requestTokens, outputTokens, rate, turnGapS, seed);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(cl, e.getMessage());
        }
        RunPlan.requireDirectoryOf(cl, env, out);
        Path file = env.workDir().resolve(out);
        long n = g.write(file);
        env.out().println("wrote " + file + " (" + n + " requests)");
        return CommandLine.ExitCode.OK;
    }
}
