"""The GPU kernels' typed argument structs: spsample/gpu/_args.py's NumPy layouts against the
C structs of native/device/args.cuh as the extension compiled them (offsetof / sizeof), and the
filling by name."""

import numpy as np
import pytest

from spsample import native
from spsample.gpu._args import KERNEL_ARGS, arg_dtype, pack_args

pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="native kernels not built")

_C_KIND = {"int64_t": "i64", "double": "f64"}


def test_every_kernel_has_a_layout_and_no_other():
    assert set(KERNEL_ARGS) == set(native.kernels.kernel_arg_layouts())
    assert set(KERNEL_ARGS) == set(native.kernels.emulated_kernels())


@pytest.mark.parametrize("kernel", sorted(KERNEL_ARGS))
def test_the_numpy_layout_is_the_c_struct(kernel):
    size, fields = native.kernels.kernel_arg_layouts()[kernel]
    dt = arg_dtype(kernel)
    assert dt.itemsize == size
    assert list(dt.names) == [name for name, *_ in fields]
    for (name, offset, nbytes, ctype), (pname, kind) in zip(fields, KERNEL_ARGS[kernel]):
        assert dt.fields[name][1] == offset and dt.fields[name][0].itemsize == nbytes
        assert kind == _C_KIND.get(ctype, "ptr" if ctype.endswith("*") else "?"), (name, ctype)


def test_a_changed_layout_is_caught(monkeypatch):
    """The check can fail: two fields swapped on the Python side."""
    spec = list(KERNEL_ARGS["gather"])
    spec[1], spec[2] = spec[2], spec[1]
    monkeypatch.setitem(KERNEL_ARGS, "gather", tuple(spec))
    monkeypatch.setattr("spsample.gpu._args._DTYPES", {})
    _, fields = native.kernels.kernel_arg_layouts()["gather"]
    assert list(arg_dtype("gather").names) != [name for name, *_ in fields]


def test_pack_args_fills_by_name_and_refuses_mistakes():
    address = {None: 0}
    a, b = np.zeros(2), np.zeros(3)
    address.update({id(a): 8, id(b): 16})
    words = pack_args("lw_fastgcn", lambda x: 0 if x is None else address[id(x)], M=4, s=2, hw=7,
                      k0=1, k1=2, batch_ids=a, cumulative=None, n=9, last_positive=3,
                      total=0.5, keys=b)
    assert words.dtype == np.int64 and words.size == len(KERNEL_ARGS["lw_fastgcn"])
    assert words[:6].tolist() == [4, 2, 7, 1, 2, 8] and words[6] == 0 and words[10] == 16
    assert words[9:10].view(np.float64)[0] == 0.5
    ptr = lambda x: 0  # noqa: E731
    with pytest.raises(TypeError, match="missing fields \\['value'\\]"):
        pack_args("lw_normalise", ptr, E=1, vrow=None, total=None)
    with pytest.raises(TypeError, match="unknown fields \\['extra'\\]"):
        pack_args("lw_normalise", ptr, E=1, vrow=None, total=None, value=None, extra=1)
    with pytest.raises(TypeError, match="'vrow' takes an array"):
        pack_args("lw_normalise", ptr, E=1, vrow=5, total=None, value=None)
    with pytest.raises(TypeError, match="'E' takes a number"):
        pack_args("lw_normalise", ptr, E=a, vrow=None, total=None, value=None)


def test_the_emulator_refuses_arguments_of_another_size():
    words = np.zeros(len(KERNEL_ARGS["gather"]) + 1, dtype=np.int64)
    with pytest.raises(ValueError, match="argument struct"):
        native.kernels.emulate("gather", 1, 1, words, 1, -1)
