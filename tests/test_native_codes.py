"""The codes of a lowered plan are defined once (native/device/codes.cuh), exported by the
extension and read from it by the Python lowering: no other header or module spells them."""

import pathlib
import re

import pytest

from spsample import native

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEADER = ROOT / "native" / "device" / "codes.cuh"
LISTS = {"frontier": "SPSAMPLE_FRONTIER_KINDS", "select": "SPSAMPLE_SELECT_RULES",
         "key": "SPSAMPLE_STREAM_KEYS", "value": "SPSAMPLE_VALUE_OPS",
         "link": "SPSAMPLE_LINK_MODES"}
ENUMS = {"frontier": native.Frontier, "select": native.SelectRule, "key": native.StreamKey,
         "value": native.ValueOp, "link": native.LinkMode}

pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="native kernels not built")


def _header_lists():
    text = HEADER.read_text()
    out = {}
    for key, macro in LISTS.items():
        start = text.index(f"#define {macro}(X)")
        body = []
        for line in text[start:].splitlines():
            body.append(line)
            if not line.rstrip().endswith("\\"):
                break
        entries = re.findall(r"X\((\w+), (\d+), (\w+)\)", "\n".join(body))
        out[key] = {py: int(value) for _, value, py in entries}
    return out


def test_the_extension_exports_the_header_codes():
    codes = native.kernels.codes()
    header = _header_lists()
    assert all(header.values())
    for key in LISTS:
        assert codes[key] == header[key]
    assert codes["value_stack"] == native.VALUE_STACK == 32


def test_the_python_enums_are_the_extension_codes():
    codes = native.kernels.codes()
    for key, enum in ENUMS.items():
        assert {m.name: int(m) for m in enum} == codes[key]


_CPP_ENUMERATOR = re.compile(r"\b(?:F|S|K|V|LINK)_[A-Z_]+\s*=\s*\d")


def test_no_other_header_defines_the_codes():
    sources = sorted((ROOT / "native").rglob("*.h")) + sorted((ROOT / "native").rglob("*.cu*"))
    defining = [p.name for p in sources if p != HEADER and _CPP_ENUMERATOR.search(p.read_text())]
    assert defining == []
    assert _CPP_ENUMERATOR.search(HEADER.read_text()) is None   # X-lists, no "NAME = value"


def test_the_check_for_copies_can_fail():
    assert _CPP_ENUMERATOR.search("enum : int64_t { F_NEW_NODES = 0, F_ROWS = 4 };")


def test_no_python_module_spells_the_codes():
    pattern = re.compile(r"^\s*_?(?:FRONTIER|S_[A-Z_]+|V_[A-Z_]+|LINK_MODES)\b[^=\n]*=.*\d", re.M)
    hits = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "spsample").rglob("*.py"))
            if pattern.search(p.read_text(encoding="utf-8"))]
    assert hits == []


def test_the_lowering_writes_the_extension_codes():
    import numpy as np

    import spsample
    from spsample.engine._lowering import lower
    from spsample.engine._run import trace

    g = spsample.Graph.from_edge_index([0, 1, 2, 3], [1, 2, 3, 0], num_nodes=4)
    batch_ids = np.arange(2, dtype=np.int64)
    plans = trace(spsample.NodeWise([2, 1]), g, batch_ids, 0, 0)
    lowered = lower(plans, g, 2)
    first, second = lowered.spec["hops"]
    rules = native.kernels.codes()["select"]
    assert first["select"] == second["select"] == rules["UNIFORM"]
    assert first["frontier"][0] == native.kernels.codes()["frontier"]["NEW_NODES"]


def test_the_rules_constants_are_the_python_ones():
    """The kernels' selection constants (device/rules.cuh) are the ones the NumPy evaluation and
    the reference use (engine/_lazy.py): a change on one side only would change the samples of
    one path."""
    from spsample.engine import _lazy
    constants = native.kernels.codes()["rule_constants"]
    assert constants == {"REJECTION_ATTEMPTS": _lazy.REJECTION_ATTEMPTS,
                         "ALIAS_ATTEMPTS": _lazy.ALIAS_ATTEMPTS,
                         "ALIAS_SHARE_MAX": _lazy.ALIAS_SHARE_MAX}
