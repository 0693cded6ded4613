package io.hicache.serve.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class GridFitTest {
    private static final int[] T = {1, 16, 64, 128, 256};
    private static final int[] C = {0, 128, 512, 1024, 2048, 3584};

    private static double truth(int t, int c) {
        return t == 1 ? 2.5 + 0.002 * c : 4 + 1.6 * t + 0.003 * c + 0.00045 * t * c + 0.0008 * t * t;
    }

    @Test
    void aGridOfTheForwardsShapeIsKeptAndOneNoisyCellIsPulledBack() {
        double[][] raw = new double[T.length][C.length];
        for (int i = 0; i < T.length; i++) {
            for (int j = 0; j < C.length; j++) {
                raw[i][j] = truth(T[i], C[j]);
            }
        }
        double[][] exact = GridFit.fit(T, C, raw);
        for (int i = 0; i < T.length; i++) {
            for (int j = 0; j < C.length; j++) {
                assertThat(exact[i][j]).isCloseTo(truth(T[i], C[j]), within(1e-6 * truth(T[i], C[j])));
            }
        }
        raw[3][0] *= 1.8; // a burst of load on the machine while that cell ran
        raw[0][2] *= 1.5;
        double[][] fit = GridFit.fit(T, C, raw);
        assertThat(fit[3][0] / truth(128, 0)).isBetween(0.85, 1.2);
        assertThat(fit[0][2] / truth(1, 512)).isBetween(0.85, 1.25);
        assertThat(raw[3][0]).isEqualTo(truth(128, 0) * 1.8); // the input is left alone
    }
}
