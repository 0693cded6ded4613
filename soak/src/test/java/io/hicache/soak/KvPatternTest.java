package io.hicache.soak;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;

class KvPatternTest {

    @Test
    void aPageMatchesOnlyTheArgumentsItWasFilledFor() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment page = arena.allocate(256);
            KvPattern.fill(page, 42L, 3, KvPattern.DRAFT, 1, 0);
            assertThat(KvPattern.matches(page, 42L, 3, KvPattern.DRAFT, 1, 0)).isTrue();
            assertThat(KvPattern.matches(page, 43L, 3, KvPattern.DRAFT, 1, 0)).as("other prefix").isFalse();
            assertThat(KvPattern.matches(page, 42L, 2, KvPattern.DRAFT, 1, 0)).as("other layer").isFalse();
            assertThat(KvPattern.matches(page, 42L, 3, KvPattern.TARGET, 1, 0)).as("other role").isFalse();
            assertThat(KvPattern.matches(page, 42L, 3, KvPattern.DRAFT, 0, 0)).as("other buffer").isFalse();
            assertThat(KvPattern.matches(page, 42L, 3, KvPattern.DRAFT, 1, 1)).as("other lane").isFalse();
        }
    }

    @Test
    void anyFlippedByteIsAMismatch() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment page = arena.allocate(128);
            KvPattern.fill(page, 7L, 0, KvPattern.TARGET, 0, 1);
            for (long off = 0; off < page.byteSize(); off++) {
                byte b = page.get(ValueLayout.JAVA_BYTE, off);
                page.set(ValueLayout.JAVA_BYTE, off, (byte) (b ^ 0x10));
                assertThat(KvPattern.matches(page, 7L, 0, KvPattern.TARGET, 0, 1)).as("byte %d flipped", off).isFalse();
                page.set(ValueLayout.JAVA_BYTE, off, b);
            }
            assertThat(KvPattern.matches(page, 7L, 0, KvPattern.TARGET, 0, 1)).isTrue();
        }
    }

    @Test
    void thePrefixHashDependsOnEveryTokenOfThePrefix() {
        int[] a = {1, 2, 3, 4, 5, 6, 7, 8};
        int[] b = a.clone();
        b[1] = 99;
        long a0 = KvPattern.chain(0, a, 0, 4);
        long b0 = KvPattern.chain(0, b, 0, 4);
        assertThat(a0).isNotEqualTo(b0);
        // page 1 holds the same tokens, but its prefix differs
        assertThat(KvPattern.chain(a0, a, 1, 4)).isNotEqualTo(KvPattern.chain(b0, b, 1, 4));
    }
}
