// The layer-wise engine's GPU kernels (LADIES, weighted and unweighted, and FastGCN): every
// layer of every minibatch of a bulk, the same bits as the CPU engine (native/layerwise.h)
// and the NumPy oracle (spsample._primitives, spsample._reference). Same conventions as
// rowwise.cuh: each kernel is a function k_NAME(Launch, args) over a grid-stride loop, wrapped
// by `extern "C" __global__ spsample_k_NAME`; no shared memory, no barriers, no dependence on
// the order in which threads run; one argument struct per launch (args.cuh); the driver
// (spsample/gpu/_layers.py) takes the prefix sums and the sorts between launches (integer
// keys, so any correct sort gives the same permutation; the sorts are stable).
//
// Layer l of minibatch j, s = fanouts[l], B = its n_id so far (local order), hw = hop word of
// hop l + 1, bid = global minibatch id. The bulk's rows are every vertex of every B (flat,
// minibatch after minibatch), its *entries* every entry of those rows, numbered g in (row,
// storage) order, so within a minibatch in the order the CPU engine sums and draws them.
//   k_lw_rows       each row's first edge, degree and minibatch
//   k_lw_entries    each entry's key j * n + u (u its column), edge id and row
//   [driver: stable sort of the keys: the entries of each (j, u) are consecutive, in g order]
//   k_lw_colsum     one thread per (j, u) segment: P_l[j, u] = the serial sum of a**2 over its
//                   entries in g order (the CPU's order: never a float atomic), or its length
//                   (unweighted: an exact count); and each entry's segment
//   selection       unweighted LADIES: all columns when there are at most s, else
//                   k_lw_draw_entries, one thread per minibatch drawing entries until s
//                   distinct columns came up (layerwise.h's draws); weighted LADIES: all
//                   columns with P > 0 when at most s, else k_lw_keys (one thread per
//                   candidate: Efraimidis-Spirakis key bits) and the s smallest (key, u) per
//                   minibatch by two stable sorts; FastGCN: k_lw_fastgcn (one thread per draw:
//                   cumulative search), then unique per minibatch
//   [driver: the chosen columns appended to n_id ascending (rowwise.cuh's dedup kernels)]
//   k_lw_hits       each entry whose column is in the new n_id and whose a**2 > 0: an edge
//   k_lw_edges      each edge's dst (local row), src (local column), edge id, a / P
//   k_lw_row_sums   one thread per row: the serial sum of its edges' values (storage order)
//   k_lw_normalise  each edge's value divided by its row's sum (0 when the sum is 0)
// Load balance: every kernel but the serial sums runs one thread per entry, edge or candidate
// (a hub row of degree 10**5 is spread over the grid); the serial sums run one thread per
// column segment (at most |B| entries) or per row (at most |n_id| edges), and the unweighted
// draws one thread per minibatch (about s draws).
// Complexity per layer: O(D log N) for the entries (D of them, N rows), the sorts, O(D) for
// the sums, selection O(s log |B|) per minibatch (unweighted), O(C) keys + sorts (weighted),
// O(s log n) per minibatch (FastGCN); memory O(D) int64 per layer.
#ifndef SPSAMPLE_DEVICE_LAYERWISE_CUH
#define SPSAMPLE_DEVICE_LAYERWISE_CUH

#include "args.cuh"
#include "dedup.cuh"
#include "hd.cuh"
#include "philox.cuh"
#include "rowwise.cuh"
#include "rules.cuh"

namespace spsample {
namespace gpu {

// k_lw_rows. a: N, k, nid, nid_off (k + 1), indptr; out: first (N: indptr[v]), deg (N),
// rbatch (N: the row's minibatch).
SPSAMPLE_HD inline void k_lw_rows(Launch t, const LwRowsArgs& a) {
    const int64_t N = a.N, k = a.k;
    const int64_t* nid = a.nid;
    const int64_t* nid_off = a.nid_off;
    const int64_t* indptr = a.indptr;
    int64_t* first = a.first;
    int64_t* deg = a.deg;
    int64_t* rbatch = a.rbatch;
    for (int64_t r = t.first(); r < N; r += t.stride()) {
        const int64_t v = nid[r];
        first[r] = indptr[v];
        deg[r] = indptr[v + 1] - indptr[v];
        rbatch[r] = segment_of(nid_off, k, r);
    }
}

// k_lw_entries. a: D, N, ent_off (N + 1: the rows' first entries), first, rbatch, indices, n;
// out: key (D: j * n + u), eid (D), erow (D).
SPSAMPLE_HD inline void k_lw_entries(Launch t, const LwEntriesArgs& a) {
    const int64_t D = a.D, N = a.N;
    const int64_t* ent_off = a.ent_off;
    const int64_t* first = a.first;
    const int64_t* rbatch = a.rbatch;
    const int64_t* indices = a.indices;
    const int64_t n = a.n;
    int64_t* key = a.key;
    int64_t* eid = a.eid;
    int64_t* erow = a.erow;
    for (int64_t g = t.first(); g < D; g += t.stride()) {
        const int64_t r = segment_of(ent_off, N, g);
        const int64_t e = first[r] + (g - ent_off[r]);
        key[g] = rbatch[r] * n + indices[e];
        eid[g] = e;
        erow[g] = r;
    }
}

// k_lw_colsum. a: S, seg_off (S + 1: segments of the sorted entries), order (D: entry at each
// sorted position), eid, weights (0: unweighted); out: psum (S, float64), seg_of (D: each
// entry's segment).
SPSAMPLE_HD inline void k_lw_colsum(Launch t, const LwColsumArgs& a) {
    const int64_t S = a.S;
    const int64_t* seg_off = a.seg_off;
    const int64_t* order = a.order;
    const int64_t* eid = a.eid;
    const double* w = a.weights;
    double* psum = a.psum;
    int64_t* seg_of = a.seg_of;
    for (int64_t c = t.first(); c < S; c += t.stride()) {
        double sum = 0.0;
        for (int64_t p = seg_off[c]; p < seg_off[c + 1]; ++p) {
            const int64_t g = order[p];
            seg_of[g] = c;
            if (w) {
                const double x = w[eid[g]];
                sum += x * x;
            }
        }
        psum[c] = w ? sum : static_cast<double>(seg_off[c + 1] - seg_off[c]);
    }
}

// A layer's draw t in [0, 1): unit53 of words 2t, 2t + 1 of the stream (NO_VERTEX, hw, bid).
SPSAMPLE_HD inline double layer_draw(Stream& st, uint64_t t) {
    return unit53(st.word(2 * t), st.word(2 * t + 1));
}

// k_lw_draw_entries (unweighted LADIES, minibatches with more than s distinct columns). a: nd,
// which (nd: the minibatches), s, hw, k0, k1, batch_ids, nid_off (k + 1), ent_off (N + 1),
// first, indices, n, set (nd * cap uint64, zero), cap; out: chosen (nd * s: keys j * n + u of
// the first s distinct columns drawn, in draw order).
SPSAMPLE_HD inline void k_lw_draw_entries(Launch t, const LwDrawEntriesArgs& a) {
    const int64_t nd = a.nd;
    const int64_t* which = a.which;
    const int64_t s = a.s;
    const uint32_t hw = static_cast<uint32_t>(a.hw);
    const Key key{static_cast<uint32_t>(a.k0), static_cast<uint32_t>(a.k1)};
    const int64_t* batch_ids = a.batch_ids;
    const int64_t* nid_off = a.nid_off;
    const int64_t* ent_off = a.ent_off;
    const int64_t* first = a.first;
    const int64_t* indices = a.indices;
    const int64_t n = a.n;
    uint64_t* set = a.set;
    const int64_t cap = a.cap;
    int64_t* chosen = a.chosen;
    for (int64_t x = t.first(); x < nd; x += t.stride()) {
        const int64_t j = which[x], r0 = nid_off[j], rows = nid_off[j + 1] - r0;
        const int64_t base = ent_off[r0], D = ent_off[r0 + rows] - base;
        const double Dd = static_cast<double>(D);
        Stream st(NO_VERTEX, hw, static_cast<uint32_t>(batch_ids[j]), key);
        uint64_t* mine = set + x * cap;
        int64_t got = 0;
        for (uint64_t d = 0; got < s; ++d) {
            const int64_t E0 = static_cast<int64_t>(layer_draw(st, d) * Dd);
            const int64_t E = base + (E0 < D - 1 ? E0 : D - 1);
            const int64_t r = r0 + segment_of(ent_off + r0, rows, E);
            const int64_t u = indices[first[r] + (E - ent_off[r])];
            if (set_insert(mine, cap, static_cast<uint64_t>(u) + 1)) {
                chosen[x * s + got] = j * n + u;
                ++got;
            }
        }
    }
}

// k_lw_keys (weighted LADIES, minibatches with more than s candidates). a: M, cand (M: segment
// ids), seg_key (S), psum (S), n, hw, k0, k1, batch_ids; out: bits (M: the bits of the key
// neg_log(open_unit(word 0 of stream (u, hw, bid))) / P, a positive double, so the int64 bits
// order as the keys).
SPSAMPLE_HD inline void k_lw_keys(Launch t, const LwKeysArgs& a) {
    const int64_t M = a.M;
    const int64_t* cand = a.cand;
    const int64_t* seg_key = a.seg_key;
    const double* psum = a.psum;
    const int64_t n = a.n;
    const uint32_t hw = static_cast<uint32_t>(a.hw);
    const Key key{static_cast<uint32_t>(a.k0), static_cast<uint32_t>(a.k1)};
    const int64_t* batch_ids = a.batch_ids;
    int64_t* bits = a.bits;
    for (int64_t i = t.first(); i < M; i += t.stride()) {
        const int64_t c = cand[i], j = seg_key[c] / n, u = seg_key[c] % n;
        const uint32_t w = philox4x32_word0(0u, static_cast<uint32_t>(u), hw,
                                            static_cast<uint32_t>(batch_ids[j]), key);
        bits[i] = static_cast<int64_t>(bits_of(exp_key(w, psum[c])));
    }
}

// First index i in [0, n) with cum[i] > x, or n (std::upper_bound).
SPSAMPLE_HD inline int64_t upper_index(const double* cum, int64_t n, double x) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (cum[mid] > x) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

// k_lw_fastgcn. a: M (k * s), s, hw, k0, k1, batch_ids, cumulative (n), n, last_positive, total
// (cumulative[n - 1] > 0); out: keys (M: j * n + u of draw i = x % s of minibatch
// j = x / s: the first column whose cumulative weight exceeds U * total, clamped).
SPSAMPLE_HD inline void k_lw_fastgcn(Launch t, const LwFastgcnArgs& a) {
    const int64_t M = a.M, s = a.s;
    const uint32_t hw = static_cast<uint32_t>(a.hw);
    const Key key{static_cast<uint32_t>(a.k0), static_cast<uint32_t>(a.k1)};
    const int64_t* batch_ids = a.batch_ids;
    const double* cum = a.cumulative;
    const int64_t n = a.n, last_positive = a.last_positive;
    const double total = a.total;
    int64_t* keys = a.keys;
    for (int64_t x = t.first(); x < M; x += t.stride()) {
        const int64_t j = x / s, i = x % s;
        Stream st(NO_VERTEX, hw, static_cast<uint32_t>(batch_ids[j]), key);
        const int64_t u = upper_index(cum, n, layer_draw(st, static_cast<uint64_t>(i)) * total);
        keys[x] = j * n + (u < last_positive ? u : last_positive);
    }
}

// k_lw_hits. a: D, key, eid, n, weights (or 0), tab_off (k + 1), slots (the dedup tables of
// the new n_id, valued by local id); out: hit (D: 1 for an edge), lu (D: the column's local id).
SPSAMPLE_HD inline void k_lw_hits(Launch t, const LwHitsArgs& a) {
    const int64_t D = a.D;
    const int64_t* key = a.key;
    const int64_t* eid = a.eid;
    const int64_t n = a.n;
    const double* w = a.weights;
    const int64_t* tab_off = a.tab_off;
    const uint64_t* slots = a.slots;
    int64_t* hit = a.hit;
    int64_t* lu = a.lu;
    for (int64_t g = t.first(); g < D; g += t.stride()) {
        const int64_t j = key[g] / n, u = key[g] % n;
        const uint32_t val = table_find(slots + tab_off[j], tab_off[j + 1] - tab_off[j],
                                        static_cast<uint32_t>(u));
        const double x = w ? w[eid[g]] : 1.0;
        hit[g] = (val != DEDUP_ABSENT && x * x > 0) ? 1 : 0;
        lu[g] = static_cast<int64_t>(val);
    }
}

// k_lw_edges. a: D, hit_off (D + 1), erow, eid, key, lu, rbatch, nid_off (k + 1, the rows'
// layout), n, weights (or 0), fastgcn, q (n; FastGCN), psum (LADIES), seg_of (LADIES); out:
// dst, src, edge (edge ids), value (a / P), vrow (each edge's row).
SPSAMPLE_HD inline void k_lw_edges(Launch t, const LwEdgesArgs& a) {
    const int64_t D = a.D;
    const int64_t* hit_off = a.hit_off;
    const int64_t* erow = a.erow;
    const int64_t* eid = a.eid;
    const int64_t* key = a.key;
    const int64_t* lu = a.lu;
    const int64_t* rbatch = a.rbatch;
    const int64_t* nid_off = a.nid_off;
    const int64_t n = a.n;
    const double* w = a.weights;
    const bool fastgcn = a.fastgcn != 0;
    const double* q = a.q;
    const double* psum = a.psum;
    const int64_t* seg_of = a.seg_of;
    int64_t* dst = a.dst;
    int64_t* src = a.src;
    int64_t* edge = a.edge;
    double* value = a.value;
    int64_t* vrow = a.vrow;
    for (int64_t g = t.first(); g < D; g += t.stride()) {
        const int64_t x = hit_off[g];
        if (hit_off[g + 1] == x) continue;
        const int64_t r = erow[g];
        const double p = fastgcn ? q[key[g] % n] : psum[seg_of[g]];
        dst[x] = r - nid_off[rbatch[r]];
        src[x] = lu[g];
        edge[x] = eid[g];
        value[x] = (w ? w[eid[g]] : 1.0) / p;
        vrow[x] = r;
    }
}

// k_lw_row_sums. a: N, row_edges (N + 1: each row's edges), value; out: total (N): the serial
// sum of the row's values in storage order.
SPSAMPLE_HD inline void k_lw_row_sums(Launch t, const LwRowSumsArgs& a) {
    const int64_t N = a.N;
    const int64_t* row_edges = a.row_edges;
    const double* value = a.value;
    double* total = a.total;
    for (int64_t r = t.first(); r < N; r += t.stride()) {
        double sum = 0.0;
        for (int64_t x = row_edges[r]; x < row_edges[r + 1]; ++x) sum += value[x];
        total[r] = sum;
    }
}

// k_lw_normalise. a: E, vrow, total; in/out: value (divided by its row's total; 0 when the
// total is 0).
SPSAMPLE_HD inline void k_lw_normalise(Launch t, const LwNormaliseArgs& a) {
    const int64_t E = a.E;
    const int64_t* vrow = a.vrow;
    const double* total = a.total;
    double* value = a.value;
    for (int64_t x = t.first(); x < E; x += t.stride()) {
        const double sum = total[vrow[x]];
        value[x] = sum > 0 ? value[x] / sum : 0.0;
    }
}

}  // namespace gpu
}  // namespace spsample

// The CUDA entries of this file's kernels (SPSAMPLE_LAYERWISE_KERNELS: args.cuh).
#if defined(SPSAMPLE_CUDA)
#define SPSAMPLE_LW_GLOBAL_KERNEL(name, Type, FIELDS)                                          \
    extern "C" __global__ void spsample_k_##name(const spsample::gpu::Type* a) {              \
        const spsample::gpu::Launch t{blockIdx.x, threadIdx.x, gridDim.x, blockDim.x};         \
        spsample::gpu::k_##name(t, *a);                                                       \
    }
SPSAMPLE_LAYERWISE_KERNELS(SPSAMPLE_LW_GLOBAL_KERNEL)
#undef SPSAMPLE_LW_GLOBAL_KERNEL
#endif

#endif  // SPSAMPLE_DEVICE_LAYERWISE_CUH
