"""Uniform server data with the exact coupled update ([MUFC] Alg. 1 line 6, Alg. 4): the server's
points are updated to the new counts with the law of a fresh sample, and the re-fit is coupled."""
import collections

import numpy as np
import pytest
from scipy import stats

import fedcore
from fedcore.algorithms.mufc import MUFC
from fedcore.algorithms.mufc.quantize import Quantizer, UniformPoints

ALPHA = 1e-3  # false-alarm rate of each seeded test below

Q = Quantizer.from_bounds(np.zeros(2), np.ones(2), 0.25, None)


def _in_cells(data, bins):
    got = Q.bins(data.points)
    return np.array_equal(got, data.keys[:, :2])


def test_update_keeps_counts_cells_and_keys():
    rng = np.random.default_rng(0)
    bins = np.array([[0, 0], [1, 2], [3, 3], [4, 0]])
    old = UniformPoints.draw(Q, bins, np.array([3, 1, 4, 2]), rng)
    assert _in_cells(old, bins) and old.points.shape == (10, 2)
    new_bins = np.array([[0, 0], [1, 2], [2, 2], [4, 0]])   # [3, 3] empties, [2, 2] appears
    counts = np.array([1, 3, 2, 2])
    new = old.update(Q, new_bins, counts, rng)
    assert _in_cells(new, new_bins)
    got = collections.Counter(map(tuple, new.keys[:, :2].tolist()))
    assert got == {(0, 0): 1, (1, 2): 3, (2, 2): 2, (4, 0): 2}
    assert np.unique(new.keys, axis=0).shape[0] == new.keys.shape[0]   # keys stay unique
    old_rows = {tuple(k): p for k, p in zip(old.keys.tolist(), old.points.tolist())}
    kept = [tuple(k) for k in new.keys.tolist() if tuple(k) in old_rows]
    assert len(kept) == 1 + 1 + 2   # (0,0) keeps 1 of 3, (1,2) its 1, (4,0) both
    for k, p in zip(new.keys.tolist(), new.points.tolist()):
        if tuple(k) in old_rows:
            assert old_rows[tuple(k)] == p   # a kept point is the same point


def test_a_shrinking_bin_keeps_a_uniformly_random_subset():
    """Chi-square over which of 3 points is kept when a bin falls to 1: 1/3 each."""
    rng = np.random.default_rng(1)
    bins = np.array([[1, 1]])
    kept = collections.Counter()
    for _ in range(3000):
        old = UniformPoints.draw(Q, bins, np.array([3]), rng)
        new = old.update(Q, bins, np.array([1]), rng)
        kept[int(new.keys[0, 2])] += 1
    assert set(kept) == {0, 1, 2}
    assert stats.chisquare([kept[0], kept[1], kept[2]]).pvalue > ALPHA


def test_updated_points_are_uniform_in_their_cell():
    """KS against the uniform law on the cell, for kept and new points alike."""
    rng = np.random.default_rng(2)
    bins = np.array([[2, 1]])
    xs = []
    for _ in range(800):
        old = UniformPoints.draw(Q, bins, np.array([4]), rng)
        new = old.update(Q, bins, np.array([2]), rng).update(Q, bins, np.array([5]), rng)
        xs.append(new.points[:, 0])
    x = np.concatenate(xs)
    low = Q.centers(bins)[0, 0] - 0.5 * Q.gamma * Q.scale
    assert stats.kstest(x, stats.uniform(low, Q.gamma * Q.scale).cdf).pvalue > ALPHA


def _tiny_federation(drop=None):
    X0 = np.array([[0.05, 0.05], [0.1, 0.0], [0.9, 0.9], [0.9, 0.9]])
    X1 = np.array([[0.0, 0.9], [0.9, 0.1], [0.9, 0.2]])
    ids = [np.arange(4), np.arange(4, 7)]
    arrays = [X0, X1]
    if drop is not None:
        keep = ids[0] != drop
        arrays, ids = [X0[keep], X1], [ids[0][keep], ids[1]]
    return fedcore.HorizontalFederation(arrays, ids)


def test_fit_then_remove_is_distributed_as_refit():
    """Uniform server data, exact coupled update: after a removal the clients' seeds (a
    chi-square over their joint outcomes) and the server's centers (KS on the sorted first
    coordinates) are distributed as a fresh fit on the remaining points."""
    n_trials = 1500
    removed = 2
    seeds_a, seeds_b = collections.Counter(), collections.Counter()
    lo_a, lo_b = [], []
    bounds = (np.zeros(2), np.ones(2))
    for s in range(n_trials):
        m = MUFC(2, client_clusters=2, gamma=0.25, bounds=bounds, secure=False,
                 server_data="uniform", server_n_init=1, random_state=s).fit(_tiny_federation())
        m.remove(0, [removed])
        r = MUFC(2, client_clusters=2, gamma=0.25, bounds=bounds, secure=False,
                 server_data="uniform", server_n_init=1, server_update="retrain",
                 random_state=10**6 + s).fit(_tiny_federation(drop=removed))
        for model, seeds, lows in ((m, seeds_a, lo_a), (r, seeds_b, lo_b)):
            seeds[tuple(tuple(model.client_model(l).center_ids_.tolist())
                        for l in model.client_ids_)] += 1
            lows.append(np.sort(model.cluster_centers_[:, 0])[0])
    keys = sorted(set(seeds_a) | set(seeds_b))
    table = np.array([[seeds_a[k] for k in keys], [seeds_b[k] for k in keys]])
    assert table.shape[1] >= 3
    assert stats.chi2_contingency(table).pvalue > ALPHA
    assert stats.ks_2samp(lo_a, lo_b).pvalue > ALPHA


def test_a_small_removal_is_a_coupled_refit():
    X, y, _ = fedcore.datasets.make_gaussian_mixture(3000, 3, 5, random_state=0)
    fed = fedcore.partition(X, 10, "noniid", labels=y, clusters_per_client=3, random_state=0)
    model = MUFC(5, secure=False, server_data="uniform", random_state=3).fit(fed)
    before = model._uniform
    client = model.client_model(4)
    plain = int(np.setdiff1d(client.sample_ids_, client.center_ids_)[0])
    model.remove(4, [plain])
    after = model._uniform
    assert after.points.shape[0] == before.points.shape[0] - 1
    same = np.isin(after.keys.view([("", after.keys.dtype)] * after.keys.shape[1]).ravel(),
                   before.keys.view([("", before.keys.dtype)] * before.keys.shape[1]).ravel())
    assert same.sum() >= before.points.shape[0] - 1 - 2 * model.client_clusters_
    assert model._coupled.n_redrawn_ < model.server_n_init   # most restarts kept their seeds
    assert model.aggregate_[1].sum() == after.points.shape[0]


@pytest.mark.parametrize("update", ["retrain", "lazy"])
def test_other_server_updates_draw_fresh_points(update):
    X, _, _ = fedcore.datasets.make_gaussian_mixture(300, 2, 3, random_state=0)
    fed = fedcore.partition(X, 3, "iid", random_state=0)
    model = MUFC(3, secure=False, server_data="uniform", server_update=update,
                 random_state=0).fit(fed)
    assert model._uniform is None and model._coupled is None
