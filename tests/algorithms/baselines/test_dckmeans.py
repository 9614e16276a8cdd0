"""DC-k-means on the protocol: the roles over a channel give what fit gives, the ledger entries of
a fit and of removals, one random stream lent client after client, and atomic removals."""
import pickle

import numpy as np
import pytest

import fedcore
from fedcore.algorithms.base import NotFittedError
from fedcore.algorithms.baselines import dckmeans
from fedcore.algorithms.baselines.dckmeans import (DCKMCenters, DCKMClient, DCKMFit, DCKMRemove,
                                                   DCKMeans)
from fedcore.federation.ledger import SERVER, LedgerEntry
from fedcore.federation.protocol import InProcessChannel, ProtocolError, stream_state


def _federation(dtype=np.float64):
    X, y, _ = fedcore.datasets.make_gaussian_mixture(450, 3, 4, cluster_std=0.05,
                                                     random_state=2)
    return fedcore.partition(X.astype(dtype), 3, "noniid", labels=y, clusters_per_client=2,
                             random_state=2)


def _roles(est, fed):
    return [est.client_role(X_l, l, ids=ids_l) for l, (X_l, ids_l) in enumerate(fed)]


@pytest.mark.parametrize("weighted", [False, True])
def test_fit_over_a_channel_of_client_roles_equals_fit(weighted):
    fed = _federation()
    est = DCKMeans(4, client_clusters=3, weighted=weighted, n_init=2, random_state=7)
    want = DCKMeans(**est.get_params()).fit(fed)
    got = DCKMeans(**est.get_params()).fit_over(InProcessChannel(_roles(est, fed), n_jobs=2))
    np.testing.assert_array_equal(got.cluster_centers_, want.cluster_centers_)
    for a, b in zip(got.client_centers_, want.client_centers_, strict=True):
        np.testing.assert_array_equal(a, b)
    assert got.comm_.messages == want.comm_.messages
    assert got.n_features_in_ == want.n_features_in_ == 3
    with pytest.raises(NotFittedError):  # the clients' data stayed with the channel
        got.remove(0, fed.client(0)[1][:1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_ledger_of_a_fit_and_of_removals(dtype):
    """Each leaf computed sends client_clusters * (d + 1) numbers of 64 bits in its round; the
    requests (settings, stream, deletions) are not counted."""
    fed = _federation(dtype)
    kp, d = 3, fed.n_features
    model = DCKMeans(4, client_clusters=kp, random_state=0).fit(fed)
    model.remove(2, fed.client(2)[1][:5])
    model.remove(0, fed.client(0)[1][[1, 3]])

    def entry(round_number, l):
        return LedgerEntry(round_number, l, SERVER, "centers+sizes", kp * (d + 1),
                           64 * kp * (d + 1))

    assert model.comm_.messages == [entry(0, 0), entry(0, 1), entry(0, 2), entry(1, 2),
                                    entry(2, 0)]
    assert model.client_centers_[0].dtype == dtype


def test_the_stream_is_lent_client_after_client():
    """The server's generator is the one random_state gave, moved by every client in turn."""
    fed = _federation()
    gen = np.random.default_rng(3)
    model = DCKMeans(4, client_clusters=3, random_state=gen).fit(fed)
    replay = np.random.default_rng(3)
    for l, (X_l, _) in enumerate(fed):
        km = fedcore.KMeans(3, random_state=replay).fit(X_l)
        np.testing.assert_array_equal(model.client_centers_[l], km.cluster_centers_)
    server = fedcore.KMeans(4, random_state=replay).fit(np.concatenate(model.client_centers_))
    np.testing.assert_array_equal(model.cluster_centers_, server.cluster_centers_)
    assert gen.bit_generator.state == replay.bit_generator.state


class _ServerKMeansFails(fedcore.KMeans):
    """k-means that raises when it fits the server's n_clusters = 4 (the clients fit 3)."""

    def fit(self, X, *args, **kwargs):
        if self.n_clusters == 4:
            raise RuntimeError("injected failure of the server's k-means")
        return super().fit(X, *args, **kwargs)


def test_a_removal_whose_server_step_fails_changes_nothing(monkeypatch):
    fed = _federation()
    gen = np.random.default_rng(5)
    model = DCKMeans(4, client_clusters=3, weighted=True, random_state=gen).fit(fed)
    before, gen_before = pickle.dumps(model), gen.bit_generator.state
    centers, client_centers = model.cluster_centers_, list(model.client_centers_)
    ids = fed.client(1)[1][:4]
    with monkeypatch.context() as patch:
        patch.setattr(dckmeans, "KMeans", _ServerKMeansFails)
        with pytest.raises(RuntimeError, match="injected"):
            model.remove(1, ids)
    # Estimator, client roles, server role and ledger as they were, the same arrays, and the
    # stream (the caller's generator, restored in place) where it stood.
    assert pickle.dumps(model) == before
    assert model.cluster_centers_ is centers
    assert all(a is b for a, b in zip(model.client_centers_, client_centers, strict=True))
    assert model.random_state is gen and gen.bit_generator.state == gen_before
    # The next removal gives what it gives after a fresh fit.
    twin = DCKMeans(4, client_clusters=3, weighted=True, random_state=np.random.default_rng(5))
    twin.fit(fed)
    got, want = model.remove(1, ids), twin.remove(1, ids)
    assert (got.n_removed, sorted(got.timings)) == (want.n_removed, sorted(want.timings)) == \
        (4, ["client_unlearn", "server_cluster"])
    np.testing.assert_array_equal(model.cluster_centers_, twin.cluster_centers_)
    for a, b in zip(model.client_centers_, twin.client_centers_, strict=True):
        np.testing.assert_array_equal(a, b)
    assert model.comm_.messages == twin.comm_.messages
    assert model.federated_inertia() == twin.federated_inertia()


def test_the_server_role_alone_is_atomic(monkeypatch):
    fed = _federation()
    est = DCKMeans(4, client_clusters=3, random_state=1)
    channel = InProcessChannel(_roles(est, fed))
    server = est.server_role()
    server.run(channel)
    state, sent = server.rng.bit_generator.state, list(server.centers)
    with monkeypatch.context() as patch:
        patch.setattr(dckmeans, "KMeans", _ServerKMeansFails)
        with pytest.raises(RuntimeError, match="injected"):
            server.remove(channel, 0, fed.client(0)[1][:2])
    assert server.round == 0 and server.rng.bit_generator.state == state
    assert all(a is b for a, b in zip(server.centers, sent, strict=True))


def test_the_client_role_answers_and_refuses():
    rng = np.random.default_rng(0)
    X = rng.random((8, 2))
    client = DCKMClient(X, 1, ids=np.arange(10, 18))
    assert client.X is not X
    stream = stream_state(np.random.default_rng(4))
    with pytest.raises(ProtocolError, match="DCKMRemove before its DCKMFit"):
        client.handle(DCKMRemove(np.array([10]), stream))
    reply = client.handle(DCKMFit(client_clusters=3, n_init=1, stream=stream))
    assert isinstance(reply, DCKMCenters) and reply.centers.shape == (3, 2)
    assert reply.sizes.dtype == np.int64 and reply.sizes.sum() == 8
    assert reply.size() == (9, 576)  # the stream is diagnostic
    data = (client.X, client.ids, client.centers, client.labels)
    with pytest.raises(ValueError, match="contains id 3, not held by client 1"):
        client.handle(DCKMRemove(np.array([3]), stream))
    with pytest.raises(ValueError, match="removing 6 point.* fewer than client_clusters = 3"):
        client.handle(DCKMRemove(np.arange(10, 16), stream))
    assert all(a is b for a, b in zip((client.X, client.ids, client.centers, client.labels),
                                      data))
    client.handle(DCKMRemove(np.array([11, 17]), stream))
    np.testing.assert_array_equal(client.ids, [10, 12, 13, 14, 15, 16])
    np.testing.assert_array_equal(client.X, X[[0, 2, 3, 4, 5, 6]])
    assert data[0].shape == (8, 2)  # replaced, not written into
    with pytest.raises(ValueError, match="holds 2 ids for 8 rows"):
        DCKMClient(X, 0, ids=[0, 1])
    with pytest.raises(ValueError, match="'client_clusters'=9 exceeds the 8 point"):
        DCKMClient(X).handle(DCKMFit(client_clusters=9, n_init=1, stream=stream))
