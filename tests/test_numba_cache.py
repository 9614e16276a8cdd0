"""fedcore's compiled kernels are cached in a per-user directory, not inside the package."""
import os

import pytest

from fedcore import _config
from fedcore._numba_cache import _FedcoreCacheLocator, cache_dir

pytestmark = pytest.mark.skipif(not _config.NUMBA_CACHE,
                                reason="FEDCORE_NUMBA_CACHE=0: kernels are not cached at all")


def test_kernels_cache_under_the_user_cache_directory():
    import fedcore
    from fedcore.kernels.kmeans.lloyd import half_separation
    from fedcore.kernels.kmeans.seeding import d2_update
    package = os.path.dirname(os.path.abspath(fedcore.__file__))
    for kernel in (half_separation, d2_update.serial):
        locator = kernel._cache._impl.locator
        assert isinstance(locator, _FedcoreCacheLocator)
        path = os.path.abspath(locator.get_cache_path())
        assert path.startswith(os.path.abspath(cache_dir()) + os.sep)
        assert not path.startswith(package + os.sep)
    assert fedcore.__version__ in os.path.basename(cache_dir())


def test_other_packages_keep_numba_locations(tmp_path):
    source = tmp_path / "elsewhere.py"
    source.write_text("def f():\n    return 1\n")
    namespace = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    assert _FedcoreCacheLocator.from_function(namespace["f"], str(source)) is None


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("FEDCORE_CACHE_DIR", str(tmp_path))
    assert cache_dir().startswith(str(tmp_path) + os.sep)


def test_each_chunk_size_has_its_own_cache(tmp_path):
    """Kernels compile ``FEDCORE_CHUNK_SIZE`` in as a constant: a cache built for one chunk size
    must not be loaded for another (loading it made the parallel kernels fail)."""
    import subprocess
    import sys
    code = "from fedcore._numba_cache import cache_dir; print(cache_dir())"
    dirs = {}
    for size in ("4096", "1000"):
        env = dict(os.environ, FEDCORE_CACHE_DIR=str(tmp_path), FEDCORE_CHUNK_SIZE=size)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirs[size] = out
        assert out.endswith(f"-chunk{size}")
    assert dirs["4096"] != dirs["1000"]


_COMPILE_FROM_SCRATCH = """
import numpy as np
from numba.core import event
import fedcore
from fedcore.kernels.field.polynomial import poly_from_roots
from fedcore.kernels.field.reed_solomon import berlekamp_massey, find_roots, forney_magnitudes
from fedcore.kernels.kmeans.lloyd import _refresh_screen, lloyd_core, make_screen

with event.install_recorder("numba:compile") as recorder:
    X = np.random.default_rng(0).random((10000, 10))
    fedcore.KMeans(8, random_state=0).fit(X)  # the first fit of the README's speed claim
    screen = make_screen(80, 16, single=True, screen=True)  # rows first: the transpose is kept
    assert screen.shifted_t.shape == (80, 16)
    _refresh_screen(np.random.default_rng(1).random((16, 80)), screen)
    np.testing.assert_array_equal(screen.shifted_t, screen.shifted.T)
    # MUFC's recorded Lloyd and SCMA's decoding, the kernels of `fedcore run`
    centers = X[:8].copy()
    trace = lloyd_core(X, np.ones(10000), centers, 3, 0.0, 0.0, np.empty(10000, dtype=np.int64),
                       np.empty(10000), record=True)[2]
    np.testing.assert_array_equal(trace.centers[-1], centers)
    p = 2**61 - 1
    roots = np.arange(1, 200, dtype=np.int64)  # above the Karatsuba threshold
    f = np.zeros(200, dtype=np.int64)
    poly_from_roots(roots, f, p)
    found = np.zeros(199, dtype=np.int64)
    assert find_roots(f, found, 1, p) == 199
    np.testing.assert_array_equal(found, roots)
    lam = np.zeros(5, dtype=np.int64)
    s = np.array([1, 2, 4, 8], dtype=np.int64)  # S_i = 1 * 2**i: one point 2, magnitude 1
    assert berlekamp_massey(s, lam, p) == 1
    magnitude = np.zeros(1, dtype=np.int64)
    assert forney_magnitudes(s, lam, 1, np.array([2], dtype=np.int64), magnitude, p) == -1
    assert magnitude[0] == 1
    fedcore.BCDKM(4, random_state=0).fit(X)  # F3KM's block coordinate descent
for _, ev in recorder.buffer:  # one line per compile: module and function
    if ev.is_start:
        func = ev.data["dispatcher"].py_func
        print(func.__module__, func.__qualname__)
"""


@pytest.fixture(scope="module")
def compiled_from_scratch(tmp_path_factory):
    """``(module, function)`` of every compile of ``_COMPILE_FROM_SCRATCH``, run in a fresh
    process without the on-disk cache."""
    import subprocess
    import sys
    env = dict(os.environ, FEDCORE_NUMBA_CACHE="0")
    out = subprocess.run([sys.executable, "-c", _COMPILE_FROM_SCRATCH], env=env,
                         capture_output=True, text=True, check=True,
                         cwd=tmp_path_factory.mktemp("compile")).stdout
    return [tuple(line.split()) for line in out.splitlines()]


def test_kernels_compile_no_string_formatting(compiled_from_scratch):
    """A whole-array slice assignment in a kernel (``out[:, :] = a.T``) compiles Numba's
    shape-mismatch message, string formatting included: 2.3 s of the first float32 fit once. The
    first fit, the screen's refresh, a recorded Lloyd run, SCMA's decoding kernels (syndromes to
    locator, roots and magnitudes) and F3KM's BCDKM, compiled from scratch, compile none of it."""
    modules = {module for module, _ in compiled_from_scratch}
    assert "fedcore.kernels.kmeans.lloyd" in modules  # (the recorder saw the kernels compile)
    assert not {m for m in modules if "unicode" in m or m.endswith(".printimpl")}, modules


def test_recorded_lloyd_compiles_its_record_once(compiled_from_scratch):
    """The loop passes ``_record`` a typed bool: a literal ``False`` compiled it twice (once for
    the literal type, once for bool), 0.6 s of ``fedcore run``'s first start."""
    record = [c for c in compiled_from_scratch if c == ("fedcore.kernels.kmeans.lloyd", "_record")]
    assert len(record) == 1
