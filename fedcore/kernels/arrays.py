"""Array copies inside kernels, as element loops.

A slice assignment between arrays (``out[:n] = a[:n]``, ``out[:, :] = a.T``) compiles Numba's
shape-mismatch message, string formatting included (about 1.6 s the first time a process compiles
it, 2.3 s for the first float32 fit), and ``np.ascontiguousarray(a.T)`` a copy routine for every
layout. Kernels copy with these loops instead; they are inlined, so each copy is a plain loop that
LLVM vectorizes.
"""
from .jit import njit

__all__ = ["copy_into", "transpose_into"]


@njit(inline="always")
def copy_into(out, a):
    """OUT ``out[i] = a[i]`` for every ``i < len(a)`` (1-D; the two must not overlap unless they
    are the same array). Raises if ``out`` is shorter than ``a``, as the slice assignment did (a
    constant message: nothing to format)."""
    if out.shape[0] < a.shape[0]:
        raise ValueError("copy_into: out is shorter than a")
    for i in range(a.shape[0]):
        out[i] = a[i]


@njit(inline="always")
def transpose_into(a, out):
    """OUT ``out`` (m, n) = ``a.T`` for ``a`` (n, m)."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[j, i] = a[i, j]
