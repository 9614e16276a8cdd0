"""How fedcore compiles its kernels: :func:`njit` is Numba's, with fedcore's defaults."""
import numba
from numba.core.cpu_options import ParallelOptions

from .._config import NUMBA_CACHE

__all__ = ["njit"]


def njit(*args, **options):
    """:func:`numba.njit` with fedcore's defaults: compiled kernels cached on disk (unless
    ``FEDCORE_NUMBA_CACHE=0``), the GIL released, and no C-callback wrapper. fedcore never passes a
    kernel as a first-class function, the only use of that wrapper, and building it costs about
    7 ms of compile time per kernel. Explicit options override the defaults.

    ``parallel=True`` parallelizes the kernel's explicit ``prange`` loops only. Numba would also
    turn every whole-array expression (``a[:] = 0``, ``np.zeros(n)``, ...) into a parallel loop
    of its own, each compiled as a separate function, for fills that take microseconds (Lloyd's
    parallel loop with the float32 screen compiled in 8.0 s so, 6.5 s without).
    """
    options.setdefault("cache", NUMBA_CACHE)
    options.setdefault("nogil", True)
    options.setdefault("no_cfunc_wrapper", True)
    if options.get("parallel") is True:
        options["parallel"] = _PRANGE_ONLY
    return numba.njit(*args, **options)


# An instance, not a dict: Numba empties a dict as it reads it, so a kernel's second
# specialisation would compile with every conversion on. Numba copies the instance it is given.
_PRANGE_ONLY = ParallelOptions({"prange": True, "comprehension": False, "reduction": False,
                                "inplace_binop": False, "setitem": False, "numpy": False,
                                "stencil": False, "fusion": False})
