"""The GPU room: lowered samplers run by the CUDA kernels of ``native/device``.

* ``_device`` -- the devices (:class:`CupyDevice`, an NVIDIA GPU through CuPy;
  :class:`EmulatedDevice`, the host running the very same kernel functions), the row-wise
  driver and :func:`sample_on_device`, which :func:`spsample.sample` calls for ``device=``;
* ``_layers`` -- the layer-wise driver (LADIES, FastGCN);
* ``_driver`` -- what both drivers share (launches, prefix sums, each minibatch's ``n_id``);
* ``_args`` -- the kernels' typed argument structs;
* ``_cuda_source`` -- the kernels' source as CuPy compiles it, and the nvcc / NVRTC checks.

Results do not depend on the device: every device gives the CPU engine's (and the NumPy
evaluation's) bits.
"""

from ._cuda_source import kernel_source
from ._device import (INSTR_DTYPE, CupyDevice, EmulatedDevice, get_device, gpu_available,
                      host_seeds, run_rowwise, sample_on_device)
from ._layers import run_layerwise

__all__ = ["EmulatedDevice", "CupyDevice", "get_device", "gpu_available", "host_seeds",
           "sample_on_device", "run_rowwise", "run_layerwise", "kernel_source", "INSTR_DTYPE"]
