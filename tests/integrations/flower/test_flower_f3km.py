"""DisBCDKM and F3KM on Flower's simulation engine: the in-process model, and rounds that fail
loudly.

- With the same seeds a Flower run (one node per party, 10 and 100 parties) gives the labels,
  centers, SSE and CommLedger of ``BCDKM.fit`` / ``FairKMeans.fit`` on the same
  ``VerticalFederation``. The F3KM runs split blocks, so every kind of the server's decisions
  (apply held proposals, apply sent labels, drop proposals) travels to the nodes.
- A party that raises in a later sweep makes the server raise FlowerRoundError naming its node;
  nothing is published.
- Built from settings alone (a ``flwr run`` deployment), the server writes the same model to
  ``output-path``.
- Without the engine: vertical k-means++ draws the rows of the joined lazy k-means++ (bit for bit
  with one party; on continuous data with several), nodes read ``data-path`` files, run configs
  build the estimators, and the published model is written to ``output-path``.
"""
import numpy as np
import pytest

flwr = pytest.importorskip("flwr", reason="the Flower apps need the optional 'flower' extra")
pytest.importorskip("ray", reason="Flower's simulation engine needs flwr[simulation]")

from fedcore.algorithms.f3km.party import CDParty  # noqa: E402
from fedcore.algorithms.f3km.server import vertical_kmeans_plusplus  # noqa: E402
from fedcore.algorithms.f3km.cdkm import BCDKM  # noqa: E402
from fedcore.algorithms.f3km import FairKMeans  # noqa: E402
from fedcore.algorithms.kmeans.seeding import seed_lazy  # noqa: E402
from fedcore.integrations.flower import FlowerRoundError  # noqa: E402
from fedcore.integrations.flower import _f3km_node, f3km  # noqa: E402


def _data(n_parties, n_samples, seed):
    # sensitive attributes on party 1 and on the last party; the others hold none
    return {"num-partitions": n_parties, "n-samples": n_samples,
            "n-features": max(10, n_parties), "data-clusters": 3, "groups-per-attribute": "2,3",
            "bias": 0.6, "data-seed": seed, "attribute-parties": f"1,{n_parties - 1}"}


def _ledger(model):
    return [(m.round, m.sender, m.receiver, m.kind, m.n_elements) for m in model.comm_.messages]


def _assert_same(result, model):
    np.testing.assert_array_equal(result.labels_, model.labels_)
    np.testing.assert_array_equal(result.cluster_centers_, model.cluster_centers_)
    np.testing.assert_array_equal(np.hstack(result.center_blocks_), model.cluster_centers_)
    assert result.inertia_ == model.inertia_
    assert result.n_iter_ == model.n_iter_ and result.n_ranges_ == model.n_ranges_
    np.testing.assert_array_equal(result.objective_history_, model.objective_history_)
    assert result.comm_.n_rounds == model.comm_.n_rounds
    assert _ledger(result) == _ledger(model)


@pytest.mark.parametrize("n_parties, n_samples, seed, block", [(10, 300, 1, 150),
                                                               (100, 200, 0, 100)])
def test_disbcdkm_same_model_as_in_process(n_parties, n_samples, seed, block, tmp_path):
    data = _data(n_parties, n_samples, seed)
    estimator = BCDKM(3, block_size=block, random_state=seed)
    model = BCDKM(**estimator.get_params()).fit(f3km.vertical_from_settings(data))
    assert model.n_iter_ >= 2  # rows move: not decided by the seeding alone
    if n_parties == 10:  # as a deployment: every setting from the config, model to a file
        path = tmp_path / "model.npz"
        apps = f3km.bcdkm_apps(None, dict(data, **{"n-clusters": 3, "block-size": block,
                                                   "random-seed": seed,
                                                   "output-path": str(path)}))
    else:
        apps = f3km.bcdkm_apps(estimator, data)
    result = apps.simulate(n_parties)
    _assert_same(result, model)
    assert len(result.node_ids_) == n_parties == len(set(result.node_ids_))
    if n_parties == 10:
        saved = f3km.load_f3km_result(path)
        np.testing.assert_array_equal(saved.labels_, model.labels_)
        assert saved.comm_ == model.comm_.summary()


@pytest.mark.parametrize("n_parties, n_samples, block", [(10, 300, 150), (100, 200, 100)])
def test_f3km_same_model_as_in_process(n_parties, n_samples, block):
    data = _data(n_parties, n_samples, 2)
    estimator = FairKMeans(3, delta=0.3, block_size=block, rho=1.0, max_iter=2, random_state=2)
    model = FairKMeans(**estimator.get_params()).fit(f3km.vertical_from_settings(data))
    assert model.n_ranges_ > model.n_iter_ * (n_samples // block)  # some block was split
    assert model.violation_history_[-1] < model.violation_history_[0] / 4
    result = f3km.fair_kmeans_apps(estimator, data).simulate(n_parties)
    _assert_same(result, model)
    np.testing.assert_array_equal(result.violation_history_, model.violation_history_)
    np.testing.assert_array_equal(result.balance_, model.balance_)
    np.testing.assert_array_equal(result.alpha_, model.alpha_)
    np.testing.assert_array_equal(result.beta_, model.beta_)


def test_f3km_paper_stopping_rule_on_flower_as_in_process():
    data = _data(10, 300, 2)
    estimator = FairKMeans(3, delta=0.3, block_size=150, rho=1.0, max_iter=20, violation=5.0,
                           stop="paper", random_state=2)
    model = FairKMeans(**estimator.get_params()).fit(f3km.vertical_from_settings(data))
    fedcore_rule = FairKMeans(**dict(estimator.get_params(), stop="fedcore")).fit(
        f3km.vertical_from_settings(data))
    assert model.n_iter_ < fedcore_rule.n_iter_  # the rules differ here
    result = f3km.fair_kmeans_apps(estimator, data).simulate(10)
    _assert_same(result, model)
    np.testing.assert_array_equal(result.violation_history_, model.violation_history_)


def _fail_in_sweep(partition, sweep):
    def objectives(msg, context, defaults):
        pid = int(context.node_config["partition-id"])
        if pid == partition and int(msg.content["config"]["sweep"]) == sweep:
            raise RuntimeError(f"disk failure on partition {pid}")
        return f3km.handle_message(msg, context, defaults)
    return objectives


def test_party_failing_in_a_later_sweep_names_its_node_and_publishes_nothing():
    data = _data(10, 300, 1)
    estimator = BCDKM(3, block_size=150, random_state=1)
    apps = f3km.bcdkm_apps(estimator, data, handlers={"objectives": _fail_in_sweep(3, 2)})
    with pytest.raises(FlowerRoundError, match="disk failure on partition 3") as info:
        apps.simulate(10)
    error = info.value
    assert error.stage.startswith("train.objectives sweep 2 ")
    assert len(error.failures) == 1
    (node,) = error.failures
    assert f"node {node}" in str(error) and "no model was published" in str(error)
    assert apps.result is None


# ------------------------------------------------------------------ without the engine
@pytest.mark.parametrize("seed", range(8))
def test_vertical_kmeans_plusplus_draws_the_joined_rows(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(20, 400)), int(rng.integers(2, 7))
    k = int(rng.integers(2, 70)) if seed % 2 else int(rng.integers(1, 8))  # > 32: refreshes
    X = rng.normal(size=(n, d)) + rng.integers(0, 4, size=(n, 1)) * 2.5
    if seed % 4 == 0:
        X = np.round(X)  # duplicates and ties: partial sums of integers are exact
    for widths in ([d], [1, d - 1], [d // 2, d - d // 2]):
        edges = np.cumsum([0] + widths)
        labels = np.zeros(n, dtype=np.int64)
        parties = [CDParty(np.ascontiguousarray(X[:, a:b]), k, labels)
                   for a, b in zip(edges[:-1], edges[1:])]

        def distances(t, row):
            total = np.zeros(n)
            for p in parties:
                total += p.seed_distances(row)
            return total

        rows, got = vertical_kmeans_plusplus(n, k, np.random.default_rng(seed), distances)
        want_rows, want, _ = seed_lazy(X, np.ones(n), np.random.default_rng(seed), k)
        np.testing.assert_array_equal(rows, want_rows)
        np.testing.assert_array_equal(got, want)


def test_node_reads_data_path_and_settings_build_estimators(tmp_path):
    fed = f3km.vertical_from_settings(_data(3, 50, 0))
    path = tmp_path / "party1.npz"
    np.savez(path, X=fed.party(1), groups=np.column_stack([fed.groups(1)[0], fed.groups(1)[0]]))
    X, attributes, pid, n_parties = _f3km_node._local_block(
        {"partition-id": 1, "num-partitions": 3, "data-path": str(path)})
    np.testing.assert_array_equal(X, fed.party(1))
    assert pid == 1 and n_parties == 3 and len(attributes) == 2
    np.testing.assert_array_equal(attributes[1], fed.groups(1)[0])
    with pytest.raises(ValueError, match="'n-features' must be >= num-partitions = 12.*got 10"):
        f3km.vertical_from_settings(_data(12, 50, 0) | {"n-features": 10})
    with pytest.raises(ValueError, match="'attribute-parties'.*got 5"):
        f3km.vertical_from_settings(_data(3, 50, 0) | {"attribute-parties": "0,5"})

    cfg = dict(f3km.DEFAULTS, **{"method": "fair-kmeans", "n-clusters": 4, "block-size": "20",
                                 "max-iter": 7, "random-seed": 5, "alpha": "0.9, 0.8", "beta": ""})
    model = f3km._estimator_from_settings(cfg)
    assert isinstance(model, FairKMeans) and model.block_size == 20 and model.max_iter == 7
    assert model.alpha == [0.9, 0.8] and model.beta is None and model.random_state == 5
    assert isinstance(f3km._estimator_from_settings(dict(f3km.DEFAULTS)), BCDKM)
    with pytest.raises(ValueError, match="'method'.*'kmeans'"):
        f3km._estimator_from_settings(dict(f3km.DEFAULTS, method="kmeans"))
    with pytest.raises(TypeError, match="'estimator' must be a FairKMeans, got BCDKM"):
        f3km.fair_kmeans_apps(BCDKM(3))
    assert isinstance(f3km.server_app, flwr.serverapp.ServerApp)
    assert isinstance(f3km.client_app, flwr.clientapp.ClientApp)


def test_published_model_is_written_to_output_path_and_read_back(tmp_path):
    model = FairKMeans(3, delta=0.3, block_size=50, max_iter=2, random_state=0).fit(
        f3km.vertical_from_settings(_data(3, 50, 0)))
    attributes = {name: getattr(model, name) for name in vars(model) if name.endswith("_")}
    blocks = [model.cluster_centers_[:, :4], model.cluster_centers_[:, 4:]]
    result = f3km.F3KMFlowerResult(**attributes, center_blocks_=blocks, node_ids_=[7, 9],
                                   n_messages_=12)
    f3km._save_result(tmp_path / "model.npz", result)
    saved = f3km.load_f3km_result(tmp_path / "model.npz")
    np.testing.assert_array_equal(saved.labels_, model.labels_)
    np.testing.assert_array_equal(saved.center_blocks_[1], blocks[1])
    np.testing.assert_array_equal(saved.violation_history_, model.violation_history_)
    np.testing.assert_array_equal(saved.balance_, model.balance_)
    assert saved.inertia_ == model.inertia_ and saved.n_iter_ == model.n_iter_
    assert saved.comm_ == model.comm_.summary()
    assert saved.node_ids_ == [7, 9] and saved.n_messages_ == 12
