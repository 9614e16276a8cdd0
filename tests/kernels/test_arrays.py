"""The kernels' element-loop copies (fedcore.kernels.arrays)."""
import numpy as np
import pytest

from fedcore.kernels.arrays import copy_into, prefetch, read_rows, row_range, transpose_into
from fedcore.kernels.jit import njit


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.float32])
def test_copy_into_copies_n_and_leaves_the_rest(dtype):
    a = np.arange(6, dtype=dtype) + 1
    out = np.full(8, -7, dtype=dtype)
    copy_into(out, a, 5)
    np.testing.assert_array_equal(out[:5], a[:5])
    np.testing.assert_array_equal(out[5:], np.full(3, -7, dtype=dtype))


def test_copy_into_between_rows_of_one_buffer():
    buf = np.zeros((3, 6), dtype=np.int64)
    buf[1, :4] = [4, 3, 2, 1]
    copy_into(buf[2], buf[1], 4)
    np.testing.assert_array_equal(buf[2], [4, 3, 2, 1, 0, 0])
    np.testing.assert_array_equal(buf[1], [4, 3, 2, 1, 0, 0])


@pytest.mark.parametrize("out_size, a_size", [(3, 4), (4, 3)])
def test_copy_into_refuses_an_array_shorter_than_n(out_size, a_size):
    out = np.zeros(out_size)
    with pytest.raises(ValueError, match="an array is shorter than n"):
        copy_into(out, np.ones(a_size), 4)
    np.testing.assert_array_equal(out, np.zeros(out_size))  # nothing written


def test_transpose_into():
    a = np.arange(12.0).reshape(3, 4)
    out = np.empty((4, 3))
    transpose_into(a, out)
    np.testing.assert_array_equal(out, a.T)


@pytest.mark.parametrize("lo, hi", [(0, 0), (5, 5), (0, 1), (3, 11), (4096, 8192)])
def test_row_range_is_arange_in_int64(lo, hi):
    out = row_range(lo, hi)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, np.arange(lo, hi))


@njit
def _read(X, lo, hi, sink):
    read_rows(X, lo, hi, sink)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [1, 2, 7, 8, 15, 16, 17, 50, 64, 200])
def test_read_rows_reads_a_cell_of_every_cache_line(dtype, d):
    # Probe which cells of a row are read: a row holding 1 at one cell and 0 elsewhere sums to 1
    # exactly when that cell is read. Every 64-byte line a row touches, wherever the row starts
    # (at any multiple of the item size), must hold a read cell.
    X = np.eye(d, dtype=dtype)
    read = np.zeros(d, dtype=bool)
    sink = np.zeros(1)
    for f in range(d):
        sink[0] = -1.0
        _read(X, f, f + 1, sink)
        assert sink[0] in (0.0, 1.0)
        read[f] = sink[0] == 1.0
    size = np.dtype(dtype).itemsize
    for start in range(0, 64, size):  # the row's first byte within its first line
        lines = {}
        for f in range(d):
            lines.setdefault((start + f * size) // 64, []).append(f)
        for line, cells in lines.items():
            assert read[cells].any(), (start, line, cells)


def test_read_rows_sums_what_it_reads_and_leaves_the_sink_on_no_rows():
    X = np.arange(40.0).reshape(4, 10)[:, ::-1]  # a strided view: the same cells by index
    sink = np.zeros(1)
    _read(X, 1, 3, sink)
    # float64, 8 per line: cells 0 and 8 and the last (9) of rows 1 and 2
    assert sink[0] == sum(X[i, f] for i in (1, 2) for f in (0, 8, 9))
    sink[0] = 5.0
    _read(X, 2, 2, sink)
    assert sink[0] == 5.0
    _read(np.empty((3, 0)), 0, 3, sink)
    assert sink[0] == 5.0


@njit
def _row_sum(a, reach, hints):
    """Sum of ``a`` (2-D) in order; with ``hints``, a prefetch ``reach`` elements (flat) ahead of
    each element read."""
    acc = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if hints:
                prefetch(a, i * a.shape[1] + j + reach)
            acc += a[i, j]
    return acc


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_prefetch_is_a_hint_only(dtype):
    """A hint changes no value and never faults, inside the array or far past either end (the
    greedy pass asks for the lines of the tile after the last one)."""
    a = np.random.default_rng(0).random((37, 11)).astype(dtype)
    plain = _row_sum(a, 0, False)
    assert plain == pytest.approx(float(np.sum(a, dtype=np.float64)), rel=1e-12)
    for reach in (0, 16, a.size, 1 << 20, -(1 << 20)):
        assert _row_sum(a, reach, True) == plain  # the same bits
