package io.hicache.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.serve.engine.Calibration;
import io.hicache.serve.engine.EngineConfig;
import io.hicache.sim.model.EngineProfile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.SplittableRandom;

class CalibrateTest {
    private static final EngineConfig CFG = TestServer.config(512, 4096);

    /** A result shaped as a calibration's, with made-up figures that grow with tokens and context. */
    private static Calibration.Result result() {
        int[] t = Calibration.tokenAxis(CFG.chunkTokens());
        int[] c = Calibration.contextAxis(CFG.model().contextTokens(), CFG.chunkTokens());
        double[][] ms = new double[t.length][c.length];
        SplittableRandom rnd = new SplittableRandom(2);
        for (int i = 0; i < t.length; i++) {
            for (int j = 0; j < c.length; j++) {
                ms[i][j] = 0.5 + t[i] * 0.3 + c[j] * 0.01 + rnd.nextDouble() * 0.1;
            }
        }
        return new Calibration.Result(new Calibration.Grid(t, c, ms), new Calibration.Grid(t, c, ms), 0.07, new Calibration.Copy(2e9, 0.4),
            new Calibration.Copy(1e9, 0.2), 2048, 3);
    }

    @Test
    void theAxesAreAscendingAndStayInsideTheChunkAndTheContext() {
        int[] t = Calibration.tokenAxis(256);
        int[] c = Calibration.contextAxis(4096, 256);
        assertThat(t).startsWith(1).endsWith(256).isSorted().doesNotHaveDuplicates();
        assertThat(c).startsWith(0).isSorted().doesNotHaveDuplicates();
        assertThat(c[c.length - 1] + 256).isLessThan(4096);
        assertThat(Calibration.tokenAxis(16)).containsExactly(1, 16);
    }

    @Test
    void theProfileIsTheContractsFormatAndTheSimulatorReadsItBack(@TempDir Path dir) throws Exception {
        Calibration.Result m = result();
        Map<String, Object> p = Calibrate.profile(CFG, m, new Calibrate.Overheads(0.3, 12.5, 1.25, 1.1),
            new SpeedProbe.Reading(128, 7, 150.0), 40);
        Path f = dir.resolve("profile.json");
        Calibrate.write(f, p);
        try (var files = Files.list(dir)) {
            assertThat(files.toList()).containsExactly(f); // no temporary file left beside it
        }
        EngineProfile e = EngineProfile.parse(Files.readString(f), f.toString());
        assertThat(e.pageSize()).isEqualTo(CFG.pageSize());
        assertThat(e.chunkTokens()).isEqualTo(CFG.chunkTokens());
        assertThat(e.maxRunning()).isEqualTo(CFG.maxRunning());
        assertThat(e.model().layers()).isEqualTo(CFG.model().layers());
        assertThat(e.model().vocab()).isEqualTo(CFG.model().vocab());
        assertThat(e.model().contextTokens()).isEqualTo(CFG.model().contextTokens());
        assertThat(e.kvBytesPerToken()).isEqualTo(2048);
        assertThat(e.logitsMs()).isEqualTo(0.07);
        assertThat(e.stepOverheadMs()).isEqualTo(0.3);
        assertThat(e.requestOverheadMs()).isEqualTo(12.5);
        assertThat(e.prefillBusyFactor()).isEqualTo(1.25);
        assertThat(e.prefillServiceFactor()).isEqualTo(1.1);
        assertThat(e.load().bytesPerS()).isEqualTo(2e9);
        assertThat(e.backup().fixedMs()).isEqualTo(0.2);
        SplittableRandom rnd = new SplittableRandom(8);
        for (int k = 0; k < 200; k++) { // the calibration reads its grid as the simulator does, also past its edges
            double tokens = 1 + rnd.nextDouble() * 2 * CFG.chunkTokens();
            double context = rnd.nextDouble() * 1.5 * CFG.model().contextTokens();
            assertThat(Calibrate.interpolate(m.forward(), tokens, context))
                .isCloseTo(e.forwardMs(tokens, context), within(1e-3));
        }
    }

    /** The service factor reads a served prefill as the engine runs it: chunks from the first uncached token. */
    @Test
    void theServiceFactorReadsTheGridChunkByChunkFromTheMatchedPrefix() {
        Calibration.Result m = result();
        int chunk = CFG.chunkTokens();
        int half = chunk / 2;
        int quarter = chunk / 4;
        double fresh = ServiceFactor.gridMs(m, chunk, chunk + half, 0);
        assertThat(fresh).isCloseTo(Calibrate.interpolate(m.forward(), chunk, 0)
            + Calibrate.interpolate(m.forward(), half, chunk) + m.logitsMs(), within(1e-9));
        double cached = ServiceFactor.gridMs(m, chunk, chunk + half, quarter);
        assertThat(cached).isCloseTo(Calibrate.interpolate(m.forward(), chunk, quarter)
            + Calibrate.interpolate(m.forward(), half - quarter, quarter + chunk) + m.logitsMs(), within(1e-9));
        // a whole prompt matched: the engine computes its last token again
        assertThat(ServiceFactor.gridMs(m, chunk, 64, 64))
            .isCloseTo(Calibrate.interpolate(m.forward(), 1, 63) + m.logitsMs(), within(1e-9));
    }

    /**
     * On a real engine over HTTP: every turn of every synthetic conversation is priced, the follow-up turns over the
     * prefix the engine matched (read from its {@code cached_tokens}), and the factor is a finite positive ratio.
     */
    @Test
    void theServiceFactorPricesServedPrefillsOverTheirMatchedPrefixes() throws Exception {
        EngineConfig cfg = TestServer.config(4096, 0);
        Calibration.Result m = result(); // a grid that grows with tokens and context: every reading is positive
        try (TestServer s = TestServer.start(cfg)) {
            ServiceFactor.Measured f = ServiceFactor.measure(cfg, m, s.client(), s.url("/generate"),
                new SplittableRandom(3), 0);
            assertThat(f.prefills()).isEqualTo(ServiceFactor.CONVERSATIONS * ServiceFactor.TURNS);
            assertThat(f.withPrefix()).isEqualTo(ServiceFactor.CONVERSATIONS * (ServiceFactor.TURNS - 1));
            assertThat(f.factor()).isPositive().isLessThan(20);
        }
        // no room for two turns: 1, and nothing sent
        EngineConfig tiny = TestServer.config(64, 0);
        assertThat(ServiceFactor.measure(tiny, m, null, "http://127.0.0.1:1/generate", new SplittableRandom(3), 0))
            .isEqualTo(new ServiceFactor.Measured(1, 0, 0));
        // a grid that reads 0 where the probe runs cannot scale anything: 1, never a factor of 0 the profile refuses
        int[] t = m.forward().tokens();
        int[] c = m.forward().context();
        Calibration.Grid zero = new Calibration.Grid(t, c, new double[t.length][c.length]);
        Calibration.Result flat = new Calibration.Result(zero, zero, 0, m.load(), m.backup(), m.kvBytesPerToken(), 1);
        assertThat(ServiceFactor.measure(cfg, flat, null, "http://127.0.0.1:1/generate", new SplittableRandom(3), 0))
            .isEqualTo(new ServiceFactor.Measured(1, 0, 0));
    }

    @Test
    void aProfileWithAFieldMissingIsRefusedByTheSimulatorNamingIt(@TempDir Path dir) throws Exception {
        Map<String, Object> p = new java.util.LinkedHashMap<>(Calibrate.profile(CFG, result(),
            new Calibrate.Overheads(0.3, 12.5, 1, 1), null, 40));
        p.remove("backup");
        String json = new ObjectMapper().writeValueAsString(p);
        assertThatThrownBy(() -> EngineProfile.parse(json, "p.json")).hasMessageContaining("backup");
    }

    @Test
    void aProfileIntoAFolderThatDoesNotExistIsABadCommandLineAndWritesNothing(@TempDir Path dir) {
        ServeConfig cfg = ServeConfig.parse(new String[0], Map.of());
        assertThat(Calibrate.run(cfg, dir.resolve("no/such/profile.json"))).isEqualTo(2);
        assertThat(dir.resolve("no")).doesNotExist();
        assertThatThrownBy(() -> Calibrate.split(new String[] {"--calibrate"})).hasMessageContaining("--calibrate");
        var s = Calibrate.split(new String[] {"--model", "tiny", "--calibrate", "p.json", "--page-size", "16"});
        assertThat(s.getValue()).isEqualTo("p.json");
        assertThat(s.getKey()).containsExactly("--model", "tiny", "--page-size", "16");
    }
}
