"""Uniform server data ([MUFC] Alg. 1 line 6, Alg. 4): with server_update="exact" the server
re-fits on a fresh sample (a coupled re-fit costs more there, see MUFC's docstring), and the model
after a removal is distributed as a fresh fit on the remaining points."""
import collections

import numpy as np
import pytest
from scipy import stats

import fedcore
from fedcore.algorithms.mufc import MUFC
from tests.algorithms.mufc.test_mufc import _tiny_federation

ALPHA = 1e-3  # false-alarm rate of each seeded test below

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


@pytest.mark.parametrize("update", ["exact", "retrain"])
def test_every_removal_resamples_the_server_points(update):
    """The server's k-means runs on a new uniform sample after each removal (no state kept)."""
    X, y, _ = fedcore.datasets.make_gaussian_mixture(600, 2, 3, random_state=0)
    fed = fedcore.partition(X, 3, "iid", random_state=0)
    model = MUFC(3, secure=False, server_data="uniform", server_update=update,
                 random_state=0).fit(fed)
    client = model.client_model(1)
    plain = int(np.setdiff1d(client.sample_ids_, client.center_ids_)[0])
    before = model.cluster_centers_.copy()
    report = model.remove(1, [plain])
    assert model._coupled is None and report.server_recomputed
    assert not np.array_equal(before, model.cluster_centers_)   # a new sample, new centers
