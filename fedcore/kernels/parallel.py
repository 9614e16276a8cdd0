"""Serial and parallel variants of one chunked kernel, compiled from one Python function."""
import contextlib
import functools
import types

import numba

from .._config import CHUNK_SIZE
from .jit import njit

__all__ = ["chunked_kernel", "single_threaded_kernels", "last_chunk_first", "n_chunks",
           "PARALLEL_MIN_CHUNKS", "PARALLEL_MIN_ELEMENTS", "use_parallel"]

# A parallel team pays off from PARALLEL_MIN_CHUNKS chunks of rows, or from two chunks when the
# rows are wide (PARALLEL_MIN_ELEMENTS elements); below that the serial variant runs, and is then
# the only one compiled. Measured on 2 cores (KMeans.fit, medians of 9): 10k x 10, k = 8 (3
# chunks): 24 ms serial against 38 ms parallel; 12k x 50, k = 10 (3 chunks, 600k elements):
# 128 against 110 ms; 20k x 10, k = 10 (5 chunks): 60 against 54 ms.
PARALLEL_MIN_CHUNKS = 4
PARALLEL_MIN_ELEMENTS = 1 << 19


def n_chunks(n):
    """Number of row chunks for ``n`` rows (at least 1)."""
    return max(1, -(-n // CHUNK_SIZE))


def use_parallel(n_rows, n_elements=0):
    """Whether a chunked kernel over ``n_rows`` rows (``n_elements`` elements in all) runs its
    parallel variant: Numba has more than one thread, and the rows fill at least
    :data:`PARALLEL_MIN_CHUNKS` chunks, or at least two with :data:`PARALLEL_MIN_ELEMENTS`
    elements. Both variants give the same bits."""
    if numba.get_num_threads() < 2 or n_rows <= CHUNK_SIZE:
        return False
    return (n_rows > (PARALLEL_MIN_CHUNKS - 1) * CHUNK_SIZE
            or n_elements >= PARALLEL_MIN_ELEMENTS)


def renamed(fn, suffix, namespace=None):
    # A distinct qualname gives each variant its own on-disk cache entry. ``namespace``: the
    # globals the clone sees (default: fn's module's).
    clone = types.FunctionType(fn.__code__, fn.__globals__ if namespace is None else namespace,
                               fn.__name__ + suffix, fn.__defaults__, fn.__closure__)
    clone.__qualname__ = fn.__qualname__ + suffix
    clone.__doc__ = fn.__doc__
    return clone


def _variant_globals(fn, variant):
    """``fn``'s globals with each chunked kernel that it calls by name replaced by that kernel's
    ``variant`` (``"serial"`` or ``"parallel"``); None (its module's own) where it calls none.
    A copy taken now: every global name ``fn`` reads must be bound before ``fn`` is defined."""
    called = {name: fn.__globals__[name] for name in fn.__code__.co_names
              if getattr(fn.__globals__.get(name), "chunked", False)}
    if not called:
        return None
    namespace = dict(fn.__globals__)
    namespace.update({name: getattr(kernel, variant) for name, kernel in called.items()})
    return namespace


def chunked_kernel(fn):
    """Compile ``fn`` (whose loop over row chunks is a ``prange``, or which calls chunked kernels)
    serially and in parallel.

    The returned function runs the parallel variant when :func:`use_parallel` holds for the first
    argument (its rows and its size), else the serial one, which avoids waking (and compiling) a
    thread pool for small inputs. Both variants compute the same chunk partials merged in the same
    order, so the result is bit-identical either way. ``.serial``, ``.parallel`` and ``.py_func``
    expose the variants and the Python function.

    A chunked kernel that ``fn`` calls by a global name (bound before ``fn`` is defined) runs in
    the same variant: its serial one in the serial variant, its parallel one in the parallel
    variant, each compiled once on its own. A kernel with no ``prange`` of its own (a driver of
    chunked kernels) compiles its parallel variant without Numba's parallel transformation.
    """
    serial = njit(renamed(fn, "_serial", _variant_globals(fn, "serial")))
    # (a kernel without a prange of its own is parallel by the chunked kernels it calls only)
    parallel = njit(parallel="prange" in fn.__code__.co_names)(
        renamed(fn, "_parallel", _variant_globals(fn, "parallel")))

    @functools.wraps(fn)
    def dispatch(*args):
        if use_parallel(args[0].shape[0], args[0].size):
            return parallel(*args)
        return serial(*args)

    dispatch.serial = serial
    dispatch.parallel = parallel
    dispatch.py_func = fn
    dispatch.chunked = True
    return dispatch


@njit(inline="always")
def last_chunk_first(r, n_chunks):
    """The chunk that iteration ``r`` of a ``prange(n_chunks)`` over row chunks takes: the last
    chunk first, then the others in order.

    Numba's static schedule gives the first threads one iteration more where the threads do not
    divide the chunks, so the last chunk, the only one that may be short, goes to a thread with
    one chunk more instead of one with fewer: 1e5 rows in chunks of 4,096 (24.4 chunks) split
    53,248 and 46,752 rows over 2 threads, and 50,848 and 49,152 so. A kernel that keeps each
    chunk's results in the chunk's own place gives the same bits either way."""
    return r - 1 if r > 0 else n_chunks - 1


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
