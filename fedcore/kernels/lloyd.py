"""One weighted Lloyd iteration: assignment, per-center weighted sums and inertia.

Rows are split into fixed chunks of ``CHUNK_SIZE``; each chunk writes its own partial sums and the
partials are merged serially in chunk order, so every output is bit-identical for any thread count.
"""
import numpy as np
from numba import njit, prange

from .._config import CHUNK_SIZE, NUMBA_CACHE
from .distances import nearest_center

__all__ = ["lloyd_iteration"]


@njit(cache=NUMBA_CACHE, nogil=True, parallel=True)
def lloyd_iteration(X, weights, centers, labels, distances, center_sums, weight_sums):
    """Assign every row to its nearest center and accumulate the M-step statistics.

    Parameters
    ----------
    X : float32 or float64 (n, d)          IN
    weights : float64 (n,)                 IN, >= 0
    centers : float64 (k, d)               IN
    labels : int64 (n,)                    OUT, nearest center (lowest index on ties)
    distances : float64 (n,)               OUT, squared distance to that center
    center_sums : float64 (k, d)           OUT, sum of ``weights[i] * X[i]`` per label
    weight_sums : float64 (k,)             OUT, sum of ``weights[i]`` per label

    Returns
    -------
    inertia : float
        ``sum_i weights[i] * distances[i]`` for the given centers (MUFC eq. (1), weighted).
    """
    n, d = X.shape
    k = centers.shape[0]
    centers_t = np.ascontiguousarray(centers.T)
    n_chunks = max(1, -(-n // CHUNK_SIZE))
    part_sums = np.zeros((n_chunks, k, d))
    part_weights = np.zeros((n_chunks, k))
    part_inertia = np.zeros(n_chunks)
    for c in prange(n_chunks):
        buf = np.empty(k)
        acc = 0.0
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            j, dist = nearest_center(X, i, centers_t, buf)
            labels[i] = j
            distances[i] = dist
            w = weights[i]
            acc += w * dist
            part_weights[c, j] += w
            for f in range(d):
                part_sums[c, j, f] += w * np.float64(X[i, f])
        part_inertia[c] = acc
    center_sums[:] = 0.0
    weight_sums[:] = 0.0
    inertia = 0.0
    for c in range(n_chunks):
        inertia += part_inertia[c]
        for j in range(k):
            weight_sums[j] += part_weights[c, j]
            for f in range(d):
                center_sums[j, f] += part_sums[c, j, f]
    return inertia
