"""Slow, obviously-correct references for FeCA (Alg. 2-5), fuzzy c-means and external metrics.

Everything works on Python lists of points and recomputes each quantity from its definition: a
cluster's cost is a sum over its points, a merged cluster is the union of two point lists, a group
is built by scanning a Python list. Tie rules are the ones fedcore documents:

- Alg. 2 line 4: largest root-mean-square distance to the centroid, lowest index on ties;
  line 5: closest pair, lexicographically smallest ``(p, q)`` on ties; line 7: remove when
  ``G_i >= G_j``; clusters without points are dropped first; the loop stops at one centroid.
- Alg. 3: visit kept centroids in order, drop ``i`` and its nearest ``j`` from ``C~`` when
  ``r'_i + r'_j > d_ij``; fall back to all kept centroids when fewer than two remain.
- Alg. 5: pick the largest radius, ties by lexicographic coordinates; ``||c_t - c_i||^2 <= r_i^2``;
  keep the largest groups, ties by formation order.
"""
import itertools
import math

import numpy as np

__all__ = [
    "sq_dist",
    "feca_statistics_reference",
    "client_update_reference",
    "radius_empirical_reference",
    "radius_theoretical_reference",
    "server_aggregation_reference",
    "fcm_statistics_reference",
    "purity_reference",
    "nmi_reference",
    "center_distance_reference",
]


def sq_dist(a, b):
    """Squared Euclidean distance, accumulated from 0.0 in feature order in float64."""
    acc = 0.0
    for x, y in zip(a, b):
        t = float(x) - float(y)
        acc += t * t
    return acc


def _mean(points):
    d = len(points[0])
    return [sum(float(p[f]) for p in points) / len(points) for f in range(d)]


def _cost(points, center):
    return sum(sq_dist(p, center) for p in points)


def _clusters(X, labels, k):
    members = [[] for _ in range(k)]
    for x, a in zip(np.asarray(X).tolist(), np.asarray(labels).tolist()):
        members[a].append(x)
    return members


def feca_statistics_reference(X, labels, centers):
    """(counts, sums, costs, max_sq) per cluster, each a list, from the point lists."""
    k, d = np.asarray(centers).shape
    C = np.asarray(centers, dtype=np.float64).tolist()
    members = _clusters(X, labels, k)
    counts = [float(len(m)) for m in members]
    sums = [[sum(float(p[f]) for p in m) for f in range(d)] for m in members]
    costs = [_cost(m, C[a]) for a, m in enumerate(members)]
    max_sq = [max([sq_dist(p, C[a]) for p in m], default=0.0) for a, m in enumerate(members)]
    return counts, sums, costs, max_sq


def client_update_reference(X, labels, centers):
    """Alg. 2 lines 3-13 on the point lists. Returns (kept, removed) as lists of indices."""
    C = np.asarray(centers, dtype=np.float64).tolist()
    members = _clusters(X, labels, len(C))
    alive = [a for a in range(len(C)) if members[a]]
    removed = []
    while len(alive) >= 2:
        spread = {a: math.sqrt(_cost(members[a], C[a]) / len(members[a])) for a in alive}
        i = max(alive, key=lambda a: (spread[a], -a))
        pairs = [(sq_dist(C[p], C[q]), p, q) for p, q in itertools.combinations(alive, 2)]
        _, p, q = min(pairs)
        merged = members[p] + members[q]
        g_j = _cost(merged, _mean(merged))
        g_i = _cost(members[i], C[i])
        if g_i >= g_j:
            removed.append(i)
            alive.remove(i)
        else:
            break
    return alive, removed


def _max_dist(points, center):
    return math.sqrt(max(sq_dist(p, center) for p in points))


def radius_empirical_reference(X, labels, centers, kept):
    """Alg. 4: ``min(r'_i, d_ij / 2)`` for each kept centroid (``r'_i`` alone if it is alone)."""
    C = np.asarray(centers, dtype=np.float64).tolist()
    members = _clusters(X, labels, len(C))
    radii = []
    for i in kept:
        r1 = _max_dist(members[i], C[i])
        others = [math.sqrt(sq_dist(C[i], C[j])) for j in kept if j != i]
        radii.append(min(r1, 0.5 * min(others)) if others else r1)
    return radii


def radius_theoretical_reference(X, labels, centers, kept):
    """Alg. 3: one radius, half the minimum pairwise distance in ``C~``."""
    C = np.asarray(centers, dtype=np.float64).tolist()
    members = _clusters(X, labels, len(C))
    r1 = {i: _max_dist(members[i], C[i]) for i in kept}
    if len(kept) == 1:
        return [r1[kept[0]]]
    tilde = list(kept)
    for i in kept:
        if i not in tilde or len(tilde) < 2:
            continue
        j = min((math.sqrt(sq_dist(C[i], C[t])), t) for t in tilde if t != i)[1]
        if r1[i] + r1[j] > math.sqrt(sq_dist(C[i], C[j])):
            tilde.remove(i)
            tilde.remove(j)
    pool = tilde if len(tilde) >= 2 else list(kept)
    delta = min(math.sqrt(sq_dist(C[a], C[b])) for a, b in itertools.combinations(pool, 2))
    return [0.5 * delta] * len(kept)


def server_aggregation_reference(client_centers, client_radii, n_clusters):
    """Alg. 5 on Python lists. Returns (centers, groups, n_groups); groups hold (client, row)."""
    items = []
    for l, (C, R) in enumerate(zip(client_centers, client_radii)):
        for row, (c, r) in enumerate(zip(np.asarray(C, dtype=np.float64).tolist(),
                                         np.asarray(R, dtype=np.float64).tolist())):
            items.append(((l, row), c, r))
    remaining = list(items)
    groups = []
    while remaining:
        _, ci, ri = min(remaining, key=lambda it: (-it[2], it[1]))
        group = [it for it in remaining if sq_dist(it[1], ci) <= ri * ri]
        remaining = [it for it in remaining if it not in group]
        groups.append(group)
    order = sorted(range(len(groups)), key=lambda g: (-len(groups[g]), g))[:n_clusters]
    centers, members = [], []
    for g in order:
        group = sorted(groups[g], key=lambda it: it[1])
        pts = [it[1] for it in group]
        centers.append(_mean(pts))
        members.append([it[0] for it in group])
    return centers, members, len(groups)


def fcm_statistics_reference(X, centers, fuzziness):
    """Fuzzy c-means sums: (center_sums, weight_sums, objective) from the membership formula."""
    C = np.asarray(centers, dtype=np.float64).tolist()
    k, d = len(C), len(C[0])
    sums = [[0.0] * d for _ in range(k)]
    weights = [0.0] * k
    objective = 0.0
    for x in np.asarray(X).tolist():
        dist = [sq_dist(x, c) for c in C]
        zeros = [j for j in range(k) if dist[j] == 0.0]
        if zeros:
            u = [1.0 / len(zeros) if j in zeros else 0.0 for j in range(k)]
        else:
            u = [1.0 / sum((dist[j] / dist[l]) ** (1.0 / (fuzziness - 1.0)) for l in range(k))
                 for j in range(k)]
        for j in range(k):
            w = u[j] ** fuzziness
            weights[j] += w
            objective += w * dist[j]
            for f in range(d):
                sums[j][f] += w * float(x[f])
    return sums, weights, objective


def purity_reference(labels_true, labels_pred):
    clusters = {}
    for t, p in zip(labels_true, labels_pred):
        clusters.setdefault(p, []).append(t)
    n = len(labels_true)
    return sum(max(members.count(t) for t in set(members)) for members in clusters.values()) / n


def nmi_reference(labels_true, labels_pred):
    """``2 I / (H(T) + H(P))`` from joint and marginal frequencies (natural logs)."""
    n = len(labels_true)
    joint, pt, pp = {}, {}, {}
    for t, p in zip(labels_true, labels_pred):
        joint[(t, p)] = joint.get((t, p), 0) + 1
        pt[t] = pt.get(t, 0) + 1
        pp[p] = pp.get(p, 0) + 1
    if len(pt) == len(pp) == 1 or n == 0:
        return 1.0
    mi = sum(c / n * math.log(n * c / (pt[t] * pp[p])) for (t, p), c in joint.items())
    h_t = -sum(c / n * math.log(c / n) for c in pt.values())
    h_p = -sum(c / n * math.log(c / n) for c in pp.values())
    return 0.0 if mi <= 1e-15 else mi / ((h_t + h_p) / 2)


def center_distance_reference(centers, true_centers):
    """Minimum over all injective matchings of sqrt(sum of squared distances) (brute force)."""
    A = np.asarray(centers, dtype=np.float64).tolist()
    B = np.asarray(true_centers, dtype=np.float64).tolist()
    if len(A) > len(B):
        A, B = B, A
    best = min(sum(sq_dist(a, B[j]) for a, j in zip(A, perm))
               for perm in itertools.permutations(range(len(B)), len(A)))
    return math.sqrt(best)
