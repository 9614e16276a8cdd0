"""k-FED: one-shot federated k-means ([KFED]: Dennis, Li & Smith, "Heterogeneity for the Win:
One-Shot Federated Clustering", ICML 2021).

Each client clusters its data into ``client_clusters`` (``k'``) centers and sends them once. The
server starts from the centers of one client chosen at random, adds farthest points among all
received centers until it has ``k``, and runs Lloyd's algorithm on the received centers from there.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_int, check_random_state, check_scalar
from ...federation.ledger import CommLedger
from ...federation.horizontal import HorizontalFederation
from ...federation.protocol import Channel, InProcessChannel
from ...kernels.parallel import single_threaded_kernels
from ..base import FederatedEstimator
from ..clients import LocalKMeansClient, check_federation, gather_local_centers, predict_nearest
from ..kmeans.lloyd import KMeans
from ..kmeans.seeding import check_n_local_trials

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["KFed", "KFedResult", "KFedServer", "kfed", "farthest_point_init"]


def farthest_point_init(points: np.ndarray, start: Sequence[int],
                        n_centers: int) -> np.ndarray:
    """Farthest-point traversal: ``start`` rows of ``points`` first, then farthest points.

    Parameters
    ----------
    points : ndarray of shape (N, d), float64
    start : sequence of int, rows taken first, in order (at least one)
    n_centers : int <= N

    Returns
    -------
    rows : ndarray of shape (n_centers,), int64. If ``len(start) >= n_centers`` the traversal runs
    inside ``points[start]`` from ``start[0]``; otherwise each next row maximizes the distance to
    the rows chosen so far (ties: lowest row).
    """
    start = [int(s) for s in start]
    pool = np.asarray(start, dtype=np.int64) if len(start) >= n_centers else \
        np.arange(points.shape[0], dtype=np.int64)
    chosen = [start[0]] if len(start) >= n_centers else list(start)
    mind = np.full(pool.shape[0], np.inf)
    for c in chosen:
        mind = np.minimum(mind, ((points[pool] - points[c]) ** 2).sum(axis=1))
    while len(chosen) < n_centers:
        nxt = int(pool[np.argmax(mind)])
        chosen.append(nxt)
        mind = np.minimum(mind, ((points[pool] - points[nxt]) ** 2).sum(axis=1))
    return np.asarray(chosen, dtype=np.int64)


class KFedResult(NamedTuple):
    cluster_centers: np.ndarray
    client_centers: list
    start_client: int
    comm: CommLedger


class KFedServer:
    """k-FED's server role (the clients are
    :class:`~fedcore.algorithms.clients.LocalKMeansClient`): one round of local centers up, then
    farthest-point initialization and Lloyd's algorithm on the received centers.

    Takes the parameters of :class:`KFed` (but ``n_jobs``) and checks them.
    """

    def __init__(self, n_clusters: int, *, client_clusters: int | None = None, n_init: int = 1,
                 max_iter: int = 300, tol: float = 1e-4,
                 n_local_trials: Literal["auto"] | int | None = "auto",
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = check_int(n_clusters, "n_clusters", min_value=1)
        k = self.n_clusters
        self.client_clusters = max(1, int(np.ceil(np.sqrt(k)))) if client_clusters is None \
            else check_int(client_clusters, "client_clusters", min_value=1)
        self.kmeans_params = {
            "n_init": check_int(n_init, "n_init", min_value=1),
            "max_iter": check_int(max_iter, "max_iter", min_value=1),
            "tol": check_scalar(tol, "tol", min_value=0.0),
            "n_local_trials": check_n_local_trials(n_local_trials, self.client_clusters)}
        self.random_state = random_state

    def run(self, channel: Channel) -> KFedResult:
        """Run k-FED over ``channel``; returns a :class:`KFedResult`."""
        k, k_client = self.n_clusters, self.client_clusters
        rng = check_random_state(self.random_state)
        sent = gather_local_centers(channel, rng, k_client, **self.kmeans_params)
        points = np.concatenate(sent)
        if points.shape[0] < k:
            raise ValueError(f"Argument 'n_clusters'={k} exceeds the {points.shape[0]} centers "
                             f"the clients send ({channel.n_clients} clients x "
                             f"client_clusters={k_client})")
        start_client = int(rng.integers(channel.n_clients))
        offset = sum(c.shape[0] for c in sent[:start_client])
        start = np.arange(offset, offset + sent[start_client].shape[0])
        init = points[farthest_point_init(points, start, k)]
        with single_threaded_kernels():
            server = KMeans(k, init=init, max_iter=self.kmeans_params["max_iter"],
                            tol=self.kmeans_params["tol"]).fit(points)
        return KFedResult(np.asarray(server.cluster_centers_, dtype=np.float64), sent,
                          start_client, channel.ledger)


def kfed(federation: HorizontalFederation | Sequence[ArrayLike], n_clusters: int, *,
         client_clusters: int | None = None, n_init: int = 1, max_iter: int = 300,
         tol: float = 1e-4, n_local_trials: Literal["auto"] | int | None = "auto",
         n_jobs: int | None = None,
         random_state: np.random.Generator | int | None = None) -> KFedResult:
    """Run k-FED on a horizontal federation; see :class:`KFed`. Returns a :class:`KFedResult`.

    The client roles (:class:`~fedcore.algorithms.clients.LocalKMeansClient`) and
    :class:`KFedServer` run in this process.
    """
    server = KFedServer(n_clusters, client_clusters=client_clusters, n_init=n_init,
                        max_iter=max_iter, tol=tol, n_local_trials=n_local_trials,
                        random_state=random_state)
    fed = check_federation(federation, server.client_clusters)
    clients = [LocalKMeansClient(fed.client(l)[0], l) for l in range(fed.n_clients)]
    return server.run(InProcessChannel(clients, n_jobs=n_jobs))


class KFed(FederatedEstimator):
    """k-FED ([KFED]): one-shot federated k-means for heterogeneous clients.

    Each client runs k-means with ``client_clusters`` centers and sends them (one round). The
    server picks one client uniformly at random, starts from its centers, adds the received center
    farthest from those chosen until there are ``n_clusters`` (farthest-point initialization), then
    runs Lloyd's algorithm (unweighted, to convergence) on all received centers.

    Parameters
    ----------
    n_clusters : int
        ``k``, the number of global centers.
    client_clusters : int, default=None
        ``k'``, the centers per client; None means ``ceil(sqrt(n_clusters))``, the regime
        ``k' <= sqrt(k)`` that k-FED's analysis targets. When ``k' > k`` the initialization keeps
        ``k`` of the chosen client's centers by farthest-point traversal. Every client needs at
        least ``k'`` points.
    random_state : None, int or numpy.random.Generator

    Other parameters
    ----------------
    n_init, max_iter, tol, n_local_trials : client k-means settings (see :class:`fedcore.KMeans`;
        ``n_local_trials="auto"``, greedy k-means++, as the clients of
        :class:`~fedcore.algorithms.feca.FeCA`); ``max_iter`` and ``tol`` also bound the server's
        Lloyd run.
    n_jobs : clients processed concurrently (see :class:`fedcore.algorithms.feca.FeCA`).

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    client_centers_ : list of ndarray of shape (client_clusters, n_features), what each client sent
    start_client_ : int, the client whose centers started the initialization
    comm_ : CommLedger, one round, ``client_clusters * n_features`` floats up per client
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np, fedcore
    >>> X, y, _ = fedcore.datasets.make_gaussian_mixture(400, 2, 4, cluster_std=0.01,
    ...                                                  random_state=0)
    >>> fed = fedcore.partition(X, 4, "noniid", labels=y, clusters_per_client=2, random_state=0)
    >>> KFed(4, client_clusters=2, random_state=0).fit(fed).cluster_centers_.shape
    (4, 2)
    """

    server_class = KFedServer
    client_class = LocalKMeansClient

    def __init__(self, n_clusters: int, *, client_clusters: int | None = None, n_init: int = 1,
                 max_iter: int = 300, tol: float = 1e-4,
                 n_local_trials: Literal["auto"] | int | None = "auto",
                 n_jobs: int | None = None,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.client_clusters = client_clusters
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.n_local_trials = n_local_trials
        self.n_jobs = n_jobs
        self.random_state = random_state

    def fit(self, federation: HorizontalFederation | Sequence[ArrayLike], y: object = None) -> Self:
        """Run k-FED on ``federation`` (a HorizontalFederation or a list of client arrays)."""
        return self._store_result(kfed(federation, **self.get_params()))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Index of the nearest global center for each row of X (lowest on ties)."""
        return predict_nearest(self, X)
