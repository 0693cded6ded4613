package io.hicache.events;

import java.util.List;

/**
 * A decoded batch: the message's sequence and its payload {@code [ts, [event, ...], data_parallel_rank]}.
 *
 * @param sequence         the batch's sequence number
 * @param timestamp        seconds since the epoch when it was encoded
 * @param events           its events in order
 * @param dataParallelRank the publishing rank, or null when the payload had none
 */
public record KvEventBatch(long sequence, double timestamp, List<KvEvent> events, Integer dataParallelRank) {
}
