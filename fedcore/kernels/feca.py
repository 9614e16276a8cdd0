"""FeCA kernels ([FeCA]): per-cluster statistics of a client's solution, and the server's
greedy grouping of client centroids into balls ([FeCA] Alg. 5)."""
import warnings

import numpy as np
from numba import prange

from .._config import CHUNK_SIZE
from .jit import njit

__all__ = ["feca_statistics", "greedy_ball_groups"]


@njit(parallel=True)
def feca_statistics(X, labels, centers, counts, sums, costs, max_sq):
    """Per-cluster statistics of a client's Lloyd solution (inputs of [FeCA] Alg. 2, 3 and 4).

    IN ``X`` float32/float64 (n, d); ``labels`` int64 (n,) in [0, k); ``centers`` float64 (k, d).
    OUT ``counts`` float64 (k,) points per cluster; ``sums`` float64 (k, d) coordinate sums;
    ``costs`` float64 (k,) the cluster cost ``G_i = sum ||x - c_i||^2`` about the centroid ``c_i``
    ([FeCA] eq. (3)); ``max_sq`` float64 (k,) the largest squared distance ``||x - c_i||^2`` in
    the cluster (``r'_i ** 2`` of [FeCA] Alg. 3 line 3 and [FeCA] Alg. 4 line 2; 0 for an empty
    cluster).

    Rows are processed in fixed chunks of ``CHUNK_SIZE`` with per-chunk partials merged in chunk
    order, so the results are bit-identical for any thread count.
    """
    n, d = X.shape
    k = centers.shape[0]
    n_chunks = max(1, -(-n // CHUNK_SIZE))
    part_counts = np.zeros((n_chunks, k))
    part_sums = np.zeros((n_chunks, k, d))
    part_costs = np.zeros((n_chunks, k))
    part_max = np.zeros((n_chunks, k))
    for c in prange(n_chunks):
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            a = labels[i]
            acc = 0.0
            for f in range(d):
                x = np.float64(X[i, f])
                t = x - centers[a, f]
                acc += t * t
                part_sums[c, a, f] += x
            part_counts[c, a] += 1.0
            part_costs[c, a] += acc
            if acc > part_max[c, a]:
                part_max[c, a] = acc
    counts[:] = 0.0
    sums[:, :] = 0.0
    costs[:] = 0.0
    max_sq[:] = 0.0
    for c in range(n_chunks):
        for a in range(k):
            counts[a] += part_counts[c, a]
            costs[a] += part_costs[c, a]
            if part_max[c, a] > max_sq[a]:
                max_sq[a] = part_max[c, a]
            for f in range(d):
                sums[a, f] += part_sums[c, a, f]


@njit
def greedy_ball_groups(centers, radii, order, groups):
    """Greedy grouping of [FeCA] Alg. 5 lines 2-8: balls around centroids in priority order.

    IN ``centers`` float64 (N, d); ``radii`` float64 (N,); ``order`` int64 (N,), a permutation of
    ``0..N-1`` giving the picking priority ([FeCA] Alg. 5 line 4: largest radius first).
    OUT ``groups`` int64 (N,): the group of each centroid, numbered in order of formation.
    Returns the number of groups.

    The first ungrouped centroid ``i`` in ``order`` opens group ``g``, which takes every ungrouped
    centroid ``t`` with ``||c_t - c_i||^2 <= r_i^2`` (line 5; the centroid itself is always in).
    Membership depends on the set of ungrouped centroids only, never on their storage order.
    """
    n, d = centers.shape
    groups[:] = -1
    g = 0
    for o in range(n):
        i = order[o]
        if groups[i] >= 0:
            continue
        r2 = radii[i] * radii[i]
        for t in range(n):
            if groups[t] >= 0:
                continue
            acc = 0.0
            for f in range(d):
                diff = centers[t, f] - centers[i, f]
                acc += diff * diff
            if acc <= r2:
                groups[t] = g
        g += 1
    return g


def __getattr__(name):
    # Named cluster_statistics before 0.2, like the unrelated kernel of fedcore.kernels.cd.
    if name == "cluster_statistics":
        warnings.warn("fedcore.kernels.feca.cluster_statistics is now feca_statistics",
                      DeprecationWarning, stacklevel=2)
        return feca_statistics
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
