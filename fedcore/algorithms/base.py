"""A minimal scikit-learn-compatible estimator base, without scikit-learn at run time."""
import inspect
import sys

__all__ = ["BaseEstimator", "NotFittedError", "check_is_fitted"]


class NotFittedError(ValueError, AttributeError):
    """Raised when a fitted attribute is needed before ``fit``."""


class BaseEstimator:
    """``get_params`` / ``set_params`` from the ``__init__`` signature; ``__init__`` stores only."""

    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep=True):
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for estimator {type(self).__name__}. "
                                 f"Valid parameters are: {valid!r}.")
            setattr(self, key, value)
        return self

    def __repr__(self):
        sig = inspect.signature(type(self).__init__)
        parts = []
        for name, p in sig.parameters.items():
            if name == "self" or not hasattr(self, name):
                continue
            value = getattr(self, name)
            if p.default is p.empty or not _same(value, p.default):
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def _store_result(self, result):
        """Set each field ``f`` of a fit result (a NamedTuple) as the fitted attribute ``f_``,
        and ``n_features_in_`` from ``cluster_centers_``; returns self."""
        for name, value in result._asdict().items():
            setattr(self, name + "_", value)
        self.n_features_in_ = self.cluster_centers_.shape[1]
        return self

    def __sklearn_tags__(self):
        # Only scikit-learn calls this, so importing it here adds no run-time dependency.
        from sklearn.utils import Tags, TargetTags, InputTags, TransformerTags
        return Tags(estimator_type="clusterer", target_tags=TargetTags(required=False),
                    transformer_tags=TransformerTags(), input_tags=InputTags())


def _same(a, b):
    try:
        return bool(a == b) and type(a) is type(b)
    except (ValueError, TypeError):  # arrays
        return a is b


def _not_fitted_class():
    # When scikit-learn is loaded (its checks are running), also be its NotFittedError.
    sk = sys.modules.get("sklearn.exceptions")
    if sk is None:
        return NotFittedError
    global _SK_NOT_FITTED
    if _SK_NOT_FITTED is None:
        _SK_NOT_FITTED = type("NotFittedError", (NotFittedError, sk.NotFittedError), {})
    return _SK_NOT_FITTED


_SK_NOT_FITTED = None


def check_is_fitted(estimator, attribute):
    """Raise ``NotFittedError`` naming the estimator if ``attribute`` is missing."""
    if not hasattr(estimator, attribute):
        raise _not_fitted_class()(f"This {type(estimator).__name__} instance is not fitted yet. "
                             "Call 'fit' with appropriate arguments before using this estimator.")
