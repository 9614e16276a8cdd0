"""Kernels for vertical coresets: VKMC local sensitivities, sampling by scores, vertical SAGA,
coordinate descent for the elastic net.

Sampling consumes caller-supplied uniforms and follows the chunked inverse-CDF rule of
:func:`fedcore.kernels.kmeans.seeding.pick_index` exactly, so a draw depends on the scores and the
uniform only, never on the thread count. Chunked kernels are compiled serially and in parallel from
one function (:func:`~fedcore.kernels.parallel.chunked_kernel`); reductions write per-chunk
partials and merge them serially in chunk order, bit-identical for any thread count.
"""
import numpy as np
from numba import prange

from .._config import CHUNK_SIZE
from .jit import njit
from .parallel import chunked_kernel

__all__ = ["cluster_cost_sums", "vkmc_sensitivities", "sample_sorted", "saga_epoch",
           "elastic_net_sweep", "gram_matrix", "projected_sq_norms"]


@chunked_kernel
def cluster_cost_sums(labels, distances, costs, sizes):
    """Per-cluster cost and size of a party's local clustering ([VFLC] Alg. 3 lines 5-10).

    IN ``labels`` int64 (n,) in [0, k); ``distances`` float64 (n,) squared distance of each row to
    its local center. OUT ``costs`` float64 (k,) ``sum_{i in B_l} d_i^2``; ``sizes`` int64 (k,)
    ``|B_l|`` (0 for an empty cluster). Returns ``cost^(j) = sum_l costs[l]`` (line 10), summed in
    cluster order. Per-chunk partials are merged in chunk order.
    """
    n = labels.shape[0]
    k = costs.shape[0]
    n_chunks = max(1, -(-n // CHUNK_SIZE))
    part_costs = np.zeros((n_chunks, k))
    part_sizes = np.zeros((n_chunks, k), dtype=np.int64)
    for c in prange(n_chunks):
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            part_costs[c, labels[i]] += distances[i]
            part_sizes[c, labels[i]] += 1
    total = 0.0
    for l in range(k):
        acc = 0.0
        size = 0
        for c in range(n_chunks):
            acc += part_costs[c, l]
            size += part_sizes[c, l]
        costs[l] = acc
        sizes[l] = size
        total += acc
    return total


@chunked_kernel
def vkmc_sensitivities(labels, distances, costs, sizes, total_cost, alpha, out):
    """Local sensitivities of [VFLC] Alg. 3 line 12 for one party.

    IN ``labels`` int64 (n,); ``distances`` float64 (n,); ``costs`` float64 (k,) and ``sizes``
    int64 (k,) from :func:`cluster_cost_sums`; ``total_cost`` float ``cost^(j)``; ``alpha`` float.
    OUT ``out`` float64 (n,)::

        g_i = alpha d_i^2 / cost + alpha costs[l] / (sizes[l] cost) + 2 alpha / sizes[l],  l = pi(i)

    When ``cost == 0`` (every row on its local center) the two cost terms are defined as 0, which
    is their limit for a vanishing but proportionally shrinking data spread; ``g`` is then uniform
    within each local cluster. Each party's total is ``2 alpha (k' + 1)`` (``k'`` non-empty
    clusters), or ``2 alpha k'`` when ``cost == 0``.
    """
    n = labels.shape[0]
    for c in prange(max(1, -(-n // CHUNK_SIZE))):
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            l = labels[i]
            size = sizes[l]
            own = 0.0
            mean = 0.0
            if total_cost > 0.0:
                own = alpha * distances[i] / total_cost
                mean = alpha * costs[l] / (size * total_cost)
            out[i] = own + mean + 2.0 * alpha / size


@njit
def _scan_chunk(values, start, stop, inner):
    acc = 0.0
    last = -1
    for i in range(start, stop):
        v = values[i]
        if v > 0.0:
            last = i
            acc += v
            if acc > inner:
                return i
    return last


@njit
def sample_sorted(values, sums, uniforms, out):
    """Inverse-CDF draws for sorted uniforms, one pass: ``out[t] = pick_index(values, sums, u_t)``.

    IN ``values`` float64 (n,) >= 0 with a positive sum; ``sums`` float64 (n_chunks,) from
    :func:`fedcore.kernels.kmeans.seeding.chunk_sums`; ``uniforms`` float64 (m,) in [0, 1), sorted
    non-decreasing. OUT ``out`` int64 (m,).

    The row for ``u`` is the one :func:`~fedcore.kernels.kmeans.seeding.pick_index` returns (first
    chunk whose running chunk-sum total exceeds ``u * total``, then first row of that chunk whose
    running in-chunk sum exceeds the remainder), bit for bit, including its rounding fallbacks.
    Because the running sums are fixed sequences and the targets are sorted, the walk never moves
    back, so the cost is O(n_chunks + m + rows of the chunks visited). Scores drawn this way and
    scattered back to the uniforms' original order are i.i.d. draws with probability
    ``values[i] / sum(values)`` (sampling with replacement, [VFLC] Alg. 1 lines 5 and 7).
    """
    n = values.shape[0]
    n_chunks = sums.shape[0]
    total = 0.0
    for c in range(n_chunks):
        total += sums[c]
    last_chunk = -1
    for c in range(n_chunks - 1, -1, -1):
        if sums[c] > 0.0:
            last_chunk = c
            break
    c = 0
    running = 0.0
    cur = -1
    row = 0
    acc_before = 0.0
    for t in range(uniforms.shape[0]):
        target = uniforms[t] * total
        while c < n_chunks and not (running + sums[c] > target):
            running += sums[c]
            c += 1
        if c == n_chunks:  # u * total rounded up to total: pick_index's fallback chunk
            start = last_chunk * CHUNK_SIZE
            out[t] = _scan_chunk(values, start, min(n, start + CHUNK_SIZE), target - running)
            continue
        inner = target - running
        stop = min(n, (c + 1) * CHUNK_SIZE)
        if c != cur:
            cur = c
            row = c * CHUNK_SIZE
            acc_before = 0.0
        hit = -1
        while row < stop:
            v = values[row]
            if v > 0.0:
                a = acc_before + v
                if a > inner:
                    hit = row
                    break
                acc_before = a
            row += 1
        if hit < 0:
            # Rounding: the in-chunk sum never exceeded the remainder. The walk stays exhausted,
            # so every later target in this chunk takes this fallback too, as pick_index does.
            for i in range(stop - 1, c * CHUNK_SIZE - 1, -1):
                if values[i] > 0.0:
                    hit = i
                    break
        out[t] = hit


@njit
def saga_epoch(X, y, edges, order, probabilities, theta, memory, grad_avg, step, reg, l1=0.0):
    """One epoch of vertical (proximal) SAGA ([SAGA]) on ``sum_i p_i h_i + l1 |theta|_1``.

    ``h_i(theta) = (x_i . theta - y_i)^2 + reg |theta|^2``; with ``p_i = w_i / sum(w)``,
    ``reg = alpha / sum(w)`` and ``l1 = l1_alpha / sum(w)`` the minimizer is that of the weighted
    ridge, lasso or elastic-net objective. ``l1 = 0`` (the default) is plain SAGA, bit for bit.

    IN ``X`` float32/float64 (m, d) rows, party ``j`` owning columns ``edges[j]:edges[j+1]``;
    ``y`` float64 (m,); ``edges`` int64 (T+1,); ``order`` int64 (n_steps,) rows drawn i.i.d. by
    ``p``; ``probabilities`` float64 (m,); ``step``, ``reg``, ``l1`` floats. IN/OUT ``theta``
    float64 (d,); ``memory`` float64 (m,) residual of each row at its last visit; ``grad_avg``
    float64 (d,) ``sum_k p_k 2 memory[k] x_k``.

    Per step (row ``i``): each party sends its partial product ``x_i^(j) . theta^(j)``, the server
    adds them in party order and subtracts ``y_i`` (held by the last party) to get ``r``, and sends
    ``r`` back; each party then updates its own block:
    ``theta -= step (2 (r - memory[i]) x_i + grad_avg + 2 reg theta)``, then, when ``l1 > 0``,
    the proximal step of ``step l1 |.|_1`` (soft-thresholding at ``step l1``; [SAGA] Section 2),
    which needs nothing from the other parties; ``grad_avg += p_i 2 (r - memory[i]) x_i``,
    ``memory[i] = r``.
    """
    n_parties = edges.shape[0] - 1
    d = theta.shape[0]
    threshold = step * l1
    for s in range(order.shape[0]):
        i = order[s]
        r = 0.0
        for j in range(n_parties):
            part = 0.0
            for f in range(edges[j], edges[j + 1]):
                part += np.float64(X[i, f]) * theta[f]
            r += part
        r -= y[i]
        delta = r - memory[i]
        pi = probabilities[i]
        for f in range(d):
            xf = np.float64(X[i, f])
            g = 2.0 * delta * xf + grad_avg[f] + 2.0 * reg * theta[f]
            t = theta[f] - step * g
            if l1 > 0.0:
                if t > threshold:
                    t -= threshold
                elif t < -threshold:
                    t += threshold
                else:
                    t = 0.0
            theta[f] = t
            grad_avg[f] = grad_avg[f] + pi * 2.0 * delta * xf
        memory[i] = r


@njit
def elastic_net_sweep(gram, rhs, l2, l1, theta, grad):
    """One cyclic coordinate-descent sweep on the weighted elastic-net objective in Gram form.

    ``F(theta) = theta^T G theta - 2 b^T theta + l2 |theta|^2 + l1 |theta|_1``, which is
    ``sum_i w_i (x_i . theta - y_i)^2 + l2 |theta|^2 + l1 |theta|_1`` up to the constant
    ``sum_i w_i y_i^2`` when ``G = X^T W X`` and ``b = X^T W y``. Coordinate ``f`` moves to the
    exact minimizer of ``F`` along it, ``S(b_f - sum_{g != f} G_fg theta_g, l1 / 2) / (G_ff + l2)``
    with ``S`` the soft-threshold; a coordinate with ``G_ff + l2 = 0`` (a column that is zero on
    every weighted row, no ridge term) does not enter ``F`` and is set to 0.

    IN ``gram`` float64 (d, d) symmetric positive semi-definite; ``rhs`` float64 (d,); ``l2``,
    ``l1`` floats >= 0. IN/OUT ``theta`` float64 (d,); ``grad`` float64 (d,) ``G theta``, kept
    in step with ``theta``. Returns the largest absolute change of a coordinate.
    """
    d = theta.shape[0]
    half = 0.5 * l1
    largest = 0.0
    for f in range(d):
        old = theta[f]
        denom = gram[f, f] + l2
        new = 0.0
        if denom > 0.0:
            z = rhs[f] - (grad[f] - gram[f, f] * old)
            if z > half:
                new = (z - half) / denom
            elif z < -half:
                new = (z + half) / denom
        if new != old:
            delta = new - old
            for g in range(d):
                grad[g] += gram[g, f] * delta
            theta[f] = new
            if abs(delta) > largest:
                largest = abs(delta)
    return largest


@chunked_kernel
def gram_matrix(A, out):
    """Gram matrix ``A^T A`` with per-chunk partials merged in chunk order.

    IN ``A`` float32/float64 (n, d). OUT ``out`` float64 (d, d), symmetric.
    """
    n, d = A.shape
    n_chunks = max(1, -(-n // CHUNK_SIZE))
    part = np.zeros((n_chunks, d, d))
    for c in prange(n_chunks):
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            for a in range(d):
                xa = np.float64(A[i, a])
                for b in range(a, d):
                    part[c, a, b] += xa * np.float64(A[i, b])
    for a in range(d):
        for b in range(a, d):
            acc = 0.0
            for c in range(n_chunks):
                acc += part[c, a, b]
            out[a, b] = acc
            out[b, a] = acc


@chunked_kernel
def projected_sq_norms(A, M, offset, out):
    """Row leverages ``||A_i M||^2 + offset`` ([VFLC] Alg. 2 line 4 with ``M = V S^-1``).

    IN ``A`` float32/float64 (n, d); ``M`` float64 (d, r) mapping rows of ``A`` to coordinates in an
    orthonormal basis of its column space; ``offset`` float (``1/n``). OUT ``out`` float64 (n,).
    """
    n, d = A.shape
    r = M.shape[1]
    for c in prange(max(1, -(-n // CHUNK_SIZE))):
        z = np.empty(r)
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            z[:] = 0.0
            for f in range(d):
                xf = np.float64(A[i, f])
                for q in range(r):
                    z[q] += xf * M[f, q]
            acc = 0.0
            for q in range(r):
                acc += z[q] * z[q]
            out[i] = acc + offset
