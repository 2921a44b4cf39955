// Counter-based random numbers of spsample, bit-identical to spsample/_rng.py: the bodies live
// in device/philox.cuh (one source for the CPU engine and the GPU kernels); this header keeps
// the CPU engine's include path.
#ifndef SPSAMPLE_RNG_H
#define SPSAMPLE_RNG_H

#include <cmath>
#include <cstdint>
#include <cstring>

#include "device/philox.cuh"

#endif  // SPSAMPLE_RNG_H
