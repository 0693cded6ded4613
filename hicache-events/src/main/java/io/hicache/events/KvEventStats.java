package io.hicache.events;

/**
 * A snapshot of a {@link KvEventPublisher}'s counters.
 *
 * @param batchesSent          batches handed to the PUB socket, numbered from 0 (one number is left unused after
 *                             each drain that found records lost, see {@code blocksDropped})
 * @param eventsSent           events in those batches
 * @param blocksSent           page records in those batches
 * @param blocksDropped        blocks lost: overwritten in a full queue (a node's commit or removal is one record
 *                             there, counted once however many pages it had), or still queued when close gave up
 * @param sendFailures         batches the PUB socket refused (they stay in the replay buffer)
 * @param replayRequests       well-formed replay requests answered
 * @param replayMalformed      replay requests ignored as malformed (no reply)
 * @param replayBatchesSent    batches sent as replies
 */
public record KvEventStats(long batchesSent, long eventsSent, long blocksSent, long blocksDropped, long sendFailures,
                           long replayRequests, long replayMalformed, long replayBatchesSent) {
}
