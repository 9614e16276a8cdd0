"""Clustering metrics."""
import numpy as np

from .._validation import check_array, check_sample_weight
from ..kernels.kmeans.distances import assign_nearest

__all__ = ["inertia", "federated_inertia", "loss_ratio"]


def inertia(X, centers, sample_weight=None):
    """k-means objective ([MUFC] eq. (1)): weighted sum of squared distances to the nearest center.

    Examples
    --------
    >>> inertia([[0.0], [2.0]], [[0.0], [3.0]])
    1.0
    """
    X = check_array(X, "X")
    centers = check_array(centers, "centers", dtype=("float64",))
    if centers.shape[1] != X.shape[1]:
        raise ValueError(f"Argument 'centers' must have {X.shape[1]} features (as X), "
                         f"got {centers.shape[1]}")
    weights = check_sample_weight(sample_weight, X.shape[0])
    labels = np.empty(X.shape[0], dtype=np.int64)
    distances = np.empty(X.shape[0])
    assign_nearest(X, np.ascontiguousarray(centers.T), labels, distances)
    return float(weights @ distances)


def federated_inertia(clients, server_centers):
    """Federated k-means objective ([MUFC] eq. (2)) with induced global clusters ([MUFC] Def. 3.1).

    Parameters
    ----------
    clients : iterable of (X_l, labels_l, centers_l)
        Each client's points, their local cluster labels and the local centers as the server sees
        them (for MUFC the quantized centers). A point of local cluster ``j`` belongs to the server
        cluster whose center is nearest to ``centers_l[j]``.
    server_centers : array-like of shape (K, d)
    """
    server = check_array(server_centers, "server_centers", dtype=("float64",))
    server_t = np.ascontiguousarray(server.T)
    total = 0.0
    for X_l, labels_l, centers_l in clients:
        centers_l = np.ascontiguousarray(centers_l, dtype=np.float64)
        induced = np.empty(centers_l.shape[0], dtype=np.int64)
        assign_nearest(centers_l, server_t, induced, np.empty(centers_l.shape[0]))
        diff = np.asarray(X_l, dtype=np.float64) - server[induced[np.asarray(labels_l)]]
        total += float(np.einsum("ij,ij->", diff, diff))
    return total


def loss_ratio(objective, X, n_clusters, *, candidate_centers=None, n_init=10, random_state=None):
    """``objective / reference`` with ``reference`` the best k-means objective fedcore can find.

    The reference is the lowest inertia among ``n_init`` k-means++ + Lloyd runs on ``X`` (the
    phi*_c approximation of [MUFC] Section 6) and, when ``candidate_centers`` are given, a Lloyd
    run started from them; since Lloyd from the candidate never does worse than the candidate's
    own centralized objective, the ratio of a federated or centralized objective of those centers
    is >= 1 rather than dipping below 1 because of a weak reference.
    """
    from ..algorithms.kmeans.lloyd import KMeans

    X = check_array(X, "X")
    best = KMeans(n_clusters, n_init=n_init, random_state=random_state).fit(X).inertia_
    if candidate_centers is not None:
        start = check_array(candidate_centers, "candidate_centers", dtype=("float64",))
        best = min(best, KMeans(n_clusters, init=start).fit(X).inertia_)
    return float(objective) / best
