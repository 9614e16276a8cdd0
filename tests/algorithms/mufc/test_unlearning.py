"""UnlearnableKMeans bookkeeping: fitted attributes, removals that hit no center or center i,
atomic errors, and the refine=True path. Deterministic (seeded); no statistical tests here (the
distributional guarantee is in test_unlearning_exact.py).
"""
import re

import numba
import numpy as np
import pytest

import fedcore
from tests.reference.kmeans_reference import assign_reference


def _blobs(n=240, d=3, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=6.0, size=(6, d))
    return (means[rng.integers(0, 6, size=n)] + rng.normal(size=(n, d))).astype(dtype)


IDS = 1000 + 7 * np.random.default_rng(1).permutation(240)  # unique, unsorted, not row numbers


def _fit(k=5, seed=0, X=None, ids=IDS, **kw):
    X = _blobs() if X is None else X
    return X, fedcore.UnlearnableKMeans(k, random_state=seed, **kw).fit(X, sample_ids=ids)


def _snapshot(model):
    return {name: np.array(getattr(model, name), copy=True)
            for name in ("cluster_centers_", "center_ids_", "labels_", "cluster_sizes_",
                         "n_samples_", "sample_ids_")}


def _assert_same(model, snap):
    for name, value in snap.items():
        np.testing.assert_array_equal(np.asarray(getattr(model, name)), value, err_msg=name)


def _rows_of(ids, wanted):
    where = {int(v): r for r, v in enumerate(ids)}
    return np.array([where[int(v)] for v in wanted], dtype=np.int64)


def _check_consistent(model, X, ids, removed, k):
    """Invariants of a seeding-only model over the points not in ``removed``."""
    keep = ~np.isin(ids, np.asarray(sorted(removed), dtype=np.int64))
    X_left, ids_left = X[keep], ids[keep]
    assert model.n_samples_ == keep.sum()
    np.testing.assert_array_equal(model.sample_ids_, ids_left)
    center_ids = np.asarray(model.center_ids_)
    assert center_ids.dtype == np.int64 and center_ids.shape == (k,)
    assert len(set(center_ids.tolist())) == k
    assert not set(center_ids.tolist()) & set(removed)
    # Centers are the true data points of those ids, in seeding order.
    np.testing.assert_array_equal(model.cluster_centers_, X[_rows_of(ids, center_ids)])
    # Labels: first nearest center in seeding order, for the remaining points in row order.
    labels, _ = assign_reference(X_left, model.cluster_centers_)
    np.testing.assert_array_equal(model.labels_, labels)
    sizes = np.asarray(model.cluster_sizes_)
    assert sizes.dtype == np.int64
    np.testing.assert_array_equal(sizes, np.bincount(labels, minlength=k))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fit_attributes(dtype):
    X = _blobs(dtype=dtype)
    X, model = _fit(X=X)
    _check_consistent(model, X, IDS, set(), 5)
    assert model.n_features_in_ == 3
    # Default ids are row numbers.
    plain = fedcore.UnlearnableKMeans(5, random_state=0).fit(X)
    _check_consistent(plain, X, np.arange(240), set(), 5)


def test_same_seed_same_model():
    _, a = _fit(seed=3)
    _, b = _fit(seed=3)
    _assert_same(b, _snapshot(a))


def test_remove_non_centers_keeps_centers():
    X, model = _fit(seed=2)
    before = _snapshot(model)
    centers = set(model.center_ids_.tolist())
    gone = [int(i) for i in IDS[::37] if int(i) not in centers][:4]
    result = model.remove(gone)
    assert isinstance(result.retrained, bool) and not result.retrained
    assert result.restart_position is None
    assert result.n_removed == 4
    np.testing.assert_array_equal(model.center_ids_, before["center_ids_"])
    np.testing.assert_array_equal(model.cluster_centers_, before["cluster_centers_"])
    keep = ~np.isin(IDS, gone)
    # The other points keep their labels; sizes drop by the removed points' clusters.
    np.testing.assert_array_equal(model.labels_, before["labels_"][keep])
    np.testing.assert_array_equal(model.sample_ids_, IDS[keep])
    lost = np.bincount(before["labels_"][~keep], minlength=5)
    np.testing.assert_array_equal(model.cluster_sizes_, before["cluster_sizes_"] - lost)
    assert model.n_samples_ == 240 - 4
    _check_consistent(model, X, IDS, set(gone), 5)


@pytest.mark.parametrize("position", [0, 1, 2, 4])
def test_remove_center_restarts_at_its_position(position):
    X, model = _fit(seed=10 + position)
    before = _snapshot(model)
    target = int(model.center_ids_[position])
    other = next(int(i) for i in IDS if int(i) not in set(model.center_ids_.tolist()))
    result = model.remove([other, target])
    assert isinstance(result.retrained, bool) and result.retrained
    assert result.restart_position == position
    assert result.n_removed == 2
    np.testing.assert_array_equal(model.center_ids_[:position], before["center_ids_"][:position])
    _check_consistent(model, X, IDS, {other, target}, 5)


def test_first_removed_center_decides_restart():
    X, model = _fit(seed=4)
    before = _snapshot(model)
    hit = [int(model.center_ids_[3]), int(model.center_ids_[1])]
    result = model.remove(hit)
    assert result.retrained and result.restart_position == 1
    np.testing.assert_array_equal(model.center_ids_[:1], before["center_ids_"][:1])
    _check_consistent(model, X, IDS, set(hit), 5)


def test_successive_removals_stay_consistent():
    X, model = _fit(seed=6)
    removed = set()
    rng = np.random.default_rng(0)
    for step in range(8):
        alive = np.asarray(model.sample_ids_)
        if step % 2:  # hit a center
            batch = [int(model.center_ids_[rng.integers(0, 5)])]
        else:
            batch = [int(i) for i in rng.choice(alive, size=3, replace=False)]
        hit = [p for p, c in enumerate(model.center_ids_.tolist()) if c in batch]
        result = model.remove(batch)
        removed |= set(batch)
        assert result.retrained == bool(hit)
        assert result.restart_position == (min(hit) if hit else None)
        _check_consistent(model, X, IDS, removed, 5)


def test_remove_down_to_n_clusters_points():
    X = _blobs(n=12)
    model = fedcore.UnlearnableKMeans(4, random_state=0).fit(X)
    model.remove(list(range(8)))
    _check_consistent(model, X, np.arange(12), set(range(8)), 4)
    assert sorted(model.center_ids_.tolist()) == [8, 9, 10, 11]
    np.testing.assert_array_equal(model.cluster_sizes_, [1, 1, 1, 1])


# ------------------------------------------------------------------------------------------
# Errors are loud and atomic
# ------------------------------------------------------------------------------------------

def _bad_requests(model):
    """(ids, regex the message must match) pairs that must raise ValueError."""
    centers = model.center_ids_.tolist()
    some = int(model.sample_ids_[0])
    n_left = model.n_samples_
    return [
        ([123456789], r"\b123456789\b"),                      # unknown id
        ([centers[0], 123456789], r"\b123456789\b"),          # valid center + unknown: nothing
        ([some, some], rf"\b{some}\b"),                        # repeated id
        ([-5], r"-5\b"),                                       # unknown negative id
        (list(model.sample_ids_[: n_left - 5 + 1]), None),     # would leave n_clusters - 1
    ]


def test_errors_are_atomic():
    X, model = _fit(seed=8)
    gone = int(next(i for i in IDS if int(i) not in set(model.center_ids_.tolist())))
    model.remove([gone])
    twin_X, twin = _fit(seed=8)
    twin.remove([gone])
    snap = _snapshot(model)
    requests = _bad_requests(model) + [([gone], rf"\b{gone}\b"),            # already removed
                                       ([int(model.center_ids_[0]), gone], rf"\b{gone}\b")]
    for ids, pattern in requests:
        with pytest.raises(ValueError) as info:
            model.remove(ids)
        if pattern is not None:
            assert re.search(pattern, str(info.value)), (ids, str(info.value))
        _assert_same(model, snap)
    # The failed requests consumed no randomness: the same next removal gives the same model.
    center = int(model.center_ids_[0])
    r1, r2 = model.remove([center]), twin.remove([center])
    assert (r1.retrained, r1.restart_position, r1.n_removed) == \
        (r2.retrained, r2.restart_position, r2.n_removed)
    _assert_same(model, _snapshot(twin))


def test_remove_before_fit_raises():
    with pytest.raises((ValueError, AttributeError)):
        fedcore.UnlearnableKMeans(2).remove([0])


# ------------------------------------------------------------------------------------------
# refine=True: Lloyd from the (exactly unlearned) seeds
# ------------------------------------------------------------------------------------------

def _assert_refined_matches_kmeans(model, X, ids, removed, k):
    keep = ~np.isin(ids, np.asarray(sorted(removed), dtype=np.int64))
    X_left = X[keep]
    seeds = X[_rows_of(ids, model.center_ids_)]
    km = fedcore.KMeans(k, init=seeds, n_init=1).fit(X_left)
    np.testing.assert_allclose(model.cluster_centers_, km.cluster_centers_, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(model.labels_, km.labels_)
    np.testing.assert_array_equal(model.cluster_sizes_, np.bincount(km.labels_, minlength=k))
    assert model.n_samples_ == X_left.shape[0]


def test_refine_equals_kmeans_from_seeds():
    X, model = _fit(seed=12, refine=True)
    _assert_refined_matches_kmeans(model, X, IDS, set(), 5)
    assert not np.array_equal(model.cluster_centers_, X[_rows_of(IDS, model.center_ids_)])
    removed = set()
    centers = set(model.center_ids_.tolist())
    batch = [int(i) for i in IDS[5:40:6] if int(i) not in centers]
    result = model.remove(batch)
    removed |= set(batch)
    assert not result.retrained and result.restart_position is None
    _assert_refined_matches_kmeans(model, X, IDS, removed, 5)
    batch = [int(model.center_ids_[2])]
    result = model.remove(batch)
    removed |= set(batch)
    assert result.retrained and result.restart_position == 2
    _assert_refined_matches_kmeans(model, X, IDS, removed, 5)


# ------------------------------------------------------------------------------------------
# Redraws never read uninitialized memory
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fill", [0.0, np.nan, 1.0], ids=["zeros", "nan", "ones"])
def test_redraw_does_not_depend_on_uninitialized_memory(monkeypatch, fill):
    # Correct code never reads what np.empty returns; make that memory zeros / NaN / ones and
    # check a removal that must redraw a forced center. Five points at 0 and two far points: when
    # center 1 is row 6 and row 6 is removed, the only point with positive D^2 is row 5, so the
    # redrawn center 1 must be row 5 (probability 1).
    X = np.array([[0.0], [0.0], [0.0], [0.0], [0.0], [10.0], [11.0]])
    for seed in range(5):  # warm up every kernel before np.empty is replaced
        fedcore.UnlearnableKMeans(2, random_state=seed).fit(X).remove([6])
    real_empty = np.empty

    def filled_empty(*args, **kwargs):
        out = real_empty(*args, **kwargs)
        if out.dtype.kind == "f":
            out.fill(fill)
        return out

    monkeypatch.setattr(np, "empty", filled_empty)
    checked = 0
    for seed in range(400):
        model = fedcore.UnlearnableKMeans(2, random_state=seed).fit(X)
        if model.center_ids_.tolist() != [int(model.center_ids_[0]), 6] or \
                int(model.center_ids_[0]) == 5:
            continue
        result = model.remove([6])
        checked += 1
        assert result.retrained and result.restart_position == 1
        assert int(model.center_ids_[1]) == 5, f"seed {seed}: redrew {model.center_ids_.tolist()}"
    assert checked >= 20


@pytest.mark.parametrize("k", [40, 70])
def test_many_clusters_stay_consistent(k):
    # More centers than a refresh batch: seeding state must stay consistent through removals.
    X = _blobs(n=400, seed=9)
    ids = np.arange(400)
    model = fedcore.UnlearnableKMeans(k, random_state=1).fit(X)
    _check_consistent(model, X, ids, set(), k)
    removed = {int(model.center_ids_[3]), int(model.center_ids_[k - 1])}
    result = model.remove(sorted(removed))
    assert result.retrained and result.restart_position == 3
    _check_consistent(model, X, ids, removed, k)


def test_same_bits_one_and_two_threads():
    # fit and removals on data spanning several chunks: identical models for 1 and 2 threads.
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("Numba was started with 1 thread")
    from fedcore import _config
    from fedcore.kernels.parallel import PARALLEL_MIN_CHUNKS
    # Enough chunks for the parallel variants of the kernels (with 2 threads).
    X = _blobs(n=PARALLEL_MIN_CHUNKS * _config.CHUNK_SIZE + 77, seed=4, dtype=np.float32)

    def run(refine):
        model = fedcore.UnlearnableKMeans(6, refine=refine, random_state=5).fit(X)
        snaps = [_snapshot(model)]
        model.remove([int(model.center_ids_[2]), 17, 4000])
        snaps.append(_snapshot(model))
        model.remove([int(model.center_ids_[0])])
        snaps.append(_snapshot(model))
        return snaps

    old = numba.get_num_threads()
    try:
        for refine in (False, True):
            numba.set_num_threads(1)
            one = run(refine)
            numba.set_num_threads(2)
            two = run(refine)
            for a, b in zip(one, two):
                for name in a:
                    np.testing.assert_array_equal(np.atleast_1d(a[name]).view(np.uint8),
                                                  np.atleast_1d(b[name]).view(np.uint8),
                                                  err_msg=name)
    finally:
        numba.set_num_threads(old)
