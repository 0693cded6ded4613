package io.hicache.sim;

/** An option value with a command-line spelling. */
public interface CliNamed {
    /** The spelling on the command line and in reports. */
    String cliName();

    /**
     * The constant of {@code type} spelled {@code name} (case-insensitive).
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid spellings
     */
    static <E extends Enum<E> & CliNamed> E byName(Class<E> type, String what, String name) {
        StringBuilder valid = new StringBuilder();
        for (E e : type.getEnumConstants()) {
            if (e.cliName().equalsIgnoreCase(name)) {
                return e;
            }
            valid.append(valid.isEmpty() ? "" : ", ").append(e.cliName());
        }
        throw new IllegalArgumentException("unknown " + what + " '" + name + "'; valid values: " + valid);
    }
}
