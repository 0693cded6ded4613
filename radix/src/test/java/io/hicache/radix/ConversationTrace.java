package io.hicache.radix;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/** Loads the bundled Mooncake conversation trace's {@code hash_ids} with a tiny hand-written parser. Test helper. */
final class ConversationTrace {

    static final String RELATIVE = "traces/conversation_trace.jsonl";

    private ConversationTrace() {
    }

    static Path locate() {
        String rootProp = System.getProperty("hicache.repo.root");
        if (rootProp != null && !rootProp.isBlank()) {
            Path p = Paths.get(rootProp).resolve(RELATIVE);
            if (Files.isRegularFile(p)) {
                return p;
            }
        }
        for (Path dir = Paths.get(System.getProperty("user.dir")).toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path p = dir.resolve(RELATIVE);
            if (Files.isRegularFile(p)) {
                return p;
            }
        }
        throw new IllegalStateException("cannot find " + RELATIVE + " above " + System.getProperty("user.dir"));
    }

    /** @return one int[] of hash ids per request, in file order */
    static List<int[]> load() throws IOException {
        List<int[]> out = new ArrayList<>();
        for (String line : Files.readAllLines(locate())) {
            if (!line.isBlank()) {
                out.add(parseHashIds(line));
            }
        }
        return out;
    }

    static int[] parseHashIds(String line) {
        int k = line.indexOf("\"hash_ids\"");
        if (k < 0) {
            throw new IllegalArgumentException("no hash_ids in line: " + line);
        }
        int open = line.indexOf('[', k);
        int close = line.indexOf(']', open);
        int[] buf = new int[16];
        int n = 0;
        int i = open + 1;
        while (i < close) {
            char c = line.charAt(i);
            if (c >= '0' && c <= '9') {
                int v = 0;
                while (i < close && line.charAt(i) >= '0' && line.charAt(i) <= '9') {
                    v = v * 10 + (line.charAt(i) - '0');
                    i++;
                }
                if (n == buf.length) {
                    buf = java.util.Arrays.copyOf(buf, n * 2);
                }
                buf[n++] = v;
            } else {
                i++;
            }
        }
        return java.util.Arrays.copyOf(buf, n);
    }
}
