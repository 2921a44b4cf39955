// A translation unit that instantiates, in device code, every body of this directory that the
// kernels (rowwise.cuh, layerwise.cuh) do not call themselves (det_log_normal, Philox blocks,
// hop words), so that nvcc and NVRTC generate and check code for all of them, besides every
// kernel; tests/test_cuda_compile.py compiles it for sm_90. It launches nothing in spsample.
#include "kernels.cuh"

#if defined(SPSAMPLE_CUDA)
extern "C" __global__ void spsample_check_bodies(const long long* a, double* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    const spsample::Key key{static_cast<uint32_t>(a[0]), static_cast<uint32_t>(a[1])};
    uint32_t w[4];
    spsample::philox4x32(i, 1u, spsample::hop_word(static_cast<uint64_t>(a[2]), 3), 7u, key, w);
    const double u = spsample::unit53(w[0], w[1]);
    out[i] = spsample::det_log_normal(spsample::open_unit(w[2])) + spsample::det_log(u + 1.0) +
             spsample::exp_key(w[3], 2.0) +
             static_cast<double>(spsample::dedup_capacity(static_cast<int64_t>(i)));
}
#endif
