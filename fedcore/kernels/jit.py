"""How fedcore compiles its kernels: :func:`njit` is Numba's, with fedcore's defaults."""
import numba

from .._config import NUMBA_CACHE

__all__ = ["njit"]


def njit(*args, **options):
    """:func:`numba.njit` with fedcore's defaults: compiled kernels cached on disk (unless
    ``FEDCORE_NUMBA_CACHE=0``), the GIL released, and no C-callback wrapper. fedcore never passes a
    kernel as a first-class function, the only use of that wrapper, and building it costs about
    7 ms of compile time per kernel. Explicit options override the defaults."""
    options.setdefault("cache", NUMBA_CACHE)
    options.setdefault("nogil", True)
    options.setdefault("no_cfunc_wrapper", True)
    return numba.njit(*args, **options)
