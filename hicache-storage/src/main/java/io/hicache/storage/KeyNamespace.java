package io.hicache.storage;

import io.hicache.core.memory.HostLayout;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Objects;

/**
 * Everything that makes the KV bytes of one page differ, digested into the seed of every key chain, so
 * two configurations can never read each other's bytes and one configuration on two machines makes the
 * same keys. {@link #NONE} has no seed: its chains are exactly SGLang's keys.
 *
 * <p><b>Seed</b> ({@link #seed()}) = SHA-256 over, in this order:
 * <ol>
 *   <li>the ASCII tag {@code hicache.l3.namespace.v1} and one zero byte (a format version);</li>
 *   <li>{@code model_id}: the model's identity (name and revision), UTF-8;</li>
 *   <li>{@code kv_dtype}: the KV cache element type, e.g. {@code bfloat16}, {@code fp8_e4m3}, UTF-8;</li>
 *   <li>{@code page_size_tokens}: tokens (or bigram units) per page;</li>
 *   <li>{@code host_layout}: the {@link HostLayout} name, because an object holds the page's bytes in the
 *       pool's memory order;</li>
 *   <li>{@code role}: {@code target} or {@code draft} (draft/MTP KV has its own layers and bytes);</li>
 *   <li>{@code tp_size}, {@code tp_rank}: tensor-parallel size and rank (a rank holds its share of the heads);
 *       1 and 0 when not sharded;</li>
 *   <li>{@code cp_size}, {@code cp_lane}: context-parallel group size and this lane (each lane stores the
 *       part of a page it owns); 1 and 0 without CP;</li>
 *   <li>{@code lora_adapter_id}: the LoRA adapter, empty for the base model, UTF-8;</li>
 *   <li>{@code salt}: a user/tenant salt, empty for none, UTF-8: tenants with different salts never share keys.</li>
 * </ol>
 * Strings are written as a 4-byte little-endian length then their UTF-8 bytes; integers as 4-byte
 * little-endian. The encoding is unambiguous, so no two field tuples produce the same input.
 *
 * <p><b>Draft/MTP keys.</b> The draft part of a page is stored beside its target part, under a key of its own
 * ({@link #draftKey}): {@code SHA-256(draft_seed ‖ target_key)}, where {@code draft_seed} ({@link #draftSeed()})
 * is this namespace's seed with the role {@code draft} (for {@link #NONE}, SHA-256 of the ASCII
 * {@code hicache.l3.draft.none.v1} and a zero byte). The target keys stay SGLang's chains; a draft key names the
 * same page (its target key digests the whole prefix) in the draft namespace, one hash per page.
 *
 * <p>Immutable value; thread-safe. {@link #toString()} prints every field except the salt (a tenant
 * secret).
 */
public final class KeyNamespace {
    private static final byte[] TAG = "hicache.l3.namespace.v1\0".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] NONE_DRAFT_TAG = "hicache.l3.draft.none.v1\0".getBytes(StandardCharsets.US_ASCII);

    /** No seed: keys are exactly SGLang's {@code get_hash_str} chains. (Declared after the tags it digests.) */
    public static final KeyNamespace NONE = new KeyNamespace();

    /** Which model's KV a page holds. */
    public enum Role {
        /** The served (target) model. */
        TARGET,
        /** The draft / MTP model of speculative decoding. */
        DRAFT
    }

    private final String modelId;
    private final String kvDtype;
    private final int pageSizeTokens;
    private final HostLayout hostLayout;
    private final Role role;
    private final int tpSize;
    private final int tpRank;
    private final int cpSize;
    private final int cpLane;
    private final String loraAdapterId;
    private final String salt;
    private final PageKey seed;
    private final PageKey draftSeed;

    private KeyNamespace() {
        modelId = "";
        kvDtype = "";
        pageSizeTokens = 0;
        hostLayout = null;
        role = Role.TARGET;
        tpSize = 1;
        tpRank = 0;
        cpSize = 1;
        cpLane = 0;
        loraAdapterId = "";
        salt = "";
        seed = null;
        MessageDigest md = PageKeys.sha256();
        md.update(NONE_DRAFT_TAG);
        draftSeed = PageKey.wrap(md.digest());
    }

    private KeyNamespace(Builder b) {
        modelId = b.modelId;
        kvDtype = b.kvDtype;
        pageSizeTokens = b.pageSizeTokens;
        hostLayout = b.hostLayout;
        role = b.role;
        tpSize = b.tpSize;
        tpRank = b.tpRank;
        cpSize = b.cpSize;
        cpLane = b.cpLane;
        loraAdapterId = b.loraAdapterId;
        salt = b.salt;
        seed = computeSeed(role);
        draftSeed = role == Role.DRAFT ? seed : computeSeed(Role.DRAFT);
    }

    /** A builder; model id, KV dtype, page size and host layout are required. */
    public static Builder builder() {
        return new Builder();
    }

    /** The seed of every chain in this namespace, or null for {@link #NONE}. */
    public PageKey seed() {
        return seed;
    }

    /**
     * The seed of the draft/MTP keys that go with this namespace's target keys: the seed of this namespace with
     * the role {@code draft}; for {@link #NONE} a fixed digest (see the class comment). Never null.
     */
    public PageKey draftSeed() {
        return draftSeed;
    }

    /**
     * The key of the draft/MTP part of the page whose target key (in this namespace) is {@code targetKey}:
     * {@code SHA-256(draftSeed() ‖ targetKey)}. Cold path (allocates a digest).
     *
     * @throws IllegalArgumentException when {@code targetKey} is null
     */
    public PageKey draftKey(PageKey targetKey) {
        if (targetKey == null) {
            throw new IllegalArgumentException("targetKey must not be null");
        }
        MessageDigest md = PageKeys.sha256();
        md.update(draftSeed.toBytes());
        md.update(targetKey.toBytes());
        return PageKey.wrap(md.digest());
    }

    /** True for {@link #NONE}. */
    public boolean isNone() {
        return seed == null;
    }

    /**
     * The keys of a token sequence cut into pages of this namespace's page size (for {@link #NONE}, pass
     * the page size to {@link PageKeys#chain} directly).
     *
     * @throws IllegalStateException on {@link #NONE}, which has no page size
     */
    public PageKey[] chain(int[] tokens) {
        requirePageSize();
        return PageKeys.chain(seed, tokens, 0, tokens.length, pageSizeTokens);
    }

    /** The bigram (EAGLE) keys of {@code tokens} ({@code n + 1} ids, {@code n} units) in this namespace. */
    public PageKey[] bigramChain(int[] tokens) {
        requirePageSize();
        return PageKeys.bigramChain(seed, tokens, pageSizeTokens);
    }

    /** The same namespace for another CP lane (each lane's part of a page has its own key). */
    public KeyNamespace withCpLane(int lane) {
        requirePageSize();
        return toBuilder().cp(cpSize, lane).build();
    }

    /** The same namespace for the draft/MTP model's KV. */
    public KeyNamespace withRole(Role newRole) {
        requirePageSize();
        return toBuilder().role(newRole).build();
    }

    private Builder toBuilder() {
        return new Builder().modelId(modelId).kvDtype(kvDtype).pageSizeTokens(pageSizeTokens)
                .hostLayout(hostLayout).role(role).tp(tpSize, tpRank).cp(cpSize, cpLane)
                .loraAdapterId(loraAdapterId).salt(salt);
    }

    private void requirePageSize() {
        if (seed == null) {
            throw new IllegalStateException("the none namespace has no page size; use PageKeys.chain with one");
        }
    }

    public String modelId() {
        return modelId;
    }

    public String kvDtype() {
        return kvDtype;
    }

    public int pageSizeTokens() {
        return pageSizeTokens;
    }

    public HostLayout hostLayout() {
        return hostLayout;
    }

    public Role role() {
        return role;
    }

    public int tpSize() {
        return tpSize;
    }

    public int tpRank() {
        return tpRank;
    }

    public int cpSize() {
        return cpSize;
    }

    public int cpLane() {
        return cpLane;
    }

    public String loraAdapterId() {
        return loraAdapterId;
    }

    private PageKey computeSeed(Role r) {
        MessageDigest md = PageKeys.sha256();
        md.update(TAG);
        putString(md, modelId);
        putString(md, kvDtype);
        putInt(md, pageSizeTokens);
        putString(md, hostLayout.name());
        putString(md, r == Role.TARGET ? "target" : "draft");
        putInt(md, tpSize);
        putInt(md, tpRank);
        putInt(md, cpSize);
        putInt(md, cpLane);
        putString(md, loraAdapterId);
        putString(md, salt);
        return PageKey.wrap(md.digest());
    }

    private static void putString(MessageDigest md, String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        putInt(md, b.length);
        md.update(b);
    }

    private static void putInt(MessageDigest md, int v) {
        md.update((byte) v);
        md.update((byte) (v >>> 8));
        md.update((byte) (v >>> 16));
        md.update((byte) (v >>> 24));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof KeyNamespace n && Objects.equals(seed, n.seed);
    }

    @Override
    public int hashCode() {
        return Objects.hashCode(seed);
    }

    @Override
    public String toString() {
        if (seed == null) {
            return "KeyNamespace{none}";
        }
        return "KeyNamespace{model=" + modelId + ", dtype=" + kvDtype + ", pageSize=" + pageSizeTokens
                + ", layout=" + hostLayout + ", role=" + role + ", tp=" + tpRank + "/" + tpSize
                + ", cp=" + cpLane + "/" + cpSize + ", lora=" + (loraAdapterId.isEmpty() ? "-" : loraAdapterId)
                + ", salt=" + (salt.isEmpty() ? "none" : "set") + ", seed=" + seed.hex().substring(0, 16) + "…}";
    }

    /** Builds a {@link KeyNamespace}; not thread-safe. */
    public static final class Builder {
        private String modelId;
        private String kvDtype;
        private int pageSizeTokens;
        private HostLayout hostLayout;
        private Role role = Role.TARGET;
        private int tpSize = 1;
        private int tpRank;
        private int cpSize = 1;
        private int cpLane;
        private String loraAdapterId = "";
        private String salt = "";

        private Builder() {
        }

        /** Model name and revision (required, non-empty). */
        public Builder modelId(String v) {
            modelId = v;
            return this;
        }

        /** KV element type, e.g. {@code bfloat16} (required, non-empty). */
        public Builder kvDtype(String v) {
            kvDtype = v;
            return this;
        }

        /** Tokens (or bigram units) per page (required, >= 1). */
        public Builder pageSizeTokens(int v) {
            pageSizeTokens = v;
            return this;
        }

        /** The host pool's layout (required). */
        public Builder hostLayout(HostLayout v) {
            hostLayout = v;
            return this;
        }

        /** Target (default) or draft. */
        public Builder role(Role v) {
            role = v;
            return this;
        }

        /** Tensor-parallel size (>= 1) and rank in [0, size); default 1, 0. */
        public Builder tp(int size, int rank) {
            tpSize = size;
            tpRank = rank;
            return this;
        }

        /** Context-parallel size (>= 1) and lane in [0, size); default 1, 0. */
        public Builder cp(int size, int lane) {
            cpSize = size;
            cpLane = lane;
            return this;
        }

        /** LoRA adapter id; empty (default) for the base model. */
        public Builder loraAdapterId(String v) {
            loraAdapterId = v == null ? "" : v;
            return this;
        }

        /** Tenant/user salt; empty (default) for none. Never printed. */
        public Builder salt(String v) {
            salt = v == null ? "" : v;
            return this;
        }

        /**
         * Validates and builds.
         *
         * @throws IllegalArgumentException naming the field when a value is missing or out of range
         */
        public KeyNamespace build() {
            if (modelId == null || modelId.isEmpty()) {
                throw new IllegalArgumentException("modelId must be non-empty");
            }
            if (kvDtype == null || kvDtype.isEmpty()) {
                throw new IllegalArgumentException("kvDtype must be non-empty");
            }
            if (pageSizeTokens < 1) {
                throw new IllegalArgumentException("pageSizeTokens must be >= 1, was " + pageSizeTokens);
            }
            if (hostLayout == null) {
                throw new IllegalArgumentException("hostLayout must be set");
            }
            if (role == null) {
                throw new IllegalArgumentException("role must be set");
            }
            if (tpSize < 1 || tpRank < 0 || tpRank >= tpSize) {
                throw new IllegalArgumentException("tp rank must be in [0, tpSize) with tpSize >= 1, was rank "
                        + tpRank + " of " + tpSize);
            }
            if (cpSize < 1 || cpLane < 0 || cpLane >= cpSize) {
                throw new IllegalArgumentException("cp lane must be in [0, cpSize) with cpSize >= 1, was lane "
                        + cpLane + " of " + cpSize);
            }
            return new KeyNamespace(this);
        }
    }
}
