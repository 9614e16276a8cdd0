"""The F3KM messages on Flower's wire, and the F3KM apps' server and nodes without the simulation
engine (a loopback grid): the published model and ledger equal the in-process fit, decisions
travel with the next request, exchanges carry their stage, and handlers can be replaced."""
import numpy as np
import pytest

pytest.importorskip("flwr", reason="the Flower apps need the optional dependency flwr")

from fedcore.algorithms.f3km import FairKMeans  # noqa: E402
from fedcore.algorithms.f3km.cdkm import BCDKM  # noqa: E402
from fedcore.algorithms.f3km import party as P  # noqa: E402
from fedcore.integrations.flower import FlowerRoundError, f3km  # noqa: E402
from tests.integrations.flower.loopback import LoopbackGrid, serve_messages  # noqa: E402
from tests.integrations.flower.test_flower_roles import (  # noqa: E402
    test_messages_cross_the_wire_unchanged as round_trip)

_INT = np.array([2, 0, 1], dtype=np.int64)


@pytest.mark.parametrize("message", [
    P.F3KMSetup(3, True, 0.25), P.PartyInfo(1, 300, 4, 5, 12.5, "float32"),
    P.SeedRow(17, 2), P.SeedDistances(np.linspace(0.0, 1.0, 5)),
    P.InitialLabels(_INT, 1.5, 2.5, np.array([0.4, 0.6]), np.empty(0)),
    P.ExplainedPart(3.25), P.PartyParts(1.0, 0.5, 0.25), P.RowObjectives(10, 20, 3),
    P.Objectives(np.arange(6.0).reshape(3, 2)), P.ProposedLabels(_INT, 4, 7, 2),
    P.ObjectiveChange(-0.5), P.Decision(False), P.MovedLabels(_INT, 4, 7),
    P.DualUpdate(2.0, 5), P.DualParts(1.0, 0.0, 3.0), P.ExplainedRequest(4),
    P.SweepExplained(9.5), P.FinalReport(_INT),
    P.PartyResult(np.ones((3, 2)), 4.5, np.empty(0), np.empty(0), np.empty(0)),
    P.LocalSweep(0.0, 1.0, 50, 1e-9), P.SweepDone(3, 7, _INT), P.Noted(),
], ids=lambda m: type(m).__name__)
def test_f3km_messages_cross_the_wire_unchanged(message):
    round_trip(message)  # decoded with the same fields, dtypes, shapes and size


def _data(n_parties, n_samples, seed):
    return {"num-partitions": n_parties, "n-samples": n_samples,
            "n-features": max(10, n_parties), "data-clusters": 3, "groups-per-attribute": "2,3",
            "bias": 0.6, "data-seed": seed, "attribute-parties": f"1,{n_parties - 1}"}


def _run(estimator, data, n_parties, handlers=None, node_configs=None):
    grid = LoopbackGrid(f3km.make_client_app(data, handlers), n_parties, run_config=data,
                        node_configs=node_configs)
    return f3km.run_server(grid, estimator, n_parties, 60), grid


@pytest.mark.parametrize("fair", [False, True])
def test_flower_server_and_nodes_give_the_in_process_fit(fair, monkeypatch, tmp_path):
    serve_messages(monkeypatch)
    data = _data(4, 240, 2)
    fed = f3km.vertical_from_settings(data)
    if fair:
        estimator = FairKMeans(3, delta=0.3, block_size=60, max_iter=3, random_state=2)
    else:
        estimator = BCDKM(4, block_size=60, random_state=2)  # rows move, blocks split
    model = type(estimator)(**estimator.get_params()).fit(fed)
    path = tmp_path / "party2.npz"  # one node reads its block from a file
    np.savez(path, X=fed.party(2))
    result, grid = _run(estimator, data, 4, node_configs={2: {"data-path": str(path)}})
    np.testing.assert_array_equal(result.labels_, model.labels_)
    np.testing.assert_array_equal(np.hstack(result.center_blocks_), model.cluster_centers_)
    np.testing.assert_array_equal(result.objective_history_, model.objective_history_)
    assert result.comm_.messages == model.comm_.messages
    if fair:
        np.testing.assert_array_equal(result.balance_, model.balance_)
        np.testing.assert_array_equal(result.violation_history_, model.violation_history_)
    stages = [(t, s) for t, s, node, _ in grid.sent if node == 100]
    assert stages[0] == ("train", "hello") and stages[1] == ("train.setup", "setup")
    assert stages[-1] == ("train.close", "close")
    assert result.n_messages_ == len(stages) - 1  # the hello is the transport's
    posted = [content for _, _, _, content in grid.sent if "fedcore-posted-0.scalars" in content]
    assert posted  # decisions travelled with the next request


def test_replaced_handler_sees_the_sweep_and_its_failure_names_the_stage(monkeypatch):
    serve_messages(monkeypatch)

    def objectives(msg, context, defaults):
        if int(context.node_config["partition-id"]) == 1 and \
                int(msg.content["config"]["sweep"]) == 2:
            raise RuntimeError("disk failure")
        return f3km.handle_message(msg, context, defaults)

    with pytest.raises(FlowerRoundError, match="disk failure") as info:
        _run(BCDKM(3, block_size=60, random_state=1), _data(3, 240, 1), 3,
             handlers={"objectives": objectives})
    assert info.value.stage.startswith("train.objectives sweep 2 rows ")
    assert list(info.value.failures) == [101]


def test_the_handlers_by_action_are_deprecated_names_of_handle_message(monkeypatch):
    calls = []
    monkeypatch.setattr(f3km, "handle_message", lambda *args: calls.append(args) or "reply")
    with pytest.warns(DeprecationWarning, match="handle_seed is deprecated"):
        assert f3km.handle_seed("msg", "context", {"a": 1}) == "reply"
    assert calls == [("msg", "context", {"a": 1})]
