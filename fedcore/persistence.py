"""Saving and loading estimators without pickle: one ``.npz`` file, arrays plus a JSON tree.

:meth:`BaseEstimator.save <fedcore.algorithms.base.BaseEstimator.save>` writes an estimator,
fitted or not, and :func:`load` reads it back. The file is an ordinary NumPy ``.npz`` archive
(``np.savez_compressed``) that ``np.load(path, allow_pickle=False)`` opens:

- ``__fedcore__``: a uint8 array, the UTF-8 (ASCII) bytes of a JSON document::

      {"format": "fedcore-model", "version": 1, "fedcore_version": "0.1.0",
       "numpy_version": "...", "class": "fedcore.algorithms.kmeans.lloyd.KMeans",
       "params": {"n_clusters": 3, ...}, "state": <node>}

- ``a0``, ``a1``, ...: every array of the estimator's state, each stored once.

A node of the state tree is a JSON null, boolean, number (an integer below 2**53 in absolute
value, a finite float) or string, or an object whose ``"t"`` names what it holds:

============== ==============================================================================
``"t"``        contents
============== ==============================================================================
int, float     ``"v"``: a larger integer in decimal; ``"nan"``, ``"inf"`` or ``"-inf"``
complex        ``"re"``, ``"im"``: floats
str, bytes     ``"v"``: the string; ``"b64"``: base64 of the bytes
list, tuple    ``"items"``: nodes; a tuple with ``"class"`` is a fedcore NamedTuple
set, frozenset ``"items"``: nodes, in iteration order
dict           ``"keys"``: ``"str"`` or ``"int"`` (``"items"`` is a JSON object, int keys in
               decimal) or ``"any"`` (``"items"`` is a list of [key node, value node]);
               ``"class": "OrderedDict"`` for a ``collections.OrderedDict``
array          ``"npz"``: the name of the archive entry; ``"readonly"``: true for an array that
               was not writeable; ``"class"`` and ``"attrs"`` for a fedcore ndarray subclass
scalar         a NumPy scalar: ``"dtype"`` (e.g. ``"<f8"``) and ``"hex"``, its bytes
dtype          ``"v"``: a NumPy dtype string
generator      ``numpy.random.Generator``: ``"bit_generator"``, a node
bit_generator  ``"name"`` (MT19937, PCG64, PCG64DXSM, Philox or SFC64), ``"state"`` (its
               ``state`` dict, integers of 2**53 and more as decimal strings) and
               ``"seed_seq"`` (a seed_sequence node, which keeps the spawn counter so that
               ``spawn`` continues as well; null for a legacy-seeded MT19937)
seed_sequence  ``"entropy"``, ``"spawn_key"``, ``"pool_size"``, ``"n_children_spawned"``
random_state   ``numpy.random.RandomState``: ``"bit_generator"``, ``"has_gauss"``, ``"gauss"``
object         an instance of a fedcore class (``"class"``: module path and name, e.g.
               ``"fedcore.federation.ledger.CommLedger"``): ``"attrs"``, a JSON object of
               attribute nodes (its ``__dict__``, or what its ``__getstate__`` returns), or
               ``"state"``, a node, when that is not a dict of plain string keys
============== ==============================================================================

A node of an object referenced more than once carries ``"id": n``; the later references are
``{"ref": n}``, so shared objects (an array held in two places, a generator shared by a model
and its sub-models, the same client object in two lists) are shared again after loading. Equal
strings are one object after loading unless they were distinct objects in the saved state (they
then carry ids), so the loaded state has the same object graph as the saved one: its pickle is
byte for byte the pickle of the saved estimator.

Nothing in a file is executed: there is no pickle, and the only classes a file can name are
classes defined in a ``fedcore.`` module, looked up by name (an instance is made with
``object.__new__`` and given its attributes, through the class's ``__setstate__`` when it
defines one), plus the NumPy random types listed above.
"""
from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import importlib
import io
import json
import math
import os
import re
import secrets
import sys
import threading
import types
import warnings
import zipfile
from collections import OrderedDict
from typing import IO

import numpy as np

from ._validation import BIT_GENERATORS
from .algorithms.base import BaseEstimator

__all__ = ["FORMAT", "VERSION", "load", "save"]

FORMAT = "fedcore-model"
VERSION = 1

_DOC = "__fedcore__"
_BIG = 2 ** 53
_BIT_GENERATORS = BIT_GENERATORS
_NON_FINITE = {"nan", "inf", "-inf"}
_MAX_POOL = 1 << 16  # SeedSequence pool size (NumPy's default: 4 words)
_INT = re.compile(r"-?[0-9]{1,4300}")
_CLASS_PATH = re.compile(r"fedcore(\.[A-Za-z_][A-Za-z0-9_]*)+")
_OBJECT_GETSTATE = getattr(object, "__getstate__", None)
_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


# ---------------------------------------------------------------------------------- saving
def save(estimator: BaseEstimator,
         path: str | bytes | os.PathLike[str] | os.PathLike[bytes] | IO[bytes]) -> None:
    """Write ``estimator`` to ``path``; see :meth:`fedcore.algorithms.base.BaseEstimator.save`."""
    if not isinstance(estimator, BaseEstimator):
        raise TypeError("Argument 'estimator' must be a fedcore estimator, got "
                        f"{type(estimator).__name__}")
    document, arrays = _encode(estimator)
    payload = json.dumps(document, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    entries = {_DOC: np.frombuffer(payload.encode("ascii"), dtype=np.uint8)}
    entries.update(arrays)
    if hasattr(path, "write"):  # an open binary file
        np.savez_compressed(path, **entries)
        return
    path = os.fspath(path)
    # Written beside the target, then renamed over it: a failure never leaves a partial file.
    suffix = f".{secrets.token_hex(6)}.tmp"
    tmp = path + (os.fsencode(suffix) if isinstance(path, bytes) else suffix)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez_compressed(f, **entries)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _encode(estimator):
    """The JSON document and the arrays of ``estimator``; TypeError names what cannot be saved.

    Equal strings that are distinct objects are found in a first pass; a second pass (rare)
    gives them ids so that their identity survives too.
    """
    writer = _Writer(explicit=frozenset())
    document = writer.document(estimator)
    conflicts = frozenset(key for key, objects in writer.atoms.items() if len(objects) > 1)
    if conflicts:
        writer = _Writer(explicit=conflicts)
        document = writer.document(estimator)
    return document, writer.arrays


class _Writer:
    def __init__(self, explicit):
        self.explicit = explicit  # (kind, value) of strings/bytes saved with their identity
        self.atoms = {}           # (kind, value) -> {id: object} (kept alive)
        self.memo = {}            # id -> (node, object) (kept alive: ids stay unique)
        self.arrays = {}
        self.n_ids = 0
        self.track = True
        self.building = set()     # ids of tuples being encoded (a tuple cannot contain itself)
        self.keep = []

    def document(self, estimator):
        from . import __version__
        root = type(estimator).__name__
        class_path = _class_path(type(estimator), root)
        params = {name: self.node(value, f"{root}.{name}")
                  for name, value in estimator.get_params().items()}
        return {"format": FORMAT, "version": VERSION, "fedcore_version": __version__,
                "numpy_version": np.__version__, "class": class_path, "params": params,
                "state": self.node(estimator, root)}

    def new_id(self):
        self.n_ids += 1
        return self.n_ids - 1

    # ----------------------------------------------------------------------- nodes
    def node(self, obj, path):
        if obj is None or obj is True or obj is False:
            return obj
        kind = type(obj)
        if kind is int:
            return obj if -_BIG < obj < _BIG else {"t": "int", "v": str(obj)}
        if kind is float:
            return obj if math.isfinite(obj) else {"t": "float", "v": repr(obj)}
        if kind is complex:
            return {"t": "complex", "re": self.node(obj.real, path),
                    "im": self.node(obj.imag, path)}
        if kind is str or kind is bytes:
            return self.atom(obj, path)
        if not self.track:
            node = {}
            self.fill(node, obj, path)
            return node
        seen = self.memo.get(id(obj))
        if seen is not None:
            if id(obj) in self.building:
                raise TypeError(f"{path}: cannot save a tuple that contains itself")
            first = seen[0]
            if "id" not in first:
                first["id"] = self.new_id()
            return {"ref": first["id"]}
        node = {}
        self.memo[id(obj)] = (node, obj)
        self.fill(node, obj, path)
        return node

    def atom(self, obj, path):
        """A string or bytes: plain (equal values are one object after loading) unless equal
        values were distinct objects, which are then saved with their identity."""
        name = "str" if type(obj) is str else "bytes"
        plain = obj if name == "str" else {"t": "bytes",
                                           "b64": base64.b64encode(obj).decode("ascii")}
        if not self.track:
            return plain
        key = (name, obj)
        self.atoms.setdefault(key, {})[id(obj)] = obj
        if key not in self.explicit:
            return plain
        seen = self.memo.get(id(obj))
        if seen is not None:
            return {"ref": seen[0]["id"]}
        node = {"t": name, "v": obj} if name == "str" else dict(plain)
        node["id"] = self.new_id()
        self.memo[id(obj)] = (node, obj)
        return node

    def plain_key(self, key):
        return type(key) is str and ("str", key) not in self.explicit

    def fill(self, node, obj, path):
        kind = type(obj)
        if isinstance(obj, np.ndarray):
            self.array(node, obj, path)
        elif isinstance(obj, np.generic):
            dtype = obj.dtype
            if dtype.kind in "OV":
                raise TypeError(f"{path}: cannot save a NumPy scalar of dtype {dtype}")
            node.update(t="scalar", dtype=dtype.str, hex=obj.tobytes().hex())
        elif isinstance(obj, np.dtype):
            if not _simple(obj):
                raise TypeError(f"{path}: cannot save the NumPy dtype {obj}")
            node.update(t="dtype", v=obj.str)
            if np.dtype(obj.str) is not obj:
                node["copy"] = True  # not NumPy's own instance (e.g. made by a Numba kernel)
        elif kind is list:
            node["t"] = "list"
            node["items"] = [self.node(v, f"{path}[{i}]") for i, v in enumerate(obj)]
        elif kind is tuple or (isinstance(obj, tuple) and _is_fedcore(kind)):
            node["t"] = "tuple"
            if kind is not tuple:
                node["class"] = _class_path(kind, path)
                if getattr(obj, "__dict__", None):
                    raise TypeError(f"{path}: cannot save a tuple subclass with attributes")
            self.building.add(id(obj))
            node["items"] = [self.node(v, f"{path}[{i}]") for i, v in enumerate(obj)]
            self.building.discard(id(obj))
        elif kind is set or kind is frozenset:
            node["t"] = kind.__name__
            node["items"] = [self.node(v, f"{path}{{{i}}}") for i, v in enumerate(obj)]
        elif kind is dict or kind is OrderedDict:
            node["t"] = "dict"
            if kind is OrderedDict:
                node["class"] = "OrderedDict"
            self.mapping(node, obj, path)
        elif kind is np.random.Generator:
            node["t"] = "generator"
            node["bit_generator"] = self.node(obj.bit_generator, f"{path}.bit_generator")
        elif kind in _BIT_GENERATORS.values():
            self.bit_generator(node, obj, path)
        elif kind is np.random.SeedSequence:
            node.update(t="seed_sequence",
                        entropy=self.node(obj.entropy, f"{path}.entropy"),
                        spawn_key=self.node(obj.spawn_key, f"{path}.spawn_key"),
                        pool_size=self.node(obj.pool_size, f"{path}.pool_size"),
                        n_children_spawned=self.node(obj.n_children_spawned,
                                                     f"{path}.n_children_spawned"))
        elif kind is np.random.RandomState:
            state = obj.get_state(legacy=False)
            node.update(t="random_state",
                        bit_generator=self.node(obj._bit_generator, f"{path}._bit_generator"),
                        has_gauss=int(state["has_gauss"]), gauss=self.node(
                            float(state["gauss"]), f"{path}.gauss"))
        elif _is_fedcore(kind):
            self.instance(node, obj, path)
        else:
            raise TypeError(f"{path}: cannot save {_describe(obj)}")

    def mapping(self, node, obj, path):
        if all(self.plain_key(k) for k in obj):
            node["keys"] = "str"
            for k in obj:
                self.atom(k, path)
            node["items"] = {k: self.node(v, f"{path}[{k!r}]") for k, v in obj.items()}
        elif all(type(k) is int for k in obj):
            node["keys"] = "int"
            node["items"] = {str(k): self.node(v, f"{path}[{k!r}]") for k, v in obj.items()}
        else:
            node["keys"] = "any"
            node["items"] = [[self.node(k, f"{path}{{key {k!r}}}"), self.node(v, f"{path}[{k!r}]")]
                             for k, v in obj.items()]

    def array(self, node, obj, path):
        if obj.dtype.hasobject:
            raise TypeError(f"{path}: cannot save an array of dtype {obj.dtype} (Python objects)")
        kind = type(obj)
        if kind is not np.ndarray and not _is_fedcore(kind):
            raise TypeError(f"{path}: cannot save {_describe(obj)}")
        name = f"a{len(self.arrays)}"
        self.arrays[name] = obj.view(np.ndarray)
        node.update(t="array", npz=name)
        if _simple(obj.dtype) and np.dtype(obj.dtype.str) is not obj.dtype:
            # An equal dtype of its own (arrays from Numba kernels): kept, shared as it was.
            node["dtype"] = self.node(obj.dtype, f"{path}.dtype")
        if not obj.flags.writeable:
            node["readonly"] = True
        if kind is not np.ndarray:
            node["class"] = _class_path(kind, path)
            self.attributes(node, getattr(obj, "__dict__", {}), path)

    def bit_generator(self, node, obj, path):
        seed_seq = obj.__reduce__()[2][1]  # None for a legacy-seeded MT19937 (RandomState)
        if seed_seq is not None and type(seed_seq) is not np.random.SeedSequence:
            raise TypeError(f"{path}: cannot save a {type(obj).__name__} bit generator seeded by "
                            f"{_describe(seed_seq)}")
        node.update(t="bit_generator", name=type(obj).__name__)
        self.track = False  # a fresh dict of numbers: no identities to keep
        try:
            node["state"] = self.node(obj.state, f"{path}.state")
        finally:
            self.track = True
        node["seed_seq"] = self.node(seed_seq, f"{path}.seed_seq")

    def instance(self, node, obj, path):
        kind = type(obj)
        class_path = _class_path(kind, path)
        problem = _plain_class_problem(kind)
        if problem:
            raise TypeError(f"{path}: cannot save an instance of {class_path}: {problem}")
        node.update(t="object", **{"class": class_path})
        getstate = getattr(kind, "__getstate__", None)
        if getstate is not None and getstate is not _OBJECT_GETSTATE:
            state = obj.__getstate__()
            self.keep.append(state)  # alive until the end: ids stay unique
        else:
            state = obj.__dict__
        self.attributes(node, state, path)

    def attributes(self, node, state, path):
        if type(state) is dict and all(self.plain_key(k) for k in state):
            for k in state:
                self.atom(k, path)
            node["attrs"] = {k: self.node(v, f"{path}.{k}") for k, v in state.items()}
        else:
            node["state"] = self.node(state, f"{path}.__getstate__()")


def _simple(dtype):
    return dtype.kind not in "OV" and dtype.subdtype is None and not dtype.metadata


def _is_fedcore(cls):
    module = getattr(cls, "__module__", None)
    return isinstance(module, str) and (module == "fedcore" or module.startswith("fedcore."))


def _class_path(cls, path):
    """``module.Name`` of a fedcore class that :func:`load` can find again by name."""
    module, name = cls.__module__, cls.__qualname__
    if not _is_fedcore(cls) or sys.modules.get(module) is None or \
            getattr(sys.modules[module], name, None) is not cls:
        raise TypeError(f"{path}: cannot save an instance of {module}.{name}: not a class "
                        "defined at the top level of a fedcore module")
    return f"{module}.{name}"


def _plain_class_problem(cls):
    """Why ``object.__new__(cls)`` plus attributes would not rebuild an instance, or None."""
    if cls.__new__ is not object.__new__:
        return "it defines or inherits its own __new__"
    for base in cls.__mro__[:-1]:
        if base.__dict__.get("__slots__"):
            return "it uses __slots__"
        if "__reduce__" in base.__dict__ or "__reduce_ex__" in base.__dict__:
            return "it defines __reduce__"
    return None


def _describe(obj):
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                        types.BuiltinMethodType)) or type(obj).__name__ == "partial":
        name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "")
        return f"a function ({name})" if name else "a function"
    if isinstance(obj, type):
        return f"a class ({obj.__module__}.{obj.__qualname__})"
    if isinstance(obj, types.ModuleType):
        return f"a module ({obj.__name__})"
    if isinstance(obj, io.IOBase):
        return "an open file"
    if isinstance(obj, concurrent.futures.ThreadPoolExecutor):
        return "a thread pool"
    if isinstance(obj, concurrent.futures.Executor):
        return "an executor"
    if isinstance(obj, _LOCK_TYPES):
        return "a lock"
    if isinstance(obj, types.GeneratorType):
        return "a Python generator"
    kind = type(obj)
    return f"an object of type {kind.__module__}.{kind.__qualname__}"


# --------------------------------------------------------------------------------- loading
def load(path: str | bytes | os.PathLike[str] | os.PathLike[bytes] | IO[bytes]) -> BaseEstimator:
    """Read an estimator written by :meth:`~fedcore.algorithms.base.BaseEstimator.save`.

    Parameters
    ----------
    path : str, path-like or binary file object
        A file written by ``save``.

    Returns
    -------
    estimator : the fedcore estimator saved, fitted or not, in the state it was saved in.

    Raises
    ------
    ValueError
        Naming ``path`` and the problem, when the file is missing or unreadable, is not an
        ``.npz`` archive (truncated, corrupted), holds no fedcore document, declares another
        ``format`` or a newer format ``version`` than this fedcore reads, or when an entry of the
        state is malformed or names a class outside fedcore (e.g. ``os.system``) or one this
        fedcore does not have; the entry is named by its attribute path (e.g.
        ``MUFC._clients[0]._rng``).

    Warns
    -----
    UserWarning
        When the file was written by another fedcore version (the private state of an
        estimator may differ between versions).

    Notes
    -----
    **Format.** One ``.npz`` archive (:func:`numpy.savez_compressed`): every array of the state
    as an entry ``a0``, ``a1``, ...; and ``__fedcore__``, a uint8 array holding a JSON document
    with ``"format": "fedcore-model"``, ``"version": 1``, the fedcore version that wrote it
    (``"fedcore_version"``), the estimator's ``"class"`` (e.g.
    ``"fedcore.algorithms.mufc.estimators.MUFC"``), its ``"params"`` (``get_params()``) and
    ``"state"``, a tree of its attributes, recursively: arrays by entry name; Python ``None``,
    bools, ints, floats, complex numbers, strings and bytes; lists, tuples, sets, frozensets,
    dicts (with the type of their keys) and ``OrderedDict``; NumPy scalars (dtype and bytes)
    and dtypes; NumPy ``Generator``, ``RandomState``, bit generators (``state`` dict, big
    integers as decimal strings) and ``SeedSequence``; fedcore objects (NamedTuples,
    dataclasses, sub-estimators, ledgers, SCMA setups, clients and servers...) by class path and
    attributes. The module docstring of :mod:`fedcore.persistence` lists every node type.

    **Guarantees.**

    - No code runs from a file: the archive is read with ``allow_pickle=False``; the only
      classes a file can name are classes defined at the top level of a ``fedcore.`` module
      (found by name; such a module is imported if it is not yet) and NumPy's random
      generator types; anything else is refused with a ``ValueError`` and never instantiated,
      imported or called. Instances are made with ``object.__new__`` and given their
      attributes, or handed to their class's own ``__setstate__`` when it defines one
      (fedcore's SCMA key simulation, whose caches of key objects are rebuilt on demand).
    - Checked state: the loaded estimator's ``check_state()`` runs before it is returned: the
      fitted centers (finite, of ``n_features_in_`` columns), and for the estimators whose
      kernels index with private state (``UnlearnableKMeans``, MUFC's clients and its
      server's coupled k-means) every array's shape, type and range; a file altered to break
      them is refused with a ``ValueError`` instead of letting a kernel read out of bounds.
      (The check is structural: a consistent but altered state loads, and is what it says.)
    - Exact state: arrays keep their dtype, shape, memory order and values bit for bit, floats
      their bits, random generators their exact position and spawn counter, and objects,
      arrays and strings shared in the saved state are shared again (e.g.
      ``UnlearnableKMeans.cluster_centers_ is seeds_``). ``pickle.dumps`` of the loaded
      estimator equals ``pickle.dumps`` of the saved one, and it continues (``predict``,
      ``remove``, ``remove_clients``) exactly as the saved one would, in this process or
      another.
    - Versions: a file of a newer format version is refused; one written by another fedcore
      version of this format loads with a warning, since the private attributes of an estimator
      may differ between fedcore versions.

    Examples
    --------
    >>> import io, numpy as np, fedcore
    >>> X = np.random.default_rng(0).normal(size=(30, 2))
    >>> model = fedcore.UnlearnableKMeans(3, random_state=0).fit(X)
    >>> file = io.BytesIO()  # or a path: model.save("model.npz"); fedcore.load("model.npz")
    >>> model.save(file)
    >>> _ = file.seek(0)
    >>> again = fedcore.load(file)
    >>> again.remove([0, 1]) == model.remove([0, 1])
    True
    >>> bool((again.cluster_centers_ == model.cluster_centers_).all())
    True
    """
    label = repr(os.fspath(path)) if not hasattr(path, "read") else "the file object"
    arrays = _read_archive(path, label)
    document = _read_document(arrays.pop(_DOC, None), label)
    reader = _Reader(arrays)
    try:
        estimator = reader.estimator(document)
    except _Invalid as exc:
        raise ValueError(f"Cannot load a fedcore model from {label}: {exc}") from None
    except RecursionError:
        raise ValueError(f"Cannot load a fedcore model from {label}: the state is nested too "
                         "deeply") from None
    try:  # what its kernels will index with: shapes, types and ranges agree
        estimator.check_state()
    except ValueError as exc:
        raise ValueError(f"Cannot load a fedcore model from {label}: {exc}") from None
    from . import __version__
    written_by = document.get("fedcore_version")
    if written_by != __version__:
        warnings.warn(f"{label} was written by fedcore {written_by}; this is fedcore "
                      f"{__version__}", UserWarning, stacklevel=2)
    return estimator


def _read_archive(path, label):
    """Every entry of the ``.npz`` archive, read now (so that any damage shows here)."""
    try:
        archive = np.load(path, allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            problem = "not an .npz archive (a single .npy array)"
        else:
            with archive:
                return {name: archive[name] for name in archive.files}
    except FileNotFoundError:
        problem = "no such file"
    except IsADirectoryError:
        problem = "it is a directory"
    except PermissionError:
        problem = "permission denied"
    except (zipfile.BadZipFile, EOFError) as exc:
        problem = f"the archive is truncated or corrupted ({exc})"
    except Exception as exc:  # noqa: BLE001 - numpy, zlib and zipfile raise many kinds
        text = str(exc)
        if "allow_pickle" in text:
            text = "it holds pickled data, which fedcore never writes nor reads"
        problem = f"not a readable .npz archive ({type(exc).__name__}: {text})"
    raise ValueError(f"Cannot load a fedcore model from {label}: {problem}")


def _read_document(entry, label):
    def refuse(problem):
        return ValueError(f"Cannot load a fedcore model from {label}: {problem}")

    if entry is None:
        raise refuse(f"not a fedcore model file (no {_DOC!r} entry)")
    if entry.dtype != np.uint8 or entry.ndim != 1:
        raise refuse(f"the {_DOC!r} entry is not a uint8 vector")
    try:
        document = json.loads(entry.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise refuse(f"the {_DOC!r} document is not valid JSON ({exc})") from None
    if not isinstance(document, dict):
        raise refuse(f"the {_DOC!r} document is not a JSON object")
    if document.get("format") != FORMAT:
        raise refuse(f"format {document.get('format')!r} is not {FORMAT!r}")
    version = document.get("version")
    if type(version) is not int or version < 1:
        raise refuse(f"invalid format version {version!r}")
    if version > VERSION:
        raise refuse(f"format version {version} is newer than this fedcore reads ({VERSION}); "
                     f"it was written by fedcore {document.get('fedcore_version')}: upgrade "
                     "fedcore to load it")
    for key in ("class", "params", "state"):
        if key not in document:
            raise refuse(f"the document has no {key!r}")
    return document


class _Invalid(Exception):
    """A malformed or refused entry (``str``: its path and the problem)."""


class _Reader:
    def __init__(self, arrays):
        self.arrays = arrays
        self.memo = {}
        self.strings = {}

    def estimator(self, document):
        from .algorithms.base import BaseEstimator
        class_path = document["class"]
        cls = _find_class(class_path, "class")
        if not (isinstance(cls, type) and issubclass(cls, BaseEstimator)):
            raise _Invalid(f"class: {class_path} is not a fedcore estimator")
        root = cls.__name__
        params = document["params"]
        if not isinstance(params, dict):
            raise _Invalid("params: not a JSON object")
        for name, node in params.items():  # first: the state may refer to them
            self.value(node, f"{root}.{name}")
        state = document["state"]
        if not (isinstance(state, dict) and state.get("class") == class_path):
            raise _Invalid(f"state: not an instance of {class_path}")
        return self.value(state, root)

    # ----------------------------------------------------------------------- nodes
    def value(self, node, path):
        if node is None or isinstance(node, (bool, int, float)):
            return node
        if isinstance(node, str):
            return self.string(node)
        if not isinstance(node, dict):
            raise _Invalid(f"{path}: expected a node, got a JSON {type(node).__name__}")
        if "ref" in node:
            ref = node["ref"]
            if type(ref) is not int or ref not in self.memo:
                raise _Invalid(f"{path}: reference {ref!r} to an entry not defined before it")
            return self.memo[ref]
        kind = node.get("t")
        handler = self.HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise _Invalid(f"{path}: unknown node type {kind!r}")
        try:
            return handler(self, node, path)
        except (_Invalid, RecursionError):
            raise
        except Exception as exc:  # noqa: BLE001 - a malformed entry, whatever numpy says
            raise _Invalid(f"{path}: invalid {kind} entry ({type(exc).__name__}: {exc})") \
                from None

    def string(self, text):
        """Equal plain strings are one object (interned when they are names, as in code)."""
        found = self.strings.get(text)
        if found is None:
            found = self.strings[text] = sys.intern(text) if text.isidentifier() else text
        return found

    def register(self, node, obj, path):
        if "id" in node:
            key = node["id"]
            if type(key) is not int or key in self.memo:
                raise _Invalid(f"{path}: invalid or repeated id {key!r}")
            self.memo[key] = obj
        return obj

    def field(self, node, key, path, types_=None):
        if key not in node:
            raise _Invalid(f"{path}: missing {key!r}")
        value = node[key]
        if types_ is not None and not isinstance(value, types_):
            raise _Invalid(f"{path}: {key!r} must be a JSON {types_.__name__}")
        return value

    def items(self, node, path):
        return self.field(node, "items", path, list)

    # --------------------------------------------------------------------- handlers
    def _int(self, node, path):
        text = self.field(node, "v", path, str)
        if not _INT.fullmatch(text):
            raise _Invalid(f"{path}: {text[:40]!r} is not an integer")
        return int(text)

    def _float(self, node, path):
        text = self.field(node, "v", path, str)
        if text not in _NON_FINITE:
            raise _Invalid(f"{path}: {text[:40]!r} is not nan, inf or -inf")
        return float(text)

    def _complex(self, node, path):
        re_, im = self.value(self.field(node, "re", path), path), \
            self.value(self.field(node, "im", path), path)
        if not (isinstance(re_, float) and isinstance(im, float)):
            raise _Invalid(f"{path}: complex parts must be floats")
        return complex(re_, im)

    def _str(self, node, path):
        return self.register(node, str(self.field(node, "v", path, str)), path)

    def _bytes(self, node, path):
        data = base64.b64decode(self.field(node, "b64", path, str), validate=True)
        if "id" in node:
            return self.register(node, data, path)
        return self.strings.setdefault(data, data)

    def _list(self, node, path):
        out = self.register(node, [], path)
        out.extend(self.value(v, f"{path}[{i}]") for i, v in enumerate(self.items(node, path)))
        return out

    def _tuple(self, node, path):
        items = [self.value(v, f"{path}[{i}]") for i, v in enumerate(self.items(node, path))]
        if "class" not in node:
            return self.register(node, tuple(items), path)
        cls = _find_class(node["class"], path)
        if not issubclass(cls, tuple):
            raise _Invalid(f"{path}: {node['class']} is not a tuple type")
        return self.register(node, tuple.__new__(cls, items), path)

    def _set(self, node, path):
        out = self.register(node, set(), path)
        for i, v in enumerate(self.items(node, path)):
            out.add(self.value(v, f"{path}{{{i}}}"))
        return out

    def _frozenset(self, node, path):
        items = [self.value(v, f"{path}{{{i}}}") for i, v in enumerate(self.items(node, path))]
        return self.register(node, frozenset(items), path)

    def _dict(self, node, path):
        name = node.get("class")
        if name not in (None, "OrderedDict"):
            raise _Invalid(f"{path}: unknown dict type {name!r}")
        out = self.register(node, OrderedDict() if name else {}, path)
        keys = node.get("keys")
        if keys == "str" or keys == "int":
            items = self.field(node, "items", path, dict)
            for k, v in items.items():
                if keys == "int" and not _INT.fullmatch(k):
                    raise _Invalid(f"{path}: key {k[:40]!r} is not an integer")
                key = self.string(k) if keys == "str" else int(k)
                out[key] = self.value(v, f"{path}[{key!r}]")
        elif keys == "any":
            for pair in self.items(node, path):
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise _Invalid(f"{path}: an item is not a [key, value] pair")
                key = self.value(pair[0], f"{path}{{key}}")
                out[key] = self.value(pair[1], f"{path}[{key!r}]")
        else:
            raise _Invalid(f"{path}: unknown key type {keys!r}")
        return out

    def _array(self, node, path):
        name = self.field(node, "npz", path, str)
        if name not in self.arrays or name == _DOC:
            raise _Invalid(f"{path}: the archive has no array {name!r}")
        array = self.arrays[name]
        if "dtype" in node:
            dtype = self.value(node["dtype"], f"{path}.dtype")
            if not isinstance(dtype, np.dtype) or dtype != array.dtype:
                raise _Invalid(f"{path}: dtype {dtype!r} is not the stored {array.dtype}")
            array = array.view(dtype)
        if "class" in node:
            cls = _find_class(node["class"], path)
            if not issubclass(cls, np.ndarray):
                raise _Invalid(f"{path}: {node['class']} is not an ndarray type")
            array = array.view(cls)
        self.register(node, array, path)
        if "class" in node:
            array.__dict__.update(self.attributes(node, path))
        if node.get("readonly"):
            array.flags.writeable = False
        return array

    def _scalar(self, node, path):
        dtype = _simple_dtype(self.field(node, "dtype", path, str), path)
        data = bytes.fromhex(self.field(node, "hex", path, str))
        if len(data) != dtype.itemsize:
            raise _Invalid(f"{path}: {len(data)} bytes for a scalar of dtype {dtype}")
        return self.register(node, np.frombuffer(data, dtype=dtype)[0], path)

    def _dtype(self, node, path):
        dtype = _simple_dtype(self.field(node, "v", path, str), path)
        if node.get("copy"):
            dtype = np.dtype(dtype, copy=True)
        return self.register(node, dtype, path)

    def _generator(self, node, path):
        bit_generator = self.value(self.field(node, "bit_generator", path),
                                   f"{path}.bit_generator")
        if type(bit_generator) not in _BIT_GENERATORS.values():
            raise _Invalid(f"{path}: bit_generator is not a NumPy bit generator")
        return self.register(node, np.random.Generator(bit_generator), path)

    def _bit_generator(self, node, path):
        name = self.field(node, "name", path, str)
        if name not in _BIT_GENERATORS:
            raise _Invalid(f"{path}: unknown bit generator {name!r} (known: "
                           f"{', '.join(_BIT_GENERATORS)})")
        seed_seq = self.value(self.field(node, "seed_seq", path), f"{path}.seed_seq")
        if seed_seq is not None and type(seed_seq) is not np.random.SeedSequence:
            raise _Invalid(f"{path}: seed_seq is not a SeedSequence")
        state = self.value(self.field(node, "state", path, dict), f"{path}.state")
        if not isinstance(state, dict):
            raise _Invalid(f"{path}: state is not a dict")
        if seed_seq is None:  # legacy seeding: NumPy's own pickle state, without a sequence
            bit_generator = _BIT_GENERATORS[name]()
            bit_generator.__setstate__((state, None))
        else:
            bit_generator = _BIT_GENERATORS[name](seed_seq)
            bit_generator.state = state
        return self.register(node, bit_generator, path)

    def _seed_sequence(self, node, path):
        args = {key: self.value(self.field(node, key, path), f"{path}.{key}")
                for key in ("entropy", "spawn_key", "pool_size", "n_children_spawned")}
        entropy = args.pop("entropy")
        if not (type(args["pool_size"]) is int and 4 <= args["pool_size"] <= _MAX_POOL):
            raise _Invalid(f"{path}: pool_size must be an int in [4, {_MAX_POOL}]")
        return self.register(node, np.random.SeedSequence(entropy, **args), path)

    def _random_state(self, node, path):
        bit_generator = self.value(self.field(node, "bit_generator", path),
                                   f"{path}.bit_generator")
        if type(bit_generator) not in _BIT_GENERATORS.values():
            raise _Invalid(f"{path}: bit_generator is not a NumPy bit generator")
        out = np.random.RandomState(bit_generator)
        state = dict(bit_generator.state, has_gauss=int(self.field(node, "has_gauss", path, int)),
                     gauss=self.value(self.field(node, "gauss", path), f"{path}.gauss"))
        out.set_state(state)
        return self.register(node, out, path)

    def _object(self, node, path):
        class_path = self.field(node, "class", path, str)
        cls = _find_class(class_path, path)
        problem = _plain_class_problem(cls)
        if problem:
            raise _Invalid(f"{path}: cannot make an instance of {class_path}: {problem}")
        obj = self.register(node, object.__new__(cls), path)
        state = self.attributes(node, path)
        if getattr(cls, "__setstate__", None) is not None:
            obj.__setstate__(state)
        elif isinstance(state, dict) and all(type(k) is str for k in state):
            obj.__dict__.update(state)
        else:
            raise _Invalid(f"{path}: the state of a {class_path} must be a dict of names")
        return obj

    def attributes(self, node, path):
        if "attrs" in node:
            attrs = self.field(node, "attrs", path, dict)
            return {self.string(k): self.value(v, f"{path}.{k}") for k, v in attrs.items()}
        return self.value(self.field(node, "state", path), f"{path}.__getstate__()")

    HANDLERS = {"int": _int, "float": _float, "complex": _complex, "str": _str, "bytes": _bytes,
                "list": _list, "tuple": _tuple, "set": _set, "frozenset": _frozenset,
                "dict": _dict, "array": _array, "scalar": _scalar, "dtype": _dtype,
                "generator": _generator, "bit_generator": _bit_generator,
                "seed_sequence": _seed_sequence, "random_state": _random_state,
                "object": _object}


def _simple_dtype(text, path):
    dtype = np.dtype(text)
    if not _simple(dtype):
        raise _Invalid(f"{path}: dtype {text!r} is not allowed")
    return dtype


def _find_class(class_path, path):
    """The class a file names: only a class defined at the top level of a fedcore module."""
    if not isinstance(class_path, str) or not _CLASS_PATH.fullmatch(class_path):
        shown = class_path if isinstance(class_path, str) else type(class_path).__name__
        raise _Invalid(f"{path}: class {shown[:200]!r} is not a fedcore class; refusing to "
                       "load it")
    module_name, _, name = class_path.rpartition(".")
    module = sys.modules.get(module_name)
    if module is None:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001 - no such module, or it fails to import
            raise _Invalid(f"{path}: unknown class {class_path!r} (no module "
                           f"{module_name!r} in this fedcore)") from None
    cls = module.__dict__.get(name)
    if not (isinstance(cls, type) and cls.__module__ == module_name and cls.__qualname__ == name):
        raise _Invalid(f"{path}: unknown class {class_path!r} (this fedcore has no class "
                       f"{name!r} defined in {module_name})")
    return cls
