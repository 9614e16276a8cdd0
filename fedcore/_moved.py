"""Import paths of modules and names that moved when the code was split into one package per
method family; each keeps working for users and warns with a ``DeprecationWarning``.

An old module path is served by a thin module whose attributes are read from the new one (it is
not the new module itself, so the new module's ``__spec__`` and ``__name__`` stay its own).
"""
import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["MOVED_MODULES", "MOVED_NAMES", "install", "moved_names"]

MOVED_MODULES = {
    "fedcore.kernels.distances": "fedcore.kernels.kmeans.distances",
    "fedcore.kernels.seeding": "fedcore.kernels.kmeans.seeding",
    "fedcore.kernels.lloyd": "fedcore.kernels.kmeans.lloyd",
    "fedcore.kernels.lloyd_replay": "fedcore.kernels.kmeans.lloyd_replay",
    "fedcore.kernels.polynomial": "fedcore.kernels.field.polynomial",
    "fedcore.kernels.polynomial_mod": "fedcore.kernels.field.polynomial_mod",
    "fedcore.kernels.reed_solomon": "fedcore.kernels.field.reed_solomon",
    "fedcore.kernels.cd_kmeans": "fedcore.kernels.cd.kmeans",
    "fedcore.kernels.cd_fairness": "fedcore.kernels.cd.fairness",
    "fedcore.kernels.cd_statistics": "fedcore.kernels.cd.statistics",
    "fedcore.algorithms.kmeanspp": "fedcore.algorithms.kmeans.seeding",
    "fedcore.algorithms.unlearning": "fedcore.algorithms.mufc.unlearning",
    "fedcore.algorithms.cdkm": "fedcore.algorithms.f3km.cdkm",
    "fedcore.algorithms.fair": "fedcore.algorithms.f3km",
    "fedcore.algorithms.fair_lp": "fedcore.algorithms.f3km.fair_lp",
    "fedcore.algorithms.coreset": "fedcore.algorithms.vfl",
    "fedcore.algorithms.coreset_result": "fedcore.algorithms.vfl.coreset_result",
    "fedcore.algorithms.ridge": "fedcore.algorithms.vfl.ridge",
    "fedcore.algorithms.distdim": "fedcore.algorithms.vfl.distdim",
    "fedcore.algorithms.kfed": "fedcore.algorithms.baselines.kfed",
    "fedcore.algorithms.dckmeans": "fedcore.algorithms.baselines.dckmeans",
    "fedcore.algorithms.match_averaging": "fedcore.algorithms.baselines.match_averaging",
    "fedcore.algorithms.ffcm": "fedcore.algorithms.baselines.ffcm",
}

# Names an old module exported that now live outside the package that kept its path.
MOVED_NAMES = {
    "fedcore.algorithms.feca": {
        "cluster_statistics": "fedcore.kernels.feca",
        "greedy_ball_groups": "fedcore.kernels.feca",
        "check_federation": "fedcore.algorithms.clients",
        "client_kmeans": "fedcore.algorithms.clients",
        "predict_nearest": "fedcore.algorithms.clients",
        "run_clients": "fedcore.federation.protocol",
        "single_threaded_kernels": "fedcore.kernels.parallel",
    },
}


def _warn(old, new):
    warnings.warn(f"{old} moved to {new}; import it from there (the old path will be removed)",
                  DeprecationWarning, stacklevel=3)


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves each path of MOVED_MODULES with a thin module reading from the new one."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED_MODULES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        new = MOVED_MODULES[module.__name__]
        _warn(module.__name__, new)
        target = importlib.import_module(new)
        module.__doc__ = f"Moved to :mod:`{new}`."
        module.__all__ = list(getattr(target, "__all__", ()))
        module.__getattr__ = lambda name: getattr(target, name)
        module.__dir__ = lambda: sorted(set(dir(target)))


def moved_names(package):
    """A module ``__getattr__`` for ``package`` that serves its entries of MOVED_NAMES."""
    names = MOVED_NAMES[package]

    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        _warn(f"{package}.{name}", names[name])
        return getattr(importlib.import_module(names[name]), name)
    return __getattr__


def install():
    """Put the finder of moved modules on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModules())
