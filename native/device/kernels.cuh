// Every GPU kernel of spsample: the row-wise engine's (rowwise.cuh) and the layer-wise
// engine's (layerwise.cuh). This is the file spsample/gpu/_cuda_source.py inlines into the one
// source string that cupy.RawModule compiles, and the file the host emulator (emulate.h)
// includes, so both see the same kernels.
//
//   SPSAMPLE_KERNEL_ARGS(X)   X(name, Type, FIELDS) for every kernel (args.cuh; its CUDA entry is
//                             spsample_k_<name>(const Type*))
#ifndef SPSAMPLE_DEVICE_KERNELS_CUH
#define SPSAMPLE_DEVICE_KERNELS_CUH

#include "args.cuh"
#include "layerwise.cuh"
#include "rowwise.cuh"


#endif  // SPSAMPLE_DEVICE_KERNELS_CUH
