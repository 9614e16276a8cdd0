"""Slow, obviously-correct references for fedcore's k-means foundation.

Everything here is plain Python (floats, lists, ``fractions.Fraction``) with at most trivially
element-wise NumPy, so each rule can be read off the code. The floating-point references reproduce
the kernels' arithmetic bit for bit: every sum is a sequential float64 sum in a fixed order, every
squared distance is ``sum over f of (float64(x_f) - float64(c_f)) ** 2`` accumulated from 0.0 in
feature order.

Contents
--------
chunk_sums_reference, pick_reference
    Chunked D^2 sampling ("pick"): chunk sums, then a two-level search driven by one uniform.
kmeanspp_reference
    Weighted vanilla k-means++ seeding on given uniforms, with the degenerate rule.
exact_kmeanspp_distribution
    The exact distribution (fractions) of the ordered k-means++ sequence for tiny inputs.
exact_grouped_kmeanspp_distribution
    The same for many rows at few distinct locations, as sequences of locations.
lloyd_iteration_reference, kmeans_lloyd_reference
    One weighted Lloyd step, and the full Lloyd loop with scikit-learn's ``tol`` / ``n_iter_``
    rules.
sq_distance_reference, assign_reference
    Squared distances and first-nearest-center assignment.
screen_smallest_two_reference
    The two smallest approximations of Lloyd's screen, per column of its product.
fused_product_reference
    The screen's product formed without BLAS: chains of fused multiply-adds, rounded exactly.
"""
from fractions import Fraction

import numpy as np

__all__ = [
    "chunk_sums_reference",
    "pick_reference",
    "sq_distance_reference",
    "sq_distance_matrix_reference",
    "assign_reference",
    "screen_smallest_two_reference",
    "kmeanspp_reference",
    "exact_kmeanspp_distribution",
    "exact_grouped_kmeanspp_distribution",
    "lloyd_iteration_reference",
    "kmeans_lloyd_reference",
    "chi_square_against_exact",
]


# --------------------------------------------------------------------------------------------
# D^2 sampling
# --------------------------------------------------------------------------------------------

def chunk_sums_reference(values, chunk_size):
    """Sequential float64 sum of ``values`` over each chunk of ``chunk_size`` rows.

    Chunk ``c`` covers rows ``[c * chunk_size, min((c + 1) * chunk_size, n))``; each sum starts from
    0.0 and adds the rows in order. Returns a list of ``ceil(n / chunk_size)`` floats.
    """
    v = [float(x) for x in np.asarray(values, dtype=np.float64).ravel()]
    sums = []
    for start in range(0, len(v), chunk_size):
        s = 0.0
        for x in v[start:start + chunk_size]:
            s += x
        sums.append(s)
    return sums


def pick_reference(values, u, chunk_size):
    """Row picked by chunked D^2 sampling from non-negative ``values`` with the uniform ``u``.

    Rule: ``total`` is the sequential sum of the chunk sums in chunk order and
    ``target = u * total``. Walking the chunks in order with ``running`` (starting at 0.0), the
    chosen chunk is the first with ``running + cs[c] > target``; otherwise ``running += cs[c]``.
    Inside the chosen chunk, ``t_in = target - running`` and the chosen row is the first row whose
    running in-chunk sum (from 0.0) exceeds ``t_in``.

    Rounding fallbacks: if no chunk passes the test, the last chunk with a positive sum is used and
    ``running`` keeps its value after the walk (the sum of all chunks, so
    ``t_in = target - total``); if no row of the chosen chunk passes, the last row of the chunk
    with a positive value is returned. The returned row always has a positive value. Requires
    ``total > 0``. For a normal (non-subnormal) total, ``u * total < total`` for every ``u < 1``,
    so the chunk fallback is reachable only with subnormal totals.
    """
    v = [float(x) for x in np.asarray(values, dtype=np.float64).ravel()]
    cs = chunk_sums_reference(v, chunk_size)
    total = 0.0
    for s in cs:
        total += s
    if not total > 0.0:
        raise ValueError("pick_reference needs a positive total")
    target = float(u) * total
    running = 0.0
    chosen = -1
    for c, s in enumerate(cs):
        if running + s > target:
            chosen = c
            break
        running += s
    if chosen < 0:
        # Only reachable when u * total rounds to total (a subnormal total); ``running`` keeps
        # its value after the loop (the sum of all chunks), as the rule is written.
        chosen = max(c for c, s in enumerate(cs) if s > 0.0)
    start = chosen * chunk_size
    stop = min(start + chunk_size, len(v))
    t_in = target - running
    acc = 0.0
    for i in range(start, stop):
        acc += v[i]
        if acc > t_in:
            return i
    return max(i for i in range(start, stop) if v[i] > 0.0)


# --------------------------------------------------------------------------------------------
# Distances
# --------------------------------------------------------------------------------------------

def sq_distance_reference(x, c):
    """Sequential float64 sum over features of ``(float64(x_f) - float64(c_f)) ** 2``."""
    s = 0.0
    for a, b in zip(x, c):
        diff = float(a) - float(b)
        s += diff * diff
    return s


def sq_distance_matrix_reference(X, centers):
    """(n, k) squared distances; feature-by-feature accumulation equals ``sq_distance_reference``.

    Element-wise NumPy float64 arithmetic is correctly rounded per element, and adding feature
    ``f`` to every entry in feature order is the same sequential sum as ``sq_distance_reference``
    (the first addition ``0.0 + a`` is exact).
    """
    X = np.asarray(X)
    centers = np.asarray(centers)
    out = np.zeros((X.shape[0], centers.shape[0]), dtype=np.float64)
    for f in range(X.shape[1]):
        diff = X[:, f].astype(np.float64)[:, None] - centers[:, f].astype(np.float64)[None, :]
        out += diff * diff
    return out


def screen_smallest_two_reference(out, norms, constant):
    """The two smallest screened approximations per column of a product ``out`` (k, w) and the
    first center at the smallest: ``(norms[c] - (out[j, c] + out[j, c])) + constant[j]``, each
    operation rounded in ``out``'s dtype (NumPy scalars of that dtype), the running two smallest
    updated center by center with strict comparisons (a NaN approximation changes nothing).
    Returns ``(best, second, arg)``; a column's best and second stay +inf while every
    approximation is NaN, and arg 0."""
    k, w = out.shape
    kind = out.dtype.type
    best = np.full(w, np.inf, dtype=out.dtype)
    second = np.full(w, np.inf, dtype=out.dtype)
    arg = np.zeros(w, dtype=np.int32)
    for c in range(w):
        low, runner, which = kind(np.inf), kind(np.inf), 0
        for j in range(k):
            p = out[j, c]
            approx = (norms[c] - (p + p)) + constant[j]
            if approx < low:
                low, runner, which = approx, low, j
            elif approx < runner:
                runner = approx
        best[c], second[c], arg[c] = low, runner, which
    return best, second, arg


def _rounded(q, kind):
    """The rational ``q`` rounded to the nearest value of the NumPy float type ``kind`` (ties to
    the even significand), finite values only: the nearest float64 first (correctly rounded by
    Python), then the nearest of it and its two neighbours in ``kind``, compared exactly."""
    guess = kind(float(q))
    below = np.nextafter(guess, kind(-np.inf))
    above = np.nextafter(guess, kind(np.inf))
    best = guess
    for other in (below, above):
        gap, best_gap = abs(Fraction(float(other)) - q), abs(Fraction(float(best)) - q)
        if gap < best_gap or (gap == best_gap and other.view(f"u{other.itemsize}") % 2 == 0):
            best = other
    return best


def fused_product_reference(block_t, shifted):
    """The product ``shifted @ block_t`` ((k, d) by (d, w)) as :func:`screen_lanes` forms it:
    each entry a chain of fused multiply-adds over the features in order from 0, each step
    ``fl(x * s + acc)`` computed exactly (fractions) and rounded once to the arrays' dtype."""
    kind = block_t.dtype.type
    k, d = shifted.shape
    w = block_t.shape[1]
    out = np.empty((k, w), dtype=block_t.dtype)
    for j in range(k):
        for c in range(w):
            acc = kind(0.0)
            for f in range(d):
                acc = _rounded(Fraction(float(block_t[f, c])) * Fraction(float(shifted[j, f]))
                               + Fraction(float(acc)), kind)
            out[j, c] = acc
    return out


def assign_reference(X, centers):
    """Index of the first nearest center (lowest index on ties) and the squared distance to it."""
    dist = sq_distance_matrix_reference(X, centers)
    labels = np.argmin(dist, axis=1).astype(np.int64)  # argmin returns the first minimum
    return labels, dist[np.arange(dist.shape[0]), labels]


# --------------------------------------------------------------------------------------------
# k-means++ seeding
# --------------------------------------------------------------------------------------------

def kmeanspp_reference(X, weights, uniforms, chunk_size):
    """Weighted vanilla k-means++ on given uniforms; returns (center_rows, labels, mind).

    Step 0 picks with values ``w``. Step ``t >= 1`` picks with values ``w_i * mind_i``; if their
    chunked total is 0.0 (no remaining D^2 mass, e.g. duplicates), it picks with ``w_i`` over rows
    not chosen yet and 0 for chosen rows. After row ``r`` becomes center ``t``, every row with a
    strictly smaller squared distance to it than ``mind`` takes ``mind = dist`` and ``label = t``.

    Returns ``center_rows`` int64 (k,), ``labels`` int64 (n,) (first nearest center in seeding
    order) and ``mind`` float64 (n,) (squared distance to it).
    """
    X = np.asarray(X)
    n = X.shape[0]
    rows = [[float(a) for a in X[i]] for i in range(n)]
    w = [1.0] * n if weights is None else [float(a) for a in np.asarray(weights).ravel()]
    mind = [float("inf")] * n
    labels = [-1] * n
    chosen = []
    for t, u in enumerate(np.asarray(uniforms, dtype=np.float64).ravel()):
        if t == 0:
            v = list(w)
        else:
            v = [w[i] * mind[i] for i in range(n)]
            total = 0.0
            for s in chunk_sums_reference(v, chunk_size):
                total += s
            if total == 0.0:
                taken = set(chosen)
                v = [0.0 if i in taken else w[i] for i in range(n)]
        r = pick_reference(v, float(u), chunk_size)
        chosen.append(r)
        for i in range(n):
            dist = sq_distance_reference(rows[i], rows[r])
            if dist < mind[i]:
                mind[i] = dist
                labels[i] = t
    return (np.array(chosen, dtype=np.int64), np.array(labels, dtype=np.int64),
            np.array(mind, dtype=np.float64))


def exact_kmeanspp_distribution(X, n_clusters, weights=None):
    """Exact distribution of the ordered k-means++ row sequence, as ``{rows: Fraction}``.

    The rule of ``kmeanspp_reference`` in exact rational arithmetic: coordinates and weights are
    the exact rationals of their floats (``Fraction(float)`` is exact), the first row is drawn with
    probability ``w_i / sum(w)``, the next with ``w_i D2_i / sum_j w_j D2_j`` where ``D2`` is the
    exact squared distance to the nearest chosen row, and when that sum is 0 uniformly by weight
    among rows not chosen yet. Sequences of probability 0 are absent. Meant for ``n <= 6``
    (at most 720 sequences); refuses ``n > 8``.
    """
    X = np.asarray(X)
    n = X.shape[0]
    if n > 8:
        raise ValueError(f"exact enumeration is for tiny inputs, got n={n}")
    k = int(n_clusters)
    pts = [[Fraction(float(a)) for a in X[i]] for i in range(n)]
    if weights is None:
        w = [Fraction(1)] * n
    else:
        w = [Fraction(float(a)) for a in np.asarray(weights, dtype=np.float64).ravel()]
    if sum(1 for a in w if a > 0) < k:
        raise ValueError("n_clusters exceeds the number of rows with positive weight")
    d2 = [[sum(((a - b) ** 2 for a, b in zip(pts[i], pts[j])), Fraction(0)) for j in range(n)]
          for i in range(n)]
    out = {}

    def recurse(seq, prob, mind):
        if len(seq) == k:
            out[tuple(seq)] = prob
            return
        if not seq:
            v = list(w)
        else:
            v = [w[i] * mind[i] for i in range(n)]
            if sum(v) == 0:
                v = [Fraction(0) if i in seq else w[i] for i in range(n)]
        total = sum(v)
        for r in range(n):
            if v[r] > 0:
                new_mind = [d2[r][i] if mind is None else min(mind[i], d2[r][i]) for i in range(n)]
                recurse(seq + [r], prob * v[r] / total, new_mind)

    recurse([], Fraction(1), None)
    return out


def exact_grouped_kmeanspp_distribution(locations, counts, n_clusters):
    """Exact distribution of the ordered sequence of *locations* chosen by unweighted k-means++
    on data made of ``counts[g]`` copies of ``locations[g]`` (any row order), as
    ``{tuple of location indices: Fraction}``.

    Rows are interchangeable within a location, so only the chosen count per location matters:
    the first center falls in location ``g`` with probability ``counts[g] / N``; the next with
    ``counts[g] D2_g / sum_h counts[h] D2_h`` (``D2`` the exact squared distance to the nearest
    chosen location, 0 for chosen locations); when that sum is 0, the degenerate rule draws a row
    uniformly among rows not chosen yet, i.e. location ``g`` with ``(counts[g] - chosen[g]) /
    (N - t)``. Lets exactness be tested on inputs spanning several chunks.
    """
    locations = np.asarray(locations)
    if locations.ndim == 1:
        locations = locations[:, None]
    G = locations.shape[0]
    counts = [int(c) for c in counts]
    N = sum(counts)
    k = int(n_clusters)
    if k > N:
        raise ValueError("n_clusters exceeds the number of rows")
    pts = [[Fraction(float(a)) for a in locations[g]] for g in range(G)]
    d2 = [[sum(((a - b) ** 2 for a, b in zip(pts[g], pts[h])), Fraction(0)) for h in range(G)]
          for g in range(G)]
    out = {}

    def recurse(seq, prob, chosen):
        t = len(seq)
        if t == k:
            out[tuple(seq)] = prob
            return
        if t == 0:
            v = [Fraction(c) for c in counts]
        else:
            v = [counts[g] * min(d2[g][s] for s in set(seq)) for g in range(G)]
            if sum(v) == 0:
                v = [Fraction(counts[g] - chosen[g]) for g in range(G)]
        total = sum(v)
        for g in range(G):
            if v[g] > 0:
                nxt = list(chosen)
                nxt[g] += 1
                recurse(seq + [g], prob * v[g] / total, nxt)

    recurse([], Fraction(1), [0] * G)
    return out


# --------------------------------------------------------------------------------------------
# Lloyd
# --------------------------------------------------------------------------------------------

def lloyd_iteration_reference(X, weights, centers):
    """Naive weighted Lloyd step: (labels, distances, center_sums, weight_sums, inertia).

    ``labels`` is the first nearest center, ``distances`` the squared distance to it (bit-exact
    sequential sums), ``center_sums[j] = sum of w_i * x_i`` and ``weight_sums[j] = sum of w_i``
    over rows labelled ``j`` (row order), ``inertia = sum of w_i * distances_i`` (row order).
    """
    X = np.asarray(X)
    n, d = X.shape
    k = np.asarray(centers).shape[0]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    labels, dist = assign_reference(X, centers)
    center_sums = np.zeros((k, d), dtype=np.float64)
    weight_sums = np.zeros(k, dtype=np.float64)
    inertia = 0.0
    for i in range(n):
        j = labels[i]
        wi = float(w[i])
        for f in range(d):
            center_sums[j, f] += wi * float(X[i, f])
        weight_sums[j] += wi
        inertia += wi * float(dist[i])
    return labels, dist, center_sums, weight_sums, inertia


def kmeans_lloyd_reference(X, weights, init, max_iter, tol):
    """Full weighted Lloyd loop with scikit-learn's stopping rules (``_kmeans_single_lloyd``).

    ``tol`` is relative: the absolute threshold is ``mean(var(X, axis=0)) * tol`` (unweighted
    variance, as scikit-learn), or 0 when ``tol == 0``. Each iteration assigns, then moves every
    center to its weighted mean; the loop stops after the iteration whose labels equal the previous
    iteration's (strict convergence), or whose total squared center shift is ``<= tol_abs``, or
    after ``max_iter``. Without strict convergence the labels are recomputed for the final
    centers. Returns (centers, labels, inertia, n_iter). Empty clusters are outside this
    reference's scope and raise ``AssertionError``.
    """
    X = np.asarray(X)
    Xf = X.astype(np.float64)
    w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    tol_abs = 0.0 if tol == 0 else float(np.mean(np.var(Xf, axis=0)) * tol)
    centers = np.array(init, dtype=np.float64)
    labels_old = None
    strict = False
    n_iter = 0
    for it in range(max_iter):
        n_iter = it + 1
        labels, _, sums, wsums, _ = lloyd_iteration_reference(X, w, centers)
        assert (wsums > 0).all(), "empty cluster: outside kmeans_lloyd_reference's scope"
        new = sums / wsums[:, None]
        shift = float(((new - centers) ** 2).sum())
        centers = new
        if labels_old is not None and np.array_equal(labels, labels_old):
            strict = True
            break
        if shift <= tol_abs:
            break
        labels_old = labels
    if not strict:
        labels, _ = assign_reference(X, centers)
    own = sq_distance_matrix_reference(X, centers)[np.arange(X.shape[0]), labels]
    inertia = float(np.sum(w * own))
    return centers, labels, inertia, n_iter


# --------------------------------------------------------------------------------------------
# Goodness of fit against an exact distribution
# --------------------------------------------------------------------------------------------

def chi_square_against_exact(counts, exact, min_expected=5.0):
    """Pearson chi-square p-value of observed ``counts`` against the ``exact`` distribution.

    ``counts`` maps outcomes to observed counts and ``exact`` maps outcomes to probabilities
    (Fractions or floats). Outcomes of ``counts`` outside the support of ``exact`` give p = 0.
    Bins with expected count below ``min_expected`` are pooled into one bin; if that pool is still
    below ``min_expected`` it absorbs the next smallest bins until it is not. With a single bin
    left there is nothing to test and the p-value is 1.0. Returns (p_value, n_bins).
    """
    from scipy import stats

    if any(c > 0 and exact.get(key, 0) == 0 for key, c in counts.items()):
        return 0.0, 0
    n_trials = sum(counts.values())
    keys = sorted(exact, key=lambda key: (float(exact[key]), key))
    expected = [float(exact[key]) * n_trials for key in keys]
    observed = [counts.get(key, 0) for key in keys]
    pool_exp, pool_obs, j = 0.0, 0, 0
    while j < len(keys) and (expected[j] < min_expected or 0.0 < pool_exp < min_expected):
        pool_exp += expected[j]
        pool_obs += observed[j]
        j += 1
    exp_bins = expected[j:] + ([pool_exp] if j else [])
    obs_bins = observed[j:] + ([pool_obs] if j else [])
    if len(exp_bins) < 2:
        return 1.0, len(exp_bins)
    exp_arr = np.array(exp_bins)
    exp_arr *= n_trials / exp_arr.sum()  # remove float rounding of the probabilities
    return float(stats.chisquare(np.array(obs_bins, dtype=float), exp_arr).pvalue), len(exp_bins)
