// Fused layer-wise bulk sampling (LADIES, FastGCN): all layers of all minibatches in one call.
//
// Layer l (0-based) of minibatch j with vertex set B_l (its n_id before the layer's selection,
// in local order; B_0 = the seeds, B_{l+1} = B_l + the layer's new vertices):
//
//   LADIES  P_l[u] = sum over v in B_l (local order), entries of row v (storage order) of a_vu**2
//           (a = 1 on unweighted graphs) -- the segmented column accumulation of Q_b (A o A),
//           taken serially in that order. Since B_l is a prefix of B_{l+1}, P_{l+1} continues
//           P_l's serial sums with the rows new at layer l + 1: every row is accumulated once
//           per minibatch, not once per layer, with bit-identical sums. Columns with P = 0 are
//           dropped. If at most s columns remain all are kept, else the s smallest Efraimidis-
//           Spirakis keys neg_log(open_unit(w_u)) / P_l[u], w_u = word 0 of stream (u, hop word,
//           global batch id), ties to the smaller u.
//   FastGCN P[u] = q[u] (global column weights, given) and s i.i.d. draws: draw i takes words 2i,
//           2i + 1 of stream (NO_VERTEX, hop word, batch id), U = unit53(w0, w1), u = first
//           column whose cumulative weight exceeds U * total (clamped to n - 1); deduplicated.
//
// The chosen columns are appended to n_id in ascending order (those not already present). The
// layer's edges are every entry a_vu > 0 of the rows v in B_l whose column u is in B_{l+1}, in
// (local v, storage) order, valued a_vu / P_l[u] and divided by their row's serial sum (all 0
// when that sum is 0). This is exactly spsample.samplers.LADIES / FastGCN and
// spsample._reference.
//
// Because local ids grow with the layers, "v in B_l and u in B_{l+1}" is "stage(v) <= l and
// stage(u) <= l + 1" (stage = the layer that added the vertex, 0 for seeds), so the edges of
// every layer come from one scan of the rows of B_{L-1}: pass 1 keeps the entries whose column
// is in n_id (an n-bit membership bitset, L2-resident; AVX-512 gather/compress where the CPU has
// it) as records (local u, entry, first layer max(stage(v), stage(u) - 1)), which also gives
// every layer's exact edge count; pass 2 writes each layer, rows in local order, records in
// storage order, into one exact-size block from o.alloc.
//
// Inputs:  g (CSRView; g.indices unused: the rows are read from o.indices32, the same ids as
//          uint32); seeds[0..b) distinct ids in [0, n); bid, the global minibatch id; o.
// Outputs: n_id (N, int64, unique: seeds, then each layer's new vertices ascending), counts
//          (L + 1), per layer dst (non-decreasing), src, eid (ascending within each dst), weight,
//          all edge arrays in out.block (freed by the caller).
// Complexity per minibatch: O(D) for the accumulation and the edges, D = sum of the degrees of
//          the rows of B_{L-1}; O(C) per layer for the keys and the top-s selection (a bounded
//          heap, O(C + s log s log C) expected), C = touched columns (<= D); FastGCN O(s log n)
//          per layer for the draws.
// Memory:  per thread n-sized arrays cleared in O(C + N) per minibatch (32-bit counts, or
//          float64 sums and a touched bitset on weighted graphs; 32-bit local ids; a membership
//          bitset) and O(D) scratch (touched list, hit records); outputs exactly
//          sum_l (edges_l + 1) * 32 bytes plus n_id.
//
// Profiling: compile with -DSPSAMPLE_LW_PROFILE to accumulate per-phase wall time in lw_prof[]
// (one thread; a C++ harness reads it).
#ifndef SPSAMPLE_LAYERWISE_H
#define SPSAMPLE_LAYERWISE_H

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define SPSAMPLE_LW_AVX512 1
#endif

#include "nodewise.h"
#include "rng.h"

namespace spsample {

#ifdef SPSAMPLE_LW_PROFILE
inline double lw_prof[8];
#define LW_T0 auto lw_t = std::chrono::steady_clock::now();
#define LW_TICK(i) { auto lw_n = std::chrono::steady_clock::now(); lw_prof[i] += std::chrono::duration<double>(lw_n - lw_t).count(); lw_t = lw_n; }
#else
#define LW_T0
#define LW_TICK(i)
#endif

struct LayerWiseOptions {
    std::vector<int64_t> fanouts;         // layer 1 first; -1 = all (LADIES only)
    Key key{0, 0};
    uint64_t epoch = 0;
    bool fastgcn = false;
    const double* q_global = nullptr;     // FastGCN: column weights, size n
    const double* cumulative = nullptr;   // FastGCN: serial prefix sums of q_global, size n
    // Allocator of a minibatch's output block: returns >= bytes (capacity in *cap), or nullptr
    // on failure; nullptr hook = malloc. The caller of layerwise_minibatch frees the block.
    void* (*alloc)(size_t bytes, size_t* cap) = nullptr;
    const uint32_t* indices32 = nullptr;  // g.indices as uint32 (required; ids < 2**32)
};

// One minibatch's layer-wise result. All edge arrays live in one block (one allocation of
// exactly sum over layers of (count + 1) * (3 int64 + 1 float64) bytes; the + 1 is the slack
// of the branch-free writes): layer l's dst, src, eid, weight hold count[l] elements each.
struct LayerWiseOut {
    PodBuf<int64_t> n_id;
    std::vector<int64_t> counts;          // vertices new at each layer (counts[0] = seeds)
    void* block = nullptr;
    size_t block_cap = 0;                 // bytes
    std::vector<int64_t> edge_count;      // per layer
    std::vector<int64_t*> dst, src, eid;  // per layer, into block
    std::vector<double*> weight;
};

constexpr uint32_t NO_LOCAL = 0xFFFFFFFFu;

// Efraimidis-Spirakis keys of LADIES candidates: key[i] = neg_log(open_unit(w)) / q[i], w = word
// 0 of Philox block (0, u[i], hw, bid). Lane-wise IEEE +, *, / only (det_log_normal), so the
// vectorised clones return the scalar bits. The x86-64-v4 clone (AVX-512 DQ/VL) is ~30 %
// faster than plain AVX-512F on the 32 x 32 -> 64-bit products. Complexity O(c).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("arch=x86-64-v4", "avx512f", "avx2", "default")))
#endif
static void ladies_keys(const uint32_t* __restrict u, const double* __restrict q, int64_t c,
                        uint32_t hw, uint32_t bid, Key key, double* __restrict out) {
    for (int64_t i = 0; i < c; ++i) {
        const uint32_t w0 = philox4x32_word0(0u, u[i], hw, bid, key);
        out[i] = -det_log_normal(open_unit(w0)) / q[i];
    }
}

// The same keys on an unweighted graph, the column sums being the counts cnt[u[i]] (exact
// integers, so q = double(count) is the sum the weighted path would take).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("arch=x86-64-v4", "avx512f", "avx2", "default")))
#endif
static void ladies_keys_counts(const uint32_t* __restrict u, const uint32_t* __restrict cnt, int64_t c,
                               uint32_t hw, uint32_t bid, Key key, double* __restrict out) {
    for (int64_t i = 0; i < c; ++i) {
        const uint32_t w0 = philox4x32_word0(0u, u[i], hw, bid, key);
        out[i] = -det_log_normal(open_unit(w0)) / static_cast<double>(cnt[u[i]]);
    }
}

struct LayerWiseScratch {
    // Vertex-indexed state, sized n once per thread and cleared per minibatch in O(touched):
    std::vector<uint32_t> cnt;          // unweighted: vertex -> LADIES column sum so far (a count)
    std::vector<double> acc;            // weighted: vertex -> LADIES column sum so far
    std::vector<uint64_t> touched_bit;  // weighted: bit per vertex, in `touched`
    std::vector<uint64_t> member_bit;   // bit per vertex: in n_id
    std::vector<uint32_t> local_of;     // vertex -> local id (valid where member_bit is set)
    // Per-minibatch lists:
    PodBuf<uint32_t> touched;           // vertices with an entry in an accumulated row, first-touch order
    std::vector<double> key_q, keys;
    std::vector<std::pair<double, uint64_t>> keyed;
    std::vector<int64_t> chosen;
    std::vector<std::vector<double>> P;  // P[l][local] for local < |B_{l+1}| (LADIES)
    std::vector<double> inv_p;           // 1 / P[l][local] (unweighted LADIES edge values)
    // Edge pass: the entries whose column is in n_id ("hits") of the rows of B_{L-1}
    PodBuf<uint32_t> hit_off;           // offsets within one row
    PodBuf<uint32_t> rec_lu;            // hit -> local id of its column
    PodBuf<int64_t> rec_e;              // hit -> entry index
    PodBuf<uint8_t> rec_lmin;           // hit -> first layer the edge belongs to
    PodBuf<int64_t> row_hits;           // row -> first hit (rows + 1)

    void resize(int64_t n, bool weighted) {
        if (weighted) {
            acc.assign(n, 0.0);
            touched_bit.assign((n + 63) / 64, 0);
        } else {
            cnt.assign(n, 0);
        }
        member_bit.assign((n + 63) / 64, 0);
        local_of.assign(n, NO_LOCAL);
    }
};

static inline bool test_bit(const uint64_t* bits, uint32_t u) { return (bits[u >> 6] >> (u & 63)) & 1u; }

// Offsets j (ascending) of the entries row[0..deg) whose vertex has its bit set in `bits`;
// returns how many were written to out. out needs deg + 16 slots (the vector path stores 16
// lanes at a time). Integer-only, so every path gives the same result.
static inline int64_t member_offsets_scalar(const uint32_t* row, int64_t deg, const uint64_t* bits,
                                            uint32_t* out) {
    int64_t t = 0;
    for (int64_t j = 0; j < deg; ++j) {
        out[t] = static_cast<uint32_t>(j);
        t += test_bit(bits, row[j]);
    }
    return t;
}

#ifdef SPSAMPLE_LW_AVX512
// AVX-512F: 16 entries per step (gather the 32-bit bitset words, shift, test, compress).
__attribute__((target("avx512f"))) static int64_t member_offsets_avx512(const uint32_t* row, int64_t deg,
                                                                          const uint64_t* bits, uint32_t* out) {
    const int* words = reinterpret_cast<const int*>(bits);  // little-endian: bit u = bit u & 31 of word u >> 5
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i low5 = _mm512_set1_epi32(31);
    const __m512i one = _mm512_set1_epi32(1);
    int64_t t = 0, j = 0;
    for (; j + 16 <= deg; j += 16) {
        const __m512i u = _mm512_loadu_si512(reinterpret_cast<const void*>(row + j));
        const __m512i word = _mm512_i32gather_epi32(_mm512_srli_epi32(u, 5), words, 4);
        const __m512i shifted = _mm512_srlv_epi32(word, _mm512_and_si512(u, low5));
        const __mmask16 hit = _mm512_test_epi32_mask(shifted, one);
        const __m512i offs = _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int>(j)));
        _mm512_storeu_si512(reinterpret_cast<void*>(out + t), _mm512_maskz_compress_epi32(hit, offs));
        t += __builtin_popcount(static_cast<unsigned>(hit));
    }
    for (; j < deg; ++j) {
        out[t] = static_cast<uint32_t>(j);
        t += test_bit(bits, row[j]);
    }
    return t;
}
#endif

static inline int64_t member_offsets(const uint32_t* row, int64_t deg, const uint64_t* bits, uint32_t* out) {
#ifdef SPSAMPLE_LW_AVX512
    // SPSAMPLE_NATIVE_SCALAR=1 forces the portable scan (tests run both; results are the same).
    static const bool avx512 = __builtin_cpu_supports("avx512f") && !std::getenv("SPSAMPLE_NATIVE_SCALAR");
    if (avx512) return member_offsets_avx512(row, deg, bits, out);
#endif
    return member_offsets_scalar(row, deg, bits, out);
}

// Sample all layers of one minibatch (see the header comment). sc sized for g.n.
static void layerwise_minibatch(const CSRView& g, const int64_t* seeds, int64_t b, uint32_t bid,
                                const LayerWiseOptions& o, LayerWiseScratch& sc, LayerWiseOut& out) {
    constexpr int64_t PF = 8;            // prefetch distance in rows
    constexpr int64_t PF_ENTRIES = 16;   // prefetch distance in entries
    LW_T0
    const int L = static_cast<int>(o.fanouts.size());
    const int64_t* indptr = g.indptr;
    const uint32_t* idx32 = o.indices32;
    const double* w = g.weights;
    double* acc = sc.acc.data();
    uint32_t* cnt = sc.cnt.data();
    uint64_t* touched_bit = sc.touched_bit.data();
    // the column sum of vertex u so far (exact integers on unweighted graphs)
    auto colsum = [&](uint64_t u) -> double { return w ? acc[u] : static_cast<double>(cnt[u]); };
    uint64_t* member_bit = sc.member_bit.data();
    uint32_t* local_of = sc.local_of.data();
    PodBuf<int64_t>& n_id = out.n_id;
    n_id.assign(seeds, seeds + b);
    out.counts.assign(1, b);
    sc.touched.clear();
    sc.P.resize(L);
    for (int64_t i = 0; i < b; ++i) {
        const uint32_t u = static_cast<uint32_t>(seeds[i]);
        local_of[u] = static_cast<uint32_t>(i);
        member_bit[u >> 6] |= uint64_t(1) << (u & 63);
    }
    std::vector<int64_t> bsize(1, b);  // |B_0|, |B_1|, ..., |B_L|
    std::vector<int64_t> entries;      // entries[l] = sum of the degrees of the rows of B_l
    int64_t accumulated = 0;           // rows of n_id whose entries are in the column sums
    for (int l = 0; l < L; ++l) {
        const int64_t s = o.fanouts[l];
        const uint32_t hw = hop_word(o.epoch, l + 1);
        const int64_t B = static_cast<int64_t>(n_id.size());
        {
            int64_t d = entries.empty() ? 0 : entries.back();
            for (int64_t i = (l == 0 ? 0 : bsize[l - 1]); i < B; ++i) d += indptr[n_id[i] + 1] - indptr[n_id[i]];
            entries.push_back(d);
        }
        auto& chosen = sc.chosen;
        chosen.clear();
        if (!o.fastgcn) {
            // P_l: continue the serial column sums with the rows new to B_l, read from the
            // 32-bit copy of indices. The random updates are prefetched PF_ENTRIES ahead within
            // a row, and the next row's first PF_ENTRIES at the start of each row.
            const int64_t total = entries[l] - (l == 0 ? 0 : entries[l - 1]);
            const int64_t nt0 = static_cast<int64_t>(sc.touched.size());
            sc.touched.resize(nt0 + total);  // at most one new vertex per entry
            uint32_t* touched = sc.touched.data();
            int64_t nt = nt0;
            for (int64_t i = accumulated; i < B; ++i) {
                if (i + PF < B) __builtin_prefetch(idx32 + indptr[n_id[i + PF]]);
                const int64_t v = n_id[i];
                const int64_t e0 = indptr[v], deg = indptr[v + 1] - e0;
                const uint32_t* row = idx32 + e0;
                if (i + 1 < B) {
                    const int64_t vn = n_id[i + 1];
                    const int64_t n0 = indptr[vn], nd = std::min<int64_t>(indptr[vn + 1] - n0, PF_ENTRIES);
                    for (int64_t j = 0; j < nd; ++j)
                        __builtin_prefetch(w ? static_cast<const void*>(&acc[idx32[n0 + j]])
                                             : static_cast<const void*>(&cnt[idx32[n0 + j]]), 1);
                }
                if (w) {
                    const double* wr = w + e0;
                    for (int64_t j = 0; j < deg; ++j) {
                        if (j + PF_ENTRIES < deg) __builtin_prefetch(&acc[row[j + PF_ENTRIES]], 1);
                        const uint32_t u = row[j];
                        acc[u] += wr[j] * wr[j];
                        const uint64_t bit = uint64_t(1) << (u & 63);
                        const uint64_t word = touched_bit[u >> 6];
                        touched_bit[u >> 6] = word | bit;
                        touched[nt] = u;                       // branch-free append on first touch
                        nt += (word & bit) ? 0 : 1;
                    }
                } else {  // counts: first touch = the count was 0
                    for (int64_t j = 0; j < deg; ++j) {
                        if (j + PF_ENTRIES < deg) __builtin_prefetch(&cnt[row[j + PF_ENTRIES]], 1);
                        const uint32_t u = row[j];
                        const uint32_t old = cnt[u];
                        cnt[u] = old + 1;
                        touched[nt] = u;
                        nt += old == 0 ? 1 : 0;
                    }
                }
            }
            sc.touched.resize(nt);
            accumulated = B;
            LW_TICK(0)
            // Efraimidis-Spirakis keys of every touched column (+inf where P = 0, never chosen)
            const int64_t C = nt;
            // Unweighted: every touched column has a count >= 1, so K = C and the keys read
            // the counts directly. Weighted: P may be 0 (zero weights): +inf keys, never chosen.
            int64_t K = C;  // columns with P > 0
            double* q = nullptr;
            if (w) {
                sc.key_q.resize(C);
                q = sc.key_q.data();
                K = 0;
                for (int64_t c = 0; c < C; ++c) {
                    q[c] = acc[touched[c]];
                    K += q[c] > 0 ? 1 : 0;
                }
            }
#ifdef SPSAMPLE_LW_PROFILE
            lw_prof[5] += K; lw_prof[6] += C;
#endif
            if (s < 0 || K <= s) {
                for (int64_t c = 0; c < C; ++c)
                    if (colsum(touched[c]) > 0) chosen.push_back(touched[c]);
            } else {
                sc.keys.resize(C);
                LW_TICK(1)
                if (w) {
                    ladies_keys(touched, q, C, hw, bid, o.key, sc.keys.data());
                } else {
                    ladies_keys_counts(touched, cnt, C, hw, bid, o.key, sc.keys.data());
                }
                LW_TICK(7)
                // the s smallest (key, vertex) pairs: a max-heap of s pairs; after it fills,
                // almost every key is rejected by one comparison with its top (expected
                // s ln(K / s) replacements), so this is O(C + s log s log C).
                auto& keyed = sc.keyed;
                keyed.resize(s);
                const double* keys = sc.keys.data();
                for (int64_t i = 0; i < s; ++i) keyed[i] = std::make_pair(keys[i], uint64_t(touched[i]));
                std::make_heap(keyed.begin(), keyed.end());
                double top = keyed.front().first;
                for (int64_t i = s; i < C; ++i) {
                    if (keys[i] > top) continue;  // the common case
                    const std::pair<double, uint64_t> x(keys[i], uint64_t(touched[i]));
                    if (!(x < keyed.front())) continue;
                    std::pop_heap(keyed.begin(), keyed.end());
                    keyed.back() = x;
                    std::push_heap(keyed.begin(), keyed.end());
                    top = keyed.front().first;
                }
                for (int64_t i = 0; i < s; ++i) chosen.push_back(static_cast<int64_t>(keyed[i].second));
            }
            std::sort(chosen.begin(), chosen.end());
            LW_TICK(1)
        } else {
            const int64_t n = g.n;
            const double total = n > 0 ? o.cumulative[n - 1] : 0.0;
            if (n > 0 && total > 0) {
                Stream st(NO_VERTEX, hw, bid, o.key);
                for (int64_t i = 0; i < s; ++i) {
                    const uint32_t w0 = st.word(2 * static_cast<uint64_t>(i));
                    const uint32_t w1 = st.word(2 * static_cast<uint64_t>(i) + 1);
                    const double target = unit53(w0, w1) * total;
                    int64_t col = std::upper_bound(o.cumulative, o.cumulative + n, target) - o.cumulative;
                    chosen.push_back(std::min(col, n - 1));
                }
                std::sort(chosen.begin(), chosen.end());
                chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
            }
        }
        for (int64_t x : chosen) {
            const uint32_t u = static_cast<uint32_t>(x);
            if (!test_bit(member_bit, u)) {
                local_of[u] = static_cast<uint32_t>(n_id.size());
                member_bit[u >> 6] |= uint64_t(1) << (u & 63);
                n_id.push_back(x);
            }
        }
        const int64_t B1 = static_cast<int64_t>(n_id.size());
        out.counts.push_back(B1 - B);
        bsize.push_back(B1);
        if (!o.fastgcn) {  // P_l of B_{l+1}, for the edge values
            std::vector<double>& P = sc.P[l];
            P.resize(B1);
            for (int64_t x = 0; x < B1; ++x) P[x] = colsum(static_cast<uint64_t>(n_id[x]));
        }
    }
    LW_TICK(2)
    // Edges of every layer in one pass over the rows of B_{L-1}.
    const int64_t rows = bsize[L - 1];
    std::vector<uint8_t> stage(static_cast<size_t>(bsize[L]));
    for (int t = 0, x = 0; t <= L; ++t)
        for (; x < bsize[t]; ++x) stage[x] = static_cast<uint8_t>(t);
    // Pass 1: the hits of every row, compacted branch-free (stage 1 keeps the offsets whose
    // column is in n_id; stage 2 resolves them to records and drops a_vu <= 0).
    sc.row_hits.resize(rows + 1);
    int64_t max_deg = 0;
    for (int64_t i = 0; i < rows; ++i) max_deg = std::max(max_deg, indptr[n_id[i] + 1] - indptr[n_id[i]]);
    sc.hit_off.resize(max_deg + 16);
    const int64_t D = entries[L - 1];
    sc.rec_lu.resize(D + 1);
    sc.rec_e.resize(D + 1);
    sc.rec_lmin.resize(D + 1);
    uint32_t* hit_off = sc.hit_off.data();
    uint32_t* rec_lu = sc.rec_lu.data();
    int64_t* rec_e = sc.rec_e.data();
    uint8_t* rec_lmin = sc.rec_lmin.data();
    int64_t* row_hits = sc.row_hits.data();
    int64_t hist[257] = {0};
    int64_t m = 0;
    for (int64_t i = 0; i < rows; ++i) {
        const int64_t v = n_id[i];
        const int64_t e0 = indptr[v], deg = indptr[v + 1] - e0;
        if (i + PF < rows) __builtin_prefetch(idx32 + indptr[n_id[i + PF]]);
        row_hits[i] = m;
        const uint32_t* row_cols = idx32 + e0;
        const int64_t t = member_offsets(row_cols, deg, member_bit, hit_off);
        const int si = stage[i];
        for (int64_t j = 0; j < t; ++j) {
            const uint32_t off = hit_off[j];
            const int64_t e = e0 + off;
            const uint32_t u = row_cols[off];  // cached by the scan
            const uint32_t lu = local_of[u];
            const int64_t keep = w ? (w[e] > 0 ? 1 : 0) : 1;
            const int lm = std::max(si, stage[lu] - 1);
            rec_lu[m] = lu;
            rec_e[m] = e;
            rec_lmin[m] = static_cast<uint8_t>(lm);
            hist[lm] += keep;
            m += keep;
        }
    }
    row_hits[rows] = m;
    LW_TICK(3)
    // Exact output sizes: layer l holds the hits with lmin <= l.
    out.edge_count.assign(L, 0);
    size_t bytes = 0;
    for (int l = 0; l < L; ++l) {
        out.edge_count[l] = (l == 0 ? 0 : out.edge_count[l - 1]) + hist[l];
        bytes += static_cast<size_t>(out.edge_count[l] + 1) * (3 * sizeof(int64_t) + sizeof(double));
    }
    size_t cap = bytes;
    void* block = o.alloc ? o.alloc(bytes, &cap) : std::malloc(bytes);
    if (!block) throw std::bad_alloc();
    out.block = block;
    out.block_cap = cap;
    out.dst.resize(L);
    out.src.resize(L);
    out.eid.resize(L);
    out.weight.resize(L);
    char* cursor = static_cast<char*>(block);
    for (int l = 0; l < L; ++l) {
        const size_t len = static_cast<size_t>(out.edge_count[l] + 1);
        out.dst[l] = reinterpret_cast<int64_t*>(cursor);
        out.src[l] = out.dst[l] + len;
        out.eid[l] = out.src[l] + len;
        out.weight[l] = reinterpret_cast<double*>(out.eid[l] + len);
        cursor += len * (3 * sizeof(int64_t) + sizeof(double));
    }
    // Pass 2: layer by layer, rows in local order, hits in storage order; weights a / P_l[u]
    // divided by their row's serial sum (0 when that sum is 0).
    for (int l = 0; l < L; ++l) {
        int64_t* dst = out.dst[l];
        int64_t* src = out.src[l];
        int64_t* eid = out.eid[l];
        double* wt = out.weight[l];
        const double* P = o.fastgcn ? nullptr : sc.P[l].data();
        if (!o.fastgcn && !w) {  // unweighted LADIES: a / p = 1 / p, one division per vertex
            std::vector<double>& inv = sc.inv_p;
            inv.resize(sc.P[l].size());
            for (size_t x = 0; x < inv.size(); ++x) inv[x] = 1.0 / P[x];
            P = inv.data();
        }
        const bool reciprocal = !o.fastgcn && !w;
        int64_t c = 0;
        const int64_t layer_rows = bsize[l];
        for (int64_t i = 0; i < layer_rows; ++i) {
            const int64_t lo = c;
            for (int64_t h = row_hits[i]; h < row_hits[i + 1]; ++h) {
                const uint32_t lu = rec_lu[h];
                const int64_t e = rec_e[h];
                const double a = w ? w[e] : 1.0;
                const bool in_layer = rec_lmin[h] <= l;
                // (P[l] covers B_{l+1} only: a hit outside the layer reads P[0] instead)
                const double p = o.fastgcn ? o.q_global[n_id[lu]] : P[in_layer ? lu : 0];
                dst[c] = i;
                src[c] = lu;
                eid[c] = e;
                wt[c] = reciprocal ? p : a / p;
                c += in_layer ? 1 : 0;
            }
            double total = 0.0;
            for (int64_t x = lo; x < c; ++x) total += wt[x];
            if (total > 0) {
                for (int64_t x = lo; x < c; ++x) wt[x] = wt[x] / total;
            } else {
                for (int64_t x = lo; x < c; ++x) wt[x] = 0.0;
            }
        }
    }
    LW_TICK(4)
    // Forget this minibatch's vertices (O(touched + n_id)).
    for (size_t c = 0; c < sc.touched.size(); ++c) {
        const uint32_t u = sc.touched[c];
        if (w) {
            acc[u] = 0.0;
            touched_bit[u >> 6] = 0;
        } else {
            cnt[u] = 0;
        }
    }
    for (size_t x = 0; x < n_id.size(); ++x) {
        const uint32_t u = static_cast<uint32_t>(n_id[x]);
        member_bit[u >> 6] = 0;
    }
}

}  // namespace spsample

#endif  // SPSAMPLE_LAYERWISE_H
