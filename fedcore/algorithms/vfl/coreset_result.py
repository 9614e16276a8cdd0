"""The coreset result and what the server does with it: gather rows, measure the robust error.

A :class:`Coreset` is the weighted multiset of row ids that a coreset construction leaves at the
server (``fedcore.vkmc_coreset``, ``fedcore.vrlr_coreset``, ``fedcore.uniform_coreset``,
``fedcore.VerticalCoreset``), with the :class:`~fedcore.federation.ledger.CommLedger` of the
messages that built it. :func:`gather` is the upload step that lets any central solver run on it;
:func:`robust_coreset_error` evaluates [VFLC] Def. G.1 ([VFLC] Appendix G).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_array, check_sample_weight, check_scalar
from ...federation.ledger import SERVER, CommLedger
from ...federation.vertical import VerticalFederation

__all__ = ["Coreset", "gather", "coreset_rows", "robust_coreset_error"]


class Coreset:
    """A weighted multiset of row ids held by the server.

    Parameters
    ----------
    indices : ndarray of shape (m,), int64 row ids in draw order (repeats allowed)
    weights : ndarray of shape (m,), float64 weight of each entry
    comm : CommLedger, the messages that built it
    n_samples : int, rows of the full data
    party_counts : ndarray of shape (T,) or None, draws per party ``a_j`` (DIS only)
    outlier_fraction : float or None, the ``beta`` of a robust coreset ([VFLC] Appendix G)

    Examples
    --------
    >>> import numpy as np
    >>> cs = Coreset(np.array([3, 1, 3]), np.array([2.0, 1.0, 2.0]), CommLedger(), 10)
    >>> c = cs.compress()
    >>> c.indices.tolist(), c.weights.tolist(), len(cs)
    ([1, 3], [1.0, 4.0], 3)
    """

    def __init__(self, indices: ArrayLike, weights: ArrayLike, comm: CommLedger, n_samples: int,
                 *, party_counts: np.ndarray | None = None,
                 outlier_fraction: float | None = None) -> None:
        self.indices = np.asarray(indices, dtype=np.int64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.comm = comm
        self.n_samples = int(n_samples)
        self.party_counts = party_counts
        self.outlier_fraction = outlier_fraction

    def __len__(self):
        return int(self.indices.shape[0])

    def compress(self) -> Coreset:
        """Same coreset with repeated ids merged (weights summed), ids sorted; same ledger."""
        ids, inverse = np.unique(self.indices, return_inverse=True)
        weights = np.bincount(inverse, weights=self.weights, minlength=ids.shape[0])
        return Coreset(ids, weights, self.comm, self.n_samples, party_counts=self.party_counts,
                       outlier_fraction=self.outlier_fraction)

    def weighted_sum(self, values: ArrayLike) -> float:
        """``sum_s w_s values[indices[s]]``: the coreset estimate of ``values.sum()``."""
        values = np.asarray(values, dtype=np.float64)
        return float(self.weights @ values[self.indices])

    def __repr__(self):
        return (f"Coreset(size={len(self)}, n_samples={self.n_samples}, "
                f"weight_sum={self.weights.sum():.6g}, comm={self.comm!r})")


def _check_federation(federation, name="federation"):
    if not isinstance(federation, VerticalFederation):
        raise TypeError(f"Argument {name!r} must be a VerticalFederation, got "
                        f"{type(federation).__name__}")
    return federation


def check_coreset(coreset, n_samples):
    """Refuse anything but a :class:`Coreset` of ``n_samples`` rows with at least one entry, row
    ids in ``[0, n_samples)`` and finite non-negative weights of finite, positive sum (one per
    entry); returns it."""
    if not isinstance(coreset, Coreset):
        raise TypeError(f"Argument 'coreset' must be a Coreset, got {type(coreset).__name__}")
    if coreset.n_samples != n_samples:
        raise ValueError(f"Argument 'coreset' was built on {coreset.n_samples} rows, the "
                         f"federation has {n_samples}")
    if not isinstance(coreset.comm, CommLedger):
        raise TypeError(f"Argument 'coreset.comm' must be a CommLedger, got "
                        f"{type(coreset.comm).__name__}")
    idx = coreset.indices
    if idx.ndim != 1 or idx.shape[0] == 0:
        raise ValueError(f"Argument 'coreset.indices' must be 1-D with at least one entry, got "
                         f"shape {idx.shape}")
    bad = (idx < 0) | (idx >= n_samples)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"Argument 'coreset.indices' must lie in [0, {n_samples}), got "
                         f"{int(idx[i])} at index {i}")
    weights = check_sample_weight(coreset.weights, idx.shape[0], "coreset.weights")
    if not weights.any():
        raise ValueError("Argument 'coreset.weights' is zero for every entry")
    return coreset


def _check_outlier_fraction(outlier_fraction):
    if outlier_fraction is None:
        return None
    beta = check_scalar(outlier_fraction, "outlier_fraction", min_value=0.0, include_min=False)
    if beta >= 1.0:
        raise ValueError(f"Argument 'outlier_fraction' must be < 1, got {beta}")
    return beta


def gather(federation: VerticalFederation, coreset: Coreset | None = None,
           ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, CommLedger]:
    """The server collects the coreset's rows (or all rows) from every party.

    Each party sends its columns of the rows listed in ``coreset.indices`` (``m d_j`` elements) and
    the last party also their labels (``m``), one round after the coreset's own rounds: the
    ``2mT``-style step of [VFLC] Theorem 2.5 that lets any central solver run on the coreset.

    Returns
    -------
    X : ndarray of shape (m, d); y : ndarray of shape (m,) or None;
    weights : ndarray of shape (m,) (ones without a coreset);
    comm : CommLedger with the coreset's messages followed by the uploads
    """
    federation = _check_federation(federation)
    rows, weights, start, ledger = coreset_rows(coreset, federation.n_samples)
    blocks = []
    for j in range(federation.n_parties):
        blocks.append(federation.party(j)[rows])
        ledger.record(start, sender=j, receiver=SERVER, kind="rows",
                      n_elements=rows.shape[0] * federation.splits[j])
    y = None
    if federation.y is not None:
        y = np.asarray(federation.y, dtype=np.float64)[rows]
        ledger.record(start, sender=federation.n_parties - 1, receiver=SERVER, kind="labels",
                      n_elements=rows.shape[0])
    return np.hstack(blocks), y, weights, ledger


def coreset_rows(coreset: Coreset | None, n_samples: int,
                 ) -> tuple[np.ndarray, np.ndarray, int, CommLedger]:
    """What a solver on a coreset (or on all ``n_samples`` rows when ``coreset`` is None) starts
    from: ``(rows, weights, first round, ledger)``; the ledger holds the coreset's messages
    (empty without one), and the solver's own messages go in the rounds from ``first round``
    on. ``coreset`` is checked against ``n_samples``; ``weights`` is a copy."""
    ledger = CommLedger()
    if coreset is None:
        return np.arange(n_samples), np.ones(n_samples), 0, ledger
    check_coreset(coreset, n_samples)
    ledger.extend(coreset.comm)
    return coreset.indices, coreset.weights.copy(), coreset.comm.n_rounds, ledger


def robust_coreset_error(costs: ArrayLike, scores: ArrayLike, coreset: Coreset,
                         outlier_fraction: float | None = None) -> float:
    """Additive error of [VFLC] Def. G.1 for one parameter:
    ``min_O |f(X \\ O) - f(S \\ O)| / f(X)``.

    ``O`` ranges over the outlier sets of the proof of [VFLC] Theorem G.2,
    ``O_c = {i : f(x_i) / g_i >= c}`` (rows with the largest sensitivity gap), restricted to
    ``|O| / n <= beta`` and ``|S cap O| / |S| <= beta``; the empty set (the plain coreset error) is
    always allowed, so the result never exceeds it. An evaluation tool: it needs every row's cost.

    Parameters
    ----------
    costs : array-like of shape (n_samples,), ``f(x_i) >= 0`` for one center set / parameter
    scores : array-like of shape (n_samples,), total scores ``g_i = sum_j g_i^(j)``
    coreset : Coreset
    outlier_fraction : float in (0, 1), default ``coreset.outlier_fraction``
    """
    beta = _check_outlier_fraction(coreset.outlier_fraction if outlier_fraction is None
                                   else outlier_fraction)
    if beta is None:
        raise ValueError("Argument 'outlier_fraction' must be given (the coreset has none), "
                         "got None")
    costs = check_array(costs, "costs", ensure_2d=False, dtype=("float64",))
    scores = check_array(scores, "scores", ensure_2d=False, dtype=("float64",))
    n = costs.shape[0]
    if scores.shape != (n,) or coreset.n_samples != n:
        raise ValueError(f"Arguments 'costs' {costs.shape}, 'scores' {scores.shape} and the "
                         f"coreset ({coreset.n_samples} rows) must describe the same rows")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(scores > 0, costs / np.where(scores > 0, scores, 1.0),
                         np.where(costs > 0, np.inf, 0.0))
    order = np.argsort(-ratio, kind="stable")
    sorted_ratio = ratio[order]
    # Prefix sets O_c end where the ratio changes (ties enter together).
    ends = np.flatnonzero(np.r_[sorted_ratio[1:] != sorted_ratio[:-1], True]) + 1
    m = len(coreset)
    s_count = np.bincount(coreset.indices, minlength=n)[order]
    s_cost = np.bincount(coreset.indices, weights=coreset.weights * costs[coreset.indices],
                         minlength=n)[order]
    total = float(costs.sum())
    total_s = float(s_cost.sum())
    cum_cost = np.cumsum(costs[order])[ends - 1]
    cum_count = np.cumsum(s_count)[ends - 1]
    cum_s = np.cumsum(s_cost)[ends - 1]
    ok = (ends / n <= beta) & (cum_count / m <= beta)
    errors = np.abs((total - cum_cost[ok]) - (total_s - cum_s[ok]))
    best = abs(total - total_s)
    if errors.size:
        best = min(best, float(errors.min()))
    return best / total if total > 0 else best
