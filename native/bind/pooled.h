// Output blocks of the process-wide pool (common.h: BlockPool) handed to NumPy: a Pooled block
// becomes an array whose capsule gives the block back to the pool when NumPy frees it
// (to_numpy); PooledGuard gives back a block that was never handed over (errors).
// Part of the bindings of spsample._native_kernels (included once, by native/module.cpp).
#ifndef SPSAMPLE_BIND_POOLED_H
#define SPSAMPLE_BIND_POOLED_H

#include "bind/arrays.h"
#include "common.h"

namespace spsample {
namespace bind {

void* pool_alloc(size_t bytes, size_t* cap) { return block_pool().take(bytes, cap); }

struct PooledBlock {
    void* p;
    size_t cap;
};

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

// Gives a pooled block back unless it was handed to NumPy (on errors).
struct PooledGuard {
    Pooled& a;
    ~PooledGuard() {
        if (a.p) block_pool().give(a.p, a.cap);
    }
};

}  // namespace bind
}  // namespace spsample

#endif  // SPSAMPLE_BIND_POOLED_H
