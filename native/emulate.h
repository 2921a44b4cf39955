// Host emulation of the GPU kernels (device/kernels.cuh: rowwise.cuh and layerwise.cuh): a
// CUDA launch of `grid` blocks of `block` threads, run on the CPU by calling the kernel's
// (block, thread) function for every index -- in a shuffled order and from several OS threads
// at once, to shake out any assumption about the order in which a GPU runs its threads and
// any race the atomics of device/atomic.cuh do not cover. The kernels are compiled from the
// very source the GPU compiles (only the atomic shim and a few bit intrinsics differ, see
// device/hd.cuh).
//
// Inputs:  a kernel of SPSAMPLE_KERNEL_ARGS by name; grid, block >= 1; the kernel's argument
//          struct (device/args.cuh; host addresses); threads >= 1; order_seed (< 0: index order, else
//          the indices shuffled by a Mersenne twister seeded with it).
// Effect:  what the launch writes through its arguments.
// Complexity: grid * block calls, spread dynamically over the threads.
#ifndef SPSAMPLE_EMULATE_H
#define SPSAMPLE_EMULATE_H

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "device/kernels.cuh"

namespace spsample {

// A kernel as the emulator calls it: its (block, thread) function on a pointer to its argument
// struct (device/args.cuh), and the struct's size in bytes.
struct EmulatedKernel {
    void (*run)(gpu::Launch, const void*) = nullptr;
    size_t arg_bytes = 0;
};

// The kernel called `name` (without the spsample_k_ prefix); run == nullptr when none is.
inline EmulatedKernel emulated_kernel(const std::string& name) {
#define SPSAMPLE_KERNEL_ENTRY(k, Type, FIELDS)                                           \
    if (name == #k)                                                                      \
        return EmulatedKernel{                                                           \
            [](gpu::Launch t, const void* a) { gpu::k_##k(t, *static_cast<const gpu::Type*>(a)); }, \
            sizeof(gpu::Type)};
    SPSAMPLE_KERNEL_ARGS(SPSAMPLE_KERNEL_ENTRY)
#undef SPSAMPLE_KERNEL_ENTRY
    return EmulatedKernel{};
}

inline std::vector<std::string> emulated_kernel_names() {
    std::vector<std::string> names;
#define SPSAMPLE_KERNEL_NAME(k, Type, FIELDS) names.push_back(#k);
    SPSAMPLE_KERNEL_ARGS(SPSAMPLE_KERNEL_NAME)
#undef SPSAMPLE_KERNEL_NAME
    return names;
}

inline void emulate_launch(const EmulatedKernel& kernel, int64_t grid, int64_t block,
                           const void* args, int threads, int64_t order_seed) {
    const int64_t total = grid * block;
    std::vector<int64_t> order(static_cast<size_t>(total));
    std::iota(order.begin(), order.end(), int64_t(0));
    if (order_seed >= 0) {
        std::mt19937_64 gen(static_cast<uint64_t>(order_seed));
        std::shuffle(order.begin(), order.end(), gen);
    }
    std::atomic<int64_t> next(0);
    auto work = [&]() {
        for (int64_t i = next.fetch_add(1); i < total; i = next.fetch_add(1)) {
            const int64_t x = order[static_cast<size_t>(i)];
            kernel.run(gpu::Launch{x / block, x % block, grid, block}, args);
        }
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < threads; ++w) pool.emplace_back(work);
    work();
    for (auto& th : pool) th.join();
}

}  // namespace spsample

#endif  // SPSAMPLE_EMULATE_H
