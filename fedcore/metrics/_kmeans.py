"""Clustering metrics."""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from .._validation import (check_array, check_int, check_labels, check_sample_weight,
                           check_scalar, check_weighted_range, weight_names)
from ..kernels.kmeans.distances import assign_nearest

__all__ = ["inertia", "federated_inertia", "loss_ratio"]


def inertia(X: ArrayLike, centers: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
    """k-means objective ([MUFC] eq. (1)): weighted sum of squared distances to the nearest center.

    Examples
    --------
    >>> inertia([[0.0], [2.0]], [[0.0], [3.0]])
    1.0
    """
    X = check_array(X, "X", distance_range=True)
    centers = check_array(centers, "centers", dtype=("float64",), distance_range=True)
    if centers.shape[1] != X.shape[1]:
        raise ValueError(f"Argument 'centers' must have {X.shape[1]} features (as X), "
                         f"got {centers.shape[1]}")
    weights = check_sample_weight(sample_weight, X.shape[0])
    check_weighted_range([X, centers], float(weights.sum()), weight_names(sample_weight))
    labels = np.empty(X.shape[0], dtype=np.int64)
    distances = np.empty(X.shape[0])
    assign_nearest(X, np.ascontiguousarray(centers.T), labels, distances)
    return float(weights @ distances)


def federated_inertia(clients: Iterable[tuple[ArrayLike, ArrayLike, ArrayLike]],
                      server_centers: ArrayLike) -> float:
    """Federated k-means objective ([MUFC] eq. (2)) with induced global clusters ([MUFC] Def. 3.1).

    Parameters
    ----------
    clients : iterable of (X_l, labels_l, centers_l)
        Each client's points, their local cluster labels and the local centers as the server sees
        them (for MUFC the quantized centers). A point of local cluster ``j`` belongs to the server
        cluster whose center is nearest to ``centers_l[j]``.
    server_centers : array-like of shape (K, d)
    """
    server = check_array(server_centers, "server_centers", dtype=("float64",),
                         distance_range=True)
    checked = _check_clients(clients, server.shape[1])
    check_weighted_range([X_l for X_l, _, _ in checked] + [server],
                         float(sum(X_l.shape[0] for X_l, _, _ in checked)), ("clients",))
    server_t = np.ascontiguousarray(server.T)
    total = 0.0
    for X_l, labels_l, centers_l in checked:
        induced = np.empty(centers_l.shape[0], dtype=np.int64)
        assign_nearest(centers_l, server_t, induced, np.empty(centers_l.shape[0]))
        diff = np.asarray(X_l, dtype=np.float64) - server[induced[labels_l]]
        total += float(np.einsum("ij,ij->", diff, diff))
    return total


def _check_clients(clients, n_features):
    """The ``(X_l, labels_l, centers_l)`` of :func:`federated_inertia`, validated: arrays of
    ``n_features`` columns, labels indexing the rows of ``centers_l``."""
    if isinstance(clients, (str, bytes)) or not hasattr(clients, "__iter__"):
        raise TypeError("Argument 'clients' must be an iterable of (X_l, labels_l, centers_l), "
                        f"got {type(clients).__name__}")
    out = []
    for l, client in enumerate(clients):
        try:
            X_l, labels_l, centers_l = client
        except (TypeError, ValueError):
            raise ValueError(f"Argument 'clients' must hold (X_l, labels_l, centers_l) triples, "
                             f"got {type(client).__name__} at index {l}") from None
        name = f"clients[{l}]"
        X_l = check_array(X_l, f"{name}[0]", min_samples=0, distance_range=True)
        centers_l = check_array(centers_l, f"{name}[2]", dtype=("float64",), distance_range=True)
        for part, A in (("[0]", X_l), ("[2]", centers_l)):
            if A.shape[1] != n_features:
                raise ValueError(f"Argument '{name}{part}' has {A.shape[1]} features, the server "
                                 f"centers {n_features}")
        labels_l = check_labels(labels_l, f"{name}[1]", X_l.shape[0], centers_l.shape[0])
        out.append((X_l, labels_l, centers_l))
    return out


def loss_ratio(objective: float, X: ArrayLike, n_clusters: int, *,
               candidate_centers: ArrayLike | None = None, n_init: int = 10,
               random_state: np.random.Generator | int | None = None) -> float:
    """``objective / reference`` with ``reference`` the best k-means objective fedcore can find.

    The reference is the lowest inertia among ``n_init`` k-means++ + Lloyd runs on ``X`` (the
    phi*_c approximation of [MUFC] Section 6) and, when ``candidate_centers`` are given, a Lloyd
    run started from them; since Lloyd from the candidate never does worse than the candidate's
    own centralized objective, the ratio of a federated or centralized objective of those centers
    is >= 1 rather than dipping below 1 because of a weak reference. When the reference is 0 (X
    has at most ``n_clusters`` distinct rows) the ratio is 1.0 for a zero objective and infinite
    otherwise, as in :func:`fedcore.metrics.relative_error`.
    """
    from ..algorithms.kmeans.lloyd import KMeans

    objective = check_scalar(objective, "objective", min_value=0.0)
    X = check_array(X, "X", distance_range=True)
    k = check_int(n_clusters, "n_clusters", min_value=1)
    start = None
    if candidate_centers is not None:
        start = check_array(candidate_centers, "candidate_centers", dtype=("float64",),
                            distance_range=True)
        if start.shape != (k, X.shape[1]):
            raise ValueError(f"Argument 'candidate_centers' must have shape ({k}, {X.shape[1]}) "
                             f"(n_clusters, features of X), got {start.shape}")
    best = KMeans(k, n_init=n_init, random_state=random_state).fit(X).inertia_
    if start is not None:
        best = min(best, KMeans(k, init=start).fit(X).inertia_)
    if best == 0.0:  # X has at most n_clusters distinct rows
        return 1.0 if objective == 0.0 else float("inf")
    return objective / best
