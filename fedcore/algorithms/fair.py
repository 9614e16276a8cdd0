"""Fair k-means: F3KM (ADMM on the augmented Lagrangian, Alg. 4/5) and the Fair-LP baseline.

F3KM solves eq. (20): minimize the k-means objective subject to ``beta_l <= p_l^T f_j / f_j^T f_j
<= alpha_l`` for every cluster ``j`` and protected group ``l``, by ADMM on eq. (24): the F-step is a
BCD sweep on the Lagrangian (eqs. (26)-(30), kernels in :mod:`fedcore.kernels.cd_kmeans`), then
Theta by eq. (31) and U by eq. (32). Fair-LP (Bera et al. 2019) assigns rows to fixed centers by
a linear program solved with HiGHS and rounds it iteratively.
"""
import math

import numpy as np

from .._validation import check_array, check_int, check_random_state, check_scalar
from ..federation.ledger import CommLedger
from ..kernels.distances import pairwise_sq_distances
from ..metrics.fairness import _check_bounds, _encode_groups, balance, sse
from ._base import BaseEstimator
from .cdkm import (_check_data, _Engine, _final_centers, _initial_labels, _Party,
                   _resolve_block_size, _store_bcd_result)
from .kmeans import KMeans, _kmeans_plusplus_lazy

__all__ = ["FairKMeans", "FairLP", "fair_kmeans"]


def _group_layout(groups, fed, n):
    """Per party: (codes or None, number of groups, eta of its groups), and the flat group list."""
    if fed is not None:
        if groups is not None:
            raise ValueError("Argument 'groups' must be None when fitting a VerticalFederation "
                             "(each party's sensitive attributes come from the federation), got "
                             f"{type(groups).__name__}")
        per_party = [fed.groups(j) for j in range(fed.n_parties)]
    else:
        per_party = [groups]
    layout = []
    for attrs in per_party:
        if attrs is None or (isinstance(attrs, list) and len(attrs) == 0):
            layout.append((None, 0, np.zeros(0)))
            continue
        codes, sizes, _ = _encode_groups(attrs, n)
        L = int(sum(sizes))
        eta = np.zeros(L)
        for a in range(codes.shape[1]):
            eta += np.bincount(codes[:, a], minlength=L)
        layout.append((codes, L, eta / n))
    if sum(L for _, L, _ in layout) == 0:
        raise ValueError("FairKMeans needs at least one sensitive attribute: argument 'groups' "
                         "(or the federation's groups) holds none")
    return layout


def _violation(party, alpha, beta):
    """Largest additive violation (eq. (33)) of one party's groups, from its cached counts."""
    if party.n_groups == 0:
        return 0.0
    n = party.counts.astype(np.float64)
    c = party.group_counts.astype(np.float64)
    over = c - alpha[:, None] * n[None, :]
    under = beta[:, None] * n[None, :] - c
    return float(max(0.0, over.max(), under.max()))


def _update_dual(party, alpha, beta, rho):
    """Eq. (31) (Theta: the exact box-constrained minimizer, a clip to [beta, alpha]) and eq. (32)."""
    full = party.counts > 0
    if party.n_groups == 0 or not full.any():
        return
    ratio = party.group_counts[:, full] / party.counts[full][None, :]
    u = party.u[:, full]
    with np.errstate(over="ignore"):  # a tiny rho sends u / rho to +-inf; the clip is exact
        target = ratio - u / rho if rho > 0 else ratio
    theta = np.clip(target, beta[:, None], alpha[:, None])
    party.theta[:, full] = theta
    if rho > 0:
        party.u[:, full] = u + rho * (theta - ratio)


def fair_kmeans(X, n_clusters, groups=None, *, delta=0.2, alpha=None, beta=None,
                block_size="auto", rho=1.0, rho_schedule="sqrt", violation=1, max_iter=100,
                tol=1e-4, random_state=None):
    """F3KM on an array (``groups`` given) or a ``VerticalFederation``; see :class:`FairKMeans`.

    Returns a dict with the fitted quantities (``labels``, ``centers``, ``inertia``, ``balance``,
    ``violation``, ``n_iter``, ``objective_history``, ``violation_history``, ``comm``...).
    """
    arrays, fed = _check_data(X)
    k = check_int(n_clusters, "n_clusters", min_value=1)
    delta = check_scalar(delta, "delta", min_value=0.0, max_value=1.0)
    if delta >= 1.0:
        raise ValueError(f"Argument 'delta' must be < 1, got {delta}")
    rho = check_scalar(rho, "rho", min_value=0.0)
    if rho_schedule not in ("sqrt", "constant"):
        raise ValueError(f"Argument 'rho_schedule' must be 'sqrt' or 'constant', "
                         f"got {rho_schedule!r}")
    lam = check_scalar(violation, "violation", min_value=0.0)
    max_iter = check_int(max_iter, "max_iter", min_value=1)
    tol = check_scalar(tol, "tol", min_value=0.0)
    rng = check_random_state(random_state)
    n = arrays[0].shape[0]
    nb = _resolve_block_size(block_size, n)
    layout = _group_layout(groups, fed, n)
    L = sum(g for _, g, _ in layout)
    eta = np.concatenate([e for _, _, e in layout])
    alpha_all = eta / (1.0 - delta) if alpha is None else _check_bounds(alpha, "alpha", L)
    beta_all = eta * (1.0 - delta) if beta is None else _check_bounds(beta, "beta", L)
    if (beta_all > alpha_all).any():
        i = int(np.argmax(beta_all > alpha_all))
        raise ValueError(f"Argument 'beta' must not exceed 'alpha', got beta={beta_all[i]!r} > "
                         f"alpha={alpha_all[i]!r} for group {i}")

    labels, seeds = _initial_labels(arrays, fed, k, rng)
    parties, bounds, start = [], [], 0
    for A, (codes, g, _) in zip(arrays, layout):
        parties.append(_Party(A, k, codes, g))
        bounds.append((alpha_all[start:start + g], beta_all[start:start + g]))
        start += g
    ledger = CommLedger() if fed is not None else None
    engine = _Engine(parties, labels, k, nb, ledger)
    engine.record_initialization(None)
    # The k-means part of eq. (24) enters as SSE / T (T = total sum of squares: the fraction of
    # variance left unexplained), so rho and U mean the same at any n and in any units.
    fair_scale = engine.total_sumsq if engine.total_sumsq > 0 else 1.0
    for p, (a, b) in zip(parties, bounds):
        _update_dual(p, a, b, 0.0)  # Theta by eq. (31) at U = 0
    sse_hist = [engine.sse()]
    viol_hist = [max(_violation(p, a, b) for p, (a, b) in zip(parties, bounds))]
    n_iter = ranges = 0
    for n_iter in range(1, max_iter + 1):
        rho_t = rho * math.sqrt(n_iter) if rho_schedule == "sqrt" else rho
        moved, r = engine.sweep(rho_t, fair_scale)
        ranges += r
        for p, (a, b) in zip(parties, bounds):
            _update_dual(p, a, b, rho_t)
        if ledger is not None:
            engine.round += 1
            engine._record("update Theta, U; report violation and SSE part", down=1, up=2)
        sse_hist.append(engine.sse())
        viol_hist.append(max(_violation(p, a, b) for p, (a, b) in zip(parties, bounds)))
        stagnant = moved == 0 or abs(sse_hist[-2] - sse_hist[-1]) <= tol * sse_hist[-2]
        if viol_hist[-1] <= lam and stagnant:
            break
    centers, inertia, counts = _final_centers(arrays, labels, k, seeds)
    bal = np.full(k, np.inf)
    for p, (codes, g, e) in zip(parties, layout):
        if g == 0:
            continue
        for j in range(k):
            if counts[j] == 0:
                bal[j] = np.nan
                continue
            share = p.group_counts[:, j] / counts[j]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(share > 0, np.minimum(e / share, share / e), 0.0)
            bal[j] = min(bal[j], float(ratio.min()))
    return {"labels": labels, "centers": centers, "inertia": inertia, "balance": bal,
            "violation": viol_hist[-1], "n_iter": n_iter, "objective_history": np.array(sse_hist),
            "violation_history": np.array(viol_hist), "n_ranges": ranges, "comm": ledger,
            "alpha": alpha_all, "beta": beta_all, "block_size": nb, "dtype": arrays[0].dtype}


class FairKMeans(BaseEstimator):
    """F3KM: federated, fair and fast k-means (Zhu et al. 2023, Alg. 4/5).

    Minimizes the k-means objective subject to the fairness constraints of Bera et al. (eq. (14)):
    in every cluster the share of every protected group ``l`` lies in ``[beta_l, alpha_l]``.
    ADMM on the augmented Lagrangian (24): each iteration ``t`` runs one BCD sweep on the
    Lagrangian with Theta and U fixed (eqs. (27)-(29); blocks as in :class:`BCDKM`), then
    Theta by eq. (31) and U by eq. (32) with penalty ``rho_t``.

    ``fit(X, groups)`` takes an array and one categorical array per sensitive attribute (the color
    matrix P of Fig. 3 is built internally), or ``fit(vfed)`` a ``VerticalFederation`` whose
    parties may hold different sensitive attributes, several, or none (Sec. 4.2.1): each party
    keeps its own Theta_h and U_h, the server sums the parties' objectives, and ``comm_`` records
    the rounds (b per sweep plus one for Theta/U, plus the initialization; Theorem 1).

    Choices where the paper is silent (tested):

    * The k-means part of eq. (24) is divided by the total sum of squares T of the data (it becomes
      the fraction of variance left unexplained), i.e. the fairness terms are multiplied by T, so
      ``rho`` and U are free of the data's units and of n.
    * Theta is the exact minimizer of eq. (24) over the box, ``clip(ratio - u / rho, beta, alpha)``
      (as the reference MATLAB code does), initialized at ``clip(ratio, beta, alpha)`` with U = 0.
    * Empty clusters carry no constraint and contribute 0 to the Lagrangian; their Theta and U are
      not updated. Block rules (singletons, no emptied cluster, split of a block that does not
      lower the Lagrangian) are those of :class:`BCDKM`.
    * Stops after iteration ``t`` when the additive violation (33) is at most ``violation`` and the
      objective stagnates (no row moved, or the relative SSE change is at most ``tol``), else after
      ``max_iter`` iterations.

    With ``rho=0`` every fairness term vanishes and the labels equal :class:`BCDKM`'s for the same
    seed and block size.

    Parameters
    ----------
    n_clusters : int, default=8
    delta : float in [0, 1), default=0.2
        ``alpha_l = eta_l / (1 - delta)``, ``beta_l = eta_l (1 - delta)`` (Sec. 5.1), with
        ``eta_l`` the share of group ``l`` in the data.
    alpha, beta : array-like of shape (n_groups,), default=None
        Explicit bounds, groups ordered by party, attribute, then sorted category.
    block_size : int or "auto", default="auto" (ceil(n / 4))
    rho : float >= 0, default=1.0
        Penalty of eq. (24) on the normalized objective. On the paper's real tables (delta=0.2,
        k=4) rho=1 gives relative errors close to Fair-LP's with violations within lambda; larger
        values enforce fairness sooner at a higher SSE (rho=10: every run met the bounds, relative
        error up to 1.14); 1e3 (the raw-unit value of the reference code) is far too strong here.
    rho_schedule : {"sqrt", "constant"}, default="sqrt"
        ``rho_t = rho * sqrt(t)`` (the reference MATLAB code's increasing penalty) or ``rho``.
    violation : float >= 0, default=1
        lambda of the stopping rule (33).
    max_iter : int, default=100
    tol : float >= 0, default=1e-4
        Relative SSE change below which the objective counts as stagnant.
    random_state : None, int or numpy.random.Generator

    Attributes
    ----------
    labels_, cluster_centers_, inertia_ (SSE of the partition), n_iter_, n_features_in_
    balance_ : ndarray of shape (n_clusters,), balance of each cluster (Sec. 5.1; NaN if empty)
    violation_ : float, largest additive violation (33) of the result
    objective_history_, violation_history_ : ndarray of shape (n_iter_ + 1,)
    alpha_, beta_ : ndarray of shape (n_groups,), the bounds used
    comm_ : CommLedger (only after fitting a federation)

    Examples
    --------
    >>> import numpy as np
    >>> from fedcore.algorithms.fair import FairKMeans
    >>> X = np.array([[0.0], [0.1], [0.2], [0.3], [5.0], [5.1], [5.2], [5.3]])
    >>> color = np.array([0, 0, 0, 0, 1, 1, 1, 1])       # each natural cluster is one color
    >>> model = FairKMeans(2, delta=0.2, random_state=0).fit(X, groups=color)
    >>> model.violation_ <= 1, bool(model.balance_.min() > 0)
    (True, True)
    """

    def __init__(self, n_clusters=8, *, delta=0.2, alpha=None, beta=None, block_size="auto",
                 rho=1.0, rho_schedule="sqrt", violation=1, max_iter=100, tol=1e-4,
                 random_state=None):
        self.n_clusters = n_clusters
        self.delta = delta
        self.alpha = alpha
        self.beta = beta
        self.block_size = block_size
        self.rho = rho
        self.rho_schedule = rho_schedule
        self.violation = violation
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, y=None, groups=None):
        """Fit on an array with ``groups``, or on a ``VerticalFederation`` (groups inside)."""
        params = self.get_params()
        k = params.pop("n_clusters")
        result = fair_kmeans(X, k, groups, **params)
        for name in ("balance", "violation", "violation_history", "alpha", "beta"):
            setattr(self, name + "_", result[name])
        return _store_bcd_result(self, result)

    def fit_predict(self, X, y=None, groups=None):
        return self.fit(X, groups=groups).labels_


# --------------------------------------------------------------------------------------------
# Fair-LP (Bera et al. 2019)
# --------------------------------------------------------------------------------------------

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


def _iterative_rounding(x, D, codes, n_attributes):
    """Bera et al.'s iterative rounding. Returns (labels, number of LP rounds, rows rounded by
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
                rows.append(np.full(sel.size, nxt)); cols.append(sel); vals.append(np.ones(sel.size))
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
    """Fair-LP (Bera et al., "Fair algorithms for clustering", NeurIPS 2019): the paper's baseline.

    From fixed centers (given, or k-means++ then Lloyd), solve the fair assignment LP with
    ``n_samples * n_clusters`` variables (scipy's HiGHS), then round it by Bera et al.'s iterative
    rounding, which guarantees an additive violation of at most ``4 Delta + 3`` (``Delta`` =
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
    >>> from fedcore.algorithms.fair import FairLP
    >>> X = np.array([[0.0], [0.1], [0.2], [0.3], [5.0], [5.1], [5.2], [5.3]])
    >>> color = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    >>> model = FairLP(2, delta=0.2, random_state=0).fit(X, groups=color)
    >>> model.violation_ <= 4 * 2 + 3, sorted(np.bincount(model.labels_).tolist())
    (True, [4, 4])
    """

    def __init__(self, n_clusters=8, *, delta=0.2, alpha=None, beta=None, init="k-means++",
                 max_iter=300, time_limit=None, random_state=None):
        self.n_clusters = n_clusters
        self.delta = delta
        self.alpha = alpha
        self.beta = beta
        self.init = init
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.random_state = random_state

    def fit(self, X, y=None, groups=None):
        X = check_array(X, "X")
        n = X.shape[0]
        k = check_int(self.n_clusters, "n_clusters", min_value=1, max_value=n)
        delta = check_scalar(self.delta, "delta", min_value=0.0, max_value=1.0)
        if delta >= 1.0:
            raise ValueError(f"Argument 'delta' must be < 1, got {delta}")
        if self.time_limit is not None:
            check_scalar(self.time_limit, "time_limit", min_value=0.0, include_min=False)
        codes, sizes, _ = _encode_groups(groups, n)
        L = int(sum(sizes))
        eta = np.zeros(L)
        for a in range(codes.shape[1]):
            eta += np.bincount(codes[:, a], minlength=L)
        eta /= n
        alpha = eta / (1 - delta) if self.alpha is None else _check_bounds(self.alpha, "alpha", L)
        beta = eta * (1 - delta) if self.beta is None else _check_bounds(self.beta, "beta", L)
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
            rows, _, _ = _kmeans_plusplus_lazy(X, np.ones(X.shape[0]), rng, k)
            model = KMeans(k, init=X[rows].astype(np.float64), max_iter=self.max_iter, tol=0.0)
            return model.fit(X).cluster_centers_.astype(np.float64)
        init = check_array(self.init, "init", dtype=("float64",))
        if init.shape != (k, X.shape[1]):
            raise ValueError(f"Argument 'init' must have shape ({k}, {X.shape[1]}), "
                             f"got {init.shape}")
        return init
