package io.hicache.sim.engine;

import io.hicache.core.DevicePageAllocator;
import io.hicache.core.DevicePagePool;

/**
 * How the CP ranks of one instance share one {@link DevicePagePool}: identical scheduling gives every rank the
 * same ids, so rank 0's controller allocates from the pool through a {@link Recorder} and the other ranks'
 * controllers get the same answers from a {@link Mirror}. Scheduler thread only.
 */
final class RankMirroring {
    private RankMirroring() {
    }

    /**
     * The allocator rank 0 hands to its controller during one load-back: allocates from the pool and records
     * each answer so that the other ranks' {@link Mirror}s give the same answers (their trees make the same
     * calls in the same order). Scheduler thread only.
     */
    static final class Recorder implements DevicePageAllocator {
        private final DevicePagePool pool;
        private boolean[] results = new boolean[4];
        private int[][] pages = new int[4][];
        private int count;

        Recorder(DevicePagePool pool) {
            this.pool = pool;
        }

        void reset() {
            count = 0;
        }

        @Override
        public boolean allocate(int n, int[] out, int offset) {
            boolean ok = pool.allocate(n, out, offset);
            if (count == results.length) {
                results = java.util.Arrays.copyOf(results, count * 2);
                pages = java.util.Arrays.copyOf(pages, count * 2);
            }
            results[count] = ok;
            pages[count] = ok ? java.util.Arrays.copyOfRange(out, offset, offset + n) : null;
            count++;
            return ok;
        }

        @Override
        public void free(int[] p, int offset, int n) {
            pool.free(p, offset, n);
        }
    }

    /**
     * The allocator of ranks other than 0: replays the answers {@link Recorder} gave rank 0 for the same load
     * and frees nothing (rank 0 returns the shared ids to the pool). Scheduler thread only.
     */
    static final class Mirror implements DevicePageAllocator {
        private final Recorder source;
        private int next;

        Mirror(Recorder source) {
            this.source = source;
        }

        void reset() {
            next = 0;
        }

        @Override
        public boolean allocate(int n, int[] out, int offset) {
            if (next >= source.count) {
                throw new IllegalStateException("CP ranks diverged: rank 0 made " + source.count
                        + " device allocations for this load, another rank asks for more");
            }
            int i = next++;
            if (!source.results[i]) {
                return false;
            }
            if (source.pages[i].length != n) {
                throw new IllegalStateException("CP ranks diverged: rank 0 allocated " + source.pages[i].length
                        + " device pages, another rank asks for " + n);
            }
            System.arraycopy(source.pages[i], 0, out, offset, n);
            return true;
        }

        @Override
        public void free(int[] p, int offset, int n) {
            // rank 0 frees the shared ids
        }
    }
}
