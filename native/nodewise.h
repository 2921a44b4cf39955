// Fused node-wise (GraphSAGE) bulk sampling: all hops of all minibatches of a bulk in one call.
//
// For hop l and frontier row r (vertex v of minibatch j) the algebraic pipeline of
// spsample/_primitives.py is
//
//     P = row_select(A, v)  ->  S = sample_rows(P, s_l)  ->  extraction (dedup + relabel)
//
// Here the three steps are fused per hop (see nodewise_minibatch): rows of A are read in place,
// positions are drawn from the row's keyed Philox stream (vertex v, hop word, global batch id),
// the drawn entries are gathered and relabelled through the minibatch's LocalMap in output
// order. P and S are never materialised. Selection rules (d = row length, s = fanout, -1 = all):
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
//
// Memory of a bulk of k minibatches: the outputs, exactly 3 int64 per sampled edge plus n_id
// (buffers are sized by the exact per-hop bound for uniform sampling, an upper bound of the same
// order for weighted), and per thread O(largest frontier + largest hop + 4 * nodes of the largest
// minibatch) scratch reused across minibatches: O(total sampled edges) + O(threads * minibatch).
#ifndef SPSAMPLE_NODEWISE_H
#define SPSAMPLE_NODEWISE_H

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
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

// A growable array of trivially copyable T in malloc'd memory that is never zero-filled (the
// kernels write every element they keep) and whose buffer can be handed to NumPy (release(),
// then free() it). Growth by realloc doubles, so push_back is O(1) amortised.
template <class T>
class PodBuf {
  public:
    PodBuf() = default;
    PodBuf(const PodBuf&) = delete;
    PodBuf& operator=(const PodBuf&) = delete;
    PodBuf(PodBuf&& o) noexcept : p_(o.p_), n_(o.n_), cap_(o.cap_) { o.p_ = nullptr; o.n_ = o.cap_ = 0; }
    PodBuf& operator=(PodBuf&& o) noexcept {
        if (this != &o) {
            std::free(p_);
            p_ = o.p_; n_ = o.n_; cap_ = o.cap_;
            o.p_ = nullptr; o.n_ = o.cap_ = 0;
        }
        return *this;
    }
    ~PodBuf() { std::free(p_); }

    T* data() { return p_; }
    const T* data() const { return p_; }
    size_t size() const { return n_; }
    T& operator[](size_t i) { return p_[i]; }
    const T& operator[](size_t i) const { return p_[i]; }

    void reserve(size_t c) {
        if (c > cap_) realloc_to(c);
    }
    // Set the size to k (contents of new elements undefined).
    void resize(size_t k) {
        reserve(k);
        n_ = k;
    }
    void clear() { n_ = 0; }
    inline void push_back(T x) {
        if (n_ == cap_) realloc_to(cap_ ? 2 * cap_ : 16);
        p_[n_++] = x;
    }
    template <class It>
    void assign(It first, It last) {
        resize(static_cast<size_t>(last - first));
        std::copy(first, last, p_);
    }
    // Give up the buffer (shrunk to size(); nullptr when empty); the caller free()s it.
    T* release() {
        T* q = nullptr;
        if (n_ > 0) {
            if (n_ < cap_) realloc_to(n_);
            q = p_;
        } else {
            std::free(p_);
        }
        p_ = nullptr;
        n_ = cap_ = 0;
        return q;
    }

  private:
    T* p_ = nullptr;
    size_t n_ = 0, cap_ = 0;

    void realloc_to(size_t c) {
        void* q = std::realloc(p_, (c ? c : 1) * sizeof(T));
        if (!q) throw std::bad_alloc();
        p_ = static_cast<T*>(q);
        cap_ = c;
    }
};

// One hop of one minibatch, in local ids (dst = the expanded vertex, src = its neighbour),
// edge_id = index of the entry in indices; weight only for layer-wise samplers.
struct HopOut {
    PodBuf<int64_t> dst, src, eid;
    PodBuf<double> weight;
};

// One minibatch: n_id (seeds first), counts[h] = vertices first reached at hop h (counts[0] =
// number of seeds), one HopOut per hop.
struct MiniBatchOut {
    PodBuf<int64_t> n_id;
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

// Per-thread scratch, reused across the minibatches a thread samples (and across hops).
struct NodeWiseScratch {
    LocalMap map;                   // vertex -> local id of the current minibatch
    LocalMap posset;                // Floyd membership for large fanouts
    std::vector<int64_t> start, deg;
    std::vector<int64_t> pos;
    std::vector<uint32_t> nbr;      // global ids of the hop's sampled neighbours
    std::vector<std::pair<double, int64_t>> heap;
};

// Rows up to 64 * BITMAP_WORDS entries long draw their Floyd sample in a bitmap (no sort).
constexpr int64_t BITMAP_WORDS = 16;

// Ascending sort of a short array (insertion sort: the usual fanouts are 5 to 25).
static inline void sort_small(int64_t* a, int64_t k) {
    if (k > 32) {
        std::sort(a, a + k);
        return;
    }
    for (int64_t i = 1; i < k; ++i) {
        const int64_t x = a[i];
        int64_t j = i;
        while (j > 0 && a[j - 1] > x) {
            a[j] = a[j - 1];
            --j;
        }
        a[j] = x;
    }
}

// Positions (ascending, with multiplicity) that row (start, d) of vertex v keeps at a hop of
// fanout s. Writes them to sc.pos and returns how many. Rows kept whole (uniform sampling with
// d <= s or s = -1) are not handled here: the caller emits them directly.
//
// Inputs: d >= 1; s >= 1, or s = -1 for weighted rows. Complexity: uniform without replacement
// O(s + d / 64) for d <= 1024 (Floyd in a bitmap), else O(s log s) (Floyd: s^2 / 2 comparisons
// for s <= 32, hashed above); uniform with replacement O(s log s); weighted without replacement O(d log s);
// weighted with replacement O(s d). Words drawn: uniform s, weighted d (or s d with replacement).
static inline int64_t nodewise_select(const CSRView& g, int64_t start, int64_t d, int64_t s,
                                      uint32_t v, uint32_t hw, uint32_t bid, const NodeWiseOptions& o,
                                      NodeWiseScratch& sc) {
    Stream st(v, hw, bid, o.key);
    std::vector<int64_t>& pos = sc.pos;
    if (!o.weighted) {
        pos.resize(s);
        if (o.replace) {  // d > 0, s >= 1
            for (int64_t i = 0; i < s; ++i) pos[i] = static_cast<int64_t>(uniform_int(st.word(i), d));
            sort_small(pos.data(), s);
            return s;
        }
        // Floyd: d > s >= 1
        if (d <= 64 * BITMAP_WORDS) {  // membership in a bitmap of d bits; read out in order
            uint64_t bits[BITMAP_WORDS];
            const int64_t words = (d + 63) >> 6;
            for (int64_t q = 0; q < words; ++q) bits[q] = 0;
            for (int64_t i = 0; i < s; ++i) {
                const int64_t j = d - s + i;
                const int64_t t = static_cast<int64_t>(uniform_int(st.word(i), j + 1));
                const bool hit = (bits[t >> 6] >> (t & 63)) & 1u;
                const int64_t x = hit ? j : t;
                bits[x >> 6] |= uint64_t(1) << (x & 63);
            }
            int64_t k = 0;
            for (int64_t q = 0; q < words; ++q) {
                uint64_t word = bits[q];
                while (word) {
                    pos[k++] = (q << 6) + __builtin_ctzll(word);
                    word &= word - 1;
                }
            }
            return s;
        }
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
        sort_small(pos.data(), s);
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
        sort_small(pos.data(), s);
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
    sort_small(pos.data(), s);
    return s;
}

// Upper bound on the entries a row of length d keeps at fanout s (exact for uniform sampling).
static inline int64_t nodewise_bound(int64_t d, int64_t s, bool replace) {
    if (s < 0) return d;
    if (replace) return d > 0 ? s : 0;
    return d < s ? d : s;
}

// The whole selection rule of one row: calls emit(p) for every position p (ascending, with
// multiplicity) that row (start, d) of vertex v keeps at a hop of fanout s, drawing from the
// stream (v, hw, bid). Rows kept whole (uniform sampling with s = -1 or, without replacement,
// d <= s) are emitted directly; the others go through nodewise_select. Returns the count.
// Shared by the fused bulk sampler (pass 2 of nodewise_minibatch) and the per-request row
// sampler of rows.h, so both draw exactly the same positions.
//
// Inputs: d >= 0 (d = 0 emits nothing); s >= 1 or -1. Complexity: that of nodewise_select,
// O(d) for rows kept whole.
template <class Emit>
static inline int64_t nodewise_row(const CSRView& g, int64_t start, int64_t d, int64_t s, uint32_t v,
                                   uint32_t hw, uint32_t bid, const NodeWiseOptions& o,
                                   NodeWiseScratch& sc, Emit&& emit) {
    if (d == 0) return 0;
    if (!o.weighted && (s < 0 || (!o.replace && d <= s))) {
        for (int64_t p = 0; p < d; ++p) emit(p);
        return d;
    }
    const int64_t c = nodewise_select(g, start, d, s, v, hw, bid, o, sc);
    const int64_t* pos = sc.pos.data();
    for (int64_t i = 0; i < c; ++i) emit(pos[i]);
    return c;
}

// Sample all hops of one minibatch.
//
// Inputs:  g (CSRView); seeds[0..b), distinct vertex ids in [0, n); bid, the global minibatch id;
//          o (fanouts, rule, key, epoch); sc, the calling thread's scratch.
// Output:  out, overwritten: n_id (N, int64, unique, seeds first then new vertices in first-
//          occurrence order per hop), counts (L + 1), hops[l].dst/src/eid (E_l each, int64;
//          dst non-decreasing, eid ascending within each dst).
// Method:  per hop four streaming passes over the frontier, each with software prefetching so
//          that its random reads overlap (the fused single pass stalls on every row):
//            1. row extents (indptr[v], degree) of every frontier row  -- reads indptr
//            2. selection: positions per row from the row's Philox stream -> eid, dst
//            3. gather: nbr[e] = indices[eid[e]]                         -- reads indices
//            4. relabel: nbr -> local ids through the LocalMap, new vertices appended to n_id
//          Passes 2-4 touch each sampled edge once, in output order, so the results are those
//          of the one-pass definition above.
// Complexity: O(m) for pass 1 (m = frontier rows), O(sum of selection costs) for pass 2,
//          O(E) for passes 3-4 (expected O(1) per hash operation).
// Memory:  the outputs (3 E_l int64 per hop, sized by an exact bound for uniform sampling) plus
//          per-thread scratch O(largest frontier + largest hop + LocalMap of 2-4 N slots).
static void nodewise_minibatch(const CSRView& g, const int64_t* seeds, int64_t b, uint32_t bid,
                               const NodeWiseOptions& o, NodeWiseScratch& sc, MiniBatchOut& out) {
    constexpr int64_t PF_ROWS = 16;   // prefetch distance of passes 1-2, in frontier rows
    constexpr int64_t PF_EDGES = 24;  // prefetch distance of passes 3-4, in sampled edges
    const int L = static_cast<int>(o.fanouts.size());
    PodBuf<int64_t>& n_id = out.n_id;
    n_id.assign(seeds, seeds + b);
    out.counts.assign(1, b);
    out.hops.clear();
    out.hops.resize(L);
    sc.map.clear(static_cast<uint64_t>(b) * 16);
    for (int64_t i = 0; i < b; ++i) {
        bool ins;
        sc.map.find_or_insert(static_cast<uint32_t>(seeds[i]), static_cast<uint32_t>(i), ins);
    }
    const int64_t* indptr = g.indptr;
    const int64_t* indices = g.indices;
    int64_t hop_start = 0, hop_end = b;
    for (int h = 1; h <= L; ++h) {
        const int64_t s = o.fanouts[h - 1];
        const uint32_t hw = hop_word(o.epoch, h);
        const int64_t m = hop_end - hop_start;
        const int64_t* frontier = n_id.data() + hop_start;
        // pass 1: row extents
        sc.start.resize(m);
        sc.deg.resize(m);
        int64_t* rs = sc.start.data();
        int64_t* rd = sc.deg.data();
        int64_t bound = 0;
        for (int64_t r = 0; r < m; ++r) {
            if (r + PF_ROWS < m) __builtin_prefetch(indptr + frontier[r + PF_ROWS]);
            const int64_t v = frontier[r];
            const int64_t st = indptr[v];
            const int64_t d = indptr[v + 1] - st;
            rs[r] = st;
            rd[r] = d;
            bound += nodewise_bound(d, s, o.replace);
        }
        HopOut& ho = out.hops[h - 1];
        ho.dst.resize(bound);
        ho.eid.resize(bound);
        int64_t* dst = ho.dst.data();
        int64_t* eid = ho.eid.data();
        int64_t E = 0;
        // pass 2: selection
        for (int64_t r = 0; r < m; ++r) {
            const int64_t d = rd[r];
            if (d == 0) continue;
            const int64_t st = rs[r];
            const int64_t local_v = hop_start + r;
            if (o.weighted && r + PF_ROWS < m) __builtin_prefetch(g.weights + rs[r + PF_ROWS]);
            nodewise_row(g, st, d, s, static_cast<uint32_t>(frontier[r]), hw, bid, o, sc,
                         [&](int64_t p) {
                             dst[E] = local_v;
                             eid[E] = st + p;
                             ++E;
                         });
        }
        ho.dst.resize(E);
        ho.eid.resize(E);
        // pass 3: gather the sampled neighbours
        sc.nbr.resize(E);
        uint32_t* nbr = sc.nbr.data();
        for (int64_t e = 0; e < E; ++e) {
            if (e + PF_EDGES < E) __builtin_prefetch(indices + eid[e + PF_EDGES]);
            nbr[e] = static_cast<uint32_t>(indices[eid[e]]);
        }
        // pass 4: relabel (first occurrence wins), appending new vertices to n_id
        ho.src.resize(E);
        int64_t* src = ho.src.data();
        n_id.reserve(n_id.size() + E);
        for (int64_t e = 0; e < E; ++e) {
            if (e + PF_EDGES < E) sc.map.prefetch(nbr[e + PF_EDGES]);
            const uint32_t u = nbr[e];
            bool ins;
            const uint32_t lu = sc.map.find_or_insert(u, static_cast<uint32_t>(n_id.size()), ins);
            if (ins) n_id.push_back(u);
            src[e] = lu;
        }
        out.counts.push_back(static_cast<int64_t>(n_id.size()) - hop_end);
        hop_start = hop_end;
        hop_end = static_cast<int64_t>(n_id.size());
    }
}

}  // namespace spsample

#endif  // SPSAMPLE_NODEWISE_H
