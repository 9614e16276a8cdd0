"""Array copies inside kernels, as element loops.

A slice assignment between arrays (``out[:n] = a[:n]``, ``out[:, :] = a.T``) compiles Numba's
shape-mismatch message, string formatting included (2.2 s of ``fedcore run``'s first start, 2.3 s
of the first float32 fit), and ``np.ascontiguousarray(a.T)`` a copy routine for every layout.
Kernels copy with these loops instead; they are inlined, so each copy is a plain loop that LLVM
vectorizes.
"""
from .jit import njit

__all__ = ["copy_into", "transpose_into"]


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
