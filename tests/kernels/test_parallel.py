"""When chunked kernels run their parallel variant (same bits either way: see the kernels'
thread tests), that a small problem compiles and runs only the serial one, that a chunked kernel
calls others in its own variant, and that no parallel or inlined kernel writes through a named
tuple's arrays (which Numba's parallel backend drops)."""
import ast
import pathlib

import numba
import numpy as np
import pytest

import fedcore
from fedcore._config import CHUNK_SIZE
from fedcore.kernels.parallel import (PARALLEL_MIN_CHUNKS, PARALLEL_MIN_ELEMENTS, chunked_kernel,
                                      last_chunk_first, use_parallel)


def _two_threads():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("Numba was started with 1 thread")
    previous = numba.get_num_threads()
    numba.set_num_threads(2)
    return previous


def test_the_rule():
    previous = _two_threads()
    try:
        few = (PARALLEL_MIN_CHUNKS - 1) * CHUNK_SIZE
        assert not use_parallel(CHUNK_SIZE, 10**12)          # one chunk: never
        assert not use_parallel(few, few * 3)                 # too few chunks, narrow rows
        assert use_parallel(few + 1, (few + 1) * 3)           # enough chunks
        assert use_parallel(CHUNK_SIZE + 1, PARALLEL_MIN_ELEMENTS)   # two chunks, wide rows
        numba.set_num_threads(1)
        assert not use_parallel(10 * few, 10**12)             # one thread: never
    finally:
        numba.set_num_threads(previous)


@pytest.mark.parametrize("n_chunks", [1, 2, 3, 24, 25])
def test_last_chunk_first_is_a_permutation_that_starts_with_the_last_chunk(n_chunks):
    order = [last_chunk_first(r, n_chunks) for r in range(n_chunks)]
    assert order == [n_chunks - 1] + list(range(n_chunks - 1))


@numba.njit(parallel=True)
def _threads_of_chunks(n_chunks):
    out = np.empty(n_chunks, dtype=np.int64)
    for r in numba.prange(n_chunks):
        out[last_chunk_first(r, n_chunks)] = numba.get_thread_id()
    return out


def test_the_short_last_chunk_goes_to_a_thread_with_one_chunk_more():
    # 1e5 rows fill 24.4 chunks: under Numba's static schedule the thread that runs the short
    # last chunk runs 12 full ones besides, and the other thread 12 (not 11 and 13).
    if CHUNK_SIZE != 4096:
        pytest.skip("the figures are for the default chunk size")
    previous = _two_threads()
    try:
        threads = _threads_of_chunks(-(-100_000 // CHUNK_SIZE))
    finally:
        numba.set_num_threads(previous)
    owner = threads[-1]
    assert (threads == owner).sum() == 13
    assert (threads != owner).sum() == 12


def _sum_rows(X, out):
    for i in numba.prange(X.shape[0]):
        out[i] = X[i].sum()


def test_a_small_input_runs_and_compiles_only_the_serial_variant():
    previous = _two_threads()
    kernel = chunked_kernel(_sum_rows)
    try:
        small = np.ones((2 * CHUNK_SIZE, 2))
        kernel(small, np.empty(small.shape[0]))
        assert kernel.serial.signatures and not kernel.parallel.signatures
        large = np.ones((PARALLEL_MIN_CHUNKS * CHUNK_SIZE + 1, 2))
        out = np.empty(large.shape[0])
        kernel(large, out)
        assert kernel.parallel.signatures
        np.testing.assert_array_equal(out, 2.0)
    finally:
        numba.set_num_threads(previous)


def _thread_of_rows(X, out):
    for i in numba.prange(X.shape[0]):
        out[i] = numba.get_thread_id()


def _threads_of_rows(X, out):  # a driver: no prange of its own, calls the chunked kernel below
    _row_threads(X, out)


def test_a_chunked_kernel_calls_chunked_kernels_in_its_own_variant():
    # Each variant of a driver calls the same variant of the chunked kernels it calls by name:
    # the serial driver runs every row on this thread, the parallel one on both threads (by
    # thread, not by the kernels' signatures: a driver loaded from Numba's cache compiles none).
    global _row_threads
    previous = _two_threads()
    _row_threads = chunked_kernel(_thread_of_rows)
    try:
        driver = chunked_kernel(_threads_of_rows)
        for variant in ("serial", "parallel"):  # (what each variant is compiled from)
            called = getattr(driver, variant).py_func.__globals__["_row_threads"]
            assert called is getattr(_row_threads, variant)
        X = np.ones((PARALLEL_MIN_CHUNKS * CHUNK_SIZE + 1, 3))
        out = np.full(X.shape[0], -1, dtype=np.int64)
        driver.serial(X, out)
        assert (out == 0).all()
        driver.parallel(X, out)
        assert set(np.unique(out).tolist()) == {0, 1}
    finally:
        numba.set_num_threads(previous)
        del _row_threads


def _parallel_or_inlined(node):
    """Whether a function definition is compiled in parallel (``@chunked_kernel``, ``parallel=True``)
    or inlined into its callers at Numba's IR level (``inline="always"``)."""
    for dec in node.decorator_list:
        if isinstance(dec, ast.Name) and dec.id == "chunked_kernel":
            return True
        if isinstance(dec, ast.Call):
            for kw in dec.keywords:
                value = getattr(kw.value, "value", None)
                if (kw.arg, value) in (("parallel", True), ("inline", "always")):
                    return True
    return False


def test_no_parallel_or_inlined_kernel_writes_through_a_named_tuple():
    # Numba's parallel backend drops writes to the arrays of a named tuple (numba#7135): Lloyd's
    # recorded trace came back uninitialized while its recording helper was inlined. A write such
    # as ``trace.labels[it] = ...`` belongs in a function that is neither parallel nor inlined.
    root = pathlib.Path(fedcore.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.FunctionDef) and _parallel_or_inlined(node)):
                continue
            for sub in ast.walk(node):
                targets = sub.targets if isinstance(sub, ast.Assign) else \
                    [sub.target] if isinstance(sub, ast.AugAssign) else []
                for target in targets:
                    if isinstance(target, ast.Subscript) and isinstance(target.value,
                                                                        ast.Attribute):
                        found.append(f"{path.relative_to(root)}:{sub.lineno} {node.name}")
    assert not found, found
