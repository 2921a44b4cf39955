// Host emulation of the GPU kernels (device/kernels.cuh: rowwise.cuh and layerwise.cuh): a
// CUDA launch of `grid` blocks of `block` threads, run on the CPU by calling the kernel's
// (block, thread) function for every index -- in a shuffled order and from several OS threads
// at once, to shake out any assumption about the order in which a GPU runs its threads and
// any race the atomics of device/atomic.cuh do not cover. The kernels are compiled from the
// very source the GPU compiles (only the atomic shim and a few bit intrinsics differ, see
// device/hd.cuh).
//
// Inputs:  a kernel of SPSAMPLE_ALL_KERNELS by name; grid, block >= 1; the kernel's int64
//          argument array (host addresses); threads >= 1; order_seed (< 0: index order, else
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

using EmulatedKernel = void (*)(gpu::Launch, const int64_t*);

// The kernel called `name` (without the spsample_k_ prefix), or nullptr.
inline EmulatedKernel emulated_kernel(const std::string& name) {
#define SPSAMPLE_KERNEL_ENTRY(k) \
    if (name == #k) return &gpu::k_##k;
    SPSAMPLE_ALL_KERNELS(SPSAMPLE_KERNEL_ENTRY)
#undef SPSAMPLE_KERNEL_ENTRY
    return nullptr;
}

inline std::vector<std::string> emulated_kernel_names() {
    std::vector<std::string> names;
#define SPSAMPLE_KERNEL_NAME(k) names.push_back(#k);
    SPSAMPLE_ALL_KERNELS(SPSAMPLE_KERNEL_NAME)
#undef SPSAMPLE_KERNEL_NAME
    return names;
}

inline void emulate_launch(EmulatedKernel kernel, int64_t grid, int64_t block, const int64_t* args,
                           int threads, int64_t order_seed) {
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
            kernel(gpu::Launch{x / block, x % block, grid, block}, args);
        }
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < threads; ++w) pool.emplace_back(work);
    work();
    for (auto& th : pool) th.join();
}

}  // namespace spsample

#endif  // SPSAMPLE_EMULATE_H
