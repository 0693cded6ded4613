package io.hicache.events;

/**
 * A decoded KV event (see {@link KvEventDecoder}): one of vLLM's three tagged arrays. Immutable records; the
 * arrays they hold belong to them (do not modify).
 */
public sealed interface KvEvent {

    /**
     * {@code ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium, lora_name]}.
     *
     * @param blockHashes     one hash per block, a chain: each block's parent is the one before
     * @param parentBlockHash the first block's parent, or null for a first block
     * @param tokenIds        the blocks' tokens, {@code blockSize} per block
     * @param blockSize       tokens per block
     * @param loraId          the LoRA id, or null
     * @param medium          where the blocks are now ("GPU", "CPU", "DISK", ...), or null
     * @param loraName        the LoRA name, or null
     */
    record BlockStored(long[] blockHashes, Long parentBlockHash, int[] tokenIds, int blockSize, Long loraId,
                       String medium, String loraName) implements KvEvent {
    }

    /**
     * {@code ["BlockRemoved", block_hashes, medium]}.
     *
     * @param blockHashes the blocks that left {@code medium}
     * @param medium      the medium they left, or null
     */
    record BlockRemoved(long[] blockHashes, String medium) implements KvEvent {
    }

    /** {@code ["AllBlocksCleared"]}. */
    record AllBlocksCleared() implements KvEvent {
    }
}
