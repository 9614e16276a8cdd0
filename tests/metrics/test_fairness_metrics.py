"""Fairness metrics against plain-loop references and scikit-learn.

- ``sse`` equals the reference loop and scikit-learn's KMeans inertia at its own converged labels.
- ``balance`` and ``additive_violation`` equal the references of Sec. 5.1 / eq. (33).
- ``balance >= 1 - delta`` in a cluster iff the cluster meets eq. (14) with the default bounds.
No statistical test.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedcore.metrics.fairness import (additive_violation, balance, fairness_bounds,
                                      relative_error, sse)
from tests.reference.cdkm_reference import (balance_reference, sse_reference,
                                            violation_reference)


@st.composite
def labelled(draw):
    n = draw(st.integers(1, 30))
    k = draw(st.integers(1, 4))
    labels = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    cols = [draw(st.lists(st.integers(0, g - 1), min_size=n, max_size=n)) for g in sizes]
    X = np.array(draw(st.lists(st.floats(-10, 10), min_size=2 * n, max_size=2 * n))).reshape(n, 2)
    return X, labels, k, cols


@settings(max_examples=60)
@given(labelled())
def test_sse_equals_reference(case):
    X, labels, _, _ = case
    assert sse(X, labels) == pytest.approx(sse_reference(X, labels), rel=1e-9, abs=1e-9)


def test_sse_matches_sklearn_inertia():
    from sklearn.cluster import KMeans as SKKMeans
    X = np.random.default_rng(0).normal(size=(200, 3))
    km = SKKMeans(4, n_init=1, random_state=0, tol=0).fit(X)
    assert sse(X, km.labels_) == pytest.approx(km.inertia_, rel=1e-6)


@settings(max_examples=60)
@given(labelled(), st.floats(0.0, 0.9))
def test_balance_and_violation_equal_reference(case, delta):
    _, labels, k, cols = case
    got = balance(labels, cols, n_clusters=k)
    ref = balance_reference(labels, cols, k)
    np.testing.assert_allclose(got, ref, rtol=1e-12, equal_nan=True)
    # per-attribute bounds for the reference, in the metric's group order (sorted categories)
    alpha, beta = [], []
    for col in cols:
        cats = sorted(set(col))
        eta = [col.count(c) / len(col) for c in cats]
        alpha.append([e / (1 - delta) for e in eta])
        beta.append([e * (1 - delta) for e in eta])
        remap = {c: i for i, c in enumerate(cats)}
        col[:] = [remap[v] for v in col]
    assert additive_violation(labels, cols, delta=delta, n_clusters=k) == pytest.approx(
        violation_reference(labels, cols, k, alpha, beta), abs=1e-9)


@settings(max_examples=60)
@given(labelled(), st.floats(0.05, 0.9))
def test_balance_threshold_is_the_fairness_constraint(case, delta):
    _, labels, k, cols = case
    bal = balance(labels, cols, n_clusters=k)
    labels = np.array(labels)
    _, alpha, beta = fairness_bounds(cols, delta)
    for j in range(k):
        members = labels == j
        if not members.any():
            assert np.isnan(bal[j])
            continue
        shares = []
        for col in cols:
            col = np.array(col)
            for c in np.unique(col):
                shares.append(np.mean(col[members] == c))
        shares = np.array(shares)
        inside = np.all(shares >= beta - 1e-12) and np.all(shares <= alpha + 1e-12)
        if abs(bal[j] - (1 - delta)) > 1e-9:  # away from the boundary both agree exactly
            assert (bal[j] >= 1 - delta) == inside


def test_relative_error_and_errors():
    X = np.array([[0.0], [2.0], [10.0]])
    assert relative_error(X, [0, 1, 1], [0, 0, 1]) == pytest.approx(16.0)
    assert relative_error(X, [0, 1, 2], [0, 1, 2]) == 1.0
    assert relative_error(X, [0, 0, 1], [0, 1, 2]) == float("inf")
    with pytest.raises(ValueError, match="labels.*3 entries"):
        sse(X, [0, 1])
    with pytest.raises(ValueError, match="labels.*>= 0.*-1"):
        sse(X, [0, -1, 1])
    with pytest.raises(TypeError, match="labels.*integers"):
        balance([0.5, 1.0], ["a", "b"])
    with pytest.raises(ValueError, match="labels.*label 2 >= n_clusters = 2"):
        balance([0, 2], ["a", "b"], n_clusters=2)
    with pytest.raises(ValueError, match="delta.*1.0"):
        fairness_bounds(["a", "b"], delta=1.0)
    with pytest.raises(ValueError, match="groups.*attribute 0 must have shape"):
        additive_violation([0, 1], [["a", "b", "c"]])
    with pytest.raises(ValueError, match="alpha.*one entry per protected group"):
        additive_violation([0, 1], ["a", "b"], alpha=[0.5])
