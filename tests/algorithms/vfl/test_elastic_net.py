"""Lasso and elastic net downstream of the VRLR coreset ([VFLC] Appendix A.2): the coordinate
descent kernel and proximal SAGA against slow references, the central solution against
scikit-learn's ``Lasso`` / ``ElasticNet`` (same objective, rescaled), optimality (KKT), the
ledger, and the coreset guarantee of [VFLC] Theorem 2.5.

Objective: ``F(theta) = sum_i w_i (x_i . theta - y_i)^2 + alpha |theta|_2^2 + l1_alpha |theta|_1``
(``w = 1`` on the full data). scikit-learn minimizes ``1/(2 W) sum_i w_i r_i^2 + a rho |theta|_1 +
a (1 - rho)/2 |theta|_2^2`` (``W = sum(w)``; it rescales ``sample_weight`` to sum to the number of
rows, which leaves this form unchanged), which is ``F / (2 W)`` for ``a rho = l1_alpha / (2 W)``
and ``a (1 - rho) = alpha / W``.

Statistical checks are seeded, so each outcome is fixed. ``test_coreset_cost_within_one_plus_eps``
asserts, for 10 seeds and each of ridge, lasso and elastic net (30 draws) with the penalties of
[VFLC] Section 6 / Appendix A.2, that the full-data cost of the solution on a VRLR coreset of
m = 200 of 20,000 heavy-tailed rows is at most ``1 + EPS`` (``EPS = 0.1``) times the optimum, and
that the mean excess is below that of uniform samples of the same size. Calibration on the same
data with seeds 1000-20999 (20,000 draws per penalty, about 90 s:
``python -m tests.algorithms.vfl.test_elastic_net 20000``): largest excess 0.047 (ridge), 0.021
(lasso), 0.033 (elastic net), none above ``EPS``; in 2,000 disjoint groups of 10 draws per penalty
the coreset's mean excess was never at or above the uniform sample's (means 0.009 / 0.002 / 0.002
against 0.051 / 0.066 / 0.130). By the rule of three (95% upper confidence bounds, 3/20,000 per
draw and 3/2,000 per group), the test's false-alarm rate is below 30 * 1.5e-4 + 3 * 1.5e-3 = 9e-3;
the observed tails (maxima at a fifth to a half of ``EPS``) suggest far less.
"""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import ElasticNet, Lasso

import fedcore
from fedcore.algorithms.vfl import (VerticalCoreset, VerticalRidge, elastic_net_central,
                                    ridge_central, uniform_coreset, vrlr_coreset,
                                    vrlr_local_scores)
from fedcore.kernels import coreset as K
from tests.reference.elastic_net_reference import (elastic_net_objective_reference,
                                                   elastic_net_sweep_reference,
                                                   kkt_violation_reference)

EPS = 0.1
TRUTH = np.array([1.5, 0.0, -2.0, 0.0, 0.3, 0.0])


def _problem(n=300, seed=0, splits=(2, 4), noise=0.5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, TRUTH.shape[0]))
    y = X @ TRUTH + noise * rng.standard_normal(n)
    return X, y, fedcore.VerticalFederation.from_columns(X, splits=list(splits), y=y)


def heavy_tailed_problem(n=20_000, seed=4):
    """Rows scaled by |t_2.5| draws (high-leverage rows, where uniform sampling suffers)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, TRUTH.shape[0])) * rng.standard_t(2.5, size=(n, 1))
    y = X @ TRUTH + rng.standard_normal(n)
    return X, y, fedcore.VerticalFederation.from_columns(X, splits=[3, 3], y=y)


def sklearn_solution(X, y, weights, alpha, l1_alpha):
    """scikit-learn's minimizer of ``F`` (module docstring), to a duality gap far below ours."""
    W = float(np.sum(weights))
    a1, a2 = l1_alpha / (2.0 * W), alpha / W
    kw = dict(fit_intercept=False, tol=1e-14, max_iter=1_000_000)
    model = Lasso(alpha=a1, **kw) if alpha == 0 else ElasticNet(alpha=a1 + a2,
                                                                 l1_ratio=a1 / (a1 + a2), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # a ConvergenceWarning at tol=1e-14 is only rounding
        model.fit(X, y, sample_weight=weights)
    return model.coef_


def full_cost(X, y, theta, alpha, l1_alpha):
    r = X @ theta - y
    return float(r @ r + alpha * theta @ theta + l1_alpha * np.abs(theta).sum())


PENALTIES = [(0.0, 60.0), (0.0, 400.0), (30.0, 60.0), (300.0, 900.0), (0.0, 1e-6)]


# ------------------------------------------------------------------------------------------------
# Kernels against the slow references
# ------------------------------------------------------------------------------------------------

@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.integers(1, 5),
       st.sampled_from([0.0, 0.7]), st.sampled_from([0.0, 0.5, 5.0]), st.booleans())
def test_elastic_net_sweep_matches_reference(seed, m, d, alpha, l1, zero_column):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    if zero_column:
        X[:, 0] = 0.0          # a column that does not enter F (set to 0 when alpha = 0)
    y = rng.standard_normal(m)
    w = rng.random(m) * (rng.random(m) > 0.2)
    theta0 = rng.standard_normal(d)
    gram = X.T @ (X * w[:, None])
    rhs = X.T @ (w * y)
    expected = elastic_net_sweep_reference(X, y, w, alpha, l1, theta0)
    for fn in (K.elastic_net_sweep, K.elastic_net_sweep.py_func):
        theta, grad = theta0.copy(), gram @ theta0
        largest = fn(gram, rhs, alpha, l1, theta, grad)
        np.testing.assert_allclose(theta, expected, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(grad, gram @ theta, rtol=1e-9, atol=1e-9)
        assert largest == pytest.approx(np.max(np.abs(theta - theta0)), rel=1e-9, abs=1e-11)
        # the sweep never increases F (each coordinate moves to its exact minimizer)
        before = elastic_net_objective_reference(X, y, w, alpha, l1, theta0)
        after = elastic_net_objective_reference(X, y, w, alpha, l1, theta)
        assert after <= before + 1e-9 * (1.0 + abs(before))


# ------------------------------------------------------------------------------------------------
# Central solution: scikit-learn, KKT, duality gap
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha, l1_alpha", PENALTIES)
@pytest.mark.parametrize("splits", [(2, 4), (1, 1, 4), (6,)])
def test_full_data_matches_sklearn_and_kkt(alpha, l1_alpha, splits):
    X, y, vfed = _problem(splits=splits)
    model = VerticalRidge(alpha=alpha, l1_alpha=l1_alpha).fit(vfed)
    ref = sklearn_solution(X, y, np.ones(len(y)), alpha, l1_alpha)
    np.testing.assert_allclose(model.coef_, ref, rtol=1e-8, atol=1e-9)
    ours, theirs = (full_cost(X, y, c, alpha, l1_alpha) for c in (model.coef_, ref))
    assert abs(ours - theirs) <= 1e-12 * theirs
    assert ours <= theirs * (1 + 1e-13)
    scale = float(np.max(np.abs(2 * X.T @ y)))
    assert kkt_violation_reference(X, y, np.ones(len(y)), alpha, l1_alpha,
                                   model.coef_) <= 1e-7 * scale
    # exact zeros where scikit-learn has them
    np.testing.assert_array_equal(model.coef_ == 0, ref == 0)
    assert model.n_iter_ > 0
    # the ledger is that of the central solver: every row and label, once
    assert model.comm_.n_elements == X.size + len(y)


@pytest.mark.parametrize("alpha, l1_alpha", PENALTIES[:4])
def test_weighted_coreset_matches_sklearn_sample_weight(alpha, l1_alpha):
    X, y, vfed = _problem(n=500, seed=3)
    cs = vrlr_coreset(vfed, 120, random_state=1)
    model = VerticalRidge(alpha=alpha, l1_alpha=l1_alpha).fit(vfed, coreset=cs)
    Xs, ys = X[cs.indices], y[cs.indices]
    ref = sklearn_solution(Xs, ys, cs.weights, alpha, l1_alpha)
    np.testing.assert_allclose(model.coef_, ref, rtol=1e-8, atol=1e-9)
    scale = float(np.max(np.abs(2 * Xs.T @ (cs.weights * ys))))
    assert kkt_violation_reference(Xs, ys, cs.weights, alpha, l1_alpha,
                                   model.coef_) <= 1e-7 * scale
    # merged repeats (same rows, summed weights) give the same problem
    merged = VerticalRidge(alpha=alpha, l1_alpha=l1_alpha).fit(vfed, coreset=cs.compress())
    np.testing.assert_allclose(merged.coef_, model.coef_, rtol=1e-8, atol=1e-10)


def test_large_l1_gives_zero_and_tiny_l1_gives_ridge():
    X, y, vfed = _problem()
    # theta = 0 is optimal iff l1_alpha >= max_f |2 x_f . y| (KKT at 0)
    threshold = float(np.max(np.abs(2 * X.T @ y)))
    assert not VerticalRidge(alpha=5.0, l1_alpha=threshold * 1.0001).fit(vfed).coef_.any()
    assert VerticalRidge(alpha=5.0, l1_alpha=threshold * 0.99).fit(vfed).coef_.any()
    ridge = VerticalRidge(alpha=5.0).fit(vfed).coef_
    np.testing.assert_allclose(VerticalRidge(alpha=5.0, l1_alpha=1e-9).fit(vfed).coef_, ridge,
                               rtol=1e-8, atol=1e-10)
    # l1_alpha = 0 is the closed form, bit for bit
    assert ridge.tobytes() == ridge_central(X, y, np.ones(len(y)), 5.0).tobytes()


def test_elastic_net_central_nearly_collinear_and_warning():
    """Nearly collinear columns: coordinate descent crawls (about 1e-6 of the way per sweep),
    the active-set finish reaches the optimum, from any start."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal((200, 1))
    X = base + 1e-3 * rng.standard_normal((200, 4))
    y = base[:, 0] + 0.1 * rng.standard_normal(200)
    w = np.ones(200)
    ref = sklearn_solution(X, y, w, 0.0, 1.0)
    scale = float(np.max(np.abs(2 * X.T @ y)))
    for max_sweeps in (0, 3, 1000):
        theta, n_iter = elastic_net_central(X, y, w, 0.0, 1.0, max_sweeps=max_sweeps)
        assert full_cost(X, y, theta, 0.0, 1.0) <= full_cost(X, y, ref, 0.0, 1.0) * (1 + 1e-12)
        assert kkt_violation_reference(X, y, w, 0.0, 1.0, theta) <= 1e-9 * scale
        assert 0 < n_iter
    np.testing.assert_allclose(theta, ref, rtol=1e-6, atol=1e-8)
    with pytest.warns(RuntimeWarning, match=r"optimality conditions hold to .*tol=0\.0"):
        elastic_net_central(X, y, w, 0.0, 1.0, tol=0.0)


# ------------------------------------------------------------------------------------------------
# Proximal SAGA and the ledger
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha, l1_alpha", [(0.0, 400.0), (300.0, 900.0)])
def test_saga_converges_to_central_and_ledger(alpha, l1_alpha):
    X, y, vfed = _problem(n=600, seed=2)
    m, T = 150, 2
    for cs, sends_weights in ((vrlr_coreset(vfed, m, random_state=0), True),
                              (uniform_coreset(vfed, m, random_state=0), False)):
        central = VerticalRidge(alpha=alpha, l1_alpha=l1_alpha).fit(vfed, coreset=cs)
        saga = VerticalRidge(alpha=alpha, l1_alpha=l1_alpha, solver="saga", max_iter=3000,
                             tol=1e-10, random_state=0).fit(vfed, coreset=cs)
        np.testing.assert_allclose(saga.coef_, central.coef_, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(saga.coef_ == 0, central.coef_ == 0)
        # Ridge's messages plus the m weights to each party when they differ (a DIS coreset):
        # setup (row norms up, step and seed down, [weights down], -y up and forwarded),
        # 2mT scalars and 3T progress elements per epoch, the coefficients at the end.
        e = saga.n_iter_
        setup = m * T + 2 * T + (m * T if sends_weights else 0) + m + m * T
        expected = cs.comm.n_elements + setup + e * (2 * m * T + 3 * T) + 6
        assert saga.comm_.n_elements == expected
        kinds = {msg.kind for msg in saga.comm_.messages}
        assert ("weights" in kinds) == sends_weights
        # the l1 term adds no message: ridge SAGA with the same number of epochs sends the same
        ridge = VerticalRidge(alpha=alpha + 1.0, solver="saga", max_iter=e, tol=0.0,
                              random_state=0).fit(vfed, coreset=cs)
        assert ridge.n_iter_ == e and ridge.comm_.n_elements == expected
    full = VerticalRidge(alpha=alpha, l1_alpha=l1_alpha, solver="saga", max_iter=3000, tol=1e-10,
                         random_state=1).fit(vfed)
    assert "weights" not in {msg.kind for msg in full.comm_.messages}
    np.testing.assert_allclose(full.coef_, VerticalRidge(alpha=alpha, l1_alpha=l1_alpha)
                               .fit(vfed).coef_, rtol=1e-6, atol=1e-7)


def test_same_seed_same_output_and_params():
    _, _, vfed = _problem(n=200)
    a = VerticalRidge(alpha=1.0, l1_alpha=50.0, solver="saga", max_iter=5, random_state=3)
    b = VerticalRidge(alpha=1.0, l1_alpha=50.0, solver="saga", max_iter=5, random_state=3)
    assert a.fit(vfed).coef_.tobytes() == b.fit(vfed).coef_.tobytes()
    assert a.get_params()["l1_alpha"] == 50.0
    assert VerticalRidge().get_params()["l1_alpha"] == 0.0


def test_l1_alpha_errors():
    _, _, vfed = _problem(n=20)
    with pytest.raises(ValueError, match="'l1_alpha' must be >= 0.0, got -1.0"):
        VerticalRidge(l1_alpha=-1.0).fit(vfed)
    with pytest.raises(ValueError, match="'l1_alpha' must be finite, got nan"):
        VerticalRidge(l1_alpha=np.nan).fit(vfed)
    with pytest.raises(TypeError, match="'l1_alpha' must be a real number, got str"):
        VerticalRidge(l1_alpha="1", solver="saga").fit(vfed)


# ------------------------------------------------------------------------------------------------
# The coreset guarantee ([VFLC] Theorem 2.5 with Definition 2.3)
# ------------------------------------------------------------------------------------------------

def paper_penalties(n):
    """[VFLC] Section 6 (ridge) and Appendix A.2 (lasso, elastic net), as (alpha, l1_alpha)."""
    return {"ridge": (0.1 * n, 0.0), "lasso": (0.0, 2.0 * n), "elastic net": (1.0 * n, 2.0 * n)}


def coreset_excess(X, y, vfed, scores, alpha, l1_alpha, optimum, seed, m=200):
    """Full-data cost of the solution on a VRLR coreset and on a uniform sample (same m), as
    ``cost / optimum - 1``; plus the coreset and its solution."""
    rng = np.random.default_rng(seed)
    out = []
    for cs in (VerticalCoreset(m, random_state=rng).fit(scores).coreset_,
               uniform_coreset(vfed, m, random_state=rng)):
        theta = VerticalRidge(alpha=alpha, l1_alpha=l1_alpha).fit(vfed, coreset=cs).coef_
        out.append((full_cost(X, y, theta, alpha, l1_alpha) / optimum - 1.0, cs, theta))
    return out


@pytest.mark.parametrize("penalty", ["ridge", "lasso", "elastic net"])
def test_coreset_cost_within_one_plus_eps(penalty):
    X, y, vfed = heavy_tailed_problem()
    alpha, l1_alpha = paper_penalties(len(y))[penalty]
    theta_star = VerticalRidge(alpha=alpha, l1_alpha=l1_alpha).fit(vfed).coef_
    optimum = full_cost(X, y, theta_star, alpha, l1_alpha)
    scores = vrlr_local_scores(vfed)
    excess = {"coreset": [], "uniform": []}
    for seed in range(10):
        (c, cs, theta_s), (u, _, _) = coreset_excess(X, y, vfed, scores, alpha, l1_alpha,
                                                     optimum, seed)
        excess["coreset"].append(c)
        excess["uniform"].append(u)
        # Deterministic half of Theorem 2.5: with eps_S the coreset's error at theta_S and at
        # theta*, cost(X, theta_S) <= (1 + eps_S) / (1 - eps_S) cost(X, theta*), because theta_S
        # minimizes the coreset cost (any exact solver; no false alarms).
        Xs, ys, w = X[cs.indices], y[cs.indices], cs.weights

        def coreset_cost(theta):
            r = Xs @ theta - ys
            return float(w @ (r * r) + alpha * theta @ theta + l1_alpha * np.abs(theta).sum())

        assert coreset_cost(theta_s) <= coreset_cost(theta_star) * (1 + 1e-12)
        eps_s = max(abs(coreset_cost(t) / full_cost(X, y, t, alpha, l1_alpha) - 1)
                    for t in (theta_s, theta_star))
        assert eps_s < 1 and c <= (1 + eps_s) / (1 - eps_s) - 1 + 1e-12
    assert max(excess["coreset"]) <= EPS, excess["coreset"]
    assert np.mean(excess["coreset"]) < np.mean(excess["uniform"]), excess


def calibrate(n_draws):
    """The calibration quoted in the module docstring: seeds 1000, ..., 1000 + n_draws - 1."""
    X, y, vfed = heavy_tailed_problem()
    scores = vrlr_local_scores(vfed)
    for penalty, (alpha, l1_alpha) in paper_penalties(len(y)).items():
        theta_star = VerticalRidge(alpha=alpha, l1_alpha=l1_alpha).fit(vfed).coef_
        optimum = full_cost(X, y, theta_star, alpha, l1_alpha)
        draws = np.array([[c for c, _, _ in coreset_excess(X, y, vfed, scores, alpha, l1_alpha,
                                                           optimum, seed)]
                          for seed in range(1000, 1000 + n_draws)])
        c, u = draws[:, 0], draws[:, 1]
        groups = n_draws // 10
        worse = int(np.sum(c[:groups * 10].reshape(groups, 10).mean(axis=1)
                           >= u[:groups * 10].reshape(groups, 10).mean(axis=1)))
        print(f"{penalty}: {np.count_nonzero(theta_star)} nonzero coefficients; coreset excess "
              f"mean {c.mean():.3g}, max {c.max():.3g}, above EPS {int(np.sum(c > EPS))} of "
              f"{n_draws}; uniform mean {u.mean():.3g}; groups of 10 with coreset mean >= "
              f"uniform mean: {worse} of {groups}")


if __name__ == "__main__":
    import sys
    calibrate(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
