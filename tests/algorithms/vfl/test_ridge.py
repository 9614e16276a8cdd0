"""VerticalRidge: closed form against the least-squares reference, vertical SAGA converging to it,
coreset runs, the ledger, and errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fedcore
from fedcore.algorithms.vfl import uniform_coreset, vrlr_coreset
from fedcore.algorithms.vfl.ridge import VerticalRidge
from tests.reference.coreset_reference import ridge_reference


def _problem(n=400, d=5, seed=0, splits=(2, 3)):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n)
    return X, y, fedcore.VerticalFederation.from_columns(X, splits=list(splits), y=y)


@settings(max_examples=25)
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.5, 40.0]),
       st.sampled_from([(1, 1, 3), (4, 1), (5,)]))
def test_central_matches_reference_weighted(seed, alpha, splits):
    X, y, vfed = _problem(n=60, seed=seed, splits=splits)
    cs = uniform_coreset(vfed, 45, random_state=seed)
    cs.weights[:] = np.random.default_rng(seed).random(45) * 3  # arbitrary positive weights
    model = VerticalRidge(alpha=alpha).fit(vfed, coreset=cs)
    ref = ridge_reference(X[cs.indices], y[cs.indices], cs.weights, alpha)
    np.testing.assert_allclose(model.coef_, ref, rtol=1e-7, atol=1e-9)


def test_central_full_data_and_ledger():
    X, y, vfed = _problem()
    model = VerticalRidge(alpha=40.0).fit(vfed)
    np.testing.assert_allclose(model.coef_, ridge_reference(X, y, np.ones(400), 40.0), rtol=1e-9)
    assert model.comm_.n_elements == 400 * 5 + 400  # every row and label, once (Central)
    assert model.n_iter_ == 0
    np.testing.assert_allclose(model.predict(X), X @ model.coef_)


def test_saga_converges_to_central_on_coreset_and_full():
    X, y, vfed = _problem(n=1500, seed=2)
    lam = 0.1 * 1500
    cs = vrlr_coreset(vfed, 300, random_state=0)
    central = VerticalRidge(alpha=lam).fit(vfed, coreset=cs)
    saga = VerticalRidge(alpha=lam, solver="saga", max_iter=400, tol=1e-9,
                         random_state=0).fit(vfed, coreset=cs)
    np.testing.assert_allclose(saga.coef_, central.coef_, rtol=1e-5, atol=1e-6)
    full = VerticalRidge(alpha=lam, solver="saga", max_iter=200, tol=1e-8,
                         random_state=0).fit(vfed)
    np.testing.assert_allclose(full.coef_, VerticalRidge(alpha=lam).fit(vfed).coef_, rtol=1e-5,
                               atol=1e-6)
    # ledger: coreset messages, setup (row norms, step+seed, the m coreset weights to each party,
    # residuals), 2mT scalars per epoch, 3 progress elements per party and epoch, coefficients
    m, T, e = 300, 2, saga.n_iter_
    expected = (cs.comm.n_elements + (m * T + 2 * T + m * T + m + m * T)
                + e * (2 * m * T + 3 * T) + 5)
    assert saga.comm_.n_elements == expected
    assert saga.comm_.messages[:len(cs.comm.messages)] == cs.comm.messages


def test_coreset_ridge_close_to_full_and_better_than_uniform():
    """C-Central test loss near Central's and below U-Central's, heavy-tailed rows (mean of 5)."""
    rng = np.random.default_rng(4)
    n, d = 20000, 6
    X = rng.standard_normal((n, d)) * rng.standard_t(2.5, size=(n, 1))
    y = X @ rng.standard_normal(d) + rng.standard_normal(n)
    vfed = fedcore.VerticalFederation.from_columns(X, splits=[3, 3], y=y)
    Xt = rng.standard_normal((5000, d)) * rng.standard_t(2.5, size=(5000, 1))
    yt = Xt @ np.linalg.lstsq(X, y, rcond=None)[0] + rng.standard_normal(5000)
    lam = 0.1 * n

    def loss(model):
        return float(np.mean((model.predict(Xt) - yt) ** 2))

    full = loss(VerticalRidge(alpha=lam).fit(vfed))
    c = np.mean([loss(VerticalRidge(alpha=lam).fit(vfed, vrlr_coreset(vfed, 200, random_state=s)))
                 for s in range(5)])
    u = np.mean([loss(VerticalRidge(alpha=lam).fit(vfed, uniform_coreset(vfed, 200,
                                                                         random_state=s)))
                 for s in range(5)])
    assert c < u, (c, u)
    assert c < 1.1 * full, (c, full)


def test_ridge_errors():
    X, y, vfed = _problem(n=20)
    with pytest.raises(ValueError, match="'solver' must be 'central' or 'saga', got 'lbfgs'"):
        VerticalRidge(solver="lbfgs").fit(vfed)
    with pytest.raises(ValueError, match="'alpha' must be >= 0.0, got -1.0"):
        VerticalRidge(alpha=-1.0).fit(vfed)
    with pytest.raises(ValueError, match="labels y on its last party"):
        VerticalRidge().fit(fedcore.VerticalFederation.from_columns(X, splits=[2, 3]))
    with pytest.raises(ValueError, match="'step_size' must be > 0.0, got 0.0"):
        VerticalRidge(solver="saga", step_size=0.0).fit(vfed)
    with pytest.raises(FloatingPointError, match="SAGA diverged"):
        VerticalRidge(solver="saga", step_size=1e3, max_iter=50, random_state=0).fit(vfed)
    with pytest.raises(TypeError, match="'coreset' must be a Coreset"):
        VerticalRidge().fit(vfed, coreset=np.arange(3))
    with pytest.raises(ValueError, match="X has 2 features"):
        VerticalRidge().fit(vfed).predict(np.ones((3, 2)))


def test_saga_same_seed_same_output():
    _, _, vfed = _problem(n=200)
    a = VerticalRidge(alpha=1.0, solver="saga", max_iter=5, random_state=3).fit(vfed)
    b = VerticalRidge(alpha=1.0, solver="saga", max_iter=5, random_state=3).fit(vfed)
    assert a.coef_.tobytes() == b.coef_.tobytes()
    assert a.get_params()["solver"] == "saga"
