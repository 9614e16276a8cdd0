"""One weighted Lloyd iteration: assignment, per-center weighted sums and inertia.

Rows are split into fixed chunks of ``CHUNK_SIZE``; each chunk writes its own partial sums and the
partials are merged serially in chunk order, so every output is bit-identical for any thread count.

:func:`lloyd_run` skips the distances to the other centers for rows whose nearest
center provably cannot change (Hamerly 2010: one lower bound per row on the distance to its second
nearest center, and half the distance from its center to the nearest other center). The distance
to the row's own center is always recomputed exactly, so labels, distances, sums and inertia are
bit-identical to :func:`lloyd_iteration`. For many features and centers it can instead screen
centers with one BLAS product per iteration (``X64``), again with the same bits.
:func:`lloyd_core` also records its E-steps and replays a recorded run on slightly changed data
(:mod:`fedcore.kernels.lloyd_replay`), again with the same bits.
"""
import functools

import numpy as np
from numba import njit, prange

from .._config import CHUNK_SIZE, NUMBA_CACHE
from ._parallel import chunked_kernel
from .distances import nearest_two, own_distance
from .lloyd_replay import (center_moves, grow_trace, mark_dirty, prime_bounds, sparse_estep,
                           sparse_sums)

__all__ = ["lloyd_iteration", "half_separation", "relocate_empty", "lloyd_run", "lloyd_core"]


@njit(cache=NUMBA_CACHE, nogil=True)
def _screened_nearest(X, i, centers, dots, norms, center_norms, buf):
    """``(a, dist, second)`` of row ``i``: nearest center and squared distance as the exact scan
    finds them, and a lower bound on the squared distance to every other center, from a BLAS
    product.

    ``dots[i, j]`` is ``X[i] . centers[j]`` in any summation order; then
    ``norms[i] - 2 dots[i, j] + center_norms[j]`` is within ``e_j = 4 (d + 2) u (|x| + |c_j|)^2``
    of the exact kernel's squared distance (u = 2^-53; dot products of length d err by at most
    ``d u |x| |c|``, the exact sum by ``d u`` relative). Only centers whose interval can reach the
    smallest upper bound get their exact distance (:func:`~fedcore.kernels.distances.own_distance`,
    same bits as :func:`~fedcore.kernels.distances.row_distances`); every exact minimum is among
    them, so ``a`` (lowest index on ties) and ``dist`` equal the exact scan's.
    """
    k = centers.shape[0]
    eps = 4.0 * (X.shape[1] + 2) * 2.0 ** -53
    x = np.sqrt(norms[i])
    best_upper = np.inf
    for j in range(k):
        approx = norms[i] - 2.0 * dots[i, j] + center_norms[j]
        err = eps * (x + np.sqrt(center_norms[j])) ** 2
        buf[j] = approx - err
        best_upper = min(best_upper, approx + err)
    a = 0
    dist = np.inf
    for j in range(k):
        if buf[j] <= best_upper:
            buf[j] = own_distance(X, i, centers, j)
            if buf[j] < dist:
                dist = buf[j]
                a = j
    second = np.inf
    for j in range(k):
        if j != a and buf[j] < second:
            second = buf[j]
    return a, dist, second


@njit(cache=NUMBA_CACHE, nogil=True, inline="always")
def _chunk_pass(X, weights, centers, centers_t, half_sep, margin, use_bounds, labels, lower,
                distances, part_sums, part_weights, part_inertia, c, dots, norms, center_norms):
    """Assignment and partial M-step statistics of rows chunk ``c`` (one Lloyd E-step).

    With a non-empty ``dots`` (the BLAS product ``X @ centers.T``), rows are screened
    (:func:`_screened_nearest`) instead of scanned; the outputs are the same bits.
    """
    n, d = X.shape
    k = centers.shape[0]
    buf = np.empty(k)
    screen = dots.shape[0] > 0
    acc = 0.0
    part_sums[c] = 0.0
    part_weights[c] = 0.0
    for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
        skip = False
        a = 0
        dist = 0.0
        if use_bounds and not screen and lower[i] > 0.0:
            a = labels[i]
            dist = own_distance(X, i, centers, a)
            bound = max(lower[i], half_sep[a])
            skip = np.sqrt(dist) + margin < bound
            if skip:  # |x - c_j| >= |c_a - c_j| - |x - c_a| >= 2 half_sep[a] - |x - c_a|
                lower[i] = max(lower[i], 2.0 * half_sep[a] - np.sqrt(dist))
        if screen:  # screened iterations use no bounds (skip stays False) but leave one
            a, dist, second = _screened_nearest(X, i, centers, dots, norms, center_norms, buf)
            labels[i] = a
            if use_bounds:
                lower[i] = np.sqrt(max(second, 0.0))
        elif not skip:
            a, dist, second = nearest_two(X, i, centers_t, buf)
            labels[i] = a
            if use_bounds:
                lower[i] = np.sqrt(second)
        distances[i] = dist
        w = weights[i]
        acc += w * dist
        part_weights[c, a] += w
        for f in range(d):
            part_sums[c, a, f] += w * np.float64(X[i, f])
    part_inertia[c] = acc


@njit(cache=NUMBA_CACHE, nogil=True, inline="always")
def _merge(part_sums, part_weights, part_inertia, center_sums, weight_sums):
    """Serial merge of the chunk partials in chunk order; returns the inertia."""
    center_sums[:] = 0.0
    weight_sums[:] = 0.0
    inertia = 0.0
    for c in range(part_inertia.shape[0]):
        inertia += part_inertia[c]
        for j in range(weight_sums.shape[0]):
            weight_sums[j] += part_weights[c, j]
            for f in range(center_sums.shape[1]):
                center_sums[j, f] += part_sums[c, j, f]
    return inertia


@chunked_kernel
def _lloyd_chunks(X, weights, centers, half_sep, margin, use_bounds, labels, lower, distances,
                  center_sums, weight_sums):
    n, d = X.shape
    k = centers.shape[0]
    centers_t = np.ascontiguousarray(centers.T)
    n_chunks = max(1, -(-n // CHUNK_SIZE))
    part_sums = np.empty((n_chunks, k, d))
    part_weights = np.empty((n_chunks, k))
    part_inertia = np.empty(n_chunks)
    no_dots = np.empty((0, 0))
    no_norms = np.empty(0)
    for c in prange(n_chunks):
        _chunk_pass(X, weights, centers, centers_t, half_sep, margin, use_bounds, labels, lower,
                    distances, part_sums, part_weights, part_inertia, c, no_dots, no_norms,
                    no_norms)
    return _merge(part_sums, part_weights, part_inertia, center_sums, weight_sums)


def lloyd_iteration(X, weights, centers, labels, distances, center_sums, weight_sums):
    """Assign every row to its nearest center and accumulate the M-step statistics.

    Parameters
    ----------
    X : float32 or float64 (n, d)          IN
    weights : float64 (n,)                 IN, >= 0
    centers : float64 (k, d)               IN
    labels : int64 (n,)                    OUT, nearest center (lowest index on ties)
    distances : float64 (n,)               OUT, squared distance to that center
    center_sums : float64 (k, d)           OUT, sum of ``weights[i] * X[i]`` per label
    weight_sums : float64 (k,)             OUT, sum of ``weights[i]`` per label

    Returns
    -------
    inertia : float
        ``sum_i weights[i] * distances[i]`` for the given centers (MUFC eq. (1), weighted).
    """
    return _plain(_lloyd_chunks, X, weights, centers, labels, distances, center_sums, weight_sums)


def _plain(kernel, X, weights, centers, labels, distances, center_sums, weight_sums):
    empty = np.empty(0)
    return kernel(X, weights, centers, empty, 0.0, False, labels, empty, distances, center_sums,
                  weight_sums)


# The same computation run as plain Python (row_distances stays compiled), for tests.
lloyd_iteration.py_func = functools.partial(_plain, _lloyd_chunks.py_func)


@njit(cache=NUMBA_CACHE, nogil=True)
def half_separation(centers, out):
    """OUT ``out`` float64 (k,): half the distance from each center to its nearest other center
    (+inf when k = 1), the ``s(c) / 2`` of Hamerly's bound test.

    IN ``centers`` float64 (k, d).
    """
    k, d = centers.shape
    out[:] = np.inf
    for a in range(k):
        for b in range(a + 1, k):
            acc = 0.0
            for f in range(d):
                t = centers[a, f] - centers[b, f]
                acc += t * t
            if acc < out[a]:
                out[a] = acc
            if acc < out[b]:
                out[b] = acc
    for a in range(k):
        out[a] = 0.5 * np.sqrt(out[a])
    return out


@njit(cache=NUMBA_CACHE, nogil=True)
def relocate_empty(X, weights, distances, labels, lower, center_sums, weight_sums):
    """Give each empty cluster the farthest positive-weight row (deterministic rule).

    Empty clusters, in increasing index, take the rows farthest from their assigned center
    (largest squared distance; ties by lowest row index) among rows of positive weight; each row
    moves with its weight out of its old cluster. IN/OUT ``labels``, ``lower`` (moved rows get 0),
    ``center_sums``, ``weight_sums``.
    """
    empty = np.flatnonzero(weight_sums == 0.0)
    if empty.shape[0] == 0:
        return
    candidates = np.flatnonzero(weights > 0.0)
    order = candidates[np.argsort(-distances[candidates], kind="mergesort")]
    for e in range(min(empty.shape[0], order.shape[0])):
        j = empty[e]
        row = order[e]
        old = labels[row]
        w = weights[row]
        for f in range(X.shape[1]):
            x = w * np.float64(X[row, f])
            center_sums[old, f] -= x
            center_sums[j, f] = x
        weight_sums[old] -= w
        weight_sums[j] = w
        labels[row] = j
        lower[row] = 0.0


@njit(cache=NUMBA_CACHE, nogil=True)
def _row_norms(X64):
    norms = np.empty(X64.shape[0])
    for i in range(X64.shape[0]):
        norms[i] = np.sum(X64[i] * X64[i])
    return norms


@chunked_kernel
def lloyd_core(X, weights, centers, max_iter, tol, margin, labels, distances, X64, trace, prior):
    """:func:`lloyd_run` that records its E-steps (``trace``) and replays a prior run's
    (``prior``); the results are the same bits either way. Returns ``(inertia, n_iter, trace)``.

    ``trace = (labels, lower, dist, centers, moved)``: int64 (m, n), float64 (m, n), float64 (m, n),
    float64 (m, k, d), bool (m,), with m = 0 (no record) or any initial capacity (doubled as
    needed). Row ``t`` gets, after E-step ``t`` and the relocation of empty clusters, the labels, a
    lower bound on each row's distance to its other centers, the squared distances, the centers
    of E-step ``t`` and whether a cluster was empty. The returned trace has ``n_iter + 1`` rows.

    ``prior = (weights, labels, lower, dist, centers, moved, rows, gone)``: the old weights and the
    trace of a run from the same initial centers (``labels`` with 0 rows: no prior); ``rows[i]``
    the prior row of row ``i`` or -1, ``gone`` the prior rows absent now. E-steps are replayed
    (:mod:`fedcore.kernels.lloyd_replay`) until the prior's last one or its first empty cluster;
    with one chunk of rows in both runs only the rows and clusters touched by the change are
    recomputed.
    """
    n, d = X.shape
    k = centers.shape[0]
    n_chunks = max(1, -(-n // CHUNK_SIZE))
    part_sums = np.empty((n_chunks, k, d))
    part_weights = np.empty((n_chunks, k))
    part_inertia = np.empty(n_chunks)
    labels_old = np.full(n, -1, dtype=np.int64)
    labels[:] = 0
    lower = np.zeros(n)
    center_sums = np.empty((k, d))
    weight_sums = np.empty(k)
    half_sep = np.zeros(k)
    screen = X64.shape[0] > 0
    norms = np.empty(0)  # of the rows, at the first screened E-step
    center_norms = np.empty(k)
    no_dots = np.empty((0, 0))
    record = trace[0].shape[0] > 0
    p_weights, p_labels, p_lower, p_dist, p_centers, p_moved, p_rows, p_gone = prior
    n_prior = p_labels.shape[0]
    one_chunk = n <= CHUNK_SIZE and p_weights.shape[0] <= CHUNK_SIZE
    moves = np.empty(k)
    dirty = np.ones(k, dtype=np.bool_)
    buf = np.empty(k)
    n_iter = 0
    inertia = 0.0
    for it in range(max_iter + 1):
        replay = it < n_prior
        sparse = replay and one_chunk
        centers_t = np.ascontiguousarray(centers.T)
        if replay:
            top, top_j, runner = center_moves(centers, p_centers[it], moves)
            if sparse:
                sparse_estep(X, centers, centers_t, moves, top_j, top, runner, p_labels[it],
                             p_lower[it], p_dist[it], p_rows, margin, labels, lower, distances,
                             buf)
                inertia = 0.0
                for i in range(n):
                    inertia += weights[i] * distances[i]
            else:
                prime_bounds(moves, top_j, top, runner, p_labels[it], p_lower[it], p_rows,
                             labels, lower)
        if not sparse:
            if not screen:  # screened rows need no bound (and this costs k^2 d / 2)
                half_separation(centers, half_sep)
            dots = no_dots
            if screen and not replay:
                if norms.shape[0] == 0:
                    norms = _row_norms(X64)
                dots = np.dot(X64, centers_t)
                for j in range(k):
                    center_norms[j] = np.sum(centers[j] * centers[j])
            for c in prange(n_chunks):
                _chunk_pass(X, weights, centers, centers_t, half_sep, margin, True, labels,
                            lower, distances, part_sums, part_weights, part_inertia, c, dots,
                            norms, center_norms)
            inertia = _merge(part_sums, part_weights, part_inertia, center_sums, weight_sums)
        # Clusters of a sparse replay that are clean take the prior's next center (same bits,
        # unless a relocation made it).
        take_prior = sparse and it < max_iter and it + 1 < n_prior and not p_moved[it]
        if take_prior:
            mark_dirty(weights, p_weights, p_rows, p_gone, labels, p_labels[it], dirty)
            take_prior = sparse_sums(X, weights, labels, dirty, center_sums, weight_sums)
        if sparse and not take_prior and it < max_iter:  # every cluster summed, row by row
            dirty[:] = True
            sparse_sums(X, weights, labels, dirty, center_sums, weight_sums)
        moved = False
        if it < max_iter and not take_prior:
            for j in range(k):
                moved = moved or weight_sums[j] == 0.0
            relocate_empty(X, weights, distances, labels, lower, center_sums, weight_sums)
        if record:
            trace = grow_trace(trace, it)
            trace[0][it] = labels
            trace[1][it] = lower
            trace[2][it] = distances
            trace[3][it] = centers
            trace[4][it] = moved
        if it == max_iter:  # the final E-step for the final centers
            break
        n_iter = it + 1
        shift = 0.0
        max_drift = 0.0
        for j in range(k):
            if take_prior and not dirty[j]:
                drift = 0.0
                for f in range(d):
                    t = p_centers[it + 1, j, f] - centers[j, f]
                    drift += t * t
                    centers[j, f] = p_centers[it + 1, j, f]
            elif weight_sums[j] > 0.0:
                drift = 0.0
                for f in range(d):
                    new = center_sums[j, f] / weight_sums[j]
                    t = new - centers[j, f]
                    drift += t * t
                    centers[j, f] = new
            else:
                continue
            shift += drift
            max_drift = max(max_drift, np.sqrt(drift))
        for i in range(n):
            lower[i] -= max_drift
        same = True
        for i in range(n):
            if labels[i] != labels_old[i]:
                same = False
                break
        if same or shift <= tol:
            max_iter = it + 1  # one more pass: the final E-step
        else:
            labels_old[:] = labels
    m = n_iter + 1 if record else 0
    return inertia, n_iter, (trace[0][:m], trace[1][:m], trace[2][:m], trace[3][:m],
                             trace[4][:m])


_NO_TRACE = (np.empty((0, 0), dtype=np.int64), np.empty((0, 0)), np.empty((0, 0)),
             np.empty((0, 0, 0)), np.empty(0, dtype=np.bool_))
_NO_PRIOR = (np.empty(0), np.empty((0, 0), dtype=np.int64), np.empty((0, 0)), np.empty((0, 0)),
             np.empty((0, 0, 0)), np.empty(0, dtype=np.bool_), np.empty(0, dtype=np.int64),
             np.empty(0, dtype=np.int64))


def lloyd_run(X, weights, centers, max_iter, tol, margin, labels, distances, X64):
    """Weighted Lloyd from ``centers`` until convergence; returns ``(inertia, n_iter)``.

    ``X64`` is empty (0, 0) or ``X`` itself as float64 (C order); in the latter case each E-step
    screens rows with one BLAS product ``X64 @ centers.T`` and computes exact distances to the
    few centers it cannot rule out (:func:`_screened_nearest`), same bits as the plain scan.
    Worth it when ``d * k`` is large (hundreds of features, tens of centers).

    IN/OUT ``centers`` float64 (k, d): initial, then final centers. OUT ``labels`` int64 (n,),
    ``distances`` float64 (n,) for the final centers. Each iteration is the E-step of
    the bounded chunk pass, then :func:`relocate_empty`, then the mean update. Stops when
    the labels no longer change (strict convergence), when the squared center shift is at most
    ``tol`` (absolute), or after ``max_iter`` iterations, as scikit-learn's Lloyd; a last
    E-step gives labels and inertia for the final centers. The whole loop is compiled because the
    servers and clients of federated methods run many small problems, where per-iteration
    interpreter overhead would dominate. :func:`lloyd_core` is the same loop with a record and
    replay of its E-steps.
    """
    inertia, n_iter, _ = lloyd_core(X, weights, centers, max_iter, tol, margin, labels,
                                    distances, X64, _NO_TRACE, _NO_PRIOR)
    return inertia, n_iter
