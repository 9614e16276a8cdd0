"""Federation containers and partitioners: every point on exactly one client, ids stable."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fedcore


@st.composite
def labelled_data(draw):
    n_labels = draw(st.integers(1, 6))
    sizes = draw(st.lists(st.integers(1, 40), min_size=n_labels, max_size=n_labels))
    y = np.repeat(np.arange(n_labels), sizes)
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    rng.shuffle(y)
    X = rng.normal(size=(y.shape[0], 3))
    return X, y


def _check_partition(fed, X, y):
    Xa, ids = fed.to_array()
    np.testing.assert_array_equal(np.sort(ids), np.arange(X.shape[0]))  # each point exactly once
    np.testing.assert_array_equal(Xa, X[ids])  # ids are the rows of X
    assert fed.client_sizes.min() >= 1
    assert fed.n_samples == X.shape[0] and fed.n_features == X.shape[1]
    if y is not None:
        np.testing.assert_array_equal(fed.labels, y)


@given(data=labelled_data(), n_clients=st.integers(1, 8), seed=st.integers(0, 1000))
def test_iid_partition(data, n_clients, seed):
    X, y = data
    n_clients = min(n_clients, X.shape[0])
    fed = fedcore.partition(X, n_clients, "iid", random_state=seed)
    _check_partition(fed, X, None)
    assert fed.client_sizes.max() - fed.client_sizes.min() <= 1


@given(data=labelled_data(), n_clients=st.integers(1, 8), kp=st.integers(1, 4),
       seed=st.integers(0, 1000))
def test_noniid_partition_respects_clusters_per_client(data, n_clients, kp, seed):
    X, y = data
    try:
        fed = fedcore.partition(X, n_clients, "noniid", labels=y, clusters_per_client=kp,
                                random_state=seed)
    except ValueError as err:  # impossible without an empty client or a dropped point: said so
        assert "client" in str(err)
        return
    _check_partition(fed, X, y)
    for l in range(fed.n_clients):
        assert len(np.unique(fed.client_labels(l))) <= kp


@given(data=labelled_data(), n_clients=st.integers(1, 5), seed=st.integers(0, 1000))
def test_dirichlet_partition(data, n_clients, seed):
    X, y = data
    n_clients = min(n_clients, X.shape[0])
    try:
        fed = fedcore.partition(X, n_clients, "dirichlet", labels=y, alpha=0.5,
                                random_state=seed)
    except ValueError as err:
        assert "empty" in str(err)
        return
    _check_partition(fed, X, y)


def test_partition_is_reproducible():
    X, y, _ = fedcore.datasets.make_gaussian_mixture(500, 2, 5, random_state=0)
    a = fedcore.partition(X, 10, "noniid", labels=y, clusters_per_client=2, random_state=3)
    b = fedcore.partition(X, 10, "noniid", labels=y, clusters_per_client=2, random_state=3)
    for l in range(10):
        np.testing.assert_array_equal(a.client(l)[1], b.client(l)[1])


def test_from_arrays_ids_in_client_order():
    fed = fedcore.HorizontalFederation.from_arrays([np.zeros((2, 2)), np.ones((3, 2))])
    np.testing.assert_array_equal(fed.client(0)[1], [0, 1])
    np.testing.assert_array_equal(fed.client(1)[1], [2, 3, 4])


@pytest.mark.parametrize("arrays, match", [
    ([np.zeros((2, 2)), np.zeros((0, 2))], "Client 1 is empty"),
    ([np.zeros((2, 2)), np.zeros((2, 3))], "Client 1 has 3 features"),
    ([np.array([[np.nan, 0.0]])], "must be finite"),
    ([], "at least one client"),
])
def test_from_arrays_rejects_bad_clients(arrays, match):
    with pytest.raises(ValueError, match=match):
        fedcore.HorizontalFederation.from_arrays(arrays)


def test_partition_rejects_bad_arguments():
    X = np.zeros((10, 2))
    y = np.repeat([0, 1], 5)
    with pytest.raises(ValueError, match="'scheme'"):
        fedcore.partition(X, 2, "bogus")
    with pytest.raises(ValueError, match="'labels'"):
        fedcore.partition(X, 2, "noniid", clusters_per_client=1)
    with pytest.raises(ValueError, match="'n_clients'"):
        fedcore.partition(X, 11, "iid")
    with pytest.raises(ValueError, match="cannot cover"):
        fedcore.partition(X, 1, "noniid", labels=y, clusters_per_client=1)
    with pytest.raises(ValueError, match="'alpha'"):
        fedcore.partition(X, 2, "dirichlet", labels=y, alpha=0.0)


def test_vertical_federation_blocks_and_errors():
    X = np.arange(24.0).reshape(4, 6)
    vfed = fedcore.VerticalFederation.from_columns(X, splits=[1, 2, 3], y=np.arange(4),
                                                   groups=[None, np.array([0, 1, 0, 1]), None])
    np.testing.assert_array_equal(vfed.to_array(), X)
    np.testing.assert_array_equal(vfed.party(2), X[:, 3:])
    assert vfed.columns(1) == slice(1, 3)
    assert len(vfed.groups(1)) == 1 and vfed.groups(0) == []
    assert fedcore.VerticalFederation.from_columns(X, splits=4).splits == [2, 2, 1, 1]
    with pytest.raises(ValueError, match="sum to n_features = 6"):
        fedcore.VerticalFederation.from_columns(X, splits=[1, 2])
    with pytest.raises(ValueError, match="'y'"):
        fedcore.VerticalFederation.from_columns(X, splits=2, y=np.arange(3))
