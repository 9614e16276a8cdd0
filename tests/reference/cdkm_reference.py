"""Slow, obviously-correct references for the CDKM / BCDKM / F3KM kernels.

Everything is recomputed from scratch from the labels: no cached statistics, no incremental
updates. The objective of a (partial) assignment is eq. (4) plus the fairness part of the
augmented Lagrangian (24), with empty clusters contributing 0; a row labelled -1 belongs to no
cluster (the ``F_i^(0)`` of Sec. 3.2).

Contents
--------
lagrangian_reference
    ``-sum_m |S_m|^2 / n_m + fair_scale * sum_{m non-empty, l} u (theta - c/n) +
    rho/2 (theta - c/n)^2``.
row_objectives_reference
    ``phi(i, m) = L(F_i^(m)) - L(F_i^(0))`` for every candidate move, by brute force (eq. (5)-(6)).
statistics_reference
    X f_m, f_m^T f_m, |X f_m|^2 and p_l^T f_m from the labels.
sweep_reference
    One BCDKM sweep (Alg. 2) with fedcore's block rules, every objective by brute force.
sse_reference, balance_reference, violation_reference
    The metrics of Sec. 5.1 by plain loops.
"""
import numpy as np

__all__ = [
    "lagrangian_reference",
    "row_objectives_reference",
    "statistics_reference",
    "sweep_reference",
    "sse_reference",
    "balance_reference",
    "violation_reference",
]


def _centered(X, shift):
    return [[float(v) - float(s) for v, s in zip(row, shift)] for row in np.asarray(X)]


def lagrangian_reference(Xc, labels, k, codes=None, n_groups=0, theta=None, u=None, rho=0.0,
                         fair_scale=1.0):
    """Eq. (4) + fairness part of eq. (24) for ``labels`` (-1 = unassigned), from scratch.

    ``Xc`` is a list of centred rows; ``codes`` a list of per-row lists of group indices.
    """
    d = len(Xc[0])
    sums = [[0.0] * d for _ in range(k)]
    counts = [0] * k
    groups = [[0] * k for _ in range(n_groups)]
    for i, m in enumerate(labels):
        if m < 0:
            continue
        counts[m] += 1
        for f in range(d):
            sums[m][f] += Xc[i][f]
        if codes is not None:
            for g in codes[i]:
                groups[g][m] += 1
    total = 0.0
    for m in range(k):
        if counts[m] == 0:
            continue
        total -= sum(s * s for s in sums[m]) / counts[m]
    fair = 0.0
    for m in range(k):
        if counts[m] == 0:
            continue
        for g in range(n_groups):
            t = theta[g][m] - groups[g][m] / counts[m]
            fair += u[g][m] * t + 0.5 * rho * t * t
    return total + fair_scale * fair


def row_objectives_reference(X, shift, labels, k, rows, codes=None, n_groups=0, theta=None,
                             u=None, rho=0.0, fair_scale=1.0):
    """``phi[i][m] = L(F_i^(m)) - L(F_i^(0))`` for each ``i`` in ``rows``, by brute force."""
    Xc = _centered(X, shift)
    labels = [int(v) for v in labels]
    out = []
    for i in rows:
        trial = list(labels)
        trial[i] = -1
        base = lagrangian_reference(Xc, trial, k, codes, n_groups, theta, u, rho, fair_scale)
        row = []
        for m in range(k):
            trial[i] = m
            row.append(lagrangian_reference(Xc, trial, k, codes, n_groups, theta, u, rho,
                                            fair_scale) - base)
        out.append(row)
    return out


def statistics_reference(X, shift, labels, k, codes=None, n_groups=0):
    """(sums, counts, sqnorms, group_counts) from scratch, as nested lists."""
    Xc = _centered(X, shift)
    d = len(Xc[0])
    sums = [[0.0] * d for _ in range(k)]
    counts = [0] * k
    groups = [[0] * k for _ in range(n_groups)]
    for i, m in enumerate(labels):
        counts[m] += 1
        for f in range(d):
            sums[m][f] += Xc[i][f]
        if codes is not None:
            for g in codes[i]:
                groups[g][m] += 1
    sqnorms = [sum(s * s for s in sums[m]) for m in range(k)]
    return sums, counts, sqnorms, groups


def _choose(phi_rows, lo, labels, tentative, tol):
    new = []
    for o, row in enumerate(phi_rows):
        r = labels[lo + o]
        best = min(row)
        s = r
        if tentative[r] > 1 and row[r] > best + tol:
            s = next(m for m in range(len(row)) if row[m] <= best + tol)
        if s != r:
            tentative[r] -= 1
            tentative[s] += 1
        new.append(s)
    return new


def sweep_reference(X, shift, labels, k, block_size, tol, codes=None, n_groups=0, theta=None,
                    u=None, rho=0.0, fair_scale=1.0):
    """One sweep with fedcore's block rules (see ``fedcore.kernels.cd.kmeans``), by brute force.

    Blocks of ``block_size`` consecutive rows; a range's rows all see the same labels (Jacobi);
    a row alone in its cluster, or whose move would empty its cluster, stays; moves go to the
    lowest-index cluster within ``tol`` of the best when the own cluster is worse by more than
    ``tol``; a range proposing several moves whose joint change of the Lagrangian is not below
    ``-tol`` is split in halves, first half first. Returns the new labels (list).
    """
    Xc = _centered(X, shift)
    labels = [int(v) for v in labels]
    n = len(labels)
    args = (codes, n_groups, theta, u, rho, fair_scale)

    def process(lo, hi):
        phi = row_objectives_reference(X, shift, labels, k, range(lo, hi), *args)
        tentative = [labels.count(m) for m in range(k)]
        new = _choose(phi, lo, labels, tentative, tol)
        moves = sum(1 for o in range(hi - lo) if new[o] != labels[lo + o])
        if moves == 0:
            return
        if moves > 1:
            trial = list(labels)
            trial[lo:hi] = new
            change = (lagrangian_reference(Xc, trial, k, *args)
                      - lagrangian_reference(Xc, labels, k, *args))
            if not change < -tol:
                mid = (lo + hi) // 2
                process(lo, mid)
                process(mid, hi)
                return
        labels[lo:hi] = new

    for lo in range(0, n, block_size):
        process(lo, min(n, lo + block_size))
    return labels


def sse_reference(X, labels):
    """Sum of squared distances of each row to the mean of its cluster (eq. (1))."""
    X = np.asarray(X, dtype=np.float64)
    total = 0.0
    for m in set(int(v) for v in labels):
        rows = [X[i] for i in range(len(labels)) if labels[i] == m]
        center = [sum(r[f] for r in rows) / len(rows) for f in range(X.shape[1])]
        for r in rows:
            total += sum((r[f] - center[f]) ** 2 for f in range(X.shape[1]))
    return total


def balance_reference(labels, group_columns, k):
    """Balance per cluster (Sec. 5.1): min over groups l of min(eta_l/eta_l(j), eta_l(j)/eta_l).

    ``group_columns``: list of per-row codes, one list per attribute. NaN for an empty cluster.
    """
    n = len(labels)
    out = []
    for j in range(k):
        members = [i for i in range(n) if labels[i] == j]
        if not members:
            out.append(float("nan"))
            continue
        b = float("inf")
        for col in group_columns:
            for g in sorted(set(col)):
                eta = sum(1 for v in col if v == g) / n
                eta_j = sum(1 for i in members if col[i] == g) / len(members)
                b = min(b, 0.0 if eta_j == 0 else min(eta / eta_j, eta_j / eta))
        out.append(b)
    return out


def violation_reference(labels, group_columns, k, alpha, beta):
    """Largest additive violation (eq. (33)): max over clusters and groups of
    ``max(0, c_lj - alpha_l n_j, beta_l n_j - c_lj)``. ``alpha``/``beta`` are per-attribute lists
    of per-group bounds."""
    worst = 0.0
    for j in range(k):
        members = [i for i in range(len(labels)) if labels[i] == j]
        for a, col in enumerate(group_columns):
            for g in range(len(alpha[a])):
                c = sum(1 for i in members if col[i] == g)
                worst = max(worst, c - alpha[a][g] * len(members), beta[a][g] * len(members) - c)
    return worst
