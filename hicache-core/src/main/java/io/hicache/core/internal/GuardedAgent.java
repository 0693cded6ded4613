package io.hicache.core.internal;

import org.agrona.concurrent.Agent;

/**
 * The one error path of an agent, whichever thread steps it: an agent's own thread ({@code ThreadingMode.DEDICATED},
 * under an {@code AgentRunner}) or the caller's ({@code ThreadingMode.INVOKER}, through {@code doAgentWork}). Whatever
 * escapes a duty cycle of the wrapped agent is recorded by {@link AgentErrors} (counted in {@code AGENT_ERRORS},
 * logged once per distinct error) and the cycle ends as if idle, so the agent goes on in both modes; only a {@link
 * VirtualMachineError} other than a {@link StackOverflowError} is rethrown (after being recorded), as the JVM may be
 * unable to go on. The agents themselves already turn an error while handling one forward or load into the abort of
 * that item; this catches what escapes them. Allocation-free unless an error is recorded.
 */
final class GuardedAgent implements Agent {
    private final Agent agent;
    private final AgentErrors errors;

    GuardedAgent(Agent agent, AgentErrors errors) {
        this.agent = agent;
        this.errors = errors;
    }

    @Override
    public int doWork() {
        try {
            return agent.doWork();
        } catch (Throwable t) {
            errors.record(agent.roleName(), "a duty cycle", t);
            rethrowIfFatal(t);
            return 0;
        }
    }

    @Override
    public void onStart() {
        agent.onStart();
    }

    @Override
    public void onClose() {
        agent.onClose();
    }

    @Override
    public String roleName() {
        return agent.roleName();
    }

    /** Rethrows {@code t} if the JVM may be unable to go on after it (a {@link VirtualMachineError} but stack overflow). */
    static void rethrowIfFatal(Throwable t) {
        if (t instanceof VirtualMachineError vme && !(t instanceof StackOverflowError)) {
            throw vme;
        }
    }
}
