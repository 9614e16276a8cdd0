"""DistDim (Ding et al. 2016): grid of local-center products against the reference, quality on
separated data, coreset runs, communication and errors."""
import numpy as np
import pytest

import fedcore
from fedcore.federation.ledger import SERVER
from fedcore.algorithms.vfl import uniform_coreset, vkmc_coreset
from fedcore.algorithms.vfl.distdim import DistDim, _cells
from tests.reference.coreset_reference import distdim_reference


def _data(n=1500, d=4, k=3, std=0.02, seed=1, weights=None):
    X, y, centers = fedcore.datasets.make_gaussian_mixture(n, d, k, cluster_std=std,
                                                           weights=weights, random_state=seed)
    return X, y, centers


def test_grid_cells_match_reference():
    X, _, _ = _data(n=400, d=5)
    vfed = fedcore.VerticalFederation.from_columns(X, splits=[2, 1, 2])
    model = DistDim(3, client_clusters=[2, 3, 4], random_state=0).fit(vfed)
    # Each row's local labels, recomputed from the fitted local centers.
    local = [np.argmin(((vfed.party(j)[:, None, :] - C[None]) ** 2).sum(axis=2), axis=1)
             for j, C in enumerate(model.local_centers_)]
    ref = distdim_reference(local, model.local_centers_, np.ones(400))
    assert len(ref) == model.cell_centers_.shape[0]
    got = {tuple(p.round(12)): w for p, w in zip(model.cell_centers_, model.cell_weights_)}
    for point, weight in ref.values():
        assert got[tuple(point.round(12))] == weight
    assert model.cell_weights_.sum() == 400


def test_cells_codes_and_fallback_agree():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=(200, 4))
    cells, inverse = _cells(labels, [3, 3, 3, 3])
    np.testing.assert_array_equal(cells[inverse], labels)
    big = [2 ** 20] * 4  # product beyond int64 codes: np.unique(axis=0) path
    cells2, inverse2 = _cells(labels, big)
    np.testing.assert_array_equal(cells2[inverse2], labels)
    assert cells.shape == cells2.shape


def test_distdim_recovers_separated_clusters_and_counts_messages():
    X, y, centers = _data()
    vfed = fedcore.VerticalFederation.from_columns(X, splits=[2, 2])
    model = DistDim(3, random_state=0).fit(vfed)
    # each true center is matched by a found one
    gaps = ((model.cluster_centers_[:, None] - centers[None]) ** 2).sum(axis=2)
    assert gaps.min(axis=0).max() < 1e-3
    assert model.labels_.shape == (1500,)
    pred = model.predict(X)
    np.testing.assert_array_equal(pred, model.labels_)  # grid points sit on the data's clusters
    assert model.comm_.n_elements == 2 * 1500 + 3 * 2 + 3 * 2
    km = fedcore.KMeans(3, random_state=0, n_init=3).fit(X)
    assert fedcore.metrics.inertia(X, model.cluster_centers_) <= 1.05 * km.inertia_


def test_distdim_on_coreset():
    X, _, _ = _data(n=3000, weights=[10, 3, 1])
    vfed = fedcore.VerticalFederation.from_columns(X, splits=[1, 3])
    cs = vkmc_coreset(vfed, 300, 3, random_state=0)
    model = DistDim(3, n_init=5, random_state=0).fit(vfed, coreset=cs)
    assert model.labels_.shape == (300,)
    np.testing.assert_allclose(model.cell_weights_.sum(), cs.weights.sum())
    # coreset messages first, then the DIS weights to each party (which they need for their
    # weighted k-means and cannot know), labels (m per party) and centers
    assert model.comm_.n_elements == cs.comm.n_elements + 2 * 300 + 2 * 300 + 3 * 1 + 3 * 3
    start = cs.comm.n_rounds
    assert [(e.round, e.sender, e.receiver, e.kind, e.n_elements)
            for e in model.comm_.messages[len(cs.comm.messages):]] == [
        (start, SERVER, 0, "weights", 300), (start, 0, SERVER, "labels+centers", 300 + 3),
        (start, SERVER, 1, "weights", 300), (start, 1, SERVER, "labels+centers", 300 + 9)]
    assert model.comm_.messages[:len(cs.comm.messages)] == cs.comm.messages
    full = DistDim(3, n_init=5, random_state=0).fit(vfed)
    cost_full = fedcore.metrics.inertia(X, full.cluster_centers_)
    assert fedcore.metrics.inertia(X, model.cluster_centers_) <= 1.1 * cost_full
    uni = DistDim(3, random_state=0).fit(vfed, coreset=uniform_coreset(vfed, 300, random_state=0))
    assert uni.comm_.n_elements == 300 * 2 + 2 * 300 + 12


def test_distdim_errors():
    X, _, _ = _data(n=50)
    vfed = fedcore.VerticalFederation.from_columns(X, splits=[2, 2])
    with pytest.raises(TypeError, match="'federation' must be a VerticalFederation"):
        DistDim(2).fit(X)
    with pytest.raises(ValueError, match="'n_clusters' must be <= 50, got 60"):
        DistDim(60).fit(vfed)
    with pytest.raises(ValueError, match="'client_clusters' must have one entry per party"):
        DistDim(2, client_clusters=[2, 2, 2]).fit(vfed)
    with pytest.raises(ValueError, match="leaves 1 occupied grid cells"):
        DistDim(3, client_clusters=1).fit(vfed)
    with pytest.raises(TypeError, match="'coreset' must be a Coreset"):
        DistDim(2).fit(vfed, coreset=[1, 2])
    with pytest.raises(ValueError, match="X has 3 features"):
        DistDim(2, random_state=0).fit(vfed).predict(np.ones((2, 3)))


def test_distdim_same_seed_same_output():
    X, _, _ = _data(n=500)
    vfed = fedcore.VerticalFederation.from_columns(X, splits=[3, 1])
    a = DistDim(3, random_state=4).fit(vfed)
    b = DistDim(3, random_state=4).fit(vfed)
    assert a.cluster_centers_.tobytes() == b.cluster_centers_.tobytes()
    assert DistDim(3).get_params()["client_clusters"] is None
