// The sampling entry points: a bulk of a row-wise plan (run_rowwise; run_rowwise_windowed over
// a mapped graph), one hop on requested rows (select_requests) and a layer-wise bulk
// (layerwise_bulk). Each decodes its arguments, releases the GIL, runs the engine over the
// minibatches and flattens the results.
// Part of the bindings of spsample._native_kernels (included once, by native/module.cpp).
#ifndef SPSAMPLE_BIND_SAMPLERS_H
#define SPSAMPLE_BIND_SAMPLERS_H

#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "bind/decode.h"
#include "bind/flatten.h"
#include "bind/windows.h"
#include "layerwise.h"
#include "parallel.h"
#include "rowwise.h"
#include "windowed.h"

namespace spsample {
namespace bind {

// minibatch_major: the flat results in the link loader's layout (flatten_minibatch_major).
py::tuple run_rowwise(const py::list& graphs, const I64& seeds, const I64& sizes,
                      const I64& batch_ids, const py::list& hops, const py::list& f64_vectors,
                      const py::list& i64_vectors, uint32_t k0, uint32_t k1, uint64_t epoch,
                      uint64_t budget_bytes, int num_threads, bool minibatch_major) {
    RowWiseCall c;
    rowwise_plan(graphs, seeds, sizes, batch_ids, hops, f64_vectors, i64_vectors, k0, k1, epoch,
                 c);
    const RowWisePlan& plan = c.plan;
    const Bulk& b = c.b;
    const int L = static_cast<int>(plan.hops.size());
    Budget budget(budget_bytes);
    std::vector<MiniBatchOut> outs(b.k);
    FlatBulk flat;
    FlatGuard guard{flat};
    FlatMinibatchMajor mm;
    const int threads = resolve_threads(num_threads);
    {
        py::gil_scoped_release release;
        PhaseClock clock;
        for_each_minibatch<RowWiseScratch>(
            b.k, threads, [](RowWiseScratch&) {},
            [&](int64_t j, RowWiseScratch& sc) {
                rowwise_minibatch(plan, b.seeds + b.offsets[j], b.offsets[j + 1] - b.offsets[j], j,
                                  static_cast<uint32_t>(b.batch_ids[j]), sc, outs[j], budget);
            });
        last_phase_seconds[0] = clock.lap();
        if (minibatch_major)
            flatten_minibatch_major(outs, L, threads, mm);
        else
            flat = flatten_rowwise(outs, L, threads);
        last_phase_seconds[1] = clock.lap();
    }
    return minibatch_major ? minibatch_major_to_python(mm, b.k, L) : flat_to_python(flat, b.k, L);
}

// The row-wise engine hop-major over the windows of a mapped graph (windowed.h): run_rowwise's
// arguments (one graph, whose indices and weights lie in `map`, a uint8 view of a read-only
// shared file mapping; hops without given rows, aux rows or entry times), `span` entries per
// window and the release `block` in bytes. Returns run_rowwise's flat bulk, or None when a
// column id outside [0, n) was read (the file changed after its checks).
py::object run_rowwise_windowed(const py::list& graphs, const I64& seeds, const I64& sizes,
                                const I64& batch_ids, const py::list& hops,
                                const py::list& f64_vectors, const py::list& i64_vectors,
                                uint32_t k0, uint32_t k1, uint64_t epoch, uint64_t budget_bytes,
                                int num_threads, int64_t span, const py::object& map,
                                int64_t block) {
    RowWiseCall c;
    rowwise_plan(graphs, seeds, sizes, batch_ids, hops, f64_vectors, i64_vectors, k0, k1, epoch,
                 c);
    const RowWisePlan& plan = c.plan;
    const Bulk& b = c.b;
    require(plan.graphs.size() == 1 && span >= 1, "one graph and a span >= 1");
    for (const HopSpec& hs : plan.hops)
        require(hs.frontier.kind != F_ROWS && !hs.has_aux && !hs.entry_time && hs.graph == 0,
                "windowed hops read frontiers of the bulk, no aux rows, no times");
    MapWindows mw;
    mw.span = span;
    using U8 = py::array_t<uint8_t, py::array::c_style>;
    const U8 view = map.cast<U8>();
    const CSRView& g = plan.graphs[0];
    mw.map = const_cast<uint8_t*>(view.data());
    mw.map_len = view.size();
    const int64_t page = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
    require(block >= page && block % page == 0 && reinterpret_cast<uintptr_t>(mw.map) % page == 0,
            "the map starts on a page and is released in blocks of whole pages");
    const auto inside = [&](const void* p, int64_t bytes) {
        const uint8_t* q = static_cast<const uint8_t*>(p);
        return !p || (q >= mw.map && q + bytes <= mw.map + mw.map_len);
    };
    require(inside(g.indices, g.indptr[g.n] * 8) && inside(g.weights, g.indptr[g.n] * 8),
            "the graph's indices and weights must lie inside the map");
    mw.block = block;
    const int L = static_cast<int>(plan.hops.size());
    Budget budget(budget_bytes);
    std::vector<MiniBatchOut> outs(b.k);
    std::vector<RowWiseScratch> mbs(b.k);
    std::vector<std::vector<int64_t>> hop_end(b.k);
    std::vector<std::vector<uint8_t>> inserted(b.k);
    FlatBulk flat;
    FlatGuard guard{flat};
    const int threads = resolve_threads(num_threads);
    {
        py::gil_scoped_release release;
        for (int64_t j = 0; j < b.k; ++j) {
            const int64_t size = b.offsets[j + 1] - b.offsets[j];
            begin_minibatch(b.seeds + b.offsets[j], size, L, mbs[j], outs[j], budget);
            hop_end[j].assign(1, size);
            inserted[j].assign(static_cast<size_t>(size), 1);
        }
        for (int h = 1; h <= L; ++h)
            if (!windowed_hop(plan, h, b, mw, mbs, outs, hop_end, inserted, threads, budget))
                return py::none();
        flat = flatten_rowwise(outs, L, threads);
    }
    return flat_to_python(flat, b.k, L);
}

// The selection of one traced hop on requested rows (rowwise.h: select_request_run): the owner
// side of push sampling, the rows a pulling rank fetched, and the out-of-core graph's windows
// (`windows`: (order, ends, map, release), see RequestWindows); `times` (float64, one per
// request) cuts the rows of a temporal hop. Returns (count per row, positions in the graph's
// indices, their columns), rows in order (request i is row order[i]).
py::tuple select_requests(const py::tuple& graph, const py::dict& hop, const py::list& f64_vectors,
                          const py::list& i64_vectors, int64_t n_vertices, const I64& vertex,
                          const I64& row, const py::object& keys, const I64& batch, uint32_t hop_word,
                          uint32_t k0, uint32_t k1, uint64_t budget_bytes, int num_threads,
                          const py::object& windows, const py::object& times) {
    std::vector<py::object> keep;
    const CSRView g = graph_view(graph, keep);
    std::vector<F64> fvecs;
    std::vector<I64> ivecs;
    for (const auto& v : f64_vectors) fvecs.push_back(v.cast<F64>());
    for (const auto& v : i64_vectors) ivecs.push_back(v.cast<I64>());
    require(hop["aux"].is_none(), "requests carry no aux rows");
    require(n_vertices >= g.n && n_vertices < static_cast<int64_t>(0xFFFFFFFFll), "n_vertices");
    HopSpec hs;
    hop_rule(hs, hop, g, nullptr, fvecs, ivecs, n_vertices);
    const int64_t r = vertex.size();
    require(vertex.ndim() == 1 && row.ndim() == 1 && batch.ndim() == 1 && row.size() == r &&
            batch.size() == r, "vertex, row and batch: one entry per request");
    I64 key_arr;
    if (!keys.is_none()) {
        key_arr = keys.cast<I64>();
        require(key_arr.ndim() == 1 && key_arr.size() == r, "keys: one entry per request");
    }
    require(hs.key == K_VERTEX || !keys.is_none(), "streams keyed per row need the row keys");
    for (int64_t i = 0; i < r; ++i) {
        require(row.data()[i] >= 0 && row.data()[i] < g.n, "request row outside the graph");
        require(vertex.data()[i] >= 0 && vertex.data()[i] < n_vertices, "request vertex");
        require(batch.data()[i] >= 0 && batch.data()[i] < (int64_t(1) << 32), "request batch id");
        if (!keys.is_none())
            require(key_arr.data()[i] >= 0 && key_arr.data()[i] < (int64_t(1) << 32), "request key");
    }
    RequestRows q{vertex.data(), row.data(), keys.is_none() ? nullptr : key_arr.data(), batch.data(), r};
    q.time = request_times(hs, hop, fvecs, ivecs, g, times, r, keep);
    RequestWindows w = request_windows(windows, r, keep);
    const int64_t all[1] = {r};
    if (!w.end) w.end = all;
    PodBuf<int64_t> count, edge, column;
    {
        py::gil_scoped_release release;
        Budget budget(budget_bytes);
        select_windows(hs, g, q, w, hop_word, Key{k0, k1}, resolve_threads(num_threads), budget,
                       count, edge, column);
    }
    return py::make_tuple(own(std::move(count)), own(std::move(edge)), own(std::move(column)));
}

py::tuple layerwise_bulk(const I64& indptr, const I64& indices, const U32& indices32, const U32& internal_of,
                         const U32& vertex_of, const py::object& weights,
                         const I64& seeds, const I64& sizes, const I64& batch_ids,
                         const std::vector<int64_t>& fanouts, uint32_t k0, uint32_t k1, uint64_t epoch,
                         const py::object& q_global, const py::object& cumulative, uint64_t budget_bytes,
                         int num_threads) {
    Bulk b = make_bulk(indptr, indices, weights, seeds, sizes, batch_ids);
    Budget budget(budget_bytes);
    require(!fanouts.empty() && fanouts.size() <= 255, "1 to 255 hops");
    for (int64_t i = 0; i < seeds.size(); ++i) require(seeds.data()[i] >= 0 && seeds.data()[i] < b.g.n, "seeds");
    LayerWiseOptions o;
    o.fanouts = fanouts;
    o.key = Key{k0, k1};
    o.epoch = epoch;
    require(indices32.ndim() == 1 && indices32.size() == indices.size(), "indices32 must match indices");
    o.indices32 = indices32.data();
    require(internal_of.ndim() == 1 && vertex_of.ndim() == 1 && internal_of.size() == b.g.n &&
            vertex_of.size() == b.g.n, "internal_of and vertex_of must have n entries");
    o.internal_of = internal_of.data();
    o.vertex_of = vertex_of.data();
    F64 q, cum;
    if (!q_global.is_none()) {
        q = q_global.cast<F64>();
        cum = cumulative.cast<F64>();
        require(q.ndim() == 1 && cum.ndim() == 1 && q.size() == b.g.n && cum.size() == b.g.n,
                "FastGCN column weights must have n entries");
        o.fastgcn = true;
        o.q_global = q.data();
        o.cumulative = cum.data();
        for (int64_t u = 0; u < b.g.n; ++u) {
            require(q.data()[u] >= 0, "FastGCN column weights must be >= 0");
            if (q.data()[u] > 0) {
                ++o.positive_columns;
                o.last_positive = u;
            }
        }
        for (int64_t f : fanouts) require(f >= 1, "FastGCN fanouts must be >= 1");
    } else {
        for (int64_t f : fanouts) require(f >= 1 || f == -1, "fanouts must be >= 1 or -1");
    }
    const int L = static_cast<int>(fanouts.size());
    std::vector<LayerWiseOut> outs(b.k);
    FlatBulk flat;
    FlatGuard guard{flat};
    const int64_t n = b.g.n;
    const int threads = resolve_threads(num_threads);
    {
        py::gil_scoped_release release;
        PhaseClock clock;
        for_each_minibatch<LayerWiseScratch>(
            b.k, threads, [n, &b](LayerWiseScratch& sc) { sc.resize(n, b.g.weights != nullptr); },
            [&](int64_t j, LayerWiseScratch& sc) {
                layerwise_minibatch(b.g, b.seeds + b.offsets[j], b.offsets[j + 1] - b.offsets[j],
                                    static_cast<uint32_t>(b.batch_ids[j]), o, sc, outs[j]);
            });
        last_phase_seconds[0] = clock.lap();
        flat = write_layerwise(b.g, o, outs, L, threads, budget);
        last_phase_seconds[1] = clock.lap();
    }
    return flat_to_python(flat, b.k, L);
}

// Alias tables of every row of (indptr, weights): graph/_weights.py alias_tables, the same bits
// (alias_table_row's steps and roundings, rows summing past the largest double included, with
// finite 0). Rows in parallel, ALIAS_BUILD_ROWS at a time. Returns (table (nnz, 2) uint32,
// share (n,) float64, finite (n,) uint8).
constexpr int64_t ALIAS_BUILD_ROWS = 4096;

struct AliasBuildScratch {
    std::vector<double> x;
    std::vector<int64_t> small, large;
};

py::tuple alias_tables_native(const I64& indptr, const F64& weights, int num_threads) {
    require(indptr.ndim() == 1 && indptr.size() >= 1 && weights.ndim() == 1, "indptr and weights must be 1-d");
    const int64_t n = indptr.size() - 1, nnz = weights.size();
    const int64_t* ip = indptr.data();
    require(ip[0] == 0 && ip[n] == nnz, "indptr must run from 0 to len(weights)");
    for (int64_t v = 0; v < n; ++v) require(ip[v] <= ip[v + 1], "indptr must be non-decreasing");
    py::array_t<uint32_t> table({nnz, int64_t(2)});
    py::array_t<double> share(n);
    py::array_t<uint8_t> finite(n);
    uint32_t* t = table.mutable_data();
    double* sh = share.mutable_data();
    uint8_t* fin = finite.mutable_data();
    const double* w = weights.data();
    {
        py::gil_scoped_release release;
        const int64_t chunks = (n + ALIAS_BUILD_ROWS - 1) / ALIAS_BUILD_ROWS;
        for_each_minibatch<AliasBuildScratch>(
            chunks, resolve_threads(num_threads), [](AliasBuildScratch&) {},
            [&](int64_t c, AliasBuildScratch& sc) {
                for (int64_t v = c * ALIAS_BUILD_ROWS; v < std::min(n, (c + 1) * ALIAS_BUILD_ROWS); ++v) {
                    const int64_t st = ip[v], d = ip[v + 1] - st;
                    if (static_cast<int64_t>(sc.x.size()) < d) {
                        sc.x.resize(d);
                        sc.small.resize(d);
                        sc.large.resize(d);
                    }
                    const double* row = w + st;
                    auto value = [row](int64_t p) { return row[p]; };
                    const int64_t e = alias_table_row(value, d, t + 2 * st, sc.x.data(), sc.small.data(),
                                                      sc.large.data(), sh[v]);
                    fin[v] = e >= 0;
                }
            });
    }
    return py::make_tuple(table, share, finite);
}

}  // namespace bind
}  // namespace spsample

#endif  // SPSAMPLE_BIND_SAMPLERS_H
