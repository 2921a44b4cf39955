// The host side of the per-row selection rules and value programs of node-wise sampling: the
// bodies live in device/rules.cuh (one source for the CPU engine and the GPU kernels, with the
// rules' specification); this header adds what only the CPU engine needs -- per-thread scratch
// in std::vectors (RowScratch), overloads of the rules that take it, LABOR's threshold rule
// with the columns' words computed 256 at a time by the vectorised column_words, and value
// programs that own their instruction arrays (ValueProgram, viewed as the bodies' ValueCode).
//
// Bodies allocate nothing: the caller sizes RowScratch (fit) before calling them.
#ifndef SPSAMPLE_SELECT_H
#define SPSAMPLE_SELECT_H

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <utility>
#include <vector>

#include "common.h"
#include "device/rules.cuh"
#include "philox_simd.h"
#include "rng.h"

namespace spsample {

// Room past a row's words in RowScratch::words (stream_row_words writes whole groups of 64).
constexpr size_t ROW_WORDS_PAD = 64;
// Room past the candidates' words, weights and keys (candidate_keys computes whole groups of 8).
constexpr size_t KEY_PAD = 8;

// Per-thread scratch of the row rules, sized by the caller (scratch of device/rules.cuh).
struct RowScratch {
    std::vector<int64_t> pos;
    std::vector<double> keys;      // weighted heap
    std::vector<double> vals;      // a row's values (value programs)
    std::vector<uint64_t> set;     // Floyd membership for large fanouts
    std::vector<uint32_t> words;   // weighted: the row's stream words 0 .. d - 1, ahead
    std::vector<uint8_t> keep;     // weighted: entries whose key may be below the threshold
    std::vector<int64_t> cand;     // weighted: their positions
    std::vector<uint32_t> cword;   // weighted: the candidates' words,
    std::vector<double> cval, ckey;  // weights and exact keys
    std::vector<uint32_t> alias;   // alias rules on values without the graph's table: the row's
    std::vector<double> alias_x;   // table (alias_table_row) and its scratch
    std::vector<int64_t> alias_small, alias_large;

    // Room for the alias table of a row of length d.
    void fit_alias(int64_t d) {
        const size_t need = static_cast<size_t>(d + 1);
        if (alias_x.size() < need) {
            alias.resize(2 * need);
            alias_x.resize(need);
            alias_small.resize(need);
            alias_large.resize(need);
        }
    }

    // Room for a row of length d at fanout s (values when `valued`).
    void fit(int64_t d, int64_t s, bool valued) {
        const size_t need = static_cast<size_t>(std::max<int64_t>(d, s) + 1);
        if (pos.size() < need) pos.resize(need);
        const size_t slots = static_cast<size_t>(floyd_set_slots(d, s));
        if (set.size() < slots) set.resize(slots);
        if (valued) {
            if (keys.size() < need) keys.resize(need);
            if (vals.size() < static_cast<size_t>(d + 1)) vals.resize(d + 1);
            if (words.size() < need + ROW_WORDS_PAD) words.resize(need + ROW_WORDS_PAD);
            if (keep.size() < need + 16) keep.resize(need + 16);  // the screens write 8 or 16 at a time
            if (cand.size() < need + 16) {
                cand.resize(need + 16);  // screen_levels writes past its last position
                cword.resize(need + KEY_PAD);  // exact_keys runs whole vectors (candidate_keys)
                cval.resize(need + KEY_PAD);
                ckey.resize(need + KEY_PAD);
            }
        }
    }
};

// ------------------------------------------------------------------ weighted, screened keys
// Weights for which the screening below is exact (every quantity a normal double or +inf).
constexpr double KEY_W_MIN = 0x1p-900;
constexpr double KEY_W_MAX = 0x1p+900;
constexpr uint64_t KEY_W_MIN_BITS = 0x07B0000000000000ull;  // bits_of(KEY_W_MIN)
constexpr uint64_t KEY_W_MAX_BITS = 0x7830000000000000ull;  // bits_of(KEY_W_MAX)
constexpr double KEY_LO_MARGIN = 1.0 - 0x1p-20;
constexpr double KEY_HI_MARGIN = 1.0 + 0x1p-20;
// Rows shorter than this take rules.cuh's weighted_row directly (when the graph's row
// statistics are not at hand).
constexpr int64_t WEIGHTED_FAST_MIN = 8;

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SPSAMPLE_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define SPSAMPLE_VECTOR_CLONES
#endif

// Whether the double of these bits is > 0 (+inf included; positive doubles order as their bits,
// so the loops below compare bits: no FP compare, no branch, they vectorise).
static inline bool positive_bits(uint64_t x) {
    return static_cast<int64_t>(x) > 0 && x <= 0x7FF0000000000000ull;
}

// The weights of a row: eligible = #{p : w[p] > 0}, odd = how many of those are outside
// [KEY_W_MIN, KEY_W_MAX]; returns about their sum (partial sums: only a guess's input).
static inline void census_one(uint64_t x, int64_t& e, int64_t& o, double& acc) {
    const uint64_t pos = positive_bits(x);
    e += pos;
    o += pos & (x < KEY_W_MIN_BITS || x > KEY_W_MAX_BITS);
    acc += double_of(x & -pos);
}

static inline double weight_census_scalar(const double* w, int64_t d, int64_t& eligible, int64_t& odd) {
    double acc = 0.0;
    eligible = odd = 0;
    for (int64_t p = 0; p < d; ++p) census_one(bits_of(w[p]), eligible, odd, acc);
    return acc;
}

#ifdef SPSAMPLE_LW_X86
__attribute__((target("avx2"))) static double weight_census_avx2(const double* w, int64_t d,
                                                                   int64_t& eligible, int64_t& odd) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i inf = _mm256_set1_epi64x(0x7FF0000000000000ll);
    const __m256i lo = _mm256_set1_epi64x(static_cast<int64_t>(KEY_W_MIN_BITS));
    const __m256i hi = _mm256_set1_epi64x(static_cast<int64_t>(KEY_W_MAX_BITS));
    __m256i e = zero, o = zero;
    __m256d acc = _mm256_setzero_pd();
    int64_t p = 0;
    for (; p + 4 <= d; p += 4) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + p));
        const __m256i pos = _mm256_andnot_si256(_mm256_cmpgt_epi64(x, inf), _mm256_cmpgt_epi64(x, zero));
        const __m256i out = _mm256_or_si256(_mm256_cmpgt_epi64(lo, x), _mm256_cmpgt_epi64(x, hi));
        e = _mm256_sub_epi64(e, pos);
        o = _mm256_sub_epi64(o, _mm256_and_si256(pos, out));
        acc = _mm256_add_pd(acc, _mm256_castsi256_pd(_mm256_and_si256(x, pos)));
    }
    alignas(32) int64_t es[4], os[4];
    alignas(32) double as[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(es), e);
    _mm256_store_si256(reinterpret_cast<__m256i*>(os), o);
    _mm256_store_pd(as, acc);
    int64_t ee = (es[0] + es[1]) + (es[2] + es[3]), oo = (os[0] + os[1]) + (os[2] + os[3]);
    double sum = (as[0] + as[1]) + (as[2] + as[3]);
    for (; p < d; ++p) census_one(bits_of(w[p]), ee, oo, sum);
    eligible = ee;
    odd = oo;
    return sum;
}
#endif

static inline double weight_census(const double* w, int64_t d, int64_t& eligible, int64_t& odd) {
#ifdef SPSAMPLE_LW_X86
    if (lw_avx2()) return weight_census_avx2(w, d, eligible, odd);
#endif
    return weight_census_scalar(w, d, eligible, odd);
}

// Screening of a row's entries against a threshold tau (see weighted_row below), at levels
// tau 2**k, k < SCREEN_LEVELS, in one pass over the row's words and weights. Per eligible entry
// p (w[p] > 0), with u = open_unit(word), v = 1 - u (exact):
//   sure_p = bits_of(fl(v (1 + 2**-20))) - bits_of(fl(fl(tau u) w[p]))   (int64)
//   keep_p = bits_of(fl(v (1 - 2**-20))) - bits_of(fl(tau w[p]))
// sure_p <= 0: key_p <= tau surely; keep_p > 0: key_p > tau surely (positive doubles order as
// their bits; both terms are below 2**63, so the difference is exact). at[k] = #{eligible p :
// sure_p <= k 2**52}: the sure count at tau 2**k (scaling by 2**k adds k 2**52 to the bits of
// a normal product), exact at k = 0 and a guide above (the count at tau 2**k is taken again
// at that threshold before it is used). The positions with keep_p <= 0, ascending, into cand
// (which needs d + 8 entries: the vector code writes past the last one); returns how many.
constexpr int SCREEN_LEVELS = 8;

struct ScreenTerms {
    int64_t sure, keep;
    bool eligible;
};

static inline ScreenTerms screen_terms(uint32_t word, double x, double tau) {
    const double u = open_unit(word);
    const double v = (static_cast<double>(~word) + 0.5) * (1.0 / 4294967296.0);  // 1 - u, exact
    const double tu = tau * u;
    return {static_cast<int64_t>(bits_of(v * KEY_HI_MARGIN) - bits_of(tu * x)),
            static_cast<int64_t>(bits_of(v * KEY_LO_MARGIN) - bits_of(tau * x)),
            positive_bits(bits_of(x))};
}

// keep[p] = 1 when entry p is eligible with keep_p <= 0, else 0; the level counts into at.
SPSAMPLE_VECTOR_CLONES
static void screen_flags(const uint32_t* __restrict words, const double* __restrict w, int64_t d,
                         double tau, uint8_t* __restrict keep, int64_t* __restrict at) {
    int64_t c[SCREEN_LEVELS] = {};
    for (int64_t p = 0; p < d; ++p) {
        const ScreenTerms t = screen_terms(words[p], w[p], tau);
        const int64_t e = t.eligible;
        for (int k = 0; k < SCREEN_LEVELS; ++k) c[k] += e & (t.sure <= (static_cast<int64_t>(k) << 52));
        keep[p] = static_cast<uint8_t>(e & (t.keep <= 0));
    }
    for (int k = 0; k < SCREEN_LEVELS; ++k) at[k] = c[k];
}

// The positions p < d with keep[p] != 0, ascending, into out; returns how many.
static inline int64_t kept_positions(const uint8_t* keep, int64_t d, int64_t* out) {
    int64_t n = 0, p = 0;
    for (; p + 8 <= d; p += 8) {
        uint64_t m;
        std::memcpy(&m, keep + p, 8);
        while (m) {
            out[n++] = p + (ctz64(m) >> 3);
            m &= m - 1;
        }
    }
    for (; p < d; ++p)
        if (keep[p]) out[n++] = p;
    return n;
}

#ifdef SPSAMPLE_LW_X86
// The weights are prefetched this many entries ahead of the screen (a row's first lines are
// prefetched by the caller, rowwise.h).
constexpr int64_t SCREEN_PF = 64;
constexpr int64_t SCREEN32_PF = 128;  // the same lines ahead in float32 weights

// Eight entries per step: the terms as screen_terms (the same products, no contraction), the
// sure count at tau in a scalar, each entry's level (the least k with sure_p <= k 2**52, 0 ..
// SCREEN_LEVELS; SCREEN_LEVELS when not eligible) as a byte into levels (which needs d + 8
// bytes), the kept positions compressed (no branch per entry). The words are read whole groups
// of eight (RowScratch::words has room past d), the weights under a mask. at[0] only: the
// other levels' counts come from the bytes (level_counts_avx512), when they are needed.
__attribute__((target("avx512f,avx2,popcnt"))) static int64_t screen_levels_avx512(
    const uint32_t* words, const double* w, int64_t d, double tau, int64_t* cand, uint8_t* levels,
    int64_t* at) {
    const __m512d half = _mm512_set1_pd(0.5), scale = _mm512_set1_pd(1.0 / 4294967296.0);
    const __m512d hi = _mm512_set1_pd(KEY_HI_MARGIN), lo = _mm512_set1_pd(KEY_LO_MARGIN);
    const __m512d vt = _mm512_set1_pd(tau);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i inf = _mm512_set1_epi64(0x7FF0000000000000ll);
    const __m512i bias = _mm512_set1_epi64((int64_t(1) << 52) - 1);
    const __m512i top = _mm512_set1_epi64(SCREEN_LEVELS);
    const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i all = _mm256_set1_epi32(-1);
    int64_t n = 0, sure0 = 0;
    for (int64_t p = 0; p < d; p += 8) {
        const __mmask8 live = d - p >= 8 ? 0xFF : static_cast<__mmask8>((1u << (d - p)) - 1);
        const __m256i wd = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + p));
        __builtin_prefetch(w + p + SCREEN_PF);
        const __m512d x = _mm512_maskz_loadu_pd(live, w + p);
        const __m512d u = _mm512_mul_pd(_mm512_add_pd(_mm512_cvtepu32_pd(wd), half), scale);
        const __m512d v = _mm512_mul_pd(_mm512_add_pd(_mm512_cvtepu32_pd(_mm256_xor_si256(wd, all)), half), scale);
        const __m512i xb = _mm512_castpd_si512(x);
        const __mmask8 e = _mm512_cmpgt_epi64_mask(xb, zero) & _mm512_cmple_epi64_mask(xb, inf);
        const __m512i sure = _mm512_sub_epi64(_mm512_castpd_si512(_mm512_mul_pd(v, hi)),
                                              _mm512_castpd_si512(_mm512_mul_pd(_mm512_mul_pd(vt, u), x)));
        const __m512i keep = _mm512_sub_epi64(_mm512_castpd_si512(_mm512_mul_pd(v, lo)),
                                              _mm512_castpd_si512(_mm512_mul_pd(vt, x)));
        sure0 += __builtin_popcount(_mm512_mask_cmple_epi64_mask(e, sure, zero));
        // ceil(sure / 2**52) (arithmetic shift: floor), clamped to [0, SCREEN_LEVELS]
        const __m512i level = _mm512_min_epi64(
            _mm512_max_epi64(_mm512_srai_epi64(_mm512_add_epi64(sure, bias), 52), zero), top);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(levels + p),
                         _mm512_cvtepi64_epi8(_mm512_mask_mov_epi64(top, e, level)));
        const __mmask8 kept = _mm512_mask_cmple_epi64_mask(e, keep, zero);
        _mm512_storeu_si512(cand + n, _mm512_maskz_compress_epi64(kept, _mm512_add_epi64(_mm512_set1_epi64(p), lane)));
        n += __builtin_popcount(kept);
    }
    at[0] = sure0;
    return n;
}
#endif

#ifdef SPSAMPLE_LW_X86
// at[k] = #{p : the low half of levels[p] <= k} for 1 <= k < SCREEN_LEVELS (the screens' sure
// levels), sixteen bytes at a time (levels has d + 16), each widened to 32 bits and compared
// with every level.
__attribute__((target("avx512f,avx2,popcnt"))) static void level_counts_avx512(const uint8_t* levels,
                                                                              int64_t d, int64_t* at) {
    const __m512i low = _mm512_set1_epi32(15);
    int64_t c[SCREEN_LEVELS] = {};
    for (int64_t p = 0; p < d; p += 16) {
        const __mmask16 live = d - p >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (d - p)) - 1);
        const __m512i b = _mm512_and_si512(
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(levels + p))), low);
        for (int k = 1; k < SCREEN_LEVELS; ++k)
            c[k] += __builtin_popcount(_mm512_mask_cmple_epi32_mask(live, b, _mm512_set1_epi32(k)));
    }
    for (int k = 1; k < SCREEN_LEVELS; ++k) at[k] = c[k];
}
#endif

// The screen of a row at tau: the candidates into sc.cand (returns how many) and at[0]; the
// counts at[k], 1 <= k < SCREEN_LEVELS, when at[0] < s (they are read only then).
static inline int64_t screen_levels(const uint32_t* words, const double* w, int64_t d, double tau,
                                    int64_t s, RowScratch& sc, int64_t* at) {
#ifdef SPSAMPLE_LW_X86
    if (lw_avx512() && lw_avx2()) {
        const int64_t n = screen_levels_avx512(words, w, d, tau, sc.cand.data(), sc.keep.data(), at);
        if (at[0] < s) level_counts_avx512(sc.keep.data(), d, at);
        return n;
    }
#endif
    screen_flags(words, w, d, tau, sc.keep.data(), at);
    return kept_positions(sc.keep.data(), d, sc.cand.data());
}

// --------------------------------------------------------- the same screen in float32
// A graph whose positive weights all lie in [SCREEN32_W_MIN, SCREEN32_W_MAX] keeps float32
// copies of them, x = fl32(w) (Graph.screen_weights), and a row screened at a threshold tau
// in [SCREEN32_TAU_MIN, SCREEN32_TAU_MAX] that is a float reads those: half the bytes, sixteen
// entries per vector. The terms are screen_terms' in float arithmetic, with u = fl(fl(word) +
// 0.5) 2**-32 and v = fl(fl(~word) + 0.5) 2**-32:
//   sure_p = bits(fl(v (1 + 2**-20))) - bits(fl(fl(tau u) x))    (int32, float bits)
//   keep_p = bits(fl(v (1 - 2**-20))) - bits(fl(tau x))
// Each rounding is within a factor 1 -+ 2**-24 (every quantity is a normal float: u, v >=
// 2**-33, x in [2**-30, 2**30], tau in [2**-60, 2**60], products in [2**-123, 2**97]), so
// sure_p <= 0 gives v (1 + 2**-20) (1 - 2**-24)**3 <= tau u w (1 + 2**-24)**5, hence
// (v / u) (1 + 2**-30) < tau w and the exact key is <= tau; keep_p > 0 gives
// v (1 - 2**-20) (1 + 2**-24)**3 > tau w (1 - 2**-24)**2, hence v (1 - 2**-30) > tau w
// (1 + 2**-22) and the exact key is > tau (the bounds on -det_log(u) of screen_terms). The
// level k (tau 2**k) adds k 2**23 to a product's bits. Eligible: x > 0 (0 < bits <= +inf),
// the same entries as w > 0 for weights in the range.
constexpr double SCREEN32_W_MIN = 0x1p-30;
constexpr double SCREEN32_W_MAX = 0x1p+30;
constexpr double SCREEN32_TAU_MIN = 0x1p-60;
constexpr double SCREEN32_TAU_MAX = 0x1p+60;
constexpr float KEY_HI_MARGIN32 = 1.0f + 0x1p-20f;
constexpr float KEY_LO_MARGIN32 = 1.0f - 0x1p-20f;

static inline uint32_t bits_of32(float x) {
    uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}

struct ScreenTerms32 {
    int32_t sure, keep;
    bool eligible;
};

static inline ScreenTerms32 screen_terms32(uint32_t word, float x, float tau) {
    const float u = (static_cast<float>(word) + 0.5f) * 0x1p-32f;
    const float v = (static_cast<float>(~word) + 0.5f) * 0x1p-32f;
    const float tu = tau * u;
    const uint32_t xb = bits_of32(x);
    return {static_cast<int32_t>(bits_of32(v * KEY_HI_MARGIN32) - bits_of32(tu * x)),
            static_cast<int32_t>(bits_of32(v * KEY_LO_MARGIN32) - bits_of32(tau * x)),
            static_cast<int32_t>(xb) > 0 && xb <= 0x7F800000u};
}

// screen_flags on float32 weights.
SPSAMPLE_VECTOR_CLONES
static void screen_flags32(const uint32_t* __restrict words, const float* __restrict w, int64_t d,
                           float tau, uint8_t* __restrict keep, int64_t* __restrict at) {
    int64_t c[SCREEN_LEVELS] = {};
    for (int64_t p = 0; p < d; ++p) {
        const ScreenTerms32 t = screen_terms32(words[p], w[p], tau);
        const int64_t e = t.eligible;
        for (int k = 0; k < SCREEN_LEVELS; ++k) c[k] += e & (t.sure <= (k << 23));
        keep[p] = static_cast<uint8_t>(e & (t.keep <= 0));
    }
    for (int k = 0; k < SCREEN_LEVELS; ++k) at[k] = c[k];
}

#ifdef SPSAMPLE_LW_X86
// screen_levels_avx512 on float32 weights: sixteen entries per step (the words and weights of
// a step are one vector each), the kept positions compressed eight at a time. Each entry's
// levels are a byte of levels (which needs d + 16 bytes): the low half the least k at which it
// is surely below tau 2**k (ceil(sure_p / 2**23), 0 .. SCREEN_LEVELS, as screen_levels_avx512),
// the high half the least k at which it is kept (ceil(keep_p / 2**23)); both SCREEN_LEVELS when
// not eligible. Scaling tau by 2**k adds k 2**23 to the bits of its products (they stay normal
// floats for tau 2**k in the float screen's range), so the candidates at tau 2**k are the
// entries whose high half is <= k (kept_at_level), without a second pass over the weights.
// The positions p + i of the set bits i of kept appended to out[n..] (8 at a time: out needs
// room for 8 past the last); returns the new count.
__attribute__((target("avx512f,popcnt"), always_inline)) static inline int64_t append_positions16(
    __mmask16 kept, int64_t p, int64_t* out, int64_t n) {
    const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    const __mmask8 first = static_cast<__mmask8>(kept), second = static_cast<__mmask8>(kept >> 8);
    _mm512_storeu_si512(out + n, _mm512_maskz_compress_epi64(first, _mm512_add_epi64(_mm512_set1_epi64(p), lane)));
    n += __builtin_popcount(first);
    _mm512_storeu_si512(out + n, _mm512_maskz_compress_epi64(second, _mm512_add_epi64(_mm512_set1_epi64(p + 8), lane)));
    return n + __builtin_popcount(second);
}

// ceil(t / 2**23) per lane, in [0, SCREEN_LEVELS] (bias = 2**23 - 1, top = SCREEN_LEVELS).
__attribute__((target("avx512f"), always_inline)) static inline __m512i level32(__m512i t, __m512i bias,
                                                                              __m512i zero, __m512i top) {
    return _mm512_min_epi32(_mm512_max_epi32(_mm512_srai_epi32(_mm512_add_epi32(t, bias), 23), zero), top);
}

__attribute__((target("avx512f,avx2,popcnt"))) static int64_t screen_levels32_avx512(
    const uint32_t* words, const float* w, int64_t d, float tau, int64_t* cand, uint8_t* levels,
    int64_t* at) {
    const __m512 half = _mm512_set1_ps(0.5f), scale = _mm512_set1_ps(0x1p-32f);
    const __m512 hi = _mm512_set1_ps(KEY_HI_MARGIN32), lo = _mm512_set1_ps(KEY_LO_MARGIN32);
    const __m512 vt = _mm512_set1_ps(tau);
    const __m512i zero = _mm512_setzero_si512(), all = _mm512_set1_epi32(-1);
    const __m512i inf = _mm512_set1_epi32(0x7F800000);
    const __m512i bias = _mm512_set1_epi32((1 << 23) - 1);
    const __m512i top = _mm512_set1_epi32(SCREEN_LEVELS);
    const __m512i top16 = _mm512_set1_epi32(SCREEN_LEVELS * 17);  // both levels SCREEN_LEVELS
    int64_t n = 0, sure0 = 0;
    for (int64_t p = 0; p < d; p += 16) {
        const __mmask16 live = d - p >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (d - p)) - 1);
        const __m512i wd = _mm512_loadu_si512(words + p);
        __builtin_prefetch(w + p + SCREEN32_PF);
        const __m512 x = _mm512_maskz_loadu_ps(live, w + p);
        const __m512 u = _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepu32_ps(wd), half), scale);
        const __m512 v = _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepu32_ps(_mm512_xor_si512(wd, all)), half), scale);
        const __m512i xb = _mm512_castps_si512(x);
        const __mmask16 e = _mm512_cmpgt_epi32_mask(xb, zero) & _mm512_cmple_epi32_mask(xb, inf);
        const __m512i sure = _mm512_sub_epi32(_mm512_castps_si512(_mm512_mul_ps(v, hi)),
                                              _mm512_castps_si512(_mm512_mul_ps(_mm512_mul_ps(vt, u), x)));
        const __m512i keep = _mm512_sub_epi32(_mm512_castps_si512(_mm512_mul_ps(v, lo)),
                                              _mm512_castps_si512(_mm512_mul_ps(vt, x)));
        sure0 += __builtin_popcount(_mm512_mask_cmple_epi32_mask(e, sure, zero));
        const __m512i both = _mm512_or_si512(level32(sure, bias, zero, top),
                                             _mm512_slli_epi32(level32(keep, bias, zero, top), 4));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(levels + p),
                         _mm512_cvtepi32_epi8(_mm512_mask_mov_epi32(top16, e, both)));
        const __mmask16 kept = _mm512_mask_cmple_epi32_mask(e, keep, zero);
        n = append_positions16(kept, p, cand, n);
    }
    at[0] = sure0;
    return n;
}
#endif

// screen_levels on float32 weights (tau a float in [SCREEN32_TAU_MIN, SCREEN32_TAU_MAX]);
// levels: whether sc.keep holds both levels of every entry (screen_levels32_avx512's bytes).
static inline int64_t screen_levels32(const uint32_t* words, const float* w, int64_t d, float tau,
                                      int64_t s, RowScratch& sc, int64_t* at, bool& levels) {
#ifdef SPSAMPLE_LW_X86
    if (lw_avx512() && lw_avx2()) {
        const int64_t n = screen_levels32_avx512(words, w, d, tau, sc.cand.data(), sc.keep.data(), at);
        if (at[0] < s) level_counts_avx512(sc.keep.data(), d, at);
        levels = true;
        return n;
    }
#endif
    screen_flags32(words, w, d, tau, sc.keep.data(), at);
    levels = false;
    return kept_positions(sc.keep.data(), d, sc.cand.data());
}

#ifdef SPSAMPLE_LW_X86
// The positions p < d kept at tau 2**k by screen_levels32_avx512 (the high half of levels[p]
// <= k), ascending, into out (which needs room for 8 past the last); returns how many.
// Sixteen bytes per step (levels has d + 16).
__attribute__((target("avx512f,avx2,popcnt"))) static int64_t kept_at_level(const uint8_t* levels,
                                                                           int64_t d, int k,
                                                                           int64_t* out) {
    const __m512i vk = _mm512_set1_epi32(k);
    int64_t n = 0;
    for (int64_t p = 0; p < d; p += 16) {
        const __mmask16 live = d - p >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (d - p)) - 1);
        const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(levels + p)));
        const __mmask16 kept = _mm512_mask_cmple_epi32_mask(live, _mm512_srli_epi32(b, 4), vk);
        n = append_positions16(kept, p, out, n);
    }
    return n;
}
#endif

// Whether the float32 screen may test tau (a float in its range).
static inline bool screen32_tau(double tau) {
    return tau >= SCREEN32_TAU_MIN && tau <= SCREEN32_TAU_MAX &&
           static_cast<double>(static_cast<float>(tau)) == tau;
}

// The exact keys exp_key(cw[i], cx[i]) for i < n into out: -det_log_normal(open_unit(w)) / x, the
// same values as exp_key (det_log_normal equals det_log on open_unit's normal results), in a
// loop that vectorises.
SPSAMPLE_VECTOR_CLONES
static void exact_keys(const uint32_t* __restrict cw, const double* __restrict cx, int64_t n,
                       double* __restrict out) {
    for (int64_t i = 0; i < n; ++i) out[i] = -det_log_normal(open_unit(cw[i])) / cx[i];
}

// exact_keys for the n candidates in cw, cx (room for KEY_PAD more), padded to a multiple of 8
// with word 0 and weight 1 so that the vectorised loop has no scalar tail; keys past n are
// never read.
static inline void candidate_keys(uint32_t* cw, double* cx, int64_t n, double* ck) {
    const int64_t n8 = (n + 7) & ~int64_t(7);
    for (int64_t i = n; i < n8; ++i) {
        cw[i] = 0;
        cx[i] = 1.0;
    }
    exact_keys(cw, cx, n8, ck);
}

// Up to this many candidates, exact_smallest ranks them pairwise (n * n compares without a
// branch) instead of keeping a heap and sorting its positions (both mispredict per entry).
constexpr int64_t RANK_SELECT_MAX = 64;

// rank[i] = #{j : (ck[j], j) < (ck[i], i)}, candidate i's place in (key, position) order (the
// candidates' positions ascend with i, so ties of keys go to the smaller i).
SPSAMPLE_VECTOR_CLONES
static void pair_ranks(const double* __restrict ck, int64_t n, int32_t* __restrict rank) {
    for (int64_t i = 0; i < n; ++i) {
        const double k = ck[i];
        int32_t r = 0;
        for (int64_t j = 0; j < n; ++j) r += (ck[j] < k) | ((ck[j] == k) & (j < i));
        rank[i] = r;
    }
}

#ifdef SPSAMPLE_LW_X86
// pair_ranks with eight keys per compare: the candidates' keys loaded once, eight to a vector,
// then candidate i against all, the lanes j < i counting ties (lanes past n are masked off).
__attribute__((target("avx512f,avx2,popcnt"))) static void pair_ranks_avx512(
    const double* ck, int64_t n, int32_t* rank) {
    constexpr int BLOCKS = RANK_SELECT_MAX / 8;
    __m512d x[BLOCKS];
    __mmask8 live[BLOCKS];
    const int nb = static_cast<int>((n + 7) / 8);
    for (int b = 0; b < nb; ++b) {
        const int64_t left = n - 8 * b;
        live[b] = left >= 8 ? 0xFF : static_cast<__mmask8>((1u << left) - 1);
        x[b] = _mm512_maskz_loadu_pd(live[b], ck + 8 * b);
    }
    for (int64_t i = 0; i < n; ++i) {
        const __m512d k = _mm512_set1_pd(ck[i]);
        int32_t r = 0;
        for (int b = 0; b < nb; ++b) {
            const int64_t below = i - 8 * b;  // lanes of block b before candidate i
            const __mmask8 before = below >= 8 ? 0xFF : below <= 0 ? 0 : static_cast<__mmask8>((1u << below) - 1);
            const __mmask8 lt = _mm512_mask_cmp_pd_mask(live[b], x[b], k, _CMP_LT_OQ);
            const __mmask8 eq = _mm512_mask_cmp_pd_mask(live[b] & before, x[b], k, _CMP_EQ_OQ);
            r += __builtin_popcount(static_cast<unsigned>(lt | eq));
        }
        rank[i] = r;
    }
}
#endif

// The positions cand[i] of the s candidates ranked below s (pair_ranks), ascending because
// cand is: the set heap_offer keeps, without its sort. n <= RANK_SELECT_MAX, s < n. edge, when
// given: the keys ranked s - 1 and s (edge[0], edge[1]).
static inline int64_t ranked_smallest(const int64_t* cand, const double* ck, int64_t n, int64_t s,
                                      int64_t* pos, double* edge = nullptr) {
    int32_t rank[RANK_SELECT_MAX];
#ifdef SPSAMPLE_LW_X86
    if (lw_avx512()) pair_ranks_avx512(ck, n, rank);
    else
#endif
        pair_ranks(ck, n, rank);
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
        pos[m] = cand[i];
        m += rank[i] < s;
    }
    if (edge) {
        for (int64_t i = 0; i < n; ++i) {
            if (rank[i] == s - 1) edge[0] = ck[i];
            if (rank[i] == s) edge[1] = ck[i];
        }
    }
    return m;
}

// The s smallest (key, position) pairs over the candidates cand[0..n) (ascending; words and
// weights read from the row), their positions sorted into sc.pos; returns how many. When there
// are exactly s candidates, all of them (no key computed).
static inline int64_t exact_smallest(const int64_t* cand, const uint32_t* words, const double* w,
                                     int64_t n, int64_t s, RowScratch& sc) {
    int64_t* pos = sc.pos.data();
    if (n == s) {
        std::memcpy(pos, cand, static_cast<size_t>(n) * sizeof(int64_t));
        return n;
    }
    uint32_t* cw = sc.cword.data();
    double* cx = sc.cval.data();
    for (int64_t i = 0; i < n; ++i) {
        cw[i] = words[cand[i]];
        cx[i] = w[cand[i]];
    }
    double* ck = sc.ckey.data();
    candidate_keys(cw, cx, n, ck);
    if (n <= RANK_SELECT_MAX) return ranked_smallest(cand, ck, n, s, pos);
    double* keys = sc.keys.data();
    int64_t size = 0;
    for (int64_t i = 0; i < n; ++i) size = heap_offer(keys, pos, size, s, ck[i], cand[i]);
    sort_small(pos, size);
    return size;
}

// exact_smallest from the float32 weights x = fl32(w) where they decide it: the candidates'
// keys a_i = fl(-det_log_normal(u_i) / x_i) (exact_keys on x) are each within a factor
// 1 -+ 2**-23 of their exact keys (x within 1 -+ 2**-24 of w, two roundings of 2**-53), so
// when the s-th and (s + 1)-th smallest (a_i, i) are RANK32_GAP apart,
//   fl(a_s (1 + 2**-20)) < fl(a_s+1 (1 - 2**-20))  implies  a_s (1 + 2**-23) < a_s+1 (1 - 2**-23),
// every candidate ranked below s has an exact key strictly below every other's, and those s
// are the s smallest (key, position) pairs (the set is all the caller keeps; its order is the
// positions'). Otherwise (a near tie, or more than RANK_SELECT_MAX candidates) the float64
// weights decide, as exact_smallest.
constexpr double RANK32_GAP_LO = 1.0 + 0x1p-20;
constexpr double RANK32_GAP_HI = 1.0 - 0x1p-20;

static inline int64_t exact_smallest32(const int64_t* cand, const uint32_t* words, const float* x,
                                       const double* w, int64_t n, int64_t s, RowScratch& sc) {
    if (n == s || n > RANK_SELECT_MAX) return exact_smallest(cand, words, w, n, s, sc);
    uint32_t* cw = sc.cword.data();
    double* cx = sc.cval.data();
    for (int64_t i = 0; i < n; ++i) {
        cw[i] = words[cand[i]];
        cx[i] = static_cast<double>(x[cand[i]]);
    }
    double* ck = sc.ckey.data();
    candidate_keys(cw, cx, n, ck);
    double edge[2];  // the keys ranked s - 1 and s (n > s)
    const int64_t m = ranked_smallest(cand, ck, n, s, sc.pos.data(), edge);
    if (edge[0] * RANK32_GAP_LO < edge[1] * RANK32_GAP_HI) return m;
    return exact_smallest(cand, words, w, n, s, sc);
}

// A row of at most UNSCREENED_MAX entries and at most UNSCREENED_SLACK above twice its fanout
// takes every eligible entry's exact key, unscreened: a screen would keep most of its entries
// as candidates and often run twice.
constexpr int64_t UNSCREENED_MAX = 64;
constexpr int64_t UNSCREENED_SLACK = 4;

static inline bool weighted_row_unscreened(int64_t d, int64_t s) {
    return d <= UNSCREENED_MAX && d <= 2 * s + UNSCREENED_SLACK;
}

// The positions p < d with w[p] > 0, ascending, into cand; returns how many.
static inline int64_t eligible_positions(const double* w, int64_t d, int64_t* cand) {
    int64_t n = 0;
    for (int64_t p = 0; p < d; ++p) {
        cand[n] = p;
        n += w[p] > 0;
    }
    return n;
}

// eligible_positions on the float32 copies (x > 0 exactly where w > 0, for weights in range).
static inline int64_t eligible_positions32(const float* x, int64_t d, int64_t* cand) {
    int64_t n = 0;
    for (int64_t p = 0; p < d; ++p) {
        cand[n] = p;
        n += x[p] > 0.0f;
    }
    return n;
}

// The first threshold of a row with about wsum of weight: about s + sqrt(s) + 1 keys below it.
static inline double first_threshold(int64_t s, double wsum) {
    return (static_cast<double>(s) + std::sqrt(static_cast<double>(s)) + 1.0) / wsum;
}

// weighted_row (below) for a row with more than s >= 1 eligible entries, all of weight in
// [KEY_W_MIN, KEY_W_MAX], summing to about wsum; false (nothing written) when no threshold was
// found (the caller then runs rules.cuh's rule). The row's words once, then screen_levels from
// tau = first_threshold(s, wsum), at the first level whose count reaches s (tau 2**8 when
// none does) until at least s keys are surely <= tau. A short row (weighted_row_unscreened)
// takes the exact keys of all its eligible entries instead. w32: the row's float32 copies of
// w (weighted_row), read by the screen at thresholds it can test and by the ranks, or nullptr.
static inline bool weighted_row_screened(const Stream& st, const double* w, const float* w32,
                                         int64_t d, int64_t s, double wsum, RowScratch& sc,
                                         int64_t& size) {
    uint32_t* words = sc.words.data();
    stream_row_words(st.vertex, st.hop_word, st.batch, st.key, d, words);
    if (weighted_row_unscreened(d, s)) {
        if (w32) {
            const int64_t n = eligible_positions32(w32, d, sc.cand.data());
            size = exact_smallest32(sc.cand.data(), words, w32, w, n, s, sc);
        } else {
            const int64_t n = eligible_positions(w, d, sc.cand.data());
            size = exact_smallest(sc.cand.data(), words, w, n, s, sc);
        }
        return true;
    }
    double tau = first_threshold(s, wsum);
    if (w32 && tau >= SCREEN32_TAU_MIN && tau <= SCREEN32_TAU_MAX)
        tau = static_cast<double>(static_cast<float>(tau));  // any tau serves; a float one both screens
    for (;;) {
        if (!(tau >= 0x1p-1000 && tau <= 0x1p+1000)) return false;
        int64_t at[SCREEN_LEVELS];
        const bool narrow = w32 && screen32_tau(tau);
        bool levels = false;
        const int64_t n = narrow ? screen_levels32(words, w32, d, static_cast<float>(tau), s, sc, at, levels)
                                 : screen_levels(words, w, d, tau, s, sc, at);
        if (at[0] >= s) {
            size = narrow ? exact_smallest32(sc.cand.data(), words, w32, w, n, s, sc)
                          : exact_smallest(sc.cand.data(), words, w, n, s, sc);
            return true;
        }
        int k = 1;
        while (k < SCREEN_LEVELS && at[k] < s) ++k;
        tau *= static_cast<double>(int64_t(1) << k);
#ifdef SPSAMPLE_LW_X86
        if (levels && k < SCREEN_LEVELS && screen32_tau(tau)) {  // at[k] >= s sure at tau 2**k
            const int64_t nk = kept_at_level(sc.keep.data(), d, k, sc.cand.data());
            size = exact_smallest32(sc.cand.data(), words, w32, w, nk, s, sc);
            return true;
        }
#endif
    }
}

// The rules of device/rules.cuh on a RowScratch.
template <class Words>
static inline int64_t floyd_row(Words&& word, int64_t d, int64_t s, RowScratch& sc) {
    return floyd_row(word, d, s, sc.pos.data(), sc.set.data());
}

template <class Words>
static inline int64_t uniform_rep_row(Words&& word, int64_t d, int64_t s, RowScratch& sc) {
    return uniform_rep_row(word, d, s, sc.pos.data());
}

// Whether a row with statistics (eligible, wmax, wsum) has more than s eligible entries, all in
// [KEY_W_MIN, KEY_W_MAX] (wmax is NaN otherwise).
static inline bool stats_apply(const double* stats, int64_t s) {
    return stats[0] > static_cast<double>(s) && stats[1] == stats[1];
}

// Weighted without replacement over values w[0..d) (s >= 1 or -1): Efraimidis-Spirakis, the
// positions of device/rules.cuh's weighted_row (which this calls for short rows without
// statistics, for rows with at most s eligible entries and for weights outside [KEY_W_MIN,
// KEY_W_MAX]), computing the exact key exp_key(word_p, w_p) = fl(-det_log(u_p) / w_p),
// u_p = open_unit(word_p), only for the entries that can be among the s smallest:
//
//   1. the row's words 0 .. d - 1, eight blocks at a time (stream_row_words);
//   2. a threshold tau (first (s + sqrt(s) + 1) / sum(w), about s + sqrt(s) + 1 expected
//      keys below it; then the first of tau 2, 4, .., 128 at which the pass counted at least
//      s sure keys, or tau 256) such that at least s entries surely have key <= tau, and the
//      entries whose key may be <= tau (screen_levels: one vectorised pass over the words and
//      weights, on products, no logarithm, no division, no branch per entry). With v = 1 - u
//      (exact) and margins 1 -+ 2**-20:
//        v (1 - 2**-30) <= -det_log(u) <= (v / u) (1 + 2**-30) for every word (v <= -ln u <=
//        v / u, and det_log is within 2**-30 of ln: tests/test_weighted_screen.py checks
//        every word), so
//        fl(v (1 + 2**-20)) <= fl(fl(tau u) w)  implies  -det_log(u) / w <= tau  implies
//          key <= tau (rounding is monotone), and
//        fl(v (1 - 2**-20)) >  fl(tau w)         implies  -det_log(u) / w > tau (1 + 2**-40)
//          implies key > tau,
//      the margins exceeding the products' roundings (weights in [2**-900, 2**900] and tau in
//      [2**-1000, 2**1000] keep every product normal or +inf, which only weakens a test);
//   3. the s-th smallest key is <= tau, so every selected entry passed the screen: the exact
//      keys and rules.cuh's heap of the s smallest (key, position) pairs over those only,
//      in position order, then the positions sorted.
// Complexity O(d) vectorised (the words once, the screen usually once or twice), about
// s + sqrt(s) + 1 exact keys (none when exactly s entries may be below tau).
//
// stats, when given: the row's (eligible, wmax, wsum) of row_weight_stats (wmax NaN: a weight
// outside [KEY_W_MIN, KEY_W_MAX]); a row of at most s entries, all eligible, is then kept
// without reading its weights, and a longer one is screened without the census. w32, with
// stats: the row's float32 weights (Graph.screen_weights, every positive weight of the graph in
// [SCREEN32_W_MIN, SCREEN32_W_MAX]), which the screen (screen_levels32) and the ranks
// (exact_smallest32) then read instead of w, except at near ties.
static inline int64_t weighted_row(Stream& st, const double* w, int64_t d, int64_t s,
                                   RowScratch& sc, const double* stats = nullptr,
                                   const float* w32 = nullptr) {
    if (stats && stats[0] == static_cast<double>(d) && (s < 0 || d <= s)) {  // all eligible, all kept
        for (int64_t p = 0; p < d; ++p) sc.pos[p] = p;
        return d;
    }
    int64_t size = 0;
    if (s >= 1 && stats) {
        if (stats_apply(stats, s) && weighted_row_screened(st, w, w32, d, s, stats[2], sc, size))
            return size;
    } else if (s >= 1 && d >= WEIGHTED_FAST_MIN) {
        int64_t eligible = 0, odd = 0;
        const double wsum = weight_census(w, d, eligible, odd);
        if (eligible > s && odd == 0 && weighted_row_screened(st, w, nullptr, d, s, wsum, sc, size))
            return size;
    }
    return weighted_row(st, [w](int64_t p) { return w[p]; }, d, s, sc.pos.data(), sc.keys.data());
}

// Weighted with replacement over values w[0..d) (s >= 1 or -1): exponential races.
static inline int64_t weighted_rep_row(Stream& st, const double* w, int64_t d, int64_t s,
                                       RowScratch& sc) {
    return weighted_rep_row(st, [w](int64_t p) { return w[p]; }, d, s, sc.pos.data());
}

template <class Value>
static inline int64_t rejection_row(Stream& st, int64_t d, int64_t s, double bound, Value&& value,
                                    RowScratch& sc, bool& exceeded) {
    return rejection_row(st, d, s, bound, value, sc.pos.data(), exceeded);
}

// ------------------------------------------------------------- rejection on a value table
// A value program whose leaves are constants and indicators (node2vec's bias on an unweighted
// graph) values an entry by three bits only: I0 = (u == v), I1 = (u == t) and found (u in row
// t of the aux graph). Its 8 values, computed by run_program itself (so bit for bit the
// values rules.cuh's rejection_row compares), let a draw be decided without the lookup (and
// often without reading the column) whenever both values still possible lie on one side of
// the draw's threshold.
struct ValueTable {
    bool ok = false;         // the program is such, and no value exceeds the bound or is NaN
    double v[2][2][2];       // [I0][I1][found]
    double lo = 0.0;         // the smallest value
};

static inline ValueTable value_table(const ValueCode& pg, double bound) {
    ValueTable tab;
    for (int32_t i = 0; i < pg.size; ++i) {
        const int32_t op = pg.code[i].op;
        if (op != V_CONST && op != V_INDICATOR && op != V_FOUND && op != V_MUL && op != V_ADD &&
            op != V_SQUARE)
            return tab;
    }
    // u, v, t with the given indicators (v = t when both hold); nothing else is read
    const int64_t u_of[2][2] = {{2, 1}, {0, 0}};
    bool ok = true;
    double lo = 0.0;
    for (int i0 = 0; i0 < 2; ++i0)
        for (int i1 = 0; i1 < 2; ++i1)
            for (int f = 0; f < 2; ++f) {
                EntryCtx c;
                c.v = 0;
                c.t = (i0 && i1) ? 0 : 1;
                c.u = u_of[i0][i1];
                c.e = c.e2 = -1;
                c.found = f != 0;
                const double x = run_program(pg, c);
                tab.v[i0][i1][f] = x;
                ok = ok && x == x && !(x > bound);
                lo = (i0 | i1 | f) ? std::min(lo, x) : x;
            }
    tab.ok = ok;
    tab.lo = lo;
    return tab;
}

// Whether column u is in row t of g (sorted, unique columns): rules.cuh's find_in_row on the
// 32-bit columns when g has them (twice the columns per cache line), the last 16 candidates
// counted without branches (one or two cache lines instead of four dependent probes).
static inline bool in_row(const CSRView& g, int64_t t, int64_t u) {
    int64_t lo = g.indptr[t], hi = g.indptr[t + 1];
    const int64_t end = hi;
    auto search = [&](const auto* cols, auto key) {
        while (hi - lo > 16) {  // first position whose column is >= key lies in [lo, hi]
            const int64_t mid = lo + (hi - lo) / 2;
            if (cols[mid] < key) lo = mid + 1;
            else hi = mid;
        }
        int64_t below = 0;
        for (int64_t q = lo; q < hi; ++q) below += cols[q] < key;
        lo += below;
        return lo != end && cols[lo] == key;
    };
    if (g.indices32) {
        if (u < 0 || u > 0xFFFFFFFFll) return false;
        return search(g.indices32, static_cast<uint32_t>(u));
    }
    return search(g.indices, u);
}

// rules.cuh's rejection_row for a program with a ValueTable (tab.ok): the same draws, words,
// accepted positions and result. col(p) is the column of position p, found(u) whether u is
// in row t of the aux graph (the lookup), value(p) the program's value (the rare exact phase).
// pre: the stream's words 0 .. REJECTION_AHEAD - 1 computed ahead, or nullptr.
constexpr int64_t REJECTION_AHEAD = 8;

template <class Column, class Found, class Value>
static inline int64_t rejection_row_table(Stream& st, int64_t d, int64_t s, double bound,
                                          const ValueTable& tab, int64_t v, int64_t t,
                                          Column&& col, Found&& found, Value&& value,
                                          const uint32_t* pre, RowScratch& sc, bool& exceeded) {
    const int64_t A = REJECTION_ATTEMPTS;
    int64_t* pos = sc.pos.data();
    int64_t k = 0;
    auto word = [&](uint64_t index) {
        return pre && index < static_cast<uint64_t>(REJECTION_AHEAD) ? pre[index] : st.word(index);
    };
    for (int64_t i = 0; i < s; ++i) {
        int64_t got = -1;
        for (int64_t a = 0; a < A && got < 0; ++a) {
            const uint64_t index = 2 * static_cast<uint64_t>(A * i + a);
            const int64_t p = static_cast<int64_t>(uniform_int(word(index), d));
            const double x = open_unit(word(index + 1)) * bound;
            if (x < tab.lo) {  // below every value: accepted
                got = p;
                continue;
            }
            const int64_t u = col(p);
            const double* two = tab.v[u == v][u == t];
            if (x < two[0] && x < two[1]) {
                got = p;
            } else if (x >= two[0] && x >= two[1]) {
                continue;
            } else if (x < two[found(u) ? 1 : 0]) {
                got = p;
            }
        }
        if (got < 0) {  // exact keys over the row (rare): rules.cuh's
            got = rejection_exact(st, A, s, i, d, bound, value, exceeded);
            if (exceeded) return 0;
        }
        if (got >= 0) pos[k++] = got;
    }
    sort_small(pos, k);
    return k;
}

// ------------------------------------------------ node2vec: one draw per row, rows in batches
// rejection_row_table at s = 1 on every row of a hop (node2vec's steps), for many rows at once:
// up to REJ1_BATCH rows are active, and each round gives every active row its next attempt in
// phases -- draw (accepted below every value, else the column prefetched), read the columns and
// decide what the column alone decides, search row t of the aux graph for the rest (fence_find:
// all the round's searches a level at a time), then the accepted rows leave and new rows take their
// places. Each phase is a loop over independent rows with few data-dependent branches, so
// their cache misses overlap and few branches are mispredicted. Per row the same words, attempts,
// decisions and position as rejection_row_table (the membership test is exact whatever its
// probes).
constexpr int REJ1_BATCH = 512;
constexpr int64_t REJ1_AHEAD = 16;  // at most words 0 .. REJ1_AHEAD - 1 of every row's stream ahead
// The words ahead with AVX-512: rejection_rows1_avx512 computes a later attempt's block itself,
// about as fast as ahead, so fewer words ahead is less work for the rows that are accepted early.
constexpr int64_t REJ1_AHEAD_AVX512 = 8;

// Words 0 .. ahead - 1 of the streams (kw[r], hw, bid) under key, r < m: word w of row r at
// out[w * stride + r] (stride >= m; ahead = REJ1_AHEAD_AVX512 with AVX-512, else REJ1_AHEAD,
// as rejection_rows1 reads them). Integer-only, so every version gives the stream's words
// (rng.h): sixteen rows per vector with AVX-512 (the products as philox_simd.h's mulhilo16),
// else a loop the compiler vectorises (its clones).
SPSAMPLE_VECTOR_CLONES
static void rejection_words1_generic(const uint32_t* __restrict kw, int64_t m, uint32_t hw,
                                     uint32_t bid, Key key, uint32_t* __restrict out,
                                     int64_t stride) {
    for (int64_t b = 0; 4 * b < REJ1_AHEAD; ++b) {
        uint32_t* o = out + 4 * b * stride;
        for (int64_t r = 0; r < m; ++r) {
            uint32_t x0 = static_cast<uint32_t>(b), x1 = kw[r], x2 = hw, x3 = bid;
            philox_rounds(x0, x1, x2, x3, key);
            o[r] = x0;
            o[stride + r] = x1;
            o[2 * stride + r] = x2;
            o[3 * stride + r] = x3;
        }
    }
}

#ifdef SPSAMPLE_LW_X86
__attribute__((target("avx512f"))) static void rejection_words1_avx512(const uint32_t* kw, int64_t m,
                                                                      uint32_t hw, uint32_t bid,
                                                                      Key key, uint32_t* out,
                                                                      int64_t stride) {
    const __m512i m0 = _mm512_set1_epi32(static_cast<int>(PHILOX_M0));
    const __m512i m1 = _mm512_set1_epi32(static_cast<int>(PHILOX_M1));
    const __m512i v2 = _mm512_set1_epi32(static_cast<int>(hw));
    const __m512i v3 = _mm512_set1_epi32(static_cast<int>(bid));
    __m512i vka[10], vkb[10];
    philox_keys16(key, vka, vkb);
    for (int64_t r0 = 0; r0 < m; r0 += 16) {
        const __mmask16 mask = m - r0 >= 16 ? __mmask16(0xFFFF)
                                            : static_cast<__mmask16>((1u << (m - r0)) - 1);
        const __m512i v1 = _mm512_maskz_loadu_epi32(mask, kw + r0);
        for (int64_t b = 0; 4 * b < REJ1_AHEAD_AVX512; ++b) {
            __m512i x0 = _mm512_set1_epi32(static_cast<int>(b)), x1 = v1, x2 = v2, x3 = v3;
            for (int r = 0; r < 10; ++r) {
                philox_round16(x0, x1, x2, x3, m0, m1, vka[r], vkb[r]);
            }
            uint32_t* o = out + 4 * b * stride + r0;
            _mm512_mask_storeu_epi32(o, mask, x0);
            _mm512_mask_storeu_epi32(o + stride, mask, x1);
            _mm512_mask_storeu_epi32(o + 2 * stride, mask, x2);
            _mm512_mask_storeu_epi32(o + 3 * stride, mask, x3);
        }
    }
}
#endif

static inline void rejection_words1(const uint32_t* kw, int64_t m, uint32_t hw, uint32_t bid,
                                    Key key, uint32_t* out, int64_t stride) {
#ifdef SPSAMPLE_LW_X86
    if (lw_avx512()) return rejection_words1_avx512(kw, m, hw, bid, key, out, stride);
#endif
    rejection_words1_generic(kw, m, hw, bid, key, out, stride);
}

// The rows of one hop: row r < m has entries [start[r], start[r] + deg[r]) of the graph, row
// vertex v[r], aux vertex t[r] and stream word key[r].
struct Rej1Rows {
    int64_t m;
    const int64_t* start;
    const int64_t* deg;
    const int64_t* v;
    const int64_t* t;
    const int64_t* key;
};

// The membership tests of rejection_rows1, many at once: the position of key u in a row
// [lo, hi) of a graph's 32-bit columns (sorted, unique), through the graph's fence
// (CSRView::fence: fence[j] = cols[phase + 16 j], every 16th column from a 64-byte boundary,
// so a row's fence entries are sorted too and 1/16 of the columns' bytes). c = #{fence
// entries of the row <= u}, by halving while more than 16 remain (every search a level at a
// time, so their misses overlap), then counted over the rest (one or two lines of the fence);
// u can only be in the 16 columns from the last of those (or, when c = 0, among the row's
// columns before its first fence entry): a window inside one 64-byte line of the columns,
// read last. Exact whatever the probes: only the window's columns are compared with u.
struct FenceSearch {
    int64_t base, n;  // fence entries before base are <= u, those from base + n on are > u
    int64_t ja;       // the row's first fence entry
    int64_t lo, hi;   // the row
};

static inline FenceSearch fence_start(int64_t lo, int64_t hi, int64_t phase) {
    auto first_at = [phase](int64_t p) {  // the first fence index j with phase + 16 j >= p
        return p <= phase ? int64_t(0) : (p - phase + 15) >> 4;
    };
    const int64_t ja = first_at(lo);
    return FenceSearch{ja, first_at(hi) - ja, ja, lo, hi};
}

// Narrows a search to its window (f.lo, f.hi become [ws, we)), given c (the count of its row's
// fence entries <= u), and prefetches the window's line.
static inline void fence_window(FenceSearch& f, int64_t c, int64_t phase, const uint32_t* cols) {
    int64_t ws, we;
    if (c == 0) {  // before the row's first fence entry (the whole row when it has none)
        ws = f.lo;
        we = f.n > 0 ? phase + 16 * f.ja : f.hi;  // (n > 0: the row has fence entries)
    } else {
        ws = phase + 16 * (f.ja + c - 1);
        we = std::min(f.hi, ws + 16);
    }
    f.lo = ws;
    f.hi = we;
    __builtin_prefetch(cols + ws);
}

// at[j] = the position of key[j] in row [lo[j], hi[j]) of g's 32-bit columns, or -1 when it is
// not there, for j < n <= REJ1_BATCH (g.fence given).
__attribute__((always_inline)) static inline void fence_find(const CSRView& g, int n,
                                                             const int64_t* lo, const int64_t* hi,
                                                             const uint32_t* key, int64_t* at) {
    FenceSearch fs[REJ1_BATCH];
    int32_t deep[REJ1_BATCH];  // the searches with more than 16 fence entries left
    const uint32_t* fence = g.fence;
    const uint32_t* cols = g.indices32;
    const int64_t phase = g.fence_phase;
    auto probe_ahead = [&](int j) {  // the search's next fence probe
        const FenceSearch& f = fs[j];
        if (f.n > 16) {
            __builtin_prefetch(fence + f.base + f.n / 2);
        } else {
            __builtin_prefetch(fence + f.base);
            __builtin_prefetch(fence + f.base + 15);
        }
    };
    int kd = 0;
    for (int j = 0; j < n; ++j) {
        fs[j] = fence_start(lo[j], hi[j], phase);
        probe_ahead(j);
        deep[kd] = j;
        kd += fs[j].n > 16;
    }
    while (kd > 0) {  // one halving of every search with more than 16 fence entries left
        int kd2 = 0;
        for (int q = 0; q < kd; ++q) {
            const int j = deep[q];
            FenceSearch& f = fs[j];
            const int64_t half = f.n / 2;
            f.base += half & -static_cast<int64_t>(fence[f.base + half] <= key[j]);
            f.n -= half;
            probe_ahead(j);
            deep[kd2] = j;
            kd2 += f.n > 16;
        }
        kd = kd2;
    }
    for (int j = 0; j < n; ++j) {  // the windows (into lo, hi of fs)
        const FenceSearch& f = fs[j];
        int64_t c = f.base - f.ja;  // and the fence entries left (n <= 16)
        for (int64_t q = 0; q < f.n; ++q) c += fence[f.base + q] <= key[j];
        fence_window(fs[j], c, phase, cols);
    }
    for (int j = 0; j < n; ++j) {
        int64_t found = -1;
        for (int64_t q = fs[j].lo; q < fs[j].hi; ++q) found = cols[q] == key[j] ? q : found;
        at[j] = found;
    }
}

#ifdef SPSAMPLE_LW_X86
// fence_start's first_at on eight positions: the first fence index j with phase + 16 j >= p.
__attribute__((target("avx512f"))) static inline __m512i fence_first_at8(__m512i p, __m512i phase) {
    const __mmask8 after = _mm512_cmpgt_epi64_mask(p, phase);
    return _mm512_maskz_srli_epi64(
        after, _mm512_add_epi64(_mm512_sub_epi64(p, phase), _mm512_set1_epi64(15)), 4);
}

// fence_find with AVX-512, eight searches per vector: the same count c of the row's fence
// entries <= u, by halving while more than 16 are left (every vector a level at a time, the
// probes gathered), then counted over the rest (one masked 16-lane load per search); the same
// window (fence_window), and u compared with the window's columns (one masked 16-lane load per
// search). Exact as fence_find: only the window's columns decide.
__attribute__((target("avx512f"))) static void fence_find_avx512(const CSRView& g, int n,
                                                                const int64_t* lo,
                                                                const int64_t* hi,
                                                                const uint32_t* key, int64_t* at) {
    constexpr int P = REJ1_BATCH + 8;
    alignas(64) int64_t sbase[P], sn[P], stop[P], sws[P], swe[P];
    const uint32_t* fence = g.fence;
    const uint32_t* cols = g.indices32;
    const __m512i phase = _mm512_set1_epi64(g.fence_phase);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i sixteen = _mm512_set1_epi64(16);
    const __m512i count_at = sixteen;  // halving while more fence entries than this are left
    auto tail = [](int c) {  // the first min(c, 8) lanes
        return c >= 8 ? __mmask8(0xFF) : static_cast<__mmask8>((1u << c) - 1);
    };
    const int nvec = (n + 7) / 8;
    int32_t deep[P / 8];  // the vectors in which some search has more than 16 fence entries left
    int kd = 0;
    for (int v = 0; v < nvec; ++v) {
        const int j0 = 8 * v;
        const __mmask8 lm = tail(n - j0);
        const __m512i ja = fence_first_at8(_mm512_maskz_loadu_epi64(lm, lo + j0), phase);
        const __m512i nf =
            _mm512_sub_epi64(fence_first_at8(_mm512_maskz_loadu_epi64(lm, hi + j0), phase), ja);
        _mm512_store_si512(sbase + j0, ja);
        _mm512_store_si512(sn + j0, nf);
        deep[kd] = v;
        kd += _mm512_cmpgt_epi64_mask(nf, count_at) != 0;
    }
    while (kd > 0) {  // one halving of every search with more than 16 fence entries left
        int kd2 = 0;
        for (int q = 0; q < kd; ++q) {
            const int j0 = 8 * deep[q];
            const __mmask8 lm = tail(n - j0);
            const __m512i u = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(
                _mm512_maskz_loadu_epi32(static_cast<__mmask16>(lm), key + j0)));
            __m512i base = _mm512_load_si512(sbase + j0), c = _mm512_load_si512(sn + j0);
            const __mmask8 on = _mm512_cmpgt_epi64_mask(c, count_at);
            const __m512i half = _mm512_srli_epi64(c, 1);
            const __m512i probe = _mm512_cvtepu32_epi64(_mm512_mask_i64gather_epi32(
                _mm256_setzero_si256(), on, _mm512_add_epi64(base, half), fence, 4));
            const __mmask8 le = _mm512_mask_cmple_epi64_mask(on, probe, u);
            base = _mm512_mask_add_epi64(base, le, base, half);
            c = _mm512_mask_sub_epi64(c, on, c, half);
            _mm512_store_si512(sbase + j0, base);
            _mm512_store_si512(sn + j0, c);
            deep[kd2] = deep[q];
            kd2 += _mm512_cmpgt_epi64_mask(c, count_at) != 0;
        }
        kd = kd2;
    }
    for (int j = 0; j < n; ++j) {  // the last fence entry <= u (none when it is before ja)
        const int64_t b = sbase[j];
        const __mmask16 m = static_cast<__mmask16>((uint32_t(1) << sn[j]) - 1);
        const __m512i v = _mm512_maskz_loadu_epi32(m, fence + b);
        const __m512i u = _mm512_set1_epi32(static_cast<int>(key[j]));
        stop[j] = b - 1 + __builtin_popcount(_mm512_mask_cmple_epu32_mask(m, v, u));
    }
    for (int v = 0; v < nvec; ++v) {  // the windows (fence_window), prefetched
        const int j0 = 8 * v;
        const __mmask8 lm = tail(n - j0);
        const __m512i l = _mm512_maskz_loadu_epi64(lm, lo + j0);
        const __m512i h = _mm512_maskz_loadu_epi64(lm, hi + j0);
        const __m512i ja = fence_first_at8(l, phase);
        const __m512i top = _mm512_maskz_loadu_epi64(lm, stop + j0);
        const __mmask8 none = _mm512_cmplt_epi64_mask(top, ja);  // c = 0
        const __m512i nf = _mm512_sub_epi64(fence_first_at8(h, phase), ja);
        const __m512i ws_c = _mm512_add_epi64(phase, _mm512_slli_epi64(top, 4));
        const __m512i we_c = _mm512_min_epi64(h, _mm512_add_epi64(ws_c, sixteen));
        const __m512i we_0 = _mm512_mask_blend_epi64(_mm512_cmpgt_epi64_mask(nf, zero), h,
                                                     _mm512_add_epi64(phase, _mm512_slli_epi64(ja, 4)));
        const __m512i ws = _mm512_mask_blend_epi64(none, ws_c, l);
        const __m512i we = _mm512_mask_blend_epi64(none, we_c, we_0);
        _mm512_store_si512(sws + j0, ws);
        _mm512_store_si512(swe + j0, we);
        for (int j = 0; j < 8; ++j) __builtin_prefetch(cols + sws[j0 + j]);
    }
    for (int j = 0; j < n; ++j) {
        const int64_t ws = sws[j];
        const __mmask16 m = static_cast<__mmask16>((uint32_t(1) << (swe[j] - ws)) - 1);
        const __m512i v = _mm512_maskz_loadu_epi32(m, cols + ws);
        const __m512i u = _mm512_set1_epi32(static_cast<int>(key[j]));
        const uint32_t q = __builtin_ctz(_mm512_mask_cmpeq_epu32_mask(m, v, u) | 0x10000u);
        at[j] = (ws + q) | -static_cast<int64_t>(q >> 4);  // q = 16: not there (-1), no branch
    }
}
#endif

// got[r] = the drawn position of row r (-1: none: a row of degree 0, or every value 0).
// words: row r's words 0 .. REJ1_AHEAD - 1 (the portable rejection_words1's, stride m). cols:
// the graph's 32-bit columns; aux: the aux graph, with its 32-bit columns and fence
// (fence_find). value(r, p): the program's value (the exact phase after REJECTION_ATTEMPTS
// rejections). Returns false when a value exceeds the bound (got is then incomplete).
template <class Value>
static bool rejection_rows1_generic(const Rej1Rows& rows, const uint32_t* cols, const CSRView& aux,
                                    double bound, const ValueTable& tab, uint32_t hw, uint32_t bid,
                                    Key key, const uint32_t* words, Value&& value, int64_t* got) {
    constexpr int B = REJ1_BATCH;
    constexpr int64_t A = REJECTION_ATTEMPTS;
    int64_t act[B], att[B], pos[B];  // active rows, their attempt and its position,
    double xs[B];                     // threshold,
    uint32_t us[B];                   // column
    bool done[B];                     // and decision (accepted)
    int32_t cl[B], lk[B];             // rows reading a column, searching
    int64_t slo[B], shi[B], sat[B];   // per search: row t's extent and where u is in it
    uint32_t skey[B];
    const int64_t* start = rows.start;
    const int64_t* deg = rows.deg;
    const int64_t* aindptr = aux.indptr;
    int64_t next = 0;
    int k = 0;
    for (;;) {
        while (k < B && next < rows.m) {  // new rows (those of degree 0 draw nothing)
            const int64_t r = next++;
            got[r] = -1;
            act[k] = r;
            att[k] = 0;
            __builtin_prefetch(aindptr + rows.t[r]);
            k += deg[r] > 0;
        }
        if (k == 0) break;
        int kc = 0;
        for (int i = 0; i < k; ++i) {  // 1. draw: accepted below every value, else read the column
            const int64_t r = act[i], a = att[i];
            uint32_t w0, w1;
            if (a < REJ1_AHEAD / 2) {
                w0 = words[2 * a * rows.m + r];
                w1 = words[(2 * a + 1) * rows.m + r];
            } else {  // words 2a, 2a + 1: one block (the stream's words, rng.h)
                uint32_t blk[4];
                const uint64_t index = 2 * static_cast<uint64_t>(a);
                philox4x32(static_cast<uint32_t>(index >> 2), static_cast<uint32_t>(rows.key[r]), hw,
                           bid, key, blk);
                w0 = blk[index & 3];
                w1 = blk[(index & 3) + 1];
            }
            const int64_t p = static_cast<int64_t>(uniform_int(w0, static_cast<uint64_t>(deg[r])));
            const double x = open_unit(w1) * bound;
            pos[i] = p;
            got[r] = p;  // a row's last attempt is its accepted one
            xs[i] = x;
            const bool fast = x < tab.lo;
            done[i] = fast;
            __builtin_prefetch(cols + start[r] + p);
            cl[kc] = i;
            kc += !fast;
        }
        int kl = 0;
        for (int c = 0; c < kc; ++c) {  // 2. the column decides, or row t is searched
            const int i = cl[c];
            const int64_t r = act[i];
            const uint32_t u = cols[start[r] + pos[i]];
            us[i] = u;
            const double* two = tab.v[u == rows.v[r]][u == rows.t[r]];
            const double x = xs[i];
            const bool below0 = x < two[0], below1 = x < two[1];
            done[i] = below0 & below1;
            lk[kl] = i;
            kl += below0 != below1;
        }
        for (int j = 0; j < kl; ++j) {  // 3. the searches: u in row t of the aux graph
            const int i = lk[j];
            const int64_t t = rows.t[act[i]];
            slo[j] = aindptr[t];
            shi[j] = aindptr[t + 1];
            skey[j] = us[i];
        }
        if (kl > 0) fence_find(aux, kl, slo, shi, skey, sat);
        for (int j = 0; j < kl; ++j) {  // and the decisions
            const int i = lk[j];
            const uint32_t u = us[i];
            const int64_t r = act[i];
            done[i] = xs[i] < tab.v[u == rows.v[r]][u == rows.t[r]][sat[j] >= 0 ? 1 : 0];
        }
        int k2 = 0;
        for (int i = 0; i < k; ++i) {  // 4. accepted rows leave, the others try again
            const int64_t r = act[i];
            act[k2] = r;
            att[k2] = att[i] + 1;
            k2 += !done[i];
        }
        k = k2;
        for (int i = 0; i < k; ++i) {
            if (att[i] < A) continue;
            // every attempt rejected: exact keys over the row (rare): rules.cuh's
            const int64_t r = act[i];
            Stream st(static_cast<uint32_t>(rows.key[r]), hw, bid, key);
            bool exceeded = false;
            got[r] = rejection_exact(st, A, 1, 0, deg[r], bound,
                                     [&](int64_t p) { return value(r, p); }, exceeded);
            if (exceeded) return false;
            act[i] = act[k - 1];
            att[i] = att[k - 1];
            --k;
            --i;
        }
    }
    return true;
}

#ifdef SPSAMPLE_LW_X86
// Words 2a, 2a + 1 of eight streams (kw, hw, bid) under key, a = att (64-bit lanes), when a
// lies past the words computed ahead: block a >> 1 of each stream, its words 0, 1 (a even) or
// 2, 3 (a odd), as Stream::word. The rounds of philox_rounds, a lane's 32 bits in the low half
// of its 64 (mul_epu32 reads only those; the high halves are never read).
__attribute__((target("avx512f"))) static inline void rej1_far_words8(__m512i att, __m512i kw,
                                                                     uint32_t hw, uint32_t bid,
                                                                     Key key, __m512i& w0,
                                                                     __m512i& w1) {
    const __m512i m0 = _mm512_set1_epi64(PHILOX_M0), m1 = _mm512_set1_epi64(PHILOX_M1);
    __m512i x0 = _mm512_srli_epi64(att, 1), x1 = kw;
    __m512i x2 = _mm512_set1_epi64(hw), x3 = _mm512_set1_epi64(bid);
    uint32_t ka = key.k0, kb = key.k1;
    for (int r = 0; r < 10; ++r) {
        const __m512i p0 = _mm512_mul_epu32(x0, m0), p1 = _mm512_mul_epu32(x2, m1);
        x0 = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p1, 32), x1, _mm512_set1_epi64(ka), 0x96);
        x2 = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p0, 32), x3, _mm512_set1_epi64(kb), 0x96);
        x1 = p1;
        x3 = p0;
        ka += PHILOX_W0;
        kb += PHILOX_W1;
    }
    const __mmask8 odd = _mm512_test_epi64_mask(att, _mm512_set1_epi64(1));
    const __m512i low = _mm512_set1_epi64(0xFFFFFFFFll);
    w0 = _mm512_and_si512(_mm512_mask_blend_epi64(odd, x0, x2), low);
    w1 = _mm512_and_si512(_mm512_mask_blend_epi64(odd, x1, x3), low);
}

// mask's lanes of x, in order, to out[0 ..) (out has room for eight): a compress in a register
// and a full store, which on some cores (AMD Zen 4) is much faster than a compress to memory.
__attribute__((target("avx512f"))) static inline void rej1_compress_store(int64_t* out,
                                                                         __mmask8 mask, __m512i x) {
    _mm512_storeu_si512(out, _mm512_maskz_compress_epi64(mask, x));
}

// rejection_rows1 with AVX-512, eight active rows per vector: the same rounds and phases, each
// phase a loop over vectors of the round's rows, whose state (row, extent, v, t, attempt, the
// index of its words ahead) is kept here in structure-of-arrays slots, so it is loaded
// contiguously. Per row the same words, positions, decisions and result as
// rejection_rows1_generic: the words ahead gathered (attempts past them: rej1_far_words8),
// uniform_int as bits 32..63 of (w0 deg) mod 2^64 from two 32 x 32-bit products (deg's halves),
// open_unit as the same two exact double steps and one rounded product; the columns and row
// t's extents gathered (the columns prefetched a phase ahead), the decisions compares against
// tab's values (permuted by the indicators), the membership tests fence_find_avx512's, the rows
// that stay compressed (the exact phase as the scalar one).
template <class Value>
__attribute__((target("avx512f"))) static bool rejection_rows1_avx512(
    const Rej1Rows& rows, const uint32_t* cols, const CSRView& aux, double bound,
    const ValueTable& tab, uint32_t hw, uint32_t bid, Key key, const uint32_t* words,
    Value&& value, int64_t* got) {
    constexpr int B = REJ1_BATCH;
    constexpr int P = B + 16;  // slots, with room for a vector's stores past the last row
    constexpr int64_t A = REJECTION_ATTEMPTS;
    alignas(64) int64_t sr[P], sstart[P], sdeg[P], sv[P], st[P], satt[P], swi[P];  // the rows
    alignas(64) int64_t spos[P], saddr[P];  // this attempt: position, column's index
    alignas(64) double sx[P];                // and threshold
    uint8_t fast_m[P / 8], done_m[P / 8], look_m[P / 8], b1_m[P / 8];  // per vector of slots
    alignas(64) uint8_t found[P];
    alignas(64) int64_t lk[P], lt[P], slo[P], shi[P], sat[P];  // the searches: slot, t, extent
    alignas(64) uint32_t skey[P + 8];
    alignas(64) int64_t out_r[P], out_p[P], tired[P];  // rows leaving; rows out of attempts
    const int64_t m = rows.m;
    const int64_t* aindptr = aux.indptr;
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i words_step = _mm512_set1_epi64(2 * m);
    const __m512d tabv = _mm512_loadu_pd(&tab.v[0][0][0]);
    const __m512d vlo = _mm512_set1_pd(tab.lo), vbound = _mm512_set1_pd(bound);
    const __m512d half = _mm512_set1_pd(0.5), scale = _mm512_set1_pd(1.0 / 4294967296.0);
    const __m512i low = _mm512_set1_epi64(0xFFFFFFFFll);
    auto tail = [](int n) {  // the first min(n, 8) lanes
        return n >= 8 ? __mmask8(0xFF) : static_cast<__mmask8>((1u << n) - 1);
    };
    int64_t next = 0;
    int k = 0;
    for (;;) {
        while (k <= B - 8 && next < m) {  // new rows (those of degree 0 draw nothing)
            const __mmask8 tm = tail(static_cast<int>(std::min<int64_t>(8, m - next)));
            const __m512i d = _mm512_maskz_loadu_epi64(tm, rows.deg + next);
            const __m512i t = _mm512_maskz_loadu_epi64(tm, rows.t + next);
            _mm512_mask_storeu_epi64(got + next, tm, _mm512_set1_epi64(-1));
            const __mmask8 nz = _mm512_mask_cmpgt_epi64_mask(tm, d, zero);
            const __m512i r = _mm512_add_epi64(lane, _mm512_set1_epi64(next));
            rej1_compress_store(sr + k, nz, r);
            rej1_compress_store(swi + k, nz, r);  // word 0 of row r
            rej1_compress_store(satt + k, nz, zero);
            rej1_compress_store(sdeg + k, nz, d);
            rej1_compress_store(st + k, nz, t);
            rej1_compress_store(sstart + k, nz,
                                             _mm512_maskz_loadu_epi64(tm, rows.start + next));
            rej1_compress_store(sv + k, nz, _mm512_maskz_loadu_epi64(tm, rows.v + next));
            alignas(64) int64_t tt[8];
            _mm512_store_si512(tt, t);
            for (int j = 0; j < 8; ++j) __builtin_prefetch(aindptr + tt[j]);
            k += __builtin_popcount(nz);
            next += 8;
        }
        if (next > m) next = m;
        if (k == 0) break;
        const int nvec = (k + 7) / 8;
        for (int g = 0; g < nvec; ++g) {  // 1. draw: accepted below every value, else prefetch
            const int i0 = 8 * g;
            const __mmask8 lm = tail(k - i0);
            const __m512i att = _mm512_load_si512(satt + i0);
            const __m512i wi = _mm512_load_si512(swi + i0);
            const __mmask8 near =
                _mm512_mask_cmplt_epi64_mask(lm, att, _mm512_set1_epi64(REJ1_AHEAD_AVX512 / 2));
            __m512i w0 = _mm512_cvtepu32_epi64(
                _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), near, wi, words, 4));
            __m512i w1 = _mm512_cvtepu32_epi64(_mm512_mask_i64gather_epi32(
                _mm256_setzero_si256(), near, _mm512_add_epi64(wi, _mm512_set1_epi64(m)), words, 4));
            const __mmask8 far = lm & ~near;
            if (far) {
                const __m512i r = _mm512_load_si512(sr + i0);
                const __m512i kw = _mm512_mask_i64gather_epi64(zero, far, r, rows.key, 8);
                __m512i f0, f1;
                rej1_far_words8(att, kw, hw, bid, key, f0, f1);
                w0 = _mm512_mask_blend_epi64(far, w0, f0);
                w1 = _mm512_mask_blend_epi64(far, w1, f1);
            }
            const __m512i d = _mm512_load_si512(sdeg + i0);  // uniform_int(w0, d)
            const __m512i lo_prod = _mm512_mul_epu32(w0, d);
            const __m512i hi_prod = _mm512_mul_epu32(w0, _mm512_srli_epi64(d, 32));
            const __m512i p =
                _mm512_and_si512(_mm512_add_epi64(_mm512_srli_epi64(lo_prod, 32), hi_prod), low);
            const __m512d x = _mm512_mul_pd(
                _mm512_mul_pd(_mm512_add_pd(_mm512_cvtepu32_pd(_mm512_cvtepi64_epi32(w1)), half),
                              scale),
                vbound);
            const __mmask8 fast = _mm512_mask_cmp_pd_mask(lm, x, vlo, _CMP_LT_OQ);
            const __m512i addr = _mm512_maskz_add_epi64(
                lm & ~fast, _mm512_load_si512(sstart + i0), p);
            _mm512_store_si512(spos + i0, p);
            _mm512_store_pd(sx + i0, x);
            _mm512_store_si512(saddr + i0, addr);
            for (int j = 0; j < 8; ++j) __builtin_prefetch(cols + saddr[i0 + j]);
            fast_m[g] = fast;
        }
        int kl = 0;
        for (int g = 0; g < nvec; ++g) {  // 2. the column decides, or row t is searched
            const int i0 = 8 * g;
            const __mmask8 lm = tail(k - i0);
            const __mmask8 rd = lm & ~fast_m[g];
            const __m512i u = _mm512_cvtepu32_epi64(_mm512_mask_i64gather_epi32(
                _mm256_setzero_si256(), rd, _mm512_load_si512(saddr + i0), cols, 4));
            const __m512i t = _mm512_load_si512(st + i0);
            const __mmask8 eqv = _mm512_cmpeq_epi64_mask(u, _mm512_load_si512(sv + i0));
            const __mmask8 eqt = _mm512_cmpeq_epi64_mask(u, t);
            const __m512i at = _mm512_or_si512(_mm512_maskz_mov_epi64(eqv, _mm512_set1_epi64(4)),
                                               _mm512_maskz_mov_epi64(eqt, _mm512_set1_epi64(2)));
            const __m512d two0 = _mm512_permutexvar_pd(at, tabv);
            const __m512d two1 =
                _mm512_permutexvar_pd(_mm512_add_epi64(at, _mm512_set1_epi64(1)), tabv);
            const __m512d x = _mm512_load_pd(sx + i0);
            const __mmask8 b0 = _mm512_cmp_pd_mask(x, two0, _CMP_LT_OQ);
            const __mmask8 b1 = _mm512_cmp_pd_mask(x, two1, _CMP_LT_OQ);
            const __mmask8 look = rd & (b0 ^ b1);
            done_m[g] = fast_m[g] | (rd & b0 & b1);
            look_m[g] = look;
            b1_m[g] = b1;
            rej1_compress_store(lk + kl, look, _mm512_add_epi64(lane, _mm512_set1_epi64(i0)));
            rej1_compress_store(lt + kl, look, t);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(skey + kl),
                                _mm512_cvtepi64_epi32(_mm512_maskz_compress_epi64(look, u)));
            kl += __builtin_popcount(look);
        }
        if (kl > 0) {  // 3. the searches: u in row t of the aux graph
            for (int j = 0; j < kl; j += 8) {
                const __mmask8 lm = tail(kl - j);
                const __m512i t = _mm512_maskz_loadu_epi64(lm, lt + j);
                _mm512_store_si512(slo + j, _mm512_mask_i64gather_epi64(zero, lm, t, aindptr, 8));
                _mm512_store_si512(shi + j,
                                   _mm512_mask_i64gather_epi64(zero, lm, t, aindptr + 1, 8));
            }
            fence_find_avx512(aux, kl, slo, shi, skey, sat);
            for (int j = 0; j < kl; ++j) found[lk[j]] = sat[j] >= 0;
        }
        int k2 = 0, nout = 0, ntired = 0;
        for (int g = 0; g < nvec; ++g) {  // 4. accepted rows leave, the others try again
            const int i0 = 8 * g;
            const __mmask8 lm = tail(k - i0);
            const __mmask8 f = _mm512_test_epi64_mask(
                _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(found + i0))),
                _mm512_set1_epi64(1));
            const __mmask8 done = done_m[g] | (look_m[g] & ~(f ^ b1_m[g]));
            const __m512i r = _mm512_load_si512(sr + i0);
            rej1_compress_store(out_r + nout, lm & done, r);
            rej1_compress_store(out_p + nout, lm & done, _mm512_load_si512(spos + i0));
            nout += __builtin_popcount(lm & done);
            const __m512i att = _mm512_add_epi64(_mm512_load_si512(satt + i0), _mm512_set1_epi64(1));
            const __mmask8 left = lm & ~done;
            const __mmask8 out = _mm512_mask_cmpge_epi64_mask(left, att, _mm512_set1_epi64(A));
            const __mmask8 keep = left & ~out;
            if (out) {
                rej1_compress_store(tired + ntired, out, r);
                ntired += __builtin_popcount(out);
            }
            rej1_compress_store(sr + k2, keep, r);
            rej1_compress_store(satt + k2, keep, att);
            rej1_compress_store(
                swi + k2, keep, _mm512_add_epi64(_mm512_load_si512(swi + i0), words_step));
            rej1_compress_store(sstart + k2, keep, _mm512_load_si512(sstart + i0));
            rej1_compress_store(sdeg + k2, keep, _mm512_load_si512(sdeg + i0));
            rej1_compress_store(sv + k2, keep, _mm512_load_si512(sv + i0));
            rej1_compress_store(st + k2, keep, _mm512_load_si512(st + i0));
            k2 += __builtin_popcount(keep);
        }
        for (int q = 0; q < nout; ++q) got[out_r[q]] = out_p[q];
        k = k2;
        for (int q = 0; q < ntired; ++q) {
            // every attempt rejected: exact keys over the row (rare): rules.cuh's
            const int64_t r = tired[q];
            Stream s(static_cast<uint32_t>(rows.key[r]), hw, bid, key);
            bool exceeded = false;
            got[r] = rejection_exact(s, A, 1, 0, rows.deg[r], bound,
                                     [&](int64_t p) { return value(r, p); }, exceeded);
            if (exceeded) return false;
        }
    }
    return true;
}
#endif

// got[r] = the drawn position of row r (-1: none: a row of degree 0, or every value 0), as
// rejection_rows1_generic (the portable version, and the oracle of the AVX-512 one). words:
// rejection_words1's output (stride m), which has the words each version reads.
template <class Value>
static bool rejection_rows1(const Rej1Rows& rows, const uint32_t* cols, const CSRView& aux,
                            double bound, const ValueTable& tab, uint32_t hw, uint32_t bid, Key key,
                            const uint32_t* words, Value&& value, int64_t* got) {
#ifdef SPSAMPLE_LW_X86
    if (lw_avx512())
        return rejection_rows1_avx512(rows, cols, aux, bound, tab, hw, bid, key, words, value, got);
#endif
    return rejection_rows1_generic(rows, cols, aux, bound, tab, hw, bid, key, words, value, got);
}

// LABOR-0's threshold rule for a row (columns cols[0..d)) longer than s >= 0: emit(p) for every
// kept position (threshold_keeps). The columns' words are computed CHUNK at a time by
// column_words (vectorised; the same words as device/rules.cuh's threshold_row).
template <class Emit>
static inline int64_t threshold_row_simd(const int64_t* cols, int64_t d, int64_t s, uint32_t hw,
                                         uint32_t bid, Key key, Emit&& emit) {
    constexpr int64_t CHUNK = 256;
    uint32_t c32[CHUNK], words[CHUNK];
    int64_t k = 0;
    for (int64_t at = 0; at < d; at += CHUNK) {
        const int64_t n = std::min(CHUNK, d - at);
        for (int64_t i = 0; i < n; ++i) c32[i] = static_cast<uint32_t>(cols[at + i]);
        column_words(c32, n, hw, bid, key, words);
        for (int64_t i = 0; i < n; ++i) {
            if (threshold_keeps(words[i], d, s)) {
                emit(at + i);
                ++k;
            }
        }
    }
    return k;
}

// A value program that owns its instructions and vector table (built by the bindings);
// view() is what the bodies read (valid while the program lives and is not modified).
struct ValueProgram {
    std::vector<Instr> code;
    std::vector<const double*> vectors;  // float64 vectors referenced by arg
    const double* weights = nullptr;     // the base graph's weights (V_WEIGHT ctx 0)
    const CSRView* aux = nullptr;        // graph of lookups (V_WEIGHT/V_EDGE ctx 1, V_FOUND)
    bool uses_lookup = false;            // V_FOUND / ctx 1 leaves present
    bool only_weight = false;            // code == [V_WEIGHT ctx 0]: read weights directly

    ValueCode view() const {
        ValueCode v;
        v.code = code.data();
        v.size = static_cast<int32_t>(code.size());
        v.vectors = vectors.data();
        v.weights = weights;
        if (aux) v.aux = *aux;
        v.uses_lookup = uses_lookup;
        v.only_weight = only_weight;
        return v;
    }
};

}  // namespace spsample

#endif  // SPSAMPLE_SELECT_H
