// Philox words of many counters at once, vectorised where the CPU allows (same words as the
// scalar philox4x32_word0 of rng.h, bit for bit): word 0 of block (0, u[i], hw, bid) for an
// array of column vertices u -- the per-column random words of LADIES keys (weighted) and of
// LABOR's shared variates.
#ifndef SPSAMPLE_PHILOX_SIMD_H
#define SPSAMPLE_PHILOX_SIMD_H

#include <cstdint>
#include <cstdlib>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define SPSAMPLE_LW_X86 1
#endif

#include "rng.h"

namespace spsample {

#ifdef SPSAMPLE_LW_X86
// The vector code the kernel may run, decided once per process. SPSAMPLE_NATIVE_SCALAR=1 turns
// every vector path off (the portable code; tests run both, and the results are the same).
static inline bool lw_avx512() {
    static const bool on = __builtin_cpu_supports("avx512f") && !std::getenv("SPSAMPLE_NATIVE_SCALAR");
    return on;
}
static inline bool lw_avx2() {  // with BMI2, which every AVX2 CPU has (shrx in the bit tests)
    static const bool on = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
                           !std::getenv("SPSAMPLE_NATIVE_SCALAR");
    return on;
}
#endif

// Word 0 of Philox block (0, u[i], hw, bid) for i < c: the random word of column u[i] (a LADIES
// candidate's Efraimidis-Spirakis key is neg_log(open_unit(word)) / q; LABOR keeps u in a row of
// length d > s when word * d < s * 2**32). Integer-only, so every version
// below returns the same words (tests compare each with spsample._rng through the module's
// column_words hook). Complexity O(c). The compiler's AVX2 code was slower than scalar code on
// Zen 1 (cross-lane shuffles), hence the hand-written AVX2 version; the hand-written AVX-512
// one folds the same constant parts of the rounds, which the compiler's x86-64-v4 clone computes.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("arch=x86-64-v4", "avx512f", "default")))
#endif
static void column_words_generic(const uint32_t* __restrict u, int64_t c, uint32_t hw, uint32_t bid, Key key,
                                 uint32_t* __restrict out) {
    for (int64_t i = 0; i < c; ++i) out[i] = philox4x32_word0(0u, u[i], hw, bid, key);
}

#ifdef SPSAMPLE_LW_X86
// (hi, lo) = the 64-bit products x * m of eight 32-bit lanes (m broadcast), lane-local: the
// even and odd lanes are multiplied separately (_mm256_mul_epu32) and blended back.
__attribute__((target("avx2"))) static inline void mulhilo8(__m256i x, __m256i m, __m256i& hi, __m256i& lo) {
    const __m256i even = _mm256_mul_epu32(x, m);
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), m);
    hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

// One Philox4x32 round on eight lanes: (x0, x1, x2, x3) <- (hi(x2 M1) ^ x1 ^ ka, lo(x2 M1),
// hi(x0 M0) ^ x3 ^ kb, lo(x0 M0)), ka and kb the round's keys.
__attribute__((target("avx2"))) static inline void philox_round8(__m256i& x0, __m256i& x1, __m256i& x2,
                                                                 __m256i& x3, __m256i m0, __m256i m1,
                                                                 __m256i ka, __m256i kb) {
    __m256i hi0, lo0, hi1, lo1;
    mulhilo8(x0, m0, hi0, lo0);
    mulhilo8(x2, m1, hi1, lo1);
    x0 = _mm256_xor_si256(_mm256_xor_si256(hi1, x1), ka);
    x2 = _mm256_xor_si256(_mm256_xor_si256(hi0, x3), kb);
    x1 = lo1;
    x3 = lo0;
}

// The ten rounds' keys of `key`, broadcast to eight lanes.
__attribute__((target("avx2"))) static inline void philox_keys8(Key key, __m256i* vka, __m256i* vkb) {
    for (int r = 0; r < 10; ++r) {
        vka[r] = _mm256_set1_epi32(static_cast<int>(key.k0 + static_cast<uint32_t>(r) * PHILOX_W0));
        vkb[r] = _mm256_set1_epi32(static_cast<int>(key.k1 + static_cast<uint32_t>(r) * PHILOX_W1));
    }
}

// AVX2, 8 candidates per step. Only x1 = u varies between the counters (0, u, hw, bid), so the
// rounds are philox_rounds' with what is constant folded: round 1 has no varying product,
// rounds 2 and 3 one each, and the last round only the high half of the one that reaches
// word 0 -- 15 vector products instead of 20, the same words.
__attribute__((target("avx2"))) static void column_words_avx2(const uint32_t* __restrict u, int64_t c,
                                                                uint32_t hw, uint32_t bid, Key key,
                                                                uint32_t* __restrict out) {
    const __m256i m0 = _mm256_set1_epi32(static_cast<int>(PHILOX_M0));
    const __m256i m1 = _mm256_set1_epi32(static_cast<int>(PHILOX_M1));
    uint32_t ka[10], kb[10];
    for (int r = 0; r < 10; ++r) {
        ka[r] = key.k0 + static_cast<uint32_t>(r) * PHILOX_W0;
        kb[r] = key.k1 + static_cast<uint32_t>(r) * PHILOX_W1;
    }
    // round 1: x0 = 0, so x0 * M0 = 0; x2 = hw is constant
    const uint64_t p1a = static_cast<uint64_t>(PHILOX_M1) * hw;
    const uint32_t r1_x0 = static_cast<uint32_t>(p1a >> 32) ^ ka[0];  // ^ u
    const uint32_t r1_x1 = static_cast<uint32_t>(p1a), r1_x2 = bid ^ kb[0];  // x3 = 0
    // round 2: x2 * M1 is constant, so x0 is; x0 * M0 varies
    const uint64_t p1b = static_cast<uint64_t>(PHILOX_M1) * r1_x2;
    const uint32_t r2_x0 = static_cast<uint32_t>(p1b >> 32) ^ r1_x1 ^ ka[1];
    const uint32_t r2_x1 = static_cast<uint32_t>(p1b);
    // round 3: x0 * M0 is constant, so x3 is from here on
    const uint64_t p0c = static_cast<uint64_t>(PHILOX_M0) * r2_x0;
    const uint32_t r3_hi0 = static_cast<uint32_t>(p0c >> 32), r3_x3 = static_cast<uint32_t>(p0c);
    __m256i vka[10], vkb[10];
    for (int r = 0; r < 10; ++r) {
        vka[r] = _mm256_set1_epi32(static_cast<int>(ka[r]));
        vkb[r] = _mm256_set1_epi32(static_cast<int>(kb[r]));
    }
    const __m256i c_r1_x0 = _mm256_set1_epi32(static_cast<int>(r1_x0));
    const __m256i c_r3_x0 = _mm256_set1_epi32(static_cast<int>(r2_x1 ^ ka[2]));
    const __m256i c_r3_x2 = _mm256_set1_epi32(static_cast<int>(r3_hi0 ^ kb[2]));
    const __m256i c_r3_x3 = _mm256_set1_epi32(static_cast<int>(r3_x3));
    int64_t i = 0;
    for (; i + 8 <= c; i += 8) {
        const __m256i x0_1 = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + i)), c_r1_x0);
        __m256i hi0, lo0, hi1, lo1;
        mulhilo8(x0_1, m0, hi0, lo0);  // round 2
        const __m256i x2_2 = _mm256_xor_si256(hi0, vkb[1]);  // ^ x3 = 0
        const __m256i x3_2 = lo0;
        mulhilo8(x2_2, m1, hi1, lo1);  // round 3
        __m256i x0 = _mm256_xor_si256(hi1, c_r3_x0);
        __m256i x2 = _mm256_xor_si256(x3_2, c_r3_x2);
        __m256i x1 = lo1;
        __m256i x3 = c_r3_x3;
        for (int r = 3; r < 9; ++r) {  // rounds 4 to 9
            philox_round8(x0, x1, x2, x3, m0, m1, vka[r], vkb[r]);
        }
        // round 10, word 0 only: the high half of x2 * M1
        const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(x2, 32), m1);
        const __m256i hi = _mm256_blend_epi32(_mm256_srli_epi64(_mm256_mul_epu32(x2, m1), 32), odd, 0xAA);
        x0 = _mm256_xor_si256(_mm256_xor_si256(hi, x1), vka[9]);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), x0);
    }
    for (; i < c; ++i) out[i] = philox4x32_word0(0u, u[i], hw, bid, key);
}
#endif

#ifdef SPSAMPLE_LW_X86
// mulhilo16: below, with the row words.
__attribute__((target("avx512f"))) static inline void mulhilo16(__m512i x, __m512i m, __m512i& hi,
                                                                __m512i& lo);

// philox_round8 on sixteen lanes.
__attribute__((target("avx512f"))) static inline void philox_round16(__m512i& x0, __m512i& x1, __m512i& x2,
                                                                     __m512i& x3, __m512i m0, __m512i m1,
                                                                     __m512i ka, __m512i kb) {
    __m512i hi0, lo0, hi1, lo1;
    mulhilo16(x0, m0, hi0, lo0);
    mulhilo16(x2, m1, hi1, lo1);
    x0 = _mm512_ternarylogic_epi32(hi1, x1, ka, 0x96);  // three-way xor
    x2 = _mm512_ternarylogic_epi32(hi0, x3, kb, 0x96);
    x1 = lo1;
    x3 = lo0;
}

// philox_keys8 on sixteen lanes.
__attribute__((target("avx512f"))) static inline void philox_keys16(Key key, __m512i* vka, __m512i* vkb) {
    for (int r = 0; r < 10; ++r) {
        vka[r] = _mm512_set1_epi32(static_cast<int>(key.k0 + static_cast<uint32_t>(r) * PHILOX_W0));
        vkb[r] = _mm512_set1_epi32(static_cast<int>(key.k1 + static_cast<uint32_t>(r) * PHILOX_W1));
    }
}

// column_words_avx2's folded rounds on 16 candidates per step (AVX-512F); the same words.
__attribute__((target("avx512f"))) static void column_words_avx512(const uint32_t* __restrict u, int64_t c,
                                                                     uint32_t hw, uint32_t bid, Key key,
                                                                     uint32_t* __restrict out) {
    const __m512i m0 = _mm512_set1_epi32(static_cast<int>(PHILOX_M0));
    const __m512i m1 = _mm512_set1_epi32(static_cast<int>(PHILOX_M1));
    uint32_t ka[10], kb[10];
    for (int r = 0; r < 10; ++r) {
        ka[r] = key.k0 + static_cast<uint32_t>(r) * PHILOX_W0;
        kb[r] = key.k1 + static_cast<uint32_t>(r) * PHILOX_W1;
    }
    const uint64_t p1a = static_cast<uint64_t>(PHILOX_M1) * hw;
    const uint32_t r1_x0 = static_cast<uint32_t>(p1a >> 32) ^ ka[0];
    const uint32_t r1_x1 = static_cast<uint32_t>(p1a), r1_x2 = bid ^ kb[0];
    const uint64_t p1b = static_cast<uint64_t>(PHILOX_M1) * r1_x2;
    const uint32_t r2_x0 = static_cast<uint32_t>(p1b >> 32) ^ r1_x1 ^ ka[1];
    const uint32_t r2_x1 = static_cast<uint32_t>(p1b);
    const uint64_t p0c = static_cast<uint64_t>(PHILOX_M0) * r2_x0;
    const uint32_t r3_hi0 = static_cast<uint32_t>(p0c >> 32), r3_x3 = static_cast<uint32_t>(p0c);
    __m512i vka[10], vkb[10];
    for (int r = 0; r < 10; ++r) {
        vka[r] = _mm512_set1_epi32(static_cast<int>(ka[r]));
        vkb[r] = _mm512_set1_epi32(static_cast<int>(kb[r]));
    }
    const __m512i c_r1_x0 = _mm512_set1_epi32(static_cast<int>(r1_x0));
    const __m512i c_r3_x0 = _mm512_set1_epi32(static_cast<int>(r2_x1 ^ ka[2]));
    const __m512i c_r3_x2 = _mm512_set1_epi32(static_cast<int>(r3_hi0 ^ kb[2]));
    const __m512i c_r3_x3 = _mm512_set1_epi32(static_cast<int>(r3_x3));
    int64_t i = 0;
    for (; i + 16 <= c; i += 16) {
        const __m512i x0_1 = _mm512_xor_si512(_mm512_loadu_si512(reinterpret_cast<const void*>(u + i)), c_r1_x0);
        __m512i hi0, lo0, hi1, lo1;
        mulhilo16(x0_1, m0, hi0, lo0);  // round 2
        const __m512i x2_2 = _mm512_xor_si512(hi0, vkb[1]);
        const __m512i x3_2 = lo0;
        mulhilo16(x2_2, m1, hi1, lo1);  // round 3
        __m512i x0 = _mm512_xor_si512(hi1, c_r3_x0);
        __m512i x2 = _mm512_xor_si512(x3_2, c_r3_x2);
        __m512i x1 = lo1;
        __m512i x3 = c_r3_x3;
        for (int r = 3; r < 9; ++r) {  // rounds 4 to 9
            philox_round16(x0, x1, x2, x3, m0, m1, vka[r], vkb[r]);
        }
        const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(x2, 32), m1);  // round 10, word 0
        const __m512i hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(_mm512_mul_epu32(x2, m1), 32), odd);
        _mm512_storeu_si512(reinterpret_cast<void*>(out + i), _mm512_ternarylogic_epi32(hi, x1, vka[9], 0x96));
    }
    for (; i < c; ++i) out[i] = philox4x32_word0(0u, u[i], hw, bid, key);
}
#endif

static inline void column_words(const uint32_t* u, int64_t c, uint32_t hw, uint32_t bid, Key key, uint32_t* out) {
#ifdef SPSAMPLE_LW_X86
    if (lw_avx512()) return column_words_avx512(u, c, hw, bid, key, out);
    if (lw_avx2()) return column_words_avx2(u, c, hw, bid, key, out);
#endif
    column_words_generic(u, c, hw, bid, key, out);
}

// Words 0 .. count - 1 of the 8 streams (key_word[i], hw, bid) under `key` (Stream of rng.h):
// out[i * stride + w]. The node-wise rules draw words 0 .. s - 1 of each row's stream; eight
// rows' blocks are computed side by side. Integer-only: every version gives Stream's words.
static inline void stream_words8_generic(const uint32_t* key_word, uint32_t hw, uint32_t bid, Key key,
                                         int64_t count, uint32_t* out, int64_t stride) {
    for (int i = 0; i < 8; ++i) {
        Stream st(key_word[i], hw, bid, key);
        for (int64_t w = 0; w < count; ++w) out[i * stride + w] = st.word(static_cast<uint64_t>(w));
    }
}

#ifdef SPSAMPLE_LW_X86
__attribute__((target("avx2"))) static void stream_words8_avx2(const uint32_t* key_word, uint32_t hw,
                                                                 uint32_t bid, Key key, int64_t count,
                                                                 uint32_t* out, int64_t stride) {
    const __m256i m0 = _mm256_set1_epi32(static_cast<int>(PHILOX_M0));
    const __m256i m1 = _mm256_set1_epi32(static_cast<int>(PHILOX_M1));
    const __m256i vertex = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(key_word));
    alignas(32) uint32_t w[4][8];
    for (int64_t block = 0; 4 * block < count; ++block) {
        __m256i x0 = _mm256_set1_epi32(static_cast<int>(block));
        __m256i x1 = vertex;
        __m256i x2 = _mm256_set1_epi32(static_cast<int>(hw));
        __m256i x3 = _mm256_set1_epi32(static_cast<int>(bid));
        uint32_t ka = key.k0, kb = key.k1;
        for (int r = 0; r < 10; ++r) {
            philox_round8(x0, x1, x2, x3, m0, m1, _mm256_set1_epi32(static_cast<int>(ka)),
                          _mm256_set1_epi32(static_cast<int>(kb)));
            ka += PHILOX_W0;
            kb += PHILOX_W1;
        }
        _mm256_store_si256(reinterpret_cast<__m256i*>(w[0]), x0);
        _mm256_store_si256(reinterpret_cast<__m256i*>(w[1]), x1);
        _mm256_store_si256(reinterpret_cast<__m256i*>(w[2]), x2);
        _mm256_store_si256(reinterpret_cast<__m256i*>(w[3]), x3);
        const int64_t first = 4 * block, n = count - first < 4 ? count - first : 4;
        for (int i = 0; i < 8; ++i)
            for (int64_t j = 0; j < n; ++j) out[i * stride + first + j] = w[j][i];
    }
}
#endif

static inline void stream_words8(const uint32_t* key_word, uint32_t hw, uint32_t bid, Key key,
                                 int64_t count, uint32_t* out, int64_t stride) {
#ifdef SPSAMPLE_LW_X86
    if (lw_avx2()) return stream_words8_avx2(key_word, hw, bid, key, count, out, stride);
#endif
    stream_words8_generic(key_word, hw, bid, key, count, out, stride);
}

// Words 0 .. count - 1 of the stream (vertex, hw, bid) under `key` (Stream of rng.h) into out:
// word i is word i % 4 of block i / 4. Blocks are computed up to sixteen at a time (vectorised,
// the lanes are consecutive blocks), so out needs room for count rounded up to a multiple of 64.
// Integer-only: every version gives Stream's words.
static inline void stream_row_words_generic(uint32_t vertex, uint32_t hw, uint32_t bid, Key key,
                                            int64_t count, uint32_t* out) {
    for (int64_t b = 0; 4 * b < count; ++b)
        philox4x32(static_cast<uint32_t>(b), vertex, hw, bid, key, out + 4 * b);
}

#ifdef SPSAMPLE_LW_X86
// The 32 words of blocks b .. b + 7 (x0..x3: word j of the eight blocks) to out + 4 b,
// block-major (a 4 x 8 transpose).
__attribute__((target("avx2"))) static inline void store_blocks8(__m256i x0, __m256i x1, __m256i x2,
                                                                 __m256i x3, uint32_t* out) {
    const __m256i a = _mm256_unpacklo_epi32(x0, x1), c = _mm256_unpacklo_epi32(x2, x3);
    const __m256i e = _mm256_unpackhi_epi32(x0, x1), g = _mm256_unpackhi_epi32(x2, x3);
    const __m256i b0 = _mm256_unpacklo_epi64(a, c), b1 = _mm256_unpackhi_epi64(a, c);
    const __m256i b2 = _mm256_unpacklo_epi64(e, g), b3 = _mm256_unpackhi_epi64(e, g);
    __m256i* dst = reinterpret_cast<__m256i*>(out);
    _mm256_storeu_si256(dst + 0, _mm256_permute2x128_si256(b0, b1, 0x20));
    _mm256_storeu_si256(dst + 1, _mm256_permute2x128_si256(b2, b3, 0x20));
    _mm256_storeu_si256(dst + 2, _mm256_permute2x128_si256(b0, b1, 0x31));
    _mm256_storeu_si256(dst + 3, _mm256_permute2x128_si256(b2, b3, 0x31));
}

__attribute__((target("avx2"))) static void stream_row_words_avx2(uint32_t vertex, uint32_t hw,
                                                                    uint32_t bid, Key key,
                                                                    int64_t count, uint32_t* out) {
    const __m256i m0 = _mm256_set1_epi32(static_cast<int>(PHILOX_M0));
    const __m256i m1 = _mm256_set1_epi32(static_cast<int>(PHILOX_M1));
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i vka[10], vkb[10];
    philox_keys8(key, vka, vkb);
    for (int64_t b = 0; 4 * b < count; b += 8) {
        __m256i x0 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(b)), lane);
        __m256i x1 = _mm256_set1_epi32(static_cast<int>(vertex));
        __m256i x2 = _mm256_set1_epi32(static_cast<int>(hw));
        __m256i x3 = _mm256_set1_epi32(static_cast<int>(bid));
        for (int r = 0; r < 10; ++r) {
            philox_round8(x0, x1, x2, x3, m0, m1, vka[r], vkb[r]);
        }
        store_blocks8(x0, x1, x2, x3, out + 4 * b);
    }
}
#endif

#ifdef SPSAMPLE_LW_X86
// AVX-512: sixteen blocks per step (the lanes' products as in mulhilo8), transposed by halves.
__attribute__((target("avx512f"))) static inline void mulhilo16(__m512i x, __m512i m, __m512i& hi,
                                                                __m512i& lo) {
    const __m512i even = _mm512_mul_epu32(x, m);
    const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), m);
    hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
    lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

// The 64 words of blocks b .. b + 15 (x0..x3: word j of the sixteen blocks) to out + 4 b,
// block-major (transposed by halves).
__attribute__((target("avx512f,avx2"))) static inline void store_blocks16(__m512i x0, __m512i x1, __m512i x2,
                                                                         __m512i x3, uint32_t* out) {
    for (int half = 0; half < 2; ++half) {  // blocks 8 half .. 8 half + 7
        const __m256i y0 = half ? _mm512_extracti64x4_epi64(x0, 1) : _mm512_castsi512_si256(x0);
        const __m256i y1 = half ? _mm512_extracti64x4_epi64(x1, 1) : _mm512_castsi512_si256(x1);
        const __m256i y2 = half ? _mm512_extracti64x4_epi64(x2, 1) : _mm512_castsi512_si256(x2);
        const __m256i y3 = half ? _mm512_extracti64x4_epi64(x3, 1) : _mm512_castsi512_si256(x3);
        store_blocks8(y0, y1, y2, y3, out + 32 * half);
    }
}

// Sixteen blocks per group; two groups at a time while both are needed (their rounds
// interleaved: the products of one hide the other's latency).
__attribute__((target("avx512f,avx2"))) static void stream_row_words_avx512(uint32_t vertex, uint32_t hw,
                                                                           uint32_t bid, Key key,
                                                                           int64_t count, uint32_t* out) {
    const __m512i m0 = _mm512_set1_epi32(static_cast<int>(PHILOX_M0));
    const __m512i m1 = _mm512_set1_epi32(static_cast<int>(PHILOX_M1));
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i v1 = _mm512_set1_epi32(static_cast<int>(vertex));
    const __m512i v2 = _mm512_set1_epi32(static_cast<int>(hw));
    const __m512i v3 = _mm512_set1_epi32(static_cast<int>(bid));
    __m512i vka[10], vkb[10];
    philox_keys16(key, vka, vkb);
    int64_t b = 0;
    for (; 4 * (b + 16) < count; b += 32) {
        __m512i x0 = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(b)), lane), x1 = v1, x2 = v2, x3 = v3;
        __m512i z0 = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(b + 16)), lane), z1 = v1, z2 = v2, z3 = v3;
        for (int r = 0; r < 10; ++r) {
            philox_round16(x0, x1, x2, x3, m0, m1, vka[r], vkb[r]);
            philox_round16(z0, z1, z2, z3, m0, m1, vka[r], vkb[r]);
        }
        store_blocks16(x0, x1, x2, x3, out + 4 * b);
        store_blocks16(z0, z1, z2, z3, out + 4 * (b + 16));
    }
    for (; 4 * b < count; b += 16) {
        __m512i x0 = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(b)), lane), x1 = v1, x2 = v2, x3 = v3;
        for (int r = 0; r < 10; ++r) {
            philox_round16(x0, x1, x2, x3, m0, m1, vka[r], vkb[r]);
        }
        store_blocks16(x0, x1, x2, x3, out + 4 * b);
    }
}
#endif

static inline void stream_row_words(uint32_t vertex, uint32_t hw, uint32_t bid, Key key,
                                    int64_t count, uint32_t* out) {
#ifdef SPSAMPLE_LW_X86
    if (lw_avx512() && lw_avx2()) return stream_row_words_avx512(vertex, hw, bid, key, count, out);
    if (lw_avx2()) return stream_row_words_avx2(vertex, hw, bid, key, count, out);
#endif
    stream_row_words_generic(vertex, hw, bid, key, count, out);
}

}  // namespace spsample

#endif  // SPSAMPLE_PHILOX_SIMD_H
