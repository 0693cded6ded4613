package io.hicache.aeron;

import io.aeron.driver.MediaDriver;
import io.aeron.driver.ThreadingMode;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;

/**
 * Launches an Aeron media driver inside this JVM (one per host; every rank process on the host connects to its
 * directory). Small-machine defaults: one shared driver thread on a backoff idle strategy that parks up to
 * {@code maxParkNs} when idle, so rank processes sharing few cores are not starved; a production host with a core
 * to spare per rank should use {@code ThreadingMode.DEDICATED} with busy-spin or yielding idle strategies.
 */
public final class EmbeddedDriver {
    private EmbeddedDriver() {
    }

    /** Starts a driver on {@code aeronDir} (deleted on start and on close) with a backoff idle strategy. */
    public static MediaDriver launch(String aeronDir, long maxParkNs) {
        IdleStrategy idle = new BackoffIdleStrategy(10, 20, 1_000, maxParkNs);
        MediaDriver.Context ctx = new MediaDriver.Context()
            .aeronDirectoryName(aeronDir)
            .threadingMode(ThreadingMode.SHARED)
            .sharedIdleStrategy(idle)
            .ipcTermBufferLength(4 * 1024 * 1024)
            .dirDeleteOnStart(true)
            .dirDeleteOnShutdown(true);
        return MediaDriver.launch(ctx);
    }
}
