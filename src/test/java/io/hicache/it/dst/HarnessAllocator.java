package io.hicache.it.dst;

import io.hicache.core.DevicePageAllocator;

/**
 * The engine's device pool on one rank, given to loadBack. Rank 0 decides (refusing the first call when the
 * schedule says so, then granting from the free list if it can); the other ranks replay its decisions, as
 * identical scheduling would, and check they are asked for the same. The script of rank 0's decisions lives in
 * {@link LoadSteps}, which starts each loadBack. Each rank owns one; single-threaded.
 */
final class HarnessAllocator implements DevicePageAllocator {
    private static final int[] REFUSED = new int[0];
    private final DstHarness harness;
    private final Rank rank;
    private int scriptPos;

    HarnessAllocator(DstHarness harness, Rank rank) {
        this.harness = harness;
        this.rank = rank;
    }

    void beginCall() {
        scriptPos = 0;
    }

    boolean scriptDone() {
        return rank.r == 0 || scriptPos == harness.loadSteps.allocScript.size();
    }

    @Override
    public boolean allocate(int count, int[] out, int offset) {
        if (harness.closing) {
            return false;
        }
        int[] got;
        if (rank.r == 0) {
            if (harness.loadSteps.refuseNextAllocation) {
                harness.loadSteps.refuseNextAllocation = false;
                harness.count("load.allocationRefusedOnce");
                got = REFUSED;
            } else if (harness.devices.freeDevice.freePages() < count) {
                got = REFUSED;
            } else {
                got = new int[count];
                for (int i = 0; i < count; i++) {
                    got[i] = harness.devices.freeDevice.poll();
                    harness.devices.takeDevice(rank, got[i]);
                }
            }
            harness.loadSteps.allocScript.add(got);
        } else {
            if (scriptPos >= harness.loadSteps.allocScript.size()) {
                harness.fail("rank " + rank.r + " asks its device allocator for " + count
                    + " pages more often than rank 0");
            }
            got = harness.loadSteps.allocScript.get(scriptPos++);
            if (got != REFUSED && got.length != count) {
                harness.fail("rank " + rank.r + " asks its device allocator for " + count + " pages, rank 0 for "
                    + got.length);
            }
            if (got != REFUSED) {
                for (int p : got) {
                    harness.devices.takeDevice(rank, p);
                }
            }
        }
        if (got == REFUSED) {
            return false;
        }
        System.arraycopy(got, 0, out, offset, count);
        return true;
    }

    @Override
    public void free(int[] pages, int offset, int count) {
        for (int i = 0; i < count; i++) {
            harness.devices.releaseDevice(rank, pages[offset + i]);
        }
    }
}
