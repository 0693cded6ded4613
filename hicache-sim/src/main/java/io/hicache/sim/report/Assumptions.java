package io.hicache.sim.report;

/**
 * The "Assumptions" line of the text and HTML reports: where a run's times come from and where the documentation
 * compares them with a serving engine's measured times (docs/SIMULATION.md, {@value #VALIDATION_SECTION}). Stateless.
 */
public final class Assumptions {
    /** The section of docs/SIMULATION.md that compares predicted with measured figures. */
    public static final String VALIDATION_SECTION = "Validation against the serving engine";

    private Assumptions() {
    }

    /** The line of a run timed by the roofline of the model and GPU presets. */
    public static String roofline() {
        return "Assumptions: times are estimates of a roofline model of the --model and --gpu presets (hit ratios are "
                + "exact); docs/SIMULATION.md, \"" + VALIDATION_SECTION + "\", compares the simulator's times with a "
                + "measured serving engine.";
    }

    /**
     * The line of a run timed by an engine profile.
     *
     * @param file   the profile's file as given
     * @param engine the engine it was measured on (may be empty)
     * @param model  the model id it names
     */
    public static String profiled(String file, String engine, String model) {
        return "Assumptions: times from the engine profile " + file + " (" + (engine.isEmpty() ? "an engine" : engine)
                + ", model " + model + "), scheduled as that engine schedules (one prefill chunk, then a decode token "
                + "per decoding request, each step); hit ratios are exact; docs/SIMULATION.md, \"" + VALIDATION_SECTION
                + "\", gives measured against predicted figures (scripts/validate-sim).";
    }
}
