package io.hicache.core.internal;

import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.ArrayList;
import java.util.List;

/**
 * Leak and use-after-free accounting for a test class: every {@link SimulatedCudaRuntime} registered with {@link #track} while the
 * class runs must end with no live streams, events, device or host allocations, and
 * {@link HostKvPool#openPoolBytes()} must be back to its value before the class. A runtime whose context was
 * poisoned by an injected sticky error is exempt from the device-side counts (a poisoned context frees nothing,
 * as on a real device), not from the host-pool check.
 *
 * <p>Test classes run one at a time in a Surefire JVM; the registry is guarded by its own monitor for tests that
 * create runtimes on several threads.
 */
public final class LeakCheckExtension implements BeforeAllCallback, AfterAllCallback {
    private static final List<SimulatedCudaRuntime> TRACKED = new ArrayList<>();
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(LeakCheckExtension.class);

    /** Registers a runtime created by the running test class. */
    public static void track(SimulatedCudaRuntime runtime) {
        synchronized (TRACKED) {
            TRACKED.add(runtime);
        }
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        synchronized (TRACKED) {
            TRACKED.clear();
        }
        context.getStore(NS).put("openPoolBytes", HostKvPool.openPoolBytes());
    }

    @Override
    public void afterAll(ExtensionContext context) {
        StringBuilder leaks = new StringBuilder();
        int checked;
        synchronized (TRACKED) {
            checked = TRACKED.size();
            for (int i = 0; i < TRACKED.size(); i++) {
                SimulatedCudaRuntime rt = TRACKED.get(i);
                if (rt.useAfterFreeCount() != 0) {
                    leaks.append("\n  runtime #").append(i).append(": ").append(rt.useAfterFreeCount())
                        .append(" copies touched memory freed while they were queued: ").append(rt.useAfterFreeReports());
                }
                if (rt.stickyErrorCode() != 0) {
                    continue;
                }
                SimulatedCudaRuntime.LeakReport r = rt.leakReport();
                if (!r.clean()) {
                    leaks.append("\n  runtime #").append(i).append(": ").append(r);
                }
            }
            TRACKED.clear();
        }
        long before = context.getStore(NS).get("openPoolBytes", Long.class);
        long after = HostKvPool.openPoolBytes();
        if (after != before) {
            leaks.append("\n  HostKvPool.openPoolBytes() ").append(after).append(" after the class, ").append(before)
                .append(" before: host pools left open");
        }
        if (!leaks.isEmpty()) {
            throw new AssertionError(context.getRequiredTestClass().getSimpleName() + " leaked (" + checked
                + " simulated runtimes checked):" + leaks);
        }
    }
}
