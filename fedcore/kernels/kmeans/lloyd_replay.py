"""Replaying a recorded Lloyd run on slightly changed data (the prior of ``lloyd_core``).

A prior run from the same initial centers recorded, for every E-step ``t``, its centers ``C_t``,
each row's label, squared distance to its center and a lower bound on the distance to every
other center. At E-step ``t`` of the new run, with centers ``C'_t``, each center has moved by
``delta_j = |C'_t,j - C_t,j|``, so a recorded lower bound minus ``max_{j != a} delta_j`` still
bounds the distance from the row to its other centers (triangle inequality): where it exceeds
the row's own distance, the label is unchanged and no other distance is needed.

With one chunk of rows in both runs, clusters are summed row by row in one pass, so a cluster with
the same members, weights and order in both runs ("clean") gets the same sums and the same center
bits. Only rows and clusters touched by the change ("dirty") are then recomputed: an iteration
costs O(k d + n + d * rows of dirty clusters), against O(n k d) for a full E-step.
"""
from typing import NamedTuple

import numpy as np

from ..jit import njit
from .distances import nearest_two, own_distance

__all__ = ["LloydTrace", "LloydPrior", "top_two", "center_moves", "prime_bounds", "sparse_estep",
           "mark_dirty", "sparse_sums", "grow_trace"]


class LloydTrace(NamedTuple):
    """E-steps of a Lloyd run, row ``t`` after E-step ``t`` and the relocation of empty clusters:
    ``labels`` int64 (m, n), ``lower`` float64 (m, n) (a lower bound on each row's distance to
    its other centers), ``distances`` float64 (m, n) (squared, to its center), ``centers``
    float64 (m, k, d) (the centers of E-step ``t``), ``moved`` bool (m,) (a cluster was empty)."""
    labels: np.ndarray
    lower: np.ndarray
    distances: np.ndarray
    centers: np.ndarray
    moved: np.ndarray


class LloydPrior(NamedTuple):
    """A prior run to replay: its ``weights`` float64 (n_prior,), its :class:`LloydTrace`
    ``trace`` (0 rows: no prior), ``rows`` int64 (n,) (the prior row of each row, or -1) and
    ``gone`` int64 (the prior rows absent now)."""
    weights: np.ndarray
    trace: LloydTrace
    rows: np.ndarray
    gone: np.ndarray


@njit(inline="always")
def top_two(moves):
    """``(top, top_j, runner)``: the largest of ``moves`` (k,), its index and the second largest,
    so that ``max_{j != a} moves[j]`` is one test."""
    top, top_j, runner = 0.0, -1, 0.0
    for j in range(moves.shape[0]):
        if moves[j] > top:
            top, top_j, runner = moves[j], j, top
        elif moves[j] > runner:
            runner = moves[j]
    return top, top_j, runner


@njit
def center_moves(centers, old_centers, moves):
    """OUT ``moves`` (k,): ``|centers[j] - old_centers[j]|``. Returns :func:`top_two` of them."""
    k, d = centers.shape
    for j in range(k):
        acc = 0.0
        for f in range(d):
            t = centers[j, f] - old_centers[j, f]
            acc += t * t
        moves[j] = np.sqrt(acc)
    return top_two(moves)


@njit
def prime_bounds(moves, top_j, top, runner, old_labels, old_lower, rows, labels, lower):
    """Bounds ([Hamerly]) of this E-step from the prior's: ``rows[i]`` is row ``i``'s prior row
    (-1: none, bound 0, the row is scanned)."""
    for i in range(rows.shape[0]):
        o = rows[i]
        lower[i] = 0.0
        if o >= 0:
            a = old_labels[o]
            labels[i] = a
            bound = old_lower[o] - (runner if a == top_j else top)
            if bound > 0.0:
                lower[i] = bound


@njit
def sparse_estep(X, centers, centers_t, moves, top_j, top, runner, old_labels, old_lower,
                 old_dist, rows, margin, labels, lower, distances, buf):
    """E-step of every row from the prior's (one chunk): a row whose center did not move and whose
    bound holds keeps its label and distance bits without touching X; one whose center moved
    recomputes its own distance; a row that fails (or is new) is scanned in full."""
    for i in range(X.shape[0]):
        o = rows[i]
        if o >= 0:
            a = old_labels[o]
            bound = old_lower[o] - (runner if a == top_j else top)
            if moves[a] == 0.0 and np.sqrt(old_dist[o]) + margin < bound:
                labels[i], lower[i], distances[i] = a, bound, old_dist[o]
                continue
            if bound > 0.0:
                dist = own_distance(X, i, centers, a)
                if np.sqrt(dist) + margin < bound:
                    labels[i], lower[i], distances[i] = a, bound, dist
                    continue
        a, dist, second = nearest_two(X, i, centers_t, buf)
        labels[i], lower[i], distances[i] = a, np.sqrt(second), dist


@njit
def mark_dirty(weights, old_weights, rows, gone, labels, old_labels, dirty):
    """OUT ``dirty`` (k,) bool: clusters whose members or member weights differ from the prior's
    at this E-step (``gone``: prior rows absent now)."""
    dirty[:] = False
    for i in range(rows.shape[0]):
        o = rows[i]
        if o < 0:
            dirty[labels[i]] = True
        elif labels[i] != old_labels[o] or weights[i] != old_weights[o]:
            dirty[labels[i]] = True
            dirty[old_labels[o]] = True
    for g in gone:
        dirty[old_labels[g]] = True


@njit
def sparse_sums(X, weights, labels, dirty, center_sums, weight_sums):
    """M-step sums of the dirty clusters (all of them: every cluster), accumulated row by row as
    the one-chunk pass does (same bits). Returns False when one of them is empty."""
    for j in range(dirty.shape[0]):
        if dirty[j]:
            center_sums[j] = 0.0
            weight_sums[j] = 0.0
    for i in range(X.shape[0]):
        a = labels[i]
        if dirty[a]:
            w = weights[i]
            weight_sums[a] += w
            for f in range(X.shape[1]):
                center_sums[a, f] += w * np.float64(X[i, f])
    for j in range(dirty.shape[0]):
        if dirty[j] and weight_sums[j] == 0.0:
            return False
    return True


@njit
def grow_trace(trace, it):
    """The trace with room for E-step ``it`` (capacity doubled when full)."""
    if it < trace.labels.shape[0]:
        return trace
    m = 2 * trace.labels.shape[0]
    n = trace.labels.shape[1]
    k, d = trace.centers.shape[1], trace.centers.shape[2]
    grown = LloydTrace(np.empty((m, n), dtype=np.int64), np.empty((m, n)), np.empty((m, n)),
                       np.empty((m, k, d)), np.empty(m, dtype=np.bool_))
    for t in range(it):  # element loops: slice copies of 2-D and 3-D arrays compile slowly
        grown.moved[t] = trace.moved[t]
        for i in range(n):
            grown.labels[t, i] = trace.labels[t, i]
            grown.lower[t, i] = trace.lower[t, i]
            grown.distances[t, i] = trace.distances[t, i]
        for j in range(k):
            for f in range(d):
                grown.centers[t, j, f] = trace.centers[t, j, f]
    return grown
