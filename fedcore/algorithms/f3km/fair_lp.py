"""Fair-LP ([FairLP]), the baseline of [F3KM]: fair assignment to fixed centers.

A linear program with ``n_samples * n_clusters`` variables (solved with HiGHS) assigns rows to
fixed centers under the group-share bounds, then the iterative rounding of [FairLP] makes the
assignment integral.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import (check_array, check_int, check_random_state, check_scalar,
                           check_weighted_range)
from ...kernels.kmeans.distances import pairwise_sq_distances
from ...metrics.fairness import check_fairness_bounds, encode_groups, balance, sse
from ..base import BaseEstimator
from ..kmeans.lloyd import KMeans
from ..kmeans.seeding import seed_lazy

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["FairLP"]

_INTEGRAL = 1e-9


def _fair_assignment_lp(D, codes, L, alpha, beta, time_limit):
    """Solve the fair assignment LP; returns (x of shape (n, k), optimal cost).

    Variables ``x_ij`` (row-major) and ``N_j`` (cluster sizes, so that each fairness row holds
    only the group's members): ``sum_j x_ij = 1``, ``sum_i x_ij = N_j``,
    ``sum_{i in l} x_ij <= alpha_l N_j`` and ``>= beta_l N_j``; minimize ``sum d_ij^2 x_ij``.
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    n, k = D.shape
    nx = n * k
    ii = np.arange(n)
    jj = np.arange(k)
    # equalities: n assignment rows, then k size rows
    rows = [np.repeat(ii, k), n + np.tile(jj, n), n + jj]
    cols = [np.arange(nx), np.arange(nx), nx + jj]
    vals = [np.ones(nx), np.ones(nx), -np.ones(k)]
    A_eq = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n + k, nx + k)).tocsr()
    b_eq = np.concatenate([np.ones(n), np.zeros(k)])
    # inequalities: row (l, j, upper) and (l, j, lower)
    r_list, c_list, v_list = [], [], []
    for a in range(codes.shape[1]):
        g = codes[:, a]
        for j in range(k):
            r_list.append(2 * (g * k + j))
            c_list.append(ii * k + j)
            v_list.append(np.ones(n))
            r_list.append(2 * (g * k + j) + 1)
            c_list.append(ii * k + j)
            v_list.append(-np.ones(n))
    lj = np.arange(L * k)
    r_list += [2 * lj, 2 * lj + 1]
    c_list += [nx + lj % k, nx + lj % k]
    v_list += [-np.repeat(alpha, k), np.repeat(beta, k)]
    A_ub = coo_matrix((np.concatenate(v_list), (np.concatenate(r_list), np.concatenate(c_list))),
                      shape=(2 * L * k, nx + k)).tocsr()
    c = np.concatenate([D.ravel(), np.zeros(k)])
    bounds = np.column_stack([np.zeros(nx + k), np.concatenate([np.ones(nx), np.full(k, n)])])
    options = {} if time_limit is None else {"time_limit": float(time_limit)}
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(2 * L * k), A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                  method="highs", options=options)
    if res.status != 0:
        raise RuntimeError(f"Fair-LP: HiGHS did not solve the assignment LP: {res.message}")
    return res.x[:nx].reshape(n, k), float(res.fun)


# Slack of the feasibility test, the order of HiGHS's primal feasibility tolerance.
_FEASIBILITY_SLACK = 1e-7


def check_feasible(eta, alpha, beta):
    """Refuse bounds that make the fair assignment LP infeasible, naming the bound.

    The LP is feasible if and only if ``beta_l <= eta_l <= alpha_l`` for every group ``l``
    (``eta_l``: the group's share of the data): assigning every row to every cluster in equal
    fractions gives each cluster the shares ``eta``, and summing a group's constraints over the
    clusters gives ``beta_l n <= eta_l n <= alpha_l n``.
    """
    for name, bad in (("alpha", eta > alpha + _FEASIBILITY_SLACK),
                      ("beta", eta < beta - _FEASIBILITY_SLACK)):
        if bad.any():
            l = int(np.argmax(bad))
            side = "below" if name == "alpha" else "above"
            value = alpha[l] if name == "alpha" else beta[l]
            raise ValueError(f"Argument {name!r} makes the fair assignment infeasible: "
                             f"{name}[{l}] = {float(value)!r} is {side} the share "
                             f"{float(eta[l])!r} of group {l} in the data, so no assignment "
                             "can meet it in every cluster")


def _iterative_rounding(x, D, codes, n_attributes):
    """The iterative rounding of [FairLP]. Returns (labels, number of LP rounds, rows rounded by
    the argmax fallback).

    Rows already integral are fixed. On the fractional rows, an LP keeps each row's assignment
    summing to 1 and, for every cluster and every (group, cluster) pair with more than
    ``2 Delta`` fractional variables (``Delta`` = attributes + 1), the total between the floor and
    the ceiling of its current fractional total; a vertex solution (dual simplex) fixes more rows,
    and the loop repeats. If a round fixes no row, the rest take their largest fraction.
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    n, k = x.shape
    labels = np.full(n, -1, dtype=np.int64)
    whole = x.max(axis=1) >= 1.0 - _INTEGRAL
    labels[whole] = x[whole].argmax(axis=1)
    frac = np.flatnonzero(~whole)
    cur = x[frac]
    limit = 2 * (n_attributes + 1)
    rounds = fallback = 0
    while frac.size:
        rounds += 1
        rr, jj = np.nonzero(cur > _INTEGRAL)
        nv = rr.size
        rows, cols, vals, lo, hi = [], [], [], [], []
        eq = coo_matrix((np.ones(nv), (rr, np.arange(nv))), shape=(frac.size, nv)).tocsr()
        nxt = 0
        for j in range(k):
            sel = np.flatnonzero(jj == j)
            if sel.size > limit:
                t = cur[rr[sel], j].sum()
                rows.append(np.full(sel.size, nxt))
                cols.append(sel)
                vals.append(np.ones(sel.size))
                lo.append(math.floor(t + _INTEGRAL)); hi.append(math.ceil(t - _INTEGRAL))
                nxt += 1
        for a in range(codes.shape[1]):
            g = codes[frac[rr], a]
            for key in np.unique(g * k + jj):
                sel = np.flatnonzero(g * k + jj == key)
                if sel.size > limit:
                    t = cur[rr[sel], jj[sel]].sum()
                    rows.append(np.full(sel.size, nxt)); cols.append(sel)
                    vals.append(np.ones(sel.size))
                    lo.append(math.floor(t + _INTEGRAL)); hi.append(math.ceil(t - _INTEGRAL))
                    nxt += 1
        cost = D[frac[rr], jj]
        if nxt:
            M = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                           shape=(nxt, nv)).tocsr()
            from scipy.sparse import vstack
            A_ub = vstack([M, -M]).tocsr()
            b_ub = np.concatenate([np.array(hi, float), -np.array(lo, float)])
        else:
            A_ub, b_ub = None, None
        res = linprog(cost, A_ub=A_ub, b_ub=b_ub, A_eq=eq, b_eq=np.ones(frac.size),
                      bounds=(0, 1), method="highs-ds")
        if res.status != 0:
            raise RuntimeError(f"Fair-LP: HiGHS failed in iterative rounding: {res.message}")
        new = np.zeros_like(cur)
        new[rr, jj] = res.x
        done = new.max(axis=1) >= 1.0 - _INTEGRAL
        if not done.any():
            labels[frac] = new.argmax(axis=1)
            fallback = int(frac.size)
            break
        labels[frac[done]] = new[done].argmax(axis=1)
        frac = frac[~done]
        cur = new[~done]
    return labels, rounds, fallback


class FairLP(BaseEstimator):
    """Fair-LP ([FairLP]: Bera et al., "Fair algorithms for clustering", NeurIPS 2019): the
    baseline of [F3KM].

    From fixed centers (given, or k-means++ then Lloyd), solve the fair assignment LP with
    ``n_samples * n_clusters`` variables (scipy's HiGHS), then round it by the iterative rounding
    of [FairLP], which guarantees an additive violation of at most ``4 Delta + 3`` (``Delta`` =
    number of attributes + 1) and in practice is small. The rounded assignment is reported as is:
    its SSE against its own cluster means (``inertia_``, comparable with :class:`FairKMeans`), its
    cost against the fixed centers (``assignment_cost_``), the LP optimum (``lp_cost_``), the
    balance and the additive violation.

    Parameters
    ----------
    n_clusters : int, default=8
    delta : float in [0, 1), default=0.2
    alpha, beta : array-like of shape (n_groups,), default=None (from ``delta``)
    init : "k-means++" or array-like of shape (n_clusters, n_features), default="k-means++"
        Centers; "k-means++" seeds, then runs Lloyd (:class:`fedcore.KMeans`) to convergence.
    max_iter : int, default=300, Lloyd iterations when ``init="k-means++"``
    time_limit : float or None, default=None, seconds for HiGHS on the main LP
    random_state : None, int or numpy.random.Generator

    Attributes
    ----------
    labels_, cluster_centers_ (the fixed centers), inertia_, assignment_cost_, lp_cost_,
    balance_, violation_, n_rounding_lps_, n_rounding_fallback_ (rows rounded by argmax), alpha_,
    beta_

    Examples
    --------
    >>> import numpy as np
    >>> from fedcore.algorithms.f3km import FairLP
    >>> X = np.array([[0.0], [0.1], [0.2], [0.3], [5.0], [5.1], [5.2], [5.3]])
    >>> color = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    >>> model = FairLP(2, delta=0.2, random_state=0).fit(X, groups=color)
    >>> model.violation_ <= 4 * 2 + 3, sorted(np.bincount(model.labels_).tolist())
    (True, [4, 4])
    """

    def __init__(self, n_clusters: int = 8, *, delta: float = 0.2,
                 alpha: ArrayLike | None = None, beta: ArrayLike | None = None,
                 init: Literal["k-means++"] | ArrayLike = "k-means++", max_iter: int = 300,
                 time_limit: float | None = None,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.delta = delta
        self.alpha = alpha
        self.beta = beta
        self.init = init
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: object = None,
            groups: ArrayLike | Sequence[ArrayLike] | None = None) -> Self:
        X = check_array(X, "X", distance_range=True)
        n = X.shape[0]
        check_weighted_range(X, float(n))  # the LP's cost and the SSE add n squared distances
        k = check_int(self.n_clusters, "n_clusters", min_value=1, max_value=n)
        if isinstance(self.init, str):  # Lloyd from k-means++ runs max_iter iterations
            check_int(self.max_iter, "max_iter", min_value=1)
        delta = check_scalar(self.delta, "delta", min_value=0.0, max_value=1.0)
        if delta >= 1.0:
            raise ValueError(f"Argument 'delta' must be < 1, got {delta}")
        if self.time_limit is not None:
            check_scalar(self.time_limit, "time_limit", min_value=0.0, include_min=False)
        codes, sizes, _ = encode_groups(groups, n)
        L = int(sum(sizes))
        eta = np.zeros(L)
        for a in range(codes.shape[1]):
            eta += np.bincount(codes[:, a], minlength=L)
        eta /= n
        alpha = eta / (1 - delta) if self.alpha is None else \
            check_fairness_bounds(self.alpha, "alpha", L)
        beta = eta * (1 - delta) if self.beta is None else \
            check_fairness_bounds(self.beta, "beta", L)
        check_feasible(eta, alpha, beta)
        centers = self._centers(X, k)
        D = np.empty((n, k))
        pairwise_sq_distances(X, np.ascontiguousarray(centers.T), D)
        x, lp_cost = _fair_assignment_lp(D, codes, L, alpha, beta, self.time_limit)
        labels, rounds, fallback = _iterative_rounding(x, D, codes, codes.shape[1])
        self.labels_ = labels
        self.cluster_centers_ = centers.astype(X.dtype, copy=False)
        self.lp_cost_ = lp_cost
        self.assignment_cost_ = float(D[np.arange(n), labels].sum())
        self.inertia_ = sse(X, labels)
        self.balance_ = balance(labels, list(codes.T), n_clusters=k)
        counts = np.bincount(labels, minlength=k)
        gc = np.zeros((L, k))
        for a in range(codes.shape[1]):
            np.add.at(gc, (codes[:, a], labels), 1)
        self.violation_ = float(max(0.0, (gc - alpha[:, None] * counts).max(),
                                    (beta[:, None] * counts - gc).max()))
        self.n_rounding_lps_ = rounds
        self.n_rounding_fallback_ = fallback
        self.alpha_, self.beta_ = alpha, beta
        self.n_features_in_ = X.shape[1]
        return self

    def _centers(self, X, k):
        if isinstance(self.init, str):
            if self.init != "k-means++":
                raise ValueError(f"Argument 'init' must be 'k-means++' or an array, "
                                 f"got {self.init!r}")
            rng = check_random_state(self.random_state)
            rows, _, _ = seed_lazy(X, np.ones(X.shape[0]), rng, k)
            model = KMeans(k, init=X[rows].astype(np.float64), max_iter=self.max_iter, tol=0.0)
            return model.fit(X).cluster_centers_.astype(np.float64)
        init = check_array(self.init, "init", dtype=("float64",), distance_range=True)
        if init.shape != (k, X.shape[1]):
            raise ValueError(f"Argument 'init' must have shape ({k}, {X.shape[1]}), "
                             f"got {init.shape}")
        return init
