package io.hicache.sim;

import io.hicache.sim.report.SimResult;
import io.hicache.sim.trace.TraceFormatException;
import io.hicache.sim.trace.TraceSource;

/**
 * Replays a trace under one configuration and reports what happened. The command line creates one
 * engine per run through an {@link EngineFactory} and calls {@link #run} once, on its own thread.
 * An engine owns everything it builds (tree, pools, device) and releases it before returning.
 *
 * <p>Failure: a bad trace record stops the run with {@link TraceFormatException}
 * ({@code file:line: what is wrong}); any other failure is an unchecked exception. Either way the
 * command line exits with status 1.
 */
public interface SimulationEngine {

    /**
     * Replays {@code trace} under {@code config}.
     *
     * @param config   the configuration (capacities in simulated tokens)
     * @param trace    the trace; call {@link TraceSource#open()} for a fresh pass
     * @param progress receives {@code onStart}, one {@code onRequestsDone} per request, {@code onFinish}
     * @return the counters and the configuration, ready for JSON and HTML
     * @throws TraceFormatException a trace record is malformed
     */
    SimResult run(SimConfig config, TraceSource trace, ProgressListener progress);
}
