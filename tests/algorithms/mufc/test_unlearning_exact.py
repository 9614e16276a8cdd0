"""Exact unlearning in distribution (MUFC Lemma 5.1): fit(X) then remove(R) ~ fit(X minus R).

For each tiny input (n <= 6; duplicates; the degenerate case with fewer distinct points than
clusters; removal sets that hit a likely center, that hit no center, several points, successive
removals, custom ids), ``UnlearnableKMeans(random_state=s).fit(X)`` followed by the removals runs
for ``TRIALS`` seeds ``s``, and the ordered ``center_ids_`` are compared by Pearson chi-square
with the exact k-means++ distribution of the remaining points (``exact_kmeanspp_distribution``,
bins with expected count < 5 pooled). Each case also checks, by an exact binomial test, that the
fraction of first removals that retrain equals the exact probability that ``fit(X)`` picks a
removed point as a center.

False-alarm rate: every statistical test uses ``ALPHA = 1e-3``, so a correct implementation fails
a given test with probability <= 1e-3 over the seeds. There are ``len(CASES)`` = 10 chi-square
tests, at most 10 binomial tests and one chi-square on data spanning several chunks, so the
family-wise false-alarm rate is <= 2.1e-2. Seeds are fixed (disjoint ranges per case), so the
outcome is deterministic.

Power: ``test_chi_square_detects_inexact_unlearning`` runs the same machinery on a plausible but
wrong unlearning rule (replace only the removed center, keep the later ones) and requires p < ALPHA.
"""
import numba
import numpy as np
import pytest
from scipy import stats

import fedcore
from fedcore import _config
from tests.reference.kmeans_reference import (chi_square_against_exact,
                                              exact_grouped_kmeanspp_distribution,
                                              exact_kmeanspp_distribution, kmeanspp_reference)

ALPHA = 1e-3
TRIALS = 4000  # per case; about 0.5 s per case on 2 cores

_SQUARE = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [8.0, 8.0], [0.5, 0.25]])

# name: (X, n_clusters, sample_ids or None, list of removal batches)
CASES = {
    "fit_only": (_SQUARE, 3, None, []),
    "likely_center": (_SQUARE, 3, None, [[4]]),          # the outlier is a center ~95% of the time
    "non_center_duplicates": (np.array([[0.0], [0.0], [0.0], [0.0], [5.0], [6.0]]), 2, None,
                              [[1]]),                     # a duplicate, a center ~25% of the time
    "two_points": (_SQUARE, 3, None, [[1, 4]]),
    "degenerate": (np.array([[0.0], [0.0], [0.0], [1.0], [1.0]]), 3, None, [[3]]),
    "degenerate_all_identical_left": (np.array([[2.0, 2.0]] * 5 + [[3.0, 3.0]]), 3, None,
                                      [[0, 5]]),
    "leave_exactly_k": (np.array([[0.0], [1.0], [3.0], [7.0], [7.5]]), 3, None, [[3, 0]]),
    "custom_ids": (np.array([[0.0], [0.0], [0.0], [5.0], [5.0], [6.0]]), 2,
                   np.array([40, 7, 13, 2, 99, 5]), [[13, 99]]),
    "successive": (_SQUARE, 2, None, [[4], [0, 2]]),
    "successive_degenerate": (np.array([[0.0], [0.0], [1.0], [1.0], [1.0], [4.0]]), 3, None,
                              [[5], [2]]),
}


def _ids(X, sample_ids):
    return np.arange(X.shape[0]) if sample_ids is None else np.asarray(sample_ids)


def _exact_after(X, k, ids, removed):
    """Exact distribution of ordered center ids of k-means++ on the points not in ``removed``."""
    keep = ~np.isin(ids, np.asarray(list(removed), dtype=np.int64))
    kept_ids = ids[keep]
    return {tuple(int(kept_ids[r]) for r in seq): p
            for seq, p in exact_kmeanspp_distribution(X[keep], k).items()}


def _seed_base(name):
    return 1_000_000 * (sorted(CASES).index(name) + 1)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_fit_then_remove_equals_retraining_in_distribution(name):
    X, k, sample_ids, batches = CASES[name]
    ids = _ids(X, sample_ids)
    removed_all = [i for batch in batches for i in batch]
    exact = _exact_after(X, k, ids, removed_all)
    counts = {}
    n_retrained_first = 0
    for seed in range(_seed_base(name), _seed_base(name) + TRIALS):
        model = fedcore.UnlearnableKMeans(k, random_state=seed).fit(X, sample_ids=sample_ids)
        removed = set()
        for b, batch in enumerate(batches):
            before = [int(c) for c in model.center_ids_]
            result = model.remove(batch)
            hit = [pos for pos, c in enumerate(before) if c in set(batch)]
            removed |= set(batch)
            assert result.retrained == bool(hit)
            assert result.restart_position == (min(hit) if hit else None)
            assert result.n_removed == len(batch)
            after = [int(c) for c in model.center_ids_]
            assert after[:min(hit) if hit else k] == before[:min(hit) if hit else k]
            assert not removed & set(after)
            if b == 0:
                n_retrained_first += bool(hit)
        key = tuple(int(c) for c in model.center_ids_)
        counts[key] = counts.get(key, 0) + 1

    impossible = {key: c for key, c in counts.items() if key not in exact}
    assert not impossible, f"outcomes of exact probability 0: {impossible}"
    p, bins = chi_square_against_exact(counts, exact)
    assert bins >= 2, "case has a single outcome: nothing to test"
    assert p > ALPHA, f"{name}: chi-square p = {p:.2e} over {bins} bins; counts {counts}"

    if batches:
        fit_dist = _exact_after(X, k, ids, [])
        first = set(batches[0])
        p_hit = float(sum(prob for seq, prob in fit_dist.items() if first & set(seq)))
        if 0.0 < p_hit < 1.0:
            binom = stats.binomtest(n_retrained_first, TRIALS, p_hit).pvalue
            assert binom > ALPHA, (f"{name}: retrained {n_retrained_first}/{TRIALS}, "
                                   f"exact rate {p_hit:.4f}, p = {binom:.2e}")


def test_cases_exercise_both_paths():
    # The case list must contain removals that retrain with high and with low probability,
    # and a degenerate case (fewer distinct points than clusters).
    rates = {}
    for name, (X, k, sample_ids, batches) in CASES.items():
        if batches:
            ids = _ids(X, sample_ids)
            dist = _exact_after(X, k, ids, [])
            rates[name] = float(sum(p for seq, p in dist.items() if set(batches[0]) & set(seq)))
    assert rates["likely_center"] > 0.9
    assert rates["non_center_duplicates"] < 0.3
    X, k, _, _ = CASES["degenerate"]
    assert len(np.unique(X, axis=0)) < k


def _wrong_unlearning(X, k, removed, uniforms):
    """A plausible but inexact rule: replace only the removed center, keep the later centers."""
    n = X.shape[0]
    rows, _, _ = kmeanspp_reference(X, None, uniforms[:k], 4096)
    rows = [int(r) for r in rows]
    for i, r in enumerate(rows):
        if r in removed:
            others = [c for c in rows if c != r]
            d2 = np.array([0.0 if (j in removed or j in others) else
                           min(float(((X[j] - X[c]) ** 2).sum()) for c in others)
                           for j in range(n)])
            if d2.sum() == 0:
                d2 = np.array([0.0 if (j in removed or j in others) else 1.0 for j in range(n)])
            rows[i] = int(np.searchsorted(np.cumsum(d2), uniforms[k + i] * d2.sum(), side="right"))
    return tuple(rows)


def test_chi_square_detects_inexact_unlearning():
    X, k, removed = _SQUARE, 3, {4}
    exact = _exact_after(X, k, np.arange(X.shape[0]), removed)
    counts = {}
    for seed in range(TRIALS):
        key = _wrong_unlearning(X, k, removed, np.random.default_rng(seed).random(2 * k))
        counts[key] = counts.get(key, 0) + 1
    p, _ = chi_square_against_exact(counts, exact)
    assert p < ALPHA


def test_several_chunks_fit_then_remove_equals_retraining():
    # Many rows at 4 locations across several chunks (CHUNK_SIZE rows each); remove every row of
    # the far location (a likely center) and 1500 rows of the biggest one in one batch. Compared
    # as sequences of locations with the exact grouped distribution; k = 5 > 3 locations left,
    # so the degenerate rule runs after the removal. One chi-square, alpha = 1e-3.
    chunk = _config.CHUNK_SIZE
    locations = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0], [7.0, 7.0]])
    counts = [chunk + 900, chunk // 2 + 20, 150, 3]
    location_of = np.repeat(np.arange(4), counts)
    rng = np.random.default_rng(3)
    rng.shuffle(location_of)
    X = locations[location_of]
    removed = np.concatenate([np.flatnonzero(location_of == 3),
                              rng.choice(np.flatnonzero(location_of == 0), 1500, replace=False)])
    left = [c - int(np.sum(location_of[removed] == g)) for g, c in enumerate(counts)]
    exact = exact_grouped_kmeanspp_distribution(locations, left, 5)
    tallies, retrained = {}, 0
    trials = 1500
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # same bits for any thread count (test_unlearning.py); faster here
    try:
        for seed in range(50_000, 50_000 + trials):
            model = fedcore.UnlearnableKMeans(5, random_state=seed).fit(X)
            retrained += model.remove(removed).retrained
            key = tuple(int(location_of[i]) for i in model.center_ids_)
            tallies[key] = tallies.get(key, 0) + 1
    finally:
        numba.set_num_threads(threads)
    assert retrained > trials // 4  # the removal hits a center often: the redraw path is tested
    impossible = {key: c for key, c in tallies.items() if key not in exact}
    assert not impossible, f"outcomes of exact probability 0: {impossible}"
    p, bins = chi_square_against_exact(tallies, exact)
    assert bins >= 2
    assert p > ALPHA, f"p = {p:.2e} over {bins} bins"
