"""Generators with known true centers for federated centroid recovery ([FeCA] Sections 4.4, 6.1).

``make_stochastic_ball``
    The Stochastic Ball Model of [FeCA] Theorem 4.1 ([FeCA] eqs. (5), (7), (8)): points uniform
    in ``k`` disjoint balls of a common radius ``r``.
``make_s_sets``
    An S-sets-like benchmark ([SSetsGen]): 15 Gaussian clusters in 2-D at four overlap
    levels S1..S4, on the S-sets' coordinate scale (about ``[0, 10^6]^2``), with the generating
    means as true centers.
"""
from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_array, check_int, check_random_state, check_scalar

__all__ = ["make_stochastic_ball", "make_s_sets", "S_SET_LEVELS"]


def _balanced_sizes(n, k):
    sizes = np.full(k, n // k, dtype=np.int64)
    sizes[: n - int(sizes.sum())] += 1
    return sizes


def _uniform_in_ball(rng, n, d):
    """``n`` points uniform in the unit ball of R^d (direction ~ normal, radius ~ U^(1/d))."""
    direction = rng.standard_normal((n, d))
    norms = np.sqrt((direction ** 2).sum(axis=1))
    norms[norms == 0.0] = 1.0  # probability 0; keeps the point at the center instead of NaN
    return direction / norms[:, None] * rng.random(n)[:, None] ** (1.0 / d)


def _separated_points(rng, k, d, separation, box, max_tries=1000):
    """``k`` points uniform in ``[0, box]^d`` with all pairwise distances >= ``separation``.

    Random sequential placement with restarts; raises ``ValueError`` when it cannot succeed.
    """
    for _ in range(max_tries):
        points = np.empty((k, d))
        n = 0
        for _ in range(200 * k):
            p = rng.random(d) * box
            if n == 0 or np.sqrt(((points[:n] - p) ** 2).sum(axis=1)).min() >= separation:
                points[n] = p
                n += 1
                if n == k:
                    return points
    raise ValueError(f"Could not place {k} centers {separation} apart in a box of side {box}")


def make_stochastic_ball(n_samples: int, n_features: int = 2, n_clusters: int = 3, *,
                         radius: float = 1.0, separation: float | None = None,
                         centers: ArrayLike | None = None,
                         random_state: np.random.Generator | int | None = None,
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points uniform in ``k`` disjoint balls of radius ``radius`` ([FeCA] eqs. (5), (7), (8)).

    The mixture has equal weights ``1/k`` ([FeCA] eq. (7)); cluster sizes are exactly balanced
    (``n_samples // k``, the remainder to the first clusters) rather than multinomial, so every ball
    holds points. Within a ball, points are uniform: direction from a standard normal, distance to
    the center ``radius * U^(1/d)``.

    Parameters
    ----------
    n_samples : int >= n_clusters
    n_features : int >= 1, ignored when ``centers`` is given
    n_clusters : int >= 1, ignored when ``centers`` is given
    radius : float > 0, the common radius ``r`` of the balls
    separation : float, default=None
        Minimum distance between centers drawn at random (uniform in a cube of side
        ``separation * max(2, 2 k^(1/d))`` with rejection); default ``4 * radius``. Must exceed
        ``2 * radius`` so the balls are disjoint. Ignored when ``centers`` is given.
    centers : array-like of shape (n_clusters, n_features), default=None
        Fixed true centers; their balls must be disjoint (pairwise distance > 2 radius).
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,), int64 ball of each row
    centers : ndarray of shape (n_clusters, n_features), the true centers theta*_s

    Examples
    --------
    >>> X, y, c = make_stochastic_ball(300, 2, 3, radius=1.0, separation=10.0, random_state=0)
    >>> bool((np.sqrt(((X - c[y]) ** 2).sum(axis=1)) <= 1.0).all())
    True
    """
    r = check_scalar(radius, "radius", min_value=0.0, include_min=False)
    rng = check_random_state(random_state)
    if centers is None:
        d = check_int(n_features, "n_features", min_value=1)
        k = check_int(n_clusters, "n_clusters", min_value=1)
        sep = 4.0 * r if separation is None else check_scalar(separation, "separation")
        if sep <= 2.0 * r:
            raise ValueError(f"Argument 'separation' must exceed 2 * radius = {2.0 * r} so the "
                             f"balls are disjoint, got {sep}")
        theta = _separated_points(rng, k, d, sep, sep * max(2.0, 2.0 * k ** (1.0 / d)))
    else:
        theta = check_array(centers, "centers", dtype=("float64",))
        k, d = theta.shape
        if k > 1:
            gaps = np.sqrt(((theta[:, None, :] - theta[None, :, :]) ** 2).sum(axis=2))
            gaps[np.diag_indices(k)] = np.inf
            if gaps.min() <= 2.0 * r:
                i, j = np.unravel_index(np.argmin(gaps), gaps.shape)
                raise ValueError(f"Argument 'centers': balls {i} and {j} overlap (distance "
                                 f"{gaps[i, j]} <= 2 * radius = {2.0 * r})")
    n = check_int(n_samples, "n_samples", min_value=k)
    y = np.repeat(np.arange(k, dtype=np.int64), _balanced_sizes(n, k))
    X = theta[y] + r * _uniform_in_ball(rng, n, d)
    perm = rng.permutation(n)
    return X[perm], y[perm], theta.copy()


# Per level: geometric-mean scale of a cluster as a fraction of the minimum center separation.
# Calibrated (6 seeds) so that the fraction of points nearer to another true center than to their
# own is about 0.4%, 3%, 14% and 20% (S1..S4), i.e. purity at the true centers of about 0.996,
# 0.97, 0.86, 0.80, the best purities on the S-sets in [FeCA] Table 4. With these levels the
# best of 30 k-means++ runs on all points lands at the true centers' local optimum (the same
# inertia to 1e-3), as on the published S-sets, where the best methods of [FeCA] come within
# "l2 x 10^4" of 1.0, 1.9, 3.6 and 4.7 ([FeCA] Table 1); Lloyd started at the true centers is
# 0.8, 1.3, 4.2 and 6.5 away here.
S_SET_LEVELS = {1: 0.16, 2: 0.23, 3: 0.38, 4: 0.46}
_S_SIDE = 1.0e6          # S-sets coordinates lie in about [0, 10^6]^2
_S_SEPARATION = 1.6e5    # minimum distance between the 15 true centers
_S_MARGIN = 1.0e5        # centers are kept this far from the border of the square


def _peaked_cloud(rng, n):
    """``n`` points whose distance to the origin is half-normal, at uniform angles.

    The density peaks at the center and has Gaussian tails, like the clusters of the published
    S-sets (a dense core a few percent of the spread wide, then a long fringe); the mean squared
    norm is 2, as for a standard normal in R^2.
    """
    angle = rng.random(n) * (2.0 * np.pi)
    radius = np.abs(rng.standard_normal(n)) * np.sqrt(2.0)
    return np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])


def check_s_level(level):
    """The S-sets level as an int in 1..4, from 1..4 or "S1".."S4" (any case, e.g. "s2")."""
    if isinstance(level, str):
        key = level.strip().upper()
        if key not in ("S1", "S2", "S3", "S4"):
            raise ValueError(f"Argument 'level' must be 1, 2, 3, 4 or 'S1'..'S4', got {level!r}")
        return int(key[1])
    if isinstance(level, numbers.Integral) and not isinstance(level, bool):
        if int(level) not in S_SET_LEVELS:
            raise ValueError(f"Argument 'level' must be 1, 2, 3, 4 or 'S1'..'S4', got {level!r}")
        return int(level)
    raise TypeError(f"Argument 'level' must be an int or a str, got {type(level).__name__}")


def make_s_sets(level: int | str = 1, *, n_samples: int = 5000, n_clusters: int = 15,
                random_state: np.random.Generator | int | None = None,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An S-sets-like benchmark: 15 Gaussian clusters in 2-D at overlap level S1, S2, S3 or S4.

    Like the S-sets ([SSetsGen]) used in [FeCA] Table 1: 5000 points, 15 clusters of about equal
    size, coordinates on the S-sets' scale (centers in ``[10^5, 9 * 10^5]^2``, at least
    ``1.6 * 10^5`` apart), and overlap growing from S1 to S4.
    Each cluster is peaked at its center, as the published clusters are: the distance to the
    center is half-normal at a uniform angle (:func:`_peaked_cloud`), then stretched to an axis
    ratio in ``[1, 2]`` at a random orientation; its geometric-mean scale (root-mean-square per
    axis) is ``S_SET_LEVELS[level] * 1.6e5`` (0.16, 0.23, 0.38, 0.46 of the minimum separation).
    The calibration is given next to ``S_SET_LEVELS``. These are not the published point sets
    (those are :func:`fedcore.datasets.load_s_sets`): they are generated from ``random_state``,
    and the true centers returned are the generating means. On this scale the "l2-distance x 10^4"
    of [FeCA] is ``fedcore.metrics.center_distance(centers, true_centers) / 1e4``.

    Parameters
    ----------
    level : int in {1, 2, 3, 4} or str in {"S1", "S2", "S3", "S4"}
    n_samples : int, default=5000
    n_clusters : int, default=15
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    X : ndarray of shape (n_samples, 2), float64
    y : ndarray of shape (n_samples,), int64 generating cluster of each row
    centers : ndarray of shape (n_clusters, 2), the generating means

    Examples
    --------
    >>> X, y, c = make_s_sets("S1", random_state=0)
    >>> X.shape, c.shape, int(np.bincount(y).min()) >= 300
    ((5000, 2), (15, 2), True)
    """
    level = check_s_level(level)
    k = check_int(n_clusters, "n_clusters", min_value=1)
    n = check_int(n_samples, "n_samples", min_value=k)
    rng = check_random_state(random_state)
    box = _S_SIDE - 2.0 * _S_MARGIN
    centers = _S_MARGIN + _separated_points(rng, k, 2, _S_SEPARATION, box)
    std = S_SET_LEVELS[level] * _S_SEPARATION
    sizes = _balanced_sizes(n, k)
    y = np.repeat(np.arange(k, dtype=np.int64), sizes)
    X = np.empty((n, 2))
    start = 0
    for j in range(k):
        ratio = np.sqrt(1.0 + rng.random())  # axis ratio ratio**2 in [1, 2]
        angle = rng.random() * np.pi
        rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
        scales = std * np.array([ratio, 1.0 / ratio])
        Z = _peaked_cloud(rng, sizes[j]) * scales
        X[start:start + sizes[j]] = centers[j] + Z @ rot.T
        start += sizes[j]
    perm = rng.permutation(n)
    return X[perm], y[perm], centers
