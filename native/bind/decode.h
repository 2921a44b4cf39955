// Decoding of a lowered row-wise plan (spsample/native/_lowering.py) into the engine's specs,
// every bound the kernels rely on checked: graphs (graph_view), frontiers (frontier_spec),
// value programs (value_program), temporal cuts (time_vector), a hop's rule (hop_rule) and the
// whole hop (hop_spec); rowwise_plan decodes a bulk call's arguments into a RowWiseCall.
// Part of the bindings of spsample._native_kernels (included once, by native/module.cpp).
#ifndef SPSAMPLE_BIND_DECODE_H
#define SPSAMPLE_BIND_DECODE_H

#include <string>
#include <vector>

#include "bind/arrays.h"
#include "rowwise.h"
#include "select.h"

namespace spsample {
namespace bind {

// ---- the row-wise engine (rowwise.h) ---------------------------------------------------------
CSRView graph_view(const py::tuple& t, std::vector<py::object>& keep) {
    require(t.size() == 4 || t.size() == 5, "a graph is (indptr, indices, weights, indices32[, fence])");
    I64 indptr = t[0].cast<I64>(), indices = t[1].cast<I64>();
    require(indptr.ndim() == 1 && indptr.size() >= 2 && indices.ndim() == 1, "graph arrays must be 1-d");
    const int64_t n = indptr.size() - 1;
    require(n < static_cast<int64_t>(0xFFFFFFFFll), "at most 2**32 - 1 vertices");
    require(indptr.data()[0] == 0 && indptr.data()[n] == indices.size(), "indptr must run from 0 to len(indices)");
    CSRView g{indptr.data(), indices.data(), nullptr, n};
    keep.push_back(indptr);
    keep.push_back(indices);
    if (!t[2].is_none()) {
        F64 w = t[2].cast<F64>();
        require(w.ndim() == 1 && w.size() == indices.size(), "weights must match indices");
        g.weights = w.data();
        keep.push_back(w);
    }
    if (!t[3].is_none()) {
        U32 idx32 = t[3].cast<U32>();
        require(idx32.ndim() == 1 && idx32.size() == indices.size(), "indices32 must match indices");
        g.indices32 = idx32.data();
        keep.push_back(idx32);
    }
    if (t.size() == 5 && !t[4].is_none()) {  // (fence, phase): fence[j] = indices32[phase + 16 j]
        require(g.indices32 != nullptr, "a fence needs indices32");
        const py::tuple f = t[4].cast<py::tuple>();
        require(f.size() == 2, "a fence is (columns, phase)");
        U32 fence = f[0].cast<U32>();
        const int64_t phase = f[1].cast<int64_t>(), nnz = indices.size();
        require(phase >= 0 && phase < 16 && fence.ndim() == 1 &&
                    fence.size() == (nnz > phase ? (nnz - phase + 15) / 16 : 0),
                "a fence has one entry per 16 columns from its phase");
        const int64_t last = fence.size() - 1;
        require(last < 0 || (fence.data()[0] == g.indices32[phase] &&
                             fence.data()[last] == g.indices32[phase + 16 * last]),
                "the fence must be the graph's every 16th column");
        g.fence = fence.data();
        g.fence_phase = phase;
        keep.push_back(fence);
    }
    return g;
}

FrontierSpec frontier_spec(const py::tuple& t, const std::vector<I64>& ivecs, int hop, int64_t k, int64_t n) {
    FrontierSpec f;
    f.kind = t[0].cast<int32_t>();
    f.hop = t[1].cast<int32_t>();
    f.hop_last = t.size() > 4 ? t[4].cast<int32_t>() : f.hop;
    require(f.kind >= F_NEW_NODES && f.kind <= F_ROWS, "unknown frontier kind");
    if (f.kind == F_NEW_NODES)
        require(f.hop >= 0 && f.hop < hop && f.hop_last >= f.hop - 1 && f.hop_last < hop &&
                    (f.hop > 0 || f.hop_last >= 0),
                "new_nodes of hops not sampled yet");
    if (f.kind == F_EDGE_SRC || f.kind == F_EDGE_DST)
        require(f.hop >= 1 && f.hop < hop, "edge ends of a hop not sampled yet");
    if (f.kind == F_ROWS) {
        const int64_t oi = t[2].cast<int64_t>(), vi = t[3].cast<int64_t>();
        require(oi >= 0 && vi >= 0 && oi < static_cast<int64_t>(ivecs.size()) &&
                vi < static_cast<int64_t>(ivecs.size()), "rows arrays missing");
        const I64& off = ivecs[oi];
        const I64& vert = ivecs[vi];
        require(off.size() == k + 1 && off.data()[0] == 0 && off.data()[k] == vert.size(), "rows offsets");
        for (int64_t j = 0; j < k; ++j) require(off.data()[j] <= off.data()[j + 1], "rows offsets");
        for (int64_t i = 0; i < vert.size(); ++i) require(vert.data()[i] >= 0 && vert.data()[i] < n, "rows vertex");
        f.rows_offsets = off.data();
        f.rows_vertex = vert.data();
    }
    return f;
}

// n_vertices: the length of per-vertex vectors (g.n, except for a block of rows of a larger graph).
ValueProgram value_program(const py::list& code, const std::vector<F64>& fvecs, const CSRView& g,
                           const CSRView* aux, int64_t n_vertices) {
    ValueProgram pg;
    pg.weights = g.weights;
    pg.aux = aux;
    int depth = 0;
    for (const auto& item : code) {
        const py::tuple t = item.cast<py::tuple>();
        Instr in{t[0].cast<int32_t>(), t[1].cast<int32_t>(), t[2].cast<int32_t>(), t[3].cast<double>()};
        require(in.op >= V_CONST && in.op <= V_SQUARE && (in.ctx == 0 || in.ctx == 1), "bad value instruction");
        const bool leaf = in.op <= V_INDICATOR;
        if (in.ctx == 1 || in.op == V_FOUND) {
            require(aux != nullptr, "a lookup needs an aux frontier and graph");
            pg.uses_lookup = true;
        }
        if (in.op == V_WEIGHT) require((in.ctx == 0 ? g.weights : aux->weights) != nullptr, "weights missing");
        if (in.op == V_COLUMN || in.op == V_ROW || in.op == V_EDGE) {
            require(in.arg >= 0 && in.arg < static_cast<int32_t>(fvecs.size()), "vector missing");
            const int64_t want =
                in.op == V_EDGE ? (in.ctx == 0 ? g.indptr[g.n] : aux->indptr[aux->n]) : n_vertices;
            require(fvecs[in.arg].size() == want, "vector of the wrong length");
        }
        depth += leaf ? 1 : (in.op == V_MUL || in.op == V_ADD ? -1 : 0);
        require(depth >= 1 && depth <= VALUE_STACK, "value program stack");
        pg.code.push_back(in);
    }
    require(code.size() == 0 || depth == 1, "value program must leave one value");
    for (const auto& v : fvecs) pg.vectors.push_back(v.data());
    pg.only_weight = pg.code.size() == 1 && pg.code[0].op == V_WEIGHT && pg.code[0].ctx == 0;
    return pg;
}

// Vector `index` of a temporal hop's table (ivecs when hop["time_int"]: integer times, else
// fvecs), checked to hold `size` times.
static TimeVec time_vector(const py::dict& hop, int64_t index, const std::vector<F64>& fvecs,
                          const std::vector<I64>& ivecs, int64_t size, const char* what) {
    const bool ints = hop.contains("time_int") && hop["time_int"].cast<bool>();
    const int64_t tables = static_cast<int64_t>(ints ? ivecs.size() : fvecs.size());
    require(index >= 0 && index < tables, std::string(what) + ": vector missing");
    TimeVec t;
    if (ints) {
        require(ivecs[index].size() == size, std::string(what) + " of the wrong length");
        t.i = ivecs[index].data();
    } else {
        require(fvecs[index].size() == size, std::string(what) + " of the wrong length");
        t.f = fvecs[index].data();
    }
    return t;
}

void hop_rule(HopSpec& hs, const py::dict& d, const CSRView& g, const CSRView* aux,
              const std::vector<F64>& fvecs, const std::vector<I64>& ivecs, int64_t n);

HopSpec hop_spec(const py::dict& d, const std::vector<CSRView>& graphs, const std::vector<F64>& fvecs,
                 const std::vector<I64>& ivecs, int hop, int64_t k, int64_t n) {
    HopSpec hs;
    hs.frontier = frontier_spec(d["frontier"].cast<py::tuple>(), ivecs, hop, k, n);
    hs.graph = d["graph"].cast<int32_t>();
    require(hs.graph >= 0 && hs.graph < static_cast<int32_t>(graphs.size()), "graph index");
    require(graphs[hs.graph].n == n, "every graph of a plan has n vertices");
    const CSRView* aux = nullptr;
    if (!d["aux"].is_none()) {
        hs.has_aux = true;
        hs.aux = frontier_spec(d["aux"].cast<py::tuple>(), ivecs, hop, k, n);
        const int32_t ag = d["aux_graph"].cast<int32_t>();
        require(ag >= 0 && ag < static_cast<int32_t>(graphs.size()), "aux graph index");
        aux = &graphs[ag];
        const bool edges = (hs.frontier.kind == F_EDGE_SRC || hs.frontier.kind == F_EDGE_DST) &&
                           (hs.aux.kind == F_EDGE_SRC || hs.aux.kind == F_EDGE_DST) &&
                           hs.frontier.hop == hs.aux.hop;
        const bool same = hs.frontier.kind == hs.aux.kind && hs.frontier.hop == hs.aux.hop &&
                          hs.frontier.kind != F_ROWS;
        require(edges || same, "the aux frontier must be aligned with the frontier");
    }
    hop_rule(hs, d, graphs[hs.graph], aux, fvecs, ivecs, n);
    hs.dedup = d["dedup"].cast<bool>();
    hs.keep_row_ids = d["keep_row_ids"].cast<bool>();
    const py::tuple rk = d["rng_key"].cast<py::tuple>();
    hs.hop_word = d["hop_word"].cast<uint32_t>();
    hs.rng_key = Key{rk[0].cast<uint32_t>(), rk[1].cast<uint32_t>()};
    const int64_t ti = d["time"].cast<int64_t>(), bi = d["batch_time"].cast<int64_t>();
    if (ti >= 0) {  // sortedness within rows is checked by spsample (RowView.until)
        const CSRView& g = graphs[hs.graph];
        hs.entry_time = time_vector(d, ti, fvecs, ivecs, g.indptr[g.n], "entry times");
        hs.batch_time = time_vector(d, bi, fvecs, ivecs, k, "cut times (one per minibatch)");
    }
    return hs;
}

// A weighted hop's float32 weights (Graph.screen_weights: fl32 of every weight, all positive
// ones in [SCREEN32_W_MIN, SCREEN32_W_MAX]), checked on their size and on the first and last
// entries; the hop's dict holds the array for the call.
void screen_weights(HopSpec& hs, const py::object& obj, const CSRView& g) {
    using F32 = py::array_t<float, py::array::c_style>;
    require(py::isinstance<F32>(obj), "screen_weights must be a C-contiguous float32 array");
    const F32 arr = py::reinterpret_borrow<F32>(obj);
    const int64_t nnz = g.indptr[g.n];
    require(g.weights && arr.ndim() == 1 && arr.size() == nnz, "screen_weights of one per entry");
    const float* x = arr.data();
    auto copy_of = [&](int64_t p) {
        const double w = g.weights[p];
        const bool in_range = !(w > 0) || (w >= SCREEN32_W_MIN && w <= SCREEN32_W_MAX);
        const float want = static_cast<float>(w);
        return in_range && (x[p] == want || (x[p] != x[p] && want != want));
    };
    require(nnz == 0 || (copy_of(0) && copy_of(nnz - 1)), "screen_weights must be the graph's weights in float32");
    hs.screen_weights = x;
}

// An alias rule's table (Graph.alias_table: a (threshold, alias) pair of uint32 per entry of the
// graph). The kernel reads an alias outside its row as the drawn entry itself, so a table that is
// not the graph's cannot read out of bounds; its shape is checked here.
void alias_table(HopSpec& hs, const py::object& obj, const CSRView& g) {
    using U32 = py::array_t<uint32_t, py::array::c_style>;
    require(py::isinstance<U32>(obj), "alias must be a C-contiguous uint32 array");
    const auto arr = obj.cast<U32>();
    const int64_t nnz = g.indptr[g.n];
    require(arr.ndim() == 2 && arr.shape(0) == nnz && arr.shape(1) == 2, "alias of a pair per entry");
    hs.alias = arr.data();
}

// The rule of a hop (values, selection, fanouts, bound, stream key), checked; n = vertices.
void hop_rule(HopSpec& hs, const py::dict& d, const CSRView& g, const CSRView* aux,
              const std::vector<F64>& fvecs, const std::vector<I64>& ivecs, int64_t n) {
    hs.values = value_program(d["program"].cast<py::list>(), fvecs, g, aux, n);
    hs.select = d["select"].cast<int32_t>();
    require(hs.select >= S_UNIFORM && hs.select <= S_ALIAS_REP, "unknown selection");
    const bool alias = hs.select == S_ALIAS || hs.select == S_ALIAS_REP;
    if (hs.select == S_WEIGHTED || hs.select == S_WEIGHTED_REP || hs.select == S_REJECTION || alias)
        require(!hs.values.code.empty(), "a weighted rule needs values");
    hs.fanout = d["fanout"].cast<int64_t>();
    const int64_t fv = d["fanout_vec"].cast<int64_t>();
    if (fv >= 0) {
        require(fv < static_cast<int64_t>(ivecs.size()) && ivecs[fv].size() == n, "fanout vector of n entries");
        hs.fanout_vec = ivecs[fv].data();
        for (int64_t i = 0; i < n; ++i) require(hs.fanout_vec[i] >= -1, "fanouts >= -1");
    } else {
        require(hs.fanout >= 1 || hs.fanout == -1, "fanout must be >= 1 or -1");
    }
    if (hs.select == S_REJECTION) {
        require(hs.fanout >= 0, "rejection fanouts must be >= 0");
        if (hs.fanout_vec)
            for (int64_t i = 0; i < n; ++i) require(hs.fanout_vec[i] >= 0, "rejection fanouts must be >= 0");
    }
    hs.bound = d["bound"].cast<double>();
    const int64_t rs = d.contains("row_stats") ? d["row_stats"].cast<int64_t>() : -1;
    if (rs >= 0) {  // per row (eligible, wmax, wsum) of g's weights (row_weight_stats)
        require((hs.select == S_WEIGHTED || alias) && hs.values.only_weight &&
                    rs < static_cast<int64_t>(fvecs.size()) && fvecs[rs].size() == 3 * g.n,
                "row_stats of 3 per row of a weighted rule's graph");
        hs.row_stats = fvecs[rs].data();
        if (d.contains("screen_weights")) screen_weights(hs, d["screen_weights"], g);
    }
    if (d.contains("alias")) {  // the graph's own table (whole rows valued by its weights)
        require(alias && hs.values.only_weight && hs.row_stats && d["time"].cast<int64_t>() < 0,
                "an alias table goes with an alias rule on whole rows of the graph's weights, "
                "with their row statistics");
        alias_table(hs, d["alias"], g);
        const int64_t sh = d["alias_share"].cast<int64_t>();
        require(sh >= 0 && sh < static_cast<int64_t>(fvecs.size()) && fvecs[sh].size() == g.n,
                "alias_share of one per row of the graph");
        hs.alias_share = fvecs[sh].data();
        // every weight positive (Graph.all_weights_positive, a memo of the frozen weights;
        // spot-checked here): each row's eligible count is its length
        hs.alias_all_positive = d.contains("alias_all_positive") && d["alias_all_positive"].cast<bool>();
        const int64_t nnz = g.indptr[g.n];
        require(!hs.alias_all_positive || nnz == 0 || (g.weights[0] > 0 && g.weights[nnz - 1] > 0),
                "alias_all_positive needs every weight > 0");
    }
    hs.key = d["key"].cast<int32_t>();
    require(hs.key == K_VERTEX || hs.key == K_ROW, "unknown stream key");
}


// A row-wise plan with the bulk and the arrays it points into (rowwise_plan).
struct RowWiseCall {
    std::vector<py::object> keep;
    std::vector<F64> fvecs;
    std::vector<I64> ivecs;
    Bulk b;
    RowWisePlan plan;
};

// The row-wise plan of run_rowwise's arguments, checked, into `c`.
void rowwise_plan(const py::list& graphs, const I64& seeds, const I64& sizes,
                  const I64& batch_ids, const py::list& hops, const py::list& f64_vectors,
                  const py::list& i64_vectors, uint32_t k0, uint32_t k1, uint64_t epoch,
                  RowWiseCall& c) {
    Bulk& b = c.b;
    std::vector<py::object>& keep = c.keep;
    std::vector<F64>& fvecs = c.fvecs;
    std::vector<I64>& ivecs = c.ivecs;
    RowWisePlan& plan = c.plan;
    for (const auto& g : graphs) plan.graphs.push_back(graph_view(g.cast<py::tuple>(), keep));
    require(!plan.graphs.empty(), "a plan needs a graph");
    plan.n = plan.graphs[0].n;
    set_seeds(b, seeds, sizes, batch_ids);
    for (const auto& v : f64_vectors) fvecs.push_back(v.cast<F64>());
    for (const auto& v : i64_vectors) ivecs.push_back(v.cast<I64>());
    for (const auto& v : fvecs) require(v.ndim() == 1, "vectors must be 1-d");
    for (const auto& v : ivecs) require(v.ndim() == 1, "vectors must be 1-d");
    const int L = static_cast<int>(hops.size());
    require(L >= 1 && L <= 65535, "1 to 65535 hops");
    for (int h = 1; h <= L; ++h)
        plan.hops.push_back(hop_spec(hops[h - 1].cast<py::dict>(), plan.graphs, fvecs, ivecs, h, b.k, plan.n));
    for (int h = 1; h <= L; ++h) {  // edge ends read later need this hop's row ids
        for (const HopSpec& later : plan.hops) {
            for (const FrontierSpec* f : {&later.frontier, later.has_aux ? &later.aux : nullptr})
                if (f && (f->kind == F_EDGE_SRC || f->kind == F_EDGE_DST) && f->hop == h)
                    require(plan.hops[h - 1].keep_row_ids, "a hop whose edge ends are read must keep row ids");
        }
    }
    bool seeds_ok = true;  // one require (its message string) per call, not per seed
    for (int64_t i = 0; i < seeds.size(); ++i) seeds_ok &= seeds.data()[i] >= 0 && seeds.data()[i] < plan.n;
    require(seeds_ok, "seeds");
    plan.key = Key{k0, k1};
    plan.epoch = epoch;
}

}  // namespace bind
}  // namespace spsample

#endif  // SPSAMPLE_BIND_DECODE_H
