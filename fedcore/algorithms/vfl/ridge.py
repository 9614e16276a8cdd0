"""Vertical ridge regression (VRLR, [VFLC] Def. 2.1, ``R = alpha |theta|^2``): central and SAGA
solvers.

Objective on the rows used, with weights ``w`` (ones on full data, coreset weights otherwise)::

    sum_i w_i (x_i . theta - y_i)^2 + alpha |theta|^2

There is no intercept ([VFLC] Def. 2.1); centre ``y`` and the features first (each party can do
so on its own columns, and the last party on ``y``). Coreset weights sum to about ``n``, so the
same ``alpha`` ([VFLC] Section 6 uses ``0.1 n``) keeps its meaning on a coreset.
"""
from __future__ import annotations

import sys
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
import scipy.linalg

from ..._validation import check_fitted_array, check_int, check_random_state, check_scalar
from ...federation.ledger import SERVER, CommLedger
from ...federation.vertical import VerticalFederation
from ...kernels.coreset import saga_epoch
from ..base import BaseEstimator, check_is_fitted
from .coreset import _sample_rows, check_vertical_range
from .coreset_result import Coreset, _check_federation, check_coreset, gather

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["VerticalRidge", "ridge_central", "ridge_saga"]

_ROW_BLOCK = 65536


def ridge_central(X: np.ndarray, y: np.ndarray, weights: np.ndarray,
                  alpha: float) -> np.ndarray:
    """Closed form ``(X^T W X + alpha I)^-1 X^T W y`` with row blocks (no ``n x d`` temporary).

    Solved by Cholesky; when that fails (``alpha = 0`` and a singular ``X^T W X``), the
    minimum-norm least-squares solution of the normal equations.
    """
    d = X.shape[1]
    gram = np.zeros((d, d))
    rhs = np.zeros(d)
    for s in range(0, X.shape[0], _ROW_BLOCK):
        Xb = np.asarray(X[s:s + _ROW_BLOCK], dtype=np.float64)
        wb = weights[s:s + _ROW_BLOCK]
        gram += Xb.T @ (Xb * wb[:, None])
        rhs += Xb.T @ (wb * y[s:s + _ROW_BLOCK])
    gram[np.diag_indices(d)] += alpha
    try:
        return scipy.linalg.solve(gram, rhs, assume_a="pos")
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return np.linalg.lstsq(gram, rhs, rcond=None)[0]


def ridge_saga(X: np.ndarray, y: np.ndarray, weights: np.ndarray, alpha: float,
               edges: np.ndarray, *, max_iter: int, tol: float, step_size: float | None,
               rng: np.random.Generator, ledger: CommLedger,
               start: int) -> tuple[np.ndarray, int]:
    """Vertical SAGA on validated input; returns ``(theta, n_epochs)`` and records its messages.

    Minimizes ``sum_i p_i h_i``, ``h_i = (x_i.theta - y_i)^2 + (alpha / W) |theta|^2`` with
    ``p = w / W``, ``W = sum(w)`` (same minimizer as the weighted objective). Rows are drawn i.i.d.
    by ``p`` from a seed the server shares once; default step ``1 / (3 L)`` with
    ``L = max_i 2 |x_i|^2 + 2 alpha / W`` ([SAGA]). Protocol (``T`` parties):

    * setup: each party sends ``|x_i^(j)|^2`` of its rows (the server needs ``L``); the server sends
      the step and the seed; the last party sends ``-y`` (the residuals at ``theta = 0``), the
      server forwards them to every party, which initializes its block of the gradient table;
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
    sq_norms = np.einsum("ij,ij->i", X, X, dtype=np.float64) if m else np.zeros(0)
    rnd = start
    for j in range(T):
        ledger.record(rnd, sender=j, receiver=SERVER, kind="row_norms", n_elements=m)
        ledger.record(rnd, sender=SERVER, receiver=j, kind="step_and_seed", n_elements=2)
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
        saga_epoch(X, y, edges, order, p, theta, memory, grad_avg, step, reg)
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
    """Ridge regression on a vertical federation, on the full data or on a coreset.

    Parameters
    ----------
    alpha : float >= 0, default=1.0
        Penalty ``alpha |theta|^2`` added to the (weighted) sum of squared residuals; absolute, not
        per row (the ``lambda = 0.1 n`` of [VFLC] Section 6 is ``alpha=0.1 * n``).
    solver : {"central", "saga"}, default="central"
        "central": the parties send the rows used (and the last party their labels) to the server,
        which solves the weighted normal equations in closed form (:func:`ridge_central`).
        "saga": vertical SAGA; the parties keep their columns and exchange per-step partial
        products and residuals with the server (:func:`ridge_saga`).
    max_iter : int, default=100, SAGA epochs (``m`` steps each)
    tol : float, default=1e-6, SAGA stops when an epoch moves ``theta`` by at most ``tol |theta|``
    step_size : float or None, default=None (``1 / (3 L)``), SAGA step
    random_state : None, int or numpy.random.Generator (SAGA sampling)

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,), held by the server
    n_iter_ : int, SAGA epochs (0 for "central")
    comm_ : CommLedger, the coreset's messages (if any) followed by the solver's

    Examples
    --------
    >>> import numpy as np, fedcore
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 3)); y = X @ np.array([1.0, -2.0, 0.5])
    >>> vfed = fedcore.VerticalFederation.from_columns(X, splits=[1, 2], y=y)
    >>> VerticalRidge(alpha=0.0).fit(vfed).coef_.round(6).tolist()
    [1.0, -2.0, 0.5]
    """

    def __init__(self, alpha: float = 1.0, *, solver: Literal["central", "saga"] = "central",
                 max_iter: int = 100, tol: float = 1e-6, step_size: float | None = None,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.alpha = alpha
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
        if self.solver not in ("central", "saga"):
            raise ValueError(f"Argument 'solver' must be 'central' or 'saga', got {self.solver!r}")
        if self.solver == "central":
            X, y, weights, ledger = gather(federation, coreset)
            self.coef_ = ridge_central(X, y, weights, alpha)
            self.n_iter_ = 0
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
                start=ledger.n_rounds)
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
