"""The client side of one-shot horizontal federated clustering, shared by FeCA, k-FED, M-Avg and
FFCM: checking the federation, one seed per client, running clients on a thread pool with
single-threaded kernels, the clients' local k-means, and nearest-center prediction.
"""
import contextlib
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from .._validation import (check_fitted_array, check_int, check_random_state,
                           check_weighted_range)
from ..federation.horizontal import HorizontalFederation
from ..federation.ledger import SERVER, CommLedger
from ..kernels.kmeans.distances import assign_nearest
from .base import check_is_fitted
from .kmeans.lloyd import KMeans

__all__ = ["check_federation", "single_threaded_kernels", "run_clients", "client_kmeans",
           "send_local_centers", "predict_nearest"]


def check_federation(federation, client_clusters, name="client_clusters"):
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


@contextlib.contextmanager
def single_threaded_kernels():
    """Run Numba kernels on one thread in the calling thread, restoring the count afterwards.

    Clients hold few rows, so one kernel call is short and the cost of waking a parallel team
    dominates; parallelism goes over clients instead (:func:`run_clients`). Numba's thread count
    is thread-local, so this never affects other threads.
    """
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def _single_threaded_call(fn, l):
    with single_threaded_kernels():
        return fn(l)


def run_clients(fn, n_clients, n_jobs=None):
    """``[fn(0), ..., fn(n_clients - 1)]``, client by client or on a thread pool.

    ``n_jobs=None`` uses ``numba.get_num_threads()`` workers (1 runs in the calling thread). Every
    call runs with single-threaded kernels, and each client's randomness is fixed before the call,
    so the result does not depend on ``n_jobs`` or on scheduling.
    """
    n_jobs = numba.get_num_threads() if n_jobs is None else check_int(n_jobs, "n_jobs",
                                                                      min_value=1)
    n_jobs = min(n_jobs, n_clients)
    if n_jobs <= 1:
        return [_single_threaded_call(fn, l) for l in range(n_clients)]
    with ThreadPoolExecutor(max_workers=n_jobs) as pool:
        return list(pool.map(lambda l: _single_threaded_call(fn, l), range(n_clients)))


def client_seeds(rng, n_clients):
    """One independent 63-bit seed per client, drawn up front so results never depend on the
    order in which clients are processed."""
    return [int(s) for s in rng.integers(0, np.iinfo(np.int64).max, size=n_clients)]


def client_kmeans(X, n_clusters, *, init="k-means++", n_init=1, max_iter=300, tol=1e-4,
                  random_state=None, n_local_trials="auto"):
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


def send_local_centers(fed, n_clusters, seeds, n_jobs=None, **kmeans_params):
    """The one uplink round of k-FED and M-Avg: client ``l`` runs :func:`client_kmeans` with
    ``n_clusters`` centers and generator ``seeds[l]`` and sends its centers.

    Returns ``(list of center arrays, CommLedger holding the round)``.
    """
    def client(l):
        X, _ = fed.client(l)
        return client_kmeans(X, n_clusters, random_state=np.random.default_rng(seeds[l]),
                             **kmeans_params)[0]

    sent = run_clients(client, fed.n_clients, n_jobs)
    comm = CommLedger()
    for l, C in enumerate(sent):
        comm.record(0, sender=l, receiver=SERVER, kind="centers", n_elements=C.size)
    return sent, comm


def predict_nearest(model, X):
    """Nearest row of ``model.cluster_centers_`` for each row of X (lowest index on ties)."""
    check_is_fitted(model, "cluster_centers_")
    X = check_fitted_array(X, model.n_features_in_, type(model).__name__)
    labels = np.empty(X.shape[0], dtype=np.int64)
    assign_nearest(X, np.ascontiguousarray(model.cluster_centers_.T, dtype=np.float64), labels,
                   np.empty(X.shape[0]))
    return labels
