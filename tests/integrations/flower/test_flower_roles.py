"""The generic Flower adapter: any federated estimator's roles on Flower nodes."""
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
from fedcore.federation.protocol import ProtocolError, stream_state  # noqa: E402
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
