package io.hicache.sim.cli;

import io.hicache.sim.ProgressListener;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

import java.io.PrintStream;

/**
 * A terminal progress bar on standard error (me.tongfei:progressbar), one bar per run. Used only
 * when standard output is a terminal. Owned by the engine's thread; updates the bar every 64
 * requests.
 */
final class ProgressBarListener implements ProgressListener {
    private final PrintStream stream;
    private ProgressBar bar;
    private long lastDone;

    ProgressBarListener(PrintStream stream) {
        this.stream = stream;
    }

    @Override
    public void onStart(String task, long expectedRequests) {
        bar = new ProgressBarBuilder()
                .setTaskName(task)
                .setInitialMax(expectedRequests)
                .setUnit(" req", 1)
                .setStyle(ProgressBarStyle.COLORFUL_UNICODE_BLOCK)
                .setConsumer(new ConsoleProgressBarConsumer(stream))
                .setUpdateIntervalMillis(200)
                .build();
    }

    @Override
    public void onRequestsDone(long done) {
        lastDone = done;
        if ((done & 63) == 0 && bar != null) {
            bar.stepTo(done);
        }
    }

    @Override
    public void onFinish() {
        if (bar != null) {
            bar.stepTo(lastDone);
            bar.close();
            bar = null;
        }
    }
}
