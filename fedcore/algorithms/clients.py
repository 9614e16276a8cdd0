"""The client side of one-shot horizontal federated clustering, shared by FeCA, k-FED, M-Avg and
FFCM: checking the federation, one seed per client, the clients' local k-means (and the protocol
role that runs it and sends the centers: :class:`LocalKMeansClient`), and nearest-center
prediction.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from .._validation import (check_array, check_fitted_array, check_fitted_centers, check_int,
                           check_random_state, check_weighted_range)
from ..federation.horizontal import HorizontalFederation
from ..federation.protocol import Channel, Message, expect
from .base import check_is_fitted
from .kmeans.lloyd import KMeans, assign

__all__ = ["check_federation", "client_seeds", "client_kmeans", "HorizontalClient",
           "LocalKMeansSetup", "LocalCenters", "LocalKMeansClient", "gather_local_centers",
           "predict_nearest"]


def check_federation(federation: HorizontalFederation | Sequence[ArrayLike], client_clusters: int,
                     name: str = "client_clusters") -> HorizontalFederation:
    """Return ``federation`` as a :class:`HorizontalFederation`, checking every client's size.

    A list or tuple of 2-D arrays is accepted and wrapped with ``from_arrays``. Raises
    ``TypeError`` for anything else, and ``ValueError`` naming ``name`` for the first client with
    fewer points than ``client_clusters``, or naming the federation when a client's sums of
    squared distances could overflow (:func:`~fedcore._validation.check_weighted_range`).
    """
    if isinstance(federation, (list, tuple)):
        federation = HorizontalFederation.from_arrays(list(federation))
    if not isinstance(federation, HorizontalFederation):
        raise TypeError(f"Argument 'federation' must be a HorizontalFederation or a list of "
                        f"arrays, got {type(federation).__name__}")
    sizes = federation.client_sizes
    small = np.flatnonzero(sizes < client_clusters)
    if small.size:
        l = int(small[0])
        raise ValueError(f"Argument {name!r}={client_clusters} exceeds the {int(sizes[l])} "
                         f"point(s) of client {l}: every client needs at least {name} points")
    for l, (X_l, _) in enumerate(federation):
        check_weighted_range(X_l, float(X_l.shape[0]), (f"federation client {l}",))
    return federation


def client_seeds(rng: np.random.Generator, n_clients: int) -> list[int]:
    """One independent 63-bit seed per client, drawn up front so results never depend on the
    order in which clients are processed."""
    return [int(s) for s in rng.integers(0, np.iinfo(np.int64).max, size=n_clients)]


def client_kmeans(X: np.ndarray, n_clusters: int, *,
                  init: Literal["k-means++", "random"] = "k-means++", n_init: int = 1,
                  max_iter: int = 300, tol: float = 1e-4,
                  random_state: np.random.Generator | int | None = None,
                  n_local_trials: Literal["auto"] | int | None = "auto",
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means on one client ([FeCA] Alg. 2 line 2). Returns ``(centers float64, labels)``.

    ``init="k-means++"`` seeds by k-means++ (:class:`fedcore.KMeans`) with ``n_local_trials``
    candidates per center: "auto" (default) is greedy k-means++ with ``2 + floor(ln k)``
    candidates, the seeding of scikit-learn's ``KMeans``, which the clients of [FeCA] ran; None
    or 1 is vanilla k-means++. ``init="random"`` starts from ``n_clusters`` distinct rows drawn
    uniformly (Forgy), which lands in local solutions far more often; ``n_local_trials`` plays no
    part then. With ``n_init > 1`` the lowest inertia wins.
    """
    rng = check_random_state(random_state)
    if init == "k-means++":
        km = KMeans(n_clusters, n_init=n_init, max_iter=max_iter, tol=tol, random_state=rng,
                    n_local_trials=n_local_trials).fit(X)
        return np.asarray(km.cluster_centers_, dtype=np.float64), km.labels_
    if init != "random":
        raise ValueError(f"Argument 'init' must be 'k-means++' or 'random', got {init!r}")
    best = None
    for _ in range(n_init):
        rows = rng.choice(X.shape[0], size=n_clusters, replace=False)
        km = KMeans(n_clusters, init=X[np.sort(rows)], n_init=1, max_iter=max_iter, tol=tol).fit(X)
        if best is None or km.inertia_ < best.inertia_:
            best = km
    return np.asarray(best.cluster_centers_, dtype=np.float64), best.labels_


@dataclass(frozen=True, eq=False)
class LocalKMeansSetup(Message):
    """Server to client, before the round: the settings of the client's k-means
    (:func:`client_kmeans`) and its seed (setup, not counted)."""

    counted = False
    seed: int
    n_clusters: int
    n_init: int
    max_iter: int
    tol: float
    n_local_trials: int


@dataclass(frozen=True, eq=False)
class LocalCenters(Message):
    """Client to server: the centers of the client's k-means (the one round of k-FED and
    M-Avg)."""

    kind = "centers"
    centers: np.ndarray


class HorizontalClient:
    """Base of the client roles of horizontal methods: holds one client's data, checked.

    Subclasses implement ``handle(message)``. Inside fedcore, an in-process fit passes
    ``_checked=True`` for client arrays of a federation that :func:`check_federation` returned:
    they are kept as they are instead of being checked again (not for other callers).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), the client's data
    client_id : int, used in error messages
    """

    def __init__(self, X: ArrayLike, client_id: int = 0, *, _checked: bool = False) -> None:
        self.client_id = check_int(client_id, "client_id", min_value=0)
        self.X = X if _checked else check_array(X, f"X of client {self.client_id}")

    def check_size(self, n_clusters: int, name: str = "client_clusters") -> None:
        """Refuse a client with fewer than ``n_clusters`` points, naming ``name``."""
        if self.X.shape[0] < n_clusters:
            raise ValueError(f"Argument {name!r}={n_clusters} exceeds the {self.X.shape[0]} "
                             f"point(s) of client {self.client_id}: every client needs at least "
                             f"{name} points")


class LocalKMeansClient(HorizontalClient):
    """The client role of k-FED and M-Avg: answers :class:`LocalKMeansSetup` with the
    :class:`LocalCenters` of :func:`client_kmeans` (see :class:`HorizontalClient`)."""

    def handle(self, message: Message) -> LocalCenters:
        m = expect(message, LocalKMeansSetup, f"client {self.client_id}")
        self.check_size(m.n_clusters)
        centers, _ = client_kmeans(self.X, m.n_clusters, n_init=m.n_init, max_iter=m.max_iter,
                                   tol=m.tol, random_state=np.random.default_rng(m.seed),
                                   n_local_trials=m.n_local_trials)
        return LocalCenters(centers)


def gather_local_centers(channel: Channel, rng: np.random.Generator, n_clusters: int,
                         **kmeans_params: Any) -> list[np.ndarray]:
    """The one uplink round of k-FED and M-Avg, at the server: one seed per client drawn from
    ``rng`` (:func:`client_seeds`), a :class:`LocalKMeansSetup` to each client, and the list of
    centers they send back (counted in ``channel.ledger``)."""
    seeds = client_seeds(rng, channel.n_clients)
    replies = channel.exchange({l: LocalKMeansSetup(seed=seed, n_clusters=n_clusters,
                                                    **kmeans_params)
                                for l, seed in enumerate(seeds)}, round_number=0)
    return [expect(replies[l], LocalCenters, "server").centers for l in range(len(seeds))]


def predict_nearest(model: Any, X: ArrayLike) -> np.ndarray:
    """Nearest row of ``model.cluster_centers_`` for each row of X (lowest index on ties), by
    :func:`~fedcore.algorithms.kmeans.lloyd.assign` (screened where that pays)."""
    check_is_fitted(model, "cluster_centers_")
    owner = type(model).__name__
    X, scale = check_fitted_array(X, model.n_features_in_, owner, return_max_abs=True)
    centers_t = check_fitted_centers(model.cluster_centers_, model.n_features_in_, owner)
    return assign(X, centers_t.T, scale)[0]
