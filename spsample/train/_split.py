"""Random node splits (for datasets that ship none, e.g. the MUSAE graphs)."""

import numpy as np

from .._errors import ArgumentError
from .._validate import as_index_array, as_int, fail

__all__ = ["random_split"]


def random_split(labels, *, seed=0, fractions=(0.6, 0.2, 0.2)):
    """A random train/val/test split of the labelled nodes, keyed by ``seed``.

    Parameters
    ----------
    labels : array_like of int, shape (n,)
        ``-1`` marks an unlabelled node (left out of every part).
    seed : int
        Seeds NumPy's PCG64; the same seed gives the same split everywhere.
    fractions : (float, float, float)
        Train, validation and test shares, each ``> 0``, summing to 1 (to within 1e-9).

    Returns
    -------
    dict with ``"train"``, ``"val"``, ``"test"``: sorted int64 node ids, disjoint.

    Examples
    --------
    >>> from spsample.train import random_split
    >>> parts = random_split([0, 1, 0, 1, -1, 1, 0, 0, 1, 1], seed=0)
    >>> [len(parts[k]) for k in ("train", "val", "test")]
    [5, 2, 2]
    """
    where = "random_split"
    labels = as_index_array(where, "labels", labels, allow_empty=False)
    seed = as_int(where, "seed", seed, minimum=0)
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.shape != (3,) or not np.all(fr > 0) or abs(fr.sum() - 1.0) > 1e-9:
        fail(ArgumentError, where, "fractions", "must be three positive shares summing to 1",
             tuple(fractions))
    labelled = np.flatnonzero(labels >= 0)
    order = labelled[np.random.default_rng(seed).permutation(labelled.size)]
    n_train = int(round(fr[0] * labelled.size))
    n_val = int(round(fr[1] * labelled.size))
    parts = np.split(order, [n_train, n_train + n_val])
    return {key: np.sort(part) for key, part in zip(("train", "val", "test"), parts)}
