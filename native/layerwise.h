// Fused layer-wise bulk sampling (LADIES, FastGCN): all layers of all minibatches in one call.
//
// Layer l (0-based) of minibatch j with vertex set B_l (its n_id before the layer's selection,
// in local order; B_0 = the seeds, B_{l+1} = B_l + the layer's new vertices), s = fanouts[l]:
//
//   LADIES  P_l[u] = sum over v in B_l (local order), entries of row v (storage order) of a_vu**2
//           (a = 1 on unweighted graphs): the segmented column sums of Q_b (A o A), taken
//           serially in that order. The candidates are the columns with P_l > 0. If there are
//           at most s (or s = -1) all are chosen, else s of them, without replacement, with
//           probability proportional to P_l:
//           - unweighted: by draws of entries. The D_l entries of the rows of B_l are numbered
//             in (local row, storage) order; draw t takes words 2t, 2t + 1 of stream
//             (NO_VERTEX, hop word, global batch id), U = unit53(w0, w1), the entry
//             E = min(floor(U * D_l), D_l - 1) and its column; the first s distinct columns
//             drawn are chosen. A column comes up with probability P_l[u] / D_l and repeats are
//             skipped (successive sampling), so no column sum is needed to choose: about s
//             draws when no few columns hold most entries (on R-MAT 20, 1.03 to 1.08 draws
//             per chosen column).
//             Whether there are more than s candidates is seen by marking the rows' columns
//             in a bitset until s + 1 are distinct (usually after about s entries).
//           - weighted: the s smallest Efraimidis-Spirakis keys neg_log(open_unit(w_u)) / P_l[u],
//             w_u = word 0 of stream (u, hop word, global batch id), ties to the smaller u
//             (smallest_keys), over the column sums continued layer by layer in acc: since
//             B_l is a prefix of B_{l+1}, P_{l+1} continues P_l's serial sums with the rows new
//             at layer l + 1, and every row is accumulated once per minibatch.
//   FastGCN P[u] = q[u] (global column weights, given) and s i.i.d. draws: draw i takes words 2i,
//           2i + 1 of stream (NO_VERTEX, hop word, batch id), U = unit53(w0, w1), u = first
//           column whose cumulative weight exceeds U * total (clamped to the last column of
//           positive weight); deduplicated.
//
// The chosen columns are appended to n_id in ascending order (those not already present). The
// layer's edges are every entry with a_vu**2 > 0 of the rows v in B_l whose column u is in B_{l+1}, in
// (local v, storage) order, valued a_vu / P_l[u] and divided by their row's serial sum (all 0
// when that sum is 0). This is exactly spsample.samplers.LADIES / FastGCN and
// spsample._reference.
//
// Because local ids grow with the layers, "v in B_l and u in B_{l+1}" is "stage(v) <= l and
// stage(u) <= l + 1" (stage = the layer that added the vertex, 0 for seeds), so the edges of
// every layer come from one scan of the rows of B_{L-1}: pass 1 keeps the entries whose column
// is in n_id (an n-bit membership bitset, L2-resident; AVX-512 gather/compress, or AVX2 packing
// of each eight tests, where the CPU has them) as records (local u, entry, first layer
// max(stage(v), stage(u) - 1)), which also gives every layer's exact edge count, and sums the
// LADIES P_l[u] of the vertices of n_id over the hits in the oracle's order (the only column
// sums unweighted LADIES takes); pass 2 (layerwise_write, once every minibatch of the bulk has
// its exact sizes) writes each layer, rows in local order, records in storage order, straight
// into the bulk's flat output arrays.
//
// Internal ids: the vertex-indexed state (sums, marks, membership, local ids) is indexed by an
// internal column id, the column's rank by in-degree (o.internal_of / o.vertex_of, built once
// per graph by spsample.native), and the rows are read from o.indices32, the CSR's columns as
// internal ids. Most entries point to hubs, so their bit tests and updates stay in the first
// few hundred KB of those arrays (on R-MAT 20, 77 % of the entries point to the first 64 K
// ids). Only cache behaviour changes: sums are per column in the same order, keys and ties use
// the vertex ids, so the results are those of the vertex-indexed computation, bit for bit.
//
// Inputs:  g (CSRView; g.indices unused); seeds[0..b) distinct ids in [0, n); bid, the global
//          minibatch id; o (with indices32, internal_of and vertex_of).
// Outputs: layerwise_minibatch: n_id (N, int64, unique: seeds, then each layer's new vertices
//          ascending), counts (L + 1), the exact edge count of every layer and what pass 2
//          needs; layerwise_write: per layer dst (non-decreasing), src, eid (ascending within
//          each dst), weight.
// Complexity per minibatch: O(D) for the edges, D = sum of the degrees of the rows of B_{L-1}.
//          Unweighted LADIES per layer: O(|B_l|) for the entry numbering, the marks until s + 1
//          distinct columns (O(s) expected, O(D_l) at worst) and O(log |B_l|) per draw (one
//          Philox block per two draws). Weighted LADIES: O(D) for the accumulation, per layer
//          O(n / 64 + C) to list the C touched columns, O(C) Philox words and
//          O(s log s log C) exact keys and heap updates (expected; smallest_keys). FastGCN
//          O(s log n) per layer for the draws.
// Memory:  per thread n-sized arrays cleared in O(C + N) per minibatch (a bitset of marked or
//          touched columns; float64 sums on weighted graphs; 32-bit local ids; a membership
//          bitset) and O(D) scratch (hit records); per minibatch until pass 2, its hits
//          compacted (9 bytes each); outputs exactly sum_l edges_l * 32 bytes plus n_id.
//
// Profiling: compile with -DSPSAMPLE_LW_PROFILE to accumulate per-phase wall time in lw_prof[]
// (one thread); the module then exposes it as lw_profile() (seconds per phase, reset on read).
#ifndef SPSAMPLE_LAYERWISE_H
#define SPSAMPLE_LAYERWISE_H

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>


#include "common.h"
#include "philox_simd.h"
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
    int64_t positive_columns = 0;         // FastGCN: columns with q > 0
    int64_t last_positive = 0;            // FastGCN: the last of them (draws are clamped to it)
    // Internal column ids (required; ids < 2**32): columns ranked by in-degree, so the hubs
    // that most entries point to share a few cache lines of the vertex-indexed arrays.
    const uint32_t* indices32 = nullptr;  // g.indices as internal ids
    const uint32_t* internal_of = nullptr;  // vertex -> internal id (n)
    const uint32_t* vertex_of = nullptr;    // internal id -> vertex (n)
};

// One minibatch between the two phases: its vertices and, for pass 2, the hits of pass 1
// (compacted) and the layers' column sums; edge_count[l] is the exact size of layer l.
struct LayerWiseOut {
    PodBuf<int64_t> n_id;
    std::vector<int64_t> counts;          // vertices new at each layer (counts[0] = seeds)
    std::vector<int64_t> bsize;           // |B_0|, ..., |B_L|
    std::vector<int64_t> edge_count;      // per layer
    PodBuf<int64_t> row_first;            // indptr[n_id[i]] of the rows of B_{L-1}
    PodBuf<int64_t> row_hits;             // row -> first hit (rows + 1)
    PodBuf<uint32_t> rec_lu, rec_off;     // hit -> local id of its column, offset in the row
    PodBuf<uint8_t> rec_lmin;             // hit -> first layer the edge belongs to
    std::vector<std::vector<double>> P;   // LADIES: P[l][local] for local < |B_{l+1}|
};

// Where pass 2 writes layer l of one minibatch (exactly edge_count[l] elements each).
struct LayerWiseDest {
    std::vector<int64_t*> dst, src, eid;
    std::vector<double*> weight;
};

constexpr uint32_t NO_LOCAL = 0xFFFFFFFFu;


struct LayerWiseScratch {
    // Vertex-indexed state, sized n once per thread and cleared per minibatch in O(touched):
    // (all indexed by internal id)
    std::vector<double> acc;            // weighted: LADIES column sum so far
    std::vector<uint64_t> touched_bit;  // weighted: bit per column with an entry in an accumulated
                                        // row; unweighted: the columns marked in one layer
    std::vector<uint64_t> member_bit;   // bit per vertex: in n_id
    std::vector<uint32_t> local_of;     // local id (valid where member_bit is set)
    // Per-minibatch lists:
    PodBuf<int64_t> row_start;          // entries of the rows n_id[0..i), i <= |B_l|
    PodBuf<int64_t> row_first;          // indptr[n_id[i]], i < |B_l|
    std::vector<uint32_t> marked;       // unweighted: the columns marked in touched_bit
    PodBuf<uint32_t> touched;           // weighted: the touched columns, ascending (internal ids)
    PodBuf<uint32_t> touched_vertex;    // their vertex ids
    std::vector<double> key_q;          // their column sums
    std::vector<std::pair<double, uint64_t>> keyed;  // the bounded heap of smallest_keys
    std::vector<int64_t> chosen;
    std::vector<double> run;             // the edge pass's column sums (LADIES)
    std::vector<double> inv_p;           // 1 / P[l][local] (unweighted LADIES edge values)
    // Edge pass: the entries whose column is in n_id ("hits") of the rows of B_{L-1} (their
    // records go to the minibatch's LayerWiseOut)
    PodBuf<uint32_t> hit_off;           // offsets within one row
    int64_t last_hits = 0;              // hits of the thread's previous minibatch

    void resize(int64_t n, bool weighted) {
        if (weighted) acc.assign(n, 0.0);
        touched_bit.assign((n + 63) / 64, 0);
        member_bit.assign((n + 63) / 64, 0);
        local_of.assign(n, NO_LOCAL);
    }
};

static inline bool test_bit(const uint64_t* bits, uint32_t u) { return (bits[u >> 6] >> (u & 63)) & 1u; }

// Bit k of the result: whether vertex u[k] has its bit set in `bits`, for k < 8.
static inline unsigned member_mask8(const uint32_t* u, const uint64_t* bits) {
    unsigned m = 0;
    for (int k = 0; k < 8; ++k) m |= static_cast<unsigned>(test_bit(bits, u[k])) << k;
    return m;
}

// Offsets j (ascending, from j0 on) of the entries row[j0..deg) whose vertex has its bit set in
// `bits`; returns how many were written to out. out needs deg + 16 slots (the vector path
// stores 16 lanes at a time). Integer-only, so every path gives the same result.
static inline int64_t member_offsets_scalar(const uint32_t* row, int64_t deg, const uint64_t* bits,
                                            uint32_t* out, int64_t j0 = 0) {
    // Eight tests form a mask and only its set bits are stored: the branch-free form (store
    // every offset, advance by the test) chains each store to the previous test and ran 8x
    // slower on Zen 1; members are rare, so `while (m)` is usually skipped.
    int64_t t = 0, j = j0;
    for (; j + 8 <= deg; j += 8) {
        for (unsigned m = member_mask8(row + j, bits); m; m &= m - 1)
            out[t++] = static_cast<uint32_t>(j + __builtin_ctz(m));
    }
    for (; j < deg; ++j)
        if (test_bit(bits, row[j])) out[t++] = static_cast<uint32_t>(j);
    return t;
}

#ifdef SPSAMPLE_LW_X86
// The set bits of an 8-bit mask, as base + position, packed to out[0..popcount) with one
// 8-lane store (out needs 8 slots); returns the popcount. The permutation comes from a table.
struct CompressTable {
    alignas(32) uint32_t perm[256][8];  // mask -> its set bits' positions, ascending, then 0s
    CompressTable() {
        for (unsigned m = 0; m < 256; ++m) {
            int t = 0;
            for (unsigned k = 0; k < 8; ++k) perm[m][k] = 0;
            for (unsigned k = 0; k < 8; ++k)
                if (m >> k & 1u) perm[m][t++] = k;
        }
    }
};
inline const CompressTable compress_table;

__attribute__((target("avx2"))) static inline int compress8(unsigned m, uint32_t base, uint32_t* out) {
    const __m256i perm = _mm256_load_si256(reinterpret_cast<const __m256i*>(compress_table.perm[m]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                        _mm256_add_epi32(perm, _mm256_set1_epi32(static_cast<int>(base))));
    return __builtin_popcount(m);
}

// member_offsets_scalar's tests with compress8's stores.
__attribute__((target("avx2,bmi2"))) static int64_t member_offsets_avx2(const uint32_t* row, int64_t deg,
                                                                    const uint64_t* bits, uint32_t* out) {
    int64_t t = 0, j = 0;
    for (; j + 8 <= deg; j += 8) t += compress8(member_mask8(row + j, bits), static_cast<uint32_t>(j), out + t);
    return t + member_offsets_scalar(row, deg, bits, out + t, j);  // the last deg % 8
}
#endif

#ifdef SPSAMPLE_LW_X86
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
#ifdef SPSAMPLE_LW_X86
    if (lw_avx512()) return member_offsets_avx512(row, deg, bits, out);
    if (lw_avx2()) return member_offsets_avx2(row, deg, bits, out);
#endif
    return member_offsets_scalar(row, deg, bits, out);
}

// The s smallest (key, vertex) pairs among the weighted LADIES candidates: vertex[0..c) and
// their column sums q[i], the vertices appended to `chosen` in no particular order. key_i =
// neg_log(open_unit(w_i)) / q_i (+inf where q_i = 0) with w_i = column_words(vertex[i]); ties
// go to the smaller vertex. Needs more than s candidates with q_i > 0.
//
// A max-heap of s pairs holds the smallest keys so far; its top only decreases, and a key above
// it is never chosen. Since -ln U >= 1 - U, a candidate with (1 - U) > top * q_i (with a 2**-20
// margin, far above det_log's rounding) has a key above the top, and is skipped without det_log
// or a division: after the heap fills only about s ln(c / s) candidates are keyed exactly.
// The result is the exact-key heap's, bit for bit. Complexity O(c) Philox words (vectorised, in
// blocks) + O(s log s log c) exact keys and heap updates, expected.
static void smallest_keys(const uint32_t* vertex, const double* q, int64_t c, int64_t s,
                          uint32_t hw, uint32_t bid, Key key, std::vector<std::pair<double, uint64_t>>& heap,
                          std::vector<int64_t>& chosen) {
    constexpr int64_t BLOCK = 256;
    constexpr double MARGIN = 1.0 - 0x1p-20;
    const uint32_t* u = nullptr;  // the block's vertices
    const double* qb = nullptr;  // the block's column sums
    uint32_t words[BLOCK];
    heap.clear();
    double top = 0.0;  // valid once the heap holds s pairs
    // the exact key of candidate i of the block, into the heap if it is among the s smallest
    auto consider = [&](int64_t i) {
        const double unit = open_unit(words[i]);
        const bool full = static_cast<int64_t>(heap.size()) == s;
        if (full && (1.0 - unit) * MARGIN > top * qb[i]) return;
        const std::pair<double, uint64_t> kv(-det_log_normal(unit) / qb[i], u[i]);
        if (!full) {
            heap.push_back(kv);
            if (static_cast<int64_t>(heap.size()) == s) {
                std::make_heap(heap.begin(), heap.end());
                top = heap.front().first;
            }
            return;
        }
        if (!(kv < heap.front())) return;
        std::pop_heap(heap.begin(), heap.end());
        heap.back() = kv;
        std::push_heap(heap.begin(), heap.end());
        top = heap.front().first;
    };
    for (int64_t b0 = 0; b0 < c; b0 += BLOCK) {
        const int64_t len = std::min(BLOCK, c - b0);
        u = vertex + b0;
        qb = q + b0;
        column_words(u, len, hw, bid, key, words);
        if (static_cast<int64_t>(heap.size()) < s) {
            for (int64_t i = 0; i < len; ++i) consider(i);
            continue;
        }
        // The bound test for eight candidates at a time against the block's first top (the
        // top only decreases, so this keeps a superset); `consider` repeats it with the
        // current top. Usually no candidate of the eight passes.
        const double t0 = top;
        int64_t i = 0;
        for (; i + 8 <= len; i += 8) {
            unsigned m = 0;
            for (int k = 0; k < 8; ++k)
                m |= static_cast<unsigned>(!((1.0 - open_unit(words[i + k])) * MARGIN > t0 * qb[i + k])) << k;
            for (; m; m &= m - 1) consider(i + __builtin_ctz(m));
        }
        for (; i < len; ++i) consider(i);
    }
    for (const auto& kv : heap) chosen.push_back(static_cast<int64_t>(kv.second));
}

// Draw t's uniform in [0, 1) for FastGCN and unweighted LADIES: unit53 of words 2t, 2t + 1 of
// the stream (NO_VERTEX, hop word, batch id).
static inline double draw_unit(Stream& st, uint64_t t) { return unit53(st.word(2 * t), st.word(2 * t + 1)); }

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
    uint64_t* touched_bit = sc.touched_bit.data();
    uint64_t* member_bit = sc.member_bit.data();
    uint32_t* local_of = sc.local_of.data();
    PodBuf<int64_t>& n_id = out.n_id;
    n_id.assign(seeds, seeds + b);
    out.counts.assign(1, b);
    sc.touched.clear();
    out.P.assign(L, {});
    for (int64_t i = 0; i < b; ++i) {
        const uint32_t u = o.internal_of[seeds[i]];
        local_of[u] = static_cast<uint32_t>(i);
        member_bit[u >> 6] |= uint64_t(1) << (u & 63);
    }
    std::vector<int64_t> bsize(1, b);  // |B_0|, |B_1|, ..., |B_L|
    // row_start[i] = entries of the rows n_id[0..i) (the draws' entry numbering), i <= |B_l|
    PodBuf<int64_t>& row_start = sc.row_start;
    PodBuf<int64_t>& row_first = sc.row_first;
    row_start.clear();
    row_start.push_back(0);
    row_first.clear();
    int64_t accumulated = 0;           // weighted: rows of n_id whose entries are in acc
    for (int l = 0; l < L; ++l) {
        const int64_t s = o.fanouts[l];
        const uint32_t hw = hop_word(o.epoch, l + 1);
        const int64_t B = static_cast<int64_t>(n_id.size());
        for (int64_t i = static_cast<int64_t>(row_start.size()) - 1; i < B; ++i) {
            row_first.push_back(indptr[n_id[i]]);
            row_start.push_back(row_start[i] + indptr[n_id[i] + 1] - indptr[n_id[i]]);
        }
        auto& chosen = sc.chosen;
        chosen.clear();
        if (!o.fastgcn && w) {
            // P_l: continue the serial column sums acc with the rows new to B_l, read from the
            // 32-bit internal ids (the random updates prefetched PF_ENTRIES ahead within a
            // row, and the next row's first PF_ENTRIES at the start of each row); touched
            // columns are marked in a bitset.
            for (int64_t i = accumulated; i < B; ++i) {
                if (i + PF < B) __builtin_prefetch(idx32 + row_first[i + PF]);
                const int64_t e0 = row_first[i], deg = row_start[i + 1] - row_start[i];
                const uint32_t* row = idx32 + e0;
                if (i + 1 < B) {
                    const int64_t vn = n_id[i + 1];
                    const int64_t n0 = indptr[vn], nd = std::min<int64_t>(indptr[vn + 1] - n0, PF_ENTRIES);
                    for (int64_t j = 0; j < nd; ++j) __builtin_prefetch(&acc[idx32[n0 + j]], 1);
                }
                const double* wr = w + e0;
                for (int64_t j = 0; j < deg; ++j) {
                    if (j + PF_ENTRIES < deg) __builtin_prefetch(&acc[row[j + PF_ENTRIES]], 1);
                    const uint32_t u = row[j];
                    acc[u] += wr[j] * wr[j];
                    touched_bit[u >> 6] |= uint64_t(1) << (u & 63);
                }
            }
            accumulated = B;
            // the touched columns in ascending internal order (hubs first), so that the keys
            // read the sums and vertex ids as a forward stream. O(n / 64 + C).
            sc.touched.resize(std::min<int64_t>(g.n, row_start[B]) + 8);
            uint32_t* touched = sc.touched.data();
            int64_t C = 0;
            const int64_t words = static_cast<int64_t>(sc.touched_bit.size());
            for (int64_t x = 0; x < words; ++x) {
                for (uint64_t bits = touched_bit[x]; bits; bits &= bits - 1)
                    touched[C++] = static_cast<uint32_t>(x * 64 + __builtin_ctzll(bits));
            }
            sc.touched.resize(C);
            LW_TICK(0)
            // Efraimidis-Spirakis keys of the columns with P > 0 (zero weights leave P = 0)
            sc.key_q.resize(C);
            sc.touched_vertex.resize(C);
            double* q = sc.key_q.data();
            uint32_t* tvertex = sc.touched_vertex.data();
            int64_t K = 0;  // columns with P > 0
            for (int64_t c = 0; c < C; ++c) {
                q[c] = acc[touched[c]];
                tvertex[c] = o.vertex_of[touched[c]];
                K += q[c] > 0 ? 1 : 0;
            }
            if (s < 0 || K <= s) {
                for (int64_t c = 0; c < C; ++c)
                    if (q[c] > 0) chosen.push_back(tvertex[c]);
            } else {
                smallest_keys(tvertex, q, C, s, hw, bid, o.key, sc.keyed, chosen);
            }
            LW_TICK(7)
        } else if (!o.fastgcn) {
            // Unweighted: the distinct columns of the rows of B_l in a bitset, stopping at
            // s + 1 (usually after about s entries); all of them if there are at most s.
            std::vector<uint32_t>& marked = sc.marked;
            marked.clear();
            auto mark = [&](uint32_t u) {
                const uint64_t bit = uint64_t(1) << (u & 63);
                if (touched_bit[u >> 6] & bit) return;
                touched_bit[u >> 6] |= bit;
                marked.push_back(u);
            };
            const size_t stop = s < 0 ? ~size_t(0) : static_cast<size_t>(s) + 1;
            for (int64_t i = 0; i < B && marked.size() < stop; ++i) {
                const uint32_t* row = idx32 + row_first[i];
                const int64_t deg = row_start[i + 1] - row_start[i];
                for (int64_t j = 0; j < deg && marked.size() < stop; ++j) mark(row[j]);
            }
            for (uint32_t u : marked) touched_bit[u >> 6] = 0;
            if (marked.size() < stop) {
                for (uint32_t u : marked) chosen.push_back(o.vertex_of[u]);
            } else {
                // Draw t takes words 2t, 2t + 1 of stream (NO_VERTEX, hw, bid): entry
                // E = min(floor(unit53 * D), D - 1) of the rows of B_l (in local order, entries
                // in storage order), until s distinct columns came up.
                // In chunks: the chunk's entries are located and prefetched first, then marked
                // in draw order (draws past the s-th distinct column are ignored).
                constexpr int CHUNK = 32;
                int64_t at[CHUNK];
                marked.clear();
                const int64_t D = row_start[B];
                const double Dd = static_cast<double>(D);
                Stream st(NO_VERTEX, hw, bid, o.key);
                for (uint64_t t = 0; static_cast<int64_t>(marked.size()) < s; t += CHUNK) {
                    for (int c = 0; c < CHUNK; ++c) {
                        const double u = draw_unit(st, t + c);
                        const int64_t E = std::min(static_cast<int64_t>(u * Dd), D - 1);
                        const int64_t i = std::upper_bound(row_start.data() + 1, row_start.data() + B + 1, E) -
                                          (row_start.data() + 1);
                        at[c] = row_first[i] + (E - row_start[i]);
                        __builtin_prefetch(idx32 + at[c]);
                    }
                    for (int c = 0; c < CHUNK && static_cast<int64_t>(marked.size()) < s; ++c) mark(idx32[at[c]]);
                }
                for (uint32_t u : marked) {
                    touched_bit[u >> 6] = 0;
                    chosen.push_back(o.vertex_of[u]);
                }
            }
            LW_TICK(7)
        } else {
            // Draws marked in a bitset as they come (memory O(distinct), not O(s)); once every
            // column of positive weight is chosen, later draws cannot add one: stop.
            const int64_t n = g.n;
            const double total = n > 0 ? o.cumulative[n - 1] : 0.0;
            if (n > 0 && total > 0) {
                Stream st(NO_VERTEX, hw, bid, o.key);
                for (int64_t i = 0; i < s && static_cast<int64_t>(chosen.size()) < o.positive_columns; ++i) {
                    const double target = draw_unit(st, static_cast<uint64_t>(i)) * total;
                    int64_t col = std::upper_bound(o.cumulative, o.cumulative + n, target) - o.cumulative;
                    col = std::min(col, o.last_positive);
                    const uint64_t bit = uint64_t(1) << (col & 63);
                    if (!(touched_bit[col >> 6] & bit)) {
                        touched_bit[col >> 6] |= bit;
                        chosen.push_back(col);
                    }
                }
                for (int64_t x : chosen) touched_bit[x >> 6] = 0;
            }
        }
        std::sort(chosen.begin(), chosen.end());
        chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
        for (int64_t x : chosen) {
            const uint32_t u = o.internal_of[x];
            if (!test_bit(member_bit, u)) {
                local_of[u] = static_cast<uint32_t>(n_id.size());
                member_bit[u >> 6] |= uint64_t(1) << (u & 63);
                n_id.push_back(x);
            }
        }
        out.counts.push_back(static_cast<int64_t>(n_id.size()) - B);
        bsize.push_back(static_cast<int64_t>(n_id.size()));
    }
    LW_TICK(2)
    // Edges of every layer in one pass over the rows of B_{L-1}.
    const int64_t rows = bsize[L - 1];
    std::vector<uint8_t> stage(static_cast<size_t>(bsize[L]));
    for (int t = 0, x = 0; t <= L; ++t)
        for (; x < bsize[t]; ++x) stage[x] = static_cast<uint8_t>(t);
    // Pass 1: the hits of every row, compacted branch-free (stage 1 keeps the offsets whose
    // column is in n_id; stage 2 resolves them to records and drops a_vu <= 0).
    // The hit records go straight into the minibatch's own (pooled) buffers, which pass 2
    // reads later. They start at 5/4 of the thread's previous minibatch's hits (at most one
    // per entry) and grow, checked once per row.
    for (auto* buf : {&out.row_first, &out.row_hits}) buf->use_pool();
    for (auto* buf : {&out.rec_lu, &out.rec_off}) buf->use_pool();
    out.rec_lmin.use_pool();
    out.row_hits.resize(rows + 1);
    int64_t max_deg = 0;
    for (int64_t i = 0; i < rows; ++i) max_deg = std::max(max_deg, row_start[i + 1] - row_start[i]);
    sc.hit_off.resize(max_deg + 16);
    const int64_t D = row_start[rows];
    int64_t cap = std::min<int64_t>(D + 1, std::max<int64_t>(4096, sc.last_hits + sc.last_hits / 4));
    out.rec_lu.resize(cap);
    out.rec_off.resize(cap);
    out.rec_lmin.resize(cap);
    uint32_t* hit_off = sc.hit_off.data();
    uint32_t* rec_lu = out.rec_lu.data();
    uint32_t* rec_off = out.rec_off.data();
    uint8_t* rec_lmin = out.rec_lmin.data();
    int64_t* row_hits = out.row_hits.data();
    int64_t hist[257] = {0};
    int64_t m = 0;
    // LADIES: run[x] = the serial column sum of a_vx**2 over the rows so far (x in n_id; only
    // hits reach it), copied to P[t] for B_{t+1} once the rows of B_t are done -- the oracle's
    // sums in the oracle's order (rows in local order, entries in storage order; a zero
    // weight adds +0.0, which leaves a sum that starts at +0.0 unchanged).
    std::vector<double>& run = sc.run;
    if (!o.fastgcn) run.assign(bsize[L], 0.0);
    for (int si = 0; si < L; ++si) {
        for (int64_t i = si == 0 ? 0 : bsize[si - 1]; i < bsize[si]; ++i) {
            const int64_t e0 = row_first[i], deg = row_start[i + 1] - row_start[i];
            if (i + PF < rows) __builtin_prefetch(idx32 + row_first[i + PF]);
            row_hits[i] = m;
            const uint32_t* row_cols = idx32 + e0;
            const int64_t t = member_offsets(row_cols, deg, member_bit, hit_off);
            if (m + t > cap) {  // keep the m records, then at least double
                cap = std::min<int64_t>(D + 1, std::max(2 * cap, m + t + 1));
                out.rec_lu.resize(m);
                out.rec_off.resize(m);
                out.rec_lmin.resize(m);
                out.rec_lu.resize(cap);
                out.rec_off.resize(cap);
                out.rec_lmin.resize(cap);
                rec_lu = out.rec_lu.data();
                rec_off = out.rec_off.data();
                rec_lmin = out.rec_lmin.data();
            }
            for (int64_t j = 0; j < t; ++j) {
                const uint32_t off = hit_off[j];
                const int64_t e = e0 + off;
                const uint32_t u = row_cols[off];  // cached by the scan
                const uint32_t lu = local_of[u];
                const double a = w ? w[e] : 1.0;
                const int lm = std::max(si, stage[lu] - 1);
                rec_lu[m] = lu;
                rec_off[m] = off;
                rec_lmin[m] = static_cast<uint8_t>(lm);
                if (!o.fastgcn) run[lu] += a * a;
                m += a * a > 0 ? 1 : 0;   // (a weight whose square underflows counts as 0)
            }
        }
        if (!o.fastgcn) out.P[si].assign(run.begin(), run.begin() + bsize[si + 1]);
    }
    row_hits[rows] = m;
    sc.last_hits = m;
    // The records' first layers, counted afterwards in four interleaved histograms: one
    // histogram incremented per hit chained each hit to the previous one's store (lm takes
    // a few values).
    {
        int64_t part[4][256] = {{0}};
        int64_t h = 0;
        for (; h + 4 <= m; h += 4) {
            part[0][rec_lmin[h]] += 1;
            part[1][rec_lmin[h + 1]] += 1;
            part[2][rec_lmin[h + 2]] += 1;
            part[3][rec_lmin[h + 3]] += 1;
        }
        for (; h < m; ++h) part[0][rec_lmin[h]] += 1;
        for (int l = 0; l < L; ++l) hist[l] = part[0][l] + part[1][l] + part[2][l] + part[3][l];
    }
    LW_TICK(3)
    // Exact output sizes: layer l holds the hits with lmin <= l.
    out.edge_count.assign(L, 0);
    for (int l = 0; l < L; ++l) out.edge_count[l] = (l == 0 ? 0 : out.edge_count[l - 1]) + hist[l];
    // Keep what pass 2 needs besides the records: the rows' first entries.
    out.bsize = bsize;
    out.row_first.assign(row_first.data(), row_first.data() + rows);
    LW_TICK(4)
    // Forget this minibatch's vertices (O(touched + n_id)).
    for (size_t c = 0; c < sc.touched.size(); ++c) {  // (weighted LADIES only)
        const uint32_t u = sc.touched[c];
        acc[u] = 0.0;
        touched_bit[u >> 6] = 0;
    }
    for (size_t x = 0; x < n_id.size(); ++x) {
        const uint32_t u = o.internal_of[n_id[x]];
        member_bit[u >> 6] = 0;
    }
}


// Pass 2 of one minibatch (after layerwise_minibatch): layer by layer, rows in local order, hits
// in storage order; weights a / P_l[u] divided by their row's serial sum (0 when that sum is
// 0), written to `to` (edge_count[l] elements per layer). inv: scratch of the caller.
static void layerwise_write(const CSRView& g, const LayerWiseOptions& o, const LayerWiseOut& st,
                            const LayerWiseDest& to, std::vector<double>& inv) {
    const int L = static_cast<int>(st.edge_count.size());
    const double* w = g.weights;
    const int64_t* n_id = st.n_id.data();
    const int64_t* row_first = st.row_first.data();
    const int64_t* row_hits = st.row_hits.data();
    const uint32_t* rec_lu = st.rec_lu.data();
    const uint32_t* rec_off = st.rec_off.data();
    const uint8_t* rec_lmin = st.rec_lmin.data();
    int64_t sink[1];
    double sink_value;
    for (int l = 0; l < L; ++l) {
        int64_t* dst = to.dst[l];
        int64_t* src = to.src[l];
        int64_t* eid = to.eid[l];
        double* wt = to.weight[l];
        const double* P = o.fastgcn ? nullptr : st.P[l].data();
        if (!o.fastgcn && !w) {  // unweighted LADIES: a / p = 1 / p, one division per vertex
            inv.resize(st.P[l].size());
            for (size_t x = 0; x < inv.size(); ++x) inv[x] = 1.0 / P[x];
            P = inv.data();
        }
        if (o.fastgcn && l == 0) {  // q of the minibatch's vertices, by local id (no random reads)
            inv.resize(st.n_id.size());
            for (size_t x = 0; x < inv.size(); ++x) inv[x] = o.q_global[n_id[x]];
        }
        const bool reciprocal = !o.fastgcn && !w;
        int64_t c = 0;
        const int64_t layer_rows = st.bsize[l];
        for (int64_t i = 0; i < layer_rows; ++i) {
            const int64_t lo = c;
            const int64_t e0 = row_first[i];
            // the row's serial sum, taken as the values are written: a hit outside the layer
            // adds +0.0, which leaves the sum's bits unchanged (a sum that starts at +0.0 is
            // never -0.0, the one value that adding +0.0 would change). Hits outside the layer
            // go to a sink (selected pointers, no branch): the destination is the flat
            // output, whose next element belongs to another minibatch.
            double total = 0.0;
            for (int64_t h = row_hits[i]; h < row_hits[i + 1]; ++h) {
                const uint32_t lu = rec_lu[h];
                const int64_t e = e0 + rec_off[h];
                const double a = w ? w[e] : 1.0;
                const bool in_layer = rec_lmin[h] <= l;
                // (P[l] covers B_{l+1} only: a hit outside the layer reads P[0] instead)
                const double p = o.fastgcn ? inv[lu] : P[in_layer ? lu : 0];
                const double value = reciprocal ? p : a / p;
                int64_t* const d = in_layer ? dst + c : sink;
                int64_t* const s = in_layer ? src + c : sink;
                int64_t* const x = in_layer ? eid + c : sink;
                double* const v = in_layer ? wt + c : &sink_value;
                *d = i;
                *s = lu;
                *x = e;
                *v = value;
                total += in_layer ? value : 0.0;
                c += in_layer ? 1 : 0;
            }
            if (total > 0) {
                for (int64_t x = lo; x < c; ++x) wt[x] = wt[x] / total;
            } else {
                for (int64_t x = lo; x < c; ++x) wt[x] = 0.0;
            }
        }
    }
}

}  // namespace spsample

#endif  // SPSAMPLE_LAYERWISE_H
