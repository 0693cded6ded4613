package io.hicache.core;

/** How the controller's agents (submitter, completion) get their duty cycles. */
public enum ThreadingMode {
    /** Each agent on its own thread under an Agrona {@code AgentRunner} with the configured idle strategy. */
    DEDICATED,
    /**
     * No threads: the caller steps the agents with {@link HiCache#doAgentWork()}. The simulator and the deterministic tests use this.
     */
    INVOKER
}
