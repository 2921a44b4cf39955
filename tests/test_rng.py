import math

import numpy as np
import pytest

from spsample import _rng

# Known-answer vectors of Random123 (kat_vectors: philox4x32 10 ...).
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr,key,expected", KAT)
def test_philox_known_answers(ctr, key, expected):
    assert _rng.philox4x32_scalar(*ctr, *key) == expected
    got = _rng.philox4x32(*(np.array([c]) for c in ctr), *key)
    assert tuple(int(w[0]) for w in got) == expected


def test_vector_equals_scalar_streams():
    rng = np.random.default_rng(1)
    idx = rng.integers(0, 100, 500)
    vertex = rng.integers(0, 2**32 - 1, 500)
    batch = rng.integers(0, 2**32, 500)
    key = _rng.split_seed(2**40 + 17)
    hw = _rng.hop_word(9, 3)
    vec = _rng.stream_words(idx, vertex, hw, batch, key)
    for i in range(500):
        scalar = _rng.stream_word_scalar(int(idx[i]), int(vertex[i]), hw, int(batch[i]), key)
        assert int(vec[i]) == scalar


def test_det_log_accurate_and_reproducible():
    x = np.concatenate([np.random.default_rng(2).random(20000), [1.0, 0.5, 2**-32, 1e-300]])
    x = x[x > 0]
    d = _rng.det_log(x)
    np.testing.assert_allclose(d, np.log(x), rtol=1e-15, atol=1e-300)
    assert all(_rng.det_log_scalar(v) == dv for v, dv in zip(x[:3000], d[:3000]))
    assert _rng.det_log_scalar(1.0) == 0.0


def test_uniform_helpers_ranges():
    words = np.array([0, 1, 2**31, 2**32 - 1], dtype=np.uint64)
    assert _rng.uniform_int(words, 7).tolist() == [0, 0, 3, 6]
    u = _rng.open_unit(words)
    assert np.all((u > 0) & (u < 1))
    v = _rng.unit53(words, words[::-1])
    assert np.all((v >= 0) & (v < 1))
    assert math.isclose(float(_rng.unit53(np.uint64(2**32 - 1), np.uint64(2**32 - 1))), 1 - 2**-53)


def test_hop_word_layout():
    assert _rng.hop_word(0, 1) == 1
    assert _rng.hop_word(3, 2) == (3 << 8) | 2
