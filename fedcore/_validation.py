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
    "check_distance_range",
]


class DataTypeError(TypeError, ValueError):
    """Unsupported data type; both a ``TypeError`` and a ``ValueError`` for callers' convenience."""


def check_array(X, name="X", *, ensure_2d=True, dtype=("float64", "float32"), copy=False,
                min_samples=1, allow_nonfinite=False, distance_range=False):
    """Return ``X`` as a C-contiguous float32 or float64 array, or raise naming ``name``.

    ``distance_range``: also refuse entries so large that squared Euclidean distances would
    overflow float64 (:func:`check_distance_range`), in the same pass as the finiteness check.

    float32 and float64 keep their dtype; other real numeric dtypes (ints, bools) become float64.
    Complex, object and string data raise ``TypeError``.
    """
    if hasattr(X, "tocsr") or hasattr(X, "toarray"):
        raise TypeError(f"Argument {name!r} is a sparse matrix ({type(X).__name__}); fedcore "
                        "needs dense data: pass X.toarray()")
    if hasattr(X, "__array__") or isinstance(X, (list, tuple)):
        try:
            arr = np.asarray(X)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"Argument {name!r} could not be converted to an array: {exc}") from None
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
    if arr.shape[0] < min_samples:
        raise ValueError(f"Argument {name!r} has {arr.shape[0]} sample(s) (shape={arr.shape}) "
                         f"while a minimum of {min_samples} is required.")
    target = arr.dtype if arr.dtype.name in dtype else np.dtype(dtype[0])
    out = np.array(arr, dtype=target, order="C", copy=True) if copy else \
        np.ascontiguousarray(arr, dtype=target)
    if not allow_nonfinite and out.size:
        first, big = scan_values(out.reshape(-1))
        if first >= 0:
            bad = np.unravel_index(first, out.shape)
            raise ValueError(f"Argument {name!r} must be finite, got {out[bad]!r} at index "
                             f"{tuple(int(b) for b in bad)} (NaN or infinity)")
        if distance_range:
            _check_magnitude(big, out.shape[-1], name)
    elif distance_range:
        check_distance_range(out, name)
    return out


def check_sample_weight(sample_weight, n_samples, name="sample_weight"):
    """Return float64 weights of shape (n_samples,), all finite and >= 0; None means ones."""
    if sample_weight is None:
        return np.ones(n_samples, dtype=np.float64)
    if isinstance(sample_weight, numbers.Real) and not isinstance(sample_weight, bool):
        w = np.full(n_samples, float(sample_weight))
    else:
        w = check_array(sample_weight, name, ensure_2d=False, dtype=("float64",), min_samples=0)
        if w.ndim != 1 or w.shape[0] != n_samples:
            raise ValueError(f"Argument {name!r} must have shape ({n_samples},), got {w.shape}")
    if not np.isfinite(w).all():
        i = int(np.argmin(np.isfinite(w)))
        raise ValueError(f"Argument {name!r} must be finite, got {w[i]!r} at index {i}")
    if (w < 0).any():
        i = int(np.argmax(w < 0))
        raise ValueError(f"Argument {name!r} must be non-negative, got {w[i]!r} at index {i}")
    return np.ascontiguousarray(w, dtype=np.float64)


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
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
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


def max_abs(X):
    """Largest absolute entry of a finite float32/float64 array, in one pass without a
    temporary."""
    return float(scan_values(np.ascontiguousarray(X).reshape(-1))[1])


def check_distance_range(X, name="X"):
    """Refuse data whose squared Euclidean distances would overflow float64."""
    if X.size == 0:
        return X
    _check_magnitude(max_abs(X), X.shape[1], name)
    return X


def _check_magnitude(big, n_features, name):
    limit = 1e150 / np.sqrt(n_features)
    if big > limit:
        raise ValueError(f"Argument {name!r} has an entry of magnitude {big:.3g}: squared "
                         f"distances would overflow float64 (limit {limit:.3g}); rescale the data")
