"""Coordinate-descent k-means kernels: CDKM, BCDKM, DisBCDKM and the F3KM augmented Lagrangian.

Notation ([F3KM] Sections 3-4). ``F`` is the one-hot indicator matrix, stored as ``labels``. Per
party ``h`` (one party on a single machine) the cached statistics are

``sums[m]``      X_h f_m                 (d_h,)  sum of the party's columns over cluster m
``counts[m]``    f_m^T f_m               int     cluster size
``sqnorms[m]``   f_m^T X_h^T X_h f_m     float   ``|sums[m]|^2``, kept by [F3KM] eq. (11) updates
``xx[i]``        (x_i^h)^T x_i^h         float   row norms, computed once
``group_counts[l, m]``  (p_l^h)^T f_m    int     members of protected group l in cluster m

All of them are taken on *centred* columns, ``x - shift`` with ``shift`` the column means.
[F3KM] eq. (4) is invariant to the shift up to a constant, and centring keeps the cached terms of
order of the spread of the data instead of its distance from the origin.

Row objectives ``phi(i, m) = L(F_i^(m)) - L(F_i^(0))`` ([F3KM] eqs. (6) and (26)) are written in a
form in which the O(n |c|^2) parts of [F3KM] eq. (9) cancel analytically:

* ``m == r`` (the row's cluster): ``Q/(n(n-1)) + (xx - 2 x.S)/(n-1)``  ([F3KM] eqs. (7), (9), (17))
* ``m != r``:                     ``Q/(n(n+1)) - (2 x.S + xx)/(n+1)``  ([F3KM] eqs. (8), (9), (17))

An empty cluster contributes 0 to [F3KM] eq. (4) and to the Lagrangian of [F3KM] eq. (24) (the
``0/0`` terms are 0), so ``phi(i, m) = -xx`` for an empty ``m`` and ``phi(i, r) = -xx`` for a row
alone in its cluster. The fairness part of [F3KM] eqs. (27)-(28), in the factored form of [F3KM],
with ``D`` the change of the group ratio ``p_l^T f / f^T f`` caused by the move, is
``-u D + rho/2 D (r_new + r_old - 2 theta)``, summed over the party's groups and multiplied by
``fair_scale``.

Block semantics ([F3KM] Alg. 2/3): the rows of one range are all evaluated against the same
statistics (Jacobi), then moved; ranges are processed in order (Gauss-Seidel). A row alone in its
cluster never moves, and within a range a move that would empty its cluster (counted in row order)
is dropped, so clusters never become empty. A row moves only if some cluster beats its own by more
than ``tol``; it then goes to the lowest-index cluster within ``tol`` of the best, so decisions do
not depend on rounding (and agree between one party and several). A range whose joint move does
not lower the Lagrangian by more than ``tol`` is split in two halves, processed in order
(:func:`bcd_sweep`); a range of one row, or one proposing a single move, is never split, since a
single move lowers the Lagrangian by exactly its ``phi`` difference. [F3KM] is silent on this
safeguard; without it a Jacobi block can raise the objective (see
``tests/algorithms/f3km/test_cdkm.py``).
"""
import numpy as np
from numba import prange

from ..._config import CHUNK_SIZE
from ..arrays import copy_into
from ..jit import njit
from ..parallel import renamed
from .fairness import fair_tables, fairness_change, fairness_lagrangian
from .statistics import centered_sq_norms, cluster_statistics, column_moments

__all__ = [
    "SEGMENT_ROWS",
    "column_moments",
    "centered_sq_norms",
    "cluster_statistics",
    "fair_tables",
    "bcd_row_objectives",
    "choose_moves",
    "move_deltas",
    "objective_change",
    "fairness_change",
    "apply_moves",
    "fairness_lagrangian",
    "bcd_sweep",
    "partition_sums",
    "partition_sse",
    "labels_in_range",
]

@njit
def labels_in_range(labels, k):
    """Whether every entry of ``labels`` (int64, IN) lies in ``[0, k)``: one pass, for the
    labels a party receives before a kernel indexes its statistics by them."""
    for i in range(labels.shape[0]):
        if labels[i] < 0 or labels[i] >= k:
            return False
    return True


# Rows evaluated per objective buffer; a range larger than this is evaluated in segments, so the
# buffer is O(SEGMENT_ROWS * k), never O(n * k).
SEGMENT_ROWS = 8 * CHUNK_SIZE


@njit(inline="always")
def _dot4(a, b, m, d):
    # Four interleaved partial sums (f mod 4), combined as (s0 + s1) + (s2 + s3): a fixed order,
    # independent of threads, that pipelines and vectorizes without fastmath.
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    f = 0
    while f + 4 <= d:
        s0 += a[f] * b[m, f]
        s1 += a[f + 1] * b[m, f + 1]
        s2 += a[f + 2] * b[m, f + 2]
        s3 += a[f + 3] * b[m, f + 3]
        f += 4
    while f < d:
        s0 += a[f] * b[m, f]
        f += 1
    return (s0 + s1) + (s2 + s3)


def _bcd_row_objectives(X, shift, xx, lo, hi, labels, sums, counts, sqnorms, codes, base,
                        correction, out):
    k, d = sums.shape
    A = codes.shape[1]
    rows = hi - lo
    for c in prange(-(-rows // CHUNK_SIZE)):
        dots = np.empty(k)
        xc = np.empty(d)
        for i in range(lo + c * CHUNK_SIZE, min(hi, lo + (c + 1) * CHUNK_SIZE)):
            r = labels[i]
            x_sq = xx[i]
            o = i - lo
            for f in range(d):
                xc[f] = np.float64(X[i, f]) - shift[f]
            for m in range(k):
                dots[m] = _dot4(xc, sums, m, d)
            for m in range(k):
                dot = dots[m]
                n = np.float64(counts[m])
                q = sqnorms[m]
                if m == r:
                    w = 1
                    if n <= 1.0:
                        phi = -x_sq
                    else:
                        phi = q / (n * (n - 1.0)) + (x_sq - 2.0 * dot) / (n - 1.0)
                else:
                    w = 0
                    if n <= 0.0:
                        phi = -x_sq
                    else:
                        phi = q / (n * (n + 1.0)) - (2.0 * dot + x_sq) / (n + 1.0)
                fair = base[w, m]
                for a in range(A):
                    fair += correction[w, codes[i, a], m]
                out[o, m] += phi + fair


_row_objectives_serial = njit(
    renamed(_bcd_row_objectives, "_serial"))
_row_objectives_parallel = njit(parallel=True)(
    renamed(_bcd_row_objectives, "_parallel"))


@njit
def bcd_row_objectives(X, shift, xx, lo, hi, labels, sums, counts, sqnorms, codes, base,
                       correction, out):
    """ADD one party's ``phi(i, m)`` for rows ``lo <= i < hi`` into ``out[i - lo, m]``.

    [F3KM] eq. (9) on one machine, [F3KM] eq. (17) per party, [F3KM] eqs. (27)-(28) with the
    fairness tables of :func:`fair_tables` (all zeros, or ``L = 0``, for plain k-means). Rows are
    independent, so the rows of a large range are spread over threads without changing any bit.

    Parameters
    ----------
    X : float32 or float64 (n, d_h)    IN, the party's columns
    shift : float64 (d_h,)             IN
    xx : float64 (n,)                  IN, centred row norms
    lo, hi : int                       IN, the range
    labels : int64 (n,)                IN, current labels (the ``r`` of each row)
    sums, counts, sqnorms, codes       IN, statistics as in :func:`cluster_statistics`
    base, correction                   IN, from :func:`fair_tables`
    out : float64 (>= hi - lo, k)      IN/OUT, the party's objectives are added (the server's sum
                                       over parties of [F3KM] eq. (18)/(29))
    """
    if hi - lo > 2 * CHUNK_SIZE:
        _row_objectives_parallel(X, shift, xx, lo, hi, labels, sums, counts, sqnorms, codes,
                                 base, correction, out)
    else:
        _row_objectives_serial(X, shift, xx, lo, hi, labels, sums, counts, sqnorms, codes,
                               base, correction, out)


@njit
def choose_moves(phi, lo, hi, labels, tentative, tol, new_labels, offset):
    """Server side of [F3KM] eqs. (10)/(18)/(29): the new label of each row of a segment.

    Row ``i`` keeps its label ``r`` unless ``phi[i - lo, r]`` exceeds the minimum by more than
    ``tol``; it then takes the lowest-index cluster within ``tol`` of the minimum. A row whose
    cluster would be left empty (``tentative[r] == 1``) keeps its label.

    Parameters
    ----------
    phi : float64 (>= hi - lo, k)    IN, summed objectives of rows lo..hi
    lo, hi : int                     IN
    labels : int64 (n,)              IN
    tentative : int64 (k,)           IN/OUT, cluster sizes after the moves chosen so far in the
                                     range (start from ``counts``)
    tol : float                      IN, >= 0
    new_labels : int64 (>= offset + hi - lo,)  OUT, ``new_labels[offset + i - lo]``
    offset : int                     IN

    Returns
    -------
    n_moves : int
    """
    k = phi.shape[1]
    n_moves = 0
    for i in range(lo, hi):
        o = i - lo
        r = labels[i]
        best = phi[o, 0]
        for m in range(1, k):
            if phi[o, m] < best:
                best = phi[o, m]
        s = r
        if tentative[r] > 1 and phi[o, r] > best + tol:
            for m in range(k):
                if phi[o, m] <= best + tol:
                    s = m
                    break
        if s != r:
            tentative[r] -= 1
            tentative[s] += 1
            n_moves += 1
        new_labels[offset + o] = s
    return n_moves


@njit
def move_deltas(X, shift, lo, hi, labels, new_labels, offset, codes, dsums, dcounts, dgroups):
    """Changes of one party's statistics if the proposed moves of rows lo..hi were applied.

    OUT ``dsums`` float64 (k, d_h), ``dcounts`` int64 (k,), ``dgroups`` int64 (L, k); the other
    arguments are as in :func:`choose_moves` and :func:`cluster_statistics` (IN).
    """
    d = X.shape[1]
    dsums[:] = 0.0
    dcounts[:] = 0
    dgroups[:] = 0
    for i in range(lo, hi):
        r = labels[i]
        s = new_labels[offset + i - lo]
        if s == r:
            continue
        dcounts[r] -= 1
        dcounts[s] += 1
        for f in range(d):
            t = np.float64(X[i, f]) - shift[f]
            dsums[r, f] -= t
            dsums[s, f] += t
        for a in range(codes.shape[1]):
            g = codes[i, a]
            dgroups[g, r] -= 1
            dgroups[g, s] += 1


@njit
def objective_change(sums, counts, sqnorms, dsums, dcounts):
    """Change of [F3KM] eq. (4) (one party's part, [F3KM] eq. (15)) under the deltas of
    :func:`move_deltas`.

    For each cluster, ``|S + dS|^2/(n + dn) - Q/n = (n(2 S.dS + |dS|^2) - dn Q)/(n(n + dn))``,
    which has no cancellation of O(n |c|^2) terms. IN only; returns the change of
    ``-sum_m Q_m / n_m``.
    """
    k, d = sums.shape
    total = 0.0
    for m in range(k):
        dn = np.float64(dcounts[m])
        n = np.float64(counts[m])
        cross = 0.0
        dd = 0.0
        for f in range(d):
            cross += sums[m, f] * dsums[m, f]
            dd += dsums[m, f] * dsums[m, f]
        if dn == 0.0 and dd == 0.0:
            continue
        if n <= 0.0:
            gain = dd / dn
        elif n + dn <= 0.0:
            gain = -sqnorms[m] / n
        else:
            gain = (n * (2.0 * cross + dd) - dn * sqnorms[m]) / (n * (n + dn))
        total -= gain
    return total


@njit
def apply_moves(X, shift, xx, lo, hi, labels, new_labels, offset, sums, counts, sqnorms, codes,
                group_counts):
    """Move rows lo..hi to ``new_labels`` in row order, updating one party's statistics.

    [F3KM] eq. (11) / (19): ``Q_r -= 2 x.S_r - xx``, ``S_r -= x``, ``n_r -= 1`` and
    ``Q_s += 2 x.S_s + xx``, ``S_s += x``, ``n_s += 1`` (each dot product taken before its sum
    changes), and [F3KM] eq. (30) for the group counts. ``labels`` is IN only (the server commits
    the labels). ``sums``, ``counts``, ``sqnorms`` and ``group_counts`` are IN/OUT.
    """
    d = X.shape[1]
    xc = np.empty(d)
    for i in range(lo, hi):
        r = labels[i]
        s = new_labels[offset + i - lo]
        if s == r:
            continue
        for f in range(d):
            xc[f] = np.float64(X[i, f]) - shift[f]
        dot_r = _dot4(xc, sums, r, d)
        dot_s = _dot4(xc, sums, s, d)
        sqnorms[r] += -2.0 * dot_r + xx[i]
        sqnorms[s] += 2.0 * dot_s + xx[i]
        for f in range(d):
            sums[r, f] -= xc[f]
            sums[s, f] += xc[f]
        counts[r] -= 1
        counts[s] += 1
        for a in range(codes.shape[1]):
            g = codes[i, a]
            group_counts[g, r] -= 1
            group_counts[g, s] += 1


@njit
def _propose(X, shift, xx, lo, hi, block_lo, labels, sums, counts, sqnorms, codes, base,
             correction, tol, phi, tentative, new_labels):
    copy_into(tentative, counts, counts.shape[0])
    n_moves = 0
    for seg_lo in range(lo, hi, phi.shape[0]):
        seg_hi = min(hi, seg_lo + phi.shape[0])
        phi[:seg_hi - seg_lo] = 0.0
        bcd_row_objectives(X, shift, xx, seg_lo, seg_hi, labels, sums, counts, sqnorms, codes,
                           base, correction, phi)
        n_moves += choose_moves(phi, seg_lo, seg_hi, labels, tentative, tol, new_labels,
                                seg_lo - block_lo)
    return n_moves


@njit
def bcd_sweep(X, shift, xx, labels, sums, counts, sqnorms, codes, group_counts, theta, u, rho,
              fair_scale, block_size, tol, phi, new_labels):
    """One sweep of BCDKM ([F3KM] Alg. 2 lines 5-8) or of the F-step of F3KM ([F3KM] Alg. 4
    lines 6-10).

    Blocks of ``block_size`` consecutive rows are processed in order. Each range is evaluated
    against the current statistics (:func:`bcd_row_objectives`), its moves chosen
    (:func:`choose_moves`), and applied (:func:`apply_moves`) if they lower the Lagrangian
    (``objective_change + fairness_change``) by more than ``tol``; otherwise the range is split
    in two halves, processed in order. ``block_size = 1`` is CDKM ([F3KM] Alg. 1). A half is
    evaluated afresh only if some move was applied since its proposals were made; otherwise they
    are the ones a fresh evaluation would give (same statistics, and its moves were proposed
    first).

    Parameters
    ----------
    X, shift, xx, codes                  IN, as in :func:`bcd_row_objectives`
    labels : int64 (n,)                  IN/OUT
    sums, counts, sqnorms, group_counts  IN/OUT, statistics as in :func:`cluster_statistics`
    theta, u : float64 (L, k)            IN
    rho, fair_scale, tol : float         IN
    block_size : int                     IN, >= 1
    phi : float64 (s, k), s >= 1         scratch, objective buffer (segment rows)
    new_labels : int64 (block_size,)     scratch

    Returns
    -------
    n_moved : int, rows that changed label
    n_ranges : int, ranges evaluated or applied (the number of blocks when no block is split);
        a half-block whose still-valid proposals move nothing is not counted
    """
    n, d = X.shape
    k = sums.shape[0]
    L = group_counts.shape[0]
    base = np.empty((2, k))
    correction = np.empty((2, L, k))
    tentative = np.empty(k, dtype=np.int64)
    dsums = np.empty((k, d))
    dcounts = np.empty(k, dtype=np.int64)
    dgroups = np.empty((L, k), dtype=np.int64)
    # (lo, hi, version): a range split off at ``version`` still holds valid proposals in
    # ``new_labels`` while no move has been applied since (same statistics, same prefix counts).
    stack = np.empty((128, 3), dtype=np.int64)
    version = 0
    n_moved = 0
    n_ranges = 0
    for block_lo in range(0, n, block_size):
        block_hi = min(n, block_lo + block_size)
        stack[0, 0] = block_lo
        stack[0, 1] = block_hi
        stack[0, 2] = -1
        top = 1
        while top > 0:
            top -= 1
            lo = stack[top, 0]
            hi = stack[top, 1]
            if stack[top, 2] == version:
                n_moves = 0
                for i in range(lo, hi):
                    if new_labels[i - block_lo] != labels[i]:
                        n_moves += 1
                if n_moves > 0:  # a reused range without moves is not evaluated
                    n_ranges += 1
            else:
                n_ranges += 1
                fair_tables(group_counts, counts, theta, u, rho, fair_scale, base, correction)
                n_moves = _propose(X, shift, xx, lo, hi, block_lo, labels, sums, counts, sqnorms,
                                   codes, base, correction, tol, phi, tentative, new_labels)
            if n_moves == 0:
                continue
            if n_moves > 1:
                move_deltas(X, shift, lo, hi, labels, new_labels, lo - block_lo, codes, dsums,
                            dcounts, dgroups)
                change = objective_change(sums, counts, sqnorms, dsums, dcounts)
                if L > 0:
                    change += fairness_change(group_counts, counts, dgroups, dcounts, theta, u,
                                              rho, fair_scale)
                if not change < -tol:
                    mid = (lo + hi) // 2
                    stack[top, 0] = mid
                    stack[top, 1] = hi
                    stack[top, 2] = version
                    stack[top + 1, 0] = lo
                    stack[top + 1, 1] = mid
                    stack[top + 1, 2] = version
                    top += 2
                    continue
            apply_moves(X, shift, xx, lo, hi, labels, new_labels, lo - block_lo, sums, counts,
                        sqnorms, codes, group_counts)
            for i in range(lo, hi):
                labels[i] = new_labels[i - block_lo]
            n_moved += n_moves
            version += 1
    return n_moved, n_ranges


def _partition_sums(X, labels, sums, counts):
    n, d = X.shape
    k = sums.shape[0]
    n_chunks = max(1, -(-n // CHUNK_SIZE))
    part = np.zeros((n_chunks, k, d))
    part_counts = np.zeros((n_chunks, k), dtype=np.int64)
    for c in prange(n_chunks):
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            m = labels[i]
            part_counts[c, m] += 1
            for f in range(d):
                part[c, m, f] += np.float64(X[i, f])
    sums[:] = 0.0
    counts[:] = 0
    for c in range(n_chunks):
        for m in range(k):
            counts[m] += part_counts[c, m]
            for f in range(d):
                sums[m, f] += part[c, m, f]


def _partition_sse(X, labels, centers):
    n, d = X.shape
    n_chunks = max(1, -(-n // CHUNK_SIZE))
    part = np.zeros(n_chunks)
    for c in prange(n_chunks):
        acc = 0.0
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            m = labels[i]
            for f in range(d):
                t = np.float64(X[i, f]) - centers[m, f]
                acc += t * t
        part[c] = acc
    total = 0.0
    for c in range(n_chunks):
        total += part[c]
    return total


partition_sums = njit(parallel=True)(
    renamed(_partition_sums, "_parallel"))
partition_sums.__doc__ = """OUT ``sums`` float64 (k, d) and ``counts`` int64 (k,): per-label sums
of the rows of ``X``.

Per-chunk partials merged in chunk order: the same bits for any thread count.
"""
partition_sse = njit(parallel=True)(
    renamed(_partition_sse, "_parallel"))
partition_sse.__doc__ = """Return ``sum_i |X[i] - centers[labels[i]]|^2`` ([F3KM] eq. (1)), chunked
and merged in order.

IN ``X`` float32/float64 (n, d), ``labels`` int64 (n,), ``centers`` float64 (k, d).
"""
