// The single-source layer of spsample's kernels: what lets one header compile as host C++17
// (g++ / clang++, the CPU engine), as CUDA device code under nvcc, and under NVRTC (CuPy's
// RawModule), which has no C or C++ standard headers at all.
//
//   SPSAMPLE_HD        __host__ __device__ under a CUDA compiler, nothing on the host
//   SPSAMPLE_DEVICE    defined while compiling device code (nvcc's device pass, NVRTC)
//   int32_t ... uint64_t  the fixed-width integers (typedefs under NVRTC, <cstdint> otherwise)
//   bits_of / double_of   exact bit casts of a double (memcpy on the host, intrinsics on a GPU)
//   ctz64              count of trailing zeros of a non-zero 64-bit word
//   SPSAMPLE_UNROLL(n) unroll the next loop n times
//
// Rules for every body built on this header (the "kernel bodies"): no allocation, no
// exceptions, no standard containers or algorithms, no host-only headers; scratch is passed in
// as pointers sized by the caller; floating point is only + - * / (and frexp in det_log), so
// that with FMA contraction off (-ffp-contract=off on the host, --fmad=false on the GPU) the
// host and the device round every result identically.
#ifndef SPSAMPLE_DEVICE_HD_CUH
#define SPSAMPLE_DEVICE_HD_CUH

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define SPSAMPLE_HD __host__ __device__
#define SPSAMPLE_CUDA 1
#else
#define SPSAMPLE_HD
#endif

#if defined(__CUDA_ARCH__) || defined(__CUDACC_RTC__)
#define SPSAMPLE_DEVICE 1
#endif

#if defined(__CUDACC_RTC__)
// NVRTC: no <cstdint>; the widths of the LP64 ABI that CUDA uses.
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#else
#include <cstdint>
#include <cstring>
#endif

// SPSAMPLE_UNROLL(n): unroll the next loop n times (GCC's pragma on the host, CUDA's on a GPU).
#define SPSAMPLE_PRAGMA(x) _Pragma(#x)
#if defined(SPSAMPLE_CUDA)
#define SPSAMPLE_UNROLL(n) SPSAMPLE_PRAGMA(unroll n)
#elif defined(__clang__)
#define SPSAMPLE_UNROLL(n) SPSAMPLE_PRAGMA(clang loop unroll_count(n))
#elif defined(__GNUC__)
#define SPSAMPLE_UNROLL(n) SPSAMPLE_PRAGMA(GCC unroll n)
#else
#define SPSAMPLE_UNROLL(n)
#endif

#if defined(__FAST_MATH__)
#error "spsample kernels must not be compiled with -ffast-math"
#endif

namespace spsample {

// The bits of x (exact).
SPSAMPLE_HD inline uint64_t bits_of(double x) {
#if defined(SPSAMPLE_DEVICE)
    return static_cast<uint64_t>(__double_as_longlong(x));
#else
    uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
#endif
}

// The double whose bits are b (exact).
SPSAMPLE_HD inline double double_of(uint64_t b) {
#if defined(SPSAMPLE_DEVICE)
    return __longlong_as_double(static_cast<long long>(b));
#else
    double x;
    std::memcpy(&x, &b, sizeof x);
    return x;
#endif
}

// Trailing zero bits of w != 0.
SPSAMPLE_HD inline int ctz64(uint64_t w) {
#if defined(SPSAMPLE_DEVICE)
    return __ffsll(static_cast<long long>(w)) - 1;
#else
    return __builtin_ctzll(w);
#endif
}

// A CSR adjacency. indptr: int64 (n + 1), non-decreasing from 0 to nnz; indices: int64 (nnz),
// each in [0, n), sorted and unique within a row; weights: float64 (nnz), >= 0, or nullptr;
// indices32: the same column ids as uint32 (half the bytes for the kernels' random reads), or
// nullptr.
struct CSRView {
    const int64_t* indptr;
    const int64_t* indices;
    const double* weights;
    int64_t n;
    const uint32_t* indices32 = nullptr;
    // fence[j] = indices32[fence_phase + 16 j] (every 16th column, from the first whose address
    // is a multiple of 64 bytes), or nullptr: the host's membership test (select.h).
    const uint32_t* fence = nullptr;
    int64_t fence_phase = 0;
};

}  // namespace spsample

#endif  // SPSAMPLE_DEVICE_HD_CUH
