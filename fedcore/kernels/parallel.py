"""Serial and parallel variants of one chunked kernel, compiled from one Python function."""
import contextlib
import functools
import types

import numba
from numba import njit

from .._config import CHUNK_SIZE, NUMBA_CACHE

__all__ = ["chunked_kernel", "single_threaded_kernels"]


def renamed(fn, suffix):
    # A distinct qualname gives each variant its own on-disk cache entry.
    clone = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + suffix,
                               fn.__defaults__, fn.__closure__)
    clone.__qualname__ = fn.__qualname__ + suffix
    clone.__doc__ = fn.__doc__
    return clone


def chunked_kernel(fn):
    """Compile ``fn`` (whose loop over row chunks is a ``prange``) serially and in parallel.

    The returned function runs the parallel variant when the first argument has more rows than one
    chunk and Numba has more than one thread, else the serial one, which avoids waking a thread
    pool for small inputs. Both variants compute the same chunk partials merged in the same order,
    so the result is bit-identical either way. ``.serial``, ``.parallel`` and ``.py_func`` expose
    the variants and the Python function.
    """
    serial = njit(cache=NUMBA_CACHE, nogil=True)(renamed(fn, "_serial"))
    parallel = njit(cache=NUMBA_CACHE, nogil=True, parallel=True)(renamed(fn, "_parallel"))

    @functools.wraps(fn)
    def dispatch(*args):
        if args[0].shape[0] > CHUNK_SIZE and numba.get_num_threads() > 1:
            return parallel(*args)
        return serial(*args)

    dispatch.serial = serial
    dispatch.parallel = parallel
    dispatch.py_func = fn
    return dispatch


@contextlib.contextmanager
def single_threaded_kernels():
    """Run Numba kernels on one thread in the calling thread, restoring the count afterwards.

    Clients hold few rows, so one kernel call is short and the cost of waking a parallel team
    dominates; parallelism goes over clients instead
    (:func:`fedcore.federation.protocol.run_clients`). Numba's thread count is thread-local, so
    this never affects other threads.
    """
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)
