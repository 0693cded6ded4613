package io.hicache.sim.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.hicache.events.KvEventSubscriber;
import io.hicache.events.KvEventTally;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code hicache-sim kv-events}: a KV-event subscriber (vLLM's wire format, from this simulator, a JVM engine or
 * vLLM itself) that repairs gaps through the replay endpoint and reports what the stream said: blocks stored and
 * removed per medium, batches, the last sequence, whether the sequences were contiguous after replay, whether
 * every parent block was held when its child was stored, and whether it was held on the child's own medium.
 */
@Command(name = "kv-events", mixinStandardHelpOptions = true,
        description = {"Subscribe to a KV-event stream, repair gaps through replay, and report it.",
                "Exits once the replay endpoint has answered and no batch arrived for --idle-s seconds."})
final class KvEventsCommand implements Callable<Integer> {
    private final Main.Env env;

    @Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--connect", paramLabel = "ENDPOINT", required = true,
            description = "The publisher's PUB endpoint, e.g. tcp://HOST:5557.")
    String connect;

    @Option(names = "--replay", paramLabel = "ENDPOINT", description = "Its replay endpoint, e.g. tcp://HOST:5558.")
    String replay;

    @Option(names = "--topic", paramLabel = "TOPIC", defaultValue = "", description = "Topic to subscribe to (default: all).")
    String topic;

    @Option(names = "--idle-s", paramLabel = "S", defaultValue = "5",
            description = "Stop after this many seconds without a batch (default 5).")
    double idleSeconds;

    @Option(names = "--max-s", paramLabel = "S", defaultValue = "600",
            description = "Stop after this many seconds in any case (default 600).")
    double maxSeconds;

    @Option(names = "--json", paramLabel = "FILE", description = "Write the report as JSON here.")
    Path json;

    KvEventsCommand(Main.Env env) {
        this.env = env;
    }

    @Override
    public Integer call() throws IOException {
        CommandLine cl = spec.commandLine();
        if (!(idleSeconds > 0) || !(maxSeconds > 0)) {
            throw RunPlan.usage(cl, "--idle-s and --max-s must be > 0, got " + idleSeconds + " and " + maxSeconds);
        }
        RunPlan.requireDirectoryOf(cl, env, json);
        KvEventTally tally = new KvEventTally();
        KvEventSubscriber.Result r;
        try (KvEventSubscriber sub = new KvEventSubscriber(connect, replay, topic)) {
            r = sub.run(Duration.ofMillis((long) (idleSeconds * 1000)), Duration.ofMillis((long) (maxSeconds * 1000)),
                    tally::accept);
        } catch (IllegalArgumentException e) {
            throw RunPlan.usage(cl, e.getMessage());
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("stored", tally.stored());
        out.put("removed", tally.removed());
        out.put("batches", r.batches());
        out.put("events", tally.events());
        out.put("last_sequence", r.lastSequence());
        out.put("contiguous", r.contiguous());
        out.put("parents_ok", tally.parentsOk());
        out.put("orphans", tally.orphans());
        out.put("parents_ok_per_medium", tally.parentsOkPerMedium());
        out.put("orphans_per_medium", tally.orphansPerMedium());
        out.put("removed_unknown", tally.removedUnknown());
        out.put("cleared", tally.cleared());
        out.put("blocks_held", tally.blocksHeld());
        out.put("replay_requests", r.replayRequests());
        out.put("replay_answered", r.replayAnswered());
        out.put("malformed", r.malformed());
        if (json != null) {
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
                    .writeValue(env.workDir().resolve(json).toFile(), out);
        }
        env.out().println(String.format(Locale.ROOT,
                "kv-events: %d batches, last sequence %d, contiguous %s, parents ok %s (per medium %s), stored %s, "
                        + "removed %s", r.batches(), r.lastSequence(), r.contiguous(), tally.parentsOk(),
                tally.parentsOkPerMedium(), tally.stored(), tally.removed()));
        if (replay != null && !r.replayAnswered()) {
            env.err().println("hicache-sim: error: the replay endpoint " + replay + " did not answer");
            return 1;
        }
        return 0;
    }
}
