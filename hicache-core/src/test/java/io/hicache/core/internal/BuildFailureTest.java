package io.hicache.core.internal;

import io.hicache.core.ThreadingMode;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.simulated.SimulatedCudaConfig;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code build()} either returns a working controller or releases everything it allocated: a failure injected at
 * each allocating runtime call in turn (host pools, streams, every event, the loader's stream and events), and at
 * the start of each agent thread, leaves the simulated device without live streams, events or memory, and no host
 * pool open. Before the fix, a failure after the pools were created (the loader, an agent start) leaked them.
 */
class BuildFailureTest {

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aFailureAtEachAllocationLeavesNothingBehind(ThreadingMode mode) {
        long poolsBefore = HostKvPool.openPoolBytes();
        int failures = 0;
        for (int k = 1; k < 10_000; k++) {
            SimulatedCudaRuntime rt = new SimulatedCudaRuntime(SimulatedCudaConfig.builder().seed(k).build());
            try {
                FaultInjectingRuntime faulty = new FaultInjectingRuntime(rt).failAllocationAt(k);
                HiCacheController c;
                try {
                    c = builder(faulty, rt, mode).build();
                } catch (CudaException e) {
                    assertThat(e.getMessage()).contains("injected");
                    failures++;
                    assertThat(rt.leakReport().clean()).as("after a failure at allocation %d: %s", k, rt.leakReport())
                        .isTrue();
                    assertThat(HostKvPool.openPoolBytes()).as("host pools after a failure at allocation %d", k)
                        .isEqualTo(poolsBefore);
                    continue;
                }
                assertThat(faulty.allocations()).as("a build that succeeded made fewer allocations than %d", k)
                    .isLessThan(k);
                c.close();
                assertThat(rt.leakReport().clean()).as("%s", rt.leakReport()).isTrue();
                break;
            } finally {
                rt.close();
            }
        }
        assertThat(failures).as("allocations failed one by one").isGreaterThan(10);
        assertThat(HostKvPool.openPoolBytes()).isEqualTo(poolsBefore);
    }

    @Test
    void aFailureStartingEitherAgentThreadStopsTheOtherAndLeavesNothingBehind() {
        long poolsBefore = HostKvPool.openPoolBytes();
        for (int failingAgent = 1; failingAgent <= 2; failingAgent++) {
            SimulatedCudaRuntime rt = new SimulatedCudaRuntime(SimulatedCudaConfig.builder().seed(1).build());
            try {
                AtomicInteger made = new AtomicInteger();
                int fail = failingAgent;
                Supplier<IdleStrategy> idle = () -> {
                    if (made.incrementAndGet() == fail) {
                        throw new IllegalStateException("injected: no thread for agent " + fail);
                    }
                    return new BusySpinIdleStrategy();
                };
                ControllerBuilder b = builder(rt, rt, ThreadingMode.DEDICATED).idleStrategy(idle);
                assertThatThrownBy(b::build).hasMessageContaining("injected");
                assertThat(rt.leakReport().clean()).as("%s", rt.leakReport()).isTrue();
                assertThat(HostKvPool.openPoolBytes()).isEqualTo(poolsBefore);
                assertThat(agentThreadsAlive()).as("agent threads left running").isZero();
            } finally {
                rt.close();
            }
        }
    }

    private static long agentThreadsAlive() {
        return Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.isAlive() && t.getName().startsWith("hicache-")).count();
    }

    @Test
    void previousBatchLoadOverlapNeedsAReason() {
        SimulatedCudaRuntime rt = new SimulatedCudaRuntime(SimulatedCudaConfig.builder().seed(1).build());
        try {
            assertThatThrownBy(() -> builder(rt, rt, ThreadingMode.INVOKER)
                .loadOverlap(io.hicache.core.LoadOverlap.PREVIOUS_BATCH, " ").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PREVIOUS_BATCH needs a reason");
            assertThatThrownBy(() -> builder(rt, rt, ThreadingMode.INVOKER).loadOverlap(null, null).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("loadOverlap");
            assertThat(rt.leakReport().clean()).isTrue();
        } finally {
            rt.close();
        }
    }

    private static ControllerBuilder builder(io.hicache.cuda.CudaRuntime runtime, SimulatedCudaRuntime sim,
                                                     ThreadingMode mode) {
        DeviceKvLayout target = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(3).pageSizeTokens(4)
            .bytesPerTokenPerBuffer(16).pageCount(16).packedFrom(0x1000_0000L).build();
        DeviceKvLayout draft = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(1).pageSizeTokens(4)
            .bytesPerTokenPerBuffer(16).pageCount(16).packedFrom(0x2000_0000L).build();
        return HiCacheController.builder().runtime(runtime).targetLayout(target).draftLayout(draft).hostPages(8)
            .threadingMode(mode).clock(sim::nowNs).maxForwardsInFlight(2).checkThread(false);
    }
}
