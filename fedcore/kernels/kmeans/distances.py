"""Squared Euclidean distances and nearest-center assignment.

Distances are sums of squared differences accumulated in float64 in feature order, never the
expanded form ``|x|^2 - 2 x.c + |c|^2`` (which cancels catastrophically for near points), so a
nearest-center argmin is exact up to one rounding per term. Centers are passed transposed,
``centers_t`` of shape (d, k), so that the inner loop runs over centers and vectorizes without
reassociating any sum.
"""
import numpy as np
from numba import prange

from ..._config import CHUNK_SIZE
from ..jit import njit
from ..parallel import chunked_kernel

__all__ = ["row_distances", "own_distance", "own_distances", "nearest_center", "nearest_two",
           "pairwise_sq_distances", "assign_nearest"]


@njit(inline="always")
def row_distances(X, i, centers_t, out):
    """OUT ``out`` float64 (k,): squared distances from ``X[i]`` to every center."""
    d, k = centers_t.shape
    out[:] = 0.0
    for f in range(d):
        xf = np.float64(X[i, f])
        for j in range(k):
            t = xf - centers_t[f, j]
            out[j] += t * t


@njit
def own_distance(X, i, centers, a):
    """Squared distance from ``X[i]`` to ``centers[a]`` (centers (k, d)): the same bits as
    :func:`row_distances` computes for that center."""
    acc = 0.0
    for f in range(X.shape[1]):
        t = np.float64(X[i, f]) - centers[a, f]
        acc += t * t
    return acc


@njit(inline="always")
def own_distances(X, rows, centers, which, out):
    """OUT ``out[r]``: :func:`own_distance` from ``X[rows[r]]`` to ``centers[which[r]]``, the
    same bits, for ``r < rows.shape[0]``.

    Four rows at a time: each sum is still one chain in feature order, but four independent
    chains run side by side instead of each row waiting on its own d additions in turn (wide rows
    are latency-bound: about 4 cycles per feature on one chain).
    """
    m = rows.shape[0]
    full = m - m % 4
    for r in range(0, full, 4):
        i0, i1, i2, i3 = rows[r], rows[r + 1], rows[r + 2], rows[r + 3]
        a0, a1, a2, a3 = which[r], which[r + 1], which[r + 2], which[r + 3]
        s0 = s1 = s2 = s3 = 0.0
        for f in range(X.shape[1]):
            t0 = np.float64(X[i0, f]) - centers[a0, f]
            t1 = np.float64(X[i1, f]) - centers[a1, f]
            t2 = np.float64(X[i2, f]) - centers[a2, f]
            t3 = np.float64(X[i3, f]) - centers[a3, f]
            s0 += t0 * t0
            s1 += t1 * t1
            s2 += t2 * t2
            s3 += t3 * t3
        out[r], out[r + 1], out[r + 2], out[r + 3] = s0, s1, s2, s3
    for r in range(full, m):
        out[r] = own_distance(X, rows[r], centers, which[r])


@njit(inline="always")
def nearest_center(X, i, centers_t, buf):
    """Return ``(j, dist)``: the nearest center (lowest index on ties) and its squared distance."""
    row_distances(X, i, centers_t, buf)
    best = 0
    best_d = buf[0]
    for j in range(1, buf.shape[0]):
        if buf[j] < best_d:
            best_d = buf[j]
            best = j
    return best, best_d


@njit
def nearest_two(X, i, centers_t, buf):
    """Return ``(j, dist, second)``: the nearest center (lowest index on ties), its squared
    distance and the squared distance to the nearest other center (+inf when k = 1). ``buf``
    holds every squared distance afterwards."""
    row_distances(X, i, centers_t, buf)
    a, dist, second = 0, buf[0], np.inf
    for j in range(1, buf.shape[0]):
        if buf[j] < dist:
            second, dist, a = dist, buf[j], j
        elif buf[j] < second:
            second = buf[j]
    return a, dist, second


@chunked_kernel
def pairwise_sq_distances(X, centers_t, out):
    """OUT ``out`` float64 (n, k): squared distances from each row of ``X`` to each center.

    IN ``X`` float32/float64 (n, d); ``centers_t`` float64 (d, k).
    """
    n = X.shape[0]
    for c in prange(-(-n // CHUNK_SIZE)):
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            row_distances(X, i, centers_t, out[i])


@chunked_kernel
def assign_nearest(X, centers_t, labels, distances):
    """OUT ``labels`` int64 (n,) nearest center (lowest index on ties),
    ``distances`` float64 (n,)."""
    n = X.shape[0]
    k = centers_t.shape[1]
    for c in prange(-(-n // CHUNK_SIZE)):
        buf = np.empty(k)
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            j, dist = nearest_center(X, i, centers_t, buf)
            labels[i] = j
            distances[i] = dist
