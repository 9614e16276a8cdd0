"""CoupledKMeans: exact re-fits after a change of the data (MUFC's server, Alg. 4 line 8).

Seeding: after ``fit`` on old weights and ``refit`` on new ones, the ordered seeds must have
exactly the k-means++ distribution of the new data. Each case runs ``TRIALS`` seeded trials and
compares the seed sequences with the exact distribution (rational arithmetic, by enumeration)
by Pearson chi-square; every test uses ``ALPHA = 1e-3`` (7 cases: family-wise false-alarm rate
<= 7e-3; seeds fixed, so the outcome is deterministic). Power: keeping every seed that still
exists (no coupling) is detected.

Lloyd: a replay of a recorded run on changed data gives the bits of a fresh run (Hypothesis).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fedcore import _config
from fedcore.algorithms.mufc import coupled as _coupled
from fedcore.algorithms.mufc.coupled import CoupledKMeans, _lloyd_traced
from fedcore.algorithms.mufc.rows import add_sparse, match_rows
from fedcore.algorithms.kmeans.lloyd import weighted_lloyd, _margin, absolute_tolerance
from fedcore.kernels.kmeans.lloyd_replay import LloydPrior
from tests.reference.kmeans_reference import chi_square_against_exact, exact_kmeanspp_distribution
from tests.kernels.test_lloyd import ROW_KINDS, rows_of_kind

ALPHA = 1e-3
TRIALS = 3000

_P5 = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [3.0, 3.0], [0.5, 0.2]])

# name: (keys, X, old weights, list of (keys, X, weights) after each change, n_clusters)
CASES = {
    "decrement": (np.arange(5), _P5, [3, 1, 2, 4, 1], [(np.arange(5), _P5, [2, 1, 2, 4, 1])], 3),
    "row_vanishes": (np.arange(5), _P5, [3, 1, 2, 4, 1],
                     [(np.array([0, 1, 2, 4]), _P5[[0, 1, 2, 4]], [3, 1, 2, 1])], 3),
    "row_appears": (np.array([0, 1, 2, 4]), _P5[[0, 1, 2, 4]], [1, 1, 2, 1],
                    [(np.arange(5), _P5, [1, 1, 2, 2, 1])], 3),
    "client_retrain": (np.arange(4), _P5[:4], [2, 3, 1, 2],
                       [(np.array([1, 2, 3, 4]), _P5[1:], [5, 1, 1, 2])], 2),
    "degenerate": (np.arange(5), np.array([[0.0], [0.0], [1.0], [1.0], [1.0]]), [1, 2, 1, 1, 2],
                   [(np.arange(5), np.array([[0.0], [0.0], [1.0], [1.0], [1.0]]),
                     [1, 1, 1, 1, 2])], 3),
    "total_drops_to_zero": (np.arange(3), np.array([[0.0], [0.0], [5.0]]), [1, 2, 3],
                            [(np.arange(2), np.array([[0.0], [0.0]]), [1, 2])], 2),
    "successive": (np.arange(5), _P5, [3, 1, 2, 4, 1],
                   [(np.arange(5), _P5, [3, 1, 2, 3, 1]),
                    (np.array([0, 2, 3, 4]), _P5[[0, 2, 3, 4]], [1, 2, 3, 2])], 3),
}


def _as_data(keys, X, weights):
    return np.asarray(keys), np.asarray(X, dtype=np.float64), np.asarray(weights, np.float64)


def _seed_counts(case, trials, seed_base):
    keys, X, w, changes, k = case
    counts = {}
    for s in range(trials):
        rng = np.random.default_rng(seed_base + s)
        model = CoupledKMeans(k, n_init=1, max_iter=5).fit(*_as_data(keys, X, w), rng)
        for change in changes:
            model.refit(*_as_data(*change), rng)
        seq = tuple(int(r) for r in model._restarts[0].seeds)
        counts[seq] = counts.get(seq, 0) + 1
    return counts


def _exact(case):
    _, X, w = _as_data(*case[3][-1])
    return exact_kmeanspp_distribution(X, case[4], w)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_refit_seeds_are_kmeanspp_of_the_new_data(name):
    case = CASES[name]
    counts = _seed_counts(case, TRIALS, 1_000_000 * (sorted(CASES).index(name) + 1))
    pvalue, n_bins = chi_square_against_exact(counts, _exact(case))
    assert n_bins >= 2
    assert pvalue > ALPHA


def test_chi_square_detects_keeping_every_seed(monkeypatch):
    # Without the coupling (keep a seed whenever its row still exists), the seeds follow the old
    # data's distribution: the test must see it.
    monkeypatch.setattr(_coupled, "_keep", lambda q, p, rng: q > 0)
    case = CASES["decrement"]
    counts = _seed_counts(case, TRIALS, 5)
    pvalue, _ = chi_square_against_exact(counts, _exact(case))
    assert pvalue < ALPHA


def test_refit_redraws_only_what_changed_and_models_are_lloyd_of_their_seeds():
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=4.0, size=(6, 3))
    X = centers[rng.integers(0, 6, 300)] + rng.normal(size=(300, 3))
    keys = np.arange(300) * 7
    w = rng.integers(1, 30, 300).astype(float)
    model = CoupledKMeans(6, n_init=4).fit(keys, X, w, rng)
    assert model.n_redrawn_ == 4
    for step in range(6):
        j = rng.integers(w.shape[0])
        w[j] -= 1
        keep = w > 0
        keys, X, w = keys[keep], X[keep], w[keep]
        model.refit(keys, X, w, rng)
        assert model.n_redrawn_ <= 4
        tol = absolute_tolerance(X, 1e-4)
        for r in model._restarts:
            c, labels, inertia, n_iter = weighted_lloyd(X, w, X[r.seeds], 300, tol)
            np.testing.assert_array_equal(c.view(np.int64), r.centers.view(np.int64))
            np.testing.assert_array_equal(labels, r.trace[0][-1])
            assert inertia == r.inertia and n_iter == r.n_iter
        best = min(model._restarts, key=lambda r: r.inertia)
        np.testing.assert_array_equal(model.cluster_centers_, best.centers)


@st.composite
def _changed_problems(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(3, 60))
    d = draw(st.integers(1, 5))
    k = draw(st.integers(1, 6))
    X = rows_of_kind(draw(st.sampled_from(ROW_KINDS)), rng, n, d, k)
    keys = np.sort(rng.choice(10 * n, size=n, replace=False))
    w = rng.integers(0, 5, size=n).astype(np.float64)
    # The change: some weights move (some to 0: the row leaves), some rows are new.
    new_w = w.copy()
    moved = rng.random(n) < draw(st.sampled_from([0.0, 0.05, 0.3]))
    new_w[moved] = rng.integers(0, 5, size=int(moved.sum()))
    n_new = draw(st.integers(0, 3))
    extra_keys = np.setdiff1d(np.arange(10 * n + 10), keys)[rng.permutation(n_new)[:n_new]]
    extra_X = X[rng.integers(0, n, n_new)] + rng.integers(-1, 2, size=(n_new, d))
    keys2 = np.concatenate([keys[new_w > 0], extra_keys])
    X2 = np.concatenate([X[new_w > 0], extra_X])
    w2 = np.concatenate([new_w[new_w > 0], rng.integers(1, 4, n_new).astype(np.float64)])
    order = np.argsort(keys2)
    init = X[rng.integers(0, n, k)] + draw(st.sampled_from([0.0, 0.5])) * rng.normal(size=(k, d))
    return (keys, X, w), (keys2[order], X2[order], w2[order]), init, draw(st.integers(1, 30))


def _prior_for(old, new, trace):
    rows = match_rows(old[0][:, None], new[0][:, None])
    gone = np.setdiff1d(np.arange(old[0].shape[0]), rows[rows >= 0])
    return LloydPrior(old[2], trace, rows, gone)


def _bits(a):
    return np.asarray(a, dtype=np.float64).view(np.int64)


def _assert_same_run(replay, fresh_traced, fresh):
    (c1, i1, n1, t1), (_, i2, n2, t2) = replay, fresh_traced
    np.testing.assert_array_equal(_bits(c1), _bits(fresh[0]))
    assert _bits([i1]) == _bits([fresh[2]]) and n1 == fresh[3]
    assert n1 == n2 and _bits([i1]) == _bits([i2])
    # Every E-step: the same labels, distances, centers and relocations (bounds may differ).
    for a, b in ((t1[0], t2[0]), (t1[4], t2[4])):
        np.testing.assert_array_equal(a, b)
    for a, b in ((t1[2], t2[2]), (t1[3], t2[3])):
        np.testing.assert_array_equal(_bits(a), _bits(b))


@settings(max_examples=150, deadline=None)
@given(problem=_changed_problems())
def test_lloyd_replay_gives_the_bits_of_a_fresh_run(problem):
    old, new, init, max_iter = problem
    if new[0].shape[0] == 0:
        return
    both = np.concatenate([old[1], new[1], init])
    margin = _margin(both, init)
    tol = absolute_tolerance(new[1], 1e-4)
    recorded = _lloyd_traced(old[1], old[2], init, max_iter, tol, margin, None)
    fresh_traced = _lloyd_traced(new[1], new[2], init, max_iter, tol, margin, None)
    fresh = weighted_lloyd(new[1], new[2], init, max_iter, tol)
    replay = _lloyd_traced(new[1], new[2], init, max_iter, tol, margin,
                           _prior_for(old, new, recorded[3]))
    _assert_same_run(replay, fresh_traced, fresh)
    # A replay's trace is a valid prior in turn (the old data again, from the new run's trace).
    back = _lloyd_traced(old[1], old[2], init, max_iter, tol, margin,
                         _prior_for(new, old, replay[3]))
    _assert_same_run(back, recorded,
                     weighted_lloyd(old[1], old[2], init, max_iter, tol))


@pytest.mark.parametrize("chunks", [1, 4])
def test_lloyd_replay_over_several_chunks(chunks):
    # More rows than one chunk: bounds are primed from the prior, sums are not reused. With more
    # than 3 chunks the runs take the parallel variant (which once recorded no E-step, so that
    # the replay was primed from an uninitialized trace).
    rng = np.random.default_rng(1)
    n = chunks * _config.CHUNK_SIZE + 900
    X = rng.normal(scale=3.0, size=(5, 2))[rng.integers(0, 5, n)] + rng.normal(size=(n, 2))
    keys = np.arange(n)
    w = rng.integers(1, 4, n).astype(float)
    w2 = w.copy()
    w2[[3, 4000, 4100]] = [2.0, 0.0, 5.0]
    keep = w2 > 0
    old, new = (keys, X, w), (keys[keep], X[keep], w2[keep])
    init = X[rng.integers(0, n, 5)]
    margin, tol = _margin(X, init), absolute_tolerance(new[1], 1e-4)
    recorded = _lloyd_traced(X, w, init, 100, tol, margin, None)
    replay = _lloyd_traced(new[1], new[2], init, 100, tol, margin,
                           _prior_for(old, new, recorded[3]))
    fresh_traced = _lloyd_traced(new[1], new[2], init, 100, tol, margin, None)
    _assert_same_run(replay, fresh_traced, weighted_lloyd(new[1], new[2], init, 100, tol))


def test_match_rows_and_add_sparse(monkeypatch):
    old = np.array([[0, 1], [2, 3], [4, 5], [0, 0]])
    new = np.array([[4, 5], [9, 9], [0, 1]])
    np.testing.assert_array_equal(match_rows(old, new), [2, -1, 0])
    np.testing.assert_array_equal(match_rows(old[:0], new), [-1, -1, -1])
    # Hash collisions are detected and resolved exactly.
    from fedcore.algorithms.mufc import rows as _rows
    monkeypatch.setattr(_rows, "_row_hashes", lambda keys: np.zeros(keys.shape[0], np.uint64))
    np.testing.assert_array_equal(match_rows(old, new), [2, -1, 0])
    monkeypatch.undo()
    bins, counts = add_sparse(old, np.array([1, 2, 3, 4]), np.array([[2, 3], [0, 0]]),
                              np.array([-2, 1]))
    np.testing.assert_array_equal(bins, old[[0, 2, 3]])
    np.testing.assert_array_equal(counts, [1, 3, 5])
    assert add_sparse(old, np.array([1, 2, 3, 4]), np.array([[7, 7]]), np.array([1])) is None
