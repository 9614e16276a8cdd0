"""Statistics for the coordinate-descent k-means kernels ([F3KM] eqs. (6)-(8)): column moments
and per-cluster sums, counts, squared norms and group counts."""
import numpy as np
from numba import prange

from ..._config import CHUNK_SIZE
from ..jit import njit
from ..parallel import renamed

__all__ = ["column_moments", "centered_sq_norms", "cluster_statistics"]


@njit
def column_moments(X, mean, sumsq):
    """Column means and centred sums of squares, one column at a time in row order.

    Each column's result depends on that column only, so any split of the columns over parties
    gives the same bits.

    Parameters
    ----------
    X : float32 or float64 (n, d)     IN
    mean : float64 (d,)               OUT, column means
    sumsq : float64 (d,)              OUT, ``sum_i (X[i, f] - mean[f])^2``
    """
    n, d = X.shape
    mean[:] = 0.0
    for i in range(n):
        for f in range(d):
            mean[f] += np.float64(X[i, f])
    for f in range(d):
        mean[f] /= n
    sumsq[:] = 0.0
    for i in range(n):
        for f in range(d):
            t = np.float64(X[i, f]) - mean[f]
            sumsq[f] += t * t


def _centered_sq_norms(X, shift, out):
    n, d = X.shape
    for c in prange(-(-n // CHUNK_SIZE)):
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            acc = 0.0
            for f in range(d):
                t = np.float64(X[i, f]) - shift[f]
                acc += t * t
            out[i] = acc


centered_sq_norms = njit(parallel=True)(
    renamed(_centered_sq_norms, "_parallel"))
centered_sq_norms.__doc__ = """OUT ``out`` float64 (n,): ``|X[i] - shift|^2`` (the x_i^T x_i of
[F3KM] Alg. 1 line 2).

IN ``X`` float32/float64 (n, d), ``shift`` float64 (d,).
"""


@njit
def cluster_statistics(X, shift, labels, codes, sums, counts, sqnorms, group_counts):
    """Statistics of [F3KM] Alg. 1 line 2 / [F3KM] Alg. 5 line 2 from scratch, in row order.

    Parameters
    ----------
    X : float32 or float64 (n, d)   IN
    shift : float64 (d,)            IN, subtracted from every row
    labels : int64 (n,)             IN, values in [0, k)
    codes : int64 (n, A)            IN, protected group of each row for each of the party's A
                                    attributes, as a column index into ``group_counts``
    sums : float64 (k, d)           OUT, X f_m
    counts : int64 (k,)             OUT, f_m^T f_m
    sqnorms : float64 (k,)          OUT, ``|sums[m]|^2`` = f_m^T X^T X f_m
    group_counts : int64 (L, k)     OUT, p_l^T f_m
    """
    n, d = X.shape
    k = sums.shape[0]
    sums[:] = 0.0
    counts[:] = 0
    group_counts[:] = 0
    for i in range(n):
        m = labels[i]
        counts[m] += 1
        for f in range(d):
            sums[m, f] += np.float64(X[i, f]) - shift[f]
        for a in range(codes.shape[1]):
            group_counts[codes[i, a], m] += 1
    for m in range(k):
        acc = 0.0
        for f in range(d):
            acc += sums[m, f] * sums[m, f]
        sqnorms[m] = acc
