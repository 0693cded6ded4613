package io.hicache.core.internal;

import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaStream;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.junit.jupiter.api.Test;

/**
 * Lincheck model check of the hook ring with the producers a lease revocation leaves (issue 27, defect 3): the hook of
 * a forward whose lease was revoked while it was inside {@code cudaEventRecord} has passed its revocation check and
 * publishes, while the next forward's handle, on another slot and thread, publishes its own layers. The submitter's
 * poller must still see each of the next forward's hooks exactly once, whole, as soon as it was published. Before the
 * fix the ring was one single-producer Disruptor ring, and two producers could claim one sequence (a lost or torn
 * message: the next forward aborted {@code TARGET_LAYER_MISSING} or never sealed); a multi-producer ring would not
 * lose it but would hide it behind the stalled thread's claimed and not yet published sequence. Each slot's own lane
 * is single-producer by construction.
 */
@Param(name = "layer", gen = IntGen.class, conf = "0:3")
public class HookRingProducersLincheckTest {
    private static final int LAYERS = 4;

    private final HookRing ring = new HookRing(2, 16);
    private final ForwardSlot stalledSlot = slot(0);
    private final ForwardSlot nextSlot = slot(1);
    private final ForwardHandle next;
    private final StringBuilder seen = new StringBuilder();
    private final HookRing.Handler onHook = e -> {
        if (e.slotIndex == nextSlot.index) { // the stalled forward's messages are stale: the submitter drops them by generation
            seen.append(e.kind).append(':').append(e.layer).append(e.generation == 9 ? "" : "!").append(' ');
        } else if (e.slotIndex != stalledSlot.index || e.generation != 3) {
            seen.append("torn ");
        }
        return true;
    };

    public HookRingProducersLincheckTest() {
        stalledSlot.reset(3);
        nextSlot.reset(9);
        next = new ForwardHandle(nextSlot, new HookRingLincheckTest.NoOpRuntime(), CudaStream.DEFAULT, ring,
            LAYERS, 0);
        next.begin(9);
    }

    private static ForwardSlot slot(int index) {
        return new ForwardSlot(index, new CudaEvent[LAYERS], new CudaEvent[0], new CudaEvent(1), new CudaEvent(2),
            new CudaEvent[LAYERS]);
    }

    /** The revoked forward's hook, past its check: it publishes a message of its stale generation. */
    @Operation(nonParallelGroup = "stalled")
    public boolean stalledHookPublishes(@Param(name = "layer") int layer) {
        return ring.tryPublish(stalledSlot, 3, HookEvent.TARGET, layer);
    }

    @Operation(nonParallelGroup = "next")
    public void nextForwardStoresLayer(@Param(name = "layer") int layer) {
        next.targetLayerStored(layer);
    }

    @Operation(nonParallelGroup = "submitter")
    public String poll() throws Exception {
        seen.setLength(0);
        ring.poll(onHook);
        return seen.toString();
    }

    @Test
    void modelCheck() {
        new ModelCheckingOptions().iterations(30).invocationsPerIteration(300).threads(3).actorsPerThread(3)
            .actorsBefore(0).actorsAfter(0).check(getClass());
    }
}
