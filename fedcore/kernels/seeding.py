"""D^2 (k-means++) sampling kernels, chunk-parallel and bit-identical for any thread count.

Sampling is defined on fixed chunks of ``CHUNK_SIZE`` rows (see :func:`pick_index`), so the row
picked for a given uniform depends on the data and the uniform only, never on the thread count.
The same definition serves the first draw (by weight), D^2 draws, the candidates of greedy
k-means++, the degenerate draw (by weight among rows not yet chosen) and the redraws of exact
unlearning (MUFC Alg. 3 lines 11-14), where removed rows simply carry weight 0.
"""
import numpy as np
from numba import njit, prange

from .._config import CHUNK_SIZE, NUMBA_CACHE
from ._parallel import chunked_kernel
from .distances import row_distances

__all__ = ["n_chunks", "chunk_sums", "pick_index", "pick_product", "d2_update", "center_gaps",
           "min_sq_distance", "d2_refresh", "candidate_potentials"]

# Skip a row only when the triangle inequality proves, with this relative margin against rounding,
# that the new center is not strictly closer (see d2_update).
_PRUNE_MARGIN = 4.0 * (1.0 + 1e-6)


def n_chunks(n):
    """Number of row chunks for ``n`` rows (at least 1)."""
    return max(1, -(-n // CHUNK_SIZE))


@chunked_kernel
def chunk_sums(values, out):
    """Per-chunk sequential sums of ``values``.

    IN ``values`` float64 (n,); OUT ``out`` float64 (n_chunks,).
    """
    n = values.shape[0]
    for c in prange(out.shape[0]):
        acc = 0.0
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            acc += values[i]
        out[c] = acc


@njit(cache=NUMBA_CACHE, nogil=True)
def _pick(a, b, use_b, sums, u):
    n = a.shape[0]
    total = 0.0
    for c in range(sums.shape[0]):
        total += sums[c]
    target = u * total
    running = 0.0
    chunk = -1
    for c in range(sums.shape[0]):
        if running + sums[c] > target:
            chunk = c
            break
        running += sums[c]
    if chunk < 0:  # u * total rounded up to total
        for c in range(sums.shape[0] - 1, -1, -1):
            if sums[c] > 0.0:
                chunk = c
                break
    start = chunk * CHUNK_SIZE
    inner = target - running
    acc = 0.0
    last = -1
    for i in range(start, min(n, start + CHUNK_SIZE)):
        v = a[i] * b[i] if use_b else a[i]
        if v > 0.0:
            last = i
            acc += v
            if acc > inner:
                return i
    return last


@njit(cache=NUMBA_CACHE, nogil=True)
def pick_index(values, sums, u):
    """Row ``i`` with probability ``values[i] / values.sum()`` for ``u ~ U[0, 1)``.

    IN ``values`` float64 (n,) >= 0 with a positive sum; ``sums`` float64 (n_chunks,) from
    :func:`chunk_sums`; ``u`` float in [0, 1). Returns the first row of the first chunk at which the
    running sum (chunk sums, then the rows of that chunk from zero) exceeds ``u * total``. Rounding
    fallbacks return the last positive row, so the picked row always has ``values[i] > 0``.
    """
    return _pick(values, values, False, sums, u)


@njit(cache=NUMBA_CACHE, nogil=True)
def pick_product(a, b, sums, u):
    """:func:`pick_index` on ``values = a * b`` (elementwise) without forming it.

    Used for D^2 draws with ``a = weights`` and ``b = mind``; ``sums`` must be the chunk sums of the
    same products, as :func:`d2_update` writes them.
    """
    return _pick(a, b, True, sums, u)


@njit(cache=NUMBA_CACHE, nogil=True)
def center_gaps(centers, slot, out):
    """Squared distances from ``centers[slot]`` to ``centers[:slot]``.

    IN ``centers`` float64 (k, d); OUT ``out`` float64 (k,), entries ``[0, slot)`` written.
    """
    d = centers.shape[1]
    for a in range(slot):
        acc = 0.0
        for f in range(d):
            t = centers[slot, f] - centers[a, f]
            acc += t * t
        out[a] = acc


@chunked_kernel
def d2_update(X, center, weights, slot, gaps, labels, mind, sums):
    """Add ``center`` as center number ``slot``: update nearest labels, D^2 and chunk sums.

    IN ``X`` float32/float64 (n, d); ``center`` float64 (d,); ``weights`` float64 (n,);
    ``slot`` int; ``gaps`` float64 (>= slot,) squared distances from ``center`` to the earlier
    centers (from :func:`center_gaps`). IN/OUT ``labels`` int64 (n,) (-1: none yet) and
    ``mind`` float64 (n,) (+inf: none yet): a row moves to ``slot`` only when strictly closer.
    OUT ``sums`` float64 (n_chunks,): chunk sums of ``weights * mind`` after the update.

    A row whose current center ``a`` satisfies ``gaps[a] > 4 (1 + 1e-6) mind`` is skipped without
    touching ``X``: by the triangle inequality ``|x - c| >= |c - c_a| - |x - c_a| >= |x - c_a|``
    (Raff 2021, exact k-means++ acceleration), and the margin covers rounding, so the result is
    bit-identical to the unpruned computation.
    """
    n, d = X.shape
    for c in prange(sums.shape[0]):
        acc = 0.0
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            a = labels[i]
            m = mind[i]
            if a < 0 or gaps[a] <= _PRUNE_MARGIN * m:
                dist = 0.0
                for f in range(d):
                    t = np.float64(X[i, f]) - center[f]
                    dist += t * t
                if dist < m:
                    mind[i] = dist
                    labels[i] = slot
                    m = dist
            acc += weights[i] * m
        sums[c] = acc


@njit(cache=NUMBA_CACHE, nogil=True)
def min_sq_distance(X, i, centers, start, stop, bound):
    """``min(bound, d^2(X[i], centers[j]) for start <= j < stop)``, each distance a sequential sum.

    IN ``X`` float32/float64 (n, d); ``centers`` float64 (k, d). Used to accept or reject a
    candidate drawn from stale D^2 bounds (see :func:`d2_refresh`).
    """
    best = bound
    for j in range(start, stop):
        acc = 0.0
        for f in range(X.shape[1]):
            t = np.float64(X[i, f]) - centers[j, f]
            acc += t * t
        if acc < best:
            best = acc
    return best


@chunked_kernel
def d2_refresh(X, centers, start, stop, gaps, weights, labels, mind, sums):
    """Add centers ``start..stop-1`` in one pass over ``X``: the same result as calling
    :func:`d2_update` for each of them in order, bit for bit.

    IN ``X`` float32/float64 (n, d); ``centers`` float64 (>= stop, d); ``gaps`` float64
    (stop - start, >= stop) with ``gaps[p, a]`` the squared distance between centers
    ``start + p`` and ``a``. IN/OUT ``labels`` int64 (n,), ``mind`` float64 (n,). OUT ``sums``
    float64 (n_chunks,): chunk sums of ``weights * mind``.

    A row is skipped when every new center passes the pruning test of :func:`d2_update` against
    the row's current center (then none of them can move it); otherwise the distances to all new
    centers are computed, vectorized over centers, and applied in order with a strict ``<``.
    """
    n, d = X.shape
    P = stop - start
    centers_t = np.ascontiguousarray(centers[start:stop].T)
    for c in prange(sums.shape[0]):
        buf = np.empty(P)
        acc = 0.0
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            a = labels[i]
            m = mind[i]
            needed = a < 0
            if not needed:
                limit = _PRUNE_MARGIN * m
                for p in range(P):
                    if gaps[p, a] <= limit:
                        needed = True
                        break
            if needed:
                row_distances(X, i, centers_t, buf)
                for p in range(P):
                    if buf[p] < m:
                        m = buf[p]
                        a = start + p
                mind[i] = m
                labels[i] = a
            acc += weights[i] * m
        sums[c] = acc


@chunked_kernel
def candidate_potentials(X, candidates, gaps, weights, labels, mind, partials, out):
    """Potential ``sum_i w_i min(mind_i, |x_i - c_p|^2)`` of each candidate center ``c_p``.

    IN ``X`` float32/float64 (n, d); ``candidates`` float64 (L, d); ``gaps`` float64 (L, >= k)
    with ``gaps[p, a]`` the squared distance between candidate ``p`` and center ``a``;
    ``weights`` float64 (n,); ``labels`` int64 (n,) and ``mind`` float64 (n,) as
    :func:`d2_update` leaves them. OUT ``partials`` float64 (n_chunks, L): per-chunk sequential
    sums of ``w_i min(mind_i, |x_i - c_p|^2)``; ``out`` float64 (L,): the sums of ``partials``
    over chunks, in chunk order.

    ``partials[c, p]`` equals, bit for bit, chunk ``c`` of the sums :func:`d2_update` would write
    after adding candidate ``p`` (same distances, same strict ``<``, same order), and rows are
    skipped by the same pruning test. Cost O(n d L), less where pruning applies.
    """
    n, d = X.shape
    L = candidates.shape[0]
    for c in prange(partials.shape[0]):
        for p in range(L):
            partials[c, p] = 0.0
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            a = labels[i]
            m = mind[i]
            limit = _PRUNE_MARGIN * m
            for p in range(L):
                v = m
                if a < 0 or gaps[p, a] <= limit:
                    dist = 0.0
                    for f in range(d):
                        t = np.float64(X[i, f]) - candidates[p, f]
                        dist += t * t
                    if dist < m:
                        v = dist
                partials[c, p] += weights[i] * v
    for p in range(L):
        total = 0.0
        for c in range(partials.shape[0]):
            total += partials[c, p]
        out[p] = total
