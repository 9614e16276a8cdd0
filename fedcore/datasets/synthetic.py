"""Synthetic data generators with known cluster structure."""
from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_int, check_random_state, check_scalar, check_sample_weight

__all__ = ["make_gaussian_mixture", "load_gaussian", "load_mufc_standin", "MUFC_SHAPES"]


def _to_unit_cube(X, *others):
    """One affine map (per-feature shift, one common scale) taking X into [0, 1]^d.

    A common scale keeps Euclidean geometry (cluster shapes, ratios of distances) intact.
    """
    low = X.min(axis=0)
    scale = float((X.max(axis=0) - low).max())
    scale = scale if scale > 0 else 1.0
    return tuple((A - low) / scale for A in (X,) + others)


def make_gaussian_mixture(n_samples: int, n_features: int, n_clusters: int, *,
                          cluster_std: float = 0.1, weights: ArrayLike | None = None,
                          random_state: np.random.Generator | int | None = None,
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Spherical Gaussian clusters around centers drawn uniformly in the unit hypercube.

    Cluster sizes are exact: ``round(weights * n_samples)`` with the remainder given to the
    largest clusters, so imbalanced shapes (the sizes of [MUFC] Appendix M) are reproducible.
    The result is mapped into [0, 1]^d by one affine map (per-feature shift, common scale).

    Parameters
    ----------
    n_samples, n_features, n_clusters : int
    cluster_std : float, standard deviation of every coordinate before the map to the unit cube
    weights : array-like of shape (n_clusters,), default=None (equal sizes)
        Relative cluster sizes; every cluster gets at least one point.
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64 in [0, 1]
    y : ndarray of shape (n_samples,), int64 true cluster of each row
    centers : ndarray of shape (n_clusters, n_features), the true centers after the same map

    Examples
    --------
    >>> X, y, centers = make_gaussian_mixture(300, 2, 3, random_state=0)
    >>> X.shape, bool(X.min() >= 0 and X.max() <= 1), [int(c) for c in np.bincount(y)]
    ((300, 2), True, [100, 100, 100])
    """
    n = check_int(n_samples, "n_samples", min_value=1)
    d = check_int(n_features, "n_features", min_value=1)
    k = check_int(n_clusters, "n_clusters", min_value=1, max_value=n)
    std = check_scalar(cluster_std, "cluster_std", min_value=0.0)
    rng = check_random_state(random_state)
    sizes = _cluster_sizes(n, k, weights)
    centers = rng.random((k, d))
    y = np.repeat(np.arange(k, dtype=np.int64), sizes)
    X = centers[y] + std * rng.standard_normal((n, d))
    perm = rng.permutation(n)
    X, y = X[perm], y[perm]
    X, centers = _to_unit_cube(X, centers)
    return X, y, centers


def _cluster_sizes(n, k, weights):
    w = np.ones(k) if weights is None else check_sample_weight(weights, k, "weights")
    if w.sum() <= 0:
        raise ValueError(f"Argument 'weights' must have a positive sum, got {w.tolist()}")
    sizes = np.maximum(1, np.floor(w / w.sum() * n)).astype(np.int64)
    while sizes.sum() > n:  # the floor of one per cluster overshot
        sizes[np.argmax(sizes)] -= 1
    order = np.argsort(-w, kind="stable")
    for i in range(n - int(sizes.sum())):
        sizes[order[i % k]] += 1
    return sizes


def load_gaussian(random_state: np.random.Generator | int | None = 0,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Gaussian set of [MUFC] Appendix M: 10 clusters x 3000 points, d = 10.

    Spherical clusters with variance 0.5 around centers uniform in the unit hypercube, mapped to
    [0, 1]^10. Generated deterministically from ``random_state`` (default 0): fedcore's embedded
    default dataset, needing no download. Returns ``(X, y, centers)``.
    """
    return make_gaussian_mixture(30000, 10, 10, cluster_std=float(np.sqrt(0.5)),
                                 random_state=random_state)


# The datasets of [MUFC] Appendix M: n, d, K, cluster sizes (None: equal), clients L.
MUFC_SHAPES = {
    "celltype": (12009, 10, 4, (6506, 2328, 2201, 974), 100),
    "postures": (74975, 15, 5, (19772, 17340, 15141, 12225, 10497), 100),
    "covtype": (15120, 52, 7, (3742, 3105, 2873, 2307, 1482, 886, 725), 100),
    "gaussian": (30000, 10, 10, None, 100),
    "femnist": (36725, 784, 62, tuple(np.linspace(1234, 282, 62).round().astype(int)), 100),
    "tcga": (1904, 57, 4, (735, 503, 390, 276), 10),
    "tmi": (1126, 984, 4, (934, 125, 46, 21), 10),
}


def load_mufc_standin(name: Literal["celltype", "postures", "covtype", "gaussian", "femnist",
                                    "tcga", "tmi"],
                      cluster_std: float = 0.1,
                      random_state: np.random.Generator | int | None = 0,
                      ) -> tuple[np.ndarray, np.ndarray, int]:
    """Synthetic stand-in with the shape of one of the datasets of [MUFC] Appendix M.

    ``name`` is one of ``MUFC_SHAPES`` (celltype, postures, covtype, gaussian, femnist, tcga, tmi):
    same n, d, K and cluster sizes as [MUFC] Appendix M lists (FEMNIST: sizes proportional to an
    even spread from its largest, 1234, to its smallest, 282, scaled to n); "gaussian" is
    :func:`load_gaussian`. Returns
    ``(X, y, n_clients)`` with the number of clients L of [MUFC] Appendix M.
    """
    if not isinstance(name, str):
        raise TypeError(f"Argument 'name' must be a str, one of {sorted(MUFC_SHAPES)}, got "
                        f"{type(name).__name__}")
    if name not in MUFC_SHAPES:
        raise ValueError(f"Argument 'name' must be one of {sorted(MUFC_SHAPES)}, got {name!r}")
    n, d, k, sizes, n_clients = MUFC_SHAPES[name]
    if name == "gaussian":
        X, y, _ = load_gaussian(random_state)
        return X, y, n_clients
    X, y, _ = make_gaussian_mixture(n, d, k, cluster_std=cluster_std, weights=sizes,
                                    random_state=random_state)
    return X, y, n_clients
