"""Removals are transactions: a failure at any step leaves the model bit for bit as it was, and
the next request gives what it would have given without the failure."""
import pickle

import numpy as np
import pytest

import fedcore
from fedcore.algorithms.base import all_or_nothing
from fedcore.algorithms.baselines import dckmeans
from fedcore.algorithms.mufc import aggregation, coupled, unlearning


class Injected(RuntimeError):
    """The failure a test injects."""


def _federation():
    X, y, _ = fedcore.datasets.make_gaussian_mixture(1200, 3, 4, cluster_std=0.05,
                                                     random_state=1)
    return fedcore.partition(X, n_clients=6, scheme="noniid", labels=y, clusters_per_client=2,
                             random_state=1)


def _fail(monkeypatch, owner, name):
    """Make ``owner.name`` raise when called."""
    def failing(*args, **kwargs):
        raise Injected(name)
    monkeypatch.setattr(owner, name, failing)


# Steps of a MUFC removal round, in order: the client's re-seed (after its weights changed), the
# server's decoding (after every client encoded and the ledger recorded), the server's coupled
# re-fit (after its random stream advanced and some restarts were redrawn).
# Removing a client re-seeds no client, so its round has only the server's steps.
CASES = [("center", unlearning, "seed_lazy"), ("center", aggregation.SCMAAggregator, "combine"),
         ("center", coupled.CoupledKMeans, "_lloyd_all"),
         ("clients", aggregation.SCMAAggregator, "combine"),
         ("clients", coupled.CoupledKMeans, "_lloyd_all")]


@pytest.mark.parametrize("request_kind, owner, name", CASES,
                         ids=[f"{kind}-{name}" for kind, _, name in CASES])
def test_mufc_failed_round_changes_nothing(monkeypatch, request_kind, owner, name):
    fed = _federation()
    model = fedcore.MUFC(4, client_clusters=2, random_state=0).fit(fed)
    twin = pickle.loads(pickle.dumps(model))
    before = pickle.dumps(model)

    def request(m):
        if request_kind == "clients":
            return m.remove_clients([3])
        return m.remove(2, [int(m._clients[2].center_ids_[0])])  # a center: client re-seeds

    with monkeypatch.context() as patch:
        _fail(patch, owner, name)
        with pytest.raises(Injected):
            request(model)
    assert pickle.dumps(model) == before
    got, want = request(model), request(twin)
    assert (got.client_retrained, got.n_removed) == (want.client_retrained, want.n_removed)
    np.testing.assert_array_equal(model.cluster_centers_, twin.cluster_centers_)
    np.testing.assert_array_equal(model.aggregate_[1], twin.aggregate_[1])
    assert model.comm_.summary() == twin.comm_.summary()


def test_mufc_refuses_a_removal_that_leaves_too_few_points_before_any_change():
    rng = np.random.default_rng(0)
    fed = fedcore.HorizontalFederation.from_arrays([rng.random((4, 2)), rng.random((4, 2))])
    model = fedcore.MUFC(6, client_clusters=1, random_state=0).fit(fed)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="leave 5 point.*fewer than n_clusters = 6"):
        model.remove(0, [0, 1, 2])
    assert pickle.dumps(model) == before
    assert model.remove(0, [0, 1]).n_removed == 2


def test_mufc_refuses_bounds_that_do_not_contain_the_data():
    fed = _federation()
    with pytest.raises(ValueError, match="'bounds' does not contain client 0's data"):
        fedcore.MUFC(4, bounds=(np.zeros(3), np.full(3, 0.1))).fit(fed)
    with pytest.raises(ValueError, match=r"'bounds' must be \(low, high\) of shape \(3,\)"):
        fedcore.MUFC(4, bounds=(np.zeros(2), np.ones(2))).fit(fed)
    with pytest.raises(ValueError, match="'bounds' must be a pair"):
        fedcore.MUFC(4, bounds=np.ones(3)).fit(fed)


def test_dckmeans_failed_removal_changes_nothing(monkeypatch):
    fed = _federation()
    model = fedcore.DCKMeans(4, client_clusters=2, random_state=0).fit(fed)
    twin = pickle.loads(pickle.dumps(model))
    before = pickle.dumps(model)
    ids = [int(i) for i in fed.client(1)[1][:3]]
    with monkeypatch.context() as patch:
        _fail(patch, dckmeans.DCKMServer, "_root")  # the server step, after the client's
        with pytest.raises(Injected):
            model.remove(1, ids)
    assert pickle.dumps(model) == before
    model.remove(1, ids)
    twin.remove(1, ids)
    np.testing.assert_array_equal(model.cluster_centers_, twin.cluster_centers_)


@pytest.mark.parametrize("ids, error, match", [
    ([5, 5], ValueError, "repeats id"),
    ([5.7], TypeError, "must hold integers"),
    (np.array([2**64 - 1], dtype=np.uint64), ValueError, "above the largest id"),
])
def test_removal_ids_are_integers_without_repeats(ids, error, match):
    fed = _federation()
    ids_1 = fed.client(1)[1]
    ids = np.asarray(ids)
    if ids.dtype.kind != "u":
        ids = ids - 5 + int(ids_1[0])
    for model in (fedcore.DCKMeans(4, client_clusters=2, random_state=0).fit(fed),
                  fedcore.MUFC(4, client_clusters=2, secure=False, random_state=0).fit(fed)):
        before = pickle.dumps(model)
        with pytest.raises(error, match=match):
            model.remove(1, ids)
        assert pickle.dumps(model) == before
    with pytest.raises(TypeError, match="'client_id'"):
        fedcore.DCKMeans(4, client_clusters=2, random_state=0).fit(fed).remove(1.0, ids_1[:1])


def test_all_or_nothing_restores_attributes_and_the_ledger():
    class Thing:
        pass
    thing = Thing()
    thing.values = np.arange(3)
    thing.table = {"a": 1}
    thing.comm_ = fedcore.CommLedger()
    with pytest.raises(Injected):
        with all_or_nothing(thing, deep=("values", "created"), shallow=("table",)):
            thing.values[0] = 99
            thing.table["b"] = 2
            thing.created = 1
            thing.comm_.record(0, sender=0, receiver="server", kind="x", n_elements=1)
            raise Injected()
    assert thing.values.tolist() == [0, 1, 2] and thing.table == {"a": 1}
    assert not hasattr(thing, "created") and thing.comm_.messages == []


@pytest.mark.parametrize("name", ["seed_lazy", "weighted_lloyd"])
@pytest.mark.parametrize("hit_center", [True, False])
def test_unlearnable_kmeans_failed_removal_changes_nothing(monkeypatch, name, hit_center):
    X, _, _ = fedcore.datasets.make_gaussian_mixture(400, 3, 4, cluster_std=0.05,
                                                     random_state=2)
    model = fedcore.UnlearnableKMeans(4, refine=True, random_state=0).fit(X)
    twin = pickle.loads(pickle.dumps(model))
    before = pickle.dumps(model)
    ids = [int(model.center_ids_[1])] if hit_center else \
        [int(np.setdiff1d(np.arange(400), model.center_ids_)[0])]
    if name == "seed_lazy" and not hit_center:
        name = "weighted_lloyd"  # no center hit: no re-seed, only the refinement
    with monkeypatch.context() as patch:
        _fail(patch, unlearning, name)
        with pytest.raises(Injected):
            model.remove(ids)
    assert pickle.dumps(model) == before
    got, want = model.remove(ids), twin.remove(ids)
    assert got == want
    np.testing.assert_array_equal(model.cluster_centers_, twin.cluster_centers_)
