"""Environment switches, read once at import time.

``FEDCORE_NUMBA_CACHE``
    "1" (default) caches compiled kernels on disk (``cache=True``); "0" disables it.
``FEDCORE_CACHE_DIR``
    Where the cache goes (default: the user cache directory, see :mod:`fedcore._numba_cache`).
``FEDCORE_CHUNK_SIZE``
    Rows per chunk in parallel kernels (default 4096). Chunk boundaries depend on this value and the
    number of rows only, never on the thread count, so results are bit-identical for any number of
    threads. Changing it changes which floating-point sums are formed and therefore the low bits.
"""
import os


def _flag(name, default):
    value = os.environ.get(name, default).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"Environment variable {name!r} must be 0 or 1, got {value!r}")


NUMBA_CACHE = _flag("FEDCORE_NUMBA_CACHE", "1")
if NUMBA_CACHE:
    from ._numba_cache import install as _install_cache_locator
    _install_cache_locator()
CHUNK_SIZE = int(os.environ.get("FEDCORE_CHUNK_SIZE", "4096"))
if CHUNK_SIZE < 1:
    raise ValueError(f"Environment variable 'FEDCORE_CHUNK_SIZE' must be >= 1, got {CHUNK_SIZE}")
