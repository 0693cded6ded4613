package io.hicache.sim;

/** An option value with a command-line spelling. */
public interface CliNamed {
    /** The spelling on the command line and in reports. */
    String cliName();

    /**
     * The constant of {@code type} spelled {@code name} (case-insensitive).
     *
     * @throws IllegalArgumentException unknown name; the message suggests the nearest spellings and lists the valid
     *                                  ones
     */
    static <E extends Enum<E> & CliNamed> E byName(Class<E> type, String what, String name) {
        StringBuilder valid = new StringBuilder();
        java.util.List<String> names = new java.util.ArrayList<>();
        for (E e : type.getEnumConstants()) {
            if (e.cliName().equalsIgnoreCase(name)) {
                return e;
            }
            valid.append(valid.isEmpty() ? "" : ", ").append(e.cliName());
            names.add(e.cliName());
        }
        throw new IllegalArgumentException("unknown " + what + " '" + name + "'" + Suggest.didYouMean(name, names)
                + "; valid values: " + valid);
    }
}
