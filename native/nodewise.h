// Fused node-wise (GraphSAGE) bulk sampling: all hops of all minibatches of a bulk in one call.
//
// For hop l and frontier row r (vertex v of minibatch j) the algebraic pipeline of
// spsample/_primitives.py is
//
//     P = row_select(A, v)  ->  S = sample_rows(P, s_l)  ->  extraction (dedup + relabel)
//
// Here the three steps are one pass per frontier row: the row of A is read in place, positions
// are drawn from the row's keyed Philox stream (vertex v, hop word, global batch id), and each
// drawn neighbour is relabelled through the minibatch's LocalMap as it is written. P and S are
// never materialised. Selection rules (d = row length, s = fanout, -1 = all):
//
//   uniform, no replacement : d <= s keeps the row; else Floyd's algorithm, draw i uses word i:
//                             t = uniform_int(word_i, d - s + i + 1), t taken already -> d - s + i
//   uniform, replacement    : s positions uniform_int(word_i, d) (none when d = 0)
//   weighted, no replacement: among entries of weight > 0, the s smallest keys
//                             neg_log(open_unit(word_p)) / w_p, ties to the smaller position
//   weighted, replacement   : draw i = argmin_p neg_log(open_unit(word_{i*d+p})) / w_p over w_p > 0
//
// Positions are emitted in ascending order (with multiplicity). New vertices are appended to the
// minibatch's n_id in first-occurrence edge order; the frontier of hop l + 1 is the vertices
// first reached at hop l. This is exactly spsample._reference.reference_minibatch.
//
// Minibatches are independent and run in parallel (OpenMP, dynamic schedule); each one is
// sampled by one thread, so results do not depend on the number of threads.
#ifndef SPSAMPLE_NODEWISE_H
#define SPSAMPLE_NODEWISE_H

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "localmap.h"
#include "rng.h"

namespace spsample {

// A CSR adjacency. indptr: int64 (n + 1), non-decreasing from 0 to nnz; indices: int64 (nnz),
// each in [0, n), sorted and unique within a row; weights: float64 (nnz), >= 0, or nullptr.
struct CSRView {
    const int64_t* indptr;
    const int64_t* indices;
    const double* weights;
    int64_t n;
};

// One hop of one minibatch, in local ids (dst = the expanded vertex, src = its neighbour),
// edge_id = index of the entry in indices; weight only for layer-wise samplers.
struct HopOut {
    std::vector<int64_t> dst, src, eid;
    std::vector<double> weight;
};

// One minibatch: n_id (seeds first), counts[h] = vertices first reached at hop h (counts[0] =
// number of seeds), one HopOut per hop.
struct MiniBatchOut {
    std::vector<int64_t> n_id;
    std::vector<int64_t> counts;
    std::vector<HopOut> hops;
};

// Counter word 2 of the RNG: (epoch << 8) | hop.
static inline uint32_t hop_word(uint64_t epoch, int hop) {
    return static_cast<uint32_t>(((epoch & 0xFFFFFFu) << 8) | (static_cast<uint32_t>(hop) & 255u));
}

struct NodeWiseOptions {
    std::vector<int64_t> fanouts;  // hop 1 first; -1 = all
    bool replace = false;
    bool weighted = false;          // requires CSRView::weights
    Key key{0, 0};
    uint64_t epoch = 0;
};

// Per-thread scratch, reused across the minibatches a thread samples.
struct NodeWiseScratch {
    LocalMap map;                   // vertex -> local id of the current minibatch
    LocalMap posset;                // Floyd membership for large fanouts
    std::vector<int64_t> start, deg;
    std::vector<int64_t> pos;
    std::vector<std::pair<double, int64_t>> heap;
};

// Positions (ascending, with multiplicity) that row (start, d) of vertex v keeps at a hop of
// fanout s. Writes them to sc.pos and returns how many. Rows kept whole are not handled here
// (the caller streams them directly).
//
// Complexity: uniform O(s log s) (Floyd: O(s^2) comparisons for s <= 32, hashed above);
// weighted without replacement O(d log s); weighted with replacement O(s d).
static inline int64_t nodewise_select(const CSRView& g, int64_t start, int64_t d, int64_t s,
                                      uint32_t v, uint32_t hw, uint32_t bid, const NodeWiseOptions& o,
                                      NodeWiseScratch& sc) {
    Stream st(v, hw, bid, o.key);
    std::vector<int64_t>& pos = sc.pos;
    if (!o.weighted) {
        if (o.replace) {  // d > 0, s >= 0
            pos.resize(s);
            for (int64_t i = 0; i < s; ++i) pos[i] = static_cast<int64_t>(uniform_int(st.word(i), d));
            std::sort(pos.begin(), pos.end());
            return s;
        }
        // Floyd: d > s >= 1
        pos.resize(s);
        if (s <= 32) {
            for (int64_t i = 0; i < s; ++i) {
                const int64_t j = d - s + i;
                const int64_t t = static_cast<int64_t>(uniform_int(st.word(i), j + 1));
                bool hit = false;
                for (int64_t q = 0; q < i; ++q) hit |= (pos[q] == t);
                pos[i] = hit ? j : t;
            }
        } else {
            sc.posset.clear(s);
            for (int64_t i = 0; i < s; ++i) {
                const int64_t j = d - s + i;
                const int64_t t = static_cast<int64_t>(uniform_int(st.word(i), j + 1));
                bool inserted;
                sc.posset.find_or_insert(static_cast<uint32_t>(t), 0, inserted);
                if (inserted) {
                    pos[i] = t;
                } else {  // j exceeds every earlier pick: always new
                    sc.posset.find_or_insert(static_cast<uint32_t>(j), 0, inserted);
                    pos[i] = j;
                }
            }
        }
        std::sort(pos.begin(), pos.end());
        return s;
    }
    const double* w = g.weights + start;
    pos.clear();
    if (s < 0) {
        for (int64_t p = 0; p < d; ++p)
            if (w[p] > 0) pos.push_back(p);
        return static_cast<int64_t>(pos.size());
    }
    int64_t eligible = 0;
    for (int64_t p = 0; p < d; ++p) eligible += (w[p] > 0);
    if (eligible == 0) return 0;
    if (o.replace) {
        pos.resize(s);
        for (int64_t i = 0; i < s; ++i) {
            double best = 0.0;
            int64_t arg = -1;
            const uint64_t base = static_cast<uint64_t>(i) * static_cast<uint64_t>(d);
            for (int64_t p = 0; p < d; ++p) {
                if (!(w[p] > 0)) continue;
                const double k = exp_key(st.word(base + static_cast<uint64_t>(p)), w[p]);
                if (arg < 0 || k < best) {
                    best = k;
                    arg = p;
                }
            }
            pos[i] = arg;
        }
        std::sort(pos.begin(), pos.end());
        return s;
    }
    if (eligible <= s) {
        for (int64_t p = 0; p < d; ++p)
            if (w[p] > 0) pos.push_back(p);
        return eligible;
    }
    // Efraimidis-Spirakis: keep the s smallest (key, position) in a max-heap.
    auto& heap = sc.heap;
    heap.clear();
    for (int64_t p = 0; p < d; ++p) {
        if (!(w[p] > 0)) continue;
        const std::pair<double, int64_t> kp(exp_key(st.word(static_cast<uint64_t>(p)), w[p]), p);
        if (static_cast<int64_t>(heap.size()) < s) {
            heap.push_back(kp);
            std::push_heap(heap.begin(), heap.end());
        } else if (kp < heap.front()) {
            std::pop_heap(heap.begin(), heap.end());
            heap.back() = kp;
            std::push_heap(heap.begin(), heap.end());
        }
    }
    for (const auto& kp : heap) pos.push_back(kp.second);
    std::sort(pos.begin(), pos.end());
    return s;
}

// Upper bound on the entries a row of length d keeps at fanout s (exact for uniform sampling).
static inline int64_t nodewise_bound(int64_t d, int64_t s, bool replace) {
    if (s < 0) return d;
    if (replace) return d > 0 ? s : 0;
    return d < s ? d : s;
}

// Sample all hops of one minibatch.
//
// Inputs: g (CSRView), seeds[0..b) distinct vertex ids in [0, n), bid the global minibatch id.
// Output: out (overwritten). Complexity: O(sum over frontier rows of the selection cost),
// expected O(1) per sampled edge for the relabelling; extra memory O(edges + nodes sampled).
static void nodewise_minibatch(const CSRView& g, const int64_t* seeds, int64_t b, uint32_t bid,
                               const NodeWiseOptions& o, NodeWiseScratch& sc, MiniBatchOut& out) {
    constexpr int64_t PF = 8;  // prefetch distance, in frontier rows
    const int L = static_cast<int>(o.fanouts.size());
    out.n_id.assign(seeds, seeds + b);
    out.counts.assign(1, b);
    out.hops.assign(L, HopOut());
    std::vector<int64_t>& n_id = out.n_id;
    sc.map.clear(static_cast<uint64_t>(b) * 16);
    for (int64_t i = 0; i < b; ++i) {
        bool ins;
        sc.map.find_or_insert(static_cast<uint32_t>(seeds[i]), static_cast<uint32_t>(i), ins);
    }
    int64_t hop_start = 0, hop_end = b;
    for (int h = 1; h <= L; ++h) {
        const int64_t s = o.fanouts[h - 1];
        const uint32_t hw = hop_word(o.epoch, h);
        const int64_t m = hop_end - hop_start;
        // pass 1: row extents of the frontier (sequential writes; prefetched random reads)
        sc.start.resize(m);
        sc.deg.resize(m);
        int64_t bound = 0;
        for (int64_t r = 0; r < m; ++r) {
            if (r + PF < m) __builtin_prefetch(g.indptr + n_id[hop_start + r + PF]);
            const int64_t v = n_id[hop_start + r];
            const int64_t st = g.indptr[v];
            const int64_t d = g.indptr[v + 1] - st;
            sc.start[r] = st;
            sc.deg[r] = d;
            bound += nodewise_bound(d, s, o.replace);
        }
        HopOut& ho = out.hops[h - 1];
        ho.dst.reserve(bound);
        ho.src.reserve(bound);
        ho.eid.reserve(bound);
        n_id.reserve(n_id.size() + bound);
        const bool whole_uniform = !o.weighted && s < 0;
        // pass 2: select, gather, relabel
        for (int64_t r = 0; r < m; ++r) {
            if (r + PF < m) {
                __builtin_prefetch(g.indices + sc.start[r + PF]);
                if (o.weighted) __builtin_prefetch(g.weights + sc.start[r + PF]);
            }
            const int64_t st = sc.start[r];
            const int64_t d = sc.deg[r];
            const int64_t local_v = hop_start + r;
            auto emit = [&](int64_t p) {
                const int64_t e = st + p;
                const uint32_t u = static_cast<uint32_t>(g.indices[e]);
                bool ins;
                const uint32_t lu = sc.map.find_or_insert(u, static_cast<uint32_t>(n_id.size()), ins);
                if (ins) n_id.push_back(u);
                ho.dst.push_back(local_v);
                ho.src.push_back(lu);
                ho.eid.push_back(e);
            };
            if (d == 0) continue;
            if (whole_uniform || (!o.weighted && !o.replace && d <= s)) {
                for (int64_t p = 0; p < d; ++p) emit(p);
                continue;
            }
            const int64_t c = nodewise_select(g, st, d, s, static_cast<uint32_t>(n_id[local_v]), hw,
                                              bid, o, sc);
            for (int64_t i = 0; i < c; ++i) emit(sc.pos[i]);
        }
        out.counts.push_back(static_cast<int64_t>(n_id.size()) - hop_end);
        hop_start = hop_end;
        hop_end = static_cast<int64_t>(n_id.size());
    }
}

}  // namespace spsample

#endif  // SPSAMPLE_NODEWISE_H
