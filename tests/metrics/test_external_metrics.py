"""center_distance, purity and nmi against brute force, the definitions and scikit-learn.
No statistical tests."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import normalized_mutual_info_score

from fedcore.metrics import center_distance, nmi, purity
from tests.reference.feca_reference import (center_distance_reference, nmi_reference,
                                            purity_reference)

labelings = st.integers(1, 80).flatmap(
    lambda n: st.tuples(st.lists(st.integers(0, 5), min_size=n, max_size=n),
                        st.lists(st.integers(0, 7), min_size=n, max_size=n)))


@settings(max_examples=80)
@given(labelings)
def test_nmi_equals_sklearn_arithmetic(pair):
    t, p = pair
    expected = normalized_mutual_info_score(t, p, average_method="arithmetic")
    assert np.isclose(nmi(t, p), expected, rtol=1e-12, atol=1e-15)
    assert np.isclose(nmi(t, p), nmi_reference(t, p), rtol=1e-9, atol=1e-12)


@settings(max_examples=80)
@given(labelings)
def test_purity_matches_definition(pair):
    t, p = pair
    assert np.isclose(purity(t, p), purity_reference(t, p), rtol=1e-15)
    assert 0.0 < purity(t, p) <= 1.0


def test_metric_limit_cases_and_label_types():
    assert nmi([0, 0, 0], [1, 1, 1]) == normalized_mutual_info_score([0] * 3, [1] * 3) == 1.0
    assert nmi([0, 1, 2], [5, 5, 5]) == normalized_mutual_info_score([0, 1, 2], [5] * 3) == 0.0
    assert nmi([], []) == 1.0 and purity([], []) == 1.0
    assert nmi(["a", "b", "b"], [2, 7, 7]) == 1.0
    assert purity(["x", "x", "y", "y"], [0, 0, 0, 1]) == 0.75


def test_metric_errors_name_arguments():
    with pytest.raises(ValueError, match="same length"):
        nmi([0, 1], [0])
    with pytest.raises(ValueError, match="labels_pred.*1-D"):
        purity([0, 1], [[0, 1]])
    with pytest.raises(ValueError, match="labels_true.*finite"):
        nmi([0.0, np.nan], [0, 1])


@settings(max_examples=60)
@given(seed=st.integers(0, 2**31 - 1), n_a=st.integers(1, 5), n_b=st.integers(1, 5),
       d=st.integers(1, 3))
def test_center_distance_is_optimal_matching(seed, n_a, n_b, d):
    rng = np.random.default_rng(seed)
    A, B = rng.normal(size=(n_a, d)), rng.normal(size=(n_b, d))
    assert np.isclose(center_distance(A, B), center_distance_reference(A, B), rtol=1e-12)
    assert np.isclose(center_distance(A, B), center_distance(B, A), rtol=1e-12)


def test_center_distance_units():
    """Frobenius norm over matched pairs; a permutation of the truth is at distance 0."""
    truth = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    assert center_distance(truth[[2, 0, 1]], truth) == 0.0
    assert center_distance(truth + [[0.0, 1.0], [0.0, 0.0], [2.0, 0.0]], truth) == np.sqrt(5.0)
    with pytest.raises(ValueError, match="true_centers.*features"):
        center_distance(truth, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="centers.*finite"):
        center_distance([[np.inf, 0.0]], truth)
