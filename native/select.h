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
#include <cstdint>
#include <utility>
#include <vector>

#include "common.h"
#include "device/rules.cuh"
#include "philox_simd.h"
#include "rng.h"

namespace spsample {

// Per-thread scratch of the row rules, sized by the caller (scratch of device/rules.cuh).
struct RowScratch {
    std::vector<int64_t> pos;
    std::vector<double> keys;      // weighted heap
    std::vector<double> vals;      // a row's values (value programs)
    std::vector<uint64_t> set;     // Floyd membership for large fanouts

    // Room for a row of length d at fanout s (values when `valued`).
    void fit(int64_t d, int64_t s, bool valued) {
        const size_t need = static_cast<size_t>(std::max<int64_t>(d, s) + 1);
        if (pos.size() < need) pos.resize(need);
        const size_t slots = static_cast<size_t>(floyd_set_slots(d, s));
        if (set.size() < slots) set.resize(slots);
        if (valued) {
            if (keys.size() < need) keys.resize(need);
            if (vals.size() < static_cast<size_t>(d + 1)) vals.resize(d + 1);
        }
    }
};

// The rules of device/rules.cuh on a RowScratch.
template <class Words>
static inline int64_t floyd_row(Words&& word, int64_t d, int64_t s, RowScratch& sc) {
    return floyd_row(word, d, s, sc.pos.data(), sc.set.data());
}

template <class Words>
static inline int64_t uniform_rep_row(Words&& word, int64_t d, int64_t s, RowScratch& sc) {
    return uniform_rep_row(word, d, s, sc.pos.data());
}

// Weighted without replacement over values w[0..d) (s >= 1 or -1): Efraimidis-Spirakis.
static inline int64_t weighted_row(Stream& st, const double* w, int64_t d, int64_t s,
                                   RowScratch& sc) {
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
