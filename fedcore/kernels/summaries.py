"""One-pass summaries of a data array (finiteness, magnitude, spread) without X-sized temporaries.

The validation and the k-means set-up read the whole array once or twice; NumPy's expressions for
the same (``np.isfinite(X).all()``, ``np.abs(X).max()``, ``np.var(X, axis=0)``) each allocate an
array as large as ``X`` (or an eighth of it), which these kernels do not.
"""
import numba
import numpy as np
from numba import prange

from .jit import njit
from .parallel import renamed

__all__ = ["scan_values", "mean_variance"]


# Entries per block of the magnitude scan; arrays of at least _SCAN_PARALLEL_MIN entries are
# scanned by Numba's threads (one block per task; the result does not depend on the schedule).
_SCAN_BLOCK = 1 << 14
_SCAN_PARALLEL_MIN = 1 << 21


@njit(inline="always")
def _largest_bits(bits, mask, start, stop):
    """The largest ``bits[i] & mask`` of ``start:stop``: a branch-free unsigned maximum, which
    compilers vectorize (in the width of ``bits``: Numba widens ``&`` of uint32 to 64 bits, which
    halves the vector lanes, hence the cast back). The loop runs over a slice from 0: an index
    from ``start`` might be negative for all the compiler knows, and Numba's wraparound of
    negative indices then keeps the loop scalar (8x slower: 65 against 8 ms for 1e5 x 784
    float32 on one thread)."""
    block = bits[start:stop]
    big = bits.dtype.type(0)
    for i in range(block.shape[0]):
        big = max(big, bits.dtype.type(block[i] & mask))
    return big


def _block_bits(bits, mask, out):
    """OUT ``out[b]``: :func:`_largest_bits` of block ``b`` of ``_SCAN_BLOCK`` entries, on
    Numba's threads."""
    n = bits.shape[0]
    for b in prange(out.shape[0]):
        out[b] = _largest_bits(bits, mask, b * _SCAN_BLOCK, min(n, (b + 1) * _SCAN_BLOCK))


_block_bits_parallel = njit(parallel=True)(renamed(_block_bits, "_parallel"))


@njit
def _scan_bits(bits, mask, limit, blocks):
    """``(bad, big)``: the first index whose masked bits reach ``limit`` (-1 if none) and the
    largest masked bits before it. ``blocks``: the maxima of the blocks from
    :func:`_block_bits`, or empty (then computed here, block after block)."""
    n = bits.shape[0]
    big = bits.dtype.type(0)
    for start in range(0, n, _SCAN_BLOCK):
        stop = min(n, start + _SCAN_BLOCK)
        if blocks.shape[0]:
            top = blocks[start // _SCAN_BLOCK]
        else:
            top = _largest_bits(bits, mask, start, stop)
        if top >= limit:
            for i in range(start, stop):
                v = bits[i] & mask
                if v >= limit:
                    return i, big
                big = max(big, v)
        big = max(big, top)
    return -1, big


# Per dtype: the unsigned view, the mask of all but the sign bit, the bits of +infinity (every
# NaN and infinity has masked bits >= these, every finite value fewer).
_BITS = {np.dtype(np.float64): (np.uint64, np.uint64(0x7FFF_FFFF_FFFF_FFFF),
                                np.uint64(0x7FF0_0000_0000_0000)),
         np.dtype(np.float32): (np.uint32, np.uint32(0x7FFF_FFFF), np.uint32(0x7F80_0000))}


def scan_values(X):
    """``(bad, big)``: the flat index of the first NaN or infinity in ``X`` (-1 when every entry
    is finite) and the largest absolute finite value before it (0.0 for an empty array).

    IN ``X`` float32 or float64 (m,) (pass ``X.reshape(-1)`` of a C-contiguous array). For
    non-negative IEEE values the order of the bit patterns is the order of the values, so the
    scan takes the maximum of the bits without the sign: one vectorized pass, on Numba's threads
    from ``_SCAN_PARALLEL_MIN`` entries.
    """
    view, mask, limit = _BITS[X.dtype]
    bits = X.view(view)
    if bits.shape[0] >= _SCAN_PARALLEL_MIN and numba.get_num_threads() > 1:
        blocks = np.empty(-(-bits.shape[0] // _SCAN_BLOCK), dtype=view)
        _block_bits_parallel(bits, mask, blocks)
    else:
        blocks = np.empty(0, dtype=view)
    bad, big = _scan_bits(bits, mask, limit, blocks)
    return int(bad), float(np.array(big, dtype=view).view(X.dtype))


@njit
def mean_variance(X):
    """Mean over features of each feature's population variance, in float64 (two passes: column
    means, then squared deviations, each summed in row order).

    IN ``X`` float32 or float64 (n, d), n >= 1.
    """
    n, d = X.shape
    means = np.empty(d)  # (no np.zeros to compile for a first fit)
    means[:] = 0.0
    for i in range(n):
        for f in range(d):
            means[f] += np.float64(X[i, f])
    for f in range(d):
        means[f] /= n
    sq = np.empty(d)
    sq[:] = 0.0
    for i in range(n):
        for f in range(d):
            t = np.float64(X[i, f]) - means[f]
            sq[f] += t * t
    total = 0.0
    for f in range(d):
        total += sq[f] / n
    return total / d
