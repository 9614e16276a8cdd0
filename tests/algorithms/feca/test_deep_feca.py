"""DeepFeCA ([FeCA] Alg. 6): FedAvg by client size, pseudo-labels, determinism, the ledger,
argument checks and the baseline aggregations of [FeCA] Table 3.

Tiny federations (three clients of 30-50 points, 6 features: the default MLP encoder), two
rounds of one local epoch; torch runs on one thread.
"""
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="DeepFeCA needs the optional dependency torch")

import fedcore  # noqa: E402
from fedcore.algorithms.clients import LocalCenters  # noqa: E402
from fedcore.algorithms.baselines.ffcm import FFCMInitialCenters, FFCMLocalCenters  # noqa: E402
from fedcore.algorithms.feca import (DeepFeCA, DeepFeCACentroids, DeepFeCAClient,  # noqa: E402
                                     DeepFeCAServer, DeepFeCAUpdate, DeepFeCAWeights,
                                     FeCACentroids, fedavg, flatten_weights, load_weights,
                                     pseudo_labels)
from fedcore.algorithms.feca.deep import encode_features  # noqa: E402
from fedcore.algorithms.feca.encoders import default_encoder  # noqa: E402
from fedcore.federation.protocol import InProcessChannel  # noqa: E402

SETTINGS = {"rounds": 2, "local_epochs": 1, "batch_size": 16}


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def _clients(sizes=(30, 50, 40), d=6, seed=0):
    X, _, _ = fedcore.datasets.make_gaussian_mixture(sum(sizes), d, 3, cluster_std=0.3,
                                                     random_state=seed)
    return np.split(X, np.cumsum(sizes)[:-1])


class RecordingChannel(InProcessChannel):
    """An in-process channel that keeps every (round, requests, replies)."""

    def __init__(self, clients, pickle_roles=False):
        super().__init__(clients, n_jobs=1)
        self.log = []
        self.pickle_roles = pickle_roles

    def exchange(self, requests, round_number):
        if self.pickle_roles:  # as the Flower adapter keeps roles between messages
            self.clients = [pickle.loads(pickle.dumps(c)) for c in self.clients]
        replies = super().exchange(requests, round_number)
        self.log.append((round_number, dict(requests), dict(replies)))
        return replies

    def sent(self, cls):
        """[(round, {client: message})] of the requests of type ``cls``."""
        return [(t, req) for t, req, _ in self.log if isinstance(next(iter(req.values())), cls)]

    def received(self, cls):
        return [(t, rep) for t, _, rep in self.log if isinstance(next(iter(rep.values())), cls)]


def _run(arrays, encoder=None, pickle_roles=False, **params):
    """Fit through DeepFeCA's roles over a recording channel: (model, channel)."""
    model = DeepFeCA(3, encoder=encoder, **{**SETTINGS, **params})
    clients = [model.client_role(X, l) for l, X in enumerate(arrays)]
    channel = RecordingChannel(clients, pickle_roles)
    return model.fit_over(channel), channel


# ------------------------------------------------------------------------------------------
# [FeCA] Alg. 6 line 10: FedAvg by client size
# ------------------------------------------------------------------------------------------

def test_fedavg_weights_the_clients_by_their_sizes_exactly():
    arrays = _clients(sizes=(30, 50, 40))
    model, channel = _run(arrays, random_state=0)
    updates = channel.received(DeepFeCAUpdate)
    broadcasts = channel.sent(DeepFeCAWeights)
    assert [t for t, _ in updates] == [1, 2] and [t for t, _ in broadcasts] == [1, 2, 3]
    for (t, replies), (_, next_round) in zip(updates, broadcasts[1:]):
        sizes = [replies[l].n_samples for l in range(3)]
        assert sizes == [30, 50, 40]
        # By hand: sum_m |D_m| theta_m / |D| in float64, client order, rounded to float32.
        acc = np.zeros_like(replies[0].weights, dtype=np.float64)
        for l in range(3):
            acc += sizes[l] * replies[l].weights.astype(np.float64)
        want = (acc / 120.0).astype(np.float32)
        for l in range(3):
            np.testing.assert_array_equal(next_round[l].weights, want)
        np.testing.assert_allclose(want, np.average([replies[l].weights for l in range(3)],
                                                    axis=0, weights=sizes), rtol=1e-6)
        # Unequal sizes matter: the plain mean is another vector.
        assert not np.array_equal(want, np.mean([r.weights for r in replies.values()], axis=0,
                                                dtype=np.float64).astype(np.float32))
    np.testing.assert_array_equal(flatten_weights(model.encoder_), broadcasts[-1][1][0].weights)


def test_fedavg_function():
    a, b = np.array([1.0, 2.0], np.float32), np.array([3.0, 6.0], np.float32)
    np.testing.assert_array_equal(fedavg([a, b], [1, 3]), np.array([2.5, 5.0], np.float32))
    assert fedavg([a, b], [1, 3]).dtype == np.float32
    with pytest.raises(ValueError, match="at least one client"):
        fedavg([], [])


# ------------------------------------------------------------------------------------------
# [FeCA] Alg. 6 line 7: pseudo-labels
# ------------------------------------------------------------------------------------------

def test_pseudo_labels_are_the_nearest_centroids_of_the_broadcast_encoder():
    arrays = _clients()
    model, channel = _run(arrays, random_state=1)
    weights = channel.sent(DeepFeCAWeights)[-2][1]      # round 2's theta_bar
    t, centroids = channel.sent(DeepFeCACentroids)[-1]  # round 2's C*
    assert t == 2
    encoder = default_encoder(6)
    for l, X in enumerate(arrays):
        load_weights(encoder, weights[l].weights)
        F = encode_features(encoder, X)
        C = centroids[l].centers
        d2 = ((F[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
        np.testing.assert_array_equal(channel.clients[l].labels, d2.argmin(axis=1))


def test_pseudo_labels_refuse_centroids_of_another_width():
    with pytest.raises(ValueError, match="centers have 2 features"):
        pseudo_labels(np.zeros((5, 3)), np.zeros((4, 2)))


def test_pseudo_labels_ties_go_to_the_lowest_index():
    F = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 0.0]])
    C = np.array([[2.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(pseudo_labels(F, C), [1, 0, 0])


# ------------------------------------------------------------------------------------------
# Determinism
# ------------------------------------------------------------------------------------------

def test_same_seed_same_encoder_bit_for_bit_and_other_seeds_differ():
    arrays = _clients()
    state, flag = torch.get_rng_state(), torch.are_deterministic_algorithms_enabled()
    a = DeepFeCA(3, random_state=5, **SETTINGS).fit(arrays)
    b = DeepFeCA(3, random_state=5, **SETTINGS).fit(arrays)
    c = DeepFeCA(3, random_state=6, **SETTINGS).fit(arrays)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's generator is untouched
    assert torch.are_deterministic_algorithms_enabled() == flag  # and the setting restored
    np.testing.assert_array_equal(flatten_weights(a.encoder_), flatten_weights(b.encoder_))
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.comm_.messages == b.comm_.messages and a.history_ == b.history_
    assert not np.array_equal(flatten_weights(a.encoder_), flatten_weights(c.encoder_))


def test_pickled_client_roles_give_the_same_model():
    """The Flower adapter pickles each client role between messages: nothing may change."""
    arrays = _clients()
    plain, _ = _run(arrays, random_state=2)
    pickled, _ = _run(arrays, pickle_roles=True, random_state=2)
    np.testing.assert_array_equal(flatten_weights(plain.encoder_),
                                  flatten_weights(pickled.encoder_))
    np.testing.assert_array_equal(plain.cluster_centers_, pickled.cluster_centers_)
    assert plain.comm_.messages == pickled.comm_.messages


# ------------------------------------------------------------------------------------------
# The ledger, measured from the messages
# ------------------------------------------------------------------------------------------

def test_ledger_counts_the_weights_and_centroids_sent():
    arrays = _clients()
    model, channel = _run(arrays, random_state=3)
    n_weights = flatten_weights(model.encoder_).shape[0]
    d = model.cluster_centers_.shape[1]
    entries = model.comm_.messages
    assert model.comm_.n_rounds == SETTINGS["rounds"] + 1
    assert {e.kind for e in entries} == {"encoder weights", "centroids+radii",
                                         "global centroids", "encoder update"}
    for e in entries:
        if e.kind == "encoder weights":
            assert (e.direction, e.n_elements, e.n_bits) == ("down", n_weights, 32 * n_weights)
        elif e.kind == "encoder update":  # theta_m and |D_m|
            assert (e.direction, e.n_elements, e.n_bits) == ("up", n_weights + 1,
                                                            32 * n_weights + 64)
    for t, replies in channel.received(FeCACentroids):
        for l, m in replies.items():
            [e] = [e for e in entries if (e.round, e.sender, e.kind) == (t, l, "centroids+radii")]
            assert e.n_elements == m.centers.shape[0] * (d + 1) == m.centers.size + m.radii.size
    for t, requests in channel.sent(DeepFeCACentroids):
        for l, m in requests.items():
            [e] = [e for e in entries
                   if (e.round, e.receiver, e.kind) == (t, l, "global centroids")]
            assert e.n_elements == m.centers.size and m.centers.shape[1] == d
    per_round = 3 * 4  # weights, centroids up, C* down, update: for each of 3 clients
    assert model.comm_.n_messages == SETTINGS["rounds"] * per_round + 3 * 2


# ------------------------------------------------------------------------------------------
# The baselines of [FeCA] Table 3 in line 4
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("aggregation, uplink", [
    ("mavg", LocalCenters), ("kfed", LocalCenters), ("ffcm1", FFCMLocalCenters),
    ("ffcm2", FFCMLocalCenters)])
def test_baseline_aggregations_run(aggregation, uplink):
    arrays = _clients()
    model, channel = _run(arrays, aggregation=aggregation, random_state=4)
    assert model.cluster_centers_.shape == (3, 64) and model.n_groups_ is None
    assert [h["n_groups"] for h in model.history_] == [None, None]
    assert model.predict(arrays[0]).max() < 3
    rounds = [t for t, _ in channel.received(uplink)]
    assert rounds == [1, 2, 3]  # line 4 of each round, and the final clustering
    if uplink is FFCMLocalCenters:  # one FFCM round: initial centroids, then one exchange
        assert [t for t, _ in channel.received(FFCMInitialCenters)] == [1, 2, 3]


def test_kfed_uses_sqrt_k_client_centers():
    model, channel = _run(_clients(), aggregation="kfed", random_state=4)
    for _, replies in channel.received(LocalCenters):
        assert all(m.centers.shape[0] == 2 for m in replies.values())  # ceil(sqrt(3))


# ------------------------------------------------------------------------------------------
# Estimator contract, encoders, weights
# ------------------------------------------------------------------------------------------

def test_transform_predict_and_fitted_attributes():
    arrays = _clients()
    fed = fedcore.HorizontalFederation.from_arrays(arrays)
    model = DeepFeCA(3, random_state=0, **SETTINGS).fit(fed)
    X = np.concatenate(arrays)
    F = model.transform(X)
    assert F.shape == (120, 64) and F.dtype == np.float64
    np.testing.assert_allclose(np.linalg.norm(F, axis=1), 1.0, rtol=1e-5)  # l2-normalized
    np.testing.assert_array_equal(model.predict(X), pseudo_labels(F, model.cluster_centers_))
    assert model.n_features_in_ == 6 and isinstance(model.encoder_, torch.nn.Module)
    assert not model.encoder_.training
    assert [h["round"] for h in model.history_] == [1, 2]
    assert all(h["n_centers"] <= 3 and h["n_groups"] >= 1 and np.isfinite(h["loss"])
               for h in model.history_)
    assert model.n_groups_ >= 1


def test_default_encoders():
    cnn8, cnn28, mlp = default_encoder(64, seed=0), default_encoder(784, seed=0), \
        default_encoder(10, seed=0)
    assert isinstance(cnn8[1], torch.nn.Conv2d) and isinstance(cnn28[1], torch.nn.Conv2d)
    assert isinstance(mlp[0], torch.nn.Linear)
    for enc, width in ((cnn8, 64), (cnn28, 784), (mlp, 10)):
        assert enc(torch.zeros(3, width)).shape == (3, 64)
    np.testing.assert_array_equal(flatten_weights(default_encoder(64, seed=1)),
                                  flatten_weights(default_encoder(64, seed=1)))
    assert pickle.loads(pickle.dumps(mlp))(torch.ones(1, 10)).shape == (1, 64)


def test_a_given_encoder_with_buffers_is_copied_and_trained():
    torch.manual_seed(0)
    encoder = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8),
                                  torch.nn.ReLU(), torch.nn.Linear(8, 5))
    before = flatten_weights(encoder)
    model = DeepFeCA(3, encoder=encoder, random_state=0, rounds=2, local_epochs=1,
                     batch_size=10).fit(_clients())
    np.testing.assert_array_equal(flatten_weights(encoder), before)  # never modified
    assert model.encoder_ is not encoder and model.cluster_centers_.shape[1] == 5
    bn = model.encoder_[1]
    assert bn.num_batches_tracked.dtype == torch.int64 and int(bn.num_batches_tracked) > 0
    assert not torch.equal(bn.running_mean, torch.zeros(8))  # the buffers were averaged


def test_flatten_and_load_round_trip():
    enc = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    enc[1].num_batches_tracked.fill_(7)
    w = flatten_weights(enc)
    assert w.dtype == np.float32 and w.shape == (3 * 2 + 2 + 4 * 2 + 1,)
    other = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    load_weights(other, w)
    np.testing.assert_array_equal(flatten_weights(other), w)
    assert int(other[1].num_batches_tracked) == 7
    with pytest.raises(ValueError, match="holds 17 weights"):
        load_weights(other, w[:-1])


# ------------------------------------------------------------------------------------------
# Bad arguments
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("params, error, match", [
    ({"n_clusters": 0}, ValueError, "'n_clusters' must be >= 1"),
    ({"n_clusters": 2.5}, TypeError, "'n_clusters' must be an int"),
    ({"rounds": 0}, ValueError, "'rounds' must be >= 1"),
    ({"local_epochs": 0}, ValueError, "'local_epochs' must be >= 1"),
    ({"lr": 0.0}, ValueError, "'lr' must be > 0"),
    ({"lr": float("nan")}, ValueError, "'lr' must be finite"),
    ({"lr": "0.1"}, TypeError, "'lr' must be a real number"),
    ({"batch_size": 0}, ValueError, "'batch_size' must be >= 1"),
    ({"encoder": "cnn"}, TypeError, "'encoder' must be a torch.nn.Module"),
    ({"encoder": torch.nn.Linear(5, 4)}, ValueError, "'encoder' must map"),
    ({"encoder": torch.nn.Flatten(0)}, ValueError, "'encoder' must map"),
    ({"aggregation": "median"}, ValueError, "'aggregation' must be one of"),
    ({"aggregation": "ffcm1", "client_clusters": 3}, ValueError, "'client_clusters' must be"),
    ({"aggregation": "mavg", "client_clusters": 2}, ValueError, "'client_clusters'=2 must be"),
    ({"client_clusters": 0}, ValueError, "'client_clusters' must be >= 1"),
    ({"client_clusters": 31}, ValueError, "'client_clusters'=31 exceeds the 30 point"),
    ({"n_clusters": 31}, ValueError, "'n_clusters'=31 exceeds the 30 point"),
    ({"random_state": "x"}, TypeError, "'random_state'"),
])
def test_bad_arguments_are_refused_and_leave_the_model_as_it_was(params, error, match):
    arrays = _clients()
    model = DeepFeCA(3, random_state=0, **SETTINGS).fit(arrays)
    before = (model.encoder_, model.cluster_centers_, model.comm_, model.history_)
    centers = model.cluster_centers_.copy()
    model.set_params(**params)
    with pytest.raises(error, match=match):
        model.fit(arrays)
    assert (model.encoder_, model.cluster_centers_, model.comm_, model.history_) == before
    np.testing.assert_array_equal(model.cluster_centers_, centers)


def test_bad_data_is_refused():
    arrays = _clients()
    bad = [a.copy() for a in arrays]
    bad[1][3, 2] = np.nan
    with pytest.raises(ValueError, match="arrays\\[1\\]"):
        DeepFeCA(3, **SETTINGS).fit(bad)
    with pytest.raises(ValueError, match="Client 1 has 5 features"):
        DeepFeCA(3, **SETTINGS).fit([arrays[0], arrays[1][:, :5]])
    with pytest.raises(TypeError, match="'federation'"):
        DeepFeCA(3, **SETTINGS).fit(np.zeros((10, 6)))
    model = DeepFeCA(3, random_state=0, **SETTINGS)
    with pytest.raises(fedcore.algorithms.base.NotFittedError):
        model.transform(arrays[0])
    model.fit(arrays)
    with pytest.raises(ValueError, match="has 5 features, but DeepFeCA is expecting 6"):
        model.predict(arrays[0][:, :5])
    with pytest.raises(ValueError, match="'X'"):
        model.transform(np.full((2, 6), np.inf))


def test_diverging_training_is_reported():
    with pytest.raises(ValueError, match="lower 'lr'"):
        DeepFeCA(3, lr=1e30, random_state=0, **SETTINGS).fit(_clients())


def test_a_client_refuses_messages_out_of_order():
    from fedcore.federation.protocol import ProtocolError
    client = DeepFeCAClient(_clients()[0], 0)
    with pytest.raises(ProtocolError, match="expected a DeepFeCASetup"):
        client.handle(DeepFeCAWeights(np.zeros(3, np.float32)))
    server = DeepFeCAServer(3, random_state=0, **SETTINGS)
    channel = InProcessChannel([client], n_jobs=1)
    channel.exchange({0: _setup(server)}, 0)
    with pytest.raises(ProtocolError, match="holds .* weights"):
        client.handle(DeepFeCAWeights(np.zeros(3, np.float32)))
    with pytest.raises(ProtocolError, match="centroids before"):
        client.handle(DeepFeCACentroids(np.zeros((2, 64))))


def _setup(server):
    from fedcore.algorithms.feca import DeepFeCASetup
    p = server.params
    return DeepFeCASetup(seed=1, n_clusters=p["n_clusters"], aggregation=p["aggregation"],
                         local_epochs=p["local_epochs"], lr=p["lr"], batch_size=p["batch_size"])


def test_fewer_groups_warn_at_the_end():
    # Five identical clients: one group per distinct centroid, fewer than asked.
    X = np.repeat(np.array([[0.0] * 6, [1.0] * 6]), 10, axis=0)
    with pytest.warns(fedcore.algorithms.feca.FewerGroupsWarning, match="fewer than"):
        model = DeepFeCA(4, client_clusters=2, random_state=0, **SETTINGS).fit([X, X])
    assert model.cluster_centers_.shape[0] < 4


def test_import_fedcore_needs_no_torch():
    code = ("import importlib.abc, sys\n"
            "class NoTorch(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'torch':\n"
            "            raise ModuleNotFoundError(\"No module named 'torch'\")\n"
            "sys.meta_path.insert(0, NoTorch())\n"
            "import fedcore, numpy as np\n"
            "assert 'torch' not in sys.modules\n"
            "try:\n"
            "    fedcore.DeepFeCA(2, rounds=1).fit([np.random.rand(5, 3)] * 2)\n"
            "except ImportError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert 'pip install "fedcore[deep]"' in out


def test_no_warning_in_a_plain_fit():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DeepFeCA(3, random_state=0, **SETTINGS).fit(_clients())
