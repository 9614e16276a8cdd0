"""Slow, obviously-correct references for greedy k-means++ seeding.

Plain Python on top of the vanilla references of ``kmeans_reference`` (the same pick rule, the
same bit-exact sequential sums), so each rule can be read off the code.

Contents
--------
candidate_potential_reference
    The potential ``sum_i w_i min(D2_i, |x_i - c|^2)`` of one candidate, summed as the kernels do.
greedy_kmeanspp_reference
    Weighted greedy k-means++ (best of L D^2 candidates per center) on given uniforms.
exact_greedy_kmeanspp_distribution
    The exact distribution (fractions) of the greedy row sequence for tiny inputs.
"""
import itertools
from fractions import Fraction

import numpy as np

from .kmeans_reference import chunk_sums_reference, pick_reference, sq_distance_reference

__all__ = ["candidate_potential_reference", "greedy_kmeanspp_reference",
           "exact_greedy_kmeanspp_distribution"]


def candidate_potential_reference(X, weights, mind, candidate, chunk_size):
    """Potential ``sum_i w_i min(mind_i, |x_i - c|^2)`` of adding row-vector ``candidate``.

    The minimum keeps ``mind_i`` unless the distance is strictly smaller; the terms are summed
    per chunk from 0.0 in row order, then the chunk sums in chunk order (the total that
    ``pick_reference`` would form from them).
    """
    X = np.asarray(X)
    c = [float(a) for a in candidate]
    v = []
    for i in range(X.shape[0]):
        dist = sq_distance_reference(X[i], c)
        v.append(float(weights[i]) * (dist if dist < mind[i] else mind[i]))
    total = 0.0
    for s in chunk_sums_reference(v, chunk_size):
        total += s
    return total


def greedy_kmeanspp_reference(X, weights, first_uniform, trial_uniforms, chunk_size):
    """Weighted greedy k-means++ on given uniforms; returns (center_rows, labels, mind).

    Step 0 picks with values ``w`` and ``first_uniform``. Step ``t >= 1`` has the uniforms
    ``trial_uniforms[t - 1]`` (L of them). If the chunked total of ``w_i * mind_i`` is 0.0, it
    picks by the degenerate rule of ``kmeanspp_reference`` with the first of them. Otherwise each
    uniform picks a candidate row with values ``w_i * mind_i``, and the step keeps the candidate of
    lowest ``candidate_potential_reference``, the first drawn among equal ones. Then ``labels`` and
    ``mind`` are updated as in ``kmeanspp_reference``.
    """
    X = np.asarray(X)
    n = X.shape[0]
    rows = [[float(a) for a in X[i]] for i in range(n)]
    w = [1.0] * n if weights is None else [float(a) for a in np.asarray(weights).ravel()]
    mind = [float("inf")] * n
    labels = [-1] * n
    chosen = []
    steps = [[float(first_uniform)]] + [[float(u) for u in row]
                                        for row in np.asarray(trial_uniforms, dtype=np.float64)]
    for t, step in enumerate(steps):
        if t == 0:
            r = pick_reference(w, step[0], chunk_size)
        else:
            v = [w[i] * mind[i] for i in range(n)]
            total = 0.0
            for s in chunk_sums_reference(v, chunk_size):
                total += s
            if total == 0.0:
                taken = set(chosen)
                r = pick_reference([0.0 if i in taken else w[i] for i in range(n)], step[0],
                                   chunk_size)
            else:
                best, best_potential = None, None
                for u in step:
                    candidate = pick_reference(v, u, chunk_size)
                    potential = candidate_potential_reference(X, w, mind, rows[candidate],
                                                              chunk_size)
                    if best is None or potential < best_potential:
                        best, best_potential = candidate, potential
                r = best
        chosen.append(r)
        for i in range(n):
            dist = sq_distance_reference(rows[i], rows[r])
            if dist < mind[i]:
                mind[i] = dist
                labels[i] = t
    return (np.array(chosen, dtype=np.int64), np.array(labels, dtype=np.int64),
            np.array(mind, dtype=np.float64))


def exact_greedy_kmeanspp_distribution(X, n_clusters, n_local_trials, weights=None):
    """Exact distribution of greedy k-means++ row sequences, as ``{rows: Fraction}``.

    The rule of ``greedy_kmeanspp_reference`` in exact rational arithmetic: the first row by
    weight; then, unless the D^2 mass is 0 (degenerate rule of ``exact_kmeanspp_distribution``),
    ``L`` independent D^2 draws, of which the first with the lowest exact potential
    ``sum_i w_i min(D2_i, |x_i - c|^2)`` is kept. Enumerates all ``L``-tuples of draws: for
    ``n <= 5`` and ``L <= 3``. Exact potentials equal the float ones only when the float sums are
    exact (small integer coordinates and weights), which is what tests should use.
    """
    X = np.asarray(X)
    n = X.shape[0]
    if n ** int(n_local_trials) > 1000:
        raise ValueError(f"exact enumeration is for tiny inputs, got n={n}, L={n_local_trials}")
    k, L = int(n_clusters), int(n_local_trials)
    pts = [[Fraction(float(a)) for a in X[i]] for i in range(n)]
    w = [Fraction(1)] * n if weights is None else \
        [Fraction(float(a)) for a in np.asarray(weights, dtype=np.float64).ravel()]
    d2 = [[sum(((a - b) ** 2 for a, b in zip(pts[i], pts[j])), Fraction(0)) for j in range(n)]
          for i in range(n)]
    out = {}

    def step_distribution(seq, mind):
        if not seq:
            total = sum(w)
            return {r: w[r] / total for r in range(n) if w[r] > 0}
        v = [w[i] * mind[i] for i in range(n)]
        total = sum(v)
        if total == 0:
            free = [Fraction(0) if i in seq else w[i] for i in range(n)]
            return {r: free[r] / sum(free) for r in range(n) if free[r] > 0}
        support = [r for r in range(n) if v[r] > 0]
        potential = {r: sum(w[i] * min(mind[i], d2[r][i]) for i in range(n)) for r in support}
        probs = {}
        for draws in itertools.product(support, repeat=L):
            best = draws[0]
            for r in draws[1:]:
                if potential[r] < potential[best]:
                    best = r
            p = Fraction(1)
            for r in draws:
                p *= v[r] / total
            probs[best] = probs.get(best, 0) + p
        return probs

    def recurse(seq, prob, mind):
        if len(seq) == k:
            out[tuple(seq)] = prob
            return
        for r, p in step_distribution(seq, mind).items():
            new_mind = [d2[r][i] if mind is None else min(mind[i], d2[r][i]) for i in range(n)]
            recurse(seq + [r], prob * p, new_mind)

    recurse([], Fraction(1), None)
    return out
