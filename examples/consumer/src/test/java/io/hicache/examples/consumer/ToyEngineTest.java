package io.hicache.examples.consumer;

import io.hicache.core.BackupState;
import io.hicache.core.LoadHandle;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runs the toy engine against the installed artifacts and checks what an engine team would look at. */
class ToyEngineTest {

    @Test
    void theToyEngineBacksUpLoadsBackAndShowsUpInPrometheus() throws Exception {
        ToyEngine.Result r = ToyEngine.run();
        assertFalse(r.backups().isEmpty(), "request 1 reserved backups");
        assertTrue(r.backups().stream().allMatch(b -> b.state() == BackupState.COMMITTED), r.backups().toString());
        assertNotNull(r.load(), "request 2 is a host hit and loads back");
        assertEquals(LoadHandle.State.LOADED, r.load().state());
        assertEquals(64, r.deviceHitTokensAfterLoad());
        String committed = "hicache_backup_committed_total{cache=\"toy-engine\",rank=\"0\"} " + r.backups().size();
        assertTrue(r.scrape().lines().anyMatch(l -> l.startsWith(committed)), () -> "no '" + committed + "' in\n"
            + r.scrape());
        assertEquals(64, r.cachedTokensOfRequest2(), "request 2's cached_tokens");
        // each prompt token counted once, on the tier it came from: request 2's re-match is no device hit
        assertTrue(r.scrape().lines().anyMatch(l -> l.startsWith("hicache_tokens_served_total")
            && l.contains("tier=\"host\"") && l.endsWith(" 64.0")), r.scrape());
        assertTrue(r.scrape().lines().anyMatch(l -> l.startsWith("hicache_tokens_served_total")
            && l.contains("tier=\"device\"") && l.endsWith(" 0.0")), r.scrape());
        assertEquals("io.hicache.examples.consumer", ToyEngine.class.getModule().getName(),
            "the test runs on the module path");
    }
}
