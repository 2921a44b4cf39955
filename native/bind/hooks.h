// Settings and test hooks: the pool's limit and use, the thread count, OpenMP, the RNG rules
// and det_log for comparison with spsample._rng, and the host emulation of the GPU kernels
// (emulate.h: a launch run on the CPU from the very CUDA source).
// Part of the bindings of spsample._native_kernels (included once, by native/module.cpp).
#ifndef SPSAMPLE_BIND_HOOKS_H
#define SPSAMPLE_BIND_HOOKS_H

#include <cstddef>
#include <string>
#include <vector>

#include "bind/arrays.h"
#include "emulate.h"
#include "layerwise.h"
#include "parallel.h"
#include "rng.h"

namespace spsample {
namespace bind {

// Test hook: the LADIES candidates' Philox words (word 0 of block (0, u, hw, bid)) from one
// implementation: "avx512" or "avx2" (hand-written; need such a CPU), "generic" (compiler-
// vectorised clones), or "auto" (what the kernel runs).
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
    } else if (path == "avx512") {
#ifdef SPSAMPLE_LW_X86
        require(__builtin_cpu_supports("avx512f"), "this CPU has no AVX-512");
        column_words_avx512(u.data(), u.size(), hw, bid, key, out.data());
#else
        require(false, "no AVX-512 build on this platform");
#endif
    } else if (path == "generic") {
        column_words_generic(u.data(), u.size(), hw, bid, key, out.data());
    } else {
        require(path == "auto", "path must be avx512, avx2, generic or auto");
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

// Test and cost-model hook: words 0 .. count - 1 of the stream (vertex, hw, bid) under (k0, k1)
// as the weighted rows compute them (stream_row_words: vectorised, four words per block), from
// one implementation: "avx512", "avx2" (each needs such a CPU), "generic", or "auto" (what the
// kernel runs).
py::array_t<uint32_t> row_words(uint32_t vertex, uint32_t hw, uint32_t bid, uint32_t k0, uint32_t k1,
                                int64_t count, const std::string& path) {
    require(count >= 0, "count must be >= 0");
    std::vector<uint32_t> out(static_cast<size_t>((count + 63) / 64 * 64));
    const Key key{k0, k1};
    if (path == "avx512" || path == "avx2") {
#ifdef SPSAMPLE_LW_X86
        const bool wide = path == "avx512";
        require(__builtin_cpu_supports("avx2") && (!wide || __builtin_cpu_supports("avx512f")),
                "this CPU has no " + path);
        if (wide)
            stream_row_words_avx512(vertex, hw, bid, key, count, out.data());
        else
            stream_row_words_avx2(vertex, hw, bid, key, count, out.data());
#else
        require(false, "no " + path + " build on this platform");
#endif
    } else if (path == "generic") {
        stream_row_words_generic(vertex, hw, bid, key, count, out.data());
    } else {
        require(path == "auto", "path must be avx512, avx2, generic or auto");
        stream_row_words(vertex, hw, bid, key, count, out.data());
    }
    out.resize(static_cast<size_t>(count));
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

// Run kernel `name` as a launch of grid x block threads on the host (see emulate.h). `args` is
// the kernel's argument struct (device/args.cuh) as int64 words, filled by spsample/gpu/_args.py
// (addresses of live NumPy buffers); it must have the struct's size exactly.
void emulate_kernel(const std::string& name, int64_t grid, int64_t block, const I64& args,
                    int threads, int64_t order_seed) {
    const EmulatedKernel kernel = emulated_kernel(name);
    require(kernel.run != nullptr, "no GPU kernel named " + name);
    require(grid >= 1 && block >= 1 && grid * block <= (int64_t(1) << 24), "grid and block sizes");
    require(threads >= 1 && threads <= 64, "threads in [1, 64]");
    require(args.ndim() == 1 && static_cast<size_t>(args.size()) * 8 == kernel.arg_bytes,
            "args must be the kernel's argument struct (" + std::to_string(kernel.arg_bytes) +
                " bytes)");
    const void* a = args.data();
    py::gil_scoped_release release;
    emulate_launch(kernel, grid, block, a, threads, order_seed);
}

// {kernel: (sizeof(struct), [(field, offsetof, sizeof, C type), ...])} for every kernel's
// argument struct (device/args.cuh): what spsample/gpu/_args.py's dtypes are checked against.
py::dict kernel_arg_layouts() {
    py::dict out;
#define SPSAMPLE_LAYOUT_FIELD(type, name)                                                 \
    fields.append(py::make_tuple(#name, offsetof(T, name), sizeof(type), std::string(#type)));
#define SPSAMPLE_LAYOUT(kernel, Type, FIELDS) \
    {                                         \
        using T = gpu::Type;                  \
        py::list fields;                      \
        FIELDS(SPSAMPLE_LAYOUT_FIELD)         \
        out[#kernel] = py::make_tuple(sizeof(T), fields); \
    }
    SPSAMPLE_KERNEL_ARGS(SPSAMPLE_LAYOUT)
#undef SPSAMPLE_LAYOUT
#undef SPSAMPLE_LAYOUT_FIELD
    return out;
}

}  // namespace bind
}  // namespace spsample

#endif  // SPSAMPLE_BIND_HOOKS_H
