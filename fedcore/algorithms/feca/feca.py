"""FeCA: one-shot federated centroid aggregation ([FeCA]: Xu, Chen, Chao & Zhang, "Jigsaw Game:
Federated Clustering", TMLR 2024).

Each client runs Lloyd's k-means with ``client_clusters`` centroids, removes one-fit-many centroids
(ClientUpdate, [FeCA] Alg. 2; skipped with ``remove_one_fit_many=False``, the ablation of
[FeCA] Appendix C.3), attaches a radius to each remaining centroid (RadiusAssign, [FeCA] Alg. 3
"theoretical" or [FeCA] Alg. 4 "empirical") and sends centroids and radii to the server in a
single message. The server groups the received centroids greedily by largest radius and returns
the means of the ``n_clusters`` largest groups (ServerAggregation, [FeCA] Alg. 5). [FeCA] Alg. 1
is :func:`feca`.

Layout: the kernels (:func:`feca_statistics`, :func:`greedy_ball_groups`) do one pass each into
buffers they are given; the plain functions :func:`client_update`, :func:`radius_assign` and
:func:`server_aggregation` implement [FeCA] Alg. 2-5 on their outputs; :func:`feca_client` is one
client's part of [FeCA] Alg. 1 and :func:`feca_server` the server's. The protocol roles
:class:`FeCAClient` and :class:`FeCAServer` exchange one :class:`FeCASetup` down and one
:class:`FeCACentroids` up through a channel (:mod:`fedcore.federation.protocol`): :func:`feca`
runs them in one process and :class:`FeCA` wraps it; ``fedcore.integrations.flower.feca`` runs
the same roles on Flower nodes. The clients' local k-means is in
:mod:`fedcore.algorithms.clients`, shared with the baselines that FeCA is compared with
(k-FED [KFED], M-Avg [MAvg], FFCM [FFCM]).
"""
from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_int, check_random_state, check_scalar
from ...federation.ledger import CommLedger
from ...federation.horizontal import HorizontalFederation
from ...federation.protocol import (Channel, InProcessChannel, Message, ProtocolError, diagnostic,
                                    expect)
from ...kernels.feca import feca_statistics, greedy_ball_groups
from ...kernels.parallel import single_threaded_kernels
from ..base import FederatedEstimator
from ..clients import (HorizontalClient, check_federation, client_kmeans, client_seeds,
                       predict_nearest)
from ..kmeans.seeding import check_n_local_trials

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["FeCA", "FeCAResult", "FewerGroupsWarning", "feca", "feca_client", "feca_server",
           "check_feca_params", "client_update", "radius_assign", "server_aggregation",
           "FeCAClient", "FeCAServer", "FeCASetup", "FeCACentroids"]


class FewerGroupsWarning(UserWarning):
    """ServerAggregation formed fewer groups than ``n_clusters`` ([FeCA] Appendix E)."""


# --------------------------------------------------------------------------------------------
# [FeCA] Alg. 2-5 on cluster statistics
# --------------------------------------------------------------------------------------------

def _sq_distances(A, B):
    """Squared Euclidean distances (len(A), len(B)), as sums of squared differences."""
    return ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2)


def _cost_about(cost, count, center, mean, z):
    """``sum over the cluster of ||x - z||^2`` from its cost about ``center`` and its mean.

    ``sum ||x - z||^2 = G + 2 n (c - z).(mu - c) + n ||c - z||^2``, exact for any ``c`` and ``z``.
    """
    dc = center - z
    return cost + 2.0 * count * float(dc @ (mean - center)) + count * float(dc @ dc)


def client_update(centers: np.ndarray, counts: ArrayLike, sums: np.ndarray,
                  costs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ClientUpdate, [FeCA] Alg. 2 lines 3-13: remove one-fit-many centroids from a Lloyd solution.

    Parameters
    ----------
    centers : ndarray of shape (k, d), float64, the client's Lloyd centroids ([FeCA] Alg. 2 line 2)
    counts, sums, costs : per-cluster statistics from :func:`feca_statistics`

    Returns
    -------
    kept : ndarray of int64, indices of the centroids kept, increasing
    removed : ndarray of int64, indices removed by line 8, in removal order

    Notes
    -----
    - Line 4, "the cluster with the largest standard deviation": the root-mean-square distance of
      the cluster's points to its centroid, ``sqrt(G_i / |D_i|)``, the spread that makes a
      centroid between several true clusters stand out ([FeCA] Section 4.1). Ties: lowest index.
    - Line 5: the pair ``(p, q)`` at the smallest distance; ties: lexicographically smallest pair.
    - Line 6: ``c_j`` is the mean of ``D_p u D_q`` and ``G_j = sum_{D_p u D_q} ||x - c_j||^2``
      ([FeCA] eq. (4)), computed exactly from the two clusters' statistics.
    - Line 7: ``c_i`` is removed when ``G_i >= G_j``; the merge is only a test, so ``c_p`` and
      ``c_q`` stay. The loop also stops when one centroid is left (no pair exists).
    - Clusters holding no point have no statistics (``r'_i`` of [FeCA] Alg. 3/4 is undefined):
      they are dropped before the loop and reported in neither output.
    """
    counts = np.asarray(counts, dtype=np.float64)
    alive = np.flatnonzero(counts > 0)
    means = np.zeros_like(centers)
    means[alive] = sums[alive] / counts[alive, None]
    removed = []
    while alive.shape[0] >= 2:
        spread = np.sqrt(costs[alive] / counts[alive])
        i = int(alive[np.argmax(spread)])
        d2 = _sq_distances(centers[alive], centers[alive])
        d2[np.tril_indices(alive.shape[0])] = np.inf
        a, b = np.unravel_index(np.argmin(d2), d2.shape)
        p, q = int(alive[a]), int(alive[b])
        merged = (sums[p] + sums[q]) / (counts[p] + counts[q])
        g_j = (_cost_about(costs[p], counts[p], centers[p], means[p], merged)
               + _cost_about(costs[q], counts[q], centers[q], means[q], merged))
        if costs[i] >= g_j:
            removed.append(i)
            alive = alive[alive != i]
        else:
            break
    return alive.astype(np.int64), np.array(removed, dtype=np.int64)


def radius_assign(centers: np.ndarray, max_sq: np.ndarray, kept: ArrayLike,
                  variant: Literal["empirical", "theoretical"] = "empirical") -> np.ndarray:
    """RadiusAssign: a radius for each kept centroid ([FeCA] Alg. 4 "empirical" or [FeCA] Alg. 3
    "theoretical").

    Parameters
    ----------
    centers : ndarray of shape (k, d), float64
    max_sq : ndarray of shape (k,), squared ``r'_i`` from :func:`feca_statistics`
    kept : ndarray of int64, output of :func:`client_update`
    variant : {"empirical", "theoretical"}

    Returns
    -------
    radii : ndarray of shape (len(kept),), float64

    Notes
    -----
    Empirical ([FeCA] Alg. 4): ``r_i = min(r'_i, d_ij / 2)`` with ``d_ij`` the distance to the
    nearest other kept centroid (lines 2-5); a lone centroid gets ``r'_i``.

    Theoretical ([FeCA] Alg. 3): starting from ``C~ = C`` (line 2), centroids are visited in
    increasing index; one still in ``C~`` whose nearest other member ``j`` of ``C~`` satisfies
    ``r'_i + r'_j > d_ij`` leaves ``C~`` together with ``j`` (lines 4-9). Every kept centroid gets
    ``r = min pairwise distance in C~ / 2`` (lines 10-11). Where [FeCA] is silent: when fewer
    than two centroids remain in ``C~`` the minimum is taken over all kept centroids, and a lone
    kept centroid gets ``r'_i``.

    Caveat ([FeCA] Theorem 4.1): [FeCA] Lemma A.3 takes ``min pairwise distance in C~`` to
    approximate ``Delta_min``. When [FeCA] Alg. 2 has removed the centroids of the closest pair of
    true centers from a client (it held a one-fit-many centroid there), the minimum is a larger
    gap, the client's radius exceeds ``Delta_min / 2``, and the server's first ball can merge two
    true centers. fedcore implements [FeCA] Alg. 3 as written;
    ``tests/algorithms/feca/test_feca.py`` holds such a counterexample.
    """
    kept = np.asarray(kept, dtype=np.int64)
    C = centers[kept]
    r_max = np.sqrt(max_sq[kept])
    m = kept.shape[0]
    if m == 0:
        return np.empty(0)
    if m == 1:
        return r_max.copy()
    dist = np.sqrt(_sq_distances(C, C))
    np.fill_diagonal(dist, np.inf)
    if variant == "empirical":
        return np.minimum(r_max, 0.5 * dist.min(axis=1))
    if variant != "theoretical":
        raise ValueError("Argument 'variant' must be 'empirical' or 'theoretical', "
                         f"got {variant!r}")
    tilde = np.ones(m, dtype=bool)
    for i in range(m):
        if not tilde[i] or tilde.sum() < 2:
            continue
        others = np.flatnonzero(tilde & (np.arange(m) != i))
        j = int(others[np.argmin(dist[i, others])])
        if r_max[i] + r_max[j] > dist[i, j]:
            tilde[i] = tilde[j] = False
    members = np.flatnonzero(tilde)
    if members.shape[0] < 2:
        members = np.arange(m)
    delta = dist[np.ix_(members, members)].min()
    return np.full(m, 0.5 * delta)


def server_aggregation(client_centers: Sequence[ArrayLike], client_radii: Sequence[ArrayLike],
                       n_clusters: int) -> tuple[np.ndarray, list[np.ndarray], int]:
    """ServerAggregation, [FeCA] Alg. 5: greedy grouping by largest radius, means of the top groups.

    Parameters
    ----------
    client_centers : list of ndarray of shape (m_l, d), the centroids each client sent
    client_radii : list of ndarray of shape (m_l,)
    n_clusters : int, the number ``k`` of groups kept (line 9)

    Returns
    -------
    centers : ndarray of shape (min(k, n_groups), d), group means, largest group first
    groups : list of ndarray of shape (size, 2), int64 ``(client, row)`` of each group's members,
        in the order of ``centers``
    n_groups : int, the number of groups formed (lines 2-8)

    Notes
    -----
    The result does not depend on the order of the clients or of the centroids within a client:
    the picking order (line 4) is largest radius first, ties broken by the lexicographic order of
    the centroid's coordinates (identical ``(c, r)`` pairs open identical balls); line 9 keeps the
    largest groups, ties broken by formation order; each mean (line 10) sums its members in
    lexicographic order of their coordinates, so the output is bit-identical under reordering.
    Fewer than ``k`` groups give fewer than ``k`` centers (no padding); :class:`FeCA` warns.
    """
    k = check_int(n_clusters, "n_clusters", min_value=1)
    d = None
    owners, blocks, radii = [], [], []
    for l, (C, r) in enumerate(zip(client_centers, client_radii)):
        C = np.asarray(C, dtype=np.float64)
        r = np.asarray(r, dtype=np.float64)
        if C.ndim != 2 or r.ndim != 1 or C.shape[0] != r.shape[0]:
            raise ValueError(f"Client {l}: centers of shape {C.shape} do not match radii of shape "
                             f"{r.shape}")
        if d is None and C.shape[0]:
            d = C.shape[1]
        elif C.shape[0] and C.shape[1] != d:
            raise ValueError(f"Client {l} sent centers with {C.shape[1]} features, expected {d}")
        blocks.append(C)
        radii.append(r)
        owners.append(np.column_stack([np.full(C.shape[0], l), np.arange(C.shape[0])]))
    if d is None:
        raise ValueError("ServerAggregation received no centroid from any client")
    C = np.ascontiguousarray(np.concatenate([b for b in blocks if b.shape[0]]))
    R = np.concatenate(radii)
    if not (np.isfinite(C).all() and not np.isnan(R).any() and (R >= 0).all()):
        raise ValueError("ServerAggregation needs finite centers and non-negative radii")
    owner = np.concatenate(owners).astype(np.int64)
    order = _lexicographic_order(C, -R)
    groups = np.empty(C.shape[0], dtype=np.int64)
    n_groups = int(greedy_ball_groups(C, R, order, groups))
    sizes = np.bincount(groups, minlength=n_groups)
    top = np.argsort(-sizes, kind="stable")[:k]
    centers = np.empty((top.shape[0], d))
    members = []
    for s, g in enumerate(top):
        idx = np.flatnonzero(groups == g)
        idx = idx[_lexicographic_order(C[idx])]
        centers[s] = C[idx].sum(axis=0) / idx.shape[0]
        members.append(owner[idx])
    return centers, members, n_groups


def _lexicographic_order(C, primary=None):
    """Stable order by ``primary`` (if given), then by coordinates ``C[:, 0], C[:, 1], ...``."""
    keys = tuple(C[:, f] for f in range(C.shape[1] - 1, -1, -1))
    if primary is not None:
        keys = keys + (primary,)
    return np.lexsort(keys).astype(np.int64)


# --------------------------------------------------------------------------------------------
# [FeCA] Alg. 1
# --------------------------------------------------------------------------------------------

class FeCAResult(NamedTuple):
    """Everything :func:`feca` computes (see :class:`FeCA` for the meaning of each field)."""

    cluster_centers: np.ndarray
    client_centers: list
    client_radii: list
    groups: list
    n_groups: int
    client_removed: list
    comm: CommLedger


def check_feca_params(n_clusters: int, client_clusters: int | None = None,
                      radius: str = "empirical", init: str = "k-means++", n_init: int = 1,
                      max_iter: int = 300, tol: float = 1e-4,
                      n_local_trials: Literal["auto"] | int | None = "auto",
                      remove_one_fit_many: bool = True) -> dict[str, Any]:
    """Validate FeCA's parameters once; returns them as a dict with ``client_clusters`` resolved
    (None means ``n_clusters``), ``n_local_trials`` as the number of k-means++ candidates per
    center for ``client_clusters`` centers (1: vanilla) and ``remove_one_fit_many`` as a bool."""
    k = check_int(n_clusters, "n_clusters", min_value=1)
    k_client = k if client_clusters is None else check_int(client_clusters, "client_clusters",
                                                            min_value=1)
    if radius not in ("empirical", "theoretical"):
        raise ValueError(f"Argument 'radius' must be 'empirical' or 'theoretical', got {radius!r}")
    if init not in ("k-means++", "random"):
        raise ValueError(f"Argument 'init' must be 'k-means++' or 'random', got {init!r}")
    if not isinstance(remove_one_fit_many, (bool, np.bool_)):
        raise TypeError(f"Argument 'remove_one_fit_many' must be True or False, got "
                        f"{remove_one_fit_many!r}")
    return {"n_clusters": k, "client_clusters": k_client, "radius": radius, "init": init,
            "n_init": check_int(n_init, "n_init", min_value=1),
            "max_iter": check_int(max_iter, "max_iter", min_value=1),
            "tol": check_scalar(tol, "tol", min_value=0.0),
            "n_local_trials": check_n_local_trials(n_local_trials, k_client),
            "remove_one_fit_many": bool(remove_one_fit_many)}


def feca_client(X: np.ndarray, client_clusters: int, *, radius: str = "empirical",
                init: str = "k-means++", n_init: int = 1, max_iter: int = 300,
                tol: float = 1e-4, n_local_trials: Literal["auto"] | int | None = "auto",
                remove_one_fit_many: bool = True,
                seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[FeCA] Alg. 1 lines 3-4 on one client: ClientUpdate ([FeCA] Alg. 2), then RadiusAssign
    ([FeCA] Alg. 3 or 4).

    Parameters are validated by the caller (:func:`check_feca_params`); ``seed`` is the client's
    integer seed (see :func:`feca`). Runs in the calling thread with its Numba thread count.
    With ``remove_one_fit_many=False`` (the ablation of [FeCA] Appendix C.3) the one-fit-many
    removal of ClientUpdate ([FeCA] Alg. 2 lines 3-13) is skipped: every Lloyd centroid whose
    cluster holds a point is kept and gets its radius as usual; nothing is reported removed.

    Returns
    -------
    centers : ndarray of shape (m, n_features), float64, the centroids the client sends
    radii : ndarray of shape (m,), their radii
    removed : ndarray of int64, Lloyd indices removed as one-fit-many ([FeCA] Alg. 2 line 8);
        empty with ``remove_one_fit_many=False``
    """
    centers, labels = client_kmeans(X, client_clusters, init=init, n_init=n_init,
                                    max_iter=max_iter, tol=tol,
                                    random_state=np.random.default_rng(seed),
                                    n_local_trials=n_local_trials)
    k, d = centers.shape
    counts, sums = np.empty(k), np.empty((k, d))
    costs, max_sq = np.empty(k), np.empty(k)
    feca_statistics(X, labels, centers, counts, sums, costs, max_sq)
    if remove_one_fit_many:
        kept, removed = client_update(centers, counts, sums, costs)
    else:
        # [FeCA] Appendix C.3: no one-fit-many removal; clusters without a point still have no
        # radius (see client_update) and are not sent.
        kept = np.flatnonzero(np.asarray(counts) > 0).astype(np.int64)
        removed = np.empty(0, dtype=np.int64)
    radii = radius_assign(centers, max_sq, kept, radius)
    return centers[kept], radii, removed


def feca_server(client_centers: Sequence[np.ndarray], client_radii: Sequence[np.ndarray],
                client_removed: Sequence[np.ndarray], n_clusters: int, *, comm: CommLedger,
                stacklevel: int = 2) -> FeCAResult:
    """[FeCA] Alg. 1 lines 6-8 at the server: ServerAggregation ([FeCA] Alg. 5) on what the
    clients sent.

    Parameters
    ----------
    client_centers, client_radii, client_removed : lists indexed by client, the outputs of
        :func:`feca_client`
    n_clusters : int
    comm : CommLedger, the run's ledger (the one round, counted by the channel)
    stacklevel : int, passed to the :class:`FewerGroupsWarning`

    Returns
    -------
    FeCAResult
        Warns with :class:`FewerGroupsWarning` when fewer than ``n_clusters`` groups form; the
        result then has fewer centers (never padded).
    """
    with single_threaded_kernels():
        centers, groups, n_groups = server_aggregation(client_centers, client_radii, n_clusters)
    if n_groups < n_clusters:
        warnings.warn(f"FeCA's server aggregation formed {n_groups} group(s), fewer than "
                      f"n_clusters={n_clusters}: cluster_centers_ has {n_groups} row(s), not "
                      "padded (FeCA paper, Appendix E)", FewerGroupsWarning,
                      stacklevel=stacklevel + 1)
    return FeCAResult(centers, list(client_centers), list(client_radii), groups, n_groups,
                      list(client_removed), comm)


# --------------------------------------------------------------------------------------------
# Protocol: messages and roles
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class FeCASetup(Message):
    """Server to client, before the round: the client settings of [FeCA] Alg. 1 and the client's
    seed (setup, not counted)."""

    counted = False
    seed: int
    client_clusters: int
    radius: str
    init: str
    n_init: int
    max_iter: int
    tol: float
    n_local_trials: int
    remove_one_fit_many: bool


@dataclass(frozen=True, eq=False)
class FeCACentroids(Message):
    """Client to server, the one message of [FeCA] Alg. 1 lines 6-7: the refined centroids and
    their radii (``removed``, the Lloyd indices removed as one-fit-many, is a report)."""

    kind = "centroids+radii"
    centers: np.ndarray
    radii: np.ndarray
    removed: np.ndarray = diagnostic()


class FeCAClient(HorizontalClient):
    """FeCA's client role: holds one client's data and answers :class:`FeCASetup` with
    :class:`FeCACentroids` (:func:`feca_client`; see
    :class:`~fedcore.algorithms.clients.HorizontalClient`)."""

    def handle(self, message: Message) -> FeCACentroids:
        m = expect(message, FeCASetup, f"FeCA client {self.client_id}")
        self.check_size(m.client_clusters)
        centers, radii, removed = feca_client(
            self.X, m.client_clusters, radius=m.radius, init=m.init, n_init=m.n_init,
            max_iter=m.max_iter, tol=m.tol, n_local_trials=m.n_local_trials,
            remove_one_fit_many=m.remove_one_fit_many, seed=m.seed)
        return FeCACentroids(centers, radii, removed)


class FeCAServer:
    """FeCA's server role: one round, then ServerAggregation (:func:`feca_server`).

    Takes the parameters of :class:`FeCA` (but ``n_jobs``) and checks them
    (:func:`check_feca_params`, kept in ``params``); one seed per client is drawn from
    ``random_state`` (:func:`~fedcore.algorithms.clients.client_seeds`). ``stacklevel`` is passed
    to the :class:`FewerGroupsWarning`.
    """

    def __init__(self, n_clusters: int, *, client_clusters: int | None = None,
                 radius: Literal["empirical", "theoretical"] = "empirical",
                 init: Literal["k-means++", "random"] = "k-means++",
                 n_local_trials: Literal["auto"] | int | None = "auto", n_init: int = 1,
                 max_iter: int = 300, tol: float = 1e-4, remove_one_fit_many: bool = True,
                 random_state: np.random.Generator | int | None = None,
                 stacklevel: int = 2) -> None:
        self.params = check_feca_params(n_clusters, client_clusters, radius, init, n_init,
                                        max_iter, tol, n_local_trials, remove_one_fit_many)
        self.random_state = random_state
        self.stacklevel = stacklevel

    def run(self, channel: Channel) -> FeCAResult:
        """Run [FeCA] Alg. 1 over ``channel``; returns a :class:`FeCAResult`."""
        client = {key: value for key, value in self.params.items() if key != "n_clusters"}
        seeds = client_seeds(check_random_state(self.random_state), channel.n_clients)
        replies = channel.exchange({l: FeCASetup(seed=seed, **client)
                                    for l, seed in enumerate(seeds)}, round_number=0)
        sent = [expect(replies[l], FeCACentroids, "FeCA server") for l in range(len(seeds))]
        widths = {C.centers.shape[1] for C in sent if C.centers.ndim == 2}
        if len(widths) > 1 or any(C.centers.ndim != 2 for C in sent):
            raise ProtocolError(f"FeCA clients sent centroids of different widths {widths}")
        return feca_server([C.centers for C in sent], [C.radii for C in sent],
                           [C.removed for C in sent], self.params["n_clusters"],
                           comm=channel.ledger, stacklevel=self.stacklevel + 1)


def feca(federation: HorizontalFederation | Sequence[ArrayLike], n_clusters: int, *,
         client_clusters: int | None = None,
         radius: Literal["empirical", "theoretical"] = "empirical",
         init: Literal["k-means++", "random"] = "k-means++",
         n_local_trials: Literal["auto"] | int | None = "auto", n_init: int = 1,
         max_iter: int = 300, tol: float = 1e-4, remove_one_fit_many: bool = True,
         n_jobs: int | None = None,
         random_state: np.random.Generator | int | None = None) -> FeCAResult:
    """Run FeCA ([FeCA] Alg. 1) on a horizontal federation; see :class:`FeCA` for the parameters.

    Returns a :class:`FeCAResult`. Warns with :class:`FewerGroupsWarning` when the server forms
    fewer than ``n_clusters`` groups. The roles :class:`FeCAClient` (one per client) and
    :class:`FeCAServer` run in this process; the Flower apps
    (:mod:`fedcore.integrations.flower.feca`) run the same roles on Flower nodes.
    """
    server = FeCAServer(n_clusters, client_clusters=client_clusters, radius=radius, init=init,
                        n_local_trials=n_local_trials, n_init=n_init, max_iter=max_iter, tol=tol,
                        remove_one_fit_many=remove_one_fit_many, random_state=random_state,
                        stacklevel=2)
    fed = check_federation(federation, server.params["client_clusters"])
    clients = [FeCAClient(fed.client(l)[0], l) for l in range(fed.n_clients)]
    return server.run(InProcessChannel(clients, n_jobs=n_jobs))


class FeCA(FederatedEstimator):
    """Federated Centroid Aggregation (FeCA, [FeCA] Alg. 1): one-shot federated k-means.

    Parameters
    ----------
    n_clusters : int
        ``k``, the number of centers returned ([FeCA] Alg. 5 line 9).
    client_clusters : int, default=None
        ``K'``, the number of Lloyd centroids on each client ([FeCA] Alg. 2 line 2; ``k'`` in
        [FeCA] Appendix E); None means ``n_clusters``. Every client needs at least this many
        points.
    radius : {"empirical", "theoretical"}, default="empirical"
        RadiusAssign variant: [FeCA] Alg. 4 (per-centroid radius) or [FeCA] Alg. 3 (one radius
        per client, used by [FeCA] Theorem 4.1 under the Stochastic Ball Model).
    init : {"k-means++", "random"}, default="k-means++"
        Seeding of each client's Lloyd run (see :func:`client_kmeans`).
    n_local_trials : None, "auto" or int >= 1, default="auto"
        k-means++ candidates per center on each client, as in :class:`fedcore.KMeans`: "auto" is
        greedy k-means++ with ``2 + floor(ln client_clusters)`` candidates, the seeding of
        scikit-learn's ``KMeans``, with which the experiments of [FeCA] ran the clients' Lloyd's
        algorithm ([FeCA] Alg. 2 line 2); None or 1 is vanilla k-means++, the default of
        :class:`fedcore.KMeans`. A number beside ``init`` rather than a third ``init`` value: it
        has the same name and meaning as in :class:`fedcore.KMeans` and
        :func:`fedcore.kmeans_plusplus`, and any count can be chosen. Ignored with
        ``init="random"``.
    n_init : int, default=1
        Lloyd runs per client; the lowest inertia wins.
    max_iter : int, default=300
    tol : float, default=1e-4
        Client Lloyd tolerance, as in :class:`fedcore.KMeans`.
    remove_one_fit_many : bool, default=True
        Whether each client removes its one-fit-many centroids (ClientUpdate, [FeCA] Alg. 2
        lines 3-13). False is the ablation of [FeCA] Appendix C.3: every Lloyd centroid whose
        cluster holds a point is sent, with its radius ([FeCA] Alg. 3 or 4), and
        ``client_removed_`` is empty.
    n_jobs : int, default=None
        Clients processed concurrently on a thread pool (None: ``numba.get_num_threads()``), each
        with single-threaded kernels. The result does not depend on it.
    random_state : None, int or numpy.random.Generator
        One seed per client is drawn from it up front; same seed, same output.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_found, n_features)
        The aggregated centers, largest group first; ``n_found = min(n_clusters, n_groups_)``.
    client_centers_ : list of ndarray of shape (m_l, n_features)
        The centroids client ``l`` sent (kept by [FeCA] Alg. 2, or every one whose cluster holds
        a point with ``remove_one_fit_many=False``), in increasing Lloyd index.
    client_radii_ : list of ndarray of shape (m_l,)
        Their radii ([FeCA] Alg. 3 or 4).
    groups_ : list of ndarray of shape (size, 2)
        For each row of ``cluster_centers_``, the ``(client, row in client_centers_[client])``
        pairs averaged into it ([FeCA] Alg. 5 line 10).
    n_groups_ : int
        Groups formed by [FeCA] Alg. 5. When ``n_groups_ < n_clusters`` a
        :class:`FewerGroupsWarning` is issued and ``cluster_centers_`` has ``n_groups_`` rows
        ([FeCA] Appendix E); never padded.
    client_removed_ : list of ndarray of int64
        Indices of each client's Lloyd centroids removed as one-fit-many ([FeCA] Alg. 2 line 8);
        empty with ``remove_one_fit_many=False``.
    comm_ : CommLedger
        One round: each client sends ``m_l * (n_features + 1)`` floats (centroids and radii).
        Nothing is sent down: [FeCA] Alg. 1 returns the centers at the server.
    n_features_in_ : int

    Notes
    -----
    Choices where [FeCA] is silent are documented in :func:`client_update`,
    :func:`radius_assign` and :func:`server_aggregation`. Under the Stochastic Ball Model with the
    separations of [FeCA] Theorem 4.1, every center lies within ``4 / (5 eta) * Delta_min`` of a
    true center with ``radius="empirical"``, and with ``radius="theoretical"`` whenever every
    client's radius obeys [FeCA] Lemma A.3 (property tests; :func:`radius_assign` explains when it
    does not). After all one-fit-many centroids are gone, the next test of [FeCA] Alg. 2 compares
    two single-cluster costs and may also remove a correct centroid; other clients then supply that
    center.

    Examples
    --------
    >>> import numpy as np, fedcore
    >>> from fedcore.datasets.balls import make_stochastic_ball
    >>> X, y, theta = make_stochastic_ball(600, 2, 3, separation=20.0, random_state=0)
    >>> fed = fedcore.partition(X, 3, "iid", random_state=0)
    >>> model = FeCA(3, random_state=0).fit(fed)
    >>> model.cluster_centers_.shape, model.comm_.n_rounds
    ((3, 2), 1)
    >>> bool(fedcore.metrics.center_distance(model.cluster_centers_, theta) < 0.5)
    True
    """

    server_class = FeCAServer
    client_class = FeCAClient

    def __init__(self, n_clusters: int, *, client_clusters: int | None = None,
                 radius: Literal["empirical", "theoretical"] = "empirical",
                 init: Literal["k-means++", "random"] = "k-means++",
                 n_local_trials: Literal["auto"] | int | None = "auto", n_init: int = 1,
                 max_iter: int = 300, tol: float = 1e-4, remove_one_fit_many: bool = True,
                 n_jobs: int | None = None,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.client_clusters = client_clusters
        self.radius = radius
        self.init = init
        self.n_local_trials = n_local_trials
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.remove_one_fit_many = remove_one_fit_many
        self.n_jobs = n_jobs
        self.random_state = random_state

    def fit(self, federation: HorizontalFederation | Sequence[ArrayLike],
            y: object = None) -> Self:
        """Run [FeCA] Alg. 1 on ``federation`` (a HorizontalFederation or a list of client
        arrays)."""
        return self._store_result(feca(federation, **self.get_params()))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Index of the nearest row of ``cluster_centers_`` for each row of X (lowest on ties)."""
        return predict_nearest(self, X)
