package io.hicache.sim.cli;

import io.hicache.sim.trace.ReadOptions;
import io.hicache.sim.trace.TraceFormat;
import io.hicache.sim.trace.TraceTimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * How a replay reads its trace's time, order and sizes ({@code --time-unit}, {@code --sort}, {@code --skip-oversized}),
 * shared by every replaying subcommand. Filled by picocli; null or false means "not given".
 */
final class TraceReadOptions {
    @Option(names = "--time-unit", paramLabel = "s|ms|us",
            description = "Unit of the trace's timestamps (default: the format's: mooncake ms, bailian s; hicache "
                    + "traces give ms by name, timestamp_ms). Time is measured from the first arrival.")
    String timeUnit;

    @Option(names = "--sort",
            description = "Replay a trace whose timestamps go backwards in timestamp order, counting the records "
                    + "that were out of order (without it such a trace is refused with the line).")
    boolean sort;

    @Option(names = "--skip-oversized",
            description = "Skip (and count) prompts larger than the device's KV capacity instead of refusing the "
                    + "trace with the prompt's line.")
    boolean skipOversized;

    /** The read options these flags ask for on {@code format}; refuses a unit the format does not take. */
    ReadOptions options(CommandLine cl, TraceFormat format) {
        TraceTimeUnit unit = null;
        if (timeUnit != null) {
            try {
                unit = TraceTimeUnit.byName(timeUnit);
            } catch (IllegalArgumentException e) {
                throw RunPlan.usage(cl, "--time-unit: " + e.getMessage());
            }
            if (format == TraceFormat.HICACHE && unit != TraceTimeUnit.MS) {
                throw RunPlan.usage(cl, "--time-unit " + unit + " does not apply to a hicache trace: its times are "
                        + "timestamp_ms, milliseconds by name (convert the log again with 'convert --time-unit "
                        + unit + "' if its times were in " + unit + ")");
            }
        }
        return new ReadOptions(unit, sort, Long.MAX_VALUE, null, skipOversized);
    }
}
