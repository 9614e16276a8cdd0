"""Bad inputs raise ValueError (bad values) or TypeError (bad types) naming the argument, for
kmeans_plusplus, KMeans and UnlearnableKMeans. Deterministic; no statistical tests.
"""
import re

import numpy as np
import pytest

import fedcore

GOOD = np.arange(24, dtype=np.float64).reshape(8, 3) % 5


def seed_from_uniforms(X, n_clusters=2, sample_weight=None, **kw):
    return fedcore.kmeans_plusplus(X, n_clusters, sample_weight=sample_weight, random_state=0, **kw)


def _kmeans(X, n_clusters=2, sample_weight=None, **kw):
    return fedcore.KMeans(n_clusters, random_state=0, **kw).fit(X, sample_weight=sample_weight)


def _unlearnable(X, n_clusters=2, sample_weight=None, **kw):
    assert sample_weight is None
    return fedcore.UnlearnableKMeans(n_clusters, random_state=0, **kw).fit(X)


ALL = [seed_from_uniforms, _kmeans, _unlearnable]
WEIGHTED = [seed_from_uniforms, _kmeans]


def _with(value, at=(1, 2)):
    X = GOOD.copy()
    X[at] = value
    return X


# ------------------------------------------------------------------------------------------
# X
# ------------------------------------------------------------------------------------------

BAD_X_VALUES = {
    "nan": (_with(np.nan), r"(?i)nan"),
    "inf": (_with(np.inf), r"(?i)inf"),
    "-inf": (_with(-np.inf), r"(?i)inf"),
    "nan_float32": (_with(np.nan).astype(np.float32), r"(?i)nan"),
    "1-D": (np.arange(5.0), r"(?i)2-?D|shape|dimension"),
    "3-D": (np.zeros((4, 2, 2)), r"(?i)2-?D|shape|dimension"),
    "no rows": (np.zeros((0, 3)), r"(?i)sample|shape|empty"),
    "no features": (np.zeros((5, 0)), r"(?i)feature|shape|empty"),
    "empty list": ([], r"(?i)2-?D|shape|empty|sample"),
}


@pytest.mark.parametrize("fit", ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", sorted(BAD_X_VALUES))
def test_bad_X_values(fit, case):
    X, detail = BAD_X_VALUES[case]
    with pytest.raises(ValueError, match="'X'") as info:
        fit(X)
    assert re.search(detail, str(info.value)), str(info.value)


BAD_X_TYPES = {
    "strings": np.array([["a", "b"], ["c", "d"], ["e", "f"]]),
    "object strings": np.array([["a", 1.0], ["b", 2.0], ["c", 3.0]], dtype=object),
    "complex": GOOD.astype(np.complex128),
    "complex with zero imaginary part": GOOD + 0j,
    "a string": "not an array",
    "None": None,
}


@pytest.mark.parametrize("fit", ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", sorted(BAD_X_TYPES))
def test_bad_X_types(fit, case):
    with pytest.raises(TypeError, match="'X'"):
        fit(BAD_X_TYPES[case])


@pytest.mark.parametrize("fit", ALL, ids=lambda f: f.__name__)
def test_good_X_conversions_accepted(fit):
    # Integers, bools and lists are real numbers: accepted (converted to float64).
    fit(GOOD.astype(np.int32))
    fit(GOOD.tolist())
    fit(GOOD > 2, n_clusters=2)


# ------------------------------------------------------------------------------------------
# n_clusters
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fit", ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("n_clusters", [0, -1, 9, 100])
def test_bad_n_clusters_values(fit, n_clusters):
    with pytest.raises(ValueError, match="'n_clusters'") as info:
        fit(GOOD, n_clusters=n_clusters)
    assert str(n_clusters) in str(info.value)


@pytest.mark.parametrize("fit", ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("n_clusters", [2.5, 2.0, "3", None])
def test_bad_n_clusters_types(fit, n_clusters):
    with pytest.raises(TypeError, match="'n_clusters'"):
        fit(GOOD, n_clusters=n_clusters)


@pytest.mark.parametrize("fit", ALL, ids=lambda f: f.__name__)
def test_n_clusters_equal_to_n_rows_is_fine(fit):
    fit(GOOD, n_clusters=8)
    fit(np.zeros((4, 2)), n_clusters=4)  # duplicates: k may exceed the distinct points


@pytest.mark.parametrize("fit", WEIGHTED, ids=lambda f: f.__name__)
def test_n_clusters_above_positive_weights(fit):
    w = np.array([1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0])
    fit(GOOD, n_clusters=2, sample_weight=w)
    with pytest.raises(ValueError, match="'n_clusters'"):
        fit(GOOD, n_clusters=3, sample_weight=w)


# ------------------------------------------------------------------------------------------
# sample_weight
# ------------------------------------------------------------------------------------------

BAD_WEIGHT_VALUES = {
    "negative": (np.array([1.0, 1.0, -1.0, 1.0, 1.0, 1.0, 1.0, 1.0]), r"-1"),
    "nan": (np.array([1.0, np.nan, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]), r"(?i)nan"),
    "inf": (np.array([1.0, np.inf, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]), r"(?i)inf"),
    "too short": (np.ones(7), r"\b7\b|\b8\b"),
    "too long": (np.ones(9), r"\b9\b|\b8\b"),
    "2-D": (np.ones((8, 1)), r"shape"),
}


@pytest.mark.parametrize("fit", WEIGHTED, ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", sorted(BAD_WEIGHT_VALUES))
def test_bad_sample_weight_values(fit, case):
    w, detail = BAD_WEIGHT_VALUES[case]
    with pytest.raises(ValueError, match="'sample_weight'") as info:
        fit(GOOD, sample_weight=w)
    assert re.search(detail, str(info.value)), str(info.value)


@pytest.mark.parametrize("fit", WEIGHTED, ids=lambda f: f.__name__)
@pytest.mark.parametrize("w", [np.array(["a"] * 8), np.ones(8, dtype=np.complex128)],
                         ids=["strings", "complex"])
def test_bad_sample_weight_types(fit, w):
    with pytest.raises(TypeError, match="'sample_weight'"):
        fit(GOOD, sample_weight=w)


@pytest.mark.parametrize("fit", WEIGHTED, ids=lambda f: f.__name__)
def test_all_zero_sample_weight(fit):
    with pytest.raises(ValueError, match="'sample_weight'|'n_clusters'"):
        fit(GOOD, sample_weight=np.zeros(8))


# ------------------------------------------------------------------------------------------
# Other parameters
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fit", ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("random_state", ["seed", 1.5, -3])
def test_bad_random_state(fit, random_state):
    with pytest.raises((TypeError, ValueError), match="'random_state'"):
        if fit is seed_from_uniforms:
            fedcore.kmeans_plusplus(GOOD, 2, random_state=random_state)
        elif fit is _kmeans:
            fedcore.KMeans(2, random_state=random_state).fit(GOOD)
        else:
            fedcore.UnlearnableKMeans(2, random_state=random_state).fit(GOOD)


@pytest.mark.parametrize("params, name, error", [
    (dict(init=np.zeros((3, 3))), "init", ValueError),        # wrong number of centers
    (dict(init=np.zeros((2, 4))), "init", ValueError),        # wrong number of features
    (dict(init=np.array([[0.0, np.nan, 0.0], [1.0, 1.0, 1.0]])), "init", ValueError),
    (dict(init="random-ish"), "init", ValueError),
    (dict(max_iter=0), "max_iter", ValueError),
    (dict(n_init=0), "n_init", ValueError),
    (dict(tol=-1e-3), "tol", ValueError),
    (dict(tol=np.nan), "tol", ValueError),
    (dict(max_iter=2.5), "max_iter", TypeError),
])
def test_bad_kmeans_parameters(params, name, error):
    with pytest.raises(error, match=f"'{name}'"):
        fedcore.KMeans(2, **params).fit(GOOD)


def test_kmeans_predict_checks_features():
    km = fedcore.KMeans(2, random_state=0).fit(GOOD)
    with pytest.raises(ValueError, match=r"\b4\b.*\b3\b|\b3\b.*\b4\b"):
        km.predict(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="'X'"):
        km.predict(np.array([[np.nan, 0.0, 0.0]]))
    with pytest.raises(TypeError, match="'X'"):
        km.transform(np.array([["a", "b", "c"]]))


# ------------------------------------------------------------------------------------------
# UnlearnableKMeans ids
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ids, error, detail", [
    (np.array([0, 1, 2, 3, 4, 5, 6, 6]), ValueError, r"\b6\b"),   # repeated
    (np.arange(7), ValueError, r"\b7\b|\b8\b"),                   # too short
    (np.arange(9), ValueError, r"\b9\b|\b8\b"),                   # too long
    (np.arange(8.0), TypeError, None),                            # not integers
    (np.array(["a"] * 8), TypeError, None),
])
def test_bad_sample_ids(ids, error, detail):
    with pytest.raises(error, match="'sample_ids'") as info:
        fedcore.UnlearnableKMeans(2, random_state=0).fit(GOOD, sample_ids=ids)
    if detail:
        assert re.search(detail, str(info.value)), str(info.value)


def test_bad_removal_ids_types():
    model = fedcore.UnlearnableKMeans(2, random_state=0).fit(GOOD)
    with pytest.raises(TypeError, match="'ids'"):
        model.remove(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="'ids'"):
        model.remove(["a"])
    assert model.n_samples_ == 8


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [0, 1, 5, 16383, 16384, 16385, 100_000, 2_200_000])
def test_scan_values_equals_numpy(dtype, size):
    """The bit-pattern scan (blocks, on Numba's threads from 2M entries) gives NumPy's largest
    absolute value and the first non-finite index with the largest value before it: signed
    zeros, subnormals and the extremes of the dtype included."""
    from fedcore.kernels.summaries import scan_values
    rng = np.random.default_rng(size)
    info = np.finfo(dtype)
    X = (rng.standard_normal(size) * 10).astype(dtype)
    specials = np.array([-0.0, info.smallest_subnormal, -info.smallest_subnormal, info.max,
                         -info.max, info.tiny], dtype=dtype)
    if size >= specials.size:
        X[rng.choice(size, specials.size, replace=False)] = specials
    assert scan_values(X) == (-1, float(np.abs(X).max()) if size else 0.0)
    if size < 4:
        return
    for bad in (np.nan, np.inf, -np.inf):
        Y = X.copy()
        first = int(rng.integers(0, size - 1))
        Y[first] = bad
        Y[-1] = np.nan  # a later non-finite value does not matter
        big = float(np.abs(Y[:first]).max()) if first else 0.0
        assert scan_values(Y) == (first, big)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_check_array_returns_the_largest_entry_of_its_pass(dtype):
    """``return_max_abs`` gives the largest absolute entry of the validated array (what the fit
    passes to Lloyd's bound settings instead of reading X again); it needs finite data."""
    from fedcore._validation import check_array, max_abs
    X = (np.random.default_rng(1).standard_normal((50, 3)) * 7).astype(dtype)
    X[17, 2] = -40
    out, big = check_array(X, "X", distance_range=True, return_max_abs=True)
    assert big == max_abs(out) == 40.0
    np.testing.assert_array_equal(out, X)
    with pytest.raises(TypeError, match="return_max_abs"):
        check_array(X, "X", allow_nonfinite=True, return_max_abs=True)


@pytest.mark.parametrize("dtype", [">f8", ">f4"])
def test_non_native_byte_order_is_read_as_native(dtype):
    """Big-endian input (e.g. from a file) is converted to the native order with the same
    values, then fitted as the native array is."""
    X = np.random.default_rng(0).random((30, 3)).astype(dtype)
    out = fedcore._validation.check_array(X, "X", distance_range=True)
    assert out.dtype.isnative and out.dtype.name == np.dtype(dtype).name
    np.testing.assert_array_equal(out, X)
    native = X.astype(np.dtype(dtype).name)
    a = fedcore.KMeans(3, random_state=0).fit(X)
    b = fedcore.KMeans(3, random_state=0).fit(native)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.predict(X), b.labels_)
