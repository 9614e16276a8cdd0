"""MUFC: exact unlearning of the whole federated model, aggregation, errors."""
import collections

import numpy as np
import pytest
from scipy.stats import chi2_contingency

import fedcore
from fedcore.algorithms.mufc import MUFC

ALPHA = 1e-3  # false-alarm rate of each seeded two-sample test below


def _tiny_federation(drop=None):
    X0 = np.array([[0.0, 0.0], [0.1, 0.0], [1.0, 1.0], [1.0, 1.0]])
    X1 = np.array([[0.0, 1.0], [0.9, 0.1], [0.9, 0.2]])
    ids = [np.arange(4), np.arange(4, 7)]
    arrays = [X0, X1]
    if drop is not None:
        keep = ids[0] != drop
        arrays, ids = [X0[keep], X1], [ids[0][keep], ids[1]]
    return fedcore.HorizontalFederation(arrays, ids)


def _outcome(model):
    clients = tuple(tuple(model._clients[l].center_ids_.tolist()) for l in model._active)
    server = tuple(sorted(tuple(np.round(c, 6)) for c in model.cluster_centers_))
    return clients, server


BOUNDS = (np.zeros(2), np.ones(2))


def _two_sample(counts_a, counts_b):
    keys = sorted(set(counts_a) | set(counts_b))
    table = np.array([[counts_a[k] for k in keys], [counts_b[k] for k in keys]], dtype=float)
    total = table.sum(axis=0)
    common = total >= 10
    rare = table[:, ~common].sum(axis=1, keepdims=True)
    table = np.hstack([table[:, common], rare]) if rare.sum() > 0 else table[:, common]
    return chi2_contingency(table).pvalue, table.shape[1]


@pytest.mark.parametrize("secure, refine", [(False, False), (True, False), (False, True)],
                         ids=["plain", "secure", "complete-clients"])
def test_fit_then_remove_is_distributed_as_refit(secure, refine):
    """Also with complete client training ([MUFC] Appendix M.3): the client re-runs Lloyd from
    its exactly unlearned seeds."""
    n_trials = 3000 if not (secure or refine) else 1500
    removed = 2  # a duplicate point of client 0: often a center
    after, refit = collections.Counter(), collections.Counter()
    for s in range(n_trials):
        m = MUFC(2, client_clusters=2, gamma=0.25, bounds=BOUNDS, secure=secure, server_n_init=1,
                 client_refine=refine, random_state=s).fit(_tiny_federation())
        m.remove(0, [removed])
        after[_outcome(m)] += 1
        # The reference re-fits from scratch (server_update="retrain"): another implementation of
        # the server than the coupled re-fit under test.
        r = MUFC(2, client_clusters=2, gamma=0.25, bounds=BOUNDS, secure=secure, server_n_init=1,
                 server_update="retrain", client_refine=refine, random_state=10**6 + s).fit(
                     _tiny_federation(drop=removed))
        refit[_outcome(r)] += 1
    pvalue, n_bins = _two_sample(after, refit)
    assert n_bins >= 5  # the test has power: many joint outcomes
    assert pvalue > ALPHA


def test_complete_client_training_sends_lloyd_centers():
    """client_refine=True ([MUFC] Appendix M.3): each client sends the bins of its Lloyd centers
    with their cluster sizes; the seeds are the same as without refinement."""
    X, y, _ = fedcore.datasets.make_gaussian_mixture(600, 2, 4, random_state=0)
    fed = fedcore.partition(X, 3, "noniid", labels=y, clusters_per_client=2, random_state=0)
    seeding = MUFC(4, secure=False, random_state=1).fit(fed)
    complete = MUFC(4, secure=False, client_refine=True, random_state=1).fit(fed)
    moved = 0
    for l in complete.client_ids_:
        a, b = seeding.client_model(l), complete.client_model(l)
        np.testing.assert_array_equal(a.seeds_, b.seeds_)
        np.testing.assert_array_equal(complete.client_centers_[l], b.cluster_centers_)
        want = fedcore.KMeans(4, init=b.seeds_, n_init=1).fit(fed.client(l)[0])
        np.testing.assert_allclose(b.cluster_centers_, want.cluster_centers_, rtol=1e-12)
        moved += int(not np.array_equal(b.cluster_centers_, b.seeds_))
    assert moved > 0  # Lloyd moved some client's centers: the option changes what is sent
    bins = np.concatenate([complete._quantizer.bins(complete.client_model(l).cluster_centers_)
                           for l in complete.client_ids_])
    sizes = np.concatenate([complete.client_model(l).cluster_sizes_
                            for l in complete.client_ids_])
    uniq, inverse = np.unique(bins, axis=0, return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=sizes).astype(np.int64)
    np.testing.assert_array_equal(complete.aggregate_[0], uniq[counts > 0])
    np.testing.assert_array_equal(complete.aggregate_[1], counts[counts > 0])
    assert complete.get_params()["client_refine"] is True


def test_remove_clients_equals_fit_without_them_in_distribution():
    n_trials = 2000
    after, refit = collections.Counter(), collections.Counter()
    for s in range(n_trials):
        m = MUFC(2, client_clusters=2, gamma=0.25, bounds=BOUNDS, secure=False, server_n_init=1,
                 random_state=s).fit(_tiny_federation())
        m.remove_clients([1])
        after[_outcome(m)] += 1
        X0, ids0 = _tiny_federation().client(0)
        r = MUFC(2, client_clusters=2, gamma=0.25, bounds=BOUNDS, secure=False, server_n_init=1,
                 server_update="retrain", random_state=10**6 + s).fit(
                     fedcore.HorizontalFederation([X0], [ids0]))
        refit[_outcome(r)] += 1
    pvalue, n_bins = _two_sample(after, refit)
    assert n_bins >= 3
    assert pvalue > ALPHA


def _gaussian_federation(n_clients=10, seed=0):
    X, y, _ = fedcore.datasets.make_gaussian_mixture(1500, 3, 5, cluster_std=0.05,
                                                     random_state=seed)
    return X, fedcore.partition(X, n_clients, "noniid", labels=y, clusters_per_client=2,
                                random_state=seed)


def test_fit_aggregate_counts_every_point_and_reports():
    X, fed = _gaussian_federation()
    m = MUFC(5, client_clusters=2, secure=False, random_state=0).fit(fed)
    bins, counts = m.aggregate_
    assert counts.sum() == X.shape[0] and (counts > 0).all()
    assert bins.shape[1] == X.shape[1] and len(m.client_centers_) == 10
    assert m.cluster_centers_.shape == (5, 3)
    assert m.comm_.summary()["up"]["messages"] >= 10
    ratio = fedcore.metrics.loss_ratio(m.federated_inertia(), X, 5, random_state=0,
                                       candidate_centers=m.cluster_centers_)
    assert 1.0 <= ratio < 2.0
    nearest = ((X[:50, None, :] - m.cluster_centers_[None]) ** 2).sum(axis=2).argmin(axis=1)
    np.testing.assert_array_equal(m.predict(X[:50]), nearest)


@pytest.mark.parametrize("cls", [MUFC, fedcore.SimplifiedFC])
def test_predict_refuses_wrong_width(cls):
    X, fed = _gaussian_federation()
    m = cls(5, client_clusters=2, random_state=0).fit(fed)
    for width in (1, 2, 4):
        with pytest.raises(ValueError, match=r"'X'.*\b%d features" % width):
            m.predict(np.ones((5, width)))
    with pytest.raises(ValueError, match="centers have 3 features"):
        fedcore.algorithms.kmeans.assign(np.ones((5, 2)), m.cluster_centers_)


def test_removal_updates_aggregate_and_reports_stages():
    X, fed = _gaussian_federation()
    m = MUFC(5, client_clusters=2, secure=False, random_state=0).fit(fed)
    _, ids = fed.client(3)
    center_ids = set(m._clients[3].center_ids_.tolist())
    plain = next(i for i in ids.tolist() if i not in center_ids)
    report = m.remove(3, [plain])
    assert not report.client_retrained and report.server_recomputed
    assert m.aggregate_[1].sum() == X.shape[0] - 1
    assert report.modeled_latency > 0 and "server_cluster" in report.timings
    lazy = MUFC(5, client_clusters=2, secure=False, server_update="lazy", random_state=0).fit(fed)
    before = lazy.cluster_centers_.copy()
    assert not lazy.remove(3, [plain]).server_recomputed
    np.testing.assert_array_equal(lazy.cluster_centers_, before)


def test_exact_server_is_lloyd_from_coupled_seeds_on_the_current_aggregate():
    # After removals (one hitting a client center, one client leaving), the exact server's model
    # is Lloyd from its restarts' seeds on the current aggregate, bit for bit, the best restart
    # kept; "retrain" re-fits from scratch instead.
    from fedcore.algorithms.kmeans.lloyd import absolute_tolerance, weighted_lloyd
    X, fed = _gaussian_federation()
    m = MUFC(5, client_clusters=2, secure=False, random_state=0).fit(fed)
    hit = int(m._clients[2].center_ids_[0])
    for client, ids, leaving in ((1, [int(fed.client(1)[1][0])], []), (2, [hit], [7])):
        assert m.remove(client, ids).server_recomputed
        if leaving:
            m.remove_clients(leaving)
        bins, counts = m.aggregate_
        points, w = m._bin_points(bins), counts.astype(float)
        runs = [weighted_lloyd(points, w, points[r.seeds], 300, absolute_tolerance(points, 1e-4))
                for r in m._coupled._restarts]
        assert len(runs) == m.server_n_init
        best = min(runs, key=lambda run: run[2])
        np.testing.assert_array_equal(m.cluster_centers_.view(np.int64), best[0].view(np.int64))
    retrain = MUFC(5, client_clusters=2, secure=False, server_update="retrain",
                   random_state=0).fit(fed)
    assert retrain.remove(1, [int(fed.client(1)[1][0])]).server_recomputed
    assert retrain._coupled is None
    with pytest.raises(ValueError, match="'server_update' must be 'exact', 'retrain' or 'lazy'"):
        MUFC(5, server_update="fresh").fit(fed)


def test_removal_errors_are_atomic():
    X, fed = _gaussian_federation()
    m = MUFC(5, client_clusters=2, secure=False, random_state=0).fit(fed)
    _, ids = fed.client(0)
    before = (m.aggregate_[1].copy(), m.cluster_centers_.copy())
    with pytest.raises(ValueError, match="unknown id"):
        m.remove(0, [fed.client(1)[1][0]])  # a point of another client
    m.remove(0, [int(ids[0])])
    with pytest.raises(ValueError, match="already removed"):
        m.remove(0, [int(ids[0])])
    with pytest.raises(ValueError, match="client_id"):
        m.remove(99, [0])
    with pytest.raises(ValueError, match="every client"):
        m.remove_clients(list(range(10)))
    with pytest.raises(ValueError, match="repeats"):
        m.remove_clients([1, 1])
    assert m.aggregate_[1].sum() == X.shape[0] - 1
    m.remove_clients([1, 2])
    with pytest.raises(ValueError, match="removed client 1"):
        m.remove_clients([1])
    assert m.n_clients_ == 8
    del before


def test_fit_rejects_bad_input():
    X, fed = _gaussian_federation()
    small = fedcore.HorizontalFederation.from_arrays([X[:10], X[10:11]])
    with pytest.raises(ValueError, match="exceeds the 1 point.*client 1"):
        MUFC(3, client_clusters=2, secure=False).fit(small)
    with pytest.raises(TypeError, match="'federation'"):
        MUFC(3, secure=False).fit(X)
    with pytest.raises(ValueError, match="'server_data'"):
        MUFC(3, server_data="median", secure=False).fit(fed)
    with pytest.raises(ValueError, match="does not contain client 0.s data"):
        MUFC(3, secure=False, bounds=(np.zeros(3), np.full(3, 0.5))).fit(fed)


def test_secure_and_plain_give_identical_models():
    X, fed = _gaussian_federation()
    a = MUFC(5, client_clusters=2, secure=True, random_state=4).fit(fed)
    b = MUFC(5, client_clusters=2, secure=False, random_state=4).fit(fed)
    for m in (a, b):
        m.remove(2, [int(fed.client(2)[1][3])])
        assert m.remove(4, [int(m._clients[4].center_ids_[0])]).client_retrained
        m.remove_clients([5])
    np.testing.assert_array_equal(a.aggregate_[0], b.aggregate_[0])
    np.testing.assert_array_equal(a.aggregate_[1], b.aggregate_[1])
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)


def test_secure_server_receives_only_masked_syndromes():
    """What the server adds up are uint64 field elements of the setup's message length, and no
    message equals the client's unmasked syndromes (the plaintext vector's encoding)."""
    X, fed = _gaussian_federation()
    m = MUFC(5, client_clusters=2, secure=True, random_state=0).fit(fed)
    agg = m._aggregator
    seen = {}
    original = agg.server.aggregate

    def spy(messages, **kwargs):
        seen.update(messages)
        return original(messages, **kwargs)

    agg.server.aggregate = spy
    m.remove(1, [int(fed.client(1)[1][0])])
    assert sorted(seen) == list(range(10))
    for l, msg in seen.items():
        assert msg.dtype == np.uint64 and msg.shape == (agg.setup.message_length,)
        client = m._channel.clients[l]  # the client's role: its encoder and its vector
        plain = client.encoder.syndromes(*client.vector)
        assert not np.array_equal(np.asarray(plain, dtype=np.uint64), msg)
    ups = [msg for msg in m.comm_.messages if msg.kind == "scma_syndromes"]
    assert len(ups) == 20  # two rounds, ten clients, every client re-sends
