package io.hicache.events;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Counts a stream's events and checks its block chains: {@code stored} and {@code removed} blocks per medium,
 * events per kind, whether every stored block's parent was held (stored on some medium and not since removed from
 * all) by the same data-parallel rank when the block was stored, and, stricter, whether it was held <em>on the
 * medium the block was stored on</em>: llm-d's indexer drops a block whose parent is not indexed on that medium and
 * rank, and everything stored below it, so a stream that passes {@link #parentsOkPerMedium()} loses nothing to such
 * an indexer. Not thread-safe.
 */
public final class KvEventTally {
    private final TreeMap<String, Long> stored = new TreeMap<>();
    private final TreeMap<String, Long> removed = new TreeMap<>();
    /** Per rank: block hash to a bit set of the media holding it. */
    private final Map<Integer, Map<Long, Integer>> held = new HashMap<>();
    private final Map<String, Integer> mediumBits = new HashMap<>();
    private long events;
    private long cleared;
    private long orphans;
    /** Per medium: stored events whose parent was not held on that medium by the same rank. */
    private final TreeMap<String, Long> mediumOrphans = new TreeMap<>();
    private long removedUnknown;

    /** An empty tally. */
    public KvEventTally() {
        // counts start at zero
    }

    /** Adds a batch. */
    public void accept(KvEventBatch batch) {
        Map<Long, Integer> h = held.computeIfAbsent(batch.dataParallelRank() == null ? -1 : batch.dataParallelRank(),
                r -> new HashMap<>());
        for (KvEvent e : batch.events()) {
            events++;
            switch (e) {
                case KvEvent.BlockStored s -> {
                    String m = String.valueOf(s.medium());
                    int bit = bit(m);
                    stored.merge(m, (long) s.blockHashes().length, Long::sum);
                    int parentMedia = s.parentBlockHash() == null ? -1 : h.getOrDefault(s.parentBlockHash(), 0);
                    if (parentMedia == 0) {
                        orphans++;
                    }
                    // the chain's later blocks have the block before them as parent, stored by this very event
                    mediumOrphans.merge(m, parentMedia != -1 && (parentMedia & bit) == 0 ? 1L : 0L, Long::sum);
                    for (long b : s.blockHashes()) {
                        h.merge(b, bit, (a, c) -> a | c);
                    }
                }
                case KvEvent.BlockRemoved r -> {
                    String m = String.valueOf(r.medium());
                    int bit = bit(m);
                    removed.merge(m, (long) r.blockHashes().length, Long::sum);
                    for (long b : r.blockHashes()) {
                        Integer was = h.get(b);
                        if (was == null || (was & bit) == 0) {
                            removedUnknown++;
                            continue;
                        }
                        if ((was & ~bit) == 0) {
                            h.remove(b);
                        } else {
                            h.put(b, was & ~bit);
                        }
                    }
                }
                case KvEvent.AllBlocksCleared c -> {
                    cleared++;
                    h.clear();
                }
            }
        }
    }

    private int bit(String medium) {
        return mediumBits.computeIfAbsent(medium, m -> 1 << Math.min(30, mediumBits.size()));
    }

    /** Blocks stored per medium. */
    public Map<String, Long> stored() {
        return new TreeMap<>(stored);
    }

    /** Blocks removed per medium. */
    public Map<String, Long> removed() {
        return new TreeMap<>(removed);
    }

    /** Events seen. */
    public long events() {
        return events;
    }

    /** AllBlocksCleared events seen. */
    public long cleared() {
        return cleared;
    }

    /** Stored events whose parent block was not held when they arrived. */
    public long orphans() {
        return orphans;
    }

    /**
     * Per medium that had a stored event: true when every block stored on it had its parent held on that same medium
     * (by the same rank) at the time, as llm-d's indexer requires.
     */
    public Map<String, Boolean> parentsOkPerMedium() {
        Map<String, Boolean> out = new TreeMap<>();
        mediumOrphans.forEach((m, n) -> out.put(m, n == 0));
        return out;
    }

    /** Per medium that had a stored event: stored events whose parent was not held on that medium. */
    public Map<String, Long> orphansPerMedium() {
        return new TreeMap<>(mediumOrphans);
    }

    /** Removed blocks that were not held on that medium. */
    public long removedUnknown() {
        return removedUnknown;
    }

    /** True when every stored block's parent was held when it was stored. */
    public boolean parentsOk() {
        return orphans == 0;
    }

    /** Blocks held now on some medium, all ranks together. */
    public long blocksHeld() {
        long n = 0;
        for (Map<Long, Integer> m : held.values()) {
            n += m.size();
        }
        return n;
    }
}
