// Every GPU kernel of spsample: the row-wise engine's (rowwise.cuh) and the layer-wise
// engine's (layerwise.cuh). This is the file spsample/gpu/_cuda_source.py inlines into the one
// source string that cupy.RawModule compiles, and the file the host emulator (emulate.h)
// includes, so both see the same kernels.
//
//   SPSAMPLE_ALL_KERNELS(X)   X(name) for every kernel (its CUDA entry is spsample_k_<name>)
#ifndef SPSAMPLE_DEVICE_KERNELS_CUH
#define SPSAMPLE_DEVICE_KERNELS_CUH

#include "layerwise.cuh"
#include "rowwise.cuh"

#define SPSAMPLE_ALL_KERNELS(X) SPSAMPLE_ROWWISE_KERNELS(X) SPSAMPLE_LAYERWISE_KERNELS(X)

#endif  // SPSAMPLE_DEVICE_KERNELS_CUH
