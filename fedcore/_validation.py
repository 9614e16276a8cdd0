"""Input validation for the public layer. Kernels assume validated input.

Every error names the argument and the offending value, as ``ValueError`` for bad values and
``TypeError`` for bad types. Nothing is clipped, dropped or filled silently.
"""
import numbers

import numpy as np

from .kernels.summaries import scan_values

__all__ = [
    "DataTypeError",
    "check_array",
    "check_sample_weight",
    "check_random_state",
    "check_int",
    "check_scalar",
    "check_ids",
    "check_labels",
    "check_categories",
    "check_distance_range",
    "check_weighted_range",
    "weight_names",
    "check_fitted_array",
    "check_fitted_centers",
]


class DataTypeError(TypeError, ValueError):
    """Unsupported data type; both a ``TypeError`` and a ``ValueError`` for callers' convenience."""


def check_array(X, name="X", *, ensure_2d=True, dtype=("float64", "float32"), copy=False,
                min_samples=1, allow_nonfinite=False, distance_range=False, n_features=None,
                return_max_abs=False):
    """Return ``X`` as a C-contiguous float32 or float64 array, or raise naming ``name``.

    ``distance_range``: also refuse entries so large that squared Euclidean distances would
    overflow float64 (:func:`check_distance_range`), in the same pass as the finiteness check;
    ``n_features`` is the width the limit is computed for (default: the last axis of ``X``; a
    party's block of a vertical federation is checked against the width of the joined rows).
    ``return_max_abs``: return ``(X, largest absolute entry)``, the entry found by the same pass
    (finite data only: not with ``allow_nonfinite``).

    float32 and float64 keep their dtype; other real numeric dtypes (ints, bools) become float64.
    Complex, object and string data raise ``TypeError``; so do scipy sparse matrices.
    """
    if return_max_abs and allow_nonfinite:
        raise TypeError("check_array: return_max_abs needs finite data (allow_nonfinite=False)")
    if hasattr(X, "tocsr") or hasattr(X, "toarray"):
        raise TypeError(f"Argument {name!r} is a sparse matrix ({type(X).__name__}); fedcore "
                        "needs dense data: pass X.toarray()")
    if hasattr(X, "__array__") or isinstance(X, (list, tuple)):
        try:
            arr = np.asarray(X)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"Argument {name!r} could not be converted to an array: "
                             f"{exc}") from None
    else:
        raise TypeError(f"Argument {name!r} must be array-like, got {type(X).__name__}")
    if arr.dtype.kind == "c":
        raise DataTypeError(f"Complex data not supported: argument {name!r} has dtype "
                            f"{arr.dtype}")
    if arr.dtype.kind in "OUSV":
        if arr.dtype.kind == "O":
            try:
                arr = arr.astype(np.float64)
            except (ValueError, TypeError) as exc:
                raise TypeError(f"Argument {name!r} must hold real numbers, got dtype object "
                                f"with a non-numeric entry ({exc})") from None
        else:
            raise TypeError(f"Argument {name!r} must hold real numbers, got dtype {arr.dtype}")
    if ensure_2d:
        if arr.ndim != 2:
            raise ValueError(
                f"Argument {name!r} must be 2-D of shape (n_samples, n_features), got shape "
                f"{arr.shape}. Reshape your data either using array.reshape(-1, 1) if it has a "
                "single feature or array.reshape(1, -1) if it contains a single sample.")
        if arr.shape[1] < 1:
            raise ValueError(f"Argument {name!r} has 0 feature(s) (shape={arr.shape}) "
                             "while a minimum of 1 is required.")
    if arr.ndim == 0 and min_samples > 0:
        raise ValueError(f"Argument {name!r} must be an array, got the scalar {arr.item()!r}")
    if arr.ndim and arr.shape[0] < min_samples:
        raise ValueError(f"Argument {name!r} has {arr.shape[0]} sample(s) (shape={arr.shape}) "
                         f"while a minimum of {min_samples} is required.")
    # native byte order (the kernels read native values); same values
    target = np.dtype(arr.dtype.name) if arr.dtype.name in dtype else np.dtype(dtype[0])
    out = np.array(arr, dtype=target, order="C", copy=True) if copy else \
        np.ascontiguousarray(arr, dtype=target)
    width = (out.shape[-1] if out.ndim else 1) if n_features is None else n_features
    big = 0.0
    if not allow_nonfinite and out.size:
        first, big = scan_values(out.reshape(-1))
        if first >= 0:
            raise ValueError(f"Argument {name!r} must be finite, got "
                             f"{float(out.reshape(-1)[first])!r} at index "
                             f"{_index(first, out.shape)} (NaN or infinity)")
        if distance_range:
            _check_magnitude(big, width, name)
    elif distance_range and out.size:
        _check_magnitude(max_abs(out), width, name)
    return (out, big) if return_max_abs else out


def _index(flat, shape):
    """A flat index as the caller would write it: ``7`` in 1-D, ``(1, 0)`` in 2-D."""
    if len(shape) <= 1:
        return int(flat)
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def check_sample_weight(sample_weight, n_samples, name="sample_weight"):
    """Return float64 weights of shape (n_samples,), all finite and >= 0, with a finite sum;
    None means ones, a number is broadcast."""
    if sample_weight is None:
        return np.ones(n_samples, dtype=np.float64)
    if isinstance(sample_weight, numbers.Real) and not isinstance(sample_weight, bool):
        w = np.full(n_samples, float(sample_weight))
    else:
        w = check_array(sample_weight, name, ensure_2d=False, dtype=("float64",), min_samples=0,
                        allow_nonfinite=True)
        if w.ndim != 1 or w.shape[0] != n_samples:
            raise ValueError(f"Argument {name!r} must have shape ({n_samples},), got {w.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.sum(w))
    if not np.isfinite(total):
        finite = np.isfinite(w)
        if not finite.all():
            i = int(np.argmin(finite))
            raise ValueError(f"Argument {name!r} must be finite, got {float(w[i])!r} at index "
                             f"{i}")
    if (w < 0).any():
        i = int(np.argmax(w < 0))
        raise ValueError(f"Argument {name!r} must be non-negative, got {float(w[i])!r} at "
                         f"index {i}")
    if not np.isfinite(total):
        raise ValueError(f"Argument {name!r} sums to more than the largest float64 (the sum "
                         f"overflows; largest weight {float(w.max()):.3g}): rescale the weights")
    return np.ascontiguousarray(w, dtype=np.float64)


#: NumPy's bit generators, by name: the ones whose state fedcore saves (fedcore.load) and lends
#: to clients (fedcore.federation.protocol.stream_state).
BIT_GENERATORS = {name: getattr(np.random, name)
                  for name in ("MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64")}


def check_random_state(random_state, name="random_state"):
    """Return a ``numpy.random.Generator`` from None, an int, or a Generator (used as is)."""
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"Argument {name!r} must be a non-negative int, got {random_state}")
        return np.random.default_rng(int(random_state))
    if isinstance(random_state, np.random.RandomState):
        # Derive a Generator deterministically from a legacy RandomState.
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise TypeError(f"Argument {name!r} must be None, an int or a numpy.random.Generator, "
                    f"got {type(random_state).__name__}")


def check_int(value, name, *, min_value=None, max_value=None):
    """Return ``value`` as int after checking its type and range."""
    if type(value) is not int and (isinstance(value, bool)
                                   or not isinstance(value, numbers.Integral)):
        raise TypeError(f"Argument {name!r} must be an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if min_value is not None and value < min_value:
        raise ValueError(f"Argument {name!r} must be >= {min_value}, got {value}")
    if max_value is not None and value > max_value:
        raise ValueError(f"Argument {name!r} must be <= {max_value}, got {value}")
    return value


def check_scalar(value, name, *, min_value=None, max_value=None, include_min=True):
    """Return ``value`` as a finite float after checking its type and range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"Argument {name!r} must be a real number, got {type(value).__name__} "
                        f"{value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"Argument {name!r} must be finite, got {value}")
    if min_value is not None and (value < min_value or (not include_min and value == min_value)):
        op = ">=" if include_min else ">"
        raise ValueError(f"Argument {name!r} must be {op} {min_value}, got {value}")
    if max_value is not None and value > max_value:
        raise ValueError(f"Argument {name!r} must be <= {max_value}, got {value}")
    return value


def check_ids(ids, name="ids"):
    """Return ``ids`` as a 1-D int64 array with no repeats; raise naming the first repeat."""
    if hasattr(ids, "tocsr") or hasattr(ids, "toarray"):
        raise TypeError(f"Argument {name!r} is a sparse matrix; pass a 1-D array of ints")
    arr = np.asarray(ids)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"Argument {name!r} must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"Argument {name!r} must hold integers, got dtype {arr.dtype}")
    if arr.size and arr.dtype.kind == "u" and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"Argument {name!r} contains id {int(arr.max())}, above the largest "
                         f"id {np.iinfo(np.int64).max} (ids are int64)")
    arr = arr.astype(np.int64, copy=False)
    if arr.size > 1:
        s = np.sort(arr)
        dup = s[1:] == s[:-1]
        if dup.any():
            raise ValueError(f"Argument {name!r} repeats id {int(s[1:][dup][0])}")
    return arr


def check_labels(labels, name="labels", n_samples=None, n_clusters=None):
    """Return cluster labels as a 1-D int64 array of non-negative ints, ``n_samples`` of them
    when given, each below ``n_clusters`` when given; raise naming ``name``."""
    if hasattr(labels, "tocsr") or hasattr(labels, "toarray"):
        raise TypeError(f"Argument {name!r} is a sparse matrix; pass a 1-D array of ints")
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"Argument {name!r} must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"Argument {name!r} must hold integers, got dtype {arr.dtype}")
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(f"Argument {name!r} must have {n_samples} entries (one per row), "
                         f"got {arr.shape[0]}")
    if arr.size and arr.min() < 0:
        raise ValueError(f"Argument {name!r} must be >= 0, got {int(arr.min())}")
    if arr.size and arr.dtype.kind == "u" and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"Argument {name!r} holds label {int(arr.max())}, above the largest "
                         "int64")
    if n_clusters is not None and arr.size and arr.max() >= n_clusters:
        raise ValueError(f"Argument {name!r} holds label {int(arr.max())}, but there are "
                         f"{n_clusters} cluster(s)")
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_categories(values, name, n_samples=None):
    """Return categorical ``values`` (labels, groups, client names) as a 1-D array that
    ``np.unique`` can sort, or raise naming ``name``: sparse matrices and values that cannot be
    ordered (None among numbers...) raise ``TypeError``; another shape or length, NaN and
    infinity raise ``ValueError``."""
    if hasattr(values, "tocsr") or hasattr(values, "toarray"):
        raise TypeError(f"Argument {name!r} is a sparse matrix; pass a 1-D array")
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"Argument {name!r} must be 1-D, got shape {arr.shape}")
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(f"Argument {name!r} must have shape ({n_samples},), got shape "
                         f"{arr.shape}")
    if arr.dtype.kind in "fc":
        bad = ~np.isfinite(arr)
    elif arr.dtype.kind == "O":
        bad = np.array([isinstance(v, numbers.Real) and not -np.inf < v < np.inf for v in arr],
                       dtype=bool)
    else:
        bad = np.zeros(arr.shape[0], dtype=bool)
    if bad.any():
        i = int(np.argmax(bad))
        value = arr[i].item() if isinstance(arr[i], np.generic) else arr[i]
        raise ValueError(f"Argument {name!r} must be finite (no NaN or infinity), got {value!r} "
                         f"at index {i}")
    if arr.dtype.kind == "O" and arr.size:
        try:
            np.unique(arr)
        except TypeError:
            kinds = sorted({type(v).__name__ for v in arr})
            raise TypeError(f"Argument {name!r} must hold values that can be ordered, got a mix "
                            f"of {', '.join(kinds)}") from None
    return arr


def max_abs(X):
    """Largest absolute entry of a finite float32/float64 array, in one pass without a
    temporary."""
    return float(scan_values(np.ascontiguousarray(X).reshape(-1))[1])


# Entries up to _MAGNITUDE / sqrt(n_features) keep squared Euclidean distances, at most
# n_features * (2 * max|x|)**2 <= 4e300, finite.
_MAGNITUDE = 1e150
_DISTANCE_BOUND = 4.0 * _MAGNITUDE ** 2
# Weighted sums of squared distances must stay below this (a margin of 4 on the largest float64
# for the rounding of partial sums).
_SUM_LIMIT = float(np.finfo(np.float64).max) / 4.0


def check_distance_range(X, name="X"):
    """Refuse data whose squared Euclidean distances would overflow float64."""
    if X.size == 0:
        return X
    _check_magnitude(max_abs(X), X.shape[1], name)
    return X


def _check_magnitude(big, n_features, name):
    limit = _MAGNITUDE / np.sqrt(n_features)
    if big > limit:
        raise ValueError(f"Argument {name!r} has an entry of magnitude {big:.3g}: squared "
                         f"distances would overflow float64 (limit {limit:.3g}); rescale the data")


def check_weighted_range(arrays, total_weight, names=("X",), *, n_features=None):
    """Refuse data whose weighted sums of squared distances could overflow float64.

    ``arrays``: one or more validated 2-D arrays of the same width, within the distance range
    (:func:`check_distance_range`): the data, and the centers measured against it. Every weighted
    sum fedcore forms over squared distances between them and points of their box (k-means++
    totals, inertia, Lloyd sums, SSE) is at most ``total_weight * 4 * n_features * m**2`` with
    ``m`` the largest absolute entry. When ``total_weight * 4e300`` (the bound at the largest
    entries the distance range allows) is below the limit, nothing is read; otherwise one pass
    over the arrays finds ``m``. ``names``: the arguments the message names (the data's, then the
    weights'). ``n_features``: the width of the rows (default: that of the first array; the
    parties' blocks of a vertical federation are rows of the joined width).
    """
    arrays = list(arrays) if isinstance(arrays, (list, tuple)) else [arrays]
    if not total_weight * _DISTANCE_BOUND > _SUM_LIMIT:
        return
    d = arrays[0].shape[1] if n_features is None else n_features
    big = max((max_abs(A) for A in arrays if A.size), default=0.0)
    bound = total_weight * 4.0 * d * big * big
    if bound > _SUM_LIMIT:
        quoted = " and ".join(repr(n) for n in names)
        what = "Argument" if len(names) == 1 else "Arguments"
        raise ValueError(f"{what} {quoted}: weighted sums of squared distances could reach "
                         f"{bound:.3g} (total weight {total_weight:.3g}, {d} feature(s), largest "
                         f"entry {big:.3g}) and overflow float64; rescale {quoted}")


def weight_names(sample_weight, data="X", weights="sample_weight"):
    """The arguments a :func:`check_weighted_range` error names: the data, and the weights when
    the caller gave them."""
    return (data,) if sample_weight is None else (data, weights)


def check_fitted_centers(centers, n_features, owner):
    """The transposed centers ``(d, k)``, float64 and contiguous, of a fitted model whose state is
    about to reach a kernel: ``ValueError`` unless they are a finite (k, ``n_features``) array
    with k >= 1. A model fitted here always passes; a model loaded from a file whose state was
    altered does not get to read out of bounds."""
    try:
        C = np.asarray(centers, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"The state of this {owner} is inconsistent: cluster_centers_ is not "
                         "numeric") from None
    if C.ndim != 2 or C.shape[0] < 1 or C.shape[1] != n_features or not np.isfinite(C).all():
        raise ValueError(f"The state of this {owner} is inconsistent: cluster_centers_ of shape "
                         f"{C.shape} (finite: {bool(np.isfinite(C).all())}) for "
                         f"n_features_in_={n_features}")
    return np.ascontiguousarray(C.T)


def check_fitted_array(X, n_features, owner, name="X", *, distance_range=True,
                       return_max_abs=False):
    """``X`` given to a fitted model (``predict``, ``transform``, ``score``...): validated as by
    :func:`check_array` (finite, within the distance range) and of the fitted width
    ``n_features``; ``owner`` names the model in the message. ``return_max_abs``: return
    ``(X, largest absolute entry)`` (see :func:`check_array`)."""
    checked = check_array(X, name, distance_range=distance_range, return_max_abs=return_max_abs)
    X = checked[0] if return_max_abs else checked
    if X.shape[1] != n_features:
        raise ValueError(f"Argument {name!r}: {name} has {X.shape[1]} features, but {owner} is "
                         f"expecting {n_features} features as input.")
    return checked
