// spsample._native_kernels: pybind11 bindings of the fused bulk samplers to NumPy buffers.
//
// No torch; the only global state is the pool of recycled layer-wise output blocks (BlockPool,
// mutex-protected; set_pool_limit / pool_stats). Every argument is checked by spsample/_native.py before it gets
// here (dtypes int64 / float64, C-contiguous, sizes consistent, ids in range); the bindings
// re-check the cheap shape invariants and raise ValueError rather than read out of bounds.
// The GIL is released while the kernels run; minibatches are spread over OpenMP threads.
//
// Results are returned per minibatch as tuples of NumPy arrays that own the kernels' buffers
// (no copy): (n_id, counts, dst[hop], src[hop], edge_id[hop][, weight[hop]]); the layer-wise
// edge arrays of one minibatch are views of one block owned by a shared capsule.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <map>
#include <mutex>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common.h"
#include "gather.h"
#include "layerwise.h"
#include "link.h"
#include "localmap.h"
#include "parse.h"
#include "relabel.h"
#include "rng.h"
#include "rowwise.h"
#include "select.h"
#include "typed.h"
#include "verify.h"
#include "windowed.h"

namespace py = pybind11;
using namespace spsample;

using I64 = py::array_t<int64_t, py::array::c_style>;
using F64 = py::array_t<double, py::array::c_style>;
using U32 = py::array_t<uint32_t, py::array::c_style>;

namespace {

template <class T>
py::array_t<T> own(std::vector<T>&& v) {
    auto* heap = new std::vector<T>(std::move(v));
    py::capsule owner(heap, [](void* p) { delete reinterpret_cast<std::vector<T>*>(p); });
    return py::array_t<T>({static_cast<py::ssize_t>(heap->size())}, {sizeof(T)}, heap->data(), owner);
}

// A NumPy array taking over the buffer of `b` (no copy; freed with free()).
template <class T>
py::array_t<T> own(PodBuf<T>&& b) {
    const py::ssize_t k = static_cast<py::ssize_t>(b.size());
    if (k == 0) {
        b.release();
        return py::array_t<T>(0);
    }
    T* data = b.release();
    py::capsule owner(data, [](void* p) { std::free(p); });
    return py::array_t<T>({k}, {static_cast<py::ssize_t>(sizeof(T))}, data, owner);
}

void require(bool ok, const std::string& what) {
    if (!ok) throw py::value_error("spsample native: " + what);
}

struct Bulk {
    CSRView g;
    const int64_t* seeds;
    std::vector<int64_t> offsets;  // k + 1
    const int64_t* batch_ids;
    int64_t k;
    F64 weights_ref;  // keeps the weights buffer alive
};

// The seeds of a bulk: minibatch j holds seeds[offsets[j] .. offsets[j + 1]).
void set_seeds(Bulk& b, const I64& seeds, const I64& sizes, const I64& batch_ids) {
    require(sizes.ndim() == 1 && batch_ids.ndim() == 1 && sizes.size() == batch_ids.size(),
            "sizes and batch_ids must be 1-d of equal length");
    b.k = sizes.size();
    b.offsets.assign(b.k + 1, 0);
    for (int64_t j = 0; j < b.k; ++j) {
        require(sizes.data()[j] >= 0, "sizes must be non-negative");
        b.offsets[j + 1] = b.offsets[j] + sizes.data()[j];
    }
    require(seeds.ndim() == 1 && b.offsets[b.k] == seeds.size(), "sizes must sum to len(seeds)");
    for (int64_t j = 0; j < b.k; ++j)
        require(batch_ids.data()[j] >= 0 && batch_ids.data()[j] < (int64_t(1) << 32), "batch ids in [0, 2**32)");
    b.seeds = seeds.data();
    b.batch_ids = batch_ids.data();
}

Bulk make_bulk(const I64& indptr, const I64& indices, const py::object& weights, const I64& seeds,
               const I64& sizes, const I64& batch_ids) {
    require(indptr.ndim() == 1 && indptr.size() >= 2, "indptr must be 1-d with n + 1 >= 2 entries");
    const int64_t n = indptr.size() - 1;
    require(n < static_cast<int64_t>(0xFFFFFFFFll), "at most 2**32 - 1 vertices");
    require(indices.ndim() == 1, "indices must be 1-d");
    require(indptr.data()[n] == indices.size() && indptr.data()[0] == 0,
            "indptr must run from 0 to len(indices)");
    Bulk b;
    b.g.indptr = indptr.data();
    b.g.indices = indices.data();
    b.g.weights = nullptr;
    b.g.n = n;
    if (!weights.is_none()) {
        b.weights_ref = weights.cast<F64>();
        require(b.weights_ref.ndim() == 1 && b.weights_ref.size() == indices.size(),
                "weights must match indices");
        b.g.weights = b.weights_ref.data();
    }
    set_seeds(b, seeds, sizes, batch_ids);
    return b;
}

int resolve_threads(int num_threads) {
#ifdef _OPENMP
    return num_threads > 0 ? num_threads : omp_get_max_threads();
#else
    (void)num_threads;
    return 1;
#endif
}

// Run body(j, scratch) for every minibatch j, one scratch per thread; rethrow the first error.
template <class Scratch, class Init, class Body>
void for_each_minibatch(int64_t k, int threads, Init init, Body body) {
    std::exception_ptr error = nullptr;
    std::atomic<bool> failed(false);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
        Scratch sc;
        bool ready = false;
        try {
            init(sc);
            ready = true;
        } catch (...) {
#ifdef _OPENMP
#pragma omp critical(spsample_error)
#endif
            if (!error) error = std::current_exception();
            failed = true;
        }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int64_t j = 0; j < k; ++j) {
            if (!ready || failed) continue;
            try {
                body(j, sc);
            } catch (...) {
#ifdef _OPENMP
#pragma omp critical(spsample_error)
#endif
                if (!error) error = std::current_exception();
                failed = true;
            }
        }
    }
    if (error) std::rethrow_exception(error);
}

void* pool_alloc(size_t bytes, size_t* cap) { return block_pool().take(bytes, cap); }

struct PooledBlock {
    void* p;
    size_t cap;
};

// Seconds of the last call's phases (sampling, flattening), for benchmarks (last_timings()).
double last_phase_seconds[2] = {0.0, 0.0};

struct PhaseClock {
    std::chrono::steady_clock::time_point t = std::chrono::steady_clock::now();
    double lap() {
        const auto now = std::chrono::steady_clock::now();
        const double s = std::chrono::duration<double>(now - t).count();
        t = now;
        return s;
    }
};

// ---- flat results: one set of arrays per bulk (minibatch after minibatch) -------------------
// Every flat array is one pooled block (returned to the pool when NumPy frees it), so a loop of
// bulks reuses resident memory instead of faulting in fresh pages.
struct Pooled {
    void* p = nullptr;
    size_t cap = 0;
    int64_t count = 0;
};

Pooled pooled(int64_t count, size_t elem) {
    Pooled a;
    a.count = count;
    a.p = pool_alloc(static_cast<size_t>(count) * elem, &a.cap);
    if (!a.p) throw std::bad_alloc();
    return a;
}

template <class T>
py::array_t<T> to_numpy(Pooled& a) {
    auto* owner_data = new PooledBlock{a.p, a.cap};
    a.p = nullptr;
    py::capsule owner(owner_data, [](void* q) {
        auto* b = reinterpret_cast<PooledBlock*>(q);
        block_pool().give(b->p, b->cap);
        delete b;
    });
    return py::array_t<T>({static_cast<py::ssize_t>(a.count)}, {static_cast<py::ssize_t>(sizeof(T))},
                          static_cast<T*>(owner_data->p), owner);
}

struct FlatHop {
    Pooled dst, src, eid, weight;
    std::vector<int64_t> offsets;
    bool weighted = false;
};

struct FlatBulk {
    Pooled n_id;
    std::vector<int64_t> node_offsets, counts;  // k + 1; k * (L + 1)
    std::vector<FlatHop> hops;
};

template <class T>
void copy_n(T* dst, const T* src, int64_t count) {
    if (count > 0) std::memcpy(dst, src, static_cast<size_t>(count) * sizeof(T));
}

// The flat layout of per-minibatch results: sizes, prefix sums, one pooled array each.
// nodes(j) / edges(j, l) give minibatch j's counts.
template <class Nodes, class Edges>
FlatBulk flat_layout(int64_t k, int L, bool weighted, Nodes nodes, Edges edges) {
    FlatBulk f;
    f.node_offsets.assign(k + 1, 0);
    for (int64_t j = 0; j < k; ++j) f.node_offsets[j + 1] = f.node_offsets[j] + nodes(j);
    f.n_id = pooled(f.node_offsets[k], sizeof(int64_t));
    f.hops.resize(L);
    for (int l = 0; l < L; ++l) {
        FlatHop& h = f.hops[l];
        h.offsets.assign(k + 1, 0);
        for (int64_t j = 0; j < k; ++j) h.offsets[j + 1] = h.offsets[j] + edges(j, l);
        const int64_t E = h.offsets[k];
        h.dst = pooled(E, 8);
        h.src = pooled(E, 8);
        h.eid = pooled(E, 8);
        h.weighted = weighted;
        if (weighted) h.weight = pooled(E, 8);
    }
    return f;
}

// counts (k, L + 1) of per-minibatch results, minibatch after minibatch.
std::vector<int64_t> node_counts(const std::vector<MiniBatchOut>& outs, int L) {
    std::vector<int64_t> counts(outs.size() * (L + 1), 0);
    for (size_t j = 0; j < outs.size(); ++j)
        for (int l = 0; l <= L; ++l) counts[j * (L + 1) + l] = outs[j].counts[l];
    return counts;
}

// Copies minibatch `mb`'s n_id to `to` and frees its buffer.
void move_n_id(MiniBatchOut& mb, int64_t* to) {
    copy_n(to, mb.n_id.data(), static_cast<int64_t>(mb.n_id.size()));
    mb.n_id = PodBuf<int64_t>();
}

FlatBulk flatten_rowwise(std::vector<MiniBatchOut>& outs, int L, int threads) {
    const int64_t k = static_cast<int64_t>(outs.size());
    FlatBulk f = flat_layout(k, L, false, [&](int64_t j) { return static_cast<int64_t>(outs[j].n_id.size()); },
                             [&](int64_t j, int l) { return static_cast<int64_t>(outs[j].hops[l].src.size()); });
    f.counts = node_counts(outs, L);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (int64_t j = 0; j < k; ++j) {
        MiniBatchOut& mb = outs[j];
        move_n_id(mb, static_cast<int64_t*>(f.n_id.p) + f.node_offsets[j]);
        for (int l = 0; l < L; ++l) {
            HopOut& h = mb.hops[l];
            const int64_t at = f.hops[l].offsets[j], E = static_cast<int64_t>(h.src.size());
            copy_n(static_cast<int64_t*>(f.hops[l].dst.p) + at, h.dst.data(), E);
            copy_n(static_cast<int64_t*>(f.hops[l].src.p) + at, h.src.data(), E);
            copy_n(static_cast<int64_t*>(f.hops[l].eid.p) + at, h.eid.data(), E);
            h = HopOut();
        }
    }
    return f;
}

// The row-wise results in the link loader's layout: n_id as flatten_rowwise; the edges of
// minibatch j in one pooled block at 3 * edge_offsets[j]: its sources of every hop (hop 1
// first), its destinations, its edge ids (MiniBatch.edge_index() and its e_id, contiguous);
// hop_edges[j * L + l], its edges of hop l. The same copies as flatten_rowwise, parallel over
// minibatches; blocks not handed to NumPy go back to the pool.
struct FlatMinibatchMajor {
    Pooled n_id, block;
    std::vector<int64_t> node_offsets, edge_offsets, counts, hop_edges;
    ~FlatMinibatchMajor() {
        for (Pooled* a : {&n_id, &block})
            if (a->p) block_pool().give(a->p, a->cap);
    }
};

void flatten_minibatch_major(std::vector<MiniBatchOut>& outs, int L, int threads,
                             FlatMinibatchMajor& f) {
    const int64_t k = static_cast<int64_t>(outs.size());
    f.node_offsets.assign(k + 1, 0);
    f.edge_offsets.assign(k + 1, 0);
    f.counts = node_counts(outs, L);
    f.hop_edges.assign(k * L, 0);
    for (int64_t j = 0; j < k; ++j) {
        f.node_offsets[j + 1] = f.node_offsets[j] + static_cast<int64_t>(outs[j].n_id.size());
        int64_t E = 0;
        for (int l = 0; l < L; ++l) E += f.hop_edges[j * L + l] = outs[j].hops[l].src.size();
        f.edge_offsets[j + 1] = f.edge_offsets[j] + E;
    }
    f.n_id = pooled(f.node_offsets[k], sizeof(int64_t));
    f.block = pooled(3 * f.edge_offsets[k], sizeof(int64_t));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (int64_t j = 0; j < k; ++j) {
        MiniBatchOut& mb = outs[j];
        move_n_id(mb, static_cast<int64_t*>(f.n_id.p) + f.node_offsets[j]);
        const int64_t E = f.edge_offsets[j + 1] - f.edge_offsets[j];
        int64_t* at = static_cast<int64_t*>(f.block.p) + 3 * f.edge_offsets[j];
        for (int l = 0; l < L; ++l) {
            HopOut& h = mb.hops[l];
            const int64_t n = static_cast<int64_t>(h.src.size());
            copy_n(at, h.src.data(), n);
            copy_n(at + E, h.dst.data(), n);
            copy_n(at + 2 * E, h.eid.data(), n);
            at += n;
            h = HopOut();
        }
    }
}

// (n_id, node_offsets, counts (k, L + 1), block, edge_offsets, hop_edges (k, L))
py::tuple minibatch_major_to_python(FlatMinibatchMajor& f, int64_t k, int L) {
    py::array_t<int64_t> counts = own(std::move(f.counts)), hop_edges = own(std::move(f.hop_edges));
    counts.resize({static_cast<py::ssize_t>(k), static_cast<py::ssize_t>(L + 1)});
    hop_edges.resize({static_cast<py::ssize_t>(k), static_cast<py::ssize_t>(L)});
    return py::make_tuple(to_numpy<int64_t>(f.n_id), own(std::move(f.node_offsets)), counts,
                          to_numpy<int64_t>(f.block), own(std::move(f.edge_offsets)), hop_edges);
}

// Pass 2 of every minibatch straight into the flat arrays (sized from pass 1's exact counts,
// charged to the budget first).
FlatBulk write_layerwise(const CSRView& g, const LayerWiseOptions& o, std::vector<LayerWiseOut>& outs,
                         int L, int threads, Budget& budget) {
    const int64_t k = static_cast<int64_t>(outs.size());
    uint64_t bytes = 0;
    for (const auto& mb : outs) {
        bytes += 8 * static_cast<uint64_t>(mb.n_id.size());
        for (int64_t c : mb.edge_count) bytes += 32 * static_cast<uint64_t>(c);
    }
    budget.reserve(bytes);
    FlatBulk f = flat_layout(k, L, true, [&](int64_t j) { return static_cast<int64_t>(outs[j].n_id.size()); },
                             [&](int64_t j, int l) { return outs[j].edge_count[l]; });
    f.counts.assign(k * (L + 1), 0);
    for (int64_t j = 0; j < k; ++j)
        for (int l = 0; l <= L; ++l) f.counts[j * (L + 1) + l] = outs[j].counts[l];
    for_each_minibatch<std::vector<double>>(k, threads, [](std::vector<double>&) {},
        [&](int64_t j, std::vector<double>& inv) {
            LayerWiseOut& mb = outs[j];
            copy_n(static_cast<int64_t*>(f.n_id.p) + f.node_offsets[j], mb.n_id.data(),
                   static_cast<int64_t>(mb.n_id.size()));
            LayerWiseDest to;
            for (int l = 0; l < L; ++l) {
                const int64_t at = f.hops[l].offsets[j];
                to.dst.push_back(static_cast<int64_t*>(f.hops[l].dst.p) + at);
                to.src.push_back(static_cast<int64_t*>(f.hops[l].src.p) + at);
                to.eid.push_back(static_cast<int64_t*>(f.hops[l].eid.p) + at);
                to.weight.push_back(static_cast<double*>(f.hops[l].weight.p) + at);
            }
            layerwise_write(g, o, mb, to, inv);
            mb = LayerWiseOut();
        });
    return f;
}

// (n_id, node_offsets, counts (k, L + 1), [(dst, src, edge_id, weight or None, offsets)])
py::tuple flat_to_python(FlatBulk& f, int64_t k, int L) {
    py::list hops;
    for (auto& h : f.hops) {
        py::object w = h.weighted ? py::object(to_numpy<double>(h.weight)) : py::object(py::none());
        hops.append(py::make_tuple(to_numpy<int64_t>(h.dst), to_numpy<int64_t>(h.src),
                                   to_numpy<int64_t>(h.eid), w, own(std::move(h.offsets))));
    }
    py::array_t<int64_t> counts = own(std::move(f.counts));
    counts.resize({static_cast<py::ssize_t>(k), static_cast<py::ssize_t>(L + 1)});
    return py::make_tuple(to_numpy<int64_t>(f.n_id), own(std::move(f.node_offsets)), counts, hops);
}

// Frees pooled blocks not handed to NumPy (on errors).
struct FlatGuard {
    FlatBulk& f;
    ~FlatGuard() {
        auto give = [](Pooled& a) { if (a.p) block_pool().give(a.p, a.cap); a.p = nullptr; };
        give(f.n_id);
        for (auto& h : f.hops) { give(h.dst); give(h.src); give(h.eid); give(h.weight); }
    }
};

// ---- the row-wise engine (rowwise.h) ---------------------------------------------------------
CSRView graph_view(const py::tuple& t, std::vector<py::object>& keep) {
    require(t.size() == 4, "a graph is (indptr, indices, weights, indices32)");
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

// The rule of a hop (values, selection, fanouts, bound, stream key), checked; n = vertices.
void hop_rule(HopSpec& hs, const py::dict& d, const CSRView& g, const CSRView* aux,
              const std::vector<F64>& fvecs, const std::vector<I64>& ivecs, int64_t n) {
    hs.values = value_program(d["program"].cast<py::list>(), fvecs, g, aux, n);
    hs.select = d["select"].cast<int32_t>();
    require(hs.select >= S_UNIFORM && hs.select <= S_LAST, "unknown selection");
    if (hs.select == S_WEIGHTED || hs.select == S_WEIGHTED_REP || hs.select == S_REJECTION)
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
    for (int64_t i = 0; i < seeds.size(); ++i) require(seeds.data()[i] >= 0 && seeds.data()[i] < plan.n, "seeds");
    plan.key = Key{k0, k1};
    plan.epoch = epoch;
}

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

// One hop of windowed.h: A. frontiers, B. buckets, C. runs, D. merge and relabel. Returns false
// when a column id outside [0, n) was read.
bool windowed_hop(const RowWisePlan& plan, int h, const Bulk& b, const MapWindows& mw,
                  std::vector<RowWiseScratch>& mbs, std::vector<MiniBatchOut>& outs,
                  std::vector<std::vector<int64_t>>& hop_end,
                  std::vector<std::vector<uint8_t>>& inserted, int threads, Budget& budget) {
    const HopSpec& hs = plan.hops[h - 1];
    const CSRView& g = plan.graphs[0];
    for_each_minibatch<int>(b.k, threads, [](int&) {}, [&](int64_t j, int&) {
        RowWiseScratch& sc = mbs[j];
        const int64_t m = build_frontier(hs.frontier, j, outs[j], hop_end[j], sc, sc.fv, false);
        sc.start.resize(m);
        sc.deg.resize(m);
        for (int64_t r = 0; r < m; ++r) {
            sc.start[r] = g.indptr[sc.fv[r]];
            sc.deg[r] = g.indptr[sc.fv[r] + 1] - sc.start[r];
        }
    });
    WindowedHop wh;
    bucket_rows(mbs, g, mw, wh);
    const int64_t runs = static_cast<int64_t>(wh.runs.size());
    std::vector<WindowRunOut> routs(static_cast<size_t>(runs));
    std::atomic<bool> ok(true);
    for_each_minibatch<RowWiseScratch>(runs, threads, [](RowWiseScratch&) {},
        [&](int64_t i, RowWiseScratch& sc) {
            if (!select_run(hs, g, mbs, b.batch_ids, mw, wh, i, sc, routs[i], budget)) ok = false;
        });
    if (!ok) return false;
    for_each_minibatch<std::pair<VertexMap, PodBuf<uint32_t>>>(b.k, threads, [](auto&) {},
        [&](int64_t j, std::pair<VertexMap, PodBuf<uint32_t>>& t) {
            merge_minibatch(hs, h, j, wh, routs, mbs[j], outs[j], hop_end[j], inserted[j],
                            t.first, plan.n, t.second, budget);
        });
    return true;
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

// Requests taken window by window (the out-of-core graph's memory map): runs of one minibatch
// inside one window, spread over the threads in window order; when a window's last run is done,
// its pages are released (madvise(MADV_DONTNEED) on byte ranges of `map`, a read-only view of
// a shared file mapping: the page-table entries go, the page cache keeps the data), so at most
// `threads` windows are mapped at once. Without windows: one window, nothing released.
struct RequestWindows {
    const int64_t* end = nullptr;      // per window: one past its last request (ascending, r)
    int64_t count = 1;
    const int64_t* order = nullptr;    // request i's results go to row order[i] (or i)
    uint8_t* map = nullptr;            // the mapping whose pages are released (or nullptr)
    const int64_t* release = nullptr;  // per window: `ranges` pairs (lo, hi) of byte offsets
    int64_t ranges = 0;
};

// Runs of equal batch ids that do not cross a window end: their first requests, and r.
static std::vector<int64_t> request_runs(const RequestRows& q, const RequestWindows& w,
                                         std::vector<int64_t>& window_of) {
    std::vector<int64_t> start;
    int64_t wi = 0;
    for (int64_t i = 0; i < q.r; ++i) {
        const bool window_starts = i > 0 && wi < w.count && i == w.end[wi];
        while (wi < w.count && w.end[wi] <= i) ++wi;
        if (i == 0 || window_starts || q.batch[i] != q.batch[i - 1]) {
            start.push_back(i);
            window_of.push_back(wi);
        }
    }
    start.push_back(q.r);
    return start;
}

static void release_window(const RequestWindows& w, int64_t wi) {
    if (!w.map) return;
    for (int64_t k = 0; k < w.ranges; ++k) {
        const int64_t lo = w.release[2 * (wi * w.ranges + k)];
        const int64_t hi = w.release[2 * (wi * w.ranges + k) + 1];
        if (hi > lo) madvise(w.map + lo, static_cast<size_t>(hi - lo), MADV_DONTNEED);
    }
}

// Every run selected (columns gathered and rows counted while its window is mapped), then the
// results put in row order, run by run in parallel (the rows of a run are its own): count (r),
// edge and column (E) with the edges of row order[i] at its offsets.
static void select_windows(const HopSpec& hs, const CSRView& g, const RequestRows& q,
                           const RequestWindows& w, uint32_t hop_word, Key key, int threads,
                           Budget& budget, PodBuf<int64_t>& count, PodBuf<int64_t>& edge,
                           PodBuf<int64_t>& column) {
    std::vector<int64_t> window_of;
    const std::vector<int64_t> run_start = request_runs(q, w, window_of);
    const int64_t runs = static_cast<int64_t>(run_start.size()) - 1;
    std::unique_ptr<std::atomic<int64_t>[]> left(new std::atomic<int64_t>[w.count]);
    for (int64_t i = 0; i < w.count; ++i) left[i] = 0;
    for (int64_t j = 0; j < runs; ++j) ++left[window_of[j]];
    auto row = [&](int64_t i) { return w.order ? w.order[i] : i; };
    count.resize(static_cast<size_t>(q.r));
    std::fill(count.data(), count.data() + q.r, int64_t(0));
    std::vector<HopOut> outs(std::max<int64_t>(runs, 0));
    for_each_minibatch<RowWiseScratch>(
        runs, threads, [](RowWiseScratch&) {},
        [&](int64_t j, RowWiseScratch& sc) {
            HopOut& o = outs[j];
            select_request_run(hs, g, q, run_start[j], run_start[j + 1], hop_word, key, sc, o,
                               budget);
            o.src.resize(o.eid.size());
            for (size_t e = 0; e < o.eid.size(); ++e) {
                o.src[e] = g.indices[o.eid[e]];
                ++count[row(run_start[j] + o.dst[e])];
            }
            if (--left[window_of[j]] == 0) release_window(w, window_of[j]);
        });
    std::vector<int64_t> next(static_cast<size_t>(q.r) + 1, 0);
    for (int64_t i = 0; i < q.r; ++i) next[i + 1] = next[i] + count[i];
    edge.resize(static_cast<size_t>(next[q.r]));
    column.resize(static_cast<size_t>(next[q.r]));
    for_each_minibatch<int>(runs, threads, [](int&) {}, [&](int64_t j, int&) {
        const HopOut& o = outs[j];
        for (size_t e = 0; e < o.eid.size(); ++e) {
            const int64_t at = next[row(run_start[j] + o.dst[e])]++;
            edge[at] = o.eid[e];
            column[at] = o.src[e];
        }
    });
}

// The windows of select_requests, checked: window ends ascending up to r, `order` a
// permutation of [0, r) (checked through a mark per row), release ranges page-aligned inside
// `map`.
static RequestWindows request_windows(const py::object& windows, int64_t r,
                                      std::vector<py::object>& keep) {
    RequestWindows w;
    if (windows.is_none()) return w;
    const py::tuple t = windows.cast<py::tuple>();
    require(t.size() == 4, "windows: (order, ends, map, release)");
    const I64 order = t[0].cast<I64>(), ends = t[1].cast<I64>(), release = t[3].cast<I64>();
    keep.insert(keep.end(), {order, ends, release});
    require(order.ndim() == 1 && order.size() == r, "windows: one order entry per request");
    std::vector<uint8_t> seen(static_cast<size_t>(r), 0);
    for (int64_t i = 0; i < r; ++i) {
        const int64_t o = order.data()[i];
        require(o >= 0 && o < r && !seen[o], "windows: order must be a permutation");
        seen[o] = 1;
    }
    w.count = ends.size();
    require(ends.ndim() == 1 && w.count >= 1 && ends.data()[w.count - 1] == r &&
                ends.data()[0] >= 0, "windows: ends must run up to the number of requests");
    for (int64_t i = 1; i < w.count; ++i)
        require(ends.data()[i] >= ends.data()[i - 1], "windows: ends ascending");
    w.end = ends.data();
    w.order = order.data();
    if (!t[2].is_none()) {
        using U8 = py::array_t<uint8_t, py::array::c_style>;
        const U8 map = t[2].cast<U8>();
        keep.push_back(map);
        require(release.ndim() == 2 && release.shape(0) == w.count && release.shape(1) % 2 == 0,
                "windows: release ranges (windows, 2 * ranges)");
        const int64_t page = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
        const auto base = reinterpret_cast<uintptr_t>(map.data());
        require(base % page == 0, "windows: the map must start on a page");
        for (int64_t i = 0; i < release.size(); i += 2) {
            const int64_t lo = release.data()[i], hi = release.data()[i + 1];
            require(hi <= lo || (lo >= 0 && lo % page == 0 && hi <= map.size()),
                    "windows: release ranges page-aligned inside the map");
        }
        w.map = const_cast<uint8_t*>(map.data());
        w.release = release.data();
        w.ranges = release.shape(1) / 2;
    }
    return w;
}

// A temporal request hop: the entry times of the rows (hop["time"]: an index into fvecs, one
// per entry of g; -1 or absent: not temporal) and the time each request is cut at (`times`),
// checked. Sortedness within rows is spsample's (time-sorted blocks, rows fetched from them).
static TimeVec request_times(HopSpec& hs, const py::dict& hop, const std::vector<F64>& fvecs,
                             const std::vector<I64>& ivecs, const CSRView& g,
                             const py::object& times, int64_t r, std::vector<py::object>& keep) {
    const int64_t ti = hop.contains("time") ? hop["time"].cast<int64_t>() : -1;
    require((ti >= 0) == !times.is_none(), "times: one per request exactly for temporal hops");
    TimeVec q;
    if (ti < 0) return q;
    hs.entry_time = time_vector(hop, ti, fvecs, ivecs, g.indptr[g.n],
                                "entry times (one per entry of the rows)");
    if (hs.entry_time.i) {  // integer entry times: integer cuts (exact), as the hop's kind
        const I64 t = times.cast<I64>();
        keep.push_back(t);
        require(t.ndim() == 1 && t.size() == r, "times: one per request exactly for temporal hops");
        q.i = t.data();
    } else {
        const F64 t = times.cast<F64>();
        keep.push_back(t);
        require(t.ndim() == 1 && t.size() == r, "times: one per request exactly for temporal hops");
        q.f = t.data();
    }
    return q;
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

// Test hook: the LADIES candidates' Philox words (word 0 of block (0, u, hw, bid)) from one
// implementation: "avx2" (hand-written; needs an AVX2 CPU), "generic" (compiler-vectorised
// clones), or "auto" (what the kernel runs).
py::array_t<uint32_t> column_words_hook(const U32& u, uint32_t hw, uint32_t bid, uint32_t k0, uint32_t k1,
                                        const std::string& path) {
    std::vector<uint32_t> out(u.size());
    const Key key{k0, k1};
    if (path == "avx2") {
#ifdef SPSAMPLE_LW_X86
        require(__builtin_cpu_supports("avx2"), "this CPU has no AVX2");
        column_words_avx2(u.data(), u.size(), hw, bid, key, out.data());
#else
        require(false, "no AVX2 build on this platform");
#endif
    } else if (path == "generic") {
        column_words_generic(u.data(), u.size(), hw, bid, key, out.data());
    } else {
        require(path == "auto", "path must be avx2, generic or auto");
        column_words(u.data(), u.size(), hw, bid, key, out.data());
    }
    return own(std::move(out));
}

// Test hooks: the scalar RNG rules, to compare with spsample._rng bit for bit.
py::array_t<uint32_t> philox_words(const I64& index, const I64& vertex, uint32_t hw, const I64& batch,
                                   uint32_t k0, uint32_t k1) {
    require(index.size() == vertex.size() && index.size() == batch.size(), "equal sizes");
    std::vector<uint32_t> out(index.size());
    for (py::ssize_t i = 0; i < index.size(); ++i) {
        Stream st(static_cast<uint32_t>(vertex.data()[i]), hw, static_cast<uint32_t>(batch.data()[i]),
                  Key{k0, k1});
        out[i] = st.word(static_cast<uint64_t>(index.data()[i]));
    }
    return own(std::move(out));
}

F64 det_log_array(const F64& x) {
    std::vector<double> out(x.size());
    for (py::ssize_t i = 0; i < x.size(); ++i) out[i] = det_log(x.data()[i]);
    return own(std::move(out));
}

void set_pool_limit(int64_t bytes) {
    require(bytes >= 0, "the pool limit must be >= 0 bytes");
    block_pool().set_limit(static_cast<size_t>(bytes));
}

py::tuple pool_stats() {
    auto st = block_pool().stats();
    return py::make_tuple(static_cast<int64_t>(st.first), static_cast<int64_t>(st.second));
}

int max_threads() { return resolve_threads(0); }

bool have_openmp() {
#ifdef _OPENMP
    return true;
#else
    return false;
#endif
}

}  // namespace

// ---- host emulation of the GPU kernels (emulate.h, device/kernels.cuh) ---------------------
#include "emulate.h"

namespace {

// Run kernel `name` as a launch of grid x block threads on the host (see emulate.h). `args` is
// the kernel's argument array built by spsample/_gpu.py (addresses of live NumPy buffers).
void emulate_kernel(const std::string& name, int64_t grid, int64_t block, const I64& args,
                    int threads, int64_t order_seed) {
    const EmulatedKernel kernel = emulated_kernel(name);
    require(kernel != nullptr, "no GPU kernel named " + name);
    require(grid >= 1 && block >= 1 && grid * block <= (int64_t(1) << 24), "grid and block sizes");
    require(threads >= 1 && threads <= 64, "threads in [1, 64]");
    require(args.ndim() == 1, "args must be 1-d");
    const int64_t* a = args.data();
    py::gil_scoped_release release;
    emulate_launch(kernel, grid, block, a, threads, order_seed);
}

}  // namespace

// ---- relabelling for the NumPy engine's bulk state (relabel.h) and edge-list parsing ----------
namespace {

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

// Gives a pooled block back unless it was handed to NumPy (on errors).
struct PooledGuard {
    Pooled& a;
    ~PooledGuard() {
        if (a.p) block_pool().give(a.p, a.cap);
    }
};

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

// Returns (bytes uint8 (sum of lengths * itemsize,), status): gather.h.
py::tuple gather_ranges_native(int fd, int64_t base, int64_t itemsize, const I64& starts,
                               const I64& ends, int64_t gap) {
    require(starts.ndim() == 1 && ends.ndim() == 1 && starts.size() == ends.size(),
            "starts and ends must be 1-d of equal length");
    require(itemsize >= 1 && base >= 0 && gap >= 0, "itemsize >= 1, base >= 0, gap >= 0");
    const int64_t n = starts.size();
    const int64_t* s = starts.data();
    const int64_t* e = ends.data();
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) {
        require(s[i] >= 0 && e[i] >= s[i] && (i == 0 || s[i] >= e[i - 1]),
                "ranges must be ascending, non-overlapping and non-negative");
        total += e[i] - s[i];
    }
    py::array_t<uint8_t> out(total * itemsize);
    uint8_t* op = out.mutable_data();
    int64_t status = 0;
    {
        py::gil_scoped_release release;
        status = gather_ranges(fd, base, itemsize, s, e, n, gap, op);
    }
    return py::make_tuple(out, status);
}

// Returns (first column id outside [0, num_nodes), first weight not finite or negative, first entry
// not above its predecessor in its row), each -1 when none, over the ranges [starts[i],
// ends[i]) of the entries indices/weights hold from position `base` on; `prev` (or None): the
// column id before `base`. verify.h.
py::tuple check_entries_native(const I64& indptr, int64_t num_nodes, const I64& indices,
                               const py::object& weights, int64_t base, const py::object& prev,
                               const I64& starts, const I64& ends, int num_threads) {
    require(indptr.ndim() == 1 && indptr.size() >= 1 && indices.ndim() == 1,
            "indptr and indices must be 1-d");
    F64 warr;
    const double* w = nullptr;
    if (!weights.is_none()) {
        warr = weights.cast<F64>();
        require(warr.ndim() == 1 && warr.size() == indices.size(), "weights must match indices");
        w = warr.data();
    }
    require(starts.ndim() == 1 && ends.ndim() == 1 && starts.size() == ends.size(),
            "starts and ends must be 1-d of equal length");
    const int64_t m = starts.size(), held = indices.size();
    const int64_t* s = starts.data();
    const int64_t* e = ends.data();
    std::vector<uint8_t> pred(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) {
        require(base <= s[i] && s[i] <= e[i] && e[i] <= base + held,
                "ranges must lie inside the entries held");
        pred[i] = s[i] > base || !prev.is_none();
    }
    const int64_t before = prev.is_none() ? 0 : prev.cast<int64_t>();
    int64_t first[3] = {-1, -1, -1};
    {
        py::gil_scoped_release release;
        check_ranges(indptr.data(), indptr.size() - 1, num_nodes, indices.data(), w, base,
                     before, s, e, pred.data(), m, resolve_threads(num_threads), first);
    }
    return py::make_tuple(first[0], first[1], first[2]);
}

// Returns (edges (E, 2) int64, E) or (None, -1 - offset of the first refused line); parse.h.
py::tuple parse_edges_native(const py::bytes& text, const std::string& comment,
                             const std::string& delim) {
    require(comment.size() <= 1 && delim.size() <= 1, "comment and delimiter are single bytes");
    char* data = nullptr;
    py::ssize_t len = 0;
    PYBIND11_BYTES_AS_STRING_AND_SIZE(text.ptr(), &data, &len);
    int64_t lines = 1;
    for (py::ssize_t i = 0; i < len; ++i) lines += data[i] == '\n';
    PodBuf<int64_t> out;
    out.resize(static_cast<size_t>(2 * lines));
    int64_t got = 0;
    {
        py::gil_scoped_release release;
        got = parse_edge_lines(data, len, comment.empty() ? 0 : comment[0],
                               delim.empty() ? 0 : delim[0], out.data());
    }
    if (got < 0) return py::make_tuple(py::none(), got);
    out.resize(static_cast<size_t>(2 * got));
    return py::make_tuple(own(std::move(out)).reshape({got, int64_t(2)}), got);
}

}  // namespace

PYBIND11_MODULE(_native_kernels, m) {
    m.doc() = "spsample native kernels (the lowered sampling engine); use through spsample._native";
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const BudgetExceeded& e) {
            PyErr_SetString(PyExc_MemoryError, e.what());
        } catch (const BoundExceeded& e) {
            PyErr_SetString(PyExc_ArithmeticError, e.what());
        }
    });
    m.def("run_rowwise", &run_rowwise, py::arg("graphs"), py::arg("seeds"), py::arg("sizes"),
          py::arg("batch_ids"), py::arg("hops"), py::arg("f64_vectors"), py::arg("i64_vectors"),
          py::arg("k0"), py::arg("k1"), py::arg("epoch"), py::arg("budget"), py::arg("num_threads"),
          py::arg("minibatch_major") = false);
    m.def("layerwise_bulk", &layerwise_bulk, py::arg("indptr"), py::arg("indices"), py::arg("indices32"),
          py::arg("internal_of"), py::arg("vertex_of"),
          py::arg("weights"),
          py::arg("seeds"), py::arg("sizes"), py::arg("batch_ids"), py::arg("fanouts"), py::arg("k0"),
          py::arg("k1"), py::arg("epoch"), py::arg("q_global"), py::arg("cumulative"),
          py::arg("budget"), py::arg("num_threads"));
    m.def("philox_words", &philox_words);
    m.def("column_words", &column_words_hook, py::arg("u"), py::arg("hw"), py::arg("bid"), py::arg("k0"),
          py::arg("k1"), py::arg("path"));
#ifdef SPSAMPLE_LW_PROFILE
    m.def("lw_profile", []() {  // per-phase seconds of layerwise_minibatch (profiling builds only)
        std::vector<double> v(std::begin(lw_prof), std::end(lw_prof));
        std::fill(std::begin(lw_prof), std::end(lw_prof), 0.0);
        return v;
    });
#endif
    m.def("det_log", &det_log_array);
    m.def("emulate", &emulate_kernel, py::arg("name"), py::arg("grid"), py::arg("block"),
          py::arg("args"), py::arg("threads"), py::arg("order_seed"));
    m.def("emulated_kernels", &emulated_kernel_names);
    m.def("set_pool_limit", &set_pool_limit, py::arg("bytes"));
    m.def("pool_stats", &pool_stats);
    m.def("max_threads", &max_threads);
    m.def("last_timings", []() { return py::make_tuple(last_phase_seconds[0], last_phase_seconds[1]); });
    m.def("have_openmp", &have_openmp);
    m.def("select_requests", &select_requests, py::arg("graph"), py::arg("hop"), py::arg("f64_vectors"),
          py::arg("i64_vectors"), py::arg("n_vertices"), py::arg("vertex"), py::arg("row"), py::arg("keys"),
          py::arg("batch"), py::arg("hop_word"), py::arg("k0"), py::arg("k1"), py::arg("budget_bytes"),
          py::arg("num_threads"), py::arg("windows") = py::none(), py::arg("times") = py::none());
    m.def("insert_bulk", &insert_bulk_native, py::arg("known_off"), py::arg("known"),
          py::arg("cand_off"), py::arg("cand"), py::arg("num_threads"));
    m.def("lookup_bulk", &lookup_bulk_native, py::arg("known_off"), py::arg("known"),
          py::arg("cand_off"), py::arg("cand"), py::arg("num_threads"));
    m.def("link_bulk", &link_bulk_native, py::arg("pos_off"), py::arg("pos"),
          py::arg("src_ids"), py::arg("dst_ids"), py::arg("neg_off"), py::arg("batch_ids"),
          py::arg("mode"), py::arg("ratio"), py::arg("pickers"), py::arg("k0"), py::arg("k1"),
          py::arg("hop_word"), py::arg("block"), py::arg("max_attempts"), py::arg("off_src"),
          py::arg("off_dst"), py::arg("dedup"), py::arg("num_threads"));
    m.def("split_typed", &split_typed_native, py::arg("n_id"), py::arg("node_off"),
          py::arg("counts"), py::arg("step_hop"), py::arg("type_off"), py::arg("node_batch"),
          py::arg("dst"), py::arg("src"), py::arg("edge_off"), py::arg("num_hops"),
          py::arg("num_threads"));
    m.def("minibatch_edges", &minibatch_edges_native, py::arg("dst"), py::arg("src"),
          py::arg("eid"), py::arg("offsets"), py::arg("exclude"), py::arg("num_threads"));
    m.def("gather_ranges", &gather_ranges_native, py::arg("fd"), py::arg("base"),
          py::arg("itemsize"), py::arg("starts"), py::arg("ends"), py::arg("gap"));
    m.def("parse_edges", &parse_edges_native, py::arg("text"), py::arg("comment"),
          py::arg("delimiter"));
    m.def("run_rowwise_windowed", &run_rowwise_windowed, py::arg("graphs"), py::arg("seeds"),
          py::arg("sizes"), py::arg("batch_ids"), py::arg("hops"), py::arg("f64_vectors"),
          py::arg("i64_vectors"), py::arg("k0"), py::arg("k1"), py::arg("epoch"),
          py::arg("budget"), py::arg("num_threads"), py::arg("span"), py::arg("map"),
          py::arg("block"));
    m.def("check_entries", &check_entries_native, py::arg("indptr"), py::arg("num_nodes"),
          py::arg("indices"),
          py::arg("weights"), py::arg("base"), py::arg("prev"), py::arg("starts"),
          py::arg("ends"), py::arg("num_threads"));
}
