"""FFCM: federated fuzzy c-means ([FFCM]: Stallmann & Wilbik, "Towards Federated Clustering: A
Federated Fuzzy c-Means Algorithm (FFCM)", 2022), a round-based baseline of [FeCA].

Every round the server broadcasts the global centers; each client runs fuzzy c-means from them on
its data and returns its local centers with their fuzzy weights ``sum_i u_ij^m``; the server
combines them by weighted averaging (``version=1``) or by weighted k-means on all local centers
(``version=2``).
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from numba import prange

from ..._config import CHUNK_SIZE
from ...kernels.jit import njit
from ..._validation import check_array, check_int, check_random_state, check_scalar
from ...federation.ledger import CommLedger
from ...federation.horizontal import HorizontalFederation
from ...federation.protocol import Channel, InProcessChannel, Message, expect
from ...kernels.parallel import single_threaded_kernels
from ..base import FederatedEstimator
from ..clients import (HorizontalClient, check_federation, client_kmeans, client_seeds,
                       predict_nearest)
from ..kmeans import KMeans, kmeans_plusplus

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["FFCM", "FFCMResult", "ffcm", "fcm_statistics", "fuzzy_c_means", "FFCMClient",
           "FFCMServer", "FFCMSetup", "FFCMInitialCenters", "FFCMGlobalCenters",
           "FFCMLocalCenters"]


@njit(parallel=True)
def fcm_statistics(X, centers, fuzziness, center_sums, weight_sums):
    """One fuzzy c-means pass: memberships to ``centers`` and the weighted sums of the next step.

    IN ``X`` float32/float64 (n, d); ``centers`` float64 (k, d); ``fuzziness`` float ``m > 1``.
    OUT ``center_sums`` float64 (k, d) ``sum_i u_ij^m x_i``; ``weight_sums`` float64 (k,)
    ``sum_i u_ij^m``. Returns the objective ``J_m = sum_ij u_ij^m ||x_i - c_j||^2``.

    ``u_ij = 1 / sum_l (D_ij / D_il)^(1/(m-1))`` with squared distances ``D`` (Bezdek 1981),
    computed as ``s_j / sum_l s_l`` with ``s_l = (D_min / D_il)^(1/(m-1))`` so nothing overflows.
    A row at distance 0 from some centers belongs to them in equal shares. Rows are processed in
    fixed chunks with partials merged in chunk order: bit-identical for any thread count.
    """
    n, d = X.shape
    k = centers.shape[0]
    power = 1.0 / (fuzziness - 1.0)
    n_chunks = max(1, -(-n // CHUNK_SIZE))
    part_sums = np.zeros((n_chunks, k, d))
    part_weights = np.zeros((n_chunks, k))
    part_objective = np.zeros(n_chunks)
    for c in prange(n_chunks):
        dist = np.empty(k)
        share = np.empty(k)
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            dmin = np.inf
            for j in range(k):
                acc = 0.0
                for f in range(d):
                    t = np.float64(X[i, f]) - centers[j, f]
                    acc += t * t
                dist[j] = acc
                if acc < dmin:
                    dmin = acc
            total = 0.0
            if dmin == 0.0:
                for j in range(k):
                    share[j] = 1.0 if dist[j] == 0.0 else 0.0
                    total += share[j]
            elif power == 1.0:  # fuzziness 2: no pow
                for j in range(k):
                    share[j] = dmin / dist[j]
                    total += share[j]
            else:
                for j in range(k):
                    share[j] = (dmin / dist[j]) ** power
                    total += share[j]
            for j in range(k):
                u = share[j] / total
                w = u * u if power == 1.0 else u ** fuzziness
                if w == 0.0:
                    continue
                part_weights[c, j] += w
                part_objective[c] += w * dist[j]
                for f in range(d):
                    part_sums[c, j, f] += w * np.float64(X[i, f])
    center_sums[:, :] = 0.0
    weight_sums[:] = 0.0
    objective = 0.0
    for c in range(n_chunks):
        objective += part_objective[c]
        for j in range(k):
            weight_sums[j] += part_weights[c, j]
            for f in range(d):
                center_sums[j, f] += part_sums[c, j, f]
    return objective


def fuzzy_c_means(X: np.ndarray, centers: ArrayLike, *, fuzziness: float = 2.0,
                  max_iter: int = 100,
                  tol: float = 1e-4) -> tuple[np.ndarray, np.ndarray, int]:
    """Fuzzy c-means from ``centers`` on one client's data.

    Iterates the center update ``c_j = sum_i u_ij^m x_i / sum_i u_ij^m`` until the squared shift
    of every center is at most ``tol`` times the mean per-feature variance of X, or ``max_iter``
    updates. A center with zero total weight keeps its position.

    Returns
    -------
    centers : ndarray of shape (k, d), float64
    weights : ndarray of shape (k,), ``sum_i u_ij^m`` at the returned centers
    n_iter : int
    """
    X = check_array(X, "X")
    fuzziness = check_scalar(fuzziness, "fuzziness", min_value=1.0, include_min=False)
    max_iter = check_int(max_iter, "max_iter", min_value=1)
    tol = check_scalar(tol, "tol", min_value=0.0)
    centers = check_array(centers, "centers", dtype=("float64",))
    if centers.shape[1] != X.shape[1]:
        raise ValueError(f"Argument 'centers' has {centers.shape[1]} features, X has "
                         f"{X.shape[1]}")
    centers = np.array(centers, dtype=np.float64, order="C")
    k, d = centers.shape
    threshold = tol * float(np.mean(X.var(axis=0))) if tol > 0 else 0.0
    sums, weights = np.empty((k, d)), np.empty(k)
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        fcm_statistics(X, centers, fuzziness, sums, weights)
        new = centers.copy()
        hit = weights > 0
        new[hit] = sums[hit] / weights[hit, None]
        shift = ((new - centers) ** 2).sum(axis=1).max()
        centers = new
        if shift <= threshold:
            break
    fcm_statistics(X, centers, fuzziness, sums, weights)
    return centers, weights.copy(), n_iter


class FFCMResult(NamedTuple):
    cluster_centers: np.ndarray
    history: list
    comm: CommLedger


@dataclass(frozen=True, eq=False)
class FFCMSetup(Message):
    """Server to client, before round 0: the client's seed and fuzzy c-means settings (setup, not
    counted)."""

    counted = False
    seed: int
    n_clusters: int
    fuzziness: float
    max_iter: int
    tol: float


@dataclass(frozen=True, eq=False)
class FFCMInitialCenters(Message):
    """Client to server, round 0: the centroids of one k-means run on the client's data."""

    kind = "initial centroids"
    centers: np.ndarray


@dataclass(frozen=True, eq=False)
class FFCMGlobalCenters(Message):
    """Server to client, every round: the global centers."""

    kind = "global centers"
    centers: np.ndarray


@dataclass(frozen=True, eq=False)
class FFCMLocalCenters(Message):
    """Client to server, every round: fuzzy c-means centers from the global ones, and their
    fuzzy weights ``sum_i u_ij^m``."""

    kind = "local centers+weights"
    centers: np.ndarray
    weights: np.ndarray


class FFCMClient(HorizontalClient):
    """FFCM's client role: answers :class:`FFCMSetup` with :class:`FFCMInitialCenters` and each
    :class:`FFCMGlobalCenters` with :class:`FFCMLocalCenters` (:func:`fuzzy_c_means` from the
    global centers; see :class:`~fedcore.algorithms.clients.HorizontalClient`)."""

    setup = None  # the FFCMSetup received, kept for the rounds

    def handle(self, message: Message) -> FFCMInitialCenters | FFCMLocalCenters:
        role = f"FFCM client {self.client_id}"
        if self.setup is None:
            self.setup = m = expect(message, FFCMSetup, role)
            centers, _ = client_kmeans(self.X, min(m.n_clusters, self.X.shape[0]),
                                       random_state=np.random.default_rng(m.seed))
            return FFCMInitialCenters(centers)
        m, s = expect(message, FFCMGlobalCenters, role), self.setup
        centers, weights = fuzzy_c_means(self.X, m.centers, fuzziness=s.fuzziness,
                                         max_iter=s.max_iter, tol=s.tol)[:2]
        return FFCMLocalCenters(centers, weights)


class FFCMServer:
    """FFCM's server role: round 0 seeds the global centers by k-means++ over the clients'
    initial centroids (it never sees a data point); each of ``n_rounds`` rounds broadcasts them
    and combines the local centers (``version`` 1: weighted averaging, 2: weighted k-means).

    Takes the parameters of :class:`FFCM` (but ``n_jobs``) and checks them.
    """

    def __init__(self, n_clusters: int, *, version: Literal[1, 2] = 1, n_rounds: int = 10,
                 fuzziness: float = 2.0, max_iter: int = 100, tol: float = 1e-4,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = check_int(n_clusters, "n_clusters", min_value=1)
        if version not in (1, 2) or isinstance(version, bool):
            raise ValueError(f"Argument 'version' must be 1 or 2, got {version!r}")
        self.version = version
        self.n_rounds = check_int(n_rounds, "n_rounds", min_value=1)
        self.fuzziness = check_scalar(fuzziness, "fuzziness", min_value=1.0, include_min=False)
        self.max_iter = check_int(max_iter, "max_iter", min_value=1)
        self.tol = check_scalar(tol, "tol", min_value=0.0)
        self.random_state = random_state

    def run(self, channel: Channel) -> FFCMResult:
        """Run FFCM over ``channel``; returns an :class:`FFCMResult`."""
        k, tol = self.n_clusters, self.tol
        rng = check_random_state(self.random_state)
        seeds = client_seeds(rng, channel.n_clients)
        replies = channel.exchange({l: FFCMSetup(seed=seed, n_clusters=k,
                                                 fuzziness=self.fuzziness,
                                                 max_iter=self.max_iter, tol=tol)
                                    for l, seed in enumerate(seeds)}, round_number=0)
        starts = [expect(replies[l], FFCMInitialCenters, "FFCM server").centers
                  for l in range(channel.n_clients)]
        with single_threaded_kernels():
            centers, _ = kmeans_plusplus(np.concatenate(starts), k, random_state=rng)
        centers = np.asarray(centers, dtype=np.float64)
        d = centers.shape[1]
        history = []
        for t in range(1, self.n_rounds + 1):
            # Drawn here, one per round, so the first rounds do not depend on n_rounds.
            server_seed = int(rng.integers(0, np.iinfo(np.int64).max))
            replies = channel.broadcast(FFCMGlobalCenters(centers), round_number=t)
            local = [expect(replies[l], FFCMLocalCenters, "FFCM server")
                     for l in range(channel.n_clients)]
            V = np.stack([m.centers for m in local])   # (M, k, d)
            W = np.stack([m.weights for m in local])   # (M, k)
            if self.version == 1:
                total = W.sum(axis=0)
                hit = total > 0
                centers = centers.copy()
                centers[hit] = (W[:, hit, None] * V[:, hit, :]).sum(axis=0) / total[hit, None]
            else:
                points = V.reshape(-1, d)
                weights = W.reshape(-1)
                if np.count_nonzero(weights) < k:
                    weights = np.ones_like(weights)  # too few supported centers to weight by
                km = KMeans(k, n_init=1, max_iter=300, tol=tol,
                            random_state=np.random.default_rng(server_seed))
                with single_threaded_kernels():
                    km.fit(points, sample_weight=weights)
                centers = np.asarray(km.cluster_centers_, dtype=np.float64)
            history.append(centers.copy())
        return FFCMResult(centers, history, channel.ledger)


def ffcm(federation: HorizontalFederation | Sequence[ArrayLike], n_clusters: int, *,
         version: Literal[1, 2] = 1,
         n_rounds: int = 10, fuzziness: float = 2.0, max_iter: int = 100, tol: float = 1e-4,
         n_jobs: int | None = None,
         random_state: np.random.Generator | int | None = None) -> FFCMResult:
    """Run FFCM on a horizontal federation; see :class:`FFCM`. Returns an :class:`FFCMResult`.

    The roles :class:`FFCMClient` (one per client) and :class:`FFCMServer` run in this process.
    """
    server = FFCMServer(n_clusters, version=version, n_rounds=n_rounds, fuzziness=fuzziness,
                        max_iter=max_iter, tol=tol, random_state=random_state)
    fed = check_federation(federation, 1)
    if fed.n_samples < server.n_clusters:
        raise ValueError(f"Argument 'n_clusters'={server.n_clusters} exceeds the "
                         f"{fed.n_samples} points of the federation")
    clients = [FFCMClient(fed.client(l)[0], l) for l in range(fed.n_clients)]
    return server.run(InProcessChannel(clients, n_jobs=n_jobs))


class FFCM(FederatedEstimator):
    """Federated fuzzy c-means ([FFCM]), ``version=1`` or ``version=2``.

    Round 0 (initialization, where [FFCM] leaves the choice open): each client sends the
    centroids of one k-means run on its data (``min(n_clusters, n_l)`` of them, greedy k-means++
    seeding as :func:`~fedcore.algorithms.feca.client_kmeans`); the server seeds the
    ``n_clusters`` global centers by k-means++ over all of them. Rounds ``1..n_rounds``: the
    server sends the global centers; each client runs fuzzy c-means (fuzzifier ``fuzziness``) from
    them to convergence (``max_iter``, ``tol``) and sends its local centers ``v_jl`` and weights
    ``w_jl = sum_i u_ij^m``; the server computes

    - ``version=1``: ``c_j = sum_l w_jl v_jl / sum_l w_jl`` (weighted averaging of centers with the
      same index, which all clients started from the same global center);
    - ``version=2``: k-means on all ``M * n_clusters`` local centers weighted by ``w_jl``
      (:class:`fedcore.KMeans`, one k-means++ start per round).

    Parameters
    ----------
    n_clusters : int
    version : {1, 2}, default=1
    n_rounds : int, default=10
    fuzziness : float > 1, default=2.0
    max_iter : int, default=100, local fuzzy c-means iterations per round
    tol : float, default=1e-4, relative to the mean per-feature variance (client data for the
        local runs, as in :class:`fedcore.KMeans`)
    n_jobs : int, default=None, clients processed concurrently (see
        :class:`fedcore.algorithms.feca.FeCA`); the result does not depend on it
    random_state : None, int or numpy.random.Generator

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    history_ : list of ndarray, the global centers after each round
    comm_ : CommLedger, ``n_rounds + 1`` rounds (round 0: the initial centroids,
        ``min(n_clusters, n_l) * n_features`` floats up per client; then
        ``n_clusters * n_features`` down and ``n_clusters * (n_features + 1)`` up per client)
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np, fedcore
    >>> X, y, c = fedcore.datasets.make_gaussian_mixture(600, 2, 3, cluster_std=0.01,
    ...                                                  random_state=0)
    >>> fed = fedcore.partition(X, 3, "iid", random_state=0)
    >>> m = FFCM(3, version=2, n_rounds=3, random_state=0).fit(fed)
    >>> m.comm_.n_rounds, len(m.history_)
    (4, 3)
    """

    server_class = FFCMServer
    client_class = FFCMClient

    def __init__(self, n_clusters: int, *, version: Literal[1, 2] = 1, n_rounds: int = 10,
                 fuzziness: float = 2.0, max_iter: int = 100, tol: float = 1e-4,
                 n_jobs: int | None = None,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.version = version
        self.n_rounds = n_rounds
        self.fuzziness = fuzziness
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.random_state = random_state

    def fit(self, federation: HorizontalFederation | Sequence[ArrayLike], y: object = None) -> Self:
        """Run FFCM on ``federation`` (a HorizontalFederation or a list of client arrays)."""
        return self._store_result(ffcm(federation, **self.get_params()))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Index of the nearest center for each row of X (lowest on ties)."""
        return predict_nearest(self, X)
