package io.hicache.sim.cli;

import io.hicache.sim.BackupMode;
import io.hicache.sim.OptionSpellings;
import io.hicache.sim.StorageOptions;
import io.hicache.sim.SimConfig;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageWritePolicy;
import picocli.CommandLine;

/**
 * Validates the storage options of a run ({@code --storage} and friends) into {@link StorageOptions}, refusing bad
 * values and contradictions with a usage error (exit 2) that names the flag. Stateless.
 */
final class StoragePlan {
    private StoragePlan() {
    }

    /** The storage tier of the run, or null for none. */
    static StorageOptions build(CommandLine cl, Main.SimOptions o, Main.Kind kind, boolean noHost, BackupMode backupMode,
                                int pageSize) {
        boolean any = o.storage != null || o.storageCapacity != null || o.storageBandwidthGbps != null
                || o.storageLatencyUs != null || o.storageWritePolicy != null || o.prefetchPolicy != null
                || o.prefetchThresholdTokens != null;
        if (!any) {
            return null;
        }
        if (o.storage == null && o.storageCapacity == null) {
            throw RunPlan.usage(cl, firstGiven(o) + " needs a storage tier: add --storage model|file:DIR|redis://HOST:PORT"
                    + " or --storage-capacity-tokens");
        }
        StorageOptions.Kind storeKind;
        try {
            storeKind = o.storage == null ? StorageOptions.Kind.MODEL : StorageOptions.kindOf(o.storage);
        } catch (IllegalArgumentException e) {
            throw RunPlan.usage(cl, e.getMessage());
        }
        String shown = storeKind == StorageOptions.Kind.MODEL ? "model"
                : io.hicache.storage.PageStores.redact(o.storage);
        if (kind != Main.Kind.REPLAY) {
            throw RunPlan.usage(cl, "--storage " + shown + " runs with replay only (not " + kind.name().toLowerCase(
                    java.util.Locale.ROOT) + ")");
        }
        if (o.cacheOnly) {
            throw RunPlan.usage(cl, "--storage " + shown + " needs the timed engine; drop --cache-only");
        }
        if (noHost || backupMode == BackupMode.NONE) {
            throw RunPlan.usage(cl, "--storage " + shown + " needs a host tier: --host-capacity-tokens > 0 and a backup "
                    + "mode other than none");
        }
        long capacity = 0;
        if (o.storageCapacity != null) {
            if (storeKind != StorageOptions.Kind.MODEL) {
                throw RunPlan.usage(cl, "--storage-capacity-tokens applies to --storage model only, not " + shown);
            }
            capacity = RunPlan.tokens(cl, "--storage-capacity-tokens", o.storageCapacity);
            if (capacity == SimConfig.HOST_UNLIMITED) {
                capacity = 0;
            } else if (capacity < pageSize) {
                throw RunPlan.usage(cl, "--storage-capacity-tokens must be at least one page (" + pageSize
                        + " tokens) or inf, got " + o.storageCapacity);
            }
        }
        double gbps = o.storageBandwidthGbps == null ? StorageOptions.DEFAULT_BANDWIDTH_BYTES_PER_SECOND / 1e9
                : o.storageBandwidthGbps;
        if (!(gbps > 0) || gbps > 1e6) {
            throw RunPlan.usage(cl, "--storage-bandwidth-gbps must be in (0, 1e6] GB/s, got " + o.storageBandwidthGbps);
        }
        double us = o.storageLatencyUs == null ? StorageOptions.DEFAULT_LATENCY_NS / 1e3 : o.storageLatencyUs;
        if (!(us >= 0) || us > 1e9) {
            throw RunPlan.usage(cl, "--storage-latency-us must be in [0, 1e9] microseconds, got " + o.storageLatencyUs);
        }
        StorageWritePolicy write;
        PrefetchPolicy prefetch;
        try {
            write = o.storageWritePolicy == null ? StorageWritePolicy.WRITE_THROUGH
                    : OptionSpellings.storageWritePolicy(o.storageWritePolicy);
        } catch (IllegalArgumentException e) {
            throw RunPlan.usage(cl, "--storage-write-policy: " + e.getMessage());
        }
        try {
            prefetch = o.prefetchPolicy == null ? PrefetchPolicy.TIMEOUT
                    : OptionSpellings.prefetchPolicy(o.prefetchPolicy);
        } catch (IllegalArgumentException e) {
            throw RunPlan.usage(cl, "--prefetch-policy: " + e.getMessage());
        }
        int threshold = o.prefetchThresholdTokens == null ? 256 : o.prefetchThresholdTokens;
        if (threshold < 0) {
            throw RunPlan.usage(cl, "--prefetch-threshold-tokens must be >= 0, got " + threshold);
        }
        return new StorageOptions(storeKind, storeKind == StorageOptions.Kind.MODEL ? null : o.storage, capacity,
                gbps * 1e9, Math.round(us * 1e3), write, prefetch, threshold);
    }

    private static String firstGiven(Main.SimOptions o) {
        if (o.storageBandwidthGbps != null) {
            return "--storage-bandwidth-gbps";
        }
        if (o.storageLatencyUs != null) {
            return "--storage-latency-us";
        }
        if (o.storageWritePolicy != null) {
            return "--storage-write-policy";
        }
        if (o.prefetchPolicy != null) {
            return "--prefetch-policy";
        }
        return "--prefetch-threshold-tokens";
    }
}
