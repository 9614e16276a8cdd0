"""D^2 (k-means++) sampling kernels, chunk-parallel and bit-identical for any thread count.

Sampling is defined on fixed chunks of ``CHUNK_SIZE`` rows (see :func:`pick_index`), so the row
picked for a given uniform depends on the data and the uniform only, never on the thread count.
The same definition serves the first draw (by weight), D^2 draws, the candidates of greedy
k-means++, the degenerate draw (by weight among rows not yet chosen) and the redraws of exact
unlearning ([MUFC] Alg. 3 lines 11-14), where removed rows simply carry weight 0.

Every squared distance is the sequential float64 sum of ``(x_f - c_f)^2`` in feature order. The
multi-center kernels get their speed from computing many such sums side by side (several rows,
or a block of ``_BLOCK`` rows copied feature-major so that the innermost loop runs over rows and
vectorizes), never from reordering a sum. Pruning by the triangle inequality only skips work
whose outcome it proves, so results do not depend on it.
"""
import numba
import numpy as np
from numba import prange

from ..._config import CHUNK_SIZE
from ..arrays import CACHE_LINE, copy_into, prefetch, row_range
from ..jit import njit
from ..parallel import chunked_kernel, last_chunk_first, n_chunks  # (n_chunks: re-exported)
from .distances import OWN_LANES_MIN_FEATURES, TILE_ROWS, by_lanes, tile_lanes, transpose_rows

__all__ = ["n_chunks", "chunk_sums", "pick_index", "pick_product", "pick_pending", "d2_update",
           "center_gaps", "min_gaps", "min_sq_distance", "d2_refresh", "candidate_potentials",
           "tiled", "tile_rows", "greedy_pass", "greedy_steps", "hints_pay", "apply_pending"]

# Skip a row only when the triangle inequality proves, with this relative margin against rounding,
# that the new center is not strictly closer (see d2_update).
_PRUNE_MARGIN = 4.0 * (1.0 + 1e-6)

# Rows per block of the multi-center distance kernel (see _distances) and per tile of greedy_pass
# (distances by tile_lanes).
_BLOCK = TILE_ROWS
# While the greedy pass sums a tile's potentials (scalar code, bound by the sums' latency) it
# asks for the next tile's lines, one hint per row and candidate, so that reading the next tile
# from memory overlaps this one's arithmetic (see hints_pay). Greedy seeding against no hints,
# 3 to 5 alternating runs of 7 calls, medians: float64 1e5 x 50, k = 10: 1.17-1.46x (normal and
# uniform data, seven rounds); 1e5 x 50, k = 100: 1.26-1.35x; 1e5 x 32, k = 10: 1.28-1.36x; 4e4 x
# 50 and 2e4 x 100 (16 MB of tiles): 1.02-1.23x and 1.11-1.17x (best and median call). They did
# not pay where the pass does not stream from memory: tiles that fit in the caches (5e3 x 100
# float64: 0.85x), float32 tiles (half the bytes for the same float64 arithmetic; 1e5 x 50:
# 0.87-0.90x, 1e5 x 784: 0.91-1.06x) and short rows, where the per-row bookkeeping outweighs the
# stream (1e5 x 10 float64: 0.94-0.98x); nor clearly where they cover only the start of the next
# tile (1e5 x 784 float64, k = 10, 32 of 401 kB: 0.88-1.32x over five rounds).
_PREFETCH_MIN_ROW_BYTES = 256
_PREFETCH_MIN_BYTES = 1 << 24
# Candidates whose potentials greedy_pass sums side by side (four chains of additions).
_SIDE_BY_SIDE = 4


@njit(inline="always")
def hints_pay(tiles, n_candidates):
    """Whether :func:`greedy_pass` asks for each next tile's lines: float64 tiles of at least
    ``_PREFETCH_MIN_ROW_BYTES`` per row and ``_PREFETCH_MIN_BYTES`` in all, whose rows the hints
    cover whole (two cache lines per row and candidate: at most 16 features a candidate)."""
    d = tiles.shape[1]
    return (tiles.itemsize == 8 and d * 8 >= _PREFETCH_MIN_ROW_BYTES and d <= 16 * n_candidates
            and tiles.size * 8 >= _PREFETCH_MIN_BYTES)


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


@njit
def _target_chunk(sums, u):
    """``(start, inner)``: the first row of the chunk where the running total of ``sums`` passes
    ``u * total`` (the last positive chunk if rounding put the target at the total), and the
    part of the target left inside that chunk."""
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
    return chunk * CHUNK_SIZE, target - running


@njit
def _pick(a, b, use_b, sums, u):
    """The draw of :func:`pick_index` (``use_b`` False) and :func:`pick_product` (True). One
    compiled kernel for both: they are called from Python, where ``use_b`` is typed as a plain
    bool, not a literal that would compile a second specialisation."""
    n = a.shape[0]
    start, inner = _target_chunk(sums, u)
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


def pick_index(values, sums, u):
    """Row ``i`` with probability ``values[i] / values.sum()`` for ``u ~ U[0, 1)``.

    IN ``values`` float64 (n,) >= 0 with a positive sum; ``sums`` float64 (n_chunks,) from
    :func:`chunk_sums`; ``u`` float in [0, 1). Returns the first row of the first chunk at which the
    running sum (chunk sums, then the rows of that chunk from zero) exceeds ``u * total``. Rounding
    fallbacks return the last positive row, so the picked row always has ``values[i] > 0``.
    """
    return _pick(values, values, False, sums, u)


def pick_product(a, b, sums, u):
    """:func:`pick_index` on ``values = a * b`` (elementwise) without forming it.

    Used for D^2 draws with ``a = weights`` and ``b = mind``; ``sums`` must be the chunk sums of the
    same products, as :func:`d2_update` writes them.
    """
    return _pick(a, b, True, sums, u)


@njit
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


@njit
def min_gaps(new, centers, count, out):
    """``out[a] = min_p |new[p] - centers[a]|^2`` for ``a < count``: a row whose current center
    ``a`` has ``out[a] > 4 (1 + 1e-6) mind`` cannot move to any center of ``new`` (see
    :func:`d2_update`). Used for pruning only.

    IN ``new`` float64 (P, d), ``centers`` float64 (>= count, d); OUT ``out`` float64 (>= count,).
    """
    d = centers.shape[1]
    for a in range(count):
        best = np.inf
        for p in range(new.shape[0]):
            acc = 0.0
            for f in range(d):
                t = new[p, f] - centers[a, f]
                acc += t * t
            if acc < best:
                best = acc
        out[a] = best


@njit
def _distances(X, rows, nr, centers, buf, acc):
    """``acc[p, j] = |X[rows[j]] - centers[p]|^2`` for ``j < nr <= _BLOCK`` and every ``p``.

    Each distance is the sequential float64 sum over features in order of ``(x_f - c_f)^2``, the
    same bits as a plain loop. The rows are copied feature-major into ``buf`` (float64 (d, _BLOCK);
    :func:`~fedcore.kernels.kmeans.distances.transpose_rows`, zeros in the unused lanes) so that
    the rows are vector lanes (:func:`~fedcore.kernels.kmeans.distances.tile_lanes`).
    """
    P = centers.shape[0]
    transpose_rows(X, rows[:nr], buf, _BLOCK)
    for p in range(0, P, 2):  # two centers at a time (the last one twice where P is odd)
        tile_lanes(buf, centers, p, min(p + 1, P - 1), acc)


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
    n = X.shape[0]
    for r in prange(sums.shape[0]):
        c = last_chunk_first(r, sums.shape[0])
        sums[c] = _update_chunk(X, center, weights, slot, gaps, labels, mind, c * CHUNK_SIZE,
                                min(n, (c + 1) * CHUNK_SIZE))


@njit(inline="always")
def _unpruned_rows(labels, gaps, mind, lo, hi, rows):
    """OUT ``rows[:m]``: the rows of ``lo..hi-1`` that the pruning test of :func:`d2_update`
    keeps (no center yet, or the new center may be closer); returns ``m``."""
    m = 0
    for i in range(lo, hi):
        a = labels[i]
        if a < 0 or gaps[a] <= _PRUNE_MARGIN * mind[i]:
            rows[m] = i
            m += 1
    return m


@njit(inline="always")
def _update_chunk(X, center, weights, slot, gaps, labels, mind, lo, hi):
    """:func:`d2_update` on rows ``lo..hi-1``; returns their sum of ``weights * mind``.

    The distances of the rows the pruning test keeps are taken side by side: from
    ``OWN_LANES_MIN_FEATURES`` features, eight rows at a time in vector lanes
    (:func:`~fedcore.kernels.kmeans.distances.by_lanes`, C-contiguous X; it compiles once for
    this kernel and Lloyd's, which both take X read-only), then four rows at a time, each
    row's sum a chain of its own. Vanilla seeding against four at a time only: 1e5 x 50,
    k = 10: 1.54x; 1e5 x 784: 1.24x; 1e5 x 10 float32: 1.18x; at d = 3 the lanes are not
    used (storing the distances, then applying them, was 0.93x there)."""
    d = X.shape[1]
    rows = np.empty(hi - lo + 3, dtype=np.int64)
    nr = _unpruned_rows(labels, gaps, mind, lo, hi, rows)
    done = 0
    if d >= OWN_LANES_MIN_FEATURES:  # eight rows at a time in vector lanes, then the rest
        one = np.empty((1, d))
        which = np.empty(nr, dtype=np.int64)
        for f in range(d):
            one[0, f] = center[f]
        which[:] = 0
        dist = np.empty(nr)
        done = by_lanes(X, rows[:nr], one, which, dist)
        for j in range(done):
            i = rows[j]
            if dist[j] < mind[i]:
                mind[i] = dist[j]
                labels[i] = slot
    for j in range(nr, nr + 3):  # pad to whole groups with the last kept row (recomputed)
        rows[j] = rows[nr - 1] if nr > 0 else lo
    for j in range(done, nr, 4):
        i0 = rows[j]
        i1 = rows[j + 1]
        i2 = rows[j + 2]
        i3 = rows[j + 3]
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        for f in range(d):
            c = center[f]
            t0 = np.float64(X[i0, f]) - c
            t1 = np.float64(X[i1, f]) - c
            t2 = np.float64(X[i2, f]) - c
            t3 = np.float64(X[i3, f]) - c
            a0 += t0 * t0
            a1 += t1 * t1
            a2 += t2 * t2
            a3 += t3 * t3
        if a0 < mind[i0]:
            mind[i0] = a0
            labels[i0] = slot
        if a1 < mind[i1]:
            mind[i1] = a1
            labels[i1] = slot
        if a2 < mind[i2]:
            mind[i2] = a2
            labels[i2] = slot
        if a3 < mind[i3]:
            mind[i3] = a3
            labels[i3] = slot
    acc = 0.0
    for i in range(lo, hi):
        acc += weights[i] * mind[i]
    return acc


@njit
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
def d2_refresh(X, new, start, gaps, weights, labels, mind, sums):
    """Add ``new`` as centers ``start, start + 1, ...`` in one pass over ``X``: the same result as
    calling :func:`d2_update` for each of them in order, bit for bit.

    IN ``X`` float32/float64 (n, d); ``new`` float64 (P, d); ``gaps`` float64 (>= start,) with
    ``gaps[a]`` the least squared distance between center ``a`` and the new centers (from
    :func:`min_gaps`, pruning only). IN/OUT ``labels`` int64 (n,), ``mind`` float64
    (n,). OUT ``sums`` float64 (n_chunks,): chunk sums of ``weights * mind``.

    A row is skipped when ``gaps[a] > 4 (1 + 1e-6) mind`` for its current center ``a`` (every new
    center passes the pruning test of :func:`d2_update`, so none of them can move it); otherwise
    the distances to all new centers are computed, blocks of rows at a time, and applied in
    order with a strict ``<``.
    """
    n = X.shape[0]
    for r in prange(sums.shape[0]):
        c = last_chunk_first(r, sums.shape[0])
        sums[c] = _refresh_chunk(X, new, start, gaps, weights, labels, mind, c * CHUNK_SIZE,
                                 min(n, (c + 1) * CHUNK_SIZE))


@njit
def _refresh_chunk(X, new, start, gaps, weights, labels, mind, lo, hi):
    """:func:`d2_refresh` on rows ``lo..hi-1``; returns their sum of ``weights * mind``."""
    d = X.shape[1]
    P = new.shape[0]
    rows = np.empty(hi - lo, dtype=np.int64)
    buf = np.empty((d, _BLOCK))
    acc = np.empty((P, _BLOCK))
    nr = _unpruned_rows(labels, gaps, mind, lo, hi, rows)
    for b in range(0, nr, _BLOCK):
        nb = min(_BLOCK, nr - b)
        block = rows[b:b + nb]
        _distances(X, block, nb, new, buf, acc)
        for j in range(nb):
            i = block[j]
            m = mind[i]
            a = labels[i]
            for p in range(P):
                if acc[p, j] < m:
                    m = acc[p, j]
                    a = start + p
            mind[i] = m
            labels[i] = a
    total = 0.0
    for i in range(lo, hi):
        total += weights[i] * mind[i]
    return total


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


@njit
def pick_pending(weights, dists, pend, sums, u):
    """:func:`pick_product` on ``weights * dists[pend]``, the D^2 after the center of row ``pend``
    of ``dists`` (see :func:`greedy_pass`), without applying that center; ``sums`` must be the
    chunk sums of those products, as :func:`greedy_pass` writes them. (Compiled: the draw of
    :func:`greedy_steps`; a typed bool, so that ``_pick`` compiles as Python calls it, not a
    literal's variant.)"""
    return _pick(weights, dists[pend], np.bool_(True), sums, u)


def tiled(X):
    """The copy of ``X`` by tiles of rows that :func:`greedy_pass` reads (see :func:`tile_rows`)."""
    # Fresh pages, first written by the pool's threads (tile_rows writes every element); zeroing
    # them on this thread first (so that one thread takes the page faults) cost more here.
    tiles = np.empty((max(1, -(-X.shape[0] // _BLOCK)), X.shape[1], _BLOCK), dtype=X.dtype)
    tile_rows(X, tiles)
    return tiles


@chunked_kernel
def tile_rows(X, tiles):
    """Copy ``X`` feature-major by tiles of ``_BLOCK`` rows: ``tiles[b, f, j] = X[b * _BLOCK + j,
    f]``, zeros past the last row.

    IN ``X`` float32/float64 (n, d); OUT ``tiles`` of X's dtype (ceil(n / _BLOCK), d, _BLOCK).
    With this layout the distances from a tile to a center are ``_BLOCK`` independent sequential
    sums whose innermost loop the compiler vectorizes (see :func:`greedy_pass`).

    Each tile is filled by :func:`~fedcore.kernels.kmeans.distances.transpose_rows`: eight rows
    at a time in vector registers (C-contiguous X), where a loop over rows and features copied
    one element at a time (greedy seeding 1.04-1.06x faster at 1e5 x 784 and at 1e5 x 50
    float32, k = 10; the same at 1e5 x 50 float64).
    """
    n = X.shape[0]
    for b in prange(tiles.shape[0]):
        lo = b * _BLOCK
        transpose_rows(X, row_range(lo, min(n, lo + _BLOCK)), tiles[b], _BLOCK)


@chunked_kernel
def greedy_pass(X, tiles, candidates, gaps, weights, pend, slot, dists, labels, mind, partials,
                out):
    """One step of greedy k-means++: apply the pending center, then the potentials of candidates.

    IN ``X`` float32/float64 (n, d) and ``tiles`` its copy by :func:`tile_rows` (only ``tiles`` is
    read); ``candidates`` float64 (L, d); ``gaps`` float64 (>= slot + 1,) with ``gaps[a]`` the
    least squared distance between center ``a`` and the candidates (from :func:`min_gaps`,
    pruning only); ``weights`` float64 (n,); ``pend`` int: the row of ``dists`` that holds the
    D^2 after center ``slot`` (the previous step's choice), -1 for none. IN/OUT ``labels`` int64
    (n,), ``mind`` float64 (n,): first every row with ``dists[pend, i] < mind[i]`` moves to
    center ``slot`` at that distance (as :func:`d2_update` does). Then OUT ``dists`` float64
    (>= L, n): ``min(mind_i, |x_i - c_p|^2)`` (a sequential sum in feature order), the D^2 after
    candidate ``p``, so that a row moves to it where ``dists[p, i] < mind[i]``; ``partials``
    float64 (>= L, n_chunks): per-chunk sequential sums of ``w_i dists[p, i]``, bit for bit the
    chunk sums :func:`d2_update` would write after adding candidate ``p``; ``out`` float64
    (>= L,): their sums over chunks, in chunk order, as :func:`candidate_potentials`.

    The distances are computed a tile of rows at a time, for the tiles with a row that the pruning
    test of :func:`d2_refresh` keeps, and summed into the potentials while in cache, candidate by
    candidate without branches (each row's term chosen by a select); where :func:`hints_pay`,
    the next tile's lines are asked for meanwhile (hints only: the same bits).
    """
    n = X.shape[0]
    L = candidates.shape[0]
    nc = partials.shape[1]
    hints = hints_pay(tiles, L)
    for r in prange(nc):
        c = last_chunk_first(r, nc)
        lo, hi = c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)
        if hints:  # (literals: two loops, each compiled without the other's test)
            _greedy_chunk(tiles, candidates, gaps, weights, pend, slot, dists, labels, mind,
                          partials, c, lo, hi, True)
        else:
            _greedy_chunk(tiles, candidates, gaps, weights, pend, slot, dists, labels, mind,
                          partials, c, lo, hi, False)
    for p in range(L):
        total = 0.0
        for c in range(nc):
            total += partials[p, c]
        out[p] = total


@chunked_kernel
def greedy_steps(X, tiles, weights, uniforms, start, pend, rows, centers, gaps, dists, labels,
                 mind, partials, out):
    """Steps ``start, start + 1, ...`` of greedy k-means++, each a D^2 draw of ``L`` candidates
    (:func:`pick_pending`: the D^2 after the pending center, with ``uniforms[t - 1]``), then
    :func:`greedy_pass`, then the candidate of the lowest potential (the first on ties) becomes
    center ``t`` and pending. The whole loop is compiled: from Python each step cost several
    kernel calls' overhead (about 50 us, a quarter of a step at 2e4 x 10, 6 candidates).

    ``uniforms`` float64 (k - 1, L); ``start >= 1`` and ``pend``: the step and the pending row
    of ``dists`` (from the first center's pass); ``rows`` int64 (k,), ``centers`` float64 (k, d)
    OUT from row ``start``; the others as :func:`greedy_pass`. Returns ``(t, pend)``: the first
    step not taken (k, or a step where every D^2 is 0, left to the caller's degenerate rule) and
    the pending row then.
    """
    k, L = rows.shape[0], uniforms.shape[1]
    d = X.shape[1]
    candidates = np.empty((L, d))
    picked = np.empty(L, dtype=np.int64)
    for t in range(start, k):
        sums = partials[pend]
        positive = False
        for c in range(sums.shape[0]):
            positive = positive or sums[c] > 0.0
        if not positive:
            return t, pend
        for p in range(L):
            picked[p] = pick_pending(weights, dists, pend, sums, uniforms[t - 1, p])
            copy_into(candidates[p], X[picked[p]], d)
        min_gaps(candidates, centers, t, gaps)  # pruning only
        greedy_pass(X, tiles, candidates, gaps, weights, pend, t - 1, dists, labels, mind,
                    partials, out)
        best = 0
        for p in range(1, L):
            if out[p] < out[best]:  # the first of the lowest
                best = p
        pend = best
        rows[t] = picked[best]
        copy_into(centers[t], candidates[best], d)
    return k, pend


@njit
def _greedy_chunk(tiles, candidates, gaps, weights, pend, slot, dists, labels, mind, partials,
                  c, lo, hi, hints):
    """:func:`greedy_pass` on rows ``lo..hi-1`` (chunk ``c``), a tile at a time; ``hints`` (a
    literal: each value compiles its own loop): ask for each next tile's lines while a tile's
    potentials are summed."""
    numba.literally(hints)
    d = tiles.shape[1]
    size = d * _BLOCK
    line = max(1, 2 * CACHE_LINE // tiles.itemsize)  # (elements in two cache lines)
    L = candidates.shape[0]
    need = np.empty(_BLOCK, dtype=np.bool_)
    acc = np.zeros((L, _BLOCK))
    sums = np.zeros(L)
    for b in range(lo // _BLOCK, (hi - 1) // _BLOCK + 1):
        r0 = max(lo, b * _BLOCK)
        r1 = min(hi, (b + 1) * _BLOCK)
        compute = False
        # apply_pending's rule, written out so that m and a stay in registers (a shared helper
        # that stored and reloaded them made greedy seeding 0.72x at 1e5 x 10, k = 100)
        for i in range(r0, r1):
            m = mind[i]
            a = labels[i]
            if pend >= 0 and dists[pend, i] < m:
                m = dists[pend, i]
                a = slot
                mind[i] = m
                labels[i] = a
            needed = a < 0 or gaps[a] <= _PRUNE_MARGIN * m
            need[i - r0] = needed
            compute |= needed
        if compute:  # two candidates at a time (the last one twice where L is odd)
            tile = tiles[b]
            for p in range(0, L, 2):
                tile_lanes(tile, candidates, p, min(p + 1, L - 1), acc)
        # Four candidates side by side, branch-free: each candidate's sum of terms stays in row
        # order (four independent chains of additions, where one chain waited on each addition),
        # and the stores of dists are contiguous. Past the last candidate a lane repeats it (the
        # same values, stored twice; the sums are stored last lane first, so the lanes that a
        # two-lane group leaves unused cannot overwrite it); the last one or two candidates go
        # two side by side. With ``hints``, meanwhile ask for the next tile's lines (_ask_next).
        off = b * _BLOCK
        nxt = (b + 1) * size
        for p in range(0, L, _SIDE_BY_SIDE):
            p1, p2, p3 = min(p + 1, L - 1), min(p + 2, L - 1), min(p + 3, L - 1)
            s0, s1, s2, s3 = sums[p], sums[p1], sums[p2], sums[p3]
            if L - p > 2:
                for i in range(r0, r1):
                    if hints:
                        _ask_next(tiles, p, min(L, p + _SIDE_BY_SIDE), i - r0, nxt, line, size)
                    m = mind[i]
                    w = weights[i]
                    keep = need[i - r0]
                    j = i - off  # (acc is stale where the tile was not computed: masked by keep)
                    s0 = _potential_term(acc, dists, p, i, j, m, w, keep, s0)
                    s1 = _potential_term(acc, dists, p1, i, j, m, w, keep, s1)
                    s2 = _potential_term(acc, dists, p2, i, j, m, w, keep, s2)
                    s3 = _potential_term(acc, dists, p3, i, j, m, w, keep, s3)
            else:
                for i in range(r0, r1):
                    if hints:
                        _ask_next(tiles, p, L, i - r0, nxt, line, size)
                    m = mind[i]
                    w = weights[i]
                    keep = need[i - r0]
                    j = i - off
                    s0 = _potential_term(acc, dists, p, i, j, m, w, keep, s0)
                    s1 = _potential_term(acc, dists, p1, i, j, m, w, keep, s1)
            sums[p3] = s3
            sums[p2] = s2
            sums[p1] = s1
            sums[p] = s0
    for p in range(L):
        partials[p, c] = sums[p]


@njit(inline="always")
def _ask_next(tiles, p, q, r, nxt, line, size):
    """Ask for the lines of the next tile (from element ``nxt``) that candidates ``p..q-1`` cover
    at row ``r`` of this one: two cache lines (``line`` elements) per row and candidate, as far
    as the tile (``size`` elements) goes."""
    for c in range(p, q):
        ahead = (c * _BLOCK + r) * line
        if ahead < size:
            prefetch(tiles, nxt + ahead)


@njit(inline="always")
def _potential_term(acc, dists, p, i, j, m, w, keep, s):
    """Row ``i``'s term of candidate ``p``'s potential (distance ``acc[p, j]``, D^2 ``m``, weight
    ``w``) added to ``s``; OUT ``dists[p, i]``, the row's D^2 after the candidate."""
    v = acc[p, j]
    after = v if keep & (v < m) else m
    dists[p, i] = after
    return s + w * after


@njit
def apply_pending(dists, pend, slot, labels, mind):
    """Move every row with ``dists[pend, i] < mind[i]`` to center ``slot`` at that distance (see
    :func:`greedy_pass`)."""
    for i in range(mind.shape[0]):
        if dists[pend, i] < mind[i]:
            mind[i] = dists[pend, i]
            labels[i] = slot
