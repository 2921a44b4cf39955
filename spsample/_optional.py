"""Optional dependencies, probed once; a clear ImportError saying what to install otherwise."""

import importlib
import threading
import warnings

from ._errors import MissingDependencyError

_INSTALL = {
    "torch": "pip install torch  (or: pip install 'spsample[torch]')",
    "mpi4py": "pip install mpi4py mpich  (or: pip install 'spsample[mpi]')",
    "cupy": "pip install cupy-cuda13x  (or: pip install 'spsample[gpu]')",
    "torch_geometric": "pip install torch_geometric",
    "tqdm": "pip install tqdm",
    "matplotlib": "pip install matplotlib",
}
_CACHE = {}


def have(name):
    """Whether ``name`` imports (probed once)."""
    if name not in _CACHE:
        try:
            _CACHE[name] = importlib.import_module(name)
        except Exception:  # ImportError, or a broken install raising something else
            _CACHE[name] = None
    return _CACHE[name] is not None


def require(name, feature):
    """Import ``name`` or raise :class:`MissingDependencyError` naming ``feature``."""
    if have(name):
        return _CACHE[name]
    hint = _INSTALL.get(name, "pip install " + name)
    raise MissingDependencyError(f"{feature} needs {name}: {hint}")


def import_torch(feature):
    return require("torch", feature)


_PYG = {}
_LOCK = threading.Lock()


def _probe():
    with _LOCK:
        if "module" not in _PYG:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    warnings.simplefilter("ignore", UserWarning)
                    import torch_geometric
                    import torch_geometric.data
                    import torch_geometric.loader
                    import torch_geometric.nn
                    import torch_geometric.sampler
                _PYG["module"] = torch_geometric
            except Exception as exc:  # ImportError, or a broken install raising something else
                _PYG["module"] = None
                _PYG["error"] = exc
    return _PYG["module"]


def have_pyg():
    """Whether ``torch_geometric`` imports (probed once)."""
    return _probe() is not None


def import_pyg(feature):
    """``torch_geometric`` or :class:`MissingDependencyError` naming ``feature``."""
    mod = _probe()
    if mod is None:
        raise MissingDependencyError(f"{feature} needs torch_geometric: pip install "
                                     f"torch_geometric ({_PYG.get('error')})")
    return mod
