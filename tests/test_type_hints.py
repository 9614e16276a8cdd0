"""The public API of the annotated modules carries PEP 484 type hints, and ``py.typed`` ships.

Every function named in the ``__all__`` of a module of ``ANNOTATED_MODULES``, and every public
method (plus ``__init__`` / ``__new__``) defined on a class named there, must annotate each
parameter except ``self``, ``cls``, ``*args`` and ``**kwargs``, and its return; the hints must
resolve with :func:`typing.get_type_hints`.
"""
import importlib
import inspect
import pathlib
import sys
import typing

import pytest

import fedcore

# typing.Self (used for methods returning self) exists from Python 3.11 on.
pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="typing.Self needs 3.11")

ANNOTATED_MODULES = [
    "fedcore.algorithms.base",
    "fedcore.algorithms.baselines",
    "fedcore.algorithms.baselines.dckmeans",
    "fedcore.algorithms.baselines.ffcm",
    "fedcore.algorithms.baselines.kfed",
    "fedcore.algorithms.baselines.match_averaging",
    "fedcore.algorithms.clients",
    "fedcore.algorithms.f3km",
    "fedcore.algorithms.f3km.cdkm",
    "fedcore.algorithms.f3km.fair",
    "fedcore.algorithms.f3km.fair_lp",
    "fedcore.algorithms.f3km.party",
    "fedcore.algorithms.f3km.server",
    "fedcore.algorithms.feca.deep",
    "fedcore.algorithms.feca.encoders",
    "fedcore.algorithms.feca.feca",
    "fedcore.algorithms.kmeans",
    "fedcore.algorithms.kmeans.lloyd",
    "fedcore.algorithms.kmeans.seeding",
    "fedcore.algorithms.mufc",
    "fedcore.algorithms.mufc.aggregation",
    "fedcore.algorithms.mufc.estimators",
    "fedcore.algorithms.mufc.quantize",
    "fedcore.algorithms.mufc.rows",
    "fedcore.algorithms.mufc.roles",
    "fedcore.algorithms.mufc.server",
    "fedcore.algorithms.mufc.unlearning",
    "fedcore.algorithms.vfl",
    "fedcore.algorithms.vfl.coreset",
    "fedcore.algorithms.vfl.coreset_result",
    "fedcore.algorithms.vfl.distdim",
    "fedcore.algorithms.vfl.ridge",
    "fedcore.datasets",
    "fedcore.datasets.balls",
    "fedcore.datasets.bundled",
    "fedcore.datasets.fair",
    "fedcore.datasets.synthetic",
    "fedcore.federation.horizontal",
    "fedcore.federation.protocol",
    "fedcore.federation.ledger",
    "fedcore.federation.vertical",
    "fedcore.integrations.flower",
    "fedcore.integrations.flower.roles",
    "fedcore.metrics",
    "fedcore.metrics._kmeans",
    "fedcore.metrics.external",
    "fedcore.metrics.fairness",
    "fedcore.persistence",
    "fedcore.secagg._errors",
    "fedcore.secagg.client",
    "fedcore.secagg.message",
    "fedcore.secagg.server",
    "fedcore.secagg.setup",
]

_CONSTRUCTORS = {"__init__", "__new__"}
_SKIPPED = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _methods(cls):
    """(name, function) of the public methods, properties and constructors ``cls`` defines
    itself (not inherited, not synthesized by ``namedtuple``)."""
    for name, attr in vars(cls).items():
        if name.startswith("_") and name not in _CONSTRUCTORS:
            continue
        if isinstance(attr, (staticmethod, classmethod)):
            attr = attr.__func__
        elif isinstance(attr, property):
            attr = attr.fget
        if inspect.isfunction(attr) and attr.__module__ == cls.__module__:
            yield f"{cls.__module__}.{cls.__qualname__}.{name}", attr


def _public_callables():
    """{qualified name: function} of everything ``ANNOTATED_MODULES`` make public."""
    out = {}
    for module_name in ANNOTATED_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                out.update(_methods(obj))
            elif inspect.isfunction(obj):
                out[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return out


def _missing_hints(func):
    """What ``func`` leaves unannotated (parameter names, ``"return"``)."""
    try:
        hints = typing.get_type_hints(func)
    except Exception as exc:  # an annotation that does not resolve
        return [f"unresolvable hints: {type(exc).__name__}: {exc}"]
    params = list(inspect.signature(func).parameters.values())
    missing = [p.name for i, p in enumerate(params)
               if p.kind not in _SKIPPED and p.name not in hints
               and not (i == 0 and p.name in ("self", "cls"))]
    if "return" not in hints:
        missing.append("return")
    return missing


def test_the_checker_sees_a_missing_annotation():
    def partly(self, a: int, b, *args, c, **kwargs) -> int:
        return a

    def no_return(a: int):
        return a

    assert _missing_hints(partly) == ["b", "c"]
    assert _missing_hints(no_return) == ["return"]
    assert _missing_hints(lambda: None) == ["return"]


def test_public_callables_are_fully_annotated():
    callables = _public_callables()
    assert callables, "no public callable found in the annotated modules"
    # A few names that must be among them (the collection itself works).
    for name in ("fedcore.algorithms.kmeans.lloyd.KMeans.fit",
                 "fedcore.algorithms.kmeans.seeding.kmeans_plusplus",
                 "fedcore.algorithms.base.BaseEstimator.set_params",
                 "fedcore.persistence.load",
                 "fedcore.secagg.setup.SCMASetup.__init__",
                 "fedcore.secagg.server.SCMAServer.decode"):
        assert name in callables
    problems = {name: missing for name, func in sorted(callables.items())
                if (missing := _missing_hints(func))}
    assert problems == {}


def test_py_typed_is_installed():
    assert (pathlib.Path(fedcore.__file__).parent / "py.typed").is_file()


def test_every_top_level_name_is_in_an_annotated_module():
    """``fedcore.__all__`` (the public API) is covered: each class and function there is
    defined in a module this test checks."""
    import fedcore
    modules = set(ANNOTATED_MODULES)
    outside = []
    for name in fedcore.__all__:
        obj = getattr(fedcore, name)
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ not in modules:
            outside.append(f"{name} ({obj.__module__})")
    assert not outside, f"public names outside the annotated modules: {outside}"
