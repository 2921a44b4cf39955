"""Counter-based random numbers: Philox4x32-10 keyed by what is being sampled.

Every random word spsample draws is a pure function of

    key     = (seed mod 2**32, seed div 2**32)
    counter = (block, vertex, (epoch << 8) | hop, batch)

where ``batch`` is the *global* minibatch id, ``hop`` the hop (layer) counted from the seeds
starting at 1, ``vertex`` the vertex being expanded (node-wise) or the candidate column
(layer-wise), and ``block`` indexes consecutive groups of four 32-bit words. A minibatch's
samples therefore do not depend on how many minibatches share a bulk, on the number of ranks
or replicas, on thread count or on the device. Philox4x32-10 is the generator of Salmon et al.,
"Parallel random numbers: as easy as 1, 2, 3" (SC'11), as in NumPy's ``Philox`` and cuRAND.

Word ``i`` of a stream is word ``i % 4`` of block ``i // 4``.

Derived quantities are defined with integer or exactly-rounded float operations only, so every
implementation (NumPy, C++, CUDA) gets the same bits:

* ``uniform_int(word, m) = (word * m) >> 32``, in ``[0, m)`` (Lemire's multiply-shift; bias at
  most ``m / 2**32``).
* ``open_unit(word) = (word + 0.5) / 2**32``, in ``(0, 1)``.
* ``neg_log(x) = -ln(x)`` through :func:`det_log`, a fixed sequence of IEEE additions,
  multiplications and divisions (no libm, no fused multiply-add).
* ``unit53(w0, w1) = ((w0 >> 5) * 2**26 + (w1 >> 6)) / 2**53``, in ``[0, 1)``.
"""

import numpy as np

__all__ = [
    "PHILOX_M0", "PHILOX_M1", "PHILOX_W0", "PHILOX_W1",
    "MAX_EPOCH", "MAX_HOP", "NO_VERTEX",
    "philox4x32", "philox4x32_scalar", "stream_words", "stream_word_scalar",
    "hop_word", "split_seed", "uniform_int", "open_unit", "det_log", "neg_log", "unit53",
    "det_log_scalar",
]

PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9
PHILOX_W1 = 0xBB67AE85
_MASK32 = 0xFFFFFFFF

MAX_HOP = 255
MAX_EPOCH = 2**24 - 1
#: Counter word 1 when a stream belongs to no vertex (e.g. FastGCN's per-minibatch draws).
NO_VERTEX = 0xFFFFFFFF


def split_seed(seed):
    """``(k0, k1)``: the Philox key of a seed in ``[0, 2**64)``."""
    seed = int(seed)
    return seed & _MASK32, (seed >> 32) & _MASK32


def hop_word(epoch, hop):
    """Counter word 2: ``(epoch << 8) | hop``."""
    return ((int(epoch) & MAX_EPOCH) << 8) | (int(hop) & MAX_HOP)


# ---------------------------------------------------------------------------- vectorised
def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on arrays of counters.

    Parameters
    ----------
    c0, c1, c2, c3 : array_like of uint32-valued ints, broadcastable to one shape
        The four counter words.
    k0, k1 : int
        The key words.

    Returns
    -------
    tuple of four uint64 arrays holding 32-bit values, of the broadcast shape.
    """
    m0 = np.uint64(PHILOX_M0)
    m1 = np.uint64(PHILOX_M1)
    mask = np.uint64(_MASK32)
    s32 = np.uint64(32)
    x0, x1, x2, x3 = np.broadcast_arrays(*(np.asarray(c, dtype=np.uint64)
                                           for c in (c0, c1, c2, c3)))
    x0, x1, x2, x3 = (a & mask for a in (x0, x1, x2, x3))
    ka, kb = int(k0) & _MASK32, int(k1) & _MASK32
    for _ in range(10):
        p0 = m0 * x0
        p1 = m1 * x2
        kaa = np.uint64(ka)
        kbb = np.uint64(kb)
        x0, x1, x2, x3 = ((p1 >> s32) ^ x1 ^ kaa, p1 & mask, (p0 >> s32) ^ x3 ^ kbb, p0 & mask)
        ka = (ka + PHILOX_W0) & _MASK32
        kb = (kb + PHILOX_W1) & _MASK32
    return x0, x1, x2, x3


def stream_words(index, vertex, hop_w, batch, key):
    """Word ``index`` of the streams ``(vertex, hop_w, batch)``, elementwise.

    Parameters
    ----------
    index : array of int64, shape (m,)
        Word index within each stream (word ``i`` = word ``i % 4`` of block ``i // 4``).
    vertex, batch : array of int64, shape (m,) or scalars
    hop_w : int
        :func:`hop_word` of (epoch, hop).
    key : (int, int)
        :func:`split_seed` of the seed.

    Returns
    -------
    ndarray of uint64 holding 32-bit values, shape (m,).
    """
    index = np.asarray(index, dtype=np.int64)
    block = index >> 2
    lane = index & 3
    w = philox4x32(block, vertex, hop_w, batch, key[0], key[1])
    out = np.where(lane == 0, w[0], w[1])
    out = np.where(lane == 2, w[2], out)
    return np.where(lane == 3, w[3], out)


def uniform_int(word, m):
    """``(word * m) >> 32``: an integer in ``[0, m)`` from a 32-bit word (``m < 2**32``)."""
    return ((np.asarray(word, dtype=np.uint64) * np.asarray(m, dtype=np.uint64))
            >> np.uint64(32)).astype(np.int64)


def open_unit(word):
    """``(word + 0.5) / 2**32``: a float64 in the open interval (0, 1)."""
    return (np.asarray(word, dtype=np.float64) + 0.5) * (1.0 / 4294967296.0)


def unit53(w0, w1):
    """A float64 in ``[0, 1)`` with 53 random bits from two 32-bit words."""
    a = (np.asarray(w0, dtype=np.uint64) >> np.uint64(5)).astype(np.float64)
    b = (np.asarray(w1, dtype=np.uint64) >> np.uint64(6)).astype(np.float64)
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


# 1/(2k+1) for k = 0..9: coefficients of atanh's series, spelled as float64 literals so that
# C++ and CUDA use the very same bits.
_ATANH_COEF = tuple(1.0 / (2 * k + 1) for k in range(10))
_LN2 = 0.6931471805599453
_SQRT_HALF = 0.7071067811865476


def det_log(x):
    """Natural logarithm of positive float64 ``x`` from +, *, / only (bit-reproducible).

    ``x = m * 2**e`` with ``m`` in ``[sqrt(1/2), sqrt(2))``; ``ln m = 2 atanh(z)``,
    ``z = (m - 1) / (m + 1)``, ``|z| < 0.1716``, summed by Horner's rule to ``z**19``
    (truncation error below 1e-16 relative). Every implementation evaluates the same
    expression tree, so the result is identical on every device.
    """
    x = np.asarray(x, dtype=np.float64)
    m, e = np.frexp(x)
    small = m < _SQRT_HALF
    m = np.where(small, m * 2.0, m)
    e = np.where(small, e - 1, e).astype(np.float64)
    z = (m - 1.0) / (m + 1.0)
    z2 = z * z
    p = np.full_like(z, _ATANH_COEF[-1])
    for c in _ATANH_COEF[-2::-1]:
        p = p * z2 + c
    return 2.0 * z * p + e * _LN2


def neg_log(x):
    """``-det_log(x)``: an Exp(1) variate when ``x`` is uniform on (0, 1)."""
    return -det_log(x)


# ---------------------------------------------------------------------------- scalar oracle
def _mulhilo(a, b):
    p = a * b
    return p >> 32, p & _MASK32


def philox4x32_scalar(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on one counter, in plain Python integers (the reference)."""
    x0, x1, x2, x3 = (int(c) & _MASK32 for c in (c0, c1, c2, c3))
    ka, kb = int(k0) & _MASK32, int(k1) & _MASK32
    for _ in range(10):
        hi0, lo0 = _mulhilo(PHILOX_M0, x0)
        hi1, lo1 = _mulhilo(PHILOX_M1, x2)
        x0, x1, x2, x3 = hi1 ^ x1 ^ ka, lo1, hi0 ^ x3 ^ kb, lo0
        ka = (ka + PHILOX_W0) & _MASK32
        kb = (kb + PHILOX_W1) & _MASK32
    return x0, x1, x2, x3


def stream_word_scalar(index, vertex, hop_w, batch, key):
    """Scalar :func:`stream_words`."""
    return philox4x32_scalar(index >> 2, vertex, hop_w, batch, key[0], key[1])[index & 3]


def det_log_scalar(x):
    """Scalar :func:`det_log` in Python floats (the same expression tree)."""
    import math

    m, e = math.frexp(float(x))
    if m < _SQRT_HALF:
        m, e = m * 2.0, e - 1
    z = (m - 1.0) / (m + 1.0)
    z2 = z * z
    p = _ATANH_COEF[-1]
    for c in _ATANH_COEF[-2::-1]:
        p = p * z2 + c
    return 2.0 * z * p + float(e) * _LN2
