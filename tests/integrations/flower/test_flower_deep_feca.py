"""DeepFeCA on Flower through the generic adapter: the same roles on two simulated nodes give the
in-process model bit for bit (encoder weights, centers, history and ledger).

One simulation (Ray backend) on the "tcga" stand-in (1904 points, 57 features: the default MLP
encoder), two rounds of one local epoch.
"""
import warnings

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the Flower apps need the optional dependency flwr")
torch = pytest.importorskip("torch", reason="DeepFeCA needs the optional dependency torch")

from fedcore.algorithms.feca import DeepFeCA, flatten_weights  # noqa: E402
from fedcore.integrations.flower._common import federation_from_settings  # noqa: E402
from fedcore.integrations.flower.roles import estimator_apps  # noqa: E402


@pytest.fixture(autouse=True)
def one_torch_thread():
    # The Flower nodes (Ray actors of one CPU) run PyTorch on one thread; so does the in-process
    # fit it is compared with.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def test_flower_run_equals_in_process_fit():
    data = {"dataset": "tcga", "num-partitions": 2, "partition": "dirichlet", "alpha": 1.0,
            "data-seed": 1}
    estimator = DeepFeCA(4, rounds=2, local_epochs=1, batch_size=64, random_state=3)
    fed = federation_from_settings(data)
    want = DeepFeCA(**estimator.get_params()).fit(fed)
    apps = estimator_apps(estimator, data, timeout=120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Ray's, not ours
        got = apps.simulate(2)
    assert type(got) is DeepFeCA and got is not estimator
    assert not hasattr(estimator, "encoder_")  # the estimator itself is not fitted
    np.testing.assert_array_equal(flatten_weights(got.encoder_), flatten_weights(want.encoder_))
    np.testing.assert_array_equal(got.cluster_centers_, want.cluster_centers_)
    assert got.history_ == want.history_ and got.n_groups_ == want.n_groups_
    assert got.comm_.messages == want.comm_.messages
    assert got.comm_.n_rounds == 3 and got.n_features_in_ == 57
    X = fed.client(0)[0]
    np.testing.assert_array_equal(got.predict(X), want.predict(X))
