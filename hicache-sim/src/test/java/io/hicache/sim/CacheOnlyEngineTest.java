package io.hicache.sim;

import io.hicache.core.cp.OwnerLanes;
import io.hicache.radix.EvictionPolicy;
import io.hicache.core.WritePolicy;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.trace.TraceSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** The acceptance hit ratios of issue 7 on the bundled trace, and the cache-only semantics on small traces. */
class CacheOnlyEngineTest {

    @TempDir
    Path dir;

    static Path repoRoot() {
        return Paths.get(System.getProperty("hicache.repo.root", "..")).toAbsolutePath();
    }

    static TraceSource bundled() {
        return TraceSource.parse(TraceSource.BUNDLED_TRACE, repoRoot(), repoRoot(), Long.MAX_VALUE);
    }

    static SimConfig blockLevel(long device, long host) {
        SimConfig d = SimConfig.defaults(512);
        return new SimConfig(d.model(), d.gpu(), 1, 1, device, host, WritePolicy.WRITE_THROUGH, BackupMode.LAYERED,
                EvictionPolicy.LRU, 1, OwnerLanes.Standard.ROUND_ROBIN, 0, true, 0, 1.0);
    }

    @Test
    void unlimitedHostReproducesTheReferenceExactly() {
        CacheOnlyEngine engine = new CacheOnlyEngine();
        SimResult r = engine.run(blockLevel(SimConfig.defaultDeviceCapacityTokens(1, 512), SimConfig.HOST_UNLIMITED),
                bundled(), ProgressListener.NONE);
        assertThat(r.requests()).isEqualTo(12_031);
        assertThat(r.blocks()).isEqualTo(288_500);
        assertThat(Math.round(r.blockHitRatio() * 10_000) / 10_000.0).isEqualTo(0.3664);
        assertThat(Math.round(r.tokenHitRatio() * 10_000) / 10_000.0).isEqualTo(0.3736);
        assertThat(r.hostHitTokens()).isPositive();
        engine.tree().checkInvariants();
    }

    @Test
    void deviceOnlyLruAt5859BlocksLandsNearTheReference() {
        CacheOnlyEngine engine = new CacheOnlyEngine();
        SimResult r = engine.run(blockLevel(5_859, SimConfig.HOST_NONE), bundled(), ProgressListener.NONE);
        assertThat(r.blockHitRatio()).isCloseTo(0.1355, within(0.01));
        assertThat(r.hostHitTokens()).isZero();
        assertThat(r.backups().committed()).isZero();
        assertThat(engine.tree().devicePagesCached()).isLessThanOrEqualTo(5_859);
        engine.tree().checkInvariants();
    }

    private TraceSource tiny(String text) throws IOException {
        Path p = dir.resolve("tiny.jsonl");
        Files.writeString(p, text);
        return TraceSource.parse(p.toString(), dir, dir, Long.MAX_VALUE);
    }

    private static final String REPEATS = """
            {"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}
            {"timestamp": 1, "input_length": 1024, "output_length": 1, "hash_ids": [3, 4]}
            {"timestamp": 2, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}
            """;

    private static SimConfig tinyConfig(long device, long host, WritePolicy policy, BackupMode mode) {
        SimConfig d = SimConfig.defaults(512);
        return new SimConfig(d.model(), d.gpu(), 1, 1, device, host, policy, mode, EvictionPolicy.LRU, 1, OwnerLanes.Standard.ROUND_ROBIN,
                0, true, 0, 1.0);
    }

    @Test
    void deviceEvictionsDemoteToTheHostAndComeBackAsHostHits() throws IOException {
        for (WritePolicy policy : new WritePolicy[] {WritePolicy.WRITE_THROUGH, WritePolicy.WRITE_BACK}) {
            SimResult r = new CacheOnlyEngine().run(tinyConfig(2, 4, policy, BackupMode.LAYERED), tiny(REPEATS),
                    ProgressListener.NONE);
            assertThat(r.deviceHitTokens()).as(OptionSpellings.of(policy)).isZero();
            assertThat(r.hostHitTokens()).as(OptionSpellings.of(policy)).isEqualTo(2);
            assertThat(r.blockHitRatio()).as(OptionSpellings.of(policy)).isEqualTo(2.0 / 6);
        }
    }

    @Test
    void noHostTierOrNoBackupLosesEvictedBlocks() throws IOException {
        SimResult none = new CacheOnlyEngine().run(tinyConfig(2, 4, WritePolicy.WRITE_THROUGH, BackupMode.NONE),
                tiny(REPEATS), ProgressListener.NONE);
        SimResult noHost = new CacheOnlyEngine().run(tinyConfig(2, 0, WritePolicy.WRITE_THROUGH, BackupMode.LAYERED),
                tiny(REPEATS), ProgressListener.NONE);
        assertThat(none.blockHitRatio()).isZero();
        assertThat(noHost.blockHitRatio()).isZero();
        SimResult big = new CacheOnlyEngine().run(tinyConfig(4, 0, WritePolicy.WRITE_THROUGH, BackupMode.LAYERED),
                tiny(REPEATS), ProgressListener.NONE);
        assertThat(big.deviceHitTokens()).isEqualTo(2);
    }

    @Test
    void selectiveWriteThroughBacksUpOnlyNodesHitTwice() throws IOException {
        SimResult r = new CacheOnlyEngine().run(
                tinyConfig(2, 4, WritePolicy.WRITE_THROUGH_SELECTIVE, BackupMode.LAYERED), tiny(REPEATS),
                ProgressListener.NONE);
        assertThat(r.backups().committed()).isZero();
        assertThat(r.hostHitTokens()).isZero();
    }

    @Test
    void aFullHostRefusesBackupsAsNoRoom() throws IOException {
        SimResult r = new CacheOnlyEngine().run(tinyConfig(4, 2, WritePolicy.WRITE_THROUGH, BackupMode.LAYERED),
                tiny(REPEATS), ProgressListener.NONE);
        assertThat(r.backups().noRoom()).isPositive();
        assertThat(r.hostPoolPeakUtilization()).isEqualTo(1.0);
    }

    @Test
    void layeredAndAllLayersGiveTheSameHitRatios() {
        TraceSource t = TraceSource.parse(TraceSource.BUNDLED_TRACE, repoRoot(), repoRoot(), 2_000);
        SimConfig c = SimConfig.defaults(512).withCacheOnly(true);
        SimResult a = new CacheOnlyEngine().run(c, t, ProgressListener.NONE);
        SimResult b = new CacheOnlyEngine().run(c.withBackupMode(BackupMode.ALL_LAYERS), t, ProgressListener.NONE);
        assertThat(b.blockHitRatio()).isEqualTo(a.blockHitRatio());
        assertThat(b.hostHitTokens()).isEqualTo(a.hostHitTokens());
    }
}
