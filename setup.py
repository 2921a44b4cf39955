"""Build of spsample's optional native extension ``spsample._native_kernels``.

Metadata lives in ``setup.cfg``; this file only adds the C++17 extension (pybind11, OpenMP,
``-O3 -ffp-contract=off``), and ships the GPU kernels' CUDA sources (``native/device``) inside the
package as ``spsample/_cuda`` (CuPy compiles them at run time; an editable install reads them
from ``native/device``). The extension is optional: when no compiler (or no pybind11) is
available, or the build fails, installation still succeeds with a warning and spsample runs its
NumPy path (``spsample.native.AVAILABLE`` is False). ``SPSAMPLE_BUILD_NATIVE=0`` skips it.
"""

import glob
import os
import shutil
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

# Flags that change floating-point results are forbidden: det_log and the LADIES sums must round
# exactly as NumPy does (no FMA contraction, no -ffast-math).
COMPILE_ARGS = ["-O3", "-std=c++17", "-ffp-contract=off", "-fno-fast-math", "-fvisibility=hidden"]
OPENMP_ARGS = ["-fopenmp"]


def _warn(msg):
    sys.stderr.write(f"\nWARNING: spsample: {msg}\n"
                     "  spsample is installed without its native kernels and uses the NumPy path.\n\n")


class OptionalBuildExt(build_ext):
    """Build extensions if possible; on failure warn and carry on (first without OpenMP)."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # no compiler at all (DistutilsPlatformError, ...)
            _warn(f"cannot build native extensions ({exc})")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
            return
        except Exception as exc:
            if not any(a in ext.extra_compile_args for a in OPENMP_ARGS):
                _warn(f"building {ext.name} failed ({exc})")
                return
            _warn(f"building {ext.name} with OpenMP failed ({exc}); retrying single-threaded")
        ext.extra_compile_args = [a for a in ext.extra_compile_args if a not in OPENMP_ARGS]
        ext.extra_link_args = [a for a in ext.extra_link_args if a not in OPENMP_ARGS]
        try:
            super().build_extension(ext)
        except Exception as exc:
            _warn(f"building {ext.name} failed ({exc})")


class BuildPyWithCudaSources(build_py):
    """Copy native/device/*.cuh and *.cu into the built package (spsample/_cuda)."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "spsample", "_cuda")
        os.makedirs(target, exist_ok=True)
        for f in glob.glob(os.path.join("native", "device", "*.cu*")):
            shutil.copy(f, target)


def _extensions():
    if os.environ.get("SPSAMPLE_BUILD_NATIVE", "1") == "0":
        return []
    try:
        from pybind11.setup_helpers import Pybind11Extension
    except ImportError:
        _warn("pybind11 is not installed (pip install pybind11)")
        return []
    sources = ["native/module.cpp"]
    # every header the module includes: a change to any of them rebuilds it
    headers = sorted(glob.glob(os.path.join("native", "*.h")) + glob.glob(os.path.join("native", "bind", "*.h")))
    headers += [os.path.join("native", "device", f) for f in sorted(os.listdir("native/device"))]
    return [Pybind11Extension(
        "spsample._native_kernels", sources, depends=headers, include_dirs=["native"],
        cxx_std=17, extra_compile_args=COMPILE_ARGS + OPENMP_ARGS, extra_link_args=OPENMP_ARGS)]


setup(ext_modules=_extensions(),
      cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyWithCudaSources})
