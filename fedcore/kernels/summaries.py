"""One-pass summaries of a data array (finiteness, magnitude, spread) without X-sized temporaries.

The validation and the k-means set-up read the whole array once or twice; NumPy's expressions for
the same (``np.isfinite(X).all()``, ``np.abs(X).max()``, ``np.var(X, axis=0)``) each allocate an
array as large as ``X`` (or an eighth of it), which these kernels do not.
"""
import numpy as np
from numba import njit

from .._config import NUMBA_CACHE

__all__ = ["scan_values", "mean_variance"]


@njit(cache=NUMBA_CACHE, nogil=True)
def scan_values(X):
    """``(bad, big)``: the flat index of the first NaN or infinity in ``X`` (-1 when every entry
    is finite) and the largest absolute finite value seen before it (0.0 for an empty array).

    IN ``X`` float32 or float64 (m,) (pass ``X.reshape(-1)`` of a C-contiguous array).
    """
    big = 0.0
    for i in range(X.shape[0]):
        v = np.float64(X[i])
        if not np.isfinite(v):
            return i, big
        big = max(big, abs(v))
    return -1, big


@njit(cache=NUMBA_CACHE, nogil=True)
def mean_variance(X):
    """Mean over features of each feature's population variance, in float64 (two passes: column
    means, then squared deviations, each summed in row order).

    IN ``X`` float32 or float64 (n, d), n >= 1.
    """
    n, d = X.shape
    means = np.zeros(d)
    for i in range(n):
        for f in range(d):
            means[f] += np.float64(X[i, f])
    for f in range(d):
        means[f] /= n
    sq = np.zeros(d)
    for i in range(n):
        for f in range(d):
            t = np.float64(X[i, f]) - means[f]
            sq[f] += t * t
    total = 0.0
    for f in range(d):
        total += sq[f] / n
    return total / d
