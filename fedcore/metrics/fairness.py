"""Fair-clustering metrics of [F3KM] Section 5.1: SSE, relative error, balance, violation.

Protected groups are given as one categorical array per sensitive attribute (or a list of them);
every category of every attribute is a group ``l`` with overall proportion ``eta_l``. The default
bounds are those of [F3KM] Section 5.1: ``alpha_l = eta_l / (1 - delta)``,
``beta_l = eta_l (1 - delta)``.
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._validation import (check_array, check_categories, check_int, check_labels,
                           check_scalar, check_weighted_range)
from ..kernels.cd.kmeans import partition_sse, partition_sums

__all__ = ["sse", "relative_error", "balance", "additive_violation", "fairness_bounds"]


def _check_labels(labels, n=None, n_clusters=None, name="labels"):
    labels = check_labels(labels, name, n)
    k = int(labels.max()) + 1 if labels.size else 0
    if n_clusters is not None:
        n_clusters = check_int(n_clusters, "n_clusters", min_value=1)
        if k > n_clusters:
            raise ValueError(f"Argument 'n_clusters'={n_clusters} is too small: {name!r} holds "
                             f"label {k - 1} >= n_clusters = {n_clusters}")
        k = n_clusters
    return labels, k


def encode_groups(groups, n, name="groups"):
    """Return (codes int64 (n, A) with a global group index per attribute, sizes per attribute,
    category values per attribute). ``n`` None: the length of the first attribute."""
    columns = _group_columns(groups, name)
    for a, col in enumerate(columns):
        if hasattr(col, "tocsr") or hasattr(col, "toarray"):
            raise TypeError(f"Argument {name!r}: attribute {a} is a sparse matrix; pass a 1-D "
                            "array")
        try:
            shape = np.shape(col)
        except ValueError:  # a ragged list
            shape = "ragged"
        if n is None and isinstance(shape, tuple) and len(shape) == 1:
            n = shape[0]  # the length of the first attribute
        if shape != (n,):
            raise ValueError(f"Argument {name!r}: attribute {a} must have shape ({n},), "
                             f"got {shape}")
        columns[a] = check_categories(col, name)
    codes = np.empty((n, len(columns)), dtype=np.int64)
    sizes, values = [], []
    offset = 0
    for a, col in enumerate(columns):
        cats, inverse = np.unique(col, return_inverse=True)
        codes[:, a] = inverse.ravel() + offset
        sizes.append(len(cats))
        values.append(cats)
        offset += len(cats)
    return codes, sizes, values


def _group_columns(groups, name):
    """The sensitive attributes of ``groups`` as a list of columns (not yet validated)."""
    if groups is None:
        raise ValueError(f"Argument {name!r} must be given (one categorical array per sensitive "
                         "attribute), got None")
    if hasattr(groups, "tocsr") or hasattr(groups, "toarray"):
        raise TypeError(f"Argument {name!r} is a sparse matrix; pass a 1-D array per attribute")
    if isinstance(groups, np.ndarray) and groups.ndim == 1:
        columns = [groups]
    elif isinstance(groups, np.ndarray) and groups.ndim == 2:
        columns = list(groups.T)
    elif isinstance(groups, (list, tuple)) and len(groups) and np.ndim(groups[0]) == 1:
        columns = list(groups)
    elif isinstance(groups, (list, tuple)):
        columns = [np.asarray(groups)]
    else:
        raise TypeError(f"Argument {name!r} must be an array or a list of arrays, "
                        f"got {type(groups).__name__}")
    if not columns:
        raise ValueError(f"Argument {name!r} must hold at least one sensitive attribute, got "
                         "none")
    return columns


def _group_counts(labels, codes, k):
    L = int(codes.max()) + 1 if codes.size else 0
    counts = np.bincount(labels, minlength=k).astype(np.int64)
    gc = np.zeros((L, k), dtype=np.int64)
    for a in range(codes.shape[1]):
        np.add.at(gc, (codes[:, a], labels), 1)
    return gc, counts


def fairness_bounds(groups: ArrayLike | Sequence[ArrayLike], delta: float = 0.2,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-group proportions and the bounds of [F3KM] Section 5.1: returns ``(eta, alpha, beta)``,
    each of shape (L,), groups ordered by attribute then sorted category.

    Examples
    --------
    >>> eta, alpha, beta = fairness_bounds(["a", "a", "b", "b"], delta=0.2)
    >>> eta.tolist(), alpha.tolist(), [round(float(b), 2) for b in beta]
    ([0.5, 0.5], [0.625, 0.625], [0.4, 0.4])
    """
    delta = check_scalar(delta, "delta", min_value=0.0, max_value=1.0)
    if delta >= 1.0:
        raise ValueError(f"Argument 'delta' must be < 1, got {delta}")
    codes, _, _ = encode_groups(groups, None)
    n = codes.shape[0]
    if n == 0:
        raise ValueError("Argument 'groups' must hold at least one sample, got none")
    L = int(codes.max()) + 1
    eta = np.zeros(L)
    for a in range(codes.shape[1]):
        eta += np.bincount(codes[:, a], minlength=L)
    eta /= n
    return eta, eta / (1.0 - delta), eta * (1.0 - delta)


def sse(X: ArrayLike, labels: ArrayLike) -> float:
    """Sum of squared errors of a partition ([F3KM] eq. (1)): each row against the mean of its
    cluster.

    Unlike :func:`fedcore.metrics.inertia`, rows are not reassigned to their nearest center.

    Examples
    --------
    >>> sse([[0.0], [2.0], [10.0]], [0, 0, 1])
    2.0
    """
    return _sse(check_array(X, "X", distance_range=True), labels)


def _sse(X, labels, name="labels"):
    """:func:`sse` on validated ``X``; ``name``: the argument ``labels`` came as."""
    labels, k = _check_labels(labels, X.shape[0], name=name)
    check_weighted_range(X, float(X.shape[0]))
    sums = np.empty((k, X.shape[1]))
    counts = np.empty(k, dtype=np.int64)
    partition_sums(X, labels, sums, counts)
    full = counts > 0
    sums[full] /= counts[full, None]
    return float(partition_sse(X, labels, sums))


def relative_error(X: ArrayLike, labels: ArrayLike, reference_labels: ArrayLike) -> float:
    """``SSE(labels) / SSE(reference_labels)`` ([F3KM] Section 5.1; the reference is Lloyd from
    the same initialization there). Infinite when the reference SSE is 0 and the other is not.

    Examples
    --------
    >>> relative_error([[0.0], [2.0], [10.0]], [0, 1, 1], [0, 0, 1])
    16.0
    """
    X = check_array(X, "X", distance_range=True)
    num = _sse(X, labels)
    den = _sse(X, reference_labels, "reference_labels")
    if den == 0.0:
        return 1.0 if num == 0.0 else float("inf")
    return num / den


def balance(labels: ArrayLike, groups: ArrayLike | Sequence[ArrayLike],
            n_clusters: int | None = None) -> np.ndarray:
    """Balance of each cluster ([Fairlet]; [FairLP]; [F3KM] Section 5.1).

    ``balance(j) = min over groups l of min(eta_l / eta_l(j), eta_l(j) / eta_l)``, with
    ``eta_l(j)`` the share of group ``l`` in cluster ``j``; 0 when some group is absent from the
    cluster, 1 for perfectly proportional clusters, NaN for an empty cluster (no shares to
    compare). With ``alpha``/``beta`` from ``delta``, balance >= 1 - delta in a cluster is the
    same as satisfying every constraint of [F3KM] eq. (14) there.

    Parameters
    ----------
    labels : array-like of shape (n_samples,), ints in [0, n_clusters)
    groups : array-like of shape (n_samples,) or list of them (one per sensitive attribute)
    n_clusters : int, default=None (max label + 1)

    Returns
    -------
    ndarray of shape (n_clusters,)

    Examples
    --------
    >>> balance([0, 0, 1, 1], ["a", "b", "a", "b"]).tolist()
    [1.0, 1.0]
    >>> balance([0, 0, 1, 1], ["a", "b", "a", "a"]).tolist()   # eta = (0.75, 0.25)
    [0.5, 0.0]
    """
    labels, k = _check_labels(labels, n_clusters=n_clusters)
    codes, _, _ = encode_groups(groups, labels.shape[0])
    gc, counts = _group_counts(labels, codes, k)
    n = labels.shape[0]
    eta = gc.sum(axis=1) / n
    out = np.full(k, np.nan)
    for j in range(k):
        if counts[j] == 0:
            continue
        share = gc[:, j] / counts[j]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(share > 0, np.minimum(eta / share, share / eta), 0.0)
        out[j] = float(ratio.min())
    return out


def additive_violation(labels: ArrayLike, groups: ArrayLike | Sequence[ArrayLike], *,
                       delta: float = 0.2, alpha: ArrayLike | None = None,
                       beta: ArrayLike | None = None, n_clusters: int | None = None) -> float:
    """Largest additive violation of the fairness constraints ([F3KM] eq. (33); [FairLP]).

    ``max over clusters j and groups l of max(0, c_lj - alpha_l n_j, beta_l n_j - c_lj)`` where
    ``c_lj`` counts group ``l`` in cluster ``j`` and ``n_j`` its size: a clustering has
    lambda-additive violation iff this is <= lambda. ``alpha``/``beta`` default to the
    ``eta / (1 - delta)`` and ``eta (1 - delta)`` of [F3KM] Section 5.1.

    Examples
    --------
    >>> additive_violation([0, 0, 1, 1], ["a", "b", "a", "a"], delta=0.2)  # beta_b n_1 - 0
    0.4
    """
    labels, k = _check_labels(labels, n_clusters=n_clusters)
    codes, _, _ = encode_groups(groups, labels.shape[0])
    gc, counts = _group_counts(labels, codes, k)
    L = gc.shape[0]
    eta, a0, b0 = fairness_bounds(groups, delta)
    alpha = a0 if alpha is None else check_fairness_bounds(alpha, "alpha", L)
    beta = b0 if beta is None else check_fairness_bounds(beta, "beta", L)
    over = gc - alpha[:, None] * counts[None, :]
    under = beta[:, None] * counts[None, :] - gc
    return float(max(0.0, over.max(initial=0.0), under.max(initial=0.0)))


def check_fairness_bounds(values, name, L):
    """Per-group bounds as a float64 array of length ``L`` (a scalar is broadcast), or raise
    naming ``name``."""
    if isinstance(values, numbers.Real) and not isinstance(values, bool):
        values = np.full(L, float(values))
    arr = check_array(values, name, ensure_2d=False, dtype=("float64",), min_samples=0)
    if arr.ndim == 0:
        arr = np.full(L, float(arr))
    if arr.shape != (L,):
        raise ValueError(f"Argument {name!r} must have one entry per protected group ({L}), "
                         f"got shape {arr.shape}")
    if (arr < 0).any():
        i = int(np.argmax(arr < 0))
        raise ValueError(f"Argument {name!r} must be >= 0, got {arr[i]!r} at index {i}")
    return arr
