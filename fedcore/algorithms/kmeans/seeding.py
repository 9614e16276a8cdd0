"""k-means++ seeding: vanilla (exact, lazy), greedy, and the public :func:`kmeans_plusplus`."""
from __future__ import annotations

import numbers
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import (check_array, check_int, check_random_state,
                           check_sample_weight, check_weighted_range, weight_names)
from ...kernels.arrays import read_only
from ...kernels.kmeans.seeding import (apply_pending, center_gaps, chunk_sums, d2_refresh,
                                       d2_update, greedy_pass, greedy_steps, min_gaps,
                                       min_sq_distance, pick_index, pick_product, tiled)
from ...kernels.parallel import n_chunks

__all__ = ["kmeans_plusplus"]


def seed_from_uniforms(X, weights, uniforms, prefix=(), totals=None):
    """k-means++ on validated input; one uniform per drawn center. Returns (rows, labels, mind).

    ``prefix`` rows are taken as the first centers without drawing (exact unlearning keeps the
    centers before the first removed one, [MUFC] Alg. 3 line 9). Then center ``t`` is drawn by
    D^2 sampling ([MUFC] Appendix B), ``P(x) = w(x) d^2(x, C) / sum_y w(y) d^2(y, C)``; when that
    total is 0 (every remaining row coincides with a center), uniformly by weight among rows not
    yet chosen. Rows of weight 0 are never drawn, which is how removed rows are excluded.

    ``labels`` is the first nearest center in seeding order, ``mind`` the squared distance to it.
    ``totals``, float64 (k,), receives for every center ``t`` the total ``sum_y w(y) d^2(y, C)`` it
    was drawn against (the total weight for ``t = 0``): what :mod:`fedcore.algorithms.mufc.coupled`
    needs to redraw exactly after the weights change.
    """
    k = len(prefix) + len(uniforms)
    X = read_only(X)  # (read-only X: the kernels' specialisations, and Lloyd's, shared)
    rows, centers, labels, mind, gaps, sums = _seeding_state(X, k)
    for t in range(k):
        if t == 0:
            chunk_sums(weights, sums)
        if t < len(prefix):
            row = int(prefix[t])
        else:
            u = float(uniforms[t - len(prefix)])
            if t == 0:
                row = pick_index(weights, sums, u)
            elif sums.max() > 0.0:
                row = pick_product(weights, mind, sums, u)
            else:  # degenerate rule: by weight among rows not yet chosen
                row = pick_unchosen(weights, rows[:t], u)
        if totals is not None:
            totals[t] = sums.sum()
        _add_center(X, weights, row, t, rows, centers, labels, mind, gaps, sums)
    return rows, labels, mind


def _seeding_state(X, k):
    """(rows, centers, labels, mind, gaps, sums) of a k-means++ run before its first center:
    labels -1 and D^2 +inf everywhere."""
    n, d = X.shape
    return (np.empty(k, dtype=np.int64), np.empty((k, d), dtype=np.float64),
            np.full(n, -1, dtype=np.int64), np.full(n, np.inf), np.empty(k),
            np.empty(n_chunks(n)))


def _add_center(X, weights, row, t, rows, centers, labels, mind, gaps, sums):
    """Make row ``row`` center ``t``: nearest labels, D^2 and chunk sums updated."""
    rows[t] = row
    centers[t] = X[row]
    center_gaps(centers, t, gaps)
    d2_update(X, centers[t], weights, t, gaps, labels, mind, sums)


def seed_lazy(X, weights, rng, n_clusters, prefix=(), max_pending=32,
                          max_rejections=4, finish=True):
    """k-means++ with the distribution of :func:`seed_from_uniforms`, reading ``X`` far less often.

    Returns (rows, labels, mind) as :func:`seed_from_uniforms`; ``labels`` and ``mind`` are
    bit-identical to what it computes for the same centers. With ``finish=False`` they are None:
    the passes over X that would only apply centers after the last draw are skipped (the rows and
    the uniforms taken from ``rng`` are the same).

    D^2 values only shrink as centers are added, so values refreshed when ``s`` centers existed are
    upper bounds ``b_i >= m_i`` on the current ones. A center is drawn by rejection: propose ``i``
    with probability ``w_i b_i / sum w b`` (stale chunk sums, no pass over X), compute ``m_i``
    against the centers added since the refresh only, accept with probability ``m_i / b_i``.
    Accepted draws have probability proportional to ``w_i m_i``: exactly D^2 sampling. After
    ``max_rejections`` rejections in a row, or ``max_pending`` centers since the last refresh, one
    pass over X applies all pending centers (:func:`~fedcore.kernels.kmeans.seeding.d2_refresh`)
    and the draw is direct. The number of uniforms drawn from ``rng`` depends on the data.
    """
    X = read_only(X)  # (read-only X: the kernels' specialisations, and Lloyd's, shared)
    rows, centers, labels, mind, gaps, sums = _seeding_state(X, n_clusters)
    state = {"fresh": 0}

    def refresh(stop):
        start = state["fresh"]
        if stop == start + 1:  # the same as d2_refresh with one center
            center_gaps(centers, start, gaps)
            d2_update(X, centers[start], weights, start, gaps, labels, mind, sums)
        elif stop > start:
            new = centers[start:stop]
            min_gaps(new, centers, start, gaps)  # pruning only
            d2_refresh(X, new, start, gaps, weights, labels, mind, sums)
        state["fresh"] = max(stop, start)

    for t in range(n_clusters):
        if t < len(prefix):
            row = int(prefix[t])
        elif t == 0:
            chunk_sums(weights, sums)
            row = pick_index(weights, sums, rng.random())
        else:
            row = _draw_lazy(X, weights, rng, centers, t, state, refresh, mind, sums, rows,
                             max_rejections)
        rows[t] = row
        centers[t] = X[row]
        # The first refresh comes right after the first center (or the whole prefix): before it,
        # neither mind nor sums describe any center, so no draw may read them.
        if (t + 1 < n_clusters or finish) and (
                (state["fresh"] == 0 and t + 1 >= len(prefix))
                or t + 1 - state["fresh"] >= max_pending):
            refresh(t + 1)
    if not finish:
        return rows, None, None
    refresh(n_clusters)
    return rows, labels, mind


def _draw_lazy(X, weights, rng, centers, t, state, refresh, mind, sums, rows, max_rejections):
    """Draw center ``t`` by rejection from stale D^2 bounds (see :func:`seed_lazy`)."""
    rejections = 0
    while True:
        if sums.max() == 0.0:  # every bound is 0, so every D^2 is 0: the degenerate rule
            return pick_unchosen(weights, rows[:t], rng.random())
        if state["fresh"] == t:  # bounds are exact: draw directly
            return pick_product(weights, mind, sums, rng.random())
        u, v = rng.random(2)
        row = pick_product(weights, mind, sums, u)
        bound = mind[row]
        if v * bound < min_sq_distance(X, row, centers, state["fresh"], t, bound):
            return row
        rejections += 1
        if rejections >= max_rejections:
            refresh(t)


def _kmeans_plusplus_greedy(X, weights, first_uniform, trial_uniforms, finish=True):
    """Greedy k-means++ on validated input; returns (rows, labels, mind) as
    :func:`seed_from_uniforms` does (labels and mind None with ``finish=False``).

    ``trial_uniforms`` has shape (n_clusters - 1, L). The first center is drawn by weight with
    ``first_uniform``. Center ``t >= 1`` is the best of ``L`` candidates, candidate ``p`` drawn by
    D^2 sampling with ``trial_uniforms[t - 1, p]`` (the draw of :func:`seed_from_uniforms`): the one
    whose addition leaves the lowest potential ``sum_i w_i min(d_i^2, |x_i - c|^2)``, ties to the
    first drawn. Candidates may repeat. When every D^2 is 0 all candidates would tie at potential
    0, so the degenerate rule of :func:`seed_from_uniforms` draws the center with
    ``trial_uniforms[t - 1, 0]`` alone. With ``L = 1`` this is :func:`seed_from_uniforms`.

    One pass over X per center (:func:`~fedcore.kernels.kmeans.seeding.greedy_pass`) applies the
    previous choice and computes the candidates' distances and potentials; it reads a copy of X
    made once by tiles of rows (:func:`~fedcore.kernels.kmeans.seeding.tiled`, X's size again in
    memory) and keeps the distances that move a row, so the chosen candidate's D^2 is never
    recomputed.
    """
    n = X.shape[0]
    k = 1 + trial_uniforms.shape[0]
    L = trial_uniforms.shape[1]
    X = read_only(X)  # (read-only X: the kernels' specialisations, and Lloyd's, shared)
    rows, centers, labels, mind, gaps, sums = _seeding_state(X, k)
    tiles = tiled(X)
    # dists[pend] holds the D^2 after the last center chosen, applied to labels and mind by the
    # next pass (greedy_pass) or at the end (apply_pending); sums, the chunk sums of weights *
    # D^2 after it, are its row of partials.
    dists = np.empty((L, n))
    partials = np.empty((L, n_chunks(n)))
    potentials = np.empty(L)
    # The passes run on the thread pool by the rule of every chunked kernel (use_parallel: from 4
    # chunks of rows); the same bits either way.
    pend, t = -1, 0
    while t < k:
        # One candidate: the first center, by weight, or the degenerate rule (every D^2 is 0):
        # by weight among rows not yet chosen.
        if t == 0:
            chunk_sums(weights, sums)
            row = pick_index(weights, sums, float(first_uniform))
        else:
            row = pick_unchosen(weights, rows[:t], float(trial_uniforms[t - 1, 0]))
        candidates = X[row:row + 1].astype(np.float64)
        min_gaps(candidates, centers, t, gaps)  # pruning only
        greedy_pass(X, tiles, candidates, gaps, weights, pend, t - 1, dists, labels, mind,
                    partials, potentials)
        rows[t] = row
        centers[t] = candidates[0]
        # Then D^2 sampling, compiled, until the end or the next step where every D^2 is 0.
        t, pend = greedy_steps(X, tiles, weights, trial_uniforms, t + 1, 0, rows, centers, gaps,
                               dists, labels, mind, partials, potentials)
    if not finish:
        return rows, None, None
    apply_pending(dists, pend, k - 1, labels, mind)
    return rows, labels, mind


def _seed_rows(X, weights, rng, n_clusters, n_local_trials=1):
    """Rows of k-means++ centers: vanilla (lazy sampler) for ``n_local_trials == 1``, else greedy.

    Greedy seeding takes ``1 + (n_clusters - 1) * n_local_trials`` uniforms from ``rng`` in one
    call; vanilla seeding draws exactly as :func:`seed_lazy`.
    """
    if n_local_trials == 1:
        return seed_lazy(X, weights, rng, n_clusters, finish=False)[0]
    u = rng.random(1 + (n_clusters - 1) * n_local_trials)
    trials = u[1:].reshape(n_clusters - 1, n_local_trials)
    return _kmeans_plusplus_greedy(X, weights, u[0], trials, finish=False)[0]


def check_n_local_trials(n_local_trials, n_clusters):
    """Candidates per center as an int: None -> 1 (vanilla), "auto" -> ``2 + floor(ln k)``
    (scikit-learn's choice), an int >= 1 as given."""
    if n_local_trials is None:
        return 1
    if isinstance(n_local_trials, str):
        if n_local_trials != "auto":
            raise ValueError(f"Argument 'n_local_trials' must be None, 'auto' or an int >= 1, "
                             f"got {n_local_trials!r}")
        return 2 + int(np.log(n_clusters))
    if isinstance(n_local_trials, bool) or not isinstance(n_local_trials, numbers.Integral):
        raise TypeError(f"Argument 'n_local_trials' must be None, 'auto' or an int >= 1, got "
                        f"{type(n_local_trials).__name__} {n_local_trials!r}")
    return check_int(n_local_trials, "n_local_trials", min_value=1)


def pick_unchosen(weights, chosen, u):
    free = weights.copy()
    free[chosen] = 0.0
    sums = np.empty(n_chunks(free.shape[0]))
    chunk_sums(free, sums)
    return pick_index(free, sums, u)


def check_n_clusters_for_weights(n_clusters, weights):
    n_clusters = check_int(n_clusters, "n_clusters", min_value=1)
    if weights.shape[0] and not weights.any():
        raise ValueError("Argument 'sample_weight' is zero for every sample: a zero total weight "
                         "leaves nothing to cluster")
    n_positive = int(np.count_nonzero(weights))
    if n_clusters > n_positive:
        raise ValueError(f"Argument 'n_clusters' must be <= n_samples = {n_positive} (rows with "
                         f"positive sample weight), got {n_clusters}")
    return n_clusters


def kmeans_plusplus(X: ArrayLike, n_clusters: int, *, sample_weight: ArrayLike | None = None,
                    random_state: np.random.Generator | int | None = None,
                    n_local_trials: Literal["auto"] | int | None = None,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """k-means++ seeding ([KMPP]), weighted, vanilla or greedy.

    The first center is drawn by weight, each next one by weighted D^2 sampling; when every
    remaining point has zero D^2 weight (duplicates), the next center is drawn by weight among the
    points not yet chosen. Rows of weight 0 are never drawn. The same seed gives the same centers
    for any thread count.

    Vanilla seeding (``n_local_trials`` None or 1) draws exactly but reads X far fewer than
    ``n_clusters`` times: rejection sampling from stale D^2 bounds with occasional multi-center
    refresh passes (see ``seed_lazy``). Greedy seeding (``n_local_trials = L >= 2``,
    scikit-learn's k-means++, [Greedy]) draws ``L`` candidates per center by D^2 sampling and
    keeps the one that lowers the potential ``sum_i w_i min(d_i^2, |x_i - c|^2)`` the most (ties:
    the first drawn), at O(n d L) per center; it holds a copy of X and the n x L candidate
    distances.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    n_clusters : int, 1 <= n_clusters <= number of rows with positive weight
    sample_weight : array-like of shape (n_samples,), default=None (all ones)
    random_state : None, int or numpy.random.Generator
    n_local_trials : None, "auto" or int >= 1, default=None
        Candidates per center; None or 1 is vanilla k-means++, "auto" is ``2 + floor(ln k)``
        (scikit-learn's value). Greedy seeding takes ``1 + (n_clusters - 1) * L`` uniforms.

    Returns
    -------
    centers : ndarray of shape (n_clusters, n_features), dtype of X (float32 or float64)
    indices : ndarray of shape (n_clusters,), int64 rows of X, in seeding order

    Examples
    --------
    >>> import numpy as np, fedcore
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> centers, idx = fedcore.kmeans_plusplus(X, 2, random_state=0)
    >>> sorted(int(i) // 2 for i in idx)   # one center from each pair
    [0, 1]
    >>> centers, idx = fedcore.kmeans_plusplus(X, 2, random_state=0, n_local_trials="auto")
    >>> sorted(int(i) // 2 for i in idx)
    [0, 1]
    """
    X = check_array(X, "X", distance_range=True)
    weights = check_sample_weight(sample_weight, X.shape[0])
    n_clusters = check_n_clusters_for_weights(n_clusters, weights)
    check_weighted_range(X, float(weights.sum()), weight_names(sample_weight))
    n_local_trials = check_n_local_trials(n_local_trials, n_clusters)
    rng = check_random_state(random_state)
    rows = _seed_rows(X, weights, rng, n_clusters, n_local_trials)
    return X[rows].copy(), rows
