"""Match Averaging (M-Avg, [MAvg]): one-shot federated k-means by matching client centroid sets
(the baseline of [FeCA] Section 6).

Each client runs k-means and sends its centroids once. The server matches every client's set to a
template with the Hungarian algorithm (minimum total l2 distance) and averages matched centroids.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linear_sum_assignment

from ..._validation import check_int, check_random_state, check_scalar
from ...federation.ledger import CommLedger
from ...federation.horizontal import HorizontalFederation
from ...federation.protocol import Channel, InProcessChannel
from ..base import FederatedEstimator
from ..clients import LocalKMeansClient, check_federation, gather_local_centers, predict_nearest
from ..kmeans.seeding import check_n_local_trials

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["MatchAveraging", "MatchAveragingResult", "MatchAveragingServer", "match_averaging",
           "match_average_centers"]


def match_average_centers(client_centers: Sequence[np.ndarray], template: ArrayLike,
                          max_iter: int = 100) -> tuple[np.ndarray, list[np.ndarray], int]:
    """Average centroid sets after matching each to a template (Hungarian, minimum total l2).

    Parameters
    ----------
    client_centers : list of ndarray of shape (m_l, d)
    template : ndarray of shape (k, d), the initial template (one client's centroids)
    max_iter : int, matching rounds; each round matches every set to the current template and
        replaces the template by the matched means. Stops early when no match changes.

    Returns
    -------
    centers : ndarray of shape (k, d), the matched means (a template row matched by no client keeps
        its value)
    matches : list of ndarray of shape (min(m_l, k),), the template row of each matched row of
        client ``l`` (``-1`` for a client row left unmatched when ``m_l > k``)
    n_iter : int
    """
    template = np.array(template, dtype=np.float64)
    k = template.shape[0]
    previous = None
    matches = []
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        sums = np.zeros_like(template)
        counts = np.zeros(k)
        matches = []
        for C in client_centers:
            cost = np.sqrt(((C[:, None, :] - template[None, :, :]) ** 2).sum(axis=2))
            rows, cols = linear_sum_assignment(cost)
            match = np.full(C.shape[0], -1, dtype=np.int64)
            match[rows] = cols
            matches.append(match)
            np.add.at(sums, cols, C[rows])
            np.add.at(counts, cols, 1.0)
        hit = counts > 0
        template[hit] = sums[hit] / counts[hit, None]
        if previous is not None and all(np.array_equal(a, b) for a, b in zip(matches, previous)):
            break
        previous = matches
    return template, matches, n_iter


class MatchAveragingResult(NamedTuple):
    cluster_centers: np.ndarray
    client_centers: list
    matches: list
    template_client: int
    n_iter: int
    comm: CommLedger


class MatchAveragingServer:
    """M-Avg's server role (the clients are
    :class:`~fedcore.algorithms.clients.LocalKMeansClient`): one round of local centroids up,
    then matching and averaging at the server (:func:`match_average_centers`).

    Takes the parameters of :class:`MatchAveraging` (but ``n_jobs``) and checks them.
    """

    def __init__(self, n_clusters: int, *, client_clusters: int | None = None,
                 max_iter: int = 100, n_init: int = 1, client_max_iter: int = 300,
                 tol: float = 1e-4, n_local_trials: Literal["auto"] | int | None = "auto",
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = k = check_int(n_clusters, "n_clusters", min_value=1)
        self.client_clusters = k if client_clusters is None else check_int(
            client_clusters, "client_clusters", min_value=1)
        self.max_iter = check_int(max_iter, "max_iter", min_value=1)
        self.kmeans_params = {
            "n_init": check_int(n_init, "n_init", min_value=1),
            "max_iter": check_int(client_max_iter, "client_max_iter", min_value=1),
            "tol": check_scalar(tol, "tol", min_value=0.0),
            "n_local_trials": check_n_local_trials(n_local_trials, self.client_clusters)}
        if self.client_clusters < k:
            raise ValueError(f"Argument 'client_clusters'={self.client_clusters} must be >= "
                             f"n_clusters={k}: the template is one client's centroid set")
        self.random_state = random_state

    def run(self, channel: Channel) -> MatchAveragingResult:
        """Run M-Avg over ``channel``; returns a :class:`MatchAveragingResult`."""
        rng = check_random_state(self.random_state)
        sent = gather_local_centers(channel, rng, self.client_clusters, **self.kmeans_params)
        template_client = int(rng.integers(channel.n_clients))
        template = sent[template_client][:self.n_clusters]
        centers, matches, n_iter = match_average_centers(sent, template, self.max_iter)
        return MatchAveragingResult(centers, sent, matches, template_client, n_iter,
                                    channel.ledger)


def match_averaging(federation: HorizontalFederation | Sequence[ArrayLike], n_clusters: int, *,
                    client_clusters: int | None = None, max_iter: int = 100, n_init: int = 1,
                    client_max_iter: int = 300, tol: float = 1e-4,
                    n_local_trials: Literal["auto"] | int | None = "auto",
                    n_jobs: int | None = None,
                    random_state: np.random.Generator | int | None = None) -> MatchAveragingResult:
    """Run M-Avg on a horizontal federation; see :class:`MatchAveraging`. The client roles
    (:class:`~fedcore.algorithms.clients.LocalKMeansClient`) and :class:`MatchAveragingServer`
    run in this process."""
    server = MatchAveragingServer(n_clusters, client_clusters=client_clusters, max_iter=max_iter,
                                  n_init=n_init, client_max_iter=client_max_iter, tol=tol,
                                  n_local_trials=n_local_trials, random_state=random_state)
    fed = check_federation(federation, server.client_clusters)
    clients = [LocalKMeansClient(fed.client(l)[0], l) for l in range(fed.n_clients)]
    return server.run(InProcessChannel(clients, n_jobs=n_jobs))


class MatchAveraging(FederatedEstimator):
    """Match Averaging ([MAvg]): match client centroid sets with the Hungarian algorithm, average.

    Each client runs k-means with ``client_clusters`` centroids and sends them (one round). The
    server takes the set of one client drawn at random as the template, matches every client's set
    to it by minimum total l2 distance (``scipy.optimize.linear_sum_assignment``), replaces each
    template row by the mean of the centroids matched to it, and repeats the matching against the
    new template until no match changes (at most ``max_iter`` rounds, all on the server).

    Parameters
    ----------
    n_clusters : int
    client_clusters : int, default=None (``n_clusters``)
        Must be at least ``n_clusters``; with more, each client's extra centroids stay unmatched
        and the template is the first ``n_clusters`` rows of the chosen client's set.
    max_iter : int, default=100, server matching rounds (1 = a single matching to the template)
    n_init, client_max_iter, tol, n_local_trials : client k-means settings (see
        :class:`fedcore.KMeans`; ``n_local_trials="auto"``, greedy k-means++, as the clients of
        :class:`~fedcore.algorithms.feca.FeCA`)
    n_jobs : clients processed concurrently (see :class:`fedcore.algorithms.feca.FeCA`)
    random_state : None, int or numpy.random.Generator

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    client_centers_ : list of ndarray, what each client sent
    matches_ : list of ndarray, the template row matched to each client centroid (-1: unmatched)
    template_client_ : int
    n_iter_ : int, matching rounds run
    comm_ : CommLedger, one round, ``client_clusters * n_features`` floats up per client
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np, fedcore
    >>> X, y, c = fedcore.datasets.make_gaussian_mixture(600, 2, 3, cluster_std=0.01,
    ...                                                  random_state=0)
    >>> fed = fedcore.partition(X, 3, "iid", random_state=0)
    >>> m = MatchAveraging(3, random_state=0).fit(fed)
    >>> bool(fedcore.metrics.center_distance(m.cluster_centers_, c) < 0.01)
    True
    """

    server_class = MatchAveragingServer
    client_class = LocalKMeansClient

    def __init__(self, n_clusters: int, *, client_clusters: int | None = None,
                 max_iter: int = 100, n_init: int = 1, client_max_iter: int = 300,
                 tol: float = 1e-4, n_local_trials: Literal["auto"] | int | None = "auto",
                 n_jobs: int | None = None,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.client_clusters = client_clusters
        self.max_iter = max_iter
        self.n_init = n_init
        self.client_max_iter = client_max_iter
        self.tol = tol
        self.n_local_trials = n_local_trials
        self.n_jobs = n_jobs
        self.random_state = random_state

    def fit(self, federation: HorizontalFederation | Sequence[ArrayLike], y: object = None) -> Self:
        """Run M-Avg on ``federation`` (a HorizontalFederation or a list of client arrays)."""
        return self._store_result(match_averaging(federation, **self.get_params()))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Index of the nearest center for each row of X (lowest on ties)."""
        return predict_nearest(self, X)
