// The row-wise engine's GPU kernels: every hop of every minibatch of a bulk, the bulk's rows
// spread over threads (the CPU engine, rowwise.h, gives each minibatch to one thread; both call
// the bodies of rules.cuh, and the results are the same bits).
//
// Each kernel is a function k_NAME(Launch, args) of the (block, thread) index, whose items are
// visited by a grid-stride loop, and a thin `extern "C" __global__ spsample_k_NAME(args)`
// wrapper for CUDA. No kernel uses shared memory, barriers or the order in which threads run:
// a host driver (emulate.h) can call k_NAME for every (block, thread) in any order, from several
// threads, and must get the GPU's results. Kernels synchronise only by their launches (one
// phase per launch) and by the atomics of dedup.cuh.
//
// Arguments: one struct per kernel (args.cuh: k_NAME takes NAME's struct `a`, read as a.field),
// in device memory on a GPU, holding scalars and addresses (nullptr = none); the fields are
// listed with each kernel, the driver (spsample/gpu/_device.py) fills them by name through
// spsample/gpu/_args.py. Prefix sums between phases are the driver's (cumsum of the
// array library; integer sums, so any order gives the same result).
//
// One hop (driver: spsample.gpu._device.RowWiseDriver.hop), m frontier rows, E sampled edges:
//   k_frontier    rows of the frontier: vertex fv, local id fl, stable row id fr, minibatch fb
//   [F_ROWS: the rows' vertices are added to their minibatch first: dedup below]
//   k_extents     each row's extent (start, deg), fanout, output bound, scratch sizes; the LABOR
//                 threshold rule counts its kept entries exactly here (size pass)
//   [long rows: k_chunk_counts, chunks of LONG_CHUNK entries (see row_chunks)]
//   k_select      each row's rule (rules.cuh) into its slot of the output (fill pass)
//   k_select_chunks  the long rows, one thread per chunk
//   k_compact     rules that keep fewer than their bound (weighted, rejection): close the gaps
//   k_gather      the sampled columns
//   dedup         k_table_nodes, k_table_items (insert, atomicCAS / atomicMin), k_first_flags,
//                 k_assign (local ids in first-occurrence order via a prefix sum of the flags)
//   k_merge_nodes each minibatch's n_id followed by its new vertices
// Complexity: O(m log k + sum of the rules' costs + E log k) work per hop; one thread per row,
// except long rows whose rule decides per entry (the whole row, LABOR's threshold), one thread
// per chunk of LONG_CHUNK entries: a hub row (degree 10**5 at fanout -1) is 782 threads' work.
// The other rules on a long row (Floyd, weighted keys) stay one thread's: their cost is
// O(s) to O(d) in that thread.
#ifndef SPSAMPLE_DEVICE_ROWWISE_CUH
#define SPSAMPLE_DEVICE_ROWWISE_CUH

#include "args.cuh"
#include "atomic.cuh"
#include "codes.cuh"
#include "dedup.cuh"
#include "hd.cuh"
#include "philox.cuh"
#include "rules.cuh"

namespace spsample {
namespace gpu {

// FrontierKind, SelectRule, StreamKey: codes.cuh (one definition for the CPU, GPU and Python).

// A thread's place in its launch: block index, thread index, grid and block sizes.
struct Launch {
    int64_t block, thread, grid, bdim;
    SPSAMPLE_HD int64_t first() const { return block * bdim + thread; }
    SPSAMPLE_HD int64_t stride() const { return grid * bdim; }
};

// The segment j < k of item i: off[j] <= i < off[j + 1] (off: k + 1 non-decreasing entries,
// off[0] <= i < off[k]). O(log k).
SPSAMPLE_HD inline int64_t segment_of(const int64_t* off, int64_t k, int64_t i) {
    int64_t lo = 0, hi = k;
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (off[mid] <= i) lo = mid;
        else hi = mid;
    }
    return lo;
}

// k_frontier. a: m, k, kind, row_off (k + 1), lo (k: first local id of the range, F_NEW_NODES /
// F_ALL_NODES), nid, nid_off (k + 1), ends (F_EDGE_*: the hop's dst or src local ids), erow
// (F_EDGE_*: the hop's row ids), given (F_ROWS: vertices); out: fv, fl, fr, fb (0 = not wanted;
// F_ROWS leaves fl to the dedup).
SPSAMPLE_HD inline void k_frontier(Launch t, const FrontierArgs& a) {
    const int64_t m = a.m, k = a.k, kind = a.kind;
    const int64_t* row_off = a.row_off;
    const int64_t* lo = a.lo;
    const int64_t* nid = a.nid;
    const int64_t* nid_off = a.nid_off;
    const int64_t* ends = a.ends;
    const int64_t* erow = a.erow;
    const int64_t* given = a.given;
    int64_t* fv = a.fv;
    int64_t* fl = a.fl;
    int64_t* fr = a.fr;
    int64_t* fb = a.fb;
    for (int64_t r = t.first(); r < m; r += t.stride()) {
        const int64_t j = segment_of(row_off, k, r);
        int64_t v, l, id;
        if (kind == F_NEW_NODES || kind == F_ALL_NODES) {
            l = id = lo[j] + (r - row_off[j]);
            v = nid[nid_off[j] + l];
        } else if (kind == F_EDGE_SRC || kind == F_EDGE_DST) {
            l = ends[r];
            id = erow[r];
            v = nid[nid_off[j] + l];
        } else {
            v = given[r];
            l = -1;
            id = r - row_off[j];
        }
        fv[r] = v;
        if (fl && kind != F_ROWS) fl[r] = l;
        if (fr) fr[r] = id;
        if (fb) fb[r] = j;
    }
}

// Arguments of the selection kernels that describe the hop's rule.
struct RuleArgs {
    int64_t rule, fanout;
    const int64_t* fanout_vec;  // per vertex, or nullptr
    uint32_t hw;
    Key key;
    const int64_t* batch_ids;   // global minibatch ids (k)

    SPSAMPLE_HD int64_t fanout_of(int64_t v) const { return fanout_vec ? fanout_vec[v] : fanout; }
    SPSAMPLE_HD bool replace() const {
        return rule == S_UNIFORM_REP || rule == S_WEIGHTED_REP || rule == S_REJECTION ||
               rule == S_ALIAS_REP;
    }
};

// The rule of an args struct with the RULE fields: rule, fanout, fanout_vec, hw, k0, k1, batch_ids.
template <class A>
SPSAMPLE_HD inline RuleArgs rule_args(const A& a) {  // A: an args struct with the RULE fields
    RuleArgs r;
    r.rule = a.rule;
    r.fanout = a.fanout;
    r.fanout_vec = a.fanout_vec;
    r.hw = static_cast<uint32_t>(a.hw);
    r.key = Key{static_cast<uint32_t>(a.k0), static_cast<uint32_t>(a.k1)};
    r.batch_ids = a.batch_ids;
    return r;
}

// The entries row (d, s) keeps at most (exact for the uniform rules); 0 for rows that draw
// nothing. The threshold rule's exact count is computed by the caller.
SPSAMPLE_HD inline int64_t select_bound(const RuleArgs& ra, int64_t d, int64_t s) {
    if (d == 0 || s == 0) return 0;
    if (ra.rule == S_THRESHOLD) return d;
    return row_bound(d, s, ra.replace());
}

// Long rows. A row longer than the launch's `long_row` whose rule decides each entry alone --
// it keeps the whole row (fanout -1, or a uniform rule without replacement at d <= s), or it
// is LABOR's threshold -- is cut into chunks of LONG_CHUNK entries, one thread each
// (k_chunk_counts, then k_select_chunks at the offsets of a prefix sum of the chunks' counts),
// rather than run by one thread: a hub of degree 10**5 at fanout -1 spreads over the grid.
// Integer counts and per-entry decisions only, so the output is the one-thread row's.
inline constexpr int64_t LONG_CHUNK = 128;

SPSAMPLE_HD inline bool keeps_whole_row(const RuleArgs& ra, int64_t d, int64_t s) {
    const bool per_entry = ra.rule == S_UNIFORM || ra.rule == S_UNIFORM_REP ||
                           ra.rule == S_THRESHOLD;
    return per_entry && (s < 0 || (!ra.replace() && d <= s));
}

// The chunks of row (d, s): 0 for a row that one thread runs.
SPSAMPLE_HD inline int64_t row_chunks(const RuleArgs& ra, int64_t d, int64_t s,
                                      int64_t long_row) {
    if (d <= long_row || s == 0) return 0;
    if (!keeps_whole_row(ra, d, s) && ra.rule != S_THRESHOLD) return 0;
    return (d + LONG_CHUNK - 1) / LONG_CHUNK;
}

// k_extents. a: m, rule fields (RULE), indptr, indices, fv, fb; out: start, deg, fan, bound,
// set (Floyd slots), keys (heap slots); then long_row; out: chunks -- one int64 per row each
// (a chunked row's bound is 0 here: the driver adds its chunks' counts).
SPSAMPLE_HD inline void k_extents(Launch t, const ExtentsArgs& a) {
    const int64_t m = a.m;
    const RuleArgs ra = rule_args(a);
    const int64_t* indptr = a.indptr;
    const int64_t* indices = a.indices;
    const int64_t* fv = a.fv;
    const int64_t* fb = a.fb;
    int64_t* start = a.start;
    int64_t* deg = a.deg;
    int64_t* fan = a.fan;
    int64_t* bound = a.bound;
    int64_t* setn = a.set;
    int64_t* keyn = a.keys;
    const int64_t long_row = a.long_row;
    int64_t* chunks = a.chunks;
    for (int64_t r = t.first(); r < m; r += t.stride()) {
        const int64_t v = fv[r];
        const int64_t st = indptr[v], d = indptr[v + 1] - st, s = ra.fanout_of(v);
        const int64_t c = row_chunks(ra, d, s, long_row);
        int64_t b = c > 0 ? 0 : select_bound(ra, d, s);
        if (ra.rule == S_THRESHOLD && b > 0 && s >= 0 && d > s) {  // the size pass
            const uint32_t bid = static_cast<uint32_t>(ra.batch_ids[fb[r]]);
            b = threshold_row([&](int64_t p) { return indices[st + p]; }, d, s, ra.hw, bid,
                              ra.key, [](int64_t) {});
        }
        start[r] = st;
        deg[r] = d;
        fan[r] = s;
        bound[r] = b;
        setn[r] = (ra.rule == S_UNIFORM && b > 0) ? floyd_set_slots(d, s) : 0;
        keyn[r] = ((ra.rule == S_WEIGHTED || ra.rule == S_ALIAS) && b > 0 && s > 0) ? s : 0;
        chunks[r] = c;
    }
}

// The value code of an args struct with the VALUE fields (args.cuh); weights = the hop graph's
// weights.
template <class A>
SPSAMPLE_HD inline ValueCode value_code(const A& a, const double* weights) {
    ValueCode vc;
    vc.code = a.code;
    vc.size = static_cast<int32_t>(a.code_size);
    vc.vectors = a.vectors;
    vc.weights = weights;
    vc.aux = CSRView{a.aux_indptr, a.aux_indices, a.aux_weights, a.aux_n};
    vc.uses_lookup = a.uses_lookup != 0;
    vc.only_weight = a.only_weight != 0;
    return vc;
}

// The alias rules' tables: the graph's (threshold, alias) pairs, each row's largest weight's
// share of its sum, and the row statistics (whose first of three per vertex is the row's
// eligible count). The GPU runs them on whole rows of the graph's own weights only (the
// driver refuses the rest).
struct AliasArgs {
    const uint32_t* table;
    const double* share;
    const double* row_stats;
};

// One row of k_select: the rule's positions into pos[0..count); returns count, or -1 when a
// rejection rule meets a value above its bound.
SPSAMPLE_HD inline int64_t select_row(const RuleArgs& ra, const CSRView& g, const ValueCode& vc,
                                      double bound, int64_t st, int64_t d, int64_t s,
                                      uint32_t key_word, uint32_t bid, int64_t v, int64_t aux_v,
                                      int64_t* pos, uint64_t* set, double* keys,
                                      const AliasArgs& alias) {
    const int64_t rule = ra.rule;
    if (rule == S_THRESHOLD) {
        if (s < 0 || d <= s) {
            for (int64_t p = 0; p < d; ++p) pos[p] = p;
            return d;
        }
        int64_t k = 0;
        threshold_row([&](int64_t p) { return g.indices[st + p]; }, d, s, ra.hw, bid, ra.key,
                      [&](int64_t p) { pos[k++] = p; });
        return k;
    }
    const bool by_alias = rule == S_ALIAS || rule == S_ALIAS_REP;
    const bool weighted = rule == S_WEIGHTED || rule == S_WEIGHTED_REP || by_alias;
    if (!weighted && rule != S_REJECTION && (s < 0 || (!ra.replace() && d <= s))) {
        for (int64_t p = 0; p < d; ++p) pos[p] = p;
        return d;
    }
    Stream stream(key_word, ra.hw, bid, ra.key);
    auto word = [&](int64_t i) { return stream.word(static_cast<uint64_t>(i)); };
    auto value = [&](int64_t p) {
        return vc.only_weight ? g.weights[st + p] : entry_value(vc, g, v, aux_v, st, p);
    };
    if (rule == S_UNIFORM) return floyd_row(word, d, s, pos, set);
    if (rule == S_UNIFORM_REP) return uniform_rep_row(word, d, s, pos);
    if (rule == S_REJECTION) {
        bool exceeded = false;
        const int64_t c = rejection_row(stream, d, s, bound, value, pos, exceeded);
        return exceeded ? -1 : c;
    }
    if (rule == S_WEIGHTED) return weighted_row(stream, value, d, s, pos, keys);
    if (by_alias)
        return alias_row(word, alias.table + 2 * st, value,
                         [&]() { return weighted_row(stream, value, d, s, pos, keys); },
                         static_cast<int64_t>(alias.row_stats[3 * v]), alias.share[v], d, s,
                         ra.replace(), pos, keys);
    return weighted_rep_row(stream, value, d, s, pos);
}

// k_select. a: m, rule fields (RULE), stream key kind, fv, fl, fr, fb, fa (aux vertex or 0),
// start, deg, fan, out_off (m + 1), set_off (m + 1), key_off (m + 1), set (uint64), keys
// (float64), graph indptr, indices, weights, value code (VALUE), rejection bound (a
// double); out: dst, eid, erow (or 0), count (m), err (uint32: set to 1 when a
// rejection bound is exceeded); then long_row (chunked rows are k_select_chunks').
SPSAMPLE_HD inline void k_select(Launch t, const SelectArgs& a) {
    const int64_t m = a.m;
    const RuleArgs ra = rule_args(a);
    const int64_t key_kind = a.key_kind;
    const int64_t* fv = a.fv;
    const int64_t* fl = a.fl;
    const int64_t* fr = a.fr;
    const int64_t* fb = a.fb;
    const int64_t* fa = a.fa;
    const int64_t* start = a.start;
    const int64_t* deg = a.deg;
    const int64_t* fan = a.fan;
    const int64_t* out_off = a.out_off;
    const int64_t* set_off = a.set_off;
    const int64_t* key_off = a.key_off;
    uint64_t* set = a.set;
    double* keys = a.keys;
    const CSRView g{a.indptr, a.indices, a.weights, 0};
    const ValueCode vc = value_code(a, g.weights);
    const double bound = a.bound;
    int64_t* dst = a.dst;
    int64_t* eid = a.eid;
    int64_t* erow = a.erow;
    int64_t* count = a.count;
    uint32_t* err = a.err;
    const int64_t long_row = a.long_row;
    const AliasArgs alias{a.alias, a.alias_share, a.row_stats};
    for (int64_t r = t.first(); r < m; r += t.stride()) {
        const int64_t o = out_off[r];
        int64_t c = 0;
        if (row_chunks(ra, deg[r], fan[r], long_row) > 0) {
            c = out_off[r + 1] - o;
        } else if (out_off[r + 1] > o) {
            const int64_t v = fv[r], st = start[r];
            const uint32_t key_word = static_cast<uint32_t>(key_kind == K_ROW ? fr[r] : v);
            const uint32_t bid = static_cast<uint32_t>(ra.batch_ids[fb[r]]);
            c = select_row(ra, g, vc, bound, st, deg[r], fan[r], key_word, bid, v,
                           fa ? fa[r] : v, eid + o, set + set_off[r], keys + key_off[r], alias);
            if (c < 0) {
                atomic_store_u32(err, 1u);
                c = 0;
            }
            for (int64_t i = 0; i < c; ++i) {
                eid[o + i] += st;
                dst[o + i] = fl[r];
                if (erow) erow[o + i] = fr[r];
            }
        }
        count[r] = c;
    }
}

// A chunk of a long row: its row r and positions [p0, p1).
struct Chunk {
    int64_t r, p0, p1;
};

SPSAMPLE_HD inline Chunk chunk_of(const int64_t* chunk_off, int64_t m, const int64_t* deg,
                                  int64_t c) {
    const int64_t r = segment_of(chunk_off, m, c);
    const int64_t p0 = (c - chunk_off[r]) * LONG_CHUNK, d = deg[r];
    return Chunk{r, p0, p0 + LONG_CHUNK < d ? p0 + LONG_CHUNK : d};
}

// Calls emit(p) for each position of chunk ch that its row keeps, ascending; returns the count.
template <class Emit>
SPSAMPLE_HD inline int64_t chunk_positions(const RuleArgs& ra, const Chunk& ch, int64_t st,
                                           int64_t d, int64_t s, int64_t bid,
                                           const int64_t* indices, Emit&& emit) {
    if (keeps_whole_row(ra, d, s)) {
        for (int64_t p = ch.p0; p < ch.p1; ++p) emit(p);
        return ch.p1 - ch.p0;
    }
    return threshold_range([&](int64_t p) { return indices[st + p]; }, ch.p0, ch.p1, d, s,
                           ra.hw, static_cast<uint32_t>(bid), ra.key, emit);
}

// k_chunk_counts. a: C, m, chunk_off (m + 1: each row's first chunk), rule fields (RULE),
// start, deg, fan, fb, indices; out: ccount (C: the entries each chunk keeps).
SPSAMPLE_HD inline void k_chunk_counts(Launch t, const ChunkCountsArgs& a) {
    const int64_t C = a.C, m = a.m;
    const int64_t* chunk_off = a.chunk_off;
    const RuleArgs ra = rule_args(a);
    const int64_t* start = a.start;
    const int64_t* deg = a.deg;
    const int64_t* fan = a.fan;
    const int64_t* fb = a.fb;
    const int64_t* indices = a.indices;
    int64_t* ccount = a.ccount;
    for (int64_t c = t.first(); c < C; c += t.stride()) {
        const Chunk ch = chunk_of(chunk_off, m, deg, c);
        const int64_t r = ch.r;
        ccount[c] = chunk_positions(ra, ch, start[r], deg[r], fan[r], ra.batch_ids[fb[r]],
                                    indices, [](int64_t) {});
    }
}

// k_select_chunks. a: as k_chunk_counts up to indices, then fl, fr, ccum (C + 1:
// exclusive prefix sum of the chunks' counts), out_off (m + 1); out: dst, eid, erow (or 0).
SPSAMPLE_HD inline void k_select_chunks(Launch t, const SelectChunksArgs& a) {
    const int64_t C = a.C, m = a.m;
    const int64_t* chunk_off = a.chunk_off;
    const RuleArgs ra = rule_args(a);
    const int64_t* start = a.start;
    const int64_t* deg = a.deg;
    const int64_t* fan = a.fan;
    const int64_t* fb = a.fb;
    const int64_t* indices = a.indices;
    const int64_t* fl = a.fl;
    const int64_t* fr = a.fr;
    const int64_t* ccum = a.ccum;
    const int64_t* out_off = a.out_off;
    int64_t* dst = a.dst;
    int64_t* eid = a.eid;
    int64_t* erow = a.erow;
    for (int64_t c = t.first(); c < C; c += t.stride()) {
        const Chunk ch = chunk_of(chunk_off, m, deg, c);
        const int64_t r = ch.r, st = start[r];
        int64_t o = out_off[r] + ccum[c] - ccum[chunk_off[r]];
        chunk_positions(ra, ch, st, deg[r], fan[r], ra.batch_ids[fb[r]], indices,
                        [&](int64_t p) {
                            eid[o] = st + p;
                            dst[o] = fl[r];
                            if (erow) erow[o] = fr[r];
                            ++o;
                        });
    }
}

// k_compact. a: m, out_off (m + 1), count (m), new_off (m + 1), dst, eid, erow (or 0); out:
// dst2, eid2, erow2 (or 0): row r's count entries moved from out_off[r] to new_off[r].
SPSAMPLE_HD inline void k_compact(Launch t, const CompactArgs& a) {
    const int64_t m = a.m;
    const int64_t* out_off = a.out_off;
    const int64_t* count = a.count;
    const int64_t* new_off = a.new_off;
    const int64_t* dst = a.dst;
    const int64_t* eid = a.eid;
    const int64_t* erow = a.erow;
    int64_t* dst2 = a.dst2;
    int64_t* eid2 = a.eid2;
    int64_t* erow2 = a.erow2;
    for (int64_t r = t.first(); r < m; r += t.stride()) {
        const int64_t from = out_off[r], to = new_off[r];
        for (int64_t i = 0; i < count[r]; ++i) {
            dst2[to + i] = dst[from + i];
            eid2[to + i] = eid[from + i];
            if (erow2) erow2[to + i] = erow[from + i];
        }
    }
}

// k_gather. a: E, eid, indices, indices32 (or 0); out: nbr (int64) = the sampled columns.
SPSAMPLE_HD inline void k_gather(Launch t, const GatherArgs& a) {
    const int64_t E = a.E;
    const int64_t* eid = a.eid;
    const int64_t* indices = a.indices;
    const uint32_t* indices32 = a.indices32;
    int64_t* nbr = a.nbr;
    for (int64_t e = t.first(); e < E; e += t.stride())
        nbr[e] = indices32 ? static_cast<int64_t>(indices32[eid[e]]) : indices[eid[e]];
}

// k_table_nodes. a: N, k, nid, nid_off (k + 1), tab_off (k + 1; powers of two apart), slots:
// every vertex the minibatch holds, valued by its local id.
SPSAMPLE_HD inline void k_table_nodes(Launch t, const TableNodesArgs& a) {
    const int64_t N = a.N, k = a.k;
    const int64_t* nid = a.nid;
    const int64_t* nid_off = a.nid_off;
    const int64_t* tab_off = a.tab_off;
    uint64_t* slots = a.slots;
    for (int64_t i = t.first(); i < N; i += t.stride()) {
        const int64_t j = segment_of(nid_off, k, i);
        table_insert_min(slots + tab_off[j], tab_off[j + 1] - tab_off[j],
                         static_cast<uint32_t>(nid[i]), static_cast<uint32_t>(i - nid_off[j]));
    }
}

// Item i of a batch being added: its minibatch j, index t in the minibatch's items, table.
struct ItemArgs {
    int64_t I, k;
    const int64_t* items;
    const int64_t* item_off;
    const int64_t* tab_off;
    uint64_t* slots;
};

template <class A>
SPSAMPLE_HD inline ItemArgs item_args(const A& a) {  // A: an args struct with the ITEM fields
    return ItemArgs{a.I, a.k, a.items, a.item_off, a.tab_off, a.slots};
}

// k_table_items. a: I, k, items, item_off (k + 1), tab_off, slots: every item inserted valued
// DEDUP_NEW | t (the minimum t per new vertex survives).
SPSAMPLE_HD inline void k_table_items(Launch t, const TableItemsArgs& a) {
    const ItemArgs x = item_args(a);
    for (int64_t i = t.first(); i < x.I; i += t.stride()) {
        const int64_t j = segment_of(x.item_off, x.k, i);
        table_insert_min(x.slots + x.tab_off[j], x.tab_off[j + 1] - x.tab_off[j],
                         static_cast<uint32_t>(x.items[i]),
                         DEDUP_NEW | static_cast<uint32_t>(i - x.item_off[j]));
    }
}

// k_first_flags. a: as k_table_items, then flags (int64 out): 1 for an item that is the first
// occurrence of a vertex new to its minibatch.
SPSAMPLE_HD inline void k_first_flags(Launch t, const FirstFlagsArgs& a) {
    const ItemArgs x = item_args(a);
    int64_t* flags = a.flags;
    for (int64_t i = t.first(); i < x.I; i += t.stride()) {
        const int64_t j = segment_of(x.item_off, x.k, i);
        const uint32_t val = table_find(x.slots + x.tab_off[j], x.tab_off[j + 1] - x.tab_off[j],
                                        static_cast<uint32_t>(x.items[i]));
        flags[i] = val == (DEDUP_NEW | static_cast<uint32_t>(i - x.item_off[j])) ? 1 : 0;
    }
}

// k_assign. a: as k_table_items, then rank (I + 1: exclusive prefix sum of the flags), base (k:
// vertices each minibatch holds); out: local (I: each item's local id), newv (rank[I]: the new
// vertices, minibatch after minibatch, in first-occurrence order).
SPSAMPLE_HD inline void k_assign(Launch t, const AssignArgs& a) {
    const ItemArgs x = item_args(a);
    const int64_t* rank = a.rank;
    const int64_t* base = a.base;
    int64_t* local = a.local;
    int64_t* newv = a.newv;
    for (int64_t i = t.first(); i < x.I; i += t.stride()) {
        const int64_t j = segment_of(x.item_off, x.k, i);
        const int64_t first_item = x.item_off[j];
        const uint32_t val = table_find(x.slots + x.tab_off[j], x.tab_off[j + 1] - x.tab_off[j],
                                        static_cast<uint32_t>(x.items[i]));
        if (val & DEDUP_NEW) {
            const int64_t first = first_item + static_cast<int64_t>(val & ~DEDUP_NEW);
            local[i] = base[j] + rank[first] - rank[first_item];
            if (first == i) newv[rank[i]] = x.items[i];
        } else {
            local[i] = static_cast<int64_t>(val);
        }
    }
}

// k_merge_nodes. a: N2, k, out_off (k + 1), nid, nid_off (k + 1), add, add_off (k + 1); out:
// out (N2): each minibatch's n_id followed by its added vertices.
SPSAMPLE_HD inline void k_merge_nodes(Launch t, const MergeNodesArgs& a) {
    const int64_t N2 = a.N2, k = a.k;
    const int64_t* out_off = a.out_off;
    const int64_t* nid = a.nid;
    const int64_t* nid_off = a.nid_off;
    const int64_t* add = a.add;
    const int64_t* add_off = a.add_off;
    int64_t* out = a.out;
    for (int64_t i = t.first(); i < N2; i += t.stride()) {
        const int64_t j = segment_of(out_off, k, i);
        const int64_t l = i - out_off[j], held = nid_off[j + 1] - nid_off[j];
        out[i] = l < held ? nid[nid_off[j] + l] : add[add_off[j] + l - held];
    }
}

}  // namespace gpu
}  // namespace spsample

// The CUDA entries of this file's kernels (SPSAMPLE_ROWWISE_KERNELS: args.cuh).
#if defined(SPSAMPLE_CUDA)
#define SPSAMPLE_GLOBAL_KERNEL(name, Type, FIELDS)                                             \
    extern "C" __global__ void spsample_k_##name(const spsample::gpu::Type* a) {              \
        const spsample::gpu::Launch t{blockIdx.x, threadIdx.x, gridDim.x, blockDim.x};         \
        spsample::gpu::k_##name(t, *a);                                                       \
    }
SPSAMPLE_ROWWISE_KERNELS(SPSAMPLE_GLOBAL_KERNEL)
#undef SPSAMPLE_GLOBAL_KERNEL
#endif

#endif  // SPSAMPLE_DEVICE_ROWWISE_CUH
