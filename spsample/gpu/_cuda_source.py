"""The CUDA source of the GPU kernels, as CuPy's ``RawModule`` compiles it, and compile checks.

The kernels live in ``native/device/*.cuh``: single-source headers that the C++ extension
also compiles for the CPU engine and for the host emulator of the GPU kernels. For the GPU
they are compiled at run time by NVRTC (through ``cupy.RawModule``): :func:`kernel_source`
inlines their local ``#include "..."`` lines into one string (NVRTC then needs no include
path, and no header of the C or C++ library: ``device/hd.cuh`` defines what it needs under
``__CUDACC_RTC__``), and :data:`NVRTC_OPTIONS` are the options that keep the GPU's floating
point bit-identical to the CPU's (``--fmad=false``: no fused multiply-add contraction).

:func:`nvrtc_compile` and :func:`nvcc_compile` compile the source without a GPU (NVRTC from
the ``nvidia-cuda-nvrtc`` wheel or the CUDA toolkit; ``nvcc`` from the toolkit): the test
suite and ``.ci/run`` use them so that a change that breaks device code fails CI on a machine
with no GPU.
"""

import ctypes
import ctypes.util
import glob
import os
import re
import shutil
import subprocess
import sys

from .._errors import MissingDependencyError

__all__ = ["SOURCE_DIR", "KERNEL_FILE", "CHECK_FILE", "NVRTC_OPTIONS", "NVCC_OPTIONS",
           "kernel_source",
           "device_headers", "find_nvrtc", "nvrtc_compile", "nvcc_compile", "CompileError"]

_HERE = os.path.dirname(os.path.abspath(__file__))
# An installed package carries the headers in spsample/_cuda (setup.py copies them); a source
# checkout (editable install) reads them from native/device.
_PACKAGE = os.path.dirname(_HERE)   # spsample/ (this module lives in spsample/gpu/)
_CANDIDATES = [os.path.join(_PACKAGE, "_cuda"),
               os.path.join(os.path.dirname(_PACKAGE), "native", "device")]
SOURCE_DIR = next((d for d in _CANDIDATES if os.path.isfile(os.path.join(d, "kernels.cuh"))),
                  _CANDIDATES[-1])
KERNEL_FILE = "kernels.cuh"     # includes rowwise.cuh and layerwise.cuh
CHECK_FILE = "all_bodies.cu"   # instantiates the bodies the kernels do not call (compile checks)
NVRTC_OPTIONS = ("-std=c++17", "--fmad=false")
NVCC_OPTIONS = ("-std=c++17", "--fmad=false", "-arch=sm_90", "-Werror", "all-warnings")
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"\s*$', re.M)
_SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s*<([^>]+)>', re.M)


class CompileError(RuntimeError):
    """A CUDA compiler rejected the kernels (``log`` holds its messages)."""

    def __init__(self, what, log):
        super().__init__(f"{what}:\n{log}")
        self.log = log


def device_headers(source_dir=None):
    """Paths of every ``.cuh``/``.cu`` file of the GPU kernels, sorted."""
    d = source_dir or SOURCE_DIR
    return sorted(glob.glob(os.path.join(d, "*.cuh")) + glob.glob(os.path.join(d, "*.cu")))


def kernel_source(source_dir=None, main=KERNEL_FILE):
    """The kernels as one CUDA source string: ``main`` with its local includes inlined (each
    file once, in include order), as ``cupy.RawModule(code=...)`` receives it."""
    d = source_dir or SOURCE_DIR
    if not os.path.isfile(os.path.join(d, main)):
        raise MissingDependencyError(
            f"the GPU kernels' sources are not installed ({os.path.join(d, main)} is missing); "
            "install spsample from its source tree (pip install -e .)")
    seen = set()

    def expand(name):
        if name in seen:
            return ""
        seen.add(name)
        with open(os.path.join(d, name), encoding="utf-8") as f:
            text = f.read()
        return _INCLUDE.sub(lambda m: expand(m.group(1)), text)

    return f"// spsample GPU kernels (inlined from {main})\n" + expand(main)


def find_nvrtc():
    """The path of ``libnvrtc`` (the ``nvidia-cuda-nvrtc`` wheel's, else the toolkit's or the
    loader's), or ``None``."""
    roots = [os.path.join(p, "nvidia") for p in sys.path
             if p and os.path.isdir(os.path.join(p, "nvidia"))]
    cands = []
    for root in roots:
        cands += glob.glob(os.path.join(root, "*", "lib", "libnvrtc.so*"))
        cands += glob.glob(os.path.join(root, "cuda_nvrtc", "lib", "libnvrtc.so*"))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            cands += glob.glob(os.path.join(home, "lib64", "libnvrtc.so*"))
    cands = [c for c in cands if "builtins" not in os.path.basename(c)]
    if cands:
        return sorted(cands)[-1]
    return ctypes.util.find_library("nvrtc")


def nvrtc_compile(source, arch="sm_90", options=NVRTC_OPTIONS, library=None):
    """Compile ``source`` with NVRTC as ``cupy.RawModule`` does, to a cubin for ``arch``
    (no GPU needed). Returns ``(ptx, log)``.

    Raises
    ------
    MissingDependencyError
        No ``libnvrtc`` (``pip install nvidia-cuda-nvrtc``).
    CompileError
        NVRTC rejected the source (its log says why).
    """
    path = library or find_nvrtc()
    if path is None:
        raise MissingDependencyError("checking the GPU kernels needs NVRTC: "
                                     "pip install nvidia-cuda-nvrtc")
    lib = ctypes.CDLL(path)
    prog = ctypes.c_void_p()
    src = source.encode()
    check = _nvrtc_checker(lib)
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"spsample_kernels.cu", 0, None, None),
          "nvrtcCreateProgram")
    opts = [o.encode() for o in options] + [f"--gpu-architecture={arch}".encode()]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    try:
        status = lib.nvrtcCompileProgram(prog, len(opts), arr)
        log = _nvrtc_string(lib, prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog")
        if status != 0:
            raise CompileError(f"NVRTC ({os.path.basename(path)}, {arch}) rejected the kernels",
                               log)
        ptx = None
        if arch.startswith("compute_"):
            ptx = _nvrtc_string(lib, prog, "nvrtcGetPTXSize", "nvrtcGetPTX")
        return ptx, log
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _nvrtc_checker(lib):
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    def check(status, what):
        if status != 0:
            raise CompileError(what, lib.nvrtcGetErrorString(status).decode())
    return check


def _nvrtc_string(lib, prog, size_fn, get_fn):
    size = ctypes.c_size_t()
    getattr(lib, size_fn)(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    getattr(lib, get_fn)(prog, buf)
    return buf.value.decode(errors="replace")


def nvcc_compile(source_dir=None, nvcc=None, workdir=None, options=NVCC_OPTIONS):
    """Compile every ``.cuh``/``.cu`` file of ``source_dir`` with ``nvcc`` for sm_90, each as
    its own translation unit (device and host code, to an object file). Returns the list of
    files compiled.

    Raises
    ------
    MissingDependencyError
        ``nvcc`` is not on ``PATH``.
    CompileError
        A file did not compile (nvcc's messages).
    """
    nvcc = nvcc or shutil.which("nvcc")
    if nvcc is None:
        raise MissingDependencyError("compiling the GPU kernels needs nvcc (the CUDA toolkit) "
                                     "on PATH")
    files = device_headers(source_dir)
    import tempfile
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for i, f in enumerate(files):
            cmd = [nvcc, *options, "-x", "cu", "-c", f, "-o", os.path.join(tmp, f"k{i}.o")]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                raise CompileError(f"nvcc rejected {os.path.basename(f)} ({' '.join(cmd)})",
                                   run.stdout + run.stderr)
    return files


def host_only_includes(source_dir=None):
    """``(file, header)`` for every ``#include <...>`` of the kernel headers that is not
    guarded from NVRTC (NVRTC has no C or C++ library headers): must be empty."""
    bad = []
    for f in device_headers(source_dir):
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        guarded = _rtc_guarded_spans(text)
        for m in _SYSTEM_INCLUDE.finditer(text):
            if not any(a <= m.start() < b for a, b in guarded):
                bad.append((os.path.basename(f), m.group(1)))
    return bad


def _rtc_guarded_spans(text):
    """Spans of ``#if !defined(__CUDACC_RTC__)`` / the ``#else`` of ``#if defined(__CUDACC_RTC__)``
    blocks (one level: what the headers use)."""
    spans, lines, pos = [], text.splitlines(keepends=True), 0
    stack = []
    for line in lines:
        s = line.strip()
        if s.startswith("#if"):
            rtc = "__CUDACC_RTC__" in s
            negated = rtc and ("!defined" in s.replace(" ", "") or s.startswith("#ifndef"))
            stack.append([rtc, negated, pos + len(line) if (rtc and negated) else None])
        elif s.startswith("#else") and stack:
            top = stack[-1]
            if top[0]:
                if top[2] is not None:
                    spans.append((top[2], pos))
                top[2] = None if top[1] else pos + len(line)
        elif s.startswith("#endif") and stack:
            top = stack.pop()
            if top[0] and top[2] is not None:
                spans.append((top[2], pos))
        pos += len(line)
    return spans
