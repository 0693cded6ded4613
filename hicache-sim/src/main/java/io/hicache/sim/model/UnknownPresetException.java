package io.hicache.sim.model;

/**
 * A preset name that no registry knows; the message suggests the nearest names and lists the valid ones. Immutable.
 */
public final class UnknownPresetException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /**
     * @param kind  what was looked up, e.g. {@code model}
     * @param name  the unknown name
     * @param valid the valid names, comma-separated
     */
    public UnknownPresetException(String kind, String name, String valid) {
        super("unknown " + kind + " '" + name + "'"
                + io.hicache.sim.Suggest.didYouMean(name, java.util.Arrays.asList(valid.split(",\\s*")))
                + "; valid " + kind + "s: " + valid);
    }
}
