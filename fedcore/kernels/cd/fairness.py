"""Fairness terms of [F3KM] eqs. (27)-(28), (30) for the coordinate-descent k-means kernels.

The per-cluster group-ratio penalty and its change under moves, in the factored form the row
objectives of ``cd_kmeans.py`` use.
"""
import numpy as np

from ..jit import njit

__all__ = ["fair_tables", "fairness_change", "fairness_lagrangian"]


@njit(inline="always")
def _ratio_term(c, n, p, theta, u, rho, remove):
    """Lagrangian change of one (group, cluster) pair when a row with membership ``p`` (0 or 1)
    joins (``remove`` False: (c, n) -> (c + p, n + 1)) or is the row being taken out
    (``remove`` True: (c - p, n - 1) -> (c, n)) of a cluster. Eqs. (27)-(28), factored.
    """
    if remove:
        if n <= 1.0:  # the row alone: G(p, 1) - G(0, 0) with G(., 0) = 0
            t = theta - p
            return u * t + 0.5 * rho * t * t
        r = c / n
        r0 = (c - p) / (n - 1.0)
        dr = (n * p - c) / (n * (n - 1.0))
        return -u * dr + 0.5 * rho * dr * (r + r0 - 2.0 * theta)
    if n <= 0.0:  # joining an empty cluster: G(p, 1) - 0
        t = theta - p
        return u * t + 0.5 * rho * t * t
    r = c / n
    r1 = (c + p) / (n + 1.0)
    dr = (n * p - c) / (n * (n + 1.0))
    return -u * dr + 0.5 * rho * dr * (r1 + r - 2.0 * theta)


@njit
def fair_tables(group_counts, counts, theta, u, rho, fair_scale, base, correction):
    """Per-cluster fairness terms of [F3KM] eqs. (27)-(28) for the current statistics.

    The fairness part of ``phi(i, m)`` is ``base[w, m] + sum_a correction[w, codes[i, a], m]``
    with ``w = 1`` when ``m`` is the row's own cluster ([F3KM] eq. (27)) and ``w = 0`` otherwise
    ([F3KM] eq. (28)): ``base`` sums every group's term as if the row were not a member,
    ``correction`` swaps in the member's term for the row's own groups (one per attribute).
    O(L k) per call, so a row costs O(A k) instead of O(L k).

    Parameters
    ----------
    group_counts : int64 (L, k)        IN
    counts : int64 (k,)                IN
    theta, u : float64 (L, k)          IN, auxiliary and dual variables (Theta_h, U_h)
    rho : float                        IN, penalty
    fair_scale : float                 IN, weight of the fairness terms against the k-means part
    base : float64 (2, k)              OUT
    correction : float64 (2, L, k)     OUT
    """
    L, k = group_counts.shape
    base[:] = 0.0
    for w in range(2):
        remove = w == 1
        for m in range(k):
            n = np.float64(counts[m])
            acc = 0.0
            for g in range(L):
                c = np.float64(group_counts[g, m])
                out = _ratio_term(c, n, 0.0, theta[g, m], u[g, m], rho, remove)
                inn = _ratio_term(c, n, 1.0, theta[g, m], u[g, m], rho, remove)
                acc += out
                correction[w, g, m] = fair_scale * (inn - out)
            base[w, m] = fair_scale * acc


@njit(inline="always")
def _pair_change(c0, n0, c1, n1, theta, u, rho):
    # G(c1, n1) - G(c0, n0) for one (group, cluster) pair, G(., 0) = 0.
    if n0 <= 0.0 and n1 <= 0.0:
        return 0.0
    if n0 <= 0.0:
        t = theta - c1 / n1
        return u * t + 0.5 * rho * t * t
    if n1 <= 0.0:
        t = theta - c0 / n0
        return -(u * t + 0.5 * rho * t * t)
    r0 = c0 / n0
    r1 = c1 / n1
    dr = (c1 * n0 - c0 * n1) / (n0 * n1)
    return -u * dr + 0.5 * rho * dr * (r1 + r0 - 2.0 * theta)


@njit
def fairness_change(group_counts, counts, dgroups, dcounts, theta, u, rho, fair_scale):
    """Change of the fairness part of the Lagrangian ([F3KM] eq. (24)) under the deltas of
    :func:`move_deltas`, times ``fair_scale``. IN only."""
    L, k = group_counts.shape
    total = 0.0
    for m in range(k):
        n0 = np.float64(counts[m])
        n1 = n0 + dcounts[m]
        for g in range(L):
            if dcounts[m] == 0 and dgroups[g, m] == 0:
                continue
            c0 = np.float64(group_counts[g, m])
            total += _pair_change(c0, n0, c0 + dgroups[g, m], n1, theta[g, m], u[g, m], rho)
    return fair_scale * total


@njit
def fairness_lagrangian(group_counts, counts, theta, u, rho):
    """Fairness part of [F3KM] eq. (24),
    ``sum over non-empty m, l of u (theta - c/n) + rho/2 (...)^2``."""
    L, k = group_counts.shape
    total = 0.0
    for m in range(k):
        if counts[m] <= 0:
            continue
        n = np.float64(counts[m])
        for g in range(L):
            t = theta[g, m] - group_counts[g, m] / n
            total += u[g, m] * t + 0.5 * rho * t * t
    return total
