// Bulk operations besides sampling, parallel over minibatches: deduplicating insertion and
// lookup (relabel.h), link minibatches' negatives and seeds (link.h: link_bulk), the grouping
// of a heterogeneous bulk by node type (typed.h: split_typed) and every minibatch's edges in
// one block (link.h: minibatch_edges), with the checks of their arguments.
// Part of the bindings of spsample._native_kernels (included once, by native/module.cpp).
#ifndef SPSAMPLE_BIND_BULK_OPS_H
#define SPSAMPLE_BIND_BULK_OPS_H

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "bind/arrays.h"
#include "bind/decode.h"
#include "bind/pooled.h"
#include "link.h"
#include "localmap.h"
#include "parallel.h"
#include "relabel.h"
#include "typed.h"

namespace spsample {
namespace bind {

RelabelBulk relabel_args(const I64& known_off, const I64& known, const I64& cand_off,
                         const I64& cand, int64_t& k) {
    require(known_off.ndim() == 1 && cand_off.ndim() == 1 && known_off.size() >= 1 &&
            known_off.size() == cand_off.size(), "offsets must be 1-d of equal length k + 1");
    k = known_off.size() - 1;
    const int64_t* ko = known_off.data();
    const int64_t* co = cand_off.data();
    require(ko[0] == 0 && co[0] == 0 && ko[k] == known.size() && co[k] == cand.size(),
            "offsets must run from 0 to the array lengths");
    for (int64_t j = 0; j < k; ++j)
        require(ko[j] <= ko[j + 1] && co[j] <= co[j + 1], "offsets must be non-decreasing");
    for (int64_t i = 0; i < cand.size(); ++i)
        require(cand.data()[i] >= 0 && cand.data()[i] < static_cast<int64_t>(0xFFFFFFFFll),
                "candidates must be vertex ids in [0, 2**32 - 1)");
    for (int64_t i = 0; i < known.size(); ++i)
        require(known.data()[i] >= -1 && known.data()[i] < static_cast<int64_t>(0xFFFFFFFFll),
                "known vertices must be ids in [0, 2**32 - 1) or -1");
    return RelabelBulk{ko, known.data(), co, cand.data()};
}

// Returns (local (m,), fresh (k,), added (m,): minibatch j's new vertices at cand_off[j]...).
py::tuple insert_bulk_native(const I64& known_off, const I64& known, const I64& cand_off,
                             const I64& cand, int num_threads) {
    int64_t k = 0;
    const RelabelBulk b = relabel_args(known_off, known, cand_off, cand, k);
    I64 local(cand.size()), added(cand.size()), fresh(k);
    int64_t* lp = local.mutable_data();
    int64_t* ap = added.mutable_data();
    int64_t* fp = fresh.mutable_data();
    {
        py::gil_scoped_release release;
        for_each_minibatch<LocalMap>(k, resolve_threads(num_threads), [](LocalMap&) {},
            [&](int64_t j, LocalMap& map) { insert_minibatch(b, j, map, lp, ap, fp); });
    }
    return py::make_tuple(local, fresh, added);
}

// Returns the local id of every query (-1 when absent).
I64 lookup_bulk_native(const I64& known_off, const I64& known, const I64& cand_off,
                       const I64& cand, int num_threads) {
    int64_t k = 0;
    const RelabelBulk b = relabel_args(known_off, known, cand_off, cand, k);
    I64 local(cand.size());
    int64_t* lp = local.mutable_data();
    {
        py::gil_scoped_release release;
        for_each_minibatch<LocalMap>(k, resolve_threads(num_threads), [](LocalMap&) {},
            [&](int64_t j, LocalMap& map) { lookup_minibatch(b, j, map, lp); });
    }
    return local;
}

// Offsets of k minibatches: 1-d, k + 1 entries, from 0 to `total`, non-decreasing.
void require_offsets(const I64& off, int64_t k, int64_t total, const char* what) {
    require(off.ndim() == 1 && off.size() == k + 1, what);
    const int64_t* o = off.data();
    bool ok = o[0] == 0 && o[k] == total;
    for (int64_t j = 0; j < k; ++j) ok = ok && o[j] <= o[j + 1];
    require(ok, what);
}

// One end's picker: (n, cumulative float64 (n,) or None, last).
NegativePicker picker_of(const py::tuple& t, std::vector<F64>& keep) {
    require(t.size() == 3, "a picker is (n, cumulative or None, last)");
    NegativePicker p;
    p.n = t[0].cast<int64_t>();
    require(p.n >= 0 && p.n < static_cast<int64_t>(0xFFFFFFFFll), "picker n in [0, 2**32 - 1)");
    if (!t[1].is_none()) {
        keep.push_back(t[1].cast<F64>());
        require(keep.back().ndim() == 1 && keep.back().size() == p.n && p.n >= 1,
                "cumulative weights must have n >= 1 entries");
        p.cumulative = keep.back().data();
        p.last = t[2].cast<int64_t>();
        require(p.last >= 0 && p.last < p.n, "last must be in [0, n)");
    }
    return p;
}

// The seed-edge arguments of link_bulk: positions in range, every gathered id in its type
// (one require per check: it builds its message).
void check_link_seeds(const LinkBulk& b, int64_t m, int64_t total) {
    bool in_range = true, typed = true;
    for (int64_t i = 0; i < total; ++i) {
        if (b.pos[i] < 0 || b.pos[i] >= m) {
            in_range = false;
            break;
        }
        const int64_t u = b.src_ids[b.pos[i]], v = b.dst_ids[b.pos[i]];
        typed = typed && u >= 0 && u < b.pick_src.n && v >= 0 && v < b.pick_dst.n;
    }
    require(in_range, "seed-edge positions must be in [0, E)");
    require(typed, "seed edges must be ids of their types");
}

// Returns (nsrc, ndst, where, seeds, fresh, failed, end_off): link.h link_minibatch for every
// minibatch (seeds of minibatch j at end_off[j] .. end_off[j] + fresh[j]).
py::tuple link_bulk_native(const I64& pos_off, const I64& pos, const I64& src_ids,
                           const I64& dst_ids, const I64& neg_off, const I64& batch_ids,
                           int32_t mode, int64_t ratio, const py::tuple& pickers, uint32_t k0,
                           uint32_t k1, uint32_t hop_word, const py::object& block,
                           int64_t max_attempts, int64_t off_src, int64_t off_dst, bool dedup,
                           int num_threads) {
    require(batch_ids.ndim() == 1 && pos.ndim() == 1, "batch_ids and pos must be 1-d");
    LinkBulk b;
    b.k = batch_ids.size();
    require_offsets(pos_off, b.k, pos.size(), "pos_off must be offsets of pos");
    require(neg_off.ndim() == 1 && neg_off.size() == b.k + 1, "neg_off must have k + 1 entries");
    require_offsets(neg_off, b.k, neg_off.data()[b.k], "neg_off must be offsets");
    require(src_ids.ndim() == 1 && dst_ids.ndim() == 1 && src_ids.size() == dst_ids.size(),
            "src_ids and dst_ids must be 1-d of one length");
    require(mode == LINK_BINARY || mode == LINK_TRIPLET || mode == LINK_NONE, "unknown mode");
    require(ratio >= 1 && max_attempts >= 1, "ratio and max_attempts must be >= 1");
    std::vector<F64> keep;
    require(pickers.size() == 2, "pickers must be (source, destination)");
    b.pick_src = picker_of(pickers[0].cast<py::tuple>(), keep);
    b.pick_dst = picker_of(pickers[1].cast<py::tuple>(), keep);
    b.pos_off = pos_off.data();
    b.pos = pos.data();
    b.src_ids = src_ids.data();
    b.dst_ids = dst_ids.data();
    b.neg_off = neg_off.data();
    b.batch_ids = batch_ids.data();
    b.mode = mode;
    b.ratio = ratio;
    check_link_seeds(b, src_ids.size(), pos.size());
    std::vector<int64_t> end_off(b.k + 1, 0);
    for (int64_t j = 0; j < b.k; ++j) {
        const int64_t np_ = b.pos_off[j + 1] - b.pos_off[j], ns = b.neg_off[j + 1] - b.neg_off[j];
        require(mode != LINK_NONE || ns == 0, "no negatives without a negative mode");
        require(mode != LINK_TRIPLET || ns == ratio * np_, "triplet: ratio negatives per edge");
        end_off[j + 1] = end_off[j] + 2 * np_ + (mode == LINK_BINARY ? 2 : 1) * ns;
    }
    b.end_off = end_off.data();
    b.key = Key{k0, k1};
    b.hop_word = hop_word;
    b.off_src = off_src;
    b.off_dst = off_dst;
    require(off_src >= 0 && off_dst >= 0 &&
            off_src + b.pick_src.n < static_cast<int64_t>(0xFFFFFFFFll) &&
            off_dst + b.pick_dst.n < static_cast<int64_t>(0xFFFFFFFFll),
            "type offsets + sizes must stay below 2**32 - 1");
    std::vector<py::object> keep_graph;
    b.strict = !block.is_none();
    if (b.strict) {
        b.block = graph_view(block.cast<py::tuple>(), keep_graph);
        require(off_src + b.pick_src.n <= b.block.n && off_dst + b.pick_dst.n <= b.block.n,
                "the block must hold both types");
    }
    b.max_attempts = max_attempts;
    b.dedup = dedup;
    const int64_t S = b.neg_off[b.k], T = end_off[b.k];
    I64 nsrc(S), ndst(S), where(T), seeds(T), fresh(b.k), failed(b.k);
    LinkOut out{nsrc.mutable_data(), ndst.mutable_data(), where.mutable_data(),
                seeds.mutable_data(), fresh.mutable_data(), failed.mutable_data()};
    std::vector<int64_t> ends(static_cast<size_t>(T));
    {
        py::gil_scoped_release release;
        for_each_minibatch<LocalMap>(b.k, resolve_threads(num_threads), [](LocalMap&) {},
            [&](int64_t j, LocalMap& map) { link_minibatch(b, j, map, ends.data(), out); });
    }
    I64 ends_at(b.k + 1);
    std::memcpy(ends_at.mutable_data(), end_off.data(), sizeof(int64_t) * (b.k + 1));
    return py::make_tuple(nsrc, ndst, where, seeds, fresh, failed, ends_at);
}

// Returns (local (N,), batch (N,) or None, per_group (k, T), per_hop (k, T, L + 1), [(dst, src)
// per step]): typed.h split_typed_minibatch for every minibatch; ValueError when an id lies
// outside the types or an edge end outside its minibatch.
py::tuple split_typed_native(const I64& n_id, const I64& node_off, const I64& counts,
                             const I64& step_hop, const I64& type_off,
                             const py::object& node_batch, const py::list& dst,
                             const py::list& src, const py::list& edge_off, int64_t num_hops,
                             int num_threads) {
    TypedBulk b;
    require(n_id.ndim() == 1 && node_off.ndim() == 1 && node_off.size() >= 1, "n_id, node_off");
    b.k = node_off.size() - 1;
    require_offsets(node_off, b.k, n_id.size(), "node_off must be offsets of n_id");
    b.S = static_cast<int64_t>(dst.size());
    b.L = num_hops;
    require(num_hops >= 0 && src.size() == dst.size() && edge_off.size() == dst.size(),
            "one dst, src and offsets per step");
    require(counts.size() == b.k * (b.S + 1), "counts must be (k, steps + 1)");
    require(step_hop.ndim() == 1 && step_hop.size() == b.S + 1, "one hop per step");
    for (int64_t s = 0; s <= b.S; ++s)
        require(step_hop.data()[s] >= 0 && step_hop.data()[s] <= num_hops, "step hops in [0, L]");
    require(type_off.ndim() == 1 && type_off.size() >= 2, "type offsets of T >= 1 types");
    b.T = type_off.size() - 1;
    for (int64_t t = 0; t < b.T; ++t)
        require(type_off.data()[t] <= type_off.data()[t + 1], "type offsets ascending");
    b.n_id = n_id.data();
    b.node_off = node_off.data();
    b.counts = counts.data();
    b.step_hop = step_hop.data();
    b.type_off = type_off.data();
    I64 batch_in;
    if (!node_batch.is_none()) {
        batch_in = node_batch.cast<I64>();
        require(batch_in.ndim() == 1 && batch_in.size() == n_id.size(), "node_batch of N entries");
        b.node_batch = batch_in.data();
    }
    std::vector<I64> keep;
    const int64_t N = n_id.size();
    std::vector<Pooled> ends;  // dst_out, src_out per step, then local and batch
    std::vector<std::unique_ptr<PooledGuard>> guards;
    auto take = [&](int64_t count) {
        ends.push_back(pooled(count, sizeof(int64_t)));
        guards.emplace_back(new PooledGuard{ends.back()});
        return static_cast<int64_t*>(ends.back().p);
    };
    ends.reserve(2 * b.S + 2);  // no reallocation: the guards hold references
    TypedOut out;
    for (int64_t i = 0; i < b.S; ++i) {
        keep.push_back(dst[i].cast<I64>());
        keep.push_back(src[i].cast<I64>());
        keep.push_back(edge_off[i].cast<I64>());
        const I64 &d = keep[keep.size() - 3], &s = keep[keep.size() - 2], &o = keep.back();
        require(d.ndim() == 1 && s.ndim() == 1 && d.size() == s.size(), "dst and src of a step");
        require_offsets(o, b.k, d.size(), "a step's offsets must be offsets of its edges");
        b.dst.push_back(d.data());
        b.src.push_back(s.data());
        b.edge_off.push_back(o.data());
        out.dst_out.push_back(take(d.size()));
        out.src_out.push_back(take(d.size()));
    }
    out.local = take(N);
    out.batch_out = b.node_batch ? take(N) : nullptr;
    I64 per_group(b.k * b.T), per_hop(b.k * b.T * (b.L + 1));
    out.per_group = per_group.mutable_data();
    out.per_hop = per_hop.mutable_data();
    std::atomic<bool> ok(true);
    {
        py::gil_scoped_release release;
        for_each_minibatch<TypedScratch>(b.k, resolve_threads(num_threads),
            [](TypedScratch&) {}, [&](int64_t j, TypedScratch& sc) {
                if (!split_typed_minibatch(b, j, sc, out)) ok = false;
            });
    }
    require(ok, "n_id must hold ids of the types and edge ends positions in their minibatch");
    py::list steps;
    for (int64_t i = 0; i < b.S; ++i)
        steps.append(py::make_tuple(to_numpy<int64_t>(ends[2 * i]),
                                    to_numpy<int64_t>(ends[2 * i + 1])));
    py::object batch_out = b.node_batch ? py::object(to_numpy<int64_t>(ends[2 * b.S + 1]))
                                        : py::object(py::none());
    per_group.resize({static_cast<py::ssize_t>(b.k), static_cast<py::ssize_t>(b.T)});
    per_hop.resize({static_cast<py::ssize_t>(b.k), static_cast<py::ssize_t>(b.T),
                    static_cast<py::ssize_t>(b.L + 1)});
    return py::make_tuple(to_numpy<int64_t>(ends[2 * b.S]), batch_out, per_group, per_hop,
                          steps);
}

// The exclusion arguments of minibatch_edges: (n_id, node_off, u, v, pair_off), checked.
void exclusion_of(const py::tuple& t, int64_t k, std::vector<I64>& keep, EdgeHops& h) {
    require(t.size() == 5, "exclude is (n_id, node_offsets, u, v, pair_offsets)");
    for (size_t i = 0; i < 5; ++i) {
        keep.push_back(t[i].cast<I64>());
        require(keep.back().ndim() == 1, "exclusion arrays must be 1-d");
    }
    const I64 *n_id = &keep[keep.size() - 5], *node_off = n_id + 1, *u = n_id + 2, *v = n_id + 3;
    require_offsets(*node_off, k, n_id->size(), "node_offsets must be offsets of n_id");
    require(u->size() == v->size(), "u and v must have one length");
    require_offsets(*(n_id + 4), k, u->size(), "pair_offsets must be offsets of the pairs");
    bool ids = true;
    for (int64_t i = 0; i < u->size(); ++i)
        ids = ids && u->data()[i] >= 0 && u->data()[i] < static_cast<int64_t>(0xFFFFFFFFll) &&
              v->data()[i] >= 0 && v->data()[i] < static_cast<int64_t>(0xFFFFFFFFll);
    require(ids, "pairs must be ids in [0, 2**32 - 1)");
    h.n_id = n_id->data();
    h.node_off = node_off->data();
    h.u = u->data();
    h.v = v->data();
    h.pair_off = (n_id + 4)->data();
}

// Returns (out (3 E,) pooled, edge_off (k + 1,), kept (k, L)): link.h minibatch_edges for every
// minibatch, minibatch j at 3 * edge_off[j]; exclude: None or exclusion_of's tuple.
py::tuple minibatch_edges_native(const py::list& dst, const py::list& src, const py::list& eid,
                                 const py::list& offsets, const py::object& exclude,
                                 int num_threads) {
    const size_t L = offsets.size();
    require(L >= 1 && dst.size() == L && src.size() == L && eid.size() == L,
            "one dst, src, eid and offsets array per hop (at least one hop)");
    std::vector<I64> keep;
    keep.reserve(4 * L + 5);  // the pointers below stay valid
    EdgeHops h;
    int64_t k = -1;
    for (size_t l = 0; l < L; ++l) {
        keep.push_back(offsets[l].cast<I64>());
        const I64& off = keep.back();
        require(off.ndim() == 1 && off.size() >= 1 && (k < 0 || off.size() == k + 1),
                "offsets must be 1-d with k + 1 entries for every hop");
        k = off.size() - 1;
        const int64_t E = off.data()[k];
        require_offsets(off, k, E, "offsets must run from 0 to the edges, non-decreasing");
        h.offsets.push_back(off.data());
        for (const py::list* arrays : {&dst, &src, &eid}) {
            keep.push_back((*arrays)[l].cast<I64>());
            require(keep.back().ndim() == 1 && keep.back().size() == E,
                    "edge arrays must be 1-d with offsets[-1] entries");
        }
        h.dst.push_back(keep[keep.size() - 3].data());
        h.src.push_back(keep[keep.size() - 2].data());
        h.eid.push_back(keep[keep.size() - 1].data());
    }
    if (!exclude.is_none()) exclusion_of(exclude.cast<py::tuple>(), k, keep, h);
    I64 edge_off(k + 1);
    int64_t* eo = edge_off.mutable_data();
    eo[0] = 0;
    for (int64_t j = 0; j < k; ++j) {
        eo[j + 1] = eo[j];
        for (size_t l = 0; l < L; ++l) eo[j + 1] += h.offsets[l][j + 1] - h.offsets[l][j];
    }
    Pooled out = pooled(3 * eo[k], sizeof(int64_t));
    PooledGuard guard{out};
    I64 kept({k, static_cast<int64_t>(L)});
    int64_t* op = static_cast<int64_t*>(out.p);
    int64_t* kp = kept.mutable_data();
    std::vector<uint8_t> bad(static_cast<size_t>(k), 0);
    {
        py::gil_scoped_release release;
        for_each_minibatch<EdgeScratch>(k, resolve_threads(num_threads), [](EdgeScratch&) {},
            [&](int64_t j, EdgeScratch& sc) {
                bad[j] = !minibatch_edges(h, j, 3 * eo[j], op, kp, sc);
            });
    }
    for (uint8_t b : bad) require(!b, "edge ids must be local ids of their minibatch");
    return py::make_tuple(to_numpy<int64_t>(out), edge_off, kept);
}

}  // namespace bind
}  // namespace spsample

#endif  // SPSAMPLE_BIND_BULK_OPS_H
