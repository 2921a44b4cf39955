// Counter-based random numbers of spsample, bit-identical to spsample/_rng.py, for the host and
// the GPU (single source; see hd.cuh for the rules every body follows).
//
// Every function here is a pure function of its arguments and uses only integer arithmetic
// or a fixed sequence of IEEE-754 double additions, multiplications and divisions. Host code
// must be compiled with -ffp-contract=off (no fused multiply-add) and without -ffast-math,
// device code with --fmad=false (nvcc and NVRTC), so that det_log() rounds exactly as NumPy's
// vectorised version does.
//
// References: J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw, "Parallel random numbers:
// as easy as 1, 2, 3", SC'11 (Philox4x32-10); D. Lemire, "Fast random integer generation in
// an interval", ACM TOMACS 2019 (multiply-shift).
#ifndef SPSAMPLE_DEVICE_PHILOX_CUH
#define SPSAMPLE_DEVICE_PHILOX_CUH

#include "hd.cuh"

namespace spsample {

inline constexpr uint32_t PHILOX_M0 = 0xD2511F53u;
inline constexpr uint32_t PHILOX_M1 = 0xCD9E8D57u;
inline constexpr uint32_t PHILOX_W0 = 0x9E3779B9u;
inline constexpr uint32_t PHILOX_W1 = 0xBB67AE85u;

// The vertex word of streams that belong to no vertex (layer-wise draws).
inline constexpr uint32_t NO_VERTEX = 0xFFFFFFFFu;

// A Philox key (seed mod 2**32, seed div 2**32).
struct Key {
    uint32_t k0, k1;
};

// Counter word 2 of the RNG: (epoch << 8) | hop.
SPSAMPLE_HD inline uint32_t hop_word(uint64_t epoch, int hop) {
    return static_cast<uint32_t>(((epoch & 0xFFFFFFu) << 8) | (static_cast<uint32_t>(hop) & 255u));
}

// The ten Philox4x32 rounds on the counter (x0, x1, x2, x3), in place.
SPSAMPLE_HD inline void philox_rounds(uint32_t& x0, uint32_t& x1, uint32_t& x2, uint32_t& x3,
                                      Key key) {
    uint32_t ka = key.k0, kb = key.k1;
    SPSAMPLE_UNROLL(10)
    for (int r = 0; r < 10; ++r) {
        const uint64_t p0 = static_cast<uint64_t>(PHILOX_M0) * x0;
        const uint64_t p1 = static_cast<uint64_t>(PHILOX_M1) * x2;
        const uint32_t y0 = static_cast<uint32_t>(p1 >> 32) ^ x1 ^ ka;
        const uint32_t y1 = static_cast<uint32_t>(p1);
        const uint32_t y2 = static_cast<uint32_t>(p0 >> 32) ^ x3 ^ kb;
        const uint32_t y3 = static_cast<uint32_t>(p0);
        x0 = y0; x1 = y1; x2 = y2; x3 = y3;
        ka += PHILOX_W0;
        kb += PHILOX_W1;
    }
}

// Philox4x32-10 of the counter (c0, c1, c2, c3) under `key`; the four words go to out[0..3].
//
// Complexity: 10 rounds, 2 64-bit multiplications each.
SPSAMPLE_HD inline void philox4x32(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, Key key,
                                   uint32_t out[4]) {
    uint32_t x0 = c0, x1 = c1, x2 = c2, x3 = c3;
    philox_rounds(x0, x1, x2, x3, key);
    out[0] = x0; out[1] = x1; out[2] = x2; out[3] = x3;
}

// Word 0 of philox4x32 (the same rounds, one output).
SPSAMPLE_HD inline uint32_t philox4x32_word0(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                             Key key) {
    uint32_t x0 = c0, x1 = c1, x2 = c2, x3 = c3;
    philox_rounds(x0, x1, x2, x3, key);
    return x0;
}

// One keyed stream (vertex, hop_word, batch): word i is word i % 4 of block i / 4.
// Caches the last block, so reading consecutive words costs one Philox call per four words.
struct Stream {
    uint32_t vertex, hop_word, batch;
    Key key;
    uint64_t cached_block = ~uint64_t(0);
    uint32_t words[4];

    SPSAMPLE_HD Stream(uint32_t v, uint32_t hw, uint32_t b, Key k)
        : vertex(v), hop_word(hw), batch(b), key(k) {}

    // Word `index` of the stream (block index taken mod 2**32, as NumPy's uint32 counter does).
    SPSAMPLE_HD inline uint32_t word(uint64_t index) {
        const uint64_t block = index >> 2;
        if (block != cached_block) {
            philox4x32(static_cast<uint32_t>(block), vertex, hop_word, batch, key, words);
            cached_block = block;
        }
        return words[index & 3];
    }
};

// uniform_int(word, m) = (word * m) >> 32, in [0, m) for m < 2**32 (uint64 wrap-around otherwise,
// as NumPy's uint64 product).
SPSAMPLE_HD inline uint64_t uniform_int(uint32_t word, uint64_t m) {
    return (static_cast<uint64_t>(word) * m) >> 32;
}

// open_unit(word) = (word + 0.5) / 2**32, in (0, 1).
SPSAMPLE_HD inline double open_unit(uint32_t word) {
    return (static_cast<double>(word) + 0.5) * (1.0 / 4294967296.0);
}

// unit53(w0, w1) = ((w0 >> 5) * 2**26 + (w1 >> 6)) / 2**53, in [0, 1).
SPSAMPLE_HD inline double unit53(uint32_t w0, uint32_t w1) {
    const double a = static_cast<double>(w0 >> 5);
    const double b = static_cast<double>(w1 >> 6);
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

// The common tail of det_log: ln(m 2**e) for m in [sqrt(1/2), sqrt(2)).
SPSAMPLE_HD inline double det_log_tail(double m, double e) {
    const double LN2 = 0.6931471805599453;
    const double z = (m - 1.0) / (m + 1.0);
    const double z2 = z * z;
    double p = 1.0 / 19.0;
    const double coef[9] = {1.0 / 1.0, 1.0 / 3.0, 1.0 / 5.0, 1.0 / 7.0, 1.0 / 9.0,
                            1.0 / 11.0, 1.0 / 13.0, 1.0 / 15.0, 1.0 / 17.0};
    SPSAMPLE_UNROLL(9)
    for (int k = 8; k >= 0; --k) {
        const double t = p * z2;   // two statements: never contracted into an FMA
        p = t + coef[k];
    }
    const double a = 2.0 * z;
    const double b = a * p;
    const double c = e * LN2;
    return b + c;
}

// frexp(x) for finite x >= 0: x = m 2**e, m in [1/2, 1) (m = e = 0 for x = 0): exact, from the
// bits (subnormals scaled by 2**54 first, exactly), as std::frexp and CUDA's frexp.
SPSAMPLE_HD inline double frexp_exact(double x, int* e) {
    if (x == 0.0) {
        *e = 0;
        return x;
    }
    int adjust = 0;
    uint64_t bits = bits_of(x);
    if (((bits >> 52) & 0x7FF) == 0) {
        bits = bits_of(x * 18014398509481984.0);  // 2**54
        adjust = -54;
    }
    *e = static_cast<int>((bits >> 52) & 0x7FF) - 1022 + adjust;
    return double_of((bits & 0x800FFFFFFFFFFFFFull) | (uint64_t(1022) << 52));
}

// det_log(x): ln(x) for positive finite x from +, *, / only; the expression tree of
// spsample._rng.det_log (x = m 2**e, m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(z),
// z = (m - 1)/(m + 1), Horner's rule to z**19).
SPSAMPLE_HD inline double det_log(double x) {
    const double SQRT_HALF = 0.7071067811865476;
    int e_int = 0;
    double m = frexp_exact(x, &e_int);
    if (m < SQRT_HALF) {
        m = m * 2.0;
        e_int -= 1;
    }
    return det_log_tail(m, static_cast<double>(e_int));
}

// det_log for positive normal x (as open_unit's results), with frexp done on the bits: the
// same values as det_log, in branch-free code that vectorises.
SPSAMPLE_HD inline double det_log_normal(double x) {
    const double SQRT_HALF = 0.7071067811865476;
    const uint64_t bits = bits_of(x);
    const uint64_t half_bits = bits_of(SQRT_HALF);
    const uint64_t one_bits = bits_of(1.0);
    // exponent field as a double, exactly: (2**52 + field) - 2**52
    double e = double_of(uint64_t(0x4330000000000000ull) | ((bits >> 52) & 0x7FF));
    e = (e - 4503599627370496.0) - 1022.0;
    const uint64_t mbits = (bits & 0x800FFFFFFFFFFFFFull) | (uint64_t(1022) << 52);
    const double m = double_of(mbits);
    // low = (m < sqrt(1/2)) as 1.0 / 0.0; positive doubles order as their bit patterns (an
    // integer compare, so the loop has no control flow and vectorises)
    const double low = double_of((mbits < half_bits ? ~uint64_t(0) : uint64_t(0)) & one_bits);
    return det_log_tail(m * (1.0 + low), e - low);   // m * 2 or m * 1: exact
}

// Efraimidis-Spirakis key of an entry of weight w > 0: neg_log(open_unit(word)) / w.
SPSAMPLE_HD inline double exp_key(uint32_t word, double w) {
    return -det_log(open_unit(word)) / w;
}

}  // namespace spsample

#endif  // SPSAMPLE_DEVICE_PHILOX_CUH
