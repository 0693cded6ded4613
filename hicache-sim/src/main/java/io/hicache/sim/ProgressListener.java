package io.hicache.sim;

/**
 * Receives replay progress from a {@link SimulationEngine}. Called on the engine's thread only;
 * implementations need not be thread-safe. {@link #onRequestsDone(long)} is called once per request
 * and must not allocate or block.
 */
public interface ProgressListener {

    /** A listener that ignores everything. */
    ProgressListener NONE = new ProgressListener() {
        @Override
        public void onStart(String task, long expectedRequests) {
        }

        @Override
        public void onRequestsDone(long done) {
        }

        @Override
        public void onFinish() {
        }
    };

    /**
     * A replay starts.
     *
     * @param task             short name of the run, e.g. {@code layered}
     * @param expectedRequests requests expected, or -1 when unknown
     */
    void onStart(String task, long expectedRequests);

    /** {@code done} requests have been processed so far. */
    void onRequestsDone(long done);

    /** The replay ended (normally or not). */
    void onFinish();
}
