package io.hicache.sim.cli;

import io.hicache.events.KvEventPublisher;
import io.hicache.events.KvEventStats;
import io.hicache.events.KvEventsConfig;
import io.hicache.sim.engine.SimKvEvents;
import picocli.CommandLine;
import picocli.CommandLine.Option;

import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * {@code replay}'s KV-event options: publish the run's events (vLLM's wire format) on a ZeroMQ endpoint, with a
 * replay endpoint, and keep both up for a while after the run so a late subscriber can replay everything.
 * The simulator's queues wait rather than drop (an offline run has no scheduler to protect), so the stream
 * is complete.
 */
final class KvEventsOptions {
    @Option(names = "--kv-events", paramLabel = "ENDPOINT",
            description = "Publish the run's KV events on this ZeroMQ PUB endpoint (e.g. tcp://*:5557); each "
                    + "instance is one data-parallel rank.")
    String endpoint;

    @Option(names = "--kv-events-replay", paramLabel = "ENDPOINT",
            description = "The replay endpoint (ROUTER) answering start-sequence requests (e.g. tcp://*:5558).")
    String replayEndpoint;

    @Option(names = "--kv-events-linger", paramLabel = "S",
            description = "Seconds the endpoints stay up after the run (default 0) so a late subscriber can replay.")
    Double lingerSeconds;

    /** Runs {@code run} with the publisher up when {@code --kv-events} is given; returns its status. */
    int around(Main.Env env, CommandLine cl, Callable<Integer> run) throws Exception {
        if (endpoint == null) {
            if (replayEndpoint != null || lingerSeconds != null) {
                throw RunPlan.usage(cl, "--kv-events-replay and --kv-events-linger need --kv-events ENDPOINT");
            }
            return run.call();
        }
        double linger = lingerSeconds == null ? 0 : lingerSeconds;
        if (!(linger >= 0) || linger > 86_400) {
            throw RunPlan.usage(cl, "--kv-events-linger must be in [0, 86400] seconds, got " + lingerSeconds);
        }
        KvEventsConfig config = KvEventsConfig.builder(endpoint).replayEndpoint(replayEndpoint)
                .overflow(KvEventsConfig.Overflow.WAIT).replayBufferBatches(1 << 20)
                .replayBufferBytes(KvEventsConfig.MAX_REPLAY_BYTES).closeFlushMillis(5_000)
                .build();
        KvEventPublisher publisher;
        try {
            publisher = KvEventPublisher.open(config);
        } catch (IllegalArgumentException e) {
            throw RunPlan.usage(cl, e.getMessage());
        }
        try {
            SimKvEvents.set(publisher);
            int status = run.call();
            publisher.flush(60, TimeUnit.SECONDS);
            KvEventStats s = publisher.stats();
            env.err().println(String.format(Locale.ROOT,
                    "kv-events: %d batches (%d events, %d blocks, %d dropped) on %s%s%s", s.batchesSent(),
                    s.eventsSent(), s.blocksSent(), s.blocksDropped(), publisher.endpoint(),
                    publisher.replayEndpoint() == null ? "" : ", replay on " + publisher.replayEndpoint(),
                    linger > 0 ? String.format(Locale.ROOT, "; lingering %.0f s", linger) : ""));
            if (linger > 0) {
                Thread.sleep((long) (linger * 1000));
            }
            return status;
        } finally {
            SimKvEvents.set(null);
            publisher.close();
        }
    }
}
