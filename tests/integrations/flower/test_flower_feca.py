"""FeCA on Flower: the one-round apps give the in-process model bit for bit, failed or silent
nodes are named and publish nothing, the deployment's file and run config round-trip.

Five simulations (Ray backend), about ten seconds each; everything else runs without Flower's
engine.
"""
import os
import time
import warnings

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the Flower apps need the optional dependency flwr")

from flwr.app import ConfigRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402

from fedcore.algorithms.feca import FeCA, FewerGroupsWarning  # noqa: E402
from fedcore.integrations.flower import FlowerRoundError  # noqa: E402
from fedcore.integrations.flower._common import federation_from_settings  # noqa: E402
from fedcore.algorithms.clients import client_seeds  # noqa: E402
from fedcore.algorithms.feca import FeCASetup  # noqa: E402
from fedcore.federation.protocol import ProtocolError  # noqa: E402
from fedcore.integrations.flower.feca import (client_train, estimator_from_config,  # noqa: E402
                                              feca_apps, load_feca_result, save_feca_result)
from fedcore.integrations.flower.roles import (HELLO, decode, encode,  # noqa: E402
                                               map_partitions)


def assert_same_model(got, want):
    np.testing.assert_array_equal(got.cluster_centers_, want.cluster_centers_)
    assert got.n_groups_ == want.n_groups_
    for name in ("client_centers_", "client_radii_", "client_removed_", "groups_"):
        a, b = getattr(got, name), getattr(want, name)
        assert len(a) == len(b), name
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    assert got.comm_.messages == want.comm_.messages
    assert got.get_params() == want.get_params()


def _simulate(apps, n_nodes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Ray's, not ours
        start = time.perf_counter()
        try:
            return apps.simulate(n_nodes)
        finally:
            print(f"{n_nodes}-node simulation: {time.perf_counter() - start:.1f} s")


# ------------------------------------------------------------------------------------------
# Simulations
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("data, estimator", [
    ({"dataset": "s1", "num-partitions": 10, "partition": "dirichlet", "alpha": 0.3,
      "data-seed": 3}, FeCA(15, random_state=7)),
    # Every client setting travels in the request: non-default values for each of them (the
    # client seeding in the third case; init="random" takes no k-means++ candidates).
    ({"dataset": "gaussian", "num-partitions": 100, "partition": "iid", "data-seed": 1},
     FeCA(10, client_clusters=12, radius="theoretical", init="random", n_init=2, max_iter=50,
          tol=1e-6, random_state=11)),
    ({"dataset": "s2", "num-partitions": 5, "partition": "iid", "data-seed": 2},
     FeCA(15, n_local_trials=None, random_state=3)),
], ids=["s1-dirichlet-10", "gaussian-iid-100", "s2-vanilla-seeding-5"])
def test_flower_run_equals_in_process_fit(data, estimator):
    n = data["num-partitions"]
    want = FeCA(**estimator.get_params()).fit(federation_from_settings(data))
    apps = feca_apps(estimator, data, timeout=120)
    got = _simulate(apps, n)
    assert got is apps.result and got is not estimator
    assert_same_model(got, want)
    assert got.comm_.n_rounds == 1 and got.comm_.n_messages == n
    X, _ = federation_from_settings(data).to_array()
    np.testing.assert_array_equal(got.predict(X), want.predict(X))


def test_failing_node_is_named_and_nothing_is_published():
    data = {"dataset": "s1", "num-partitions": 3, "data-seed": 0}
    apps = feca_apps(FeCA(15, random_state=0), data, timeout=120)
    broken = ClientApp()

    @broken.train()
    def train(msg, context):
        hello = msg.content["scalars"]["fedcore-type"] == HELLO
        if int(context.node_config["partition-id"]) == 1 and not hello:
            raise RuntimeError(f"node {context.node_id} lost its disk")
        return client_train(msg, context)

    apps.client_app = broken
    with pytest.raises(FlowerRoundError, match="no model was published") as info:
        _simulate(apps, 3)
    assert apps.result is None
    [(node, reason)] = info.value.failures.items()
    assert f"node {node} lost its disk" in reason
    assert info.value.stage == "train 0"


def test_silent_nodes_are_named_after_the_timeout():
    """Nodes that answer too late: the round ends at the timeout, naming each of them, whether
    the reply is missing or the link reports the message expired. (Every node is late: how long
    a healthy node takes includes starting its actor, unknown here.)"""
    data = {"dataset": "s1", "num-partitions": 2, "data-seed": 0}
    apps = feca_apps(FeCA(15, random_state=0), data, timeout=1.0)
    slow = ClientApp()

    @slow.train()
    def train(msg, context):
        time.sleep(3.0)
        return client_train(msg, context)

    apps.client_app = slow
    with pytest.raises(FlowerRoundError) as info:
        _simulate(apps, 2)
    assert apps.result is None
    failures = info.value.failures
    # (A message whose time to live ran out first comes back as the link's error, in brackets.)
    assert len(failures) == 2
    assert all(reason.startswith("no reply within 1.0 s") for reason in failures.values())
    assert all(str(node) in str(info.value) for node in failures)


# ------------------------------------------------------------------------------------------
# Without the simulation engine
# ------------------------------------------------------------------------------------------

def _hello(pid, parts=3):
    return RecordDict({"scalars": ConfigRecord({"partition-id": pid, "num-partitions": parts})})


def test_nodes_are_mapped_to_partitions_and_checked():
    assert map_partitions({30: _hello(2), 10: _hello(0), 20: _hello(1)}, 3) == [10, 20, 30]
    with pytest.raises(FlowerRoundError) as info:
        map_partitions({10: _hello(0), 20: _hello(1), 30: _hello(1)}, 3)
    assert set(info.value.failures) == {20, 30}
    assert "also claimed by node" in info.value.failures[30]
    with pytest.raises(FlowerRoundError) as info:
        map_partitions({10: _hello(0), 20: _hello(1), 30: _hello(3)}, 3)
    assert set(info.value.failures) == {30}
    with pytest.raises(FlowerRoundError) as info:
        map_partitions({10: _hello(0), 20: _hello(1, parts=4), 30: _hello(2)}, 3)
    assert info.value.failures == {20: "num-partitions 4, the server runs 3 clients"}


class _Channel:
    """Replies as given, to test what a server role does with them."""

    def __init__(self, replies):
        self.replies, self.n_clients = replies, len(replies)
        self.ledger = None

    def exchange(self, requests, round_number):
        return {l: self.replies[l] for l in requests}


def test_server_refuses_centroids_of_different_widths():
    from fedcore.algorithms.feca import FeCACentroids
    sent = [FeCACentroids(np.zeros((3, d)), np.ones(3), np.empty(0, dtype=np.int64))
            for d in (2, 3, 2)]
    with pytest.raises(ProtocolError, match="different widths"):
        FeCA(3, random_state=0).server_role().run(_Channel(sent))
    with pytest.raises(ProtocolError, match="expected a FeCACentroids"):
        FeCA(3, random_state=0).server_role().run(_Channel([FeCASetup(0, 3, "empirical",
                                                                      "random", 1, 1, 0.0, 1,
                                                                      True)] * 2))


def test_saved_model_loads_back_equal(tmp_path):
    data = {"dataset": "s1", "num-partitions": 4, "data-seed": 0}
    fed = federation_from_settings(data)
    model = FeCA(15, client_clusters=18, random_state=3).fit(fed)
    path = tmp_path / "model"  # no suffix: the file keeps the name it is given
    save_feca_result(model, path)
    assert os.path.exists(path)
    loaded = load_feca_result(path)
    assert_same_model(loaded, model)
    assert loaded.comm_.summary() == model.comm_.summary()
    X, _ = fed.to_array()
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_saved_model_with_fewer_groups_loads_back_unpadded(tmp_path):
    X = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [0.1, 0.1]])
    with pytest.warns(FewerGroupsWarning):
        model = FeCA(3, client_clusters=1, random_state=0).fit([X, X + 0.01])
    assert model.n_groups_ < 3
    save_feca_result(model, tmp_path / "few.npz")
    loaded = load_feca_result(tmp_path / "few.npz")
    assert loaded.cluster_centers_.shape == (model.n_groups_, 2)
    assert_same_model(loaded, model)


def test_run_config_describes_the_estimator():
    est = estimator_from_config({"n-clusters": 15, "num-partitions": 2})
    assert est.get_params() == FeCA(15).get_params()
    est = estimator_from_config({"n-clusters": 4, "client-clusters": 6, "radius": "theoretical",
                                 "init": "random", "n-init": 3, "max-iter": 20, "tol": 0.0,
                                 "random-seed": 5})
    assert est.get_params() == FeCA(4, client_clusters=6, radius="theoretical", init="random",
                                    n_init=3, max_iter=20, tol=0.0, random_state=5).get_params()
    for value, expected in [(1, 1), ("3", 3), ("auto", "auto")]:
        est = estimator_from_config({"n-clusters": 4, "n-local-trials": value})
        assert est.n_local_trials == expected
    with pytest.raises(ValueError, match="n_local_trials"):
        estimator_from_config({"n-clusters": 3, "n-local-trials": "best"})
    with pytest.raises(ValueError, match="n_local_trials"):
        estimator_from_config({"n-clusters": 3, "n-local-trials": 0})
    with pytest.raises(ValueError, match="'n-clusters' is required"):
        estimator_from_config({"num-partitions": 2})
    with pytest.raises(ValueError, match="radius"):
        estimator_from_config({"n-clusters": 3, "radius": "widest"})


def _context(pid, data, state=None):
    from flwr.app import Context
    return Context(run_id=1, node_id=100 + pid, node_config={"partition-id": pid},
                   state=RecordDict() if state is None else state, run_config=dict(data))


def _message(content):
    """A server message as a node receives it (metadata given: no Flower run needed)."""
    from flwr.app import Message, Metadata
    return Message(content, metadata=Metadata(
        run_id=1, message_id="m1", src_node_id=0, dst_node_id=1, reply_to_message_id="",
        group_id="0", created_at=time.time(), ttl=600.0, message_type="train"))


@pytest.mark.parametrize("n_local_trials", [None, 1, 3, "auto"])
def test_client_reply_equals_the_in_process_client(n_local_trials):
    """The setup message carries the client seeding (greedy or vanilla k-means++) to every node:
    each node's reply, from the deployment ClientApp's handler, equals what that client computes
    in FeCA.fit, without the simulation engine."""
    data = {"dataset": "s1", "num-partitions": 3, "partition": "dirichlet", "alpha": 0.3,
            "data-seed": 2}
    estimator = FeCA(15, n_local_trials=n_local_trials, random_state=4)
    want = FeCA(**estimator.get_params()).fit(federation_from_settings(data))
    params = {key: value for key, value in estimator.server_role().params.items()
              if key != "n_clusters"}
    seeds = client_seeds(np.random.default_rng(4), 3)
    for pid in range(3):
        context = _context(pid, data)
        hello = client_train(_message(RecordDict({"scalars": ConfigRecord(
            {"fedcore-type": HELLO})})), context).content["scalars"]
        assert (hello["partition-id"], hello["num-partitions"]) == (pid, 3)
        setup = encode(FeCASetup(seed=seeds[pid], **params))
        reply = decode(client_train(_message(setup), context).content)
        np.testing.assert_array_equal(reply.centers, want.client_centers_[pid])
        np.testing.assert_array_equal(reply.radii, want.client_radii_[pid])
        np.testing.assert_array_equal(reply.removed, want.client_removed_[pid])
        assert reply.size() == (reply.centers.size + reply.radii.size,
                                64 * (reply.centers.size + reply.radii.size))


def test_feca_apps_checks_its_arguments():
    with pytest.raises(TypeError, match="'estimator' must be a FeCA"):
        feca_apps(object(), {"num-partitions": 2})
    with pytest.raises(TypeError, match="'data' must be a dict"):
        feca_apps(FeCA(3), [("num-partitions", 2)])
    with pytest.raises(ValueError, match="num-partitions"):
        feca_apps(FeCA(3), {"dataset": "s1"})
    with pytest.raises(ValueError, match="n_init"):
        feca_apps(FeCA(3, n_init=0), {"num-partitions": 2})
    with pytest.raises(ValueError, match="n_local_trials"):
        feca_apps(FeCA(3, n_local_trials=0), {"num-partitions": 2})
    with pytest.raises(ValueError, match="timeout"):
        feca_apps(FeCA(3), {"num-partitions": 2}, timeout=0)
