package io.hicache.sim.convert;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.agrona.collections.IntArrayList;
import org.agrona.collections.Long2LongHashMap;
import org.agrona.collections.Object2IntHashMap;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A byte-level BPE tokenizer read from a HuggingFace {@code tokenizer.json}, the file that ships with GPT-2, Llama 3,
 * Qwen 2/3, DeepSeek V3 and most current models: {@code model.type} {@code BPE} with its {@code vocab} and
 * {@code merges} (as {@code "a b"} strings or {@code ["a", "b"]} pairs) and {@code ignore_merges}; a
 * {@code pre_tokenizer} that is {@code ByteLevel} (with its GPT-2 split when {@code use_regex}) or a {@code Sequence}
 * of {@code Split} (regex or string, behaviour {@code Isolated}, or {@code Removed} inverted) and {@code ByteLevel}; a {@code normalizer} that is
 * none or {@code NFC}; {@code added_tokens} matched in the text before anything else (their {@code lstrip},
 * {@code rstrip} and {@code single_word} flags are not applied). Anything else (SentencePiece-style {@code Metaspace}
 * files, WordPiece, Unigram) is refused by {@link #load} with a message naming what it found: encodings would not
 * be the model's. Owned by one thread (a cache of encoded words).
 */
public final class BpeTokenizer implements Tokenizer {
    /** GPT-2's split, ByteLevel's own when {@code use_regex} is true. */
    static final String GPT2_SPLIT = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
    private static final int CACHE_WORDS = 1 << 16;
    /** Marks a split pattern whose gaps are dropped (HF's {@code Removed} inverted): an empty, never-failing group. */
    private static final String DROP_GAPS = "(?<hicacheDropGaps>)";

    private final String label;
    private final Object2IntHashMap<String> vocab;
    /** (left id << 32 | right id) → (rank << 32 | merged id). */
    private final Long2LongHashMap merges;
    private final boolean ignoreMerges;
    private final boolean nfc;
    private final List<Pattern> splits;
    private final boolean addPrefixSpace;
    private final Pattern added;
    private final Map<String, Integer> addedIds;
    private final char[] byteChars = byteToUnicode();
    private final Map<String, int[]> cache = new HashMap<>();

    private BpeTokenizer(String label, Object2IntHashMap<String> vocab, Long2LongHashMap merges, boolean ignoreMerges,
                         boolean nfc, List<Pattern> splits, boolean addPrefixSpace, Map<String, Integer> addedIds) {
        this.label = label;
        this.vocab = vocab;
        this.merges = merges;
        this.ignoreMerges = ignoreMerges;
        this.nfc = nfc;
        this.splits = splits;
        this.addPrefixSpace = addPrefixSpace;
        this.addedIds = addedIds;
        if (addedIds.isEmpty()) {
            this.added = null;
        } else {
            StringBuilder alt = new StringBuilder();
            addedIds.keySet().stream().sorted(Comparator.comparingInt(String::length).reversed())
                    .forEach(t -> alt.append(alt.isEmpty() ? "" : "|").append(Pattern.quote(t)));
            this.added = Pattern.compile(alt.toString());
        }
    }

    /**
     * Reads a {@code tokenizer.json}.
     *
     * @throws IllegalArgumentException the file is not a tokenizer this class encodes as the model does; the message
     *                                  names what it found
     * @throws IOException              the file cannot be read or is not JSON
     */
    public static BpeTokenizer load(Path file) throws IOException {
        JsonNode root;
        try (InputStream in = Files.newInputStream(file)) {
            root = new ObjectMapper().readTree(in);
        }
        String where = "tokenizer " + file.getFileName() + ": ";
        JsonNode model = root.path("model");
        String type = model.path("type").asText("");
        if (!type.equals("BPE")) {
            throw new IllegalArgumentException(where + "model type '" + type + "' is not supported; supported: "
                    + "byte-level BPE tokenizer.json files (GPT-2, Llama 3, Qwen 2/3, DeepSeek V3); or use --whitespace-tokens");
        }
        Object2IntHashMap<String> vocab = new Object2IntHashMap<>(-1);
        for (Map.Entry<String, JsonNode> e : model.path("vocab").properties()) {
            vocab.put(e.getKey(), e.getValue().asInt());
        }
        if (vocab.isEmpty()) {
            throw new IllegalArgumentException(where + "model.vocab is empty or missing");
        }
        List<Pattern> splits = new ArrayList<>();
        boolean[] prefixSpace = new boolean[1];
        readPreTokenizer(root.path("pre_tokenizer"), splits, prefixSpace, where);
        boolean nfc = readNormalizer(root.path("normalizer"), where);
        Long2LongHashMap merges = new Long2LongHashMap(-1);
        int rank = 0;
        for (JsonNode m : model.path("merges")) {
            String a;
            String b;
            if (m.isArray() && m.size() == 2) {
                a = m.get(0).asText();
                b = m.get(1).asText();
            } else {
                String s = m.asText();
                int sp = s.indexOf(' ', 1);
                if (sp < 0) {
                    throw new IllegalArgumentException(where + "merge " + rank + " '" + s + "' is not two symbols");
                }
                a = s.substring(0, sp);
                b = s.substring(sp + 1);
            }
            int ia = vocab.getValue(a);
            int ib = vocab.getValue(b);
            int im = vocab.getValue(a + b);
            if (ia >= 0 && ib >= 0 && im >= 0) {
                long key = ((long) ia << 32) | (ib & 0xFFFF_FFFFL);
                if (!merges.containsKey(key)) {
                    merges.put(key, ((long) rank << 32) | (im & 0xFFFF_FFFFL));
                }
            }
            rank++;
        }
        Map<String, Integer> addedIds = new HashMap<>();
        for (JsonNode t : root.path("added_tokens")) {
            if (t.hasNonNull("content") && t.has("id")) {
                addedIds.put(t.get("content").asText(), t.get("id").asInt());
            }
        }
        String label = String.format(java.util.Locale.ROOT, "%s: byte-level BPE, %,d tokens, %,d merges",
                file.getFileName(), vocab.size() + addedIds.size(), rank);
        return new BpeTokenizer(label, vocab, merges, model.path("ignore_merges").asBoolean(false), nfc, splits,
                prefixSpace[0], addedIds);
    }

    private static void readPreTokenizer(JsonNode pre, List<Pattern> splits, boolean[] prefixSpace, String where) {
        String type = pre.path("type").asText("");
        List<JsonNode> steps = new ArrayList<>();
        if (type.equals("Sequence")) {
            pre.path("pretokenizers").forEach(steps::add);
        } else {
            steps.add(pre);
        }
        boolean byteLevel = false;
        for (JsonNode step : steps) {
            String t = step.path("type").asText("");
            if (byteLevel) {
                throw new IllegalArgumentException(where + "pre_tokenizer step '" + t + "' after ByteLevel is not supported");
            }
            switch (t) {
                case "Split" -> {
                    String behavior = step.path("behavior").asText("");
                    boolean invert = step.path("invert").asBoolean(false);
                    boolean isolated = behavior.equals("Isolated") && !invert;
                    if (!isolated && !(behavior.equals("Removed") && invert)) {
                        throw new IllegalArgumentException(where + "Split with behavior '" + behavior + "'"
                                + (invert ? " inverted" : "") + " is not supported (Isolated, or Removed inverted)");
                    }
                    JsonNode p = step.path("pattern");
                    String regex = p.has("Regex") ? p.get("Regex").asText() : Pattern.quote(p.path("String").asText());
                    // Removed + invert keeps only the matches: the text between them is dropped
                    splits.add(Pattern.compile(isolated ? regex : "(?:" + regex + ")" + DROP_GAPS,
                            Pattern.UNICODE_CHARACTER_CLASS));
                }
                case "ByteLevel" -> {
                    byteLevel = true;
                    prefixSpace[0] = step.path("add_prefix_space").asBoolean(false);
                    if (step.path("use_regex").asBoolean(true)) {
                        splits.add(Pattern.compile(GPT2_SPLIT, Pattern.UNICODE_CHARACTER_CLASS));
                    }
                }
                default -> throw new IllegalArgumentException(where + "pre_tokenizer '" + (t.isEmpty() ? "none" : t)
                        + "' is not supported; supported: ByteLevel, or a Sequence of Split and ByteLevel (byte-level"
                        + " BPE files); or use --whitespace-tokens");
            }
        }
        if (!byteLevel) {
            throw new IllegalArgumentException(where + "no ByteLevel pre_tokenizer: only byte-level BPE files are"
                    + " supported (SentencePiece-style Metaspace files are not); or use --whitespace-tokens");
        }
    }

    private static boolean readNormalizer(JsonNode n, String where) {
        if (n.isMissingNode() || n.isNull()) {
            return false;
        }
        String type = n.path("type").asText("");
        if (type.equals("NFC")) {
            return true;
        }
        if (type.equals("Sequence") && n.path("normalizers").isEmpty()) {
            return false;
        }
        throw new IllegalArgumentException(where + "normalizer '" + type + "' is not supported (none or NFC)");
    }

    @Override
    public void encode(String text, IntArrayList out) {
        if (added == null) {
            encodeOrdinary(text, out);
            return;
        }
        Matcher m = added.matcher(text);
        int at = 0;
        while (m.find()) {
            if (m.start() > at) {
                encodeOrdinary(text.substring(at, m.start()), out);
            }
            out.addInt(addedIds.get(m.group()));
            at = m.end();
        }
        if (at < text.length()) {
            encodeOrdinary(text.substring(at), out);
        }
    }

    private void encodeOrdinary(String text, IntArrayList out) {
        String t = nfc ? Normalizer.normalize(text, Normalizer.Form.NFC) : text;
        if (addPrefixSpace && !t.isEmpty() && !Character.isWhitespace(t.charAt(0))) {
            t = " " + t;
        }
        List<String> pieces = new ArrayList<>();
        pieces.add(t);
        for (Pattern split : splits) {
            List<String> next = new ArrayList<>();
            for (String piece : pieces) {
                isolate(split, piece, next);
            }
            pieces = next;
        }
        for (String piece : pieces) {
            for (int id : word(piece)) {
                out.addInt(id);
            }
        }
    }

    /** Splits {@code s} into the matches of {@code p} and the text between them (HF's {@code Isolated}). */
    private static void isolate(Pattern p, String s, List<String> out) {
        boolean keepGaps = !p.pattern().endsWith(DROP_GAPS);
        Matcher m = p.matcher(s);
        int at = 0;
        while (m.find()) {
            if (m.end() == m.start()) {
                continue;
            }
            if (m.start() > at && keepGaps) {
                out.add(s.substring(at, m.start()));
            }
            out.add(m.group());
            at = m.end();
        }
        if (at < s.length() && keepGaps) {
            out.add(s.substring(at));
        }
    }

    /** The ids of one pre-tokenized piece: its UTF-8 bytes as GPT-2's byte characters, merged by rank. */
    private int[] word(String piece) {
        int[] hit = cache.get(piece);
        if (hit != null) {
            return hit;
        }
        byte[] bytes = piece.getBytes(StandardCharsets.UTF_8);
        char[] chars = new char[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            chars[i] = byteChars[bytes[i] & 0xFF];
        }
        String mapped = new String(chars);
        int whole = vocab.getValue(mapped);
        int[] ids;
        if (ignoreMerges && whole >= 0) {
            ids = new int[] {whole};
        } else {
            ids = merge(chars, mapped);
        }
        if (cache.size() >= CACHE_WORDS) {
            cache.clear();
        }
        cache.put(piece, ids);
        return ids;
    }

    private int[] merge(char[] chars, String mapped) {
        int n = chars.length;
        int[] sym = new int[n];
        for (int i = 0; i < n; i++) {
            int id = vocab.getValue(String.valueOf(chars[i]));
            if (id < 0) {
                throw new IllegalArgumentException("tokenizer has no token for byte character '" + chars[i]
                        + "' of '" + mapped + "' (not a byte-level vocabulary)");
            }
            sym[i] = id;
        }
        while (n > 1) {
            long best = Long.MAX_VALUE;
            int at = -1;
            for (int i = 0; i + 1 < n; i++) {
                long v = merges.get(((long) sym[i] << 32) | (sym[i + 1] & 0xFFFF_FFFFL));
                if (v >= 0 && (v >>> 32) < (best >>> 32)) {
                    best = v;
                    at = i;
                }
            }
            if (at < 0) {
                break;
            }
            sym[at] = (int) best;
            System.arraycopy(sym, at + 2, sym, at + 1, n - at - 2);
            n--;
        }
        return java.util.Arrays.copyOf(sym, n);
    }

    /** GPT-2's {@code bytes_to_unicode}: printable bytes stand for themselves, the others for 256 + k. */
    private static char[] byteToUnicode() {
        char[] map = new char[256];
        int k = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            map[b] = printable ? (char) b : (char) (256 + k++);
        }
        return map;
    }

    @Override
    public String label() {
        return label;
    }

    @Override
    public boolean approximate() {
        return false;
    }
}
