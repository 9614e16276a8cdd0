"""The generic Flower adapter: any federated estimator's roles on Flower nodes."""
import dataclasses
import warnings

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the Flower apps need the optional dependency flwr")

from flwr.app import ConfigRecord, RecordDict  # noqa: E402

import fedcore  # noqa: E402
from fedcore.algorithms.baselines.dckmeans import DCKMCenters, DCKMFit  # noqa: E402
from fedcore.algorithms.baselines.ffcm import FFCMLocalCenters, FFCMSetup  # noqa: E402
from fedcore.algorithms.clients import LocalKMeansSetup  # noqa: E402
from fedcore.algorithms.feca import FeCACentroids  # noqa: E402
from fedcore.federation.protocol import (InProcessChannel, Message,  # noqa: E402
                                         ProtocolError, diagnostic, stream_state)
from fedcore.integrations.flower._common import (arrays_record,  # noqa: E402
                                                 federation_from_settings)
from fedcore.integrations.flower.roles import decode, encode, estimator_apps  # noqa: E402


@pytest.mark.parametrize("message", [
    FeCACentroids(np.arange(6.0).reshape(3, 2), np.ones(3), np.array([4, 1], dtype=np.int64)),
    FeCACentroids(np.empty((0, 5)), np.empty(0), np.empty(0, dtype=np.int64)),
    FFCMLocalCenters(np.arange(4, dtype=np.float32).reshape(2, 2), np.array([0.5, 0.25])),
    FFCMSetup(seed=2**62 + 7, n_clusters=3, fuzziness=2.5, max_iter=4, tol=0.0),
    LocalKMeansSetup(seed=1, n_clusters=2, n_init=1, max_iter=5, tol=1e-4, n_local_trials=3),
    DCKMFit(client_clusters=3, n_init=2, stream=stream_state(np.random.default_rng(2**70))),
    DCKMCenters(np.arange(6.0).reshape(3, 2), np.array([4, 0, 1]),
                stream_state(np.random.default_rng(1))),
], ids=["centroids", "empty", "float32", "setup", "kmeans-setup", "dckm-fit", "dckm-centers"])
def test_messages_cross_the_wire_unchanged(message):
    got = decode(encode(message))
    assert type(got) is type(message)
    for name, value in message.fields().items():
        other = getattr(got, name)
        if isinstance(value, np.ndarray):
            assert other.dtype == value.dtype and other.shape == value.shape
            np.testing.assert_array_equal(other, value)
        else:
            assert other == value and type(other) is type(value)
    assert got.size() == message.size()


def test_what_is_not_a_known_message_is_refused():
    with pytest.raises(ProtocolError, match="Only fedcore Messages"):
        encode({"centers": np.zeros(2)})
    forged = RecordDict({"arrays": arrays_record(x=np.zeros(1)),
                         "scalars": ConfigRecord({"fedcore-type": "builtins.eval"})})
    with pytest.raises(ProtocolError, match="Unknown message type 'builtins.eval'"):
        decode(forged)
    content = encode(FFCMLocalCenters(np.zeros((2, 2)), np.ones(2)))
    del content["arrays"]["weights"]
    with pytest.raises(ProtocolError, match="needs the fields"):
        decode(content)


@pytest.mark.parametrize("estimator", [
    fedcore.KFed(4, client_clusters=3, random_state=2),
    fedcore.MatchAveraging(4, random_state=3),
    fedcore.FFCM(4, version=2, n_rounds=3, random_state=4),
    fedcore.DCKMeans(4, client_clusters=3, weighted=True, random_state=5),
], ids=["kfed", "mavg", "ffcm-v2", "dckm"])
def test_any_federated_estimator_runs_on_flower_as_in_process(estimator):
    """One adapter, every method: the Flower run equals fit, ledger included (FFCM's client
    roles keep their settings between rounds in the nodes' state; DC-KM's server lends its
    random stream to one node at a time)."""
    data = {"dataset": "gaussian", "num-partitions": 3, "partition": "iid", "data-seed": 1}
    want = type(estimator)(**estimator.get_params()).fit(federation_from_settings(data))
    apps = estimator_apps(estimator, data, timeout=120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Ray's, not ours
        got = apps.simulate(3)
    assert type(got) is type(estimator) and got is not estimator
    np.testing.assert_array_equal(got.cluster_centers_, want.cluster_centers_)
    assert got.comm_.messages == want.comm_.messages
    assert got.comm_.n_rounds == want.comm_.n_rounds


def test_estimator_apps_checks_its_arguments():
    with pytest.raises(TypeError, match="'estimator' must be a federated estimator"):
        estimator_apps(fedcore.KMeans(3), {"num-partitions": 2})
    with pytest.raises(ValueError, match="client_clusters"):
        estimator_apps(fedcore.MatchAveraging(4, client_clusters=2), {"num-partitions": 2})
    with pytest.raises(ValueError, match="num-partitions"):
        estimator_apps(fedcore.FFCM(3), {"dataset": "s1"})


# ------------------------------------------- posted messages, named exchanges, node loaders
@dataclasses.dataclass(frozen=True, eq=False)
class _Add(Message):
    """One-way: add ``value`` to the client's total."""

    value: int


@dataclasses.dataclass(frozen=True, eq=False)
class _Ask(Message):
    """The client's total, please (an empty request; ``label`` travels, not counted)."""

    label: str = diagnostic(default="")


@dataclasses.dataclass(frozen=True, eq=False)
class _Total(Message):
    total: int


@dataclasses.dataclass(frozen=True, eq=False)
class _Done(Message):
    """The (dropped) reply to a posted message."""


class _Summer:
    def __init__(self, start, client_id):
        self.total, self.client_id = start, client_id

    def handle(self, message):
        if isinstance(message, _Add):
            self.total += message.value
            return _Done()
        return _Total(self.total)


def _post_and_ask(channel):
    channel.post({0: _Add(1), 1: _Add(2)}, 1)
    channel.post({0: _Add(3)}, 2)
    replies = channel.exchange({0: _Ask("first"), 1: _Ask("first")}, 3)
    return [replies[j].total for j in (0, 1)]


def test_posted_messages_arrive_before_the_next_request_and_count_in_their_round(monkeypatch):
    """FlowerChannel.post holds one-way messages and delivers them with the next exchange
    (counted when posted, as the in-process channel counts them); ``describe`` names the
    exchange for Flower; ``load`` builds a node's role from what the loader reads."""
    from flwr.clientapp import ClientApp
    from fedcore.integrations.flower.roles import FlowerChannel, client_handler
    from tests.integrations.flower.loopback import LoopbackGrid, serve_messages

    want = InProcessChannel([_Summer(0, 0), _Summer(10, 1)])
    assert _post_and_ask(want) == [4, 12]
    serve_messages(monkeypatch)
    app = ClientApp()
    handler = client_handler(lambda start, j: _Summer(start, j),
                             load=lambda cfg: (10 * int(cfg["partition-id"]),
                                               int(cfg["partition-id"])))
    for action in ("default", "ask"):
        app.train(action)(handler)
    grid = LoopbackGrid(app, 2)
    channel = FlowerChannel(grid, 2, timeout=5,
                            describe=lambda m: ("ask", f"totals ({m.label})", {"label": m.label}))
    assert _post_and_ask(channel) == [4, 12]
    assert channel.ledger.messages == want.ledger.messages
    assert [m.round for m in want.ledger.messages] == [1, 1, 2, 3, 3]
    message_type, stage, _, content = grid.sent[-2]
    assert (message_type, stage, content["config"]["label"]) == ("train.ask", "totals (first)",
                                                                   "first")
