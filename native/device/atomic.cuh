// The atomic shim of the GPU kernels: the few atomic operations they use on 64-bit words, as
// CUDA atomics on a GPU and as GCC/Clang __atomic builtins on the host (where the emulator of
// emulate.h runs the kernels from several threads; C++17 has no std::atomic_ref, and the
// builtins are what it is made of). Sequentially consistent on the host; relaxed-or-stronger
// device atomics on the GPU, where kernels separate their phases by launches.
//
//   atomic_load_u64(p)            *p, read atomically
//   atomic_cas_u64(p, old, new)   if *p == old then *p = new; returns the previous *p
//   atomic_min_u64(p, v)          *p = min(*p, v); returns the previous *p
//   atomic_add_u64(p, v)          *p += v; returns the previous *p
//   atomic_store_u32(p, v)        *p = v, atomically
#ifndef SPSAMPLE_DEVICE_ATOMIC_CUH
#define SPSAMPLE_DEVICE_ATOMIC_CUH

#include "hd.cuh"

namespace spsample {

SPSAMPLE_HD inline uint64_t atomic_load_u64(const uint64_t* p) {
#if defined(SPSAMPLE_DEVICE)
    return *reinterpret_cast<const volatile unsigned long long*>(p);
#else
    return __atomic_load_n(p, __ATOMIC_SEQ_CST);
#endif
}

SPSAMPLE_HD inline uint64_t atomic_cas_u64(uint64_t* p, uint64_t expected, uint64_t desired) {
#if defined(SPSAMPLE_DEVICE)
    return atomicCAS(reinterpret_cast<unsigned long long*>(p), expected, desired);
#else
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;  // the value found (== the expected one when the exchange happened)
#endif
}

SPSAMPLE_HD inline uint64_t atomic_min_u64(uint64_t* p, uint64_t v) {
#if defined(SPSAMPLE_DEVICE)
    return atomicMin(reinterpret_cast<unsigned long long*>(p), v);
#else
    uint64_t cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v < cur && !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST)) {
    }
    return cur;
#endif
}

SPSAMPLE_HD inline uint64_t atomic_add_u64(uint64_t* p, uint64_t v) {
#if defined(SPSAMPLE_DEVICE)
    return atomicAdd(reinterpret_cast<unsigned long long*>(p), v);
#else
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
#endif
}

SPSAMPLE_HD inline void atomic_store_u32(uint32_t* p, uint32_t v) {
#if defined(SPSAMPLE_DEVICE)
    atomicExch(reinterpret_cast<unsigned int*>(p), v);
#else
    __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
#endif
}

}  // namespace spsample

#endif  // SPSAMPLE_DEVICE_ATOMIC_CUH
