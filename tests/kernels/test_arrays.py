"""The kernels' element-loop copies (fedcore.kernels.arrays)."""
import numpy as np
import pytest

from fedcore.kernels.arrays import copy_into, transpose_into


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
