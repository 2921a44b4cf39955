// Flattening: the per-minibatch outputs of the row-wise and layer-wise engines copied into one
// set of pooled arrays per bulk, minibatch after minibatch (FlatBulk: n_id, offsets, counts,
// per hop dst / src / edge id [/ weight]), or in the link loader's minibatch-major layout
// (FlatMinibatchMajor), in parallel over minibatches; and their conversion to the tuples the
// Python side unpacks. Also the phase clock behind last_timings().
// Part of the bindings of spsample._native_kernels (included once, by native/module.cpp).
#ifndef SPSAMPLE_BIND_FLATTEN_H
#define SPSAMPLE_BIND_FLATTEN_H

#include <chrono>
#include <cstring>
#include <vector>

#include "bind/arrays.h"
#include "bind/pooled.h"
#include "layerwise.h"
#include "parallel.h"
#include "rowwise.h"

namespace spsample {
namespace bind {

// Seconds of the last call's phases (sampling, flattening), for benchmarks (last_timings()).
inline double last_phase_seconds[2] = {0.0, 0.0};

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

// 32-bit words widened to int64 (walks' packed outputs). The AVX2 version writes with streaming
// stores: the flat arrays are written once here and not read back by the kernels, and ordinary
// stores would first read every line of them in (call _mm_sfence before other threads read).
inline void widen_n_generic(int64_t* dst, const uint32_t* src, int64_t count) {
    for (int64_t i = 0; i < count; ++i) dst[i] = src[i];
}

#ifdef SPSAMPLE_LW_X86
__attribute__((target("avx2"))) inline void widen_n_avx2(int64_t* dst, const uint32_t* src,
                                                          int64_t count) {
    int64_t i = 0;
    for (; i < count && (reinterpret_cast<uintptr_t>(dst + i) & 31) != 0; ++i) dst[i] = src[i];
    for (; i + 4 <= count; i += 4) {
        const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_cvtepu32_epi64(w));
    }
    for (; i < count; ++i) dst[i] = src[i];
}
#endif

inline void widen_n(int64_t* dst, const uint32_t* src, int64_t count) {
#ifdef SPSAMPLE_LW_X86
    if (lw_avx2()) return widen_n_avx2(dst, src, count);
#endif
    widen_n_generic(dst, src, count);
}

// Orders the streaming stores of widen_n before what follows (other threads' reads).
inline void widen_fence() {
#ifdef SPSAMPLE_LW_X86
    _mm_sfence();
#endif
}

// Copies minibatch `mb`'s n_id to `to` and frees its buffer.
void move_n_id(MiniBatchOut& mb, int64_t* to) {
    if (mb.packed) {
        widen_n(to, mb.nodes32.data(), static_cast<int64_t>(mb.nodes32.size()));
        mb.nodes32 = PodBuf<uint32_t>();
        return;
    }
    copy_n(to, mb.n_id.data(), static_cast<int64_t>(mb.n_id.size()));
    mb.n_id = PodBuf<int64_t>();
}

// Copies hop l of minibatch `mb` (E edges) to dst / src / eid; frees a HopOut's buffers.
void move_hop(MiniBatchOut& mb, int l, int64_t* dst, int64_t* src, int64_t* eid) {
    const int64_t E = mb.num_edges(l);
    if (mb.packed) {
        const uint32_t* w = mb.edges32.data() + mb.walk_at[l];
        const int64_t stride = mb.walk_stride[l];
        widen_n(dst, w, E);
        widen_n(src, w + stride, E);
        widen_n(eid, w + 2 * stride, E);
        return;
    }
    HopOut& h = mb.hops[l];
    copy_n(dst, h.dst.data(), E);
    copy_n(src, h.src.data(), E);
    copy_n(eid, h.eid.data(), E);
    h = HopOut();
}

FlatBulk flatten_rowwise(std::vector<MiniBatchOut>& outs, int L, int threads) {
    const int64_t k = static_cast<int64_t>(outs.size());
    FlatBulk f = flat_layout(k, L, false, [&](int64_t j) { return outs[j].num_nodes(); },
                             [&](int64_t j, int l) { return outs[j].num_edges(l); });
    f.counts = node_counts(outs, L);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (int64_t j = 0; j < k; ++j) {
        MiniBatchOut& mb = outs[j];
        move_n_id(mb, static_cast<int64_t*>(f.n_id.p) + f.node_offsets[j]);
        for (int l = 0; l < L; ++l) {
            const int64_t at = f.hops[l].offsets[j];
            move_hop(mb, l, static_cast<int64_t*>(f.hops[l].dst.p) + at,
                     static_cast<int64_t*>(f.hops[l].src.p) + at, static_cast<int64_t*>(f.hops[l].eid.p) + at);
        }
        if (mb.packed) widen_fence();
        mb.edges32 = PodBuf<uint32_t>();
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
        f.node_offsets[j + 1] = f.node_offsets[j] + outs[j].num_nodes();
        int64_t E = 0;
        for (int l = 0; l < L; ++l) E += f.hop_edges[j * L + l] = outs[j].num_edges(l);
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
            const int64_t n = mb.num_edges(l);
            move_hop(mb, l, at + E, at, at + 2 * E);
            at += n;
        }
        if (mb.packed) widen_fence();
        mb.edges32 = PodBuf<uint32_t>();
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

}  // namespace bind
}  // namespace spsample

#endif  // SPSAMPLE_BIND_FLATTEN_H
