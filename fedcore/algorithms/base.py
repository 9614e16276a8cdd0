"""A minimal scikit-learn-compatible estimator base, without scikit-learn at run time."""
from __future__ import annotations

import contextlib
import copy
import inspect
import os
import sys
from collections.abc import Collection, Iterator
from typing import IO, Any

import numpy as np
from numpy.typing import ArrayLike

from ..federation.protocol import Channel, ClientRole, ServerRole

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["BaseEstimator", "FederatedEstimator", "NotFittedError", "all_or_nothing",
           "check_is_fitted"]


class NotFittedError(ValueError, AttributeError):
    """Raised when a fitted attribute is needed before ``fit``."""


class BaseEstimator:
    """``get_params`` / ``set_params`` from the ``__init__`` signature; ``__init__`` stores only."""

    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Self:
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for estimator {type(self).__name__}. "
                                 f"Valid parameters are: {valid!r}.")
            setattr(self, key, value)
        return self

    def save(self, path: str | bytes | os.PathLike[str] | os.PathLike[bytes] | IO[bytes]) -> None:
        """Write this estimator, fitted or not, to one ``.npz`` file; read it with
        :func:`fedcore.load`. No pickle: loading a file runs no code from it.

        Parameters
        ----------
        path : str, path-like or binary file object
            The file to write, used as given (no extension is added; ``.npz`` is customary).
            It is written beside its final name and renamed into place, so a failure leaves no
            partial file and an existing file is replaced whole or not at all.

        Raises
        ------
        TypeError
            When the state holds something that cannot be saved without pickle (a function,
            a lambda, a thread pool, an open file, an instance of a class outside fedcore...),
            naming it by its attribute path, e.g.
            ``"MUFC._channel.clients[3].encoder._cache: cannot save a function (...)"``. Nothing is
            written then.

        Notes
        -----
        **Format.** A NumPy ``.npz`` archive (``np.savez_compressed``) that
        ``np.load(path, allow_pickle=False)`` opens: the arrays of the state as entries ``a0``,
        ``a1``, ..., each stored once, and ``__fedcore__``, a uint8 array holding a JSON
        document: ``"format": "fedcore-model"``, ``"version": 1``, ``"fedcore_version"``,
        ``"class"`` (e.g. ``"fedcore.algorithms.kmeans.lloyd.KMeans"``), ``"params"``
        (``get_params()``) and ``"state"``, the tree of the estimator's attributes
        (recursively: arrays by entry name; numbers, strings, containers; NumPy scalars and
        random generators, by their exact state; nested fedcore objects such as MUFC's clients,
        its SCMA setup, clients and server and its ledger, by class path and attributes). See
        :func:`fedcore.load` and :mod:`fedcore.persistence` for every node type.

        **Guarantees.** :func:`fedcore.load` returns an estimator whose ``pickle.dumps`` equals
        this one's (same attributes, arrays bit for bit, random generators at the same position,
        shared objects shared again), which predicts and continues ``remove`` /
        ``remove_clients`` exactly as this one would, in this process or another; and a file
        can name no class outside fedcore, so loading one runs no code from it.

        Examples
        --------
        >>> import numpy as np, fedcore, io
        >>> model = fedcore.KMeans(2, random_state=0).fit(np.arange(12.0).reshape(6, 2))
        >>> buffer = io.BytesIO()
        >>> model.save(buffer)
        >>> _ = buffer.seek(0)
        >>> bool((fedcore.load(buffer).cluster_centers_ == model.cluster_centers_).all())
        True
        """
        from ..persistence import save
        save(self, path)

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

    def check_state(self) -> None:
        """Refuse (``ValueError``) a fitted state that a kernel could not read safely: the
        checks a model fitted here always passes, run by :func:`fedcore.load` on what a file
        holds. Here: ``cluster_centers_`` (when fitted) finite, of ``n_features_in_`` columns;
        estimators with more state extend it."""
        centers = getattr(self, "cluster_centers_", None)
        if centers is not None:
            from .._validation import check_fitted_centers
            check_fitted_centers(centers, getattr(self, "n_features_in_", -1),
                                 type(self).__name__)

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


class FederatedEstimator(BaseEstimator):
    """An estimator of a federated method given by protocol roles
    (:mod:`fedcore.federation.protocol`): :meth:`server_role` and :meth:`client_role` build them
    from the estimator's parameters, :meth:`fit_over` runs the server role over any channel (the
    in-process one of ``fit``, or a Flower run: :mod:`fedcore.integrations.flower.roles`).

    A subclass names its roles in ``server_class`` (built with the estimator's parameters but
    ``n_jobs``, which it checks) and ``client_class`` (built with ``(X, client_id)``; a role
    that needs the clients' point ids overrides :meth:`client_role`).
    """

    server_class: type = type(None)
    client_class: type = type(None)

    def server_role(self) -> ServerRole:
        """A new server role with this estimator's (checked) parameters."""
        params = self.get_params()
        params.pop("n_jobs", None)
        return self.server_class(**params)

    def client_role(self, X: ArrayLike, client_id: int = 0, *,
                    ids: ArrayLike | None = None) -> ClientRole:
        """A new client role holding ``X``, the data of client ``client_id``.

        ``ids``: the client's global point ids, one per row of ``X`` (None means
        ``arange(len(X))``), for the roles that need them (DC-KM deletes points by id); the
        other roles ignore them.
        """
        return self.client_class(X, client_id)

    def fit_over(self, channel: Channel) -> Self:
        """Fit by running :meth:`server_role` over ``channel``; returns self."""
        return self._store_result(self.server_role().run(channel))


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


def check_is_fitted(estimator: object, attribute: str) -> None:
    """Raise ``NotFittedError`` naming the estimator if ``attribute`` is missing."""
    if not hasattr(estimator, attribute):
        raise _not_fitted_class()(f"This {type(estimator).__name__} instance is not fitted yet. "
                             "Call 'fit' with appropriate arguments before using this estimator.")


_ABSENT = object()


@contextlib.contextmanager
def all_or_nothing(obj: Any, deep: Collection[str] = (),
                   shallow: Collection[str] = ()) -> Iterator[None]:
    """Run the block as one transaction on ``obj``: if it raises, put back the attributes named
    in ``deep`` and ``shallow``, drop the messages the block added to ``obj.comm_``, and
    re-raise. Attributes the block created are deleted.

    ``deep``: state the block may mutate. Arrays and random generators are restored in place
    (the same objects, so references to them stay valid); other objects by deep copy, sharing
    those generators. ``shallow``: attributes the block replaces but never mutates (the
    object itself is restored), and dicts, lists and sets whose items it replaces (a shallow copy
    is restored).

    Used by every ``remove`` / ``remove_clients`` that changes state in several steps, so that a
    failure at any step leaves the model bit for bit as it was.
    """
    current = {name: obj.__dict__.get(name, _ABSENT) for name in (*deep, *shallow)}
    generators = {name: (value, copy.deepcopy(value.bit_generator.state))
                  for name, value in current.items()
                  if name in deep and isinstance(value, np.random.Generator)}
    arrays = {name: (value, value.copy()) for name, value in current.items()
              if name in deep and isinstance(value, np.ndarray)}
    copies = {name: copy.copy(value) if isinstance(value, (dict, list, set)) else value
              for name, value in current.items() if name in shallow and value is not _ABSENT}
    # Deep copies keep referring to the objects restored as they are (generators and arrays
    # restored in place, the shallow attributes and their items), as the originals did.
    kept = [value for value, _ in (*generators.values(), *arrays.values())]
    for value in copies.values():
        kept.append(value)
        kept.extend(value.values() if isinstance(value, dict) else
                    value if isinstance(value, (list, set, tuple)) else ())
    memo = {id(value): value for value in kept}
    copies.update(copy.deepcopy({name: value for name, value in current.items()
                                 if name in deep and name not in generators
                                 and name not in arrays and value is not _ABSENT}, memo))
    ledger = obj.__dict__.get("comm_")
    n_messages = None if ledger is None else len(ledger.messages)
    try:
        yield
    except BaseException:
        for name, value in current.items():
            if value is _ABSENT:
                obj.__dict__.pop(name, None)
            elif name in generators:
                value.bit_generator.state = generators[name][1]
                obj.__dict__[name] = value
            elif name in arrays:
                value[...] = arrays[name][1]
                obj.__dict__[name] = value
            else:
                obj.__dict__[name] = copies[name]
        if ledger is not None:
            del ledger.messages[n_messages:]
            obj.__dict__["comm_"] = ledger
        raise
