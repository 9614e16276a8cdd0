"""Array copies inside kernels, as element loops, and a read-ahead of rows.

A slice assignment between arrays (``out[:n] = a[:n]``, ``out[:, :] = a.T``) compiles Numba's
shape-mismatch message, string formatting included (2.2 s of ``fedcore run``'s first start, 2.3 s
of the first float32 fit), and ``np.ascontiguousarray(a.T)`` a copy routine for every layout.
Kernels copy with these loops instead; they are inlined, so each copy is a plain loop that LLVM
vectorizes.

:func:`read_rows` reads a run of rows into the caches before a kernel reads some of them in an
order the hardware prefetcher cannot follow (Lloyd's bounded E-steps, see
:data:`fedcore.kernels.kmeans.lloyd.READ_AHEAD_MIN_BYTES`); :func:`prefetch` asks for one cache
line without waiting for it (greedy seeding's pass, see
:func:`fedcore.kernels.kmeans.seeding.hints_pay`).
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .jit import njit

__all__ = ["CACHE_LINE", "copy_into", "transpose_into", "row_range", "read_only", "read_rows",
           "prefetch"]

# Bytes of one cache line (x86-64 and most ARM cores): read_rows reads one element per line.
CACHE_LINE = 64


@njit(inline="always")
def copy_into(out, a, n):
    """OUT ``out[:n] = a[:n]`` (1-D; the two must not overlap unless they are the same array).
    Raises if either is shorter than ``n``, as the slice assignment's shape check did, with a
    constant message (nothing to format)."""
    if out.shape[0] < n or a.shape[0] < n:
        raise ValueError("copy_into: an array is shorter than n")
    for i in range(n):
        out[i] = a[i]


@njit(inline="always")
def transpose_into(a, out):
    """OUT ``out`` (m, n) = ``a.T`` for ``a`` (n, m)."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[j, i] = a[i, j]


@njit(inline="always")
def row_range(lo, hi):
    """``np.arange(lo, hi)`` as int64 (``lo <= hi``), by a loop: Numba's ``np.arange`` took 0.16 s
    to compile in a first fit, where nothing else needs it."""
    out = np.empty(hi - lo, dtype=np.int64)
    for j in range(hi - lo):
        out[j] = lo + j
    return out


def read_only(X):
    """A read-only view of X (Python, not compiled). Numba types read-only and writeable arrays
    apart: kernels that never write X are given this view, so that every call shares the
    specialisations of read-only X (a read-only X, a memory map or a shared buffer, compiled
    Lloyd's whole loop again: 10-14 s), and kernels of different modules that call the same
    compiled helper on X share it."""
    view = X.view()
    view.flags.writeable = False
    return view


@njit(inline="always")
def read_rows(X, lo, hi, sink):
    """Read rows ``lo:hi`` of the 2-D ``X`` into the CPU's caches, in order, one element per cache
    line of each row (every ``64 / itemsize``-th and the last), so that a kernel which then reads
    some of the rows in an order the hardware prefetcher cannot follow finds them in cache. OUT
    ``sink[0]``: the sum of the elements read, stored only so that the reads are kept (unchanged
    when no row is read).

    These are loads, not prefetch hints: hints for a whole run of rows at once were measured to
    recover a fifth of the gain (Lloyd, uniform 1e5 x 50 float64, k = 10: 1.04x against 1.20x)."""
    d = X.shape[1]
    if lo >= hi or d == 0:
        return
    step = max(1, CACHE_LINE // X.itemsize)
    acc = 0.0
    for i in range(lo, hi):
        for f in range(0, d - 1, step):
            acc += X[i, f]
        acc += X[i, d - 1]
    sink[0] = acc


@intrinsic
def prefetch(typingctx, a, index):
    """Hint to the CPU that element ``index`` of the contiguous array ``a`` (flat, in elements
    from its first) will be read soon: LLVM's ``llvm.prefetch`` (a read, locality 2: into the
    second-level cache and beyond on x86-64). A hint only: it never faults, whatever the
    address, and changes no value."""
    if not isinstance(a, types.Array):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        address = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [address.type, i32, i32, i32]),
            "llvm.prefetch.p0")
        builder.call(hint, [address, i32(0), i32(2), i32(1)])
        return context.get_dummy_value()
    return types.void(a, types.intp), codegen
