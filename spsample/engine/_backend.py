"""Array backends: the pair ``(xp, sp)`` the primitives are written against.

The backend is resolved once from the type of the input arrays (as CuPy's
``get_array_module``) and stored on the objects that use it; hot loops never branch on
global flags. CuPy is imported only when a CuPy array is actually seen.
"""

import numpy as np
import scipy.sparse

__all__ = ["Backend", "NUMPY", "get_backend"]


class Backend:
    """A namespace of array modules.

    Attributes
    ----------
    name : str
        ``"numpy"`` or ``"cupy"``.
    xp : module
        The array module (``numpy`` or ``cupy``).
    sp : module
        The sparse module (``scipy.sparse`` or ``cupyx.scipy.sparse``).
    """

    __slots__ = ("name", "xp", "sp")

    def __init__(self, name, xp, sp):
        self.name, self.xp, self.sp = name, xp, sp

    def asnumpy(self, arr):
        """A host (NumPy) view or copy of ``arr``."""
        return arr if self.xp is np else self.xp.asnumpy(arr)

    def __repr__(self):
        return f"Backend({self.name!r})"


NUMPY = Backend("numpy", np, scipy.sparse)
_CUPY = None


def get_backend(*arrays):
    """The backend of the given arrays: CuPy if any of them is a CuPy array, else NumPy."""
    global _CUPY
    for arr in arrays:
        if type(arr).__module__.startswith("cupy"):
            if _CUPY is None:
                import cupy
                import cupyx.scipy.sparse

                _CUPY = Backend("cupy", cupy, cupyx.scipy.sparse)
            return _CUPY
    return NUMPY
