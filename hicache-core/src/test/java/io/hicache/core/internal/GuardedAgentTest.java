package io.hicache.core.internal;

import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import org.agrona.concurrent.Agent;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The one error path of the agents in both threading modes: what escapes a duty cycle is counted in
 * {@link Metric#AGENT_ERRORS} and the cycle ends as if idle; only a fatal {@link VirtualMachineError} is rethrown
 * (after being counted). Before, INVOKER mode rethrew everything from {@code doAgentWork()} uncounted while DEDICATED
 * mode counted it and Agrona's runner then killed the agent's thread on any {@link Error}.
 */
class GuardedAgentTest {
    private final HiCacheMetrics metrics = new HiCacheMetrics();
    private final AgentErrors errors = new AgentErrors(metrics);

    @Test
    void anExceptionOrANonFatalErrorIsCountedAndTheAgentGoesOn() throws Exception {
        Throwable[] next = {new IllegalStateException("bug"), new AssertionError("assertion"), new StackOverflowError()};
        int[] calls = {0};
        GuardedAgent agent = new GuardedAgent(failing(() -> {
            Throwable t = next[calls[0]++];
            if (t instanceof Error e) {
                throw e;
            }
            throw (RuntimeException) t;
        }), errors);
        for (int i = 0; i < next.length; i++) {
            assertThat(agent.doWork()).isZero();
        }
        assertThat(metrics.get(Metric.AGENT_ERRORS)).isEqualTo(3);
        assertThat(errors.distinct()).isEqualTo(3);
    }

    @Test
    void aFatalVirtualMachineErrorIsCountedAndRethrown() {
        GuardedAgent agent = new GuardedAgent(failing(() -> {
            throw new OutOfMemoryError("injected");
        }), errors);
        assertThatThrownBy(agent::doWork).isInstanceOf(OutOfMemoryError.class);
        assertThat(metrics.get(Metric.AGENT_ERRORS)).isEqualTo(1);
    }

    private static Agent failing(Runnable work) {
        return new Agent() {
            @Override
            public int doWork() {
                work.run();
                return 1;
            }

            @Override
            public String roleName() {
                return "test-agent";
            }
        };
    }
}
