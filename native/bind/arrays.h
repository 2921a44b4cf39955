// NumPy buffers in and out of the kernels: the array types the bindings take, arrays that
// take over a kernel's buffer without a copy (own), the ValueError of a failed cheap check
// (require), and the decoding of a bulk's seeds (Bulk, set_seeds, make_bulk).
// Part of the bindings of spsample._native_kernels (included once, by native/module.cpp).
#ifndef SPSAMPLE_BIND_ARRAYS_H
#define SPSAMPLE_BIND_ARRAYS_H

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common.h"

namespace py = pybind11;

namespace spsample {
namespace bind {

using I64 = py::array_t<int64_t, py::array::c_style>;
using F64 = py::array_t<double, py::array::c_style>;
using U32 = py::array_t<uint32_t, py::array::c_style>;

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

}  // namespace bind
}  // namespace spsample

#endif  // SPSAMPLE_BIND_ARRAYS_H
