"""Vertical regularized linear regression (VRLR, [VFLC] Def. 2.1): ridge, lasso and elastic net
([VFLC] Section 6 and Appendix A.2), with central and SAGA solvers.

Objective on the rows used, with weights ``w`` (ones on full data, coreset weights otherwise)::

    sum_i w_i (x_i . theta - y_i)^2 + alpha |theta|_2^2 + l1_alpha |theta|_1

``l1_alpha = 0`` is ridge, ``alpha = 0`` the lasso, both positive the elastic net. [VFLC]
Appendix A.2 uses ``R = 2n |theta|_1`` (lasso) and ``R = 2n |theta|_1 + n |theta|_2^2`` (elastic
net), that is ``l1_alpha = 2n`` and ``alpha = n``. In scikit-learn's terms (``ElasticNet``, which
minimizes ``1/(2 W) sum_i w_i r_i^2 + a rho |theta|_1 + a (1 - rho)/2 |theta|^2`` with
``W = sum(w)``), the same minimizer has ``a rho = l1_alpha / (2 W)`` and
``a (1 - rho) = alpha / W``.

There is no intercept ([VFLC] Def. 2.1); centre ``y`` and the features first (each party can do
so on its own columns, and the last party on ``y``). Coreset weights sum to about ``n``, so the
same penalties ([VFLC] Section 6 uses ``alpha = 0.1 n``) keep their meaning on a coreset.
"""
from __future__ import annotations

import sys
import warnings
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
import scipy.linalg

from ..._validation import check_fitted_array, check_int, check_random_state, check_scalar
from ...federation.ledger import SERVER, CommLedger
from ...federation.vertical import VerticalFederation
from ...kernels.coreset import elastic_net_sweep, saga_epoch
from ..base import BaseEstimator, check_is_fitted
from .coreset import _sample_rows, check_vertical_range
from .coreset_result import Coreset, _check_federation, check_coreset, gather

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["VerticalRidge", "elastic_net_central", "ridge_central", "ridge_saga"]

_ROW_BLOCK = 65536

# Central elastic net: coordinate-descent sweeps (at most _CD_SWEEPS, optimality checked every
# _CD_CHECK), then active-set steps (at most _ACTIVE_SET_STEPS_PER_FEATURE per feature + 10) until
# every optimality condition holds to _KKT_TOL times the largest |2 b_f|.
_KKT_TOL = 1e-10
_CD_SWEEPS = 1000
_CD_CHECK = 10
_ACTIVE_SET_STEPS_PER_FEATURE = 10


def _normal_equations(X, y, weights):
    """``X^T W X`` and ``X^T W y`` with row blocks (no ``n x d`` temporary)."""
    d = X.shape[1]
    gram = np.zeros((d, d))
    rhs = np.zeros(d)
    for s in range(0, X.shape[0], _ROW_BLOCK):
        Xb = np.asarray(X[s:s + _ROW_BLOCK], dtype=np.float64)
        wb = weights[s:s + _ROW_BLOCK]
        gram += Xb.T @ (Xb * wb[:, None])
        rhs += Xb.T @ (wb * y[s:s + _ROW_BLOCK])
    return gram, rhs


def ridge_central(X: np.ndarray, y: np.ndarray, weights: np.ndarray,
                  alpha: float) -> np.ndarray:
    """Closed form ``(X^T W X + alpha I)^-1 X^T W y`` with row blocks (no ``n x d`` temporary).

    Solved by Cholesky; when that fails (``alpha = 0`` and a singular ``X^T W X``), the
    minimum-norm least-squares solution of the normal equations.
    """
    d = X.shape[1]
    gram, rhs = _normal_equations(X, y, weights)
    gram[np.diag_indices(d)] += alpha
    try:
        return scipy.linalg.solve(gram, rhs, assume_a="pos")
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return np.linalg.lstsq(gram, rhs, rcond=None)[0]


def _kkt_violation(hessian, rhs, half, theta):
    """Largest violation of the optimality conditions of
    ``F(theta) = theta^T H theta - 2 b^T theta + 2 half |theta|_1 + const``
    (``H = X^T W X + alpha I``): with ``g = 2 (H theta - b)`` (the gradient of the smooth part),
    ``|g_f + 2 half sign(theta_f)|`` where ``theta_f != 0``, ``max(|g_f| - 2 half, 0)`` where
    ``theta_f = 0``: the distance from 0 to the subdifferential, coordinate by coordinate."""
    g = hessian @ theta - rhs
    nonzero = theta != 0.0
    v = np.where(nonzero, np.abs(g + half * np.sign(theta)), np.maximum(np.abs(g) - half, 0.0))
    return 2.0 * float(v.max()) if v.size else 0.0


def _sign_pattern_solve(hessian, rhs, half, active, signs):
    """Minimizer of ``F`` over the coordinates ``active`` with their signs fixed: the solution of
    ``H_AA t = b_A - half s_A``, of least norm by an SVD with the default rank cut, so that
    collinear columns (``alpha = 0``; a singular or nearly singular ``H_AA``) give a finite
    minimizer instead of a Cholesky factor's rounding noise."""
    H = hessian[np.ix_(active, active)]
    r = rhs[active] - half * signs
    return np.linalg.lstsq(H, r, rcond=None)[0]


def _active_set_refine(hessian, rhs, half, theta, target, max_steps):
    """Feature-sign search (H. Lee, A. Battle, R. Raina, A. Y. Ng, "Efficient sparse coding
    algorithms", NIPS 2007) from ``theta``: on the current sign pattern, solve the reduced problem
    exactly; if its solution keeps the signs, move there, else to the best point of the segment
    to it (its end, or where a coordinate reaches 0); when the nonzero coordinates are optimal,
    free the zero coordinate that violates its condition most. ``F`` never increases (up to
    rounding); stops when every violation (as in :func:`_kkt_violation`) is ``<= target``, when a
    step gains nothing, or after ``max_steps`` steps. Returns ``(theta, steps)``."""
    def q(t):
        return float(t @ (hessian @ t)) - 2.0 * float(rhs @ t) + 2.0 * half * float(np.abs(t).sum())

    theta = theta.copy()
    signs = np.sign(theta)
    steps = 0
    target = 0.5 * target     # in units of H theta - b
    while steps < max_steps:
        g = hessian @ theta - rhs
        nonzero = theta != 0.0
        active_violation = np.abs(g + half * signs)[nonzero]
        zero_violation = np.where(nonzero, 0.0, np.abs(g) - half)
        if (active_violation.max() if active_violation.size else 0.0) <= target:
            f = int(np.argmax(zero_violation))
            if zero_violation[f] <= target:
                break
            signs[f] = -np.sign(g[f])
        active = np.flatnonzero(signs)
        start = theta[active]
        end = _sign_pattern_solve(hessian, rhs, half, active, signs[active])
        steps += 1
        if np.array_equal(np.sign(end), signs[active]):
            # the minimizer on the sign pattern's orthant: no worse than theta, taken even when
            # the gain is below the rounding of F (the end game of an ill-conditioned problem)
            theta = np.zeros_like(theta)
            theta[active] = end
            signs = np.sign(theta)
            continue
        candidates = [end]
        crossing = (start != 0.0) & (np.sign(end) != np.sign(start))
        for i in np.flatnonzero(crossing):
            point = start + (start[i] / (start[i] - end[i])) * (end - start)
            point[i] = 0.0
            candidates.append(point)
        current = q(theta)
        best, best_value = None, current
        for point in candidates:
            trial = np.zeros_like(theta)
            trial[active] = point
            value = q(trial)
            if value < best_value:
                best, best_value = trial, value
        if best is None:    # no candidate improves F: rounding level reached
            break
        theta = best
        signs = np.sign(theta)
    return theta, steps


def elastic_net_central(X: np.ndarray, y: np.ndarray, weights: np.ndarray, alpha: float,
                        l1_alpha: float, *, tol: float = _KKT_TOL,
                        max_sweeps: int = _CD_SWEEPS) -> tuple[np.ndarray, int]:
    """Weighted lasso / elastic net on the normal equations: coordinate descent, then an exact
    active-set finish.

    Minimizes ``F(theta) = sum_i w_i (x_i . theta - y_i)^2 + alpha |theta|^2 + l1_alpha
    |theta|_1`` on validated input (``l1_alpha > 0``, ``alpha >= 0``). ``G = X^T W X`` and
    ``b = X^T W y`` are formed once (row blocks, ``O(m d^2)``). Cyclic coordinate descent
    (:func:`~fedcore.kernels.coreset.elastic_net_sweep`: each coordinate to its exact minimizer, a
    soft-threshold; ``O(d^2)`` per sweep) runs until the optimality conditions hold to
    ``tol * max_f |2 b_f|`` (the subdifferential of ``F`` within that distance of 0 along every
    coordinate; checked every 10 sweeps) or for ``max_sweeps`` sweeps; then, if needed,
    feature-sign search (an active-set method: exact solves on the sign pattern and a line search
    over sign changes, which never increases ``F``) finishes where coordinate descent is slow
    (nearly collinear columns). A ``RuntimeWarning`` says when ``tol`` was not reached.

    Returns ``(theta, n_iter)``: coordinate-descent sweeps plus active-set steps.
    """
    d = X.shape[1]
    gram, rhs = _normal_equations(X, y, weights)
    hessian = gram + alpha * np.eye(d)
    half = 0.5 * l1_alpha
    target = tol * 2.0 * float(np.max(np.abs(rhs))) if d else 0.0
    theta = np.zeros(d)
    grad = np.zeros(d)
    n_sweeps = 0
    violation = _kkt_violation(hessian, rhs, half, theta)
    while violation > target and n_sweeps < max_sweeps:
        for _ in range(min(_CD_CHECK, max_sweeps - n_sweeps)):
            elastic_net_sweep(gram, rhs, alpha, l1_alpha, theta, grad)
            n_sweeps += 1
        grad = gram @ theta   # no drift of the running G theta over many sweeps
        violation = _kkt_violation(hessian, rhs, half, theta)
    steps = 0
    if violation > target:
        theta, steps = _active_set_refine(hessian, rhs, half, theta, target,
                                          _ACTIVE_SET_STEPS_PER_FEATURE * d + 10)
        violation = _kkt_violation(hessian, rhs, half, theta)
    if violation > target:
        warnings.warn(f"The elastic net's optimality conditions hold to {violation:.3g} after "
                      f"{n_sweeps} sweeps and {steps} active-set steps, above the target "
                      f"{target:.3g} (tol={tol}); the solution is approximate", RuntimeWarning,
                      stacklevel=2)
    return theta, n_sweeps + steps


def ridge_saga(X: np.ndarray, y: np.ndarray, weights: np.ndarray, alpha: float,
               edges: np.ndarray, *, max_iter: int, tol: float, step_size: float | None,
               rng: np.random.Generator, ledger: CommLedger, start: int,
               l1_alpha: float = 0.0) -> tuple[np.ndarray, int]:
    """Vertical (proximal) SAGA on validated input; returns ``(theta, n_epochs)`` and records its
    messages.

    Minimizes ``sum_i p_i h_i + (l1_alpha / W) |theta|_1``,
    ``h_i = (x_i.theta - y_i)^2 + (alpha / W) |theta|^2`` with ``p = w / W``, ``W = sum(w)`` (same
    minimizer as the weighted objective). Rows are drawn i.i.d. by ``p`` from a seed the server
    shares once; default step ``1 / (3 L)`` with ``L = max_i 2 |x_i|^2 + 2 alpha / W`` ([SAGA]).
    The l1 term enters by its proximal operator (soft-thresholding, [SAGA] Section 2), which each
    party applies to its own block: the lasso and the elastic net send what ridge sends.
    Protocol (``T`` parties):

    * setup: each party sends ``|x_i^(j)|^2`` of its rows (the server needs ``L``); the server sends
      the step and the seed, and, when the weights are not all equal (a DIS coreset), the ``m``
      weights (each party needs ``p_i`` for its block of the gradient table, and ``W`` for the
      penalties; equal weights are ``n / m`` or 1, which every party knows); the last party sends
      ``-y`` (the residuals at ``theta = 0``), the server forwards them to every party, which
      initializes its block of the gradient table;
    * each step: every party sends its partial product (the last one minus ``y_i``), the server
      returns the residual ``r`` to every party (``2T`` elements); one ledger entry per party,
      direction and epoch holds that epoch's per-step scalars;
    * each epoch: parties send ``|d theta^(j)|^2`` and ``|theta^(j)|^2``, the server answers
      continue / stop; stop when ``|d theta| <= tol |theta|`` or after ``max_iter`` epochs;
    * end: every party sends ``theta^(j)`` to the server.
    """
    m, d = X.shape
    T = edges.shape[0] - 1
    W = float(weights.sum())
    p = np.ascontiguousarray(weights / W)
    reg = alpha / W
    l1 = l1_alpha / W
    sq_norms = np.einsum("ij,ij->i", X, X, dtype=np.float64) if m else np.zeros(0)
    rnd = start
    equal_weights = bool(np.all(weights == weights[0])) if m else True
    for j in range(T):
        ledger.record(rnd, sender=j, receiver=SERVER, kind="row_norms", n_elements=m)
        ledger.record(rnd, sender=SERVER, receiver=j, kind="step_and_seed", n_elements=2)
        if not equal_weights:
            ledger.record(rnd, sender=SERVER, receiver=j, kind="weights", n_elements=m)
    ledger.record(rnd, sender=T - 1, receiver=SERVER, kind="residuals", n_elements=m)
    for j in range(T):
        ledger.record(rnd, sender=SERVER, receiver=j, kind="residuals", n_elements=m)
    step = step_size if step_size is not None else 1.0 / (3.0 * (2.0 * sq_norms.max() + 2.0 * reg))
    theta = np.zeros(d)
    memory = -y.copy()
    grad_avg = 2.0 * (np.asarray(X, dtype=np.float64).T @ (p * memory))
    n_epochs = 0
    for n_epochs in range(1, max_iter + 1):
        rnd += 1
        order = _sample_rows(p, rng.random(m))
        before = theta.copy()
        saga_epoch(X, y, edges, order, p, theta, memory, grad_avg, step, reg, l1)
        for j in range(T):
            ledger.record(rnd, sender=j, receiver=SERVER, kind="partial_products", n_elements=m)
            ledger.record(rnd, sender=SERVER, receiver=j, kind="residuals", n_elements=m)
            ledger.record(rnd, sender=j, receiver=SERVER, kind="progress", n_elements=2)
            ledger.record(rnd, sender=SERVER, receiver=j, kind="continue", n_elements=1)
        with np.errstate(over="ignore", invalid="ignore"):
            moved = float(np.sqrt(np.sum((theta - before) ** 2)))
            size = float(np.sqrt(np.sum(theta ** 2)))
        if not (np.isfinite(moved) and np.isfinite(size)):
            raise FloatingPointError(f"SAGA diverged at epoch {n_epochs}; lower 'step_size' "
                                     f"(got {step})")
        if moved <= tol * size:
            break
    for j in range(T):
        ledger.record(rnd + 1, sender=j, receiver=SERVER, kind="coefficients",
                      n_elements=int(edges[j + 1] - edges[j]))
    return theta, n_epochs


class VerticalRidge(BaseEstimator):
    """Regularized linear regression (VRLR, [VFLC] Def. 2.1) on a vertical federation, on the
    full data or on a coreset: ridge, lasso ([VFLC] Appendix A.2) or elastic net.

    Minimizes ``sum_i w_i (x_i . theta - y_i)^2 + alpha |theta|_2^2 + l1_alpha |theta|_1`` over
    the rows used (``w = 1`` on the full data, the coreset weights otherwise); see
    :mod:`fedcore.algorithms.vfl.ridge` for scikit-learn's scaling of the same objective.

    Parameters
    ----------
    alpha : float >= 0, default=1.0
        Penalty ``alpha |theta|_2^2`` added to the (weighted) sum of squared residuals; absolute,
        not per row (the ``lambda = 0.1 n`` of [VFLC] Section 6 is ``alpha=0.1 * n``).
    l1_alpha : float >= 0, default=0.0
        Penalty ``l1_alpha |theta|_1``, absolute like ``alpha``. 0 is ridge; with ``alpha=0`` the
        lasso, with both positive the elastic net ([VFLC] Appendix A.2: lasso ``l1_alpha=2 * n``,
        elastic net ``l1_alpha=2 * n, alpha=n``).
    solver : {"central", "saga"}, default="central"
        "central": the parties send the rows used (and the last party their labels) to the server,
        which solves the weighted problem: in closed form for ridge (:func:`ridge_central`), with
        an l1 term by coordinate descent and an active-set finish, to rounding
        (:func:`elastic_net_central`). "saga": vertical (proximal) SAGA; the parties keep their
        columns and exchange per-step partial products and residuals with the server
        (:func:`ridge_saga`); the l1 term costs no extra message.
    max_iter : int, default=100, SAGA epochs (``m`` steps each)
    tol : float, default=1e-6, SAGA stops when an epoch moves ``theta`` by at most ``tol |theta|``
    step_size : float or None, default=None (``1 / (3 L)``), SAGA step
    random_state : None, int or numpy.random.Generator (SAGA sampling)

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,), held by the server
    n_iter_ : int, SAGA epochs; for "central", coordinate-descent sweeps and active-set steps
        (0 for ridge)
    comm_ : CommLedger, the coreset's messages (if any) followed by the solver's

    Examples
    --------
    >>> import numpy as np, fedcore
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 3)); y = X @ np.array([1.0, -2.0, 0.5])
    >>> vfed = fedcore.VerticalFederation.from_columns(X, splits=[1, 2], y=y)
    >>> VerticalRidge(alpha=0.0).fit(vfed).coef_.round(6).tolist()
    [1.0, -2.0, 0.5]
    >>> lasso = VerticalRidge(alpha=0.0, l1_alpha=2 * 200 * 0.5).fit(vfed)   # drops feature 3
    >>> lasso.coef_.round(3).tolist()
    [0.478, -1.522, 0.0]
    """

    def __init__(self, alpha: float = 1.0, *, l1_alpha: float = 0.0,
                 solver: Literal["central", "saga"] = "central",
                 max_iter: int = 100, tol: float = 1e-6, step_size: float | None = None,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.alpha = alpha
        self.l1_alpha = l1_alpha
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.step_size = step_size
        self.random_state = random_state

    def fit(self, federation: VerticalFederation, coreset: Coreset | None = None) -> Self:
        """Fit on all rows of ``federation`` or on the rows and weights of ``coreset``."""
        federation = _check_federation(federation)
        if federation.y is None:
            raise ValueError("Argument 'federation' must hold labels y on its last party, "
                             "got y=None")
        if coreset is not None:
            check_coreset(coreset, federation.n_samples)
        check_vertical_range(federation, with_y=True, total_weight=None if coreset is None
                             else float(coreset.weights.sum()))
        alpha = check_scalar(self.alpha, "alpha", min_value=0.0)
        l1_alpha = check_scalar(self.l1_alpha, "l1_alpha", min_value=0.0)
        if self.solver not in ("central", "saga"):
            raise ValueError(f"Argument 'solver' must be 'central' or 'saga', got {self.solver!r}")
        if self.solver == "central":
            X, y, weights, ledger = gather(federation, coreset)
            if l1_alpha == 0.0:
                self.coef_ = ridge_central(X, y, weights, alpha)
                self.n_iter_ = 0
            else:
                self.coef_, self.n_iter_ = elastic_net_central(X, y, weights, alpha, l1_alpha)
        else:
            max_iter = check_int(self.max_iter, "max_iter", min_value=1)
            tol = check_scalar(self.tol, "tol", min_value=0.0)
            step = None if self.step_size is None else check_scalar(
                self.step_size, "step_size", min_value=0.0, include_min=False)
            rng = check_random_state(self.random_state)
            ledger = CommLedger()
            if coreset is None:
                rows = np.arange(federation.n_samples)
                weights = np.ones(federation.n_samples)
            else:
                ledger.extend(coreset.comm)
                rows, weights = coreset.indices, coreset.weights
            X = federation.to_array() if coreset is None else np.hstack(
                [federation.party(j)[rows] for j in range(federation.n_parties)])
            y = np.asarray(federation.y, dtype=np.float64)[rows]
            edges = np.cumsum([0] + list(federation.splits)).astype(np.int64)
            self.coef_, self.n_iter_ = ridge_saga(
                np.ascontiguousarray(X), np.ascontiguousarray(y), weights, alpha, edges,
                max_iter=max_iter, tol=tol, step_size=step, rng=rng, ledger=ledger,
                start=ledger.n_rounds, l1_alpha=l1_alpha)
        self.comm_ = ledger
        self.n_features_in_ = federation.n_features
        return self

    def predict(self, X: ArrayLike) -> np.ndarray:
        """``X @ coef_`` for a full-feature array ``X`` of shape (n_samples, n_features)."""
        check_is_fitted(self, "coef_")
        X = check_fitted_array(X, self.n_features_in_, "VerticalRidge")
        with np.errstate(over="ignore", invalid="ignore"):
            out = X @ self.coef_
        if not np.isfinite(out).all():
            i = int(np.argmin(np.isfinite(out)))
            raise ValueError(f"Argument 'X': the prediction of row {i} overflows float64; "
                             "rescale X")
        return out
