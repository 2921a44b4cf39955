"""Datasets shipped inside the package (``spsample/data/<name>.h5``)."""

from importlib import resources
from pathlib import Path

from .._errors import ArgumentError, DatasetNotFoundError
from .._validate import fail
from ._hdf5 import load

__all__ = ["embedded_names", "embedded_path", "load_cora"]


def embedded_names():
    """Names of the datasets shipped with spsample (``["cora"]``)."""
    root = resources.files("spsample.data")
    return sorted(p.name[:-3] for p in root.iterdir() if p.name.endswith(".h5"))


def embedded_path(name="cora"):
    """Path of the embedded dataset ``name``, a file in spsample's HDF5 layout.

    Raises
    ------
    ArgumentError
        ``name`` is not an embedded dataset (the message lists those that are).
    DatasetNotFoundError
        The package was installed without its data files, or from a zip archive.

    Examples
    --------
    >>> import spsample
    >>> spsample.io.embedded_path("cora").name
    'cora.h5'
    """
    names = embedded_names()
    if name not in names:
        fail(ArgumentError, "spsample.io.embedded_path", "name",
             f"is not an embedded dataset (available: {names})", name)
    res = resources.files("spsample.data") / f"{name}.h5"
    path = Path(str(res))
    if not path.is_file():
        raise DatasetNotFoundError(f"spsample.io.embedded_path: {name}.h5 is not a plain file "
                                   f"here ({res!r}); install spsample unzipped")
    return path


def load_cora(*, features=True):
    """The embedded Cora citation graph (Planetoid split).

    2,708 nodes, 10,556 CSR entries (5,278 undirected edges, no self-loops), 1,433 binary
    bag-of-words features stored as uint8, 7 classes, one split ``"default"`` of 140 / 500 /
    1,000 nodes. Made with ``spsample convert planetoid-cora cora.h5 --features-dtype uint8``
    (see ``spsample/data/README.md``); cast features with ``.astype(numpy.float32)`` to train.

    Examples
    --------
    >>> import spsample
    >>> ds = spsample.io.load_cora()
    >>> ds.num_nodes, ds.num_features, ds.num_classes, len(ds.train_idx)
    (2708, 1433, 7, 140)
    """
    return load(embedded_path("cora"), features=features)
