"""MUFC on Flower's simulation engine: the same model as in process, masked messages only, and
rounds that fail loudly."""
import numpy as np
import pytest

pytest.importorskip("flwr", reason="the Flower apps need the optional 'flower' extra")
pytest.importorskip("ray", reason="Flower's simulation engine needs flwr[simulation]")

from flwr.app import RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402

from fedcore import MUFC  # noqa: E402
from fedcore.integrations.flower import FlowerRoundError  # noqa: E402
from fedcore.integrations.flower import _common, mufc as flower_mufc  # noqa: E402

DATA = {"dataset": "gaussian", "partition": "noniid", "clusters-per-client": 5, "data-seed": 0}


def _federation(n_clients):
    return _common.federation_from_settings(dict(DATA, **{"num-partitions": n_clients}))


def _in_process(estimator, fed, removals):
    model = MUFC(**estimator.get_params()).fit(fed)
    vectors = {l: model._channel.clients[l].vector for l in model._active}  # the roles' vectors
    for client, ids in removals:
        if ids is None:
            model.remove_clients([client])
        else:
            model.remove(client, ids)
    return model, vectors


def _assert_same(result, model):
    np.testing.assert_array_equal(result.cluster_centers_, model.cluster_centers_)
    np.testing.assert_array_equal(result.aggregate_[0], model.aggregate_[0])
    np.testing.assert_array_equal(result.aggregate_[1], model.aggregate_[1])
    assert result.n_rounds_ == model.n_rounds_
    assert result.comm_.summary() == model.comm_.summary()


def test_same_model_as_in_process_10_clients_with_removals():
    fed = _federation(10)
    estimator = MUFC(10, client_clusters=5, random_state=3)
    probe = MUFC(**estimator.get_params()).fit(fed)
    center = int(probe._clients[1].center_ids_[0])   # forces client 1 to re-seed
    plain = int(np.setdiff1d(fed.client(2)[1], probe._clients[2].center_ids_)[0])
    removals = [(1, [center]), (2, [plain]), (3, None)]
    model, _ = _in_process(estimator, fed, removals)
    result = flower_mufc.mufc_apps(estimator, DATA, removals=removals).simulate(10)
    _assert_same(result, model)
    assert [r.n_removed for r in result.reports_] == [0, 1, 1, fed.client_sizes[3]]
    assert all(r.server_recomputed for r in result.reports_)
    X = fed.to_array()[0][:50]
    np.testing.assert_array_equal(result.predict(X), model.predict(X))


def test_complete_client_training_matches_in_process():
    """client_refine=True ([MUFC] Appendix M.3) travels in the set-up: the nodes run Lloyd
    after seeding and again after a removal, as the in-process clients do."""
    fed = _federation(5)
    estimator = MUFC(10, client_clusters=5, client_refine=True, random_state=2)
    probe = MUFC(**estimator.get_params()).fit(fed)
    plain = int(np.setdiff1d(fed.client(1)[1], probe._clients[1].center_ids_)[0])
    model, _ = _in_process(estimator, fed, [(1, [plain])])
    result = flower_mufc.mufc_apps(estimator, DATA, removals=[(1, [plain])]).simulate(5)
    _assert_same(result, model)


def test_plaintext_lazy_server_matches_in_process():
    fed = _federation(10)
    estimator = MUFC(10, client_clusters=5, secure=False, server_update="lazy", random_state=5)
    probe = MUFC(**estimator.get_params()).fit(fed)
    center = int(probe._clients[4].center_ids_[0])
    plain = int(np.setdiff1d(fed.client(6)[1], probe._clients[6].center_ids_)[0])
    removals = [(6, [plain]), (4, [center])]
    model, _ = _in_process(estimator, fed, removals)
    result = flower_mufc.mufc_apps(estimator, DATA, removals=removals).simulate(10)
    _assert_same(result, model)
    # A lazy server learns whether the client re-seeded, and re-clusters only then.
    assert [(r.client_retrained, r.server_recomputed) for r in result.reports_[1:]] == \
        [(False, False), (True, True)]


def test_100_clients_server_receives_masked_messages_only(monkeypatch):
    from fedcore.algorithms.mufc.roles import MUFCJoin, MUFCPrepared, MUFCReady, SCMAVector
    from fedcore.integrations.flower import roles
    fed = _federation(100)
    X = fed.to_array()[0]
    bounds = (X.min(axis=0) - 1.0, X.max(axis=0) + 1.0)  # public bounds: no box is sent
    estimator = MUFC(10, client_clusters=5, bounds=bounds, random_state=11)
    removals = [(17, [int(fed.client(17)[1][0])])]
    model, vectors = _in_process(estimator, fed, removals)
    received = []

    def recording_exchange(grid, contents, message_type, stage, timeout, **kwargs):
        replies = _common.exchange(grid, contents, message_type, stage, timeout, **kwargs)
        received.extend((stage, node, content) for node, content in replies.items())
        return replies

    monkeypatch.setattr(roles, "exchange", recording_exchange)
    apps = flower_mufc.mufc_apps(estimator, DATA, removals=removals)
    result = apps.simulate(100)
    _assert_same(result, model)

    setup = model._aggregator.setup
    node_of = result.node_ids_
    got = [(stage, node, roles.decode(c)) for stage, node, c in received if stage != "hello"]
    kinds = {type(m) for _, _, m in got}
    assert kinds == {MUFCJoin, MUFCReady, SCMAVector, MUFCPrepared}  # nothing else arrives
    joins = [m for _, _, m in got if isinstance(m, MUFCJoin)]
    assert len(joins) == 100 and all(m.low.size == 0 and m.high.size == 0 for m in joins)
    assert all(m.public_key.dtype == np.uint8 and m.public_key.shape == (32,) for m in joins)
    messages = [(stage, node, m) for stage, node, m in got if isinstance(m, SCMAVector)]
    assert len(messages) == 200
    for stage, node, m in messages:
        assert m.message.dtype == np.uint64 and m.message.shape == (setup.message_length,)
        assert int(m.message.max()) < setup.prime
        if stage == 0:  # the syndromes the client would send unmasked
            l = node_of.index(node)
            plain = model._channel.clients[l].encoder.syndromes(*vectors[l]).view(np.uint64)
            assert not np.array_equal(m.message, plain)
            assert np.mean(m.message == plain) < 0.01


def _failing_client(data, fail_partition, fail_round):
    """A node app whose partition ``fail_partition`` fails in round ``fail_round``."""
    from fedcore.algorithms.mufc.roles import MUFCClient, MUFCRound
    from fedcore.integrations.flower.roles import client_handler, decode
    handler = client_handler(lambda X, ids, pid: MUFCClient(X, pid, ids), data)
    app = ClientApp()

    @app.train()
    def train(msg, context):
        pid = int(context.node_config["partition-id"])
        if pid == fail_partition and msg.content["scalars"]["fedcore-type"].endswith("MUFCRound"):
            if decode(msg.content).round_number == fail_round:
                assert isinstance(decode(msg.content), MUFCRound)
                raise RuntimeError(f"disk failure on partition {pid}")
        return handler(msg, context)

    return app


def test_node_failure_mid_removal_round_names_node_and_publishes_nothing():
    estimator = MUFC(10, client_clusters=5, random_state=0)
    apps = flower_mufc.mufc_apps(estimator, DATA,
                                 removals=[(0, [int(_federation(10).client(0)[1][3])])])
    apps.client_app = _failing_client(DATA, fail_partition=4, fail_round=1)
    with pytest.raises(FlowerRoundError, match="disk failure on partition 4") as info:
        apps.simulate(10)
    error = info.value
    assert error.stage == "train 1"
    assert len(error.failures) == 1
    (node,) = error.failures
    assert f"node {node}" in str(error) and "no model was published" in str(error)
    assert apps.result is None


def test_dropout_at_the_threshold_decodes_the_survivors_exactly():
    """dropout_threshold = 7 of 10: client 4 fails in the removal round after the round keys
    were agreed; the survivors' shares rebuild its masks and the sum of the other nine clients
    is decoded exactly; client 4 leaves the federation."""
    from fedcore.algorithms.mufc.aggregation import sum_sparse
    fed = _federation(10)
    estimator = MUFC(10, client_clusters=5, dropout_threshold=7, random_state=0)
    removals = [(0, [int(fed.client(0)[1][3])])]
    model, vectors = _in_process(estimator, fed, removals)
    apps = flower_mufc.mufc_apps(estimator, DATA, removals=removals)
    apps.client_app = _failing_client(DATA, fail_partition=4, fail_round=1)
    result = apps.simulate(10)
    assert result.dropped_clients_ == [4]
    bins, counts = sum_sparse([model.aggregate_, (vectors[4][0], -vectors[4][1])])
    np.testing.assert_array_equal(result.aggregate_[0], bins)
    np.testing.assert_array_equal(result.aggregate_[1], counts)
    assert result.aggregate_[1].sum() == fed.n_samples - 1 - fed.client_sizes[4]
    kinds = {m.kind for m in result.comm_.messages}
    assert {"round-key", "key-shares", "unmask"} <= kinds


def test_one_drop_past_the_threshold_fails_the_round():
    estimator = MUFC(10, client_clusters=5, dropout_threshold=10, random_state=0)
    apps = flower_mufc.mufc_apps(estimator, DATA,
                                 removals=[(0, [int(_federation(10).client(0)[1][3])])])
    apps.client_app = _failing_client(DATA, fail_partition=4, fail_round=1)
    with pytest.raises(FlowerRoundError, match="fewer than dropout_threshold = 10"):
        apps.simulate(10)
    assert apps.result is None


# ------------------------------------------------------------------ without the engine
class _Stub:
    """Stands in for flwr's Message outside a run (which needs the engine's run identity)."""

    def __init__(self, content=None, dst_node_id=None, message_type=None, group_id=None,
                 ttl=None, error=None, src_node_id=None):
        from types import SimpleNamespace
        self.content, self.error = content, error
        self.metadata = SimpleNamespace(dst_node_id=dst_node_id, src_node_id=src_node_id,
                                        message_id="", reply_to_message_id="")

    def has_error(self):
        return self.error is not None


class _FakeGrid:
    """Replies to every message except those of ``silent`` nodes; ``broken`` nodes error; the
    messages to ``expired`` nodes come back as the link's error (source node 1, the link's), as
    Flower's link answers a message whose time to live ran out. Messages are numbered as they
    are sent, as Flower's grids number them."""

    def __init__(self, silent=(), broken=(), expired=()):
        self.silent, self.broken, self.expired = set(silent), set(broken), set(expired)

    def send_and_receive(self, messages, timeout=None):
        from types import SimpleNamespace
        replies = []
        for number, msg in enumerate(messages):
            msg.metadata.message_id = f"m{number}"
            node = msg.metadata.dst_node_id
            if node in self.expired:
                reply = _Stub(RecordDict(), src_node_id=1, error=SimpleNamespace(
                    reason="Error: Message Unavailable - It may have expired due to its TTL."))
                reply.metadata.reply_to_message_id = msg.metadata.message_id
                replies.append(reply)
                continue
            if node in self.silent:
                continue
            error = SimpleNamespace(reason="Traceback ...\nValueError: bad ids") \
                if node in self.broken else None
            replies.append(_Stub(RecordDict(), error=error, src_node_id=node))
        return replies


def test_exchange_names_failed_and_silent_nodes(monkeypatch):
    import flwr.app
    monkeypatch.setattr(flwr.app, "Message", _Stub)
    contents = {n: RecordDict() for n in (11, 12, 13, 14)}
    with pytest.raises(FlowerRoundError) as info:
        _common.exchange(_FakeGrid(silent=[12], broken=[14]), contents, "train", "round 2", 1.5)
    assert info.value.failures == {12: "no reply within 1.5 s", 14: "ValueError: bad ids"}
    assert "node 12" in str(info.value) and "node 14" in str(info.value)
    assert set(_common.exchange(_FakeGrid(), contents, "train", "round 2", 1.5)) == set(contents)
    # A message that expired before its node replied: that node's reply is missing.
    with pytest.raises(FlowerRoundError) as info:
        _common.exchange(_FakeGrid(expired=[13]), contents, "train", "round 2", 1.5)
    assert set(info.value.failures) == {13}
    assert info.value.failures[13] == ("no reply within 1.5 s (Error: Message Unavailable - It "
                                       "may have expired due to its TTL.)")


def test_parse_removals():
    assert flower_mufc.parse_removals("3:17 3:18,19 5:*") == [(3, [17]), (3, [18, 19]),
                                                              (5, None)]
    assert flower_mufc.parse_removals("") == []
    with pytest.raises(ValueError, match="'removals'.*'x:1'"):
        flower_mufc.parse_removals("x:1")
    with pytest.raises(ValueError, match="'removals'.*'4:'"):
        flower_mufc.parse_removals("4:")


def test_cli_flower_engine_reports_the_same_model(capsys):
    from fedcore import cli
    assert cli.main(["run", "--engine", "flower", "--n-clients", "8", "--n-removals", "2"]) == 0
    out = capsys.readouterr().out
    assert "Flower simulation (Ray backend), 8 nodes" in out
    (same,) = [line for line in out.splitlines()
               if line.startswith("same model as the in-process run")]
    assert same.split()[-1] == "yes"


def test_deployment_settings_and_saved_model(tmp_path):
    cfg = dict(flower_mufc.DEFAULTS, **{"n-clusters": 4, "client-clusters": 3, "secure": False,
                                        "gamma": "0.05", "random-seed": 9})
    model = flower_mufc._estimator(cfg)
    assert model.get_params() == MUFC(4, client_clusters=3, gamma=0.05, secure=False,
                                      random_state=9).get_params()
    assert flower_mufc._estimator(dict(cfg, **{"random-seed": -1})).random_state is None
    assert flower_mufc._estimator(dict(cfg, **{"client-refine": "True"})).client_refine is True
    with pytest.raises(ValueError, match="'client-refine' must be true or false"):
        flower_mufc._estimator(dict(cfg, **{"client-refine": "maybe"}))
    from fedcore.algorithms.mufc import MUFCRemovalReport
    result = flower_mufc.MUFCFlowerResult(
        np.arange(8.0).reshape(4, 2), (np.array([[1, 2], [3, 4]]), np.array([5, 6])), None,
        [MUFCRemovalReport(True, True, 0, {"server_cluster": 0.5})], 0, [7, 8])
    path = tmp_path / "model.npz"
    flower_mufc._save_result(str(path), result)
    back = flower_mufc.load_mufc_result(str(path))
    np.testing.assert_array_equal(back.cluster_centers_, result.cluster_centers_)
    np.testing.assert_array_equal(back.aggregate_[0], result.aggregate_[0])
    assert back.node_ids_ == [7, 8] and back.n_rounds_ == 0
    np.testing.assert_array_equal(back.predict([[0.1, 0.9], [6.0, 7.2]]), [0, 3])
