"""Where Numba caches fedcore's compiled kernels: a per-user cache directory, never the package.

Numba's default puts the cache beside the source (``__pycache__`` inside site-packages) when that
is writable, so uninstalling fedcore would leave compiled files behind and a shared installation
would be written to by every user. fedcore's kernels are cached instead under
``FEDCORE_CACHE_DIR`` when set, else the user cache directory (``~/.cache/fedcore`` on Linux), in
a subdirectory per fedcore, Numba and Python version and chunk size (``FEDCORE_CHUNK_SIZE`` is
compiled into the kernels as a constant, so kernels cached for one chunk size must not be loaded
for another). An explicit ``NUMBA_CACHE_DIR`` still wins, as it does for every Numba user.
Functions of other packages are not affected.
"""
import os
import sys

import numba
from numba.core import caching
from numba.misc.appdirs import AppDirs

__all__ = ["cache_dir", "install"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def cache_dir():
    """The directory fedcore's compiled kernels are cached in."""
    root = os.environ.get("FEDCORE_CACHE_DIR") or AppDirs("fedcore", appauthor=False).user_cache_dir
    from . import __version__
    from ._config import CHUNK_SIZE
    python = f"py{sys.version_info[0]}{sys.version_info[1]}"
    tag = f"fedcore-{__version__}-numba-{numba.__version__}-{python}-chunk{CHUNK_SIZE}"
    return os.path.join(root, tag)


class _FedcoreCacheLocator(caching.UserWideCacheLocator):
    """Numba's user-wide locator, rooted at :func:`cache_dir`, for fedcore's own files only."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        self._cache_path = os.path.join(cache_dir(), self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func, py_file):
        inside = os.path.abspath(py_file).startswith(_PACKAGE_DIR + os.sep)
        return super().from_function(py_func, py_file) if inside else None


def install():
    """Put the fedcore locator first after Numba's ``NUMBA_CACHE_DIR`` one (idempotent). Without
    the locator API (another Numba), Numba's default locations are used."""
    classes = getattr(getattr(caching, "CacheImpl", None), "_locator_classes", None)
    if classes is None or _FedcoreCacheLocator in classes:
        return
    position = 1 if classes and classes[0] is caching.UserProvidedCacheLocator else 0
    classes.insert(position, _FedcoreCacheLocator)
