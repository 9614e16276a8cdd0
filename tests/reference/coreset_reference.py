"""Slow, obviously-correct references for fedcore's vertical coresets (VFL coreset paper).

Plain Python loops over rows, with NumPy only for element-wise arithmetic or for an oracle that
nobody here wrote (SVD, least squares). Each function states the paper line it follows.

Contents
--------
vkmc_sensitivities_reference
    Local sensitivities of Alg. 3 lines 6-13 from a party's block and its local centers.
sample_with_replacement_reference
    One inverse-CDF pick per uniform, by :func:`tests.reference.kmeans_reference.pick_reference`.
dis_probabilities_reference, dis_weights_reference
    Per-draw probability ``g_i / G`` and weights ``G / (|S| g_i)`` of DIS (Alg. 1 lines 5-10).
leverage_reference
    ``||u_i||^2 + 1/n`` of Alg. 2 line 4 from an SVD with a rank cut.
ridge_reference
    Weighted ridge solution by least squares on the augmented system.
saga_epoch_reference
    One epoch of vertical SAGA with per-party partial products summed in party order.
distdim_reference
    DistDim's grid of products of local centers with occupancy weights (Ding et al. 2016).
robust_error_reference
    Definition G.1's smallest additive error over the nested outlier sets of Thm. G.2's proof.
"""
import numpy as np

from tests.reference.kmeans_reference import assign_reference, pick_reference

__all__ = [
    "vkmc_sensitivities_reference",
    "sample_with_replacement_reference",
    "dis_probabilities_reference",
    "dis_weights_reference",
    "leverage_reference",
    "ridge_reference",
    "saga_epoch_reference",
    "distdim_reference",
    "robust_error_reference",
]


def vkmc_sensitivities_reference(X, centers, alpha):
    """Alg. 3 lines 6-13 for one party, row by row.

    ``pi(i)`` is the first nearest center (lowest index on ties), ``cost = sum_i d(x_i, C)^2``
    (line 10) and, for ``l = pi(i)``,

        g_i = alpha d_i^2 / cost + alpha (sum_{i' in B_l} d_{i'}^2) / (|B_l| cost) + 2 alpha / |B_l|

    (line 12). When ``cost == 0`` (every row sits on a center) the two cost terms are 0.
    Returns a list of n floats.
    """
    labels, dist = assign_reference(X, centers)
    n = len(labels)
    cost = 0.0
    for i in range(n):
        cost += float(dist[i])
    members = {}
    for i in range(n):
        members.setdefault(int(labels[i]), []).append(i)
    cluster_cost = {}
    for l, rows in members.items():
        s = 0.0
        for i in rows:
            s += float(dist[i])
        cluster_cost[l] = s
    g = []
    for i in range(n):
        l = int(labels[i])
        size = len(members[l])
        own = alpha * float(dist[i]) / cost if cost > 0 else 0.0
        mean = alpha * cluster_cost[l] / (size * cost) if cost > 0 else 0.0
        g.append(own + mean + 2.0 * alpha / size)
    return g


def sample_with_replacement_reference(values, uniforms, chunk_size):
    """Row drawn for each uniform, in the order given: i.i.d. draws by ``values / sum(values)``."""
    return [pick_reference(values, u, chunk_size) for u in uniforms]


def dis_probabilities_reference(scores):
    """Probability that one DIS draw is row ``i``: ``sum_j (G^(j)/G)(g_i^(j)/G^(j)) = g_i / G``.

    ``scores`` has one row per party (T, n). Rows of parties with ``G^(j) = 0`` contribute nothing.
    """
    scores = [[float(v) for v in row] for row in np.asarray(scores, dtype=np.float64)]
    party_totals = [sum(row) for row in scores]
    total = sum(party_totals)
    n = len(scores[0])
    p = [0.0] * n
    for row, gj in zip(scores, party_totals):
        if gj == 0.0:
            continue
        for i in range(n):
            p[i] += (gj / total) * (row[i] / gj)
    return p


def dis_weights_reference(scores, indices):
    """Alg. 1 line 10: ``w(i) = G / (|S| sum_j g_i^(j))`` for each drawn ``i`` (in draw order)."""
    scores = np.asarray(scores, dtype=np.float64)
    total = float(scores.sum())
    m = len(indices)
    return [total / (m * float(scores[:, i].sum())) for i in indices]


def leverage_reference(A, rtol=1e-10):
    """Alg. 2 lines 3-4: ``||u_i||^2 + 1/n`` with ``U`` an orthonormal basis of ``col(A)``.

    The basis is the left singular vectors with singular value above ``rtol * s_max`` (so rank
    deficient blocks count their rank, not their width). A zero block gives ``1/n`` everywhere.
    """
    A = np.asarray(A, dtype=np.float64)
    n = A.shape[0]
    U, s, _ = np.linalg.svd(A, full_matrices=False)
    r = int(np.sum(s > rtol * s[0])) if s.size and s[0] > 0 else 0
    U = U[:, :r]
    return [float(np.dot(U[i], U[i])) + 1.0 / n for i in range(n)]


def ridge_reference(X, y, weights, reg):
    """``argmin sum_i w_i (x_i . theta - y_i)^2 + reg ||theta||^2`` (Def. 2.1 / 2.3, weighted).

    Least squares on ``[sqrt(w) X; sqrt(reg) I] theta = [sqrt(w) y; 0]``.
    """
    X = np.asarray(X, dtype=np.float64)
    sw = np.sqrt(np.asarray(weights, dtype=np.float64))
    d = X.shape[1]
    A = np.vstack([X * sw[:, None], np.sqrt(reg) * np.eye(d)])
    b = np.concatenate([np.asarray(y, dtype=np.float64) * sw, np.zeros(d)])
    return np.linalg.lstsq(A, b, rcond=None)[0]


def saga_epoch_reference(X, y, edges, order, probabilities, theta, memory, grad_avg, step, reg,
                         l1=0.0):
    """One vertical (proximal) SAGA epoch on ``sum_i p_i h_i + l1 |theta|_1``,
    ``h_i = (x_i.theta - y_i)^2 + reg |theta|^2``.

    For each sampled row ``i`` (in ``order``): party ``j`` computes its partial product over its
    columns ``edges[j]:edges[j+1]`` (sequential sum from 0.0); the server adds the partials in
    party order and subtracts ``y_i`` to get ``r``; with ``delta = r - memory[i]`` every coordinate
    moves by ``-step * (2 delta x_if + grad_avg_f + 2 reg theta_f)`` and, when ``l1 > 0``, is
    then soft-thresholded at ``step * l1`` (the proximal operator of ``step l1 |.|``); then
    ``grad_avg_f += p_i 2 delta x_if`` and ``memory[i] = r``. Returns new (theta, memory, grad_avg)
    lists; inputs are not modified.
    """
    theta = [float(v) for v in theta]
    memory = [float(v) for v in memory]
    grad_avg = [float(v) for v in grad_avg]
    T = len(edges) - 1
    for i in order:
        i = int(i)
        r = 0.0
        for j in range(T):
            part = 0.0
            for f in range(edges[j], edges[j + 1]):
                part += float(X[i][f]) * theta[f]
            r += part
        r -= float(y[i])
        delta = r - memory[i]
        for f in range(len(theta)):
            xf = float(X[i][f])
            g = 2.0 * delta * xf + grad_avg[f] + 2.0 * reg * theta[f]
            t = theta[f] - step * g
            if l1 > 0.0:
                t = t - step * l1 if t > step * l1 else t + step * l1 if t < -step * l1 else 0.0
            theta[f] = t
            grad_avg[f] = grad_avg[f] + float(probabilities[i]) * 2.0 * delta * xf
        memory[i] = r
    return theta, memory, grad_avg


def distdim_reference(labels_per_party, centers_per_party, weights):
    """DistDim's server input: occupied cells of the product grid and their weights.

    A row with local labels ``(l_1, ..., l_T)`` falls in the cell whose point is the concatenation
    ``(c^(1)_{l_1}, ..., c^(T)_{l_T})``. Returns a dict ``cell tuple -> (point, total weight)``.
    """
    cells = {}
    n = len(labels_per_party[0])
    for i in range(n):
        key = tuple(int(lab[i]) for lab in labels_per_party)
        if key not in cells:
            point = np.concatenate([np.asarray(C[l], dtype=np.float64)
                                    for C, l in zip(centers_per_party, key)])
            cells[key] = [point, 0.0]
        cells[key][1] += float(weights[i])
    return {k: (v[0], v[1]) for k, v in cells.items()}


def robust_error_reference(costs, scores, indices, weights, outlier_fraction):
    """Smallest ``|f(X minus O) - f(S minus O)| / f(X)`` over the outlier sets of Thm. G.2's proof.

    ``O_c = {i : f(x_i) / g_i >= c}`` (the sets ``O_f`` of App. G.4, nested in ``c``); admissible
    when ``|O| / n <= beta`` and ``|S cap O| / |S| <= beta`` (Def. G.1, multiset ``S``). The empty
    set (the plain coreset error) is always a candidate; ``f/0`` is inf for ``f > 0`` and 0 for
    ``f = 0``. Brute force over every threshold.
    """
    costs = [float(v) for v in costs]
    scores = [float(v) for v in scores]
    n = len(costs)
    total = sum(costs)

    def ratio(i):
        if scores[i] > 0:
            return costs[i] / scores[i]
        return np.inf if costs[i] > 0 else 0.0

    candidates = [set()]
    for c in sorted({ratio(i) for i in range(n)}, reverse=True):
        candidates.append({i for i in range(n) if ratio(i) >= c})
    best = None
    for out in candidates:
        if len(out) / n > outlier_fraction:
            continue
        in_s = sum(1 for i in indices if i in out)
        if in_s / len(indices) > outlier_fraction:
            continue
        fx = sum(costs[i] for i in range(n) if i not in out)
        fs = sum(w * costs[i] for i, w in zip(indices, weights) if i not in out)
        err = abs(fx - fs) / total
        best = err if best is None else min(best, err)
    return best
