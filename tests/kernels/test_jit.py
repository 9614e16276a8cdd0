"""fedcore's njit: its defaults, and parallel kernels that parallelize explicit pranges only."""
import numpy as np
from numba import prange

from fedcore.kernels.jit import njit


def _total(x, out):
    out[:] = 0.0  # a whole-array fill: stays a plain loop, not a parallel loop of its own
    total = 0.0
    for c in prange(x.shape[0]):
        total += x[c]
    return total


def _identity(a):
    return a


def test_defaults_and_overrides():
    kernel = njit(_identity)
    assert kernel.targetoptions["nogil"] is True
    assert kernel.targetoptions["no_cfunc_wrapper"] is True
    assert njit(nogil=False)(_identity).targetoptions["nogil"] is False


def test_parallel_means_prange_only_for_every_specialisation():
    kernel = njit(cache=False, parallel=True)(_total)
    for dtype in (np.float64, np.float32):  # two specialisations, compiled one after the other
        x = np.arange(1000, dtype=dtype)
        out = np.ones(7)
        assert kernel(x, out) == 499500.0  # the prange reduction (exact here)
        np.testing.assert_array_equal(out, 0.0)
    assert len(kernel.signatures) == 2
    for sig in kernel.signatures:
        diagnostics = kernel.get_metadata(sig)["parfor_diagnostics"]
        assert len(diagnostics.initial_parfors) == 1  # the prange; Numba's default makes it 2
    default = __import__("numba").njit(cache=False, parallel=True)(_total)
    default(np.arange(10.0), np.ones(3))
    assert len(default.get_metadata(default.signatures[0])["parfor_diagnostics"]
               .initial_parfors) == 2  # (the count above can tell the two apart)
