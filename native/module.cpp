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

#include <atomic>
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

#include "layerwise.h"
#include "localmap.h"
#include "nodewise.h"
#include "rng.h"

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
    require(sizes.ndim() == 1 && batch_ids.ndim() == 1 && sizes.size() == batch_ids.size(),
            "sizes and batch_ids must be 1-d of equal length");
    b.k = sizes.size();
    b.offsets.assign(b.k + 1, 0);
    for (int64_t j = 0; j < b.k; ++j) {
        require(sizes.data()[j] >= 0, "sizes must be non-negative");
        b.offsets[j + 1] = b.offsets[j] + sizes.data()[j];
    }
    require(seeds.ndim() == 1 && b.offsets[b.k] == seeds.size(), "sizes must sum to len(seeds)");
    b.seeds = seeds.data();
    b.batch_ids = batch_ids.data();
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

py::list to_python(std::vector<MiniBatchOut>& outs, bool with_weights) {
    py::list result;
    for (auto& mb : outs) {
        py::list dst, src, eid, wts;
        for (auto& h : mb.hops) {
            dst.append(own(std::move(h.dst)));
            src.append(own(std::move(h.src)));
            eid.append(own(std::move(h.eid)));
            if (with_weights) wts.append(own(std::move(h.weight)));
        }
        py::object w = with_weights ? py::object(wts) : py::object(py::none());
        result.append(py::make_tuple(own(std::move(mb.n_id)), own(std::move(mb.counts)), dst, src, eid, w));
        mb.hops.clear();
        mb.counts.clear();
    }
    return result;
}

// Output blocks of the layer-wise kernels, recycled. A block goes back to the pool when NumPy
// frees the last array viewing it (the capsule destructor), and a later call reuses it:
// memory that is already resident, so the kernels do not pay the OS for faulting in fresh
// zeroed pages (a quarter of the layer-wise time). No block is handed out while an array
// views it, so results of earlier calls never alias later ones. The pool keeps at most
// `limit` bytes (set_pool_limit; 0 = no pooling); a request takes the smallest held block
// that fits and is at most 1.5x the request, else malloc.
class BlockPool {
  public:
    void* take(size_t bytes, size_t* cap) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = free_.lower_bound(bytes);
            if (it != free_.end() && it->first <= bytes + bytes / 2) {
                void* p = it->second;
                *cap = it->first;
                held_ -= it->first;
                free_.erase(it);
                return p;
            }
        }
        *cap = bytes;
        return std::malloc(bytes ? bytes : 1);
    }
    void give(void* p, size_t cap) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (held_ + cap <= limit_) {
                free_.emplace(cap, p);
                held_ += cap;
                return;
            }
        }
        std::free(p);
    }
    void set_limit(size_t limit) {
        std::multimap<size_t, void*> drop;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            limit_ = limit;
            while (held_ > limit_ && !free_.empty()) {
                auto it = std::prev(free_.end());
                held_ -= it->first;
                drop.insert(*it);
                free_.erase(it);
            }
        }
        for (auto& kv : drop) std::free(kv.second);
    }
    std::pair<size_t, size_t> stats() {
        std::lock_guard<std::mutex> lock(mutex_);
        return {held_, limit_};
    }

  private:
    std::mutex mutex_;
    std::multimap<size_t, void*> free_;  // capacity in bytes -> block
    size_t held_ = 0;
    size_t limit_ = size_t(1) << 30;
};

// Never destroyed: capsules may free blocks during interpreter shutdown.
BlockPool& block_pool() {
    static BlockPool* pool = new BlockPool();
    return *pool;
}

void* pool_alloc(size_t bytes, size_t* cap) { return block_pool().take(bytes, cap); }

struct PooledBlock {
    void* p;
    size_t cap;
};

// The minibatches' tuples (n_id, counts, dst[l], src[l], edge_id[l], weight[l]); the edge arrays
// view the minibatch's block, owned by one capsule that returns it to the pool.
py::list layerwise_to_python(std::vector<LayerWiseOut>& outs) {
    py::list result;
    for (auto& mb : outs) {
        auto* owner_data = new PooledBlock{mb.block, mb.block_cap};
        mb.block = nullptr;
        py::capsule owner(owner_data, [](void* q) {
            auto* b = reinterpret_cast<PooledBlock*>(q);
            block_pool().give(b->p, b->cap);
            delete b;
        });
        py::list dst, src, eid, wts;
        for (size_t l = 0; l < mb.dst.size(); ++l) {
            const py::ssize_t k = static_cast<py::ssize_t>(mb.edge_count[l]);
            dst.append(py::array_t<int64_t>({k}, {py::ssize_t(8)}, mb.dst[l], owner));
            src.append(py::array_t<int64_t>({k}, {py::ssize_t(8)}, mb.src[l], owner));
            eid.append(py::array_t<int64_t>({k}, {py::ssize_t(8)}, mb.eid[l], owner));
            wts.append(py::array_t<double>({k}, {py::ssize_t(8)}, mb.weight[l], owner));
        }
        std::vector<int64_t> counts(mb.counts);
        result.append(py::make_tuple(own(std::move(mb.n_id)), own(std::move(counts)), dst, src, eid, wts));
    }
    return result;
}

py::list nodewise_bulk(const I64& indptr, const I64& indices, const py::object& weights,
                       const I64& seeds, const I64& sizes, const I64& batch_ids,
                       const std::vector<int64_t>& fanouts, bool replace, bool weighted,
                       uint32_t k0, uint32_t k1, uint64_t epoch, int num_threads) {
    Bulk b = make_bulk(indptr, indices, weights, seeds, sizes, batch_ids);
    require(!weighted || b.g.weights != nullptr, "weighted sampling needs weights");
    require(!fanouts.empty() && fanouts.size() <= 255, "1 to 255 hops");
    for (int64_t f : fanouts) require(f >= 1 || f == -1, "fanouts must be >= 1 or -1");
    NodeWiseOptions o;
    o.fanouts = fanouts;
    o.replace = replace;
    o.weighted = weighted;
    o.key = Key{k0, k1};
    o.epoch = epoch;
    std::vector<MiniBatchOut> outs(b.k);
    {
        py::gil_scoped_release release;
        for_each_minibatch<NodeWiseScratch>(
            b.k, resolve_threads(num_threads), [](NodeWiseScratch&) {},
            [&](int64_t j, NodeWiseScratch& sc) {
                nodewise_minibatch(b.g, b.seeds + b.offsets[j], b.offsets[j + 1] - b.offsets[j],
                                   static_cast<uint32_t>(b.batch_ids[j]), o, sc, outs[j]);
            });
    }
    return to_python(outs, false);
}

py::list layerwise_bulk(const I64& indptr, const I64& indices, const U32& indices32, const U32& internal_of,
                        const U32& vertex_of, const py::object& weights,
                        const I64& seeds, const I64& sizes, const I64& batch_ids,
                        const std::vector<int64_t>& fanouts, uint32_t k0, uint32_t k1, uint64_t epoch,
                        const py::object& q_global, const py::object& cumulative, int num_threads) {
    Bulk b = make_bulk(indptr, indices, weights, seeds, sizes, batch_ids);
    require(!fanouts.empty() && fanouts.size() <= 255, "1 to 255 hops");
    LayerWiseOptions o;
    o.fanouts = fanouts;
    o.key = Key{k0, k1};
    o.epoch = epoch;
    o.alloc = pool_alloc;
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
        for (int64_t f : fanouts) require(f >= 1, "FastGCN fanouts must be >= 1");
    } else {
        for (int64_t f : fanouts) require(f >= 1 || f == -1, "fanouts must be >= 1 or -1");
    }
    std::vector<LayerWiseOut> outs(b.k);
    struct ReturnBlocks {  // on error: blocks not handed to NumPy go back to the pool
        std::vector<LayerWiseOut>& outs;
        ~ReturnBlocks() {
            for (auto& mb : outs)
                if (mb.block) block_pool().give(mb.block, mb.block_cap);
        }
    } return_blocks{outs};
    const int64_t n = b.g.n;
    {
        py::gil_scoped_release release;
        for_each_minibatch<LayerWiseScratch>(
            b.k, resolve_threads(num_threads), [n, &b](LayerWiseScratch& sc) { sc.resize(n, b.g.weights != nullptr); },
            [&](int64_t j, LayerWiseScratch& sc) {
                layerwise_minibatch(b.g, b.seeds + b.offsets[j], b.offsets[j + 1] - b.offsets[j],
                                    static_cast<uint32_t>(b.batch_ids[j]), o, sc, outs[j]);
            });
    }
    return layerwise_to_python(outs);
}

// Test hook: the LADIES candidates' Philox words (word 0 of block (0, u, hw, bid)) from one
// implementation: "avx2" (hand-written; needs an AVX2 CPU), "generic" (compiler-vectorised
// clones), or "auto" (what the kernel runs).
py::array_t<uint32_t> ladies_words_hook(const U32& u, uint32_t hw, uint32_t bid, uint32_t k0, uint32_t k1,
                                        const std::string& path) {
    std::vector<uint32_t> out(u.size());
    const Key key{k0, k1};
    if (path == "avx2") {
#ifdef SPSAMPLE_LW_X86
        require(__builtin_cpu_supports("avx2"), "this CPU has no AVX2");
        ladies_words_avx2(u.data(), u.size(), hw, bid, key, out.data());
#else
        require(false, "no AVX2 build on this platform");
#endif
    } else if (path == "generic") {
        ladies_words_generic(u.data(), u.size(), hw, bid, key, out.data());
    } else {
        require(path == "auto", "path must be avx2, generic or auto");
        ladies_words(u.data(), u.size(), hw, bid, key, out.data());
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

// ---- per-request row sampling (rows.h): the owner side of distributed push ----------------
#include "rows.h"

namespace {

// Returns (count (r,), edge (E,), column (E,)) int64; see rows.h. Block rows: indptr (n + 1)
// from 0 to len(indices); vertex - row_offset (or rows[i] when rows is given) in [0, n).
py::tuple sample_rows_native(const I64& indptr, const I64& indices, const py::object& weights,
                             int64_t row_offset, const I64& vertex, const I64& batch, int64_t fanout,
                             uint32_t hop_word, bool replace, bool weighted, uint32_t k0, uint32_t k1,
                             int num_threads, const py::object& rows) {
    require(indptr.ndim() == 1 && indptr.size() >= 1 && indices.ndim() == 1,
            "indptr and indices must be 1-d");
    const int64_t n = indptr.size() - 1;
    require(indptr.data()[0] == 0 && indptr.data()[n] == indices.size(), "indptr must run from 0 to len(indices)");
    require(vertex.ndim() == 1 && batch.ndim() == 1 && vertex.size() == batch.size(),
            "vertex and batch must be 1-d of equal length");
    require(fanout >= 1 || fanout == -1, "fanout must be >= 1 or -1");
    F64 w;
    CSRView g{indptr.data(), indices.data(), nullptr, n};
    if (!weights.is_none()) {
        w = weights.cast<F64>();
        require(w.ndim() == 1 && w.size() == indices.size(), "weights must match indices");
        g.weights = w.data();
    }
    require(!weighted || g.weights != nullptr, "weighted sampling needs weights");
    const int64_t r = vertex.size();
    I64 row_of;
    if (!rows.is_none()) {
        row_of = rows.cast<I64>();
        require(row_of.ndim() == 1 && row_of.size() == r, "rows must have one entry per request");
    }
    const int64_t* row_ptr = rows.is_none() ? nullptr : row_of.data();
    for (int64_t i = 0; i < r; ++i) {
        const int64_t row = row_ptr ? row_ptr[i] : vertex.data()[i] - row_offset;
        require(row >= 0 && row < n && vertex.data()[i] >= 0 && vertex.data()[i] < static_cast<int64_t>(0xFFFFFFFFll),
                "request outside the block");
    }
    NodeWiseOptions o;
    o.replace = replace;
    o.weighted = weighted;
    o.key = Key{k0, k1};
    RowRequests q{vertex.data(), batch.data(), r, row_offset, row_ptr};
    RowSamples out;
    {
        py::gil_scoped_release release;
        RowSampler rows(g, q, fanout, hop_word, o, out);
        for_each_minibatch<NodeWiseScratch>(
            rows.num_chunks(), resolve_threads(num_threads), [](NodeWiseScratch&) {},
            [&](int64_t c, NodeWiseScratch& sc) { rows.sample_chunk(c, sc); });
        rows.finish();
    }
    return py::make_tuple(own(std::move(out.count)), own(std::move(out.edge)), own(std::move(out.column)));
}

}  // namespace

PYBIND11_MODULE(_native_kernels, m) {
    m.doc() = "spsample native kernels (fused bulk samplers); use through spsample._native";
    m.def("nodewise_bulk", &nodewise_bulk, py::arg("indptr"), py::arg("indices"), py::arg("weights"),
          py::arg("seeds"), py::arg("sizes"), py::arg("batch_ids"), py::arg("fanouts"), py::arg("replace"),
          py::arg("weighted"), py::arg("k0"), py::arg("k1"), py::arg("epoch"), py::arg("num_threads"));
    m.def("layerwise_bulk", &layerwise_bulk, py::arg("indptr"), py::arg("indices"), py::arg("indices32"),
          py::arg("internal_of"), py::arg("vertex_of"),
          py::arg("weights"),
          py::arg("seeds"), py::arg("sizes"), py::arg("batch_ids"), py::arg("fanouts"), py::arg("k0"),
          py::arg("k1"), py::arg("epoch"), py::arg("q_global"), py::arg("cumulative"),
          py::arg("num_threads"));
    m.def("philox_words", &philox_words);
    m.def("ladies_words", &ladies_words_hook, py::arg("u"), py::arg("hw"), py::arg("bid"), py::arg("k0"),
          py::arg("k1"), py::arg("path"));
#ifdef SPSAMPLE_LW_PROFILE
    m.def("lw_profile", []() {  // per-phase seconds of layerwise_minibatch (profiling builds only)
        std::vector<double> v(std::begin(lw_prof), std::end(lw_prof));
        std::fill(std::begin(lw_prof), std::end(lw_prof), 0.0);
        return v;
    });
#endif
    m.def("det_log", &det_log_array);
    m.def("set_pool_limit", &set_pool_limit, py::arg("bytes"));
    m.def("pool_stats", &pool_stats);
    m.def("max_threads", &max_threads);
    m.def("have_openmp", &have_openmp);
    m.def("sample_rows", &sample_rows_native, py::arg("indptr"), py::arg("indices"), py::arg("weights"),
          py::arg("row_offset"), py::arg("vertex"), py::arg("batch"), py::arg("fanout"), py::arg("hop_word"),
          py::arg("replace"), py::arg("weighted"), py::arg("k0"), py::arg("k1"), py::arg("num_threads"),
          py::arg("rows") = py::none());
}
