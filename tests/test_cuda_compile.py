"""The GPU kernels compile as device code, without a GPU: every ``.cuh``/``.cu`` of
``native/device`` with nvcc for sm_90, and the kernels' source with NVRTC exactly as
``cupy.RawModule`` receives it (one inlined string, ``-std=c++17 --fmad=false``, no include
path, so no host-only header can sneak in); the PTX has no fused multiply-add (the CPU's
rounding); and a deliberately broken device function, in a scratch copy of the sources, is
rejected by both compilers (the check can fail).

Without nvcc / NVRTC these tests skip, except where CI asks for them
(``SPSAMPLE_REQUIRE_CUDA_TOOLS=1``, set by ``.ci/run``): there a missing compiler is a
failure, not a silent skip, since the CUDA sources exist and must be shown to compile.
"""

import os
import shutil

import pytest

from spsample.gpu import _cuda_source as cs
from spsample._errors import MissingDependencyError

REQUIRED = os.environ.get("SPSAMPLE_REQUIRE_CUDA_TOOLS", "") == "1"


def _need(tool, found):
    if found:
        return
    if REQUIRED:
        pytest.fail(f"{tool} is required here (SPSAMPLE_REQUIRE_CUDA_TOOLS=1) but was not found")
    pytest.skip(f"{tool} not found (the CUDA toolkit / pip install nvidia-cuda-nvrtc)")


needs_nvcc = pytest.fixture(lambda: _need("nvcc", shutil.which("nvcc")))
needs_nvrtc = pytest.fixture(lambda: _need("NVRTC (libnvrtc)", cs.find_nvrtc()))


def test_the_sources_exist_and_include_no_host_only_header():
    files = [os.path.basename(f) for f in cs.device_headers()]
    assert {"hd.cuh", "philox.cuh", "rules.cuh", "dedup.cuh", "atomic.cuh", "rowwise.cuh",
            "layerwise.cuh", "kernels.cuh", "all_bodies.cu"} <= set(files)
    assert cs.host_only_includes() == []
    src = cs.kernel_source()
    assert "#include \"" not in src and "SPSAMPLE_ROWWISE_KERNELS(SPSAMPLE_GLOBAL_KERNEL)" in src
    assert "SPSAMPLE_LAYERWISE_KERNELS(SPSAMPLE_LW_GLOBAL_KERNEL)" in src


def test_the_host_only_include_check_can_fail(tmp_path):
    for f in cs.device_headers():
        shutil.copy(f, tmp_path)
    p = tmp_path / "rules.cuh"
    text = p.read_text().replace('#include "hd.cuh"', '#include "hd.cuh"\n#include <vector>', 1)
    p.write_text(text)
    assert ("rules.cuh", "vector") in cs.host_only_includes(str(tmp_path))


@pytest.mark.usefixtures("needs_nvcc")
def test_nvcc_compiles_every_device_source_for_sm_90():
    assert len(cs.nvcc_compile()) == len(cs.device_headers())


@pytest.mark.usefixtures("needs_nvrtc")
@pytest.mark.parametrize("main", [cs.KERNEL_FILE, cs.CHECK_FILE])
def test_nvrtc_compiles_the_kernels_as_rawmodule_does(main):
    cs.nvrtc_compile(cs.kernel_source(main=main), arch="sm_90")


@pytest.mark.usefixtures("needs_nvrtc")
def test_device_code_has_no_fused_multiply_add():
    """--fmad=false keeps det_log's rounding the CPU's; without it NVRTC contracts (so the
    check is not vacuous)."""
    src = cs.kernel_source(main=cs.CHECK_FILE)
    ptx, _ = cs.nvrtc_compile(src, arch="compute_90")
    assert ".entry spsample_k_select" in ptx and ".entry spsample_k_lw_colsum" in ptx
    assert "fma." not in ptx
    contracted, _ = cs.nvrtc_compile(src, arch="compute_90", options=("-std=c++17",))
    assert "fma.rn.f64" in contracted


_BREAKS = {
    # a host-only library call inside a __host__ __device__ body (compiles fine on the host)
    "host call in a body": ("rules.cuh",
                            "SPSAMPLE_HD inline void sort_small(int64_t* a, int64_t k) {\n",
                            "    if (k > 1000) std::abort();\n", "#include <cstdlib>\n"),
    # an error in device-only code, which the host build never sees
    "device-only branch": ("hd.cuh", "return static_cast<uint64_t>(__double_as_longlong(x));",
                           "return static_cast<uint64_t>(__double_as_longlong(x, 1));", ""),
    # a layer-wise kernel body using a host-only standard algorithm (fine on the host)
    "host algorithm in a layer-wise body": (
        "layerwise.cuh",
        "SPSAMPLE_HD inline void k_lw_row_sums(Launch t, const LwRowSumsArgs& a) {\n",
        "    if (a.N < 0) std::sort(a.total, a.total + 2);\n",
        "#include <algorithm>\n"),
}


def _broken_copy(tmp_path, what):
    name, anchor, change, include = _BREAKS[what]
    for f in cs.device_headers():
        shutil.copy(f, tmp_path)
    p = tmp_path / name
    text = p.read_text()
    assert anchor in text
    text = text.replace(anchor, anchor + change if anchor.endswith("{\n") else change, 1)
    p.write_text(text.replace('#include "hd.cuh"\n', '#include "hd.cuh"\n' + include, 1)
                 if include else text)
    return str(tmp_path)


@pytest.mark.usefixtures("needs_nvcc")
@pytest.mark.parametrize("what", list(_BREAKS))
def test_nvcc_rejects_a_broken_device_function(tmp_path, what):
    with pytest.raises(cs.CompileError, match="nvcc rejected"):
        cs.nvcc_compile(_broken_copy(tmp_path, what))


@pytest.mark.usefixtures("needs_nvrtc")
@pytest.mark.parametrize("what", list(_BREAKS))
def test_nvrtc_rejects_a_broken_device_function(tmp_path, what):
    with pytest.raises(cs.CompileError, match="NVRTC"):
        cs.nvrtc_compile(cs.kernel_source(_broken_copy(tmp_path, what)), arch="sm_90")


def test_missing_sources_are_a_typed_error(tmp_path):
    with pytest.raises(MissingDependencyError, match="not installed"):
        cs.kernel_source(str(tmp_path))
