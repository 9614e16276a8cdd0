"""The kernels' element-loop copies (fedcore.kernels.arrays)."""
import numpy as np
import pytest

from fedcore.kernels.arrays import copy_into, transpose_into


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.float32])
def test_copy_into_copies_a_and_leaves_the_rest(dtype):
    a = np.arange(5, dtype=dtype) + 1
    out = np.full(8, -7, dtype=dtype)
    copy_into(out, a)
    np.testing.assert_array_equal(out[:5], a)
    np.testing.assert_array_equal(out[5:], np.full(3, -7, dtype=dtype))


def test_copy_into_a_view_of_a_row():
    buf = np.zeros((3, 6), dtype=np.int64)
    buf[1, :4] = [4, 3, 2, 1]
    copy_into(buf[2], buf[1, :4])
    np.testing.assert_array_equal(buf[2], [4, 3, 2, 1, 0, 0])


def test_copy_into_refuses_a_short_out():
    out = np.zeros(3)
    with pytest.raises(ValueError, match="out is shorter than a"):
        copy_into(out, np.ones(4))
    np.testing.assert_array_equal(out, np.zeros(3))  # nothing written


def test_transpose_into():
    a = np.arange(12.0).reshape(3, 4)
    out = np.empty((4, 3))
    transpose_into(a, out)
    np.testing.assert_array_equal(out, a.T)
