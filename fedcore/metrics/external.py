"""External metrics: agreement of a clustering with ground truth ([FeCA] Section 6).

``center_distance``
    l2 distance between recovered and true centers after optimal (Hungarian) matching.
``purity``
    Fraction of points whose cluster's majority label is their own label.
``nmi``
    Normalized mutual information with arithmetic averaging, ``2 I / (H(true) + H(pred))``.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linear_sum_assignment

from .._validation import check_array, check_categories, check_weighted_range

__all__ = ["center_distance", "purity", "nmi"]


def center_distance(centers: ArrayLike, true_centers: ArrayLike) -> float:
    """Frobenius l2 distance between recovered and true centers after Hungarian matching.

    The matching pairs each recovered center with a distinct true center so that the sum of
    squared distances is minimal (``scipy.optimize.linear_sum_assignment``); the result is

        sqrt( sum over matched pairs (s, t) of ||centers[s] - true_centers[t]||^2 ).

    When the counts differ (FeCA can return fewer centers than asked, [FeCA] Appendix E), only
    ``min(len(centers), len(true_centers))`` pairs are matched, the best such partial matching, and
    unmatched centers do not count: check the number of centers separately.

    Relation to [FeCA]: [FeCA] Table 1 ("l2-distance x 10^4") reports this quantity on the raw
    S-sets coordinates (range about 10^6) divided by 10^4; [FeCA] Tables 5 and 10
    ("MSE x 10^6") report the mean squared matched distance on coordinates divided by 10^6,
    times 10^6, that is ``center_distance ** 2 / k`` in those units. (Checked on the numbers of
    [FeCA]: FeCA's S1 MSE of 6.7, 308.3 and 3315.3 give ``sqrt(15 * MSE * 1e-6) * 1e2`` = 1.0,
    6.8 and 22.3, the [FeCA] Table 1 entries.) ``fedcore.datasets.make_s_sets`` uses the S-sets
    scale, so the unit of [FeCA] is ``center_distance(...) / 1e4`` there; on data scaled to the
    unit square it is ``100 * center_distance(...)``.

    Parameters
    ----------
    centers : array-like of shape (n_centers, n_features)
    true_centers : array-like of shape (n_true, n_features)

    Returns
    -------
    float

    Examples
    --------
    >>> center_distance([[0.0, 0.0], [10.0, 0.0]], [[10.0, 1.0], [0.0, 0.0]])
    1.0
    """
    A = check_array(centers, "centers", dtype=("float64",), distance_range=True)
    B = check_array(true_centers, "true_centers", dtype=("float64",), distance_range=True)
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"Argument 'true_centers' must have {A.shape[1]} features (as "
                         f"'centers'), got {B.shape[1]}")
    check_weighted_range([A, B], float(min(A.shape[0], B.shape[0])),
                         ("centers", "true_centers"))
    cost = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2)
    rows, cols = linear_sum_assignment(cost)
    return float(np.sqrt(cost[rows, cols].sum()))


def _check_labelings(labels_true, labels_pred):
    out = [check_categories(labels, name) for name, labels in
           (("labels_true", labels_true), ("labels_pred", labels_pred))]
    if out[0].shape[0] != out[1].shape[0]:
        raise ValueError(f"Arguments 'labels_true' and 'labels_pred' must have the same length, "
                         f"got {out[0].shape[0]} and {out[1].shape[0]}")
    return out


def _contingency(labels_true, labels_pred):
    """Dense contingency table (n_classes, n_clusters) of int64 counts."""
    _, t = np.unique(labels_true, return_inverse=True)
    _, p = np.unique(labels_pred, return_inverse=True)
    n_t = int(t.max()) + 1 if t.size else 0
    n_p = int(p.max()) + 1 if p.size else 0
    table = np.zeros((n_t, n_p), dtype=np.int64)
    np.add.at(table, (t.ravel(), p.ravel()), 1)
    return table


def purity(labels_true: ArrayLike, labels_pred: ArrayLike) -> float:
    """Purity: ``(1/n) * sum over predicted clusters of the count of its most frequent true label``.

    This is the size-weighted mean of the per-cluster purities (the usual definition, Manning et al.
    2008); 1.0 means every cluster holds a single true label. Labels may be any hashable values
    that ``numpy.unique`` can sort. Empty input gives 1.0.

    Examples
    --------
    >>> purity([0, 0, 1, 1, 1], [5, 5, 5, 7, 7])
    0.8
    """
    labels_true, labels_pred = _check_labelings(labels_true, labels_pred)
    if labels_true.shape[0] == 0:
        return 1.0
    table = _contingency(labels_true, labels_pred)
    return float(table.max(axis=0).sum() / labels_true.shape[0])


def _entropy(counts):
    counts = counts[counts > 0].astype(np.float64)
    total = counts.sum()
    p = counts / total
    return float(-np.sum(p * (np.log(counts) - np.log(total))))


def nmi(labels_true: ArrayLike, labels_pred: ArrayLike) -> float:
    """Normalized mutual information ``I(T; P) / ((H(T) + H(P)) / 2)`` (natural logarithms).

    Equal to scikit-learn's ``normalized_mutual_info_score(labels_true, labels_pred,
    average_method="arithmetic")``, including its limit cases: 1.0 when both labelings have a
    single cluster (or the input is empty), and 0.0 whenever the mutual information is 0.

    Examples
    --------
    >>> nmi([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    >>> nmi([0, 0, 1, 1], [0, 1, 0, 1])
    0.0
    """
    labels_true, labels_pred = _check_labelings(labels_true, labels_pred)
    n_classes = np.unique(labels_true).shape[0]
    n_clusters = np.unique(labels_pred).shape[0]
    if n_classes == n_clusters == 1 or n_classes == n_clusters == 0:
        return 1.0
    table = _contingency(labels_true, labels_pred)
    if table.shape[0] == 1 or table.shape[1] == 1:
        return 0.0  # one labeling is constant: I = 0 exactly
    n = float(labels_true.shape[0])
    ti, pj = np.nonzero(table)
    nij = table[ti, pj].astype(np.float64)
    outer = table.sum(axis=1)[ti] * table.sum(axis=0)[pj]  # int64, exact for n < 3e9
    share = nij / n
    # I = sum n_ij/n * log(n n_ij / (a_i b_j)); terms below machine epsilon are rounding noise
    terms = share * (np.log(nij) - np.log(n)) + share * (2.0 * np.log(n) - np.log(outer))
    terms[np.abs(terms) < np.finfo(np.float64).eps] = 0.0
    mi = max(float(terms.sum()), 0.0)
    if mi == 0.0:
        return 0.0
    h_true = _entropy(table.sum(axis=1))
    h_pred = _entropy(table.sum(axis=0))
    return float(mi / ((h_true + h_pred) / 2.0))
