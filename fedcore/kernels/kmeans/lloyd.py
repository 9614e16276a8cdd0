"""Weighted Lloyd k-means: E-step, M-step statistics and the whole loop, exact and fast.

Rows are split into fixed chunks of ``CHUNK_SIZE``; each chunk writes its own partial sums and the
partials are merged serially in chunk order, so every output is bit-identical for any thread count.
The distance that decides a label is always the exact kernel's (a sum of squared differences in
feature order, :func:`~fedcore.kernels.kmeans.distances.own_distance`); two devices only decide
which distances need computing, never their values:

* **Bounds** ([Hamerly]): each row keeps a lower bound on its distance to every center but its
  own; a row whose own distance plus a margin is below that bound, or below half the distance from
  its center to the nearest other center, keeps its label after one exact distance. E-steps whose
  distances are not kept (all but the last, unless recorded) test an upper bound on the own
  distance first, then a tighter one (with a screen, :func:`_own_upper`, the sum in any order
  raised by its rounding bound; without, the exact distance), and skip the exact distance where
  the bounds, or the screen, prove the label.
* **Screening** (:class:`Screen`): the rows that remain are gathered into blocks of ``BLOCK_ROWS``
  (``MID_BLOCK_ROWS`` or ``BIG_BLOCK_ROWS`` for more centers), shifted by the mean of the centers
  and multiplied by the centers (float32 by default): up to ``FUSED_MAX_FEATURES`` features in
  vector lanes, each entry taken straight into the row's two smallest approximations
  (:func:`~fedcore.kernels.kmeans.distances.screen_fused`), beyond that with one BLAS product
  (``sgemm``). ``|x|^2 - 2 x.c + |c|^2`` is within a rigorous rounding bound of the exact kernel's
  distance (see :func:`screen_eps`); only centers whose interval can reach the smallest upper bound
  get their exact distance, and every exact minimum is among them, so the label (lowest index on
  ties) and its distance are the exact scan's, bit for bit.
  Wide float32 rows (``DIRECT_MIN_FEATURES``) are not shifted: the product reads them from X as
  they are, their norms taken once per run, under the bound of :func:`direct_eps`.

:func:`lloyd_core` also records its E-steps and replays a recorded run on slightly changed data
(:mod:`fedcore.kernels.kmeans.lloyd_replay`), again with the same bits.
"""
import contextlib
import functools
import threading
from typing import NamedTuple

import numba
import numpy as np
from numba import prange, types
from numba.extending import overload

from ..._config import CHUNK_SIZE, NUMBA_CACHE
from ..arrays import (CACHE_LINE, copy_into, prefetch, read_only, read_rows, row_range,
                      transpose_into)
from ..jit import njit
from ..parallel import chunked_kernel, last_chunk_first, n_chunks
from .distances import (SCREEN_BYTES, lane_width, nearest_rows, own_distance, own_distances,
                        screen_fused, smallest_two, transpose_rows)
from .lloyd_replay import (LloydPrior, LloydTrace, center_moves, grow_trace, mark_dirty,
                           prime_bounds, sparse_estep, sparse_sums, top_two)

__all__ = ["Screen", "BLOCK_ROWS", "screen_eps", "direct_eps", "make_screen", "uses_screen",
           "uses_direct", "lloyd_iteration", "half_separation", "relocate_empty", "lloyd_run",
           "lloyd_core", "one_blas_thread"]

# Rows per BLAS product: small enough that the block and its products stay in cache and that
# BLAS, held to one thread, runs at its single-core rate.
BLOCK_ROWS = 128
# Rows per product from this many centers x features (1 MB of float32 centers, more than this
# machine's L2): BLAS packs the centers at every call, so larger blocks amortize it (measured at
# 2e4 x 784, k = 1000: 1.1-1.3x faster; at k x d = 5e4 and 8e4 within noise).
BIG_BLOCK_ROWS = 512
BIG_BLOCK_WORK = 1 << 18
# Rows per product from this many centers (below BIG_BLOCK_WORK): packing the centers costs about
# as much as packing the rows there, so twice the rows halve its share. lloyd_run, 10 iterations,
# uniform float32 1e5 rows against BLOCK_ROWS (3 alternating runs; k = 100 and 1000: 2 rounds of
# a sweep): d = 784, k = 32, 48 and 100: 1.11x, 1.13x and 1.15x; d = 50, k = 48 and 64: 1.09x
# and 1.07x; d = 10 and 2, k = 100: 1.15x and 1.15x; 5e4 x 50, k = 1000: 1.08x; d = 50, k = 32:
# 1.01x. Fewer centers gain nothing: d = 784, k = 16: 0.98x; d = 50, k = 20 and d = 128, k = 24:
# within noise. 512 rows gained less than 256 at k = 100 (d = 784: 1.10x; d = 50 float64: 0.97x).
MID_BLOCK_ROWS = 256
MID_BLOCK_MIN_CLUSTERS = 32
# Rows per product read directly from X (float32, fewer than MID_BLOCK_MIN_CLUSTERS centers): as
# many as keep the product within OpenBLAS's small-matrix rule for AVX-512 cores (k width <= 1200
# entries and k width d <= 1e6, kernel/x86_64/sgemm_small_kernel_permit_skylakex.c), where it
# multiplies without packing the rows (a block of 128 rows spent 1.5 times the multiply's time
# packing them: uniform 1e5 x 784, k = 10). Where that leaves fewer than _SMALL_MIN_ROWS rows,
# BLOCK_ROWS. lloyd_run, 10 iterations, float32, 3 alternating runs against BLOCK_ROWS: uniform
# 1e5 x 784, k = 10, 12, 16, 24: 1.34x, 1.20x, 1.10x, 1.05x; 1e5 x 512, k = 10: 1.41x; 5e4 x
# 2000, k = 10 and 5e4 x 1024, k = 20: 1.33x and 1.31x; blobs 1e5 x 784, k = 10 and 24: 0.99x,
# 1.05x (few rows screened). Products taken rows first (:func:`_rows_first`, not transposed:
# only the k x rows x d <= 1e6 half of the rule applies) take min(BLOCK_ROWS, 1e6 // (k d)) rows
# (uniform 1e5 x 784 float64, k = 10, 127 rows: 1.13x; 1e5 x 384 float32, k = 24: 1.13x; 1e5
# x 500 float64, k = 20: 1.09x; x 784, k = 16: within noise; blobs within noise). Elsewhere
# (other BLAS libraries, other cores) the blocks are just smaller.
_SMALL_ENTRIES = 1200
_SMALL_WORK = 10 ** 6
_SMALL_MIN_ROWS = 32
# Screen from 2 centers of SCREEN_WIDE_FEATURES features, and from SCREEN_MIN_CLUSTERS
# centers of SCREEN_MIN_FEATURES features where features x centers reach SCREEN_MIN_WORK;
# elsewhere the exact scan (nearest_lanes, lazy E-steps) is faster. lloyd_run, 10 iterations,
# 1e5 uniform and blobs rows (median of 4 to 6 calls, screen / exact): d = 2, k = 100 to 1000:
# 1.12-1.34; d = 3, k = 100 and 150: 1.12-1.24; d = 10, k = 16 and 25: 1.11-1.21; d = 16, k = 20:
# 1.20-1.24; d = 20, k = 10 and 16: 1.06-1.18; about 1 at k d = 384 (d = 8, 12 and 16) and from
# 24 to 31 features (d = 24, 25, k = 12, 10: 0.98-1.03, 0.91-1.02; d = 24, k = 3 and 5: 0.86-1.87,
# 1.08); below 1 from there: d = 10, k = 40 and 64: 0.86-1.01 and 0.80-0.93; d = 8, k = 100:
# 0.91-0.95; d = 5, k = 200: 0.93-0.97; from 32 features at any k: d = 32, k = 10: 0.76-0.94; d =
# 32, 40 and 50, k = 2 to 7: 0.50-0.92; d = 100 and 784, k = 5: 0.24 and 0.17 (784, k = 2: 0.21).
# Exact-scan winners left to the screen: d = 3, k = 128 to 200 (1.11-1.15), d = 16 and 20, k = 24
# (1.06-1.12). Those were BLAS products; up to 64 features the screen is now fused (see
# FUSED_MAX_FEATURES), and from 2 features. lloyd_run, 10 iterations, 1e5 rows, screen
# against exact scan in one process (speed-ups, > 1: the screen faster): d = 2, k = 1000
# uniform float32 and blobs float64 1.54x and 1.55x; k = 200 float32 and float64 1.12x and 1.15x;
# k = 50: 0.89x; d = 3, k = 50: 0.92x, k = 100 float64: 1.08x; d = 5, k = 40: 0.94x; d = 8, k =
# 100 float64: 1.32x; d = 10, k = 10 and 20: 0.58x and 0.72x, k = 40: 0.94x (blobs 0.98x), k =
# 64 float64: 1.14x; d = 16, 20 and 24, k = 10, 5 and 10: 0.67x, 0.71x and 0.75x.
SCREEN_MIN_WORK = 384
SCREEN_MIN_CLUSTERS = 8
SCREEN_MIN_FEATURES = 2
SCREEN_WIDE_FEATURES = 32
# Up to this many features the screen forms its product without BLAS
# (fedcore.kernels.kmeans.distances.screen_fused: each entry a chain of fused multiply-adds in
# vector lanes, taken straight into the two smallest, never stored); wider rows are shifted into
# a row-major block that BLAS transposes as it packs it. Against the BLAS product of transposed
# rows and smallest_two, one thread, 256 rows, ns per entry, float32: d = 2, 10, 20, 30, k =
# 1000: 0.134 -> 0.046, 0.252 -> 0.115, 0.408 -> 0.205, 0.549 -> 0.283; k = 20: 0.181 -> 0.064,
# 0.408 -> 0.133, 0.699 -> 0.219, 0.979 -> 0.300; float64, k = 1000: 0.349 -> 0.099, 0.550 ->
# 0.225, 0.852 -> 0.427, 1.189 -> 1.019 (0.58 with the block's stride padded). lloyd_run, 10
# iterations, uniform 1e5 float32 rows unless stated, fused against the row-major BLAS product
# (rows first for 9 to 32 centers): d = 32, k = 10: 1.04x; d = 40, k = 16: 1.06x; d = 50, k =
# 10, 100 and 1000: 1.04x, 1.09x, 1.06x (float64 rows 1.01x, 1.09x; blobs 1.02x, 1.07x, 1.08x);
# d = 64, k = 10 and 100: 0.99x, 1.10x (float64 rows, k = 1000: 1.02x); d = 80, k = 100: 1.00x;
# d = 96, k = 10, 100 and 1000: 0.96x, 1.07x, 0.93x; d = 128, k = 10, 100 and 1000: 0.95x,
# 1.00x, 0.92x; d = 256, k = 100: 0.60x.
FUSED_MAX_FEATURES = 64
# From this many features the fused screen's rows are shifted into a row-major block (vectorized)
# and transposed eight rows at a time in registers (transpose_rows); narrower rows are shifted and
# transposed at once, four rows at a time. lloyd_run, 10 iterations, uniform 1e5 rows, the first
# against the second: d = 24, k = 16 float32 1.21x; d = 16, k = 100 and d = 20, k = 24 float64
# 1.07x; d = 10, k = 100 float32 1.03x, k = 1000 1.01x; d = 8, k = 100 float64 1.02x; d = 6,
# k = 100, d = 5, k = 200 and d = 3, k = 200 float32: 0.97x, 0.98x, 0.97x.
FUSED_SHIFT_ROWS_MIN = 8
# From 9 to 32 centers and more than FUSED_MAX_FEATURES features (narrower rows: the fused screen;
# the rows-first product was measured from 16), a block of shifted rows is multiplied rows first
# (``block @ shifted.T``, one row of the product per row of X) and the small product transposed
# here: OpenBLAS runs such skinny products faster that way round. One thread, 1e5 float32 rows in
# blocks of 128, product and transpose: d = 50, k = 16: 1.54 -> 0.78 ms; d = 128: 4.2 -> 2.6 ms; d
# = 384: 11.0 -> 6.9 ms. lloyd_run, 10 iterations, uniform 1e5 rows: d = 50, k = 10 float32 and
# float64 13% and 8% faster, k = 32 15%; d = 128, k = 16 and 32 15-20%; d = 24, k = 16 13%; d = 16,
# k = 10 and k = 48 to 64 within noise; k = 8 (a product BLAS runs fast as it is) 2-5% slower at d
# = 128 and 384.
ROWS_FIRST_MIN_CLUSTERS = 9
ROWS_FIRST_MAX_CLUSTERS = 32
ROWS_FIRST_MIN_FEATURES = FUSED_MAX_FEATURES + 1
# From this many centers and features their separations are screened by BLAS products (measured
# from k = 16 to 1000, d = 2 to 784); the products are formed ``_GRAM_BYTES`` at a time.
GRAM_MIN_CLUSTERS = 64
GRAM_MIN_FEATURES = 24
_GRAM_BYTES = 1 << 20
# Rows of a chunk whose E-step is followed at once by their M-step sums: about this many bytes of
# X, so that the sums read rows still in cache (a chunk of wide rows is larger than the cache).
_SPAN_BYTES = 1 << 19
# Where tightening an upper bound rarely proves a label, one row in this many is still tightened,
# to notice when it starts paying: 3% of such rows get a tight bound that is then wasted (12%
# with one in 8; uniform 1e5 x 50 and x 784, k = 10: the loop 2-4% faster, within the noise of a
# whole fit; blobs, where tightening stays on, unchanged).
_TIGHTEN_SAMPLE = 32
# From this many features, a block of float32 rows screened by a float32 product is read from X
# as it is (:func:`direct_eps`) where it spans at most 1/_DIRECT_GAPS more rows than it holds
# (the rows between are screened too, unused); else its rows are shifted into a block. Measured
# (lloyd_run, uniform float32 rows, 10 iterations): 1e5 x 784, k = 10, 32 and 100: 14-20%, 12%
# and 5-9% faster; 1e5 x 512, k = 10 and 64: 4% and 14%; 2e4 x 784, k = 1000 (the product
# dominates): within noise; d = 50 to 384 no faster or slower.
DIRECT_MIN_FEATURES = 512
# Split E-steps (see _lloyd_loop), where at most half the clusters changed in the last E-step, from
# rows of SPLIT_MIN_ROW_BYTES and SPLIT_MIN_FEATURES whatever X's size, and beyond
# SPLIT_UNCACHED_MIN_BYTES of X (out of this machine's 32 MB L3) from SPLIT_UNCACHED_MIN_FEATURES
# features whatever the row's bytes. KMeans.fit, blobs 1e5 rows, 10 iterations, against fused
# E-steps only: d = 5, k = 100 float64 (40 bytes): 0.87x; d = 10, k = 100 float32 (40): 0.98x;
# float64 (80): 1.01-1.02x; k = 1000: 1.08x; d = 20 float64: k = 10: 1.13x, k = 100: 1.12x; d = 50,
# k = 10 float32: 1.11-1.18x. Rows of 10 float64 features (80 bytes) do not split in cache: there
# the split loses on uniform data and wins on blobs only at 1e4 rows (lloyd_run, not split against
# split, medians of 1,000 to 14,000 alternating pairs: uniform 1e4 x 10, k = 8: 1.04x; 3e4 x 10 and
# 1e5 x 10, k = 10: 1.04x; blobs 1e5 x 10, k = 100: 1.02x; k = 10, and 3e4 x 10: 1.00x, 1.02x; 1e4
# x 10, k = 100: 0.96x, k = 10: 0.88x, 0.1 ms), and a loop without split E-steps compiles 2 s
# faster (the first KMeans(8).fit on 10,000 x 10: 8.4 -> 6.2 s); from 11 features the split wins
# (blobs 1e5 x 11, k = 10 and 100: 0.90x and 0.96x). Out of cache, narrow rows split since the
# split's sums list their rows and ask for them ahead (SUMMED_AHEAD) and the marks of changed rows
# are set branch-free (_MARK_BITS); before, their scattered reads and a mispredicted branch per
# changed row cost more than the split saved. lloyd_run, 10 iterations, split against not split in
# one process: blobs 5e5 x 15 float64, k = 10 and 100: 1.19x and 1.11x; 5e5 x 12, k = 100: 1.12x;
# 1e6 x 10 float64 and float32, k = 10: 1.19x, 1.11x; 5e5 x 10 float64, k = 100: 1.13x; 1e6 x 16
# float32, k = 100: 1.06x; 5e5 x 50 float32, k = 10: 1.33x; uniform rows, which hardly ever split
# (the marks' cost): 5e5 x 15 float64 1.00x; 1e6 x 10 float32, k = 10 and 100: 0.99x, 0.99x; 5e5 x
# 10 float64, k = 10 and 100: 0.99x, 0.98x; 1e6 x 16 float32: 0.94x. Left unsplit: 5e5 x 10 float32
# (20 MB; blobs 1.18x, uniform 0.94x), in cache (uniform 1e5 x 10 float64 0.98x, blobs k = 100
# 1.05x), and fewer features (blobs 1e6 x 5 float32 1.00x; uniform 5e5 x 5 float32 0.97x, 1e6 x 2
# float64 0.99x).
SPLIT_MIN_ROW_BYTES = 80
SPLIT_MIN_FEATURES = 11
SPLIT_UNCACHED_MIN_FEATURES = 10
SPLIT_UNCACHED_MIN_BYTES = 24 << 20
_DIRECT_GAPS = 8
# Rows are read directly while the bounds this gives stay within this factor of the shifted
# rows' (summed over a block): wider bounds send more rows to exact distances.
_DIRECT_LOOSER = 2.0
# The screen's shifted copy (_shift_rows) asks for the next row's cache lines while it shifts a
# row, for rows of this many bytes or more (the rows a lazy E-step screens are scattered through
# X; narrower rows: hints slower).
SHIFT_PREFETCH_MIN_BYTES = 1024
# A split E-step sums the rows of the clusters that changed, scattered through X: listed first,
# then each row's lines asked for this many rows before it is read.
SUMMED_AHEAD = 16
# The screen computes the exact distances of the candidates of several rows at once (rows where
# several centers' intervals reach the row's bound), side by side in vector lanes
# (own_distances): a group of rows closes once its candidates pass this many (those whose
# distance is already known included).
_CANDIDATES = 64
# A lazy E-step reads only the rows its bounds do not settle, scattered through X (first those
# whose upper bound is tightened, then those screened), which the hardware prefetcher follows
# poorly; the M-step sums then read every row. Rows of READ_AHEAD_MIN_BYTES to _MAX_BYTES are
# first read in order, a span at a time (fedcore.kernels.arrays.read_rows), where the E-step reads
# at least 1 in READ_AHEAD_MIN_SHARE of the span's rows (else the M-step streams them anyway).
# Measured (lloyd_run, 10 iterations, compare_sklearn's data, 1e5 rows unless stated, 2 or 3
# alternating runs against no read-ahead): uniform d = 50, 100 float64 and 128, 256 float32,
# k = 10: 1.23x, 1.21x, 1.19x, 1.10x; uniform 5e5 x 50 float32, k = 10: 1.19x; blobs d = 50
# float64, k = 100 and 1e6 rows, k = 10: 1.06x, 1.08x; blobs d = 50 float32, k = 10 (few rows
# read; reading every row ahead was 0.94x): 1.04x; d = 50 float32 k = 100 and blobs d = 128
# float32 k = 100: 1.01x, 0.98x (within noise). Reading ahead was slower outside the window:
# rows of 16 and 128 bytes 0.90x and 0.96x (every line holds rows the E-step reads anyway), of 2
# and 3 KB 0.86x and 0.96x (long rows stream well on their own).
READ_AHEAD_MIN_BYTES = 160
READ_AHEAD_MAX_BYTES = 1024
READ_AHEAD_MIN_SHARE = 8
# Chunk partial sums held at once (a "wave" of chunks is reduced before the next starts).
_WAVE_BYTES = 1 << 20


class Screen(NamedTuple):
    """Buffers of the BLAS screen, refreshed from the centers at every E-step.

    ``shifted`` float32 or float64 (k, d): ``centers - shift`` rounded to the product's
    precision, and ``shifted_t`` (d, k) its transpose where the screen multiplies rows first
    (else (0, 0)); ``norms`` and ``roots`` float64 (k,): their squared norms
    and norms, ``norms_p`` the squared norms rounded to the product's precision; ``offsets``
    float64 (k,) ``norms + 2 shift.shifted`` (the constant of the direct product, see
    :func:`direct_eps`), ``offsets_p`` rounded; ``shift`` float64 (d,); ``eps`` and ``tiny``: the
    relative and absolute rounding bound of :func:`screen_eps`; ``eps_square``, ``eps_cross`` and
    ``eps_shift``: those of :func:`direct_eps`.
    """
    shifted: np.ndarray
    shifted_t: np.ndarray
    norms: np.ndarray
    roots: np.ndarray
    norms_p: np.ndarray
    offsets: np.ndarray
    offsets_p: np.ndarray
    shift: np.ndarray
    eps: float
    tiny: float
    eps_square: float
    eps_cross: float
    eps_shift: float


@njit
def screen_eps(n_features, single):
    """``(eps, tiny)``: ``|approx - exact| <= eps (|x'| + |c'|)^2 + tiny (2 (|x'| + |c'|) sqrt(d)
    + d + 1)`` for the screened distance of a row ``x`` to a center ``c``.

    ``x' = fl(x - s)`` and ``c' = fl(c - s)`` are rounded to the product's precision ``u_g``
    (2^-24 for float32, 2^-53 for float64; ``u = 2^-53``). The shift moves each coordinate
    difference by at most ``(u_g + u)(|x'_f| + |c'_f|)``, hence the squared distance by
    ``2.1 u_g S^2`` (``S = |x'| + |c'|``); the product's dot errs by ``d u_g |x'| |c'| <= d u_g
    S^2 / 4`` (any summation order, with or without FMA), doubled in the expansion; the float64
    norms by ``d u (|x'|^2 + |c'|^2)``; the expansion's own roundings by ``3 u S^2``; the exact
    kernel by ``(d + 2) u`` relative. In all ``(d/2 + 2.1) u_g + (2d + 8) u``, times 1.1 for the
    second-order terms. ``tiny`` covers underflow (subnormal spacing of the product's type).

    With a float32 product the expansion ``|x'|^2 - 2 x'.c' + |c'|^2`` is evaluated in float32
    too (twice the vector lanes): the two norms rounded to float32 and the two additions add at
    most ``4 u_g S^2`` (the doubling is exact); ``5 u_g`` is added.
    """
    u = 2.0 ** -53
    u_g = 2.0 ** -24 if single else u
    eps = 1.1 * ((0.5 * n_features + 2.1) * u_g + (2.0 * n_features + 8.0) * u)
    if single:
        eps += 1.1 * 5.0 * u_g
    tiny = 2.0 ** -148 if single else 2.0 ** -1070
    return eps, tiny


@njit(inline="always")
def _screen_error(screen, s, d):
    """The bound of :func:`screen_eps` for norms summing to ``s`` (``|x'| + |c'|``), d features."""
    return screen.eps * s * s + screen.tiny * (2.0 * s * np.sqrt(d) + d + 1.0)


@njit
def direct_eps(n_features, single):
    """``(eps_square, eps_cross, eps_shift)`` of the direct product: rows read from X as they are.

    There ``x.c'`` (``c' = fl(c - s)`` in the product's precision ``u_g``) comes from the product,
    and ``q = |x|^2 - 2 x.s + |s|^2`` stands for ``|x - s|^2``: ``|x|^2`` once per run, ``x.s``,
    ``|s|^2`` and ``o = |c'|^2 + 2 s.c'`` in float64, in any order. The approximation ``(q - 2
    x.c') + o`` (rounded as the screen's) then equals ``delta + |x - c|^2`` to within

        ``E = eps_square S^2 + (eps_cross |x| + eps_shift |s|) |c'| + tiny (2 S sqrt(d) + 2d + 4)``,

    ``S = sqrt(max(q, 0) + D) + |c'|`` (at least ``|x - s| + |c'|`` and ``sqrt|q| + |c'|``), where
    ``delta = q - |x - s|^2`` is the same for every center of the row, with ``|delta| <= D = 1.1
    (d + 2) u (|x| + |s|)^2`` (``|x|^2``, ``x.s`` doubled, ``|s|^2`` and the two additions).
    Terms: the rounding of ``c - s`` moves the distance by ``2.1 u_g S^2``; the product's dot by
    ``d u_g |x| |c'|``, doubled; ``o`` by ``(d + 1) u (|c'|^2 + 2 |s| |c'|)``; rounding ``q`` and
    ``o`` to the product's precision and the two additions by ``u_g (3 |q| + 4 |x| |c'| + 2
    |o|)``; the exact kernel by ``(d + 2) u S^2``. In all ``(7.1 u_g + (2 d + 3) u) S^2 + ((2 d +
    4) u_g |x| + (4 u_g + (2 d + 2) u) |s|) |c'|``, times 1.1 for the second-order terms. The
    float64 recomputation of a candidate's approximation has a subset of these roundings, from
    the same ``q``.

    Only ``delta``-free differences decide labels and candidates, so a label is proven as by the
    shifted rows; the bounds kept for the next E-step (an upper and a lower bound on the
    distance) allow ``|delta|`` besides.
    """
    u = 2.0 ** -53
    u_g = 2.0 ** -24 if single else u
    return (1.1 * (7.1 * u_g + (2.0 * n_features + 3.0) * u),
            1.1 * (2.0 * n_features + 4.0) * u_g,
            1.1 * (4.0 * u_g + (2.0 * n_features + 2.0) * u))


@njit(inline="always")
def _direct_error(screen, total, x_norm, shift_norm, root, d):
    """The bound ``E`` of :func:`direct_eps`: ``total = S``, ``x_norm = |x|``, ``shift_norm =
    |s|``, ``root = |c'|``."""
    return (screen.eps_square * total * total
            + (screen.eps_cross * x_norm + screen.eps_shift * shift_norm) * root
            + screen.tiny * (2.0 * total * np.sqrt(d) + 2.0 * d + 4.0))


@njit(inline="always")
def _delta_error(x_norm, shift_norm, d):
    """The bound ``D`` on ``|delta|`` of :func:`direct_eps`."""
    return 1.1 * (d + 2.0) * 2.0 ** -53 * (x_norm + shift_norm) * (x_norm + shift_norm)


def _both_single(X, shifted):
    """At compile time, from Numba types: X and the product both float32."""
    return X.dtype == types.float32 and shifted.dtype == types.float32


def _single_rows(X, shifted):
    """Whether the screen may read the rows of X as they are: both float32 (a constant)."""


@overload(_single_rows, jit_options={"cache": NUMBA_CACHE})
def _single_rows_impl(X, shifted):
    same = _both_single(X, shifted)
    return lambda X, shifted: same


def _product_of_rows(X, shifted, lo, hi):
    """``shifted @ X[lo:hi].T`` where :func:`_single_rows` (else empty, never called)."""


@overload(_product_of_rows, jit_options={"cache": NUMBA_CACHE})
def _product_of_rows_impl(X, shifted, lo, hi):
    if _both_single(X, shifted):
        return lambda X, shifted, lo, hi: np.dot(shifted, X[lo:hi].T)
    return lambda X, shifted, lo, hi: np.empty((shifted.shape[0], 0), dtype=shifted.dtype)


def uses_screen(n_features, n_clusters):
    """Whether Lloyd screens rows with a BLAS product for this shape (``SCREEN_MIN_WORK``)."""
    if n_clusters < 2 or n_features < SCREEN_MIN_FEATURES:
        return False
    return n_features >= SCREEN_WIDE_FEATURES or (
        n_clusters >= SCREEN_MIN_CLUSTERS and n_features * n_clusters >= SCREEN_MIN_WORK)


def uses_direct(n_features):
    """Whether Lloyd's screen reads float32 rows from X as they are, not shifted into a block
    (with a float32 product only; :func:`direct_eps`)."""
    return n_features >= DIRECT_MIN_FEATURES


def make_screen(n_features, n_clusters, single=True, screen=None):
    """The :class:`Screen` buffers for this shape; None (no screen: every pending row is scanned
    exactly) where ``screen`` is False, or None and :func:`uses_screen` says no.

    ``single``: a float32 product (twice BLAS's float64 rate; the bound is wider but still
    rigorous). Choose float64 for data whose spread would overflow or underflow float32 (and,
    where rows are read directly from X, see :func:`uses_direct`, whose magnitude would).
    """
    dtype = np.float32 if single else np.float64
    if screen is None:
        screen = uses_screen(n_features, n_clusters)
    if not screen:
        return None
    return _new_screen(n_clusters, n_features, dtype, single)


def _new_screen(k, d, dtype, single):
    eps, tiny = screen_eps(d, single)
    eps_square, eps_cross, eps_shift = direct_eps(d, single)
    shape_t = (d, k) if _rows_first(k, d) else (0, 0)  # (the transpose only where it is read)
    return Screen(np.empty((k, d), dtype=dtype), np.empty(shape_t, dtype=dtype), np.empty(k),
                  np.empty(k),
                  np.empty(k, dtype=dtype), np.empty(k), np.empty(k, dtype=dtype), np.empty(d),
                  eps, tiny, eps_square, eps_cross, eps_shift)


@njit
def _refresh_screen(centers, screen):
    """Fill ``screen`` from ``centers`` float64 (k, d): shift = their mean."""
    k, d = centers.shape
    shift = screen.shift
    shift[:] = 0.0
    for j in range(k):
        for f in range(d):
            shift[f] += centers[j, f]
    for f in range(d):
        shift[f] /= k
    for j in range(k):
        acc = 0.0
        cross = 0.0
        for f in range(d):
            screen.shifted[j, f] = centers[j, f] - shift[f]
            t = np.float64(screen.shifted[j, f])
            acc += t * t
            cross += shift[f] * t
        screen.norms[j] = acc
        screen.roots[j] = np.sqrt(acc)
        screen.norms_p[j] = acc
        screen.offsets[j] = acc + 2.0 * cross
        screen.offsets_p[j] = screen.offsets[j]
    if screen.shifted_t.shape[0] > 0:  # (allocated only where the screen multiplies rows first)
        transpose_into(screen.shifted, screen.shifted_t)


class ScreenScratch(NamedTuple):
    """Scratch of the screen (:func:`_screen_block`), one entry per row of a block
    (``BLOCK_ROWS``), or per column of its product (a block read directly from X spans up to
    1/``_DIRECT_GAPS`` more rows; a fused block has at least one group of lanes; see
    :func:`_screen_scratch`): per column, the rows' squared norms (float64, and rounded to
    the product's precision), the two smallest approximations (in the product's precision) and
    the first center at the smallest (int32); per row, their exact distances to the best
    approximation, the rows whose exact distance to it is not yet known (``todo``: their
    positions in the block) and those distances (``todo_exact``), the rows with several
    candidates (``amb``), their bounds (``tops``, ``errs``, ``slacks``: ``top``, ``err_max`` and
    ``slack`` of :func:`_row_bounds`), and per such row of a group its first candidate
    (``starts``); per candidate of a group of rows (``k + _CANDIDATES``), its
    center (``cand``) and its place among those whose exact distance is not yet known
    (``slot``: -1 if known), and those (``cand_rows``, ``cand_which``) and their distances
    (``cand_exact``); for a fused block, a row's column of shifted coordinates (``features``,
    float64 (d,)) and its entries of the product (``column``, float64 (k,)) formed again
    (:func:`_fused_column`)."""
    norms: np.ndarray
    norms_p: np.ndarray
    exact: np.ndarray
    best: np.ndarray
    second: np.ndarray
    arg: np.ndarray
    todo: np.ndarray
    todo_rows: np.ndarray
    todo_which: np.ndarray
    todo_exact: np.ndarray
    cand: np.ndarray
    cand_rows: np.ndarray
    cand_which: np.ndarray
    cand_exact: np.ndarray
    slot: np.ndarray
    amb: np.ndarray
    tops: np.ndarray
    errs: np.ndarray
    slacks: np.ndarray
    starts: np.ndarray
    features: np.ndarray
    column: np.ndarray


@njit(inline="always")
def _screen_scratch(rb, shifted):
    """The :class:`ScreenScratch` of blocks of up to ``rb`` rows screened against the centers of
    ``shifted`` (:class:`Screen`; its dtype is the product's). Per column: ``rb`` and the gaps a
    block read directly may span, and at least one group of lanes of the fused screen (a block
    of fewer rows is padded to one: ``SCREEN_BYTES``)."""
    dtype = shifted.dtype
    cols = max(rb + rb // _DIRECT_GAPS, SCREEN_BYTES // shifted.itemsize)
    cap = shifted.shape[0] + _CANDIDATES
    return ScreenScratch(np.empty(cols), np.empty(cols, dtype=dtype), np.empty(rb),
                         np.empty(cols, dtype=dtype), np.empty(cols, dtype=dtype),
                         np.empty(cols, dtype=np.int32), np.empty(rb, dtype=np.int64),
                         np.empty(rb, dtype=np.int64), np.empty(rb, dtype=np.int32),
                         np.empty(rb), np.empty(cap, dtype=np.int64),
                         np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64),
                         np.empty(cap), np.empty(cap, dtype=np.int64),
                         np.empty(rb, dtype=np.int64), np.empty(rb), np.empty(rb),
                         np.empty(rb), np.empty(rb + 1, dtype=np.int64),
                         np.empty(shifted.shape[1]), np.empty(shifted.shape[0]))


class Nearest(NamedTuple):
    """Scratch of the exact scan (:func:`_scan_block`), one entry per row of a block: the two
    smallest distances and the first center at the smallest."""
    best: np.ndarray
    second: np.ndarray
    arg: np.ndarray


@njit(fastmath={"reassoc", "contract"})
def _shift_rows(X, rows, shift, block, norms):
    """OUT ``block[r] = fl(X[rows[r]] - shift)`` (in ``block``'s precision) and ``norms[r]``: its
    squared norm in float64, summed in any order (the screen's bound allows for any order: see
    :func:`screen_eps`); one call per block, so that each row is a vectorized loop."""
    d = X.shape[1]
    line = max(1, CACHE_LINE // X.itemsize)
    hints = d * X.itemsize >= SHIFT_PREFETCH_MIN_BYTES
    for r in range(rows.shape[0]):
        i = rows[r]
        if hints and r + 1 < rows.shape[0]:  # the next row's lines asked for (scattered rows)
            ahead = rows[r + 1] * d
            for f in range(0, d, line):
                prefetch(X, ahead + f)
        acc = 0.0
        for f in range(X.shape[1]):
            block[r, f] = np.float64(X[i, f]) - shift[f]
            t = np.float64(block[r, f])
            acc += t * t
        norms[r] = acc


@njit(inline="always")
def _shift_transpose(X, rows, shift, block_t, norms, width):
    """OUT ``block_t[:, r] = fl(X[rows[r]] - shift)`` (in ``block_t``'s precision) and
    ``norms[r]``: its squared norm in float64; four rows at a time (four independent sums); zeros
    in the columns ``m = rows.shape[0]`` to ``width - 1``, as
    :func:`~fedcore.kernels.kmeans.distances.transpose_rows` leaves them."""
    m = rows.shape[0]
    d = X.shape[1]
    full = m - m % 4
    for r in range(0, full, 4):
        i0, i1, i2, i3 = rows[r], rows[r + 1], rows[r + 2], rows[r + 3]
        s0 = s1 = s2 = s3 = 0.0
        for f in range(d):
            s = shift[f]
            block_t[f, r] = np.float64(X[i0, f]) - s
            block_t[f, r + 1] = np.float64(X[i1, f]) - s
            block_t[f, r + 2] = np.float64(X[i2, f]) - s
            block_t[f, r + 3] = np.float64(X[i3, f]) - s
            t0 = np.float64(block_t[f, r])
            t1 = np.float64(block_t[f, r + 1])
            t2 = np.float64(block_t[f, r + 2])
            t3 = np.float64(block_t[f, r + 3])
            s0 += t0 * t0
            s1 += t1 * t1
            s2 += t2 * t2
            s3 += t3 * t3
        norms[r], norms[r + 1], norms[r + 2], norms[r + 3] = s0, s1, s2, s3
    for r in range(full, m):
        i = rows[r]
        acc = 0.0
        for f in range(d):
            block_t[f, r] = np.float64(X[i, f]) - shift[f]
            t = np.float64(block_t[f, r])
            acc += t * t
        norms[r] = acc
    for f in range(d):
        for c in range(m, width):
            block_t[f, c] = 0.0


@njit(inline="always")
def _rows_first(k, d):
    """Whether the screen multiplies a block of rows rows-first (``ROWS_FIRST_*``)."""
    return ROWS_FIRST_MIN_CLUSTERS <= k <= ROWS_FIRST_MAX_CLUSTERS and d >= ROWS_FIRST_MIN_FEATURES


@njit(inline="always")
def _column(rows, r, first, direct):
    """The column of :func:`_screen_block`'s product that holds row ``rows[r]``."""
    return rows[r] - first if direct else r


@njit(fastmath={"reassoc", "contract"})
def _fused_column(block_t, shifted, c, x, column):
    """OUT ``column[j]``: the dot of ``shifted[j]`` and column ``c`` of the fused screen's block
    of shifted rows ``block_t`` (d, w), in float64, summed in any order (within the screen's
    bound: see :func:`screen_eps`), for every center ``j``; ``x`` (d,): scratch for the
    column, so that each dot is a vectorized loop over contiguous features."""
    d = block_t.shape[0]
    for f in range(d):
        x[f] = block_t[f, c]
    for j in range(shifted.shape[0]):
        acc = 0.0
        for f in range(d):
            acc += x[f] * np.float64(shifted[j, f])
        column[j] = acc


@njit(inline="always")
def _row_bounds(screen, direct, nx, x_norm, shift_root, root_max, best, nearest, d):
    """``(top, err_max, slack)`` of a row in :func:`_screen_block`: an upper bound on its squared
    distance to its best approximation's center (``nearest``: that approximation), a bound on
    every center's approximation error, and (``direct``) the error allowed for the row's
    squared distance to the shift (``nx``; ``x_norm``: the row's norm, see direct_eps)."""
    if direct:  # bounds on differences (delta cancels), and |delta| for the bounds kept
        slack = _delta_error(x_norm, shift_root, d)
        x = np.sqrt(max(nx, 0.0) + slack)  # >= |x - s| and sqrt|q| (see direct_eps)
        root = screen.roots[best]
        top = nearest + _direct_error(screen, x + root, x_norm, shift_root, root, d)
        err_max = _direct_error(screen, x + root_max, x_norm, shift_root, root_max, d)
    else:
        slack = 0.0
        x = np.sqrt(nx)
        top = nearest + _screen_error(screen, x + screen.roots[best], d)  # >= d(x, c_best)
        err_max = _screen_error(screen, x + root_max, d)  # >= every center's error
    return top, err_max, slack


@njit
def _screen_block(X, rows, known, centers, screen, scratch, labels, lower, distances, lazy,
                  sq_norms, direct):
    """Nearest center of each row in ``rows`` (exact, lowest index on ties) through one
    product; ``lower`` gets a lower bound on the distance to every other center.

    The product ``shifted @ block_t`` of the centers and the shifted rows, transposed, has one
    row per center, so the running two smallest approximations are updated across rows as vector
    lanes, branch-free. Rows of more than ``FUSED_MAX_FEATURES`` are shifted into a row-major
    block that BLAS transposes as it packs it; narrower rows are transposed here
    (four at a time, or from ``FUSED_SHIFT_ROWS_MIN`` features shifted row-major and transposed
    eight at a time) and screened without BLAS
    (:func:`~fedcore.kernels.kmeans.distances.screen_fused`: the product's entries are formed in
    vector lanes and never stored; the few a row's candidates need are formed again, in float64,
    by :func:`_fused_column`). For 9 to 32 centers of more than ``FUSED_MAX_FEATURES``
    (:func:`_rows_first`) a row-major block is multiplied rows first and the product transposed
    here instead.
    ``direct`` (float32 rows and product, ``rows`` ascending, X's squared row norms in
    ``sq_norms``): where the rows lie close together in X, the product reads them there as they
    are (:func:`direct_eps`), and the rows between them are screened too but not used. Then the
    exact distances to the best approximations: ``known[r]`` (>= 0) is row ``r``'s distance to
    its previous label, computed by the bound test; the others side by side
    (:func:`~fedcore.kernels.kmeans.distances.own_distances`), and so the candidates of the rows
    whose approximations leave several, a group of rows at a time (``_CANDIDATES``), then each
    row's first smallest. ``lazy``:
    ``distances`` gets upper bounds on the distance (not squared) instead, and a row whose label
    the product proves alone gets no exact distance (its bound is the product's). ``scratch``:
    :class:`ScreenScratch`. Returns whether reading the rows directly kept the error bounds
    within ``_DIRECT_LOOSER`` times the shifted rows' (where it did not, as for rows far from the
    origin, the caller shifts the rows for the rest of the E-step).
    """
    m = rows.shape[0]
    d = X.shape[1]
    k = centers.shape[0]
    norms = scratch.norms
    first = rows[0]
    width = rows[m - 1] - first + 1
    direct = direct and m <= width <= m + m // _DIRECT_GAPS  # (rows ascending)
    rows_first = _rows_first(k, d)
    fused = not direct and d <= FUSED_MAX_FEATURES
    shift_sq = 0.0
    cols = m  # (the fused block's columns screened)
    if direct:  # the rows as they are: |x - s|^2 = |x|^2 - 2 x.s + |s|^2 (see direct_eps)
        out = _product_of_rows(X, screen.shifted, first, first + width)  # (k, width)
        for f in range(d):
            shift_sq += screen.shift[f] * screen.shift[f]
        for c in range(width):
            cross = _dot_shift(X, first + c, screen.shift)
            norms[c] = (sq_norms[first + c] - 2.0 * cross) + shift_sq
        constant = screen.offsets_p
    elif not fused:  # a row-major block
        block = np.empty((m, d), dtype=screen.shifted.dtype)
        _shift_rows(X, rows, screen.shift, block, norms)
        if rows_first:  # rows by centers, transposed here
            out = np.empty((k, m), dtype=block.dtype)
            transpose_into(np.dot(block, screen.shifted_t), out)  # (k, m)
        else:  # BLAS transposes the rows as it packs them
            out = np.dot(screen.shifted, block.T)  # (k, m)
        width = m
        constant = screen.norms_p
    else:  # fused: out is the block of shifted rows (d, w), the product formed as it is read
        itemsize = screen.shifted.itemsize
        cols = max(m, SCREEN_BYTES // itemsize)  # (fewer rows padded to a group of lanes)
        # One cache line more per feature: a feature stride of a multiple of 2 KB (256 float64
        # rows) put each feature's lanes into the same few L1 sets (one thread, ns per entry,
        # float64 d = 24 and 30: 0.66 -> 0.49 and 1.04 -> 0.58; elsewhere the same).
        out = np.empty((d, cols + CACHE_LINE // itemsize), dtype=screen.shifted.dtype)
        if d >= FUSED_SHIFT_ROWS_MIN:
            block = np.empty((m, d), dtype=screen.shifted.dtype)
            _shift_rows(X, rows, screen.shift, block, norms)
            transpose_rows(block, row_range(0, m), out, cols)
        else:
            _shift_transpose(X, rows, screen.shift, out, norms, cols)
        width = m
        constant = screen.norms_p
    # The two smallest approximations in the product's precision (see screen_eps), one column
    # of the product (a row of X) per vector lane.
    norms_p, m1, m2, j1 = scratch.norms_p, scratch.best, scratch.second, scratch.arg
    for c in range(width):
        norms_p[c] = norms[c]
    if fused:
        for c in range(width, cols):
            norms_p[c] = 0.0
        screen_fused(out, screen.shifted, norms_p, constant, m1, m2, j1, cols)
    else:
        smallest_two(out, norms_p, constant, m1, m2, j1)
    root_max = 0.0
    for j in range(k):
        root_max = max(root_max, screen.roots[j])
    # Exact distances to the best approximations (usually the previous label, already known).
    exact, todo = scratch.exact, scratch.todo
    cand, cand_rows = scratch.cand, scratch.cand_rows
    cand_which, cand_exact = scratch.cand_which, scratch.cand_exact
    t = 0
    for r in range(m):
        c = _column(rows, r, first, direct)
        if known[r] >= 0.0 and j1[c] == labels[rows[r]]:
            exact[r] = known[r]
        elif lazy:
            exact[r] = -1.0  # computed below if the row needs it
        else:
            todo[t] = r
            scratch.todo_rows[t] = rows[r]
            scratch.todo_which[t] = j1[c]
            t += 1
    own_distances(X, scratch.todo_rows[:t], centers, scratch.todo_which, scratch.todo_exact)
    for q in range(t):
        exact[todo[q]] = scratch.todo_exact[q]
    shift_root = np.sqrt(shift_sq)
    looser = 0.0  # the direct bounds, and the shifted rows' bounds for the same rows
    tighter = 0.0
    amb = scratch.amb  # rows with several candidates, settled below, and their bounds
    tops, errs, slacks = scratch.tops, scratch.errs, scratch.slacks
    n_amb = 0
    for r in range(m):
        i = rows[r]
        c = _column(rows, r, first, direct)
        nx = norms[c]
        best = j1[c]
        x_norm = np.sqrt(sq_norms[i]) if direct else 0.0
        top, err_max, slack = _row_bounds(screen, direct, nx, x_norm, shift_root, root_max, best,
                                          m1[c], d)
        if direct:  # (the shifted rows' bound for the same row)
            looser += err_max
            tighter += _screen_error(screen, np.sqrt(max(nx - slack, 0.0)) + root_max, d)
        if not m2[c] - err_max > top:  # several candidates
            amb[n_amb] = r
            tops[n_amb] = top
            errs[n_amb] = err_max
            slacks[n_amb] = slack
            n_amb += 1
            continue
        dist = exact[r]  # c_best is the only candidate
        labels[i] = best
        if dist < 0.0:  # lazy: the label needs no exact distance
            distances[i] = np.sqrt(top + slack)
        else:
            distances[i] = np.sqrt(dist) if lazy else dist
        # Every other center j has d(x, c_j) >= approx_j - err_max >= m2.
        lower[i] = np.sqrt(max(m2[c] - err_max - slack, 0.0))
    # Every center whose interval reaches a row's upper bound, exactly: the candidates of a group
    # of rows in ascending order, their distances side by side (own_distances), then each row's
    # first smallest. ``slot``: a candidate's place among those computed (-1: known).
    starts, slot = scratch.starts, scratch.slot
    q0 = 0
    while q0 < n_amb:
        n_cand = 0
        n_new = 0
        q1 = q0
        while q1 < n_amb and n_cand + k <= cand.shape[0]:
            r = amb[q1]
            i = rows[r]
            c = _column(rows, r, first, direct)
            nx = norms[c]
            best = j1[c]
            top = tops[q1]
            err_max = errs[q1]
            starts[q1 - q0] = n_cand
            if fused:  # (the row's entries of the product, formed again)
                _fused_column(out, screen.shifted, c, scratch.features, scratch.column)
            for j in range(k):
                offset = screen.offsets[j] if direct else screen.norms[j]
                p = scratch.column[j] if fused else np.float64(out[j, c])
                approx = nx - 2.0 * p + offset
                if approx - err_max <= top:
                    cand[n_cand] = j
                    slot[n_cand] = -1
                    if j != best or exact[r] < 0.0:
                        slot[n_cand] = n_new
                        cand_rows[n_new] = i
                        cand_which[n_new] = j
                        n_new += 1
                    n_cand += 1
            q1 += 1
        starts[q1 - q0] = n_cand
        own_distances(X, cand_rows[:n_new], centers, cand_which, cand_exact)
        for q in range(q0, q1):
            r = amb[q]
            i = rows[r]
            c = _column(rows, r, first, direct)
            best = j1[c]
            a = best
            dist = np.inf
            for p in range(starts[q - q0], starts[q - q0 + 1]):
                e = exact[r] if slot[p] < 0 else cand_exact[slot[p]]
                if e < dist:  # ascending j: the lowest index wins ties
                    dist = e
                    a = cand[p]
            labels[i] = a
            distances[i] = np.sqrt(dist) if lazy else dist
            # Every other center j has d(x, c_j) >= approx_j - err_max >= (m2 if a is best
            # else m1).
            lower[i] = np.sqrt(max((m2[c] if a == best else m1[c]) - errs[q] - slacks[q], 0.0))
        q0 = q1
    return looser <= _DIRECT_LOOSER * tighter


@njit(inline="always")
def _scan_block(X, rows, centers_t, block_t, nearest, labels, lower, distances, lazy):
    """Nearest center of each row in ``rows`` by the exact scan
    (:func:`~fedcore.kernels.kmeans.distances.nearest_rows`: each distance summed over features
    in order, the same bits as the plain scan, sixteen rows at a time in vector lanes;
    :class:`Nearest` scratch). OUT ``labels``, ``distances`` (lowest index on ties; not squared
    where ``lazy``, as lazy E-steps keep them) and ``lower`` (the exact distance to the nearest
    other center).
    """
    best, second, arg = nearest.best, nearest.second, nearest.arg
    nearest_rows(X, rows, centers_t, block_t, best, second, arg)
    m = rows.shape[0]
    for r in range(m):
        second[r] = np.sqrt(second[r])  # (a loop of its own: vectorized)
    for r in range(m):
        i = rows[r]
        labels[i] = arg[r]
        distances[i] = np.sqrt(best[r]) if lazy else best[r]
        lower[i] = second[r]


@njit(inline="always")
def _screen_rows(k, d, direct=False):
    """Rows per screen product for k centers of d features (``direct``: rows read from X)."""
    if k * d >= BIG_BLOCK_WORK:
        return BIG_BLOCK_ROWS
    if k >= MID_BLOCK_MIN_CLUSTERS:
        return MID_BLOCK_ROWS
    if direct:  # (a block read directly spans up to 1/_DIRECT_GAPS more rows than it holds)
        width = min(_SMALL_ENTRIES // k, _SMALL_WORK // (k * d))
        rows = width * _DIRECT_GAPS // (_DIRECT_GAPS + 1)
        if rows >= _SMALL_MIN_ROWS:
            return rows
    if _rows_first(k, d):  # (not transposed: only the k x rows x d half of the rule)
        rows = min(BLOCK_ROWS, _SMALL_WORK // (k * d))
        if rows >= _SMALL_MIN_ROWS:
            return rows
    return BLOCK_ROWS


@njit
def _estep_rows(X, centers, centers_t, screen, half_sep, margin, start, stop, labels, lower,
                distances, lazy, tighten, sq_norms, direct):
    """E-step of rows ``start:stop``: OUT ``labels``, ``distances`` (exact, as the plain scan);
    IN/OUT ``lower``, a bound on the distance (not squared) to every other center (0: no bound
    yet): a row whose bound proves its label skips the scan ([Hamerly]).

    ``lazy``: ``distances`` holds, IN and OUT, upper bounds on the distance (not squared) instead.
    A row whose upper bound passes the test keeps its label with no distance computed; one that
    fails gets a tight upper bound and is tested again (with a screen, :func:`_own_upper`, the
    distance within a few units of rounding; without, its exact distance), unless ``tighten`` is
    False: then it goes to the screen or the scan untightened (one row in ``_TIGHTEN_SAMPLE`` is
    still tightened, to measure).
    ``sq_norms`` and ``direct``: see :func:`_screen_block`. Returns ``(tightened, passed,
    direct)``: how many rows were tightened and how many of them then passed, and whether the
    screen may still read rows directly.
    """
    size = stop - start
    pending = np.empty(size, dtype=np.int64)
    bounded = np.empty(size, dtype=np.int64)
    which = np.empty(size, dtype=np.int64)
    own = np.empty(size)
    known = np.empty(size)  # a pending row's distance to its label, -1 if not computed
    m = 0
    c = 0
    for i in range(start, stop):  # rows with a bound, and rows to scan (their order is free)
        # Unsigned indices (rows and labels are never negative): Numba then adds no wraparound
        # fix-up to each of these loads and stores (blobs 1e5 x 2 and x 10, k = 10: 1.05-1.11x
        # fits).
        u = np.uint64(i)
        if lower[u] > 0.0:
            a = labels[u]
            ua = np.uint64(a)
            kept = False  # branch-free: the row is written, and counted only if not kept
            if lazy:
                up = distances[u]
                low = lower[u]
                kept = up + margin < max(low, half_sep[ua])
                # |x - c_j| >= |c_a - c_j| - |x - c_a| >= 2 half_sep[a] - |x - c_a|
                lower[u] = max(low, 2.0 * half_sep[ua] - up)
                if not tighten and i % _TIGHTEN_SAMPLE != 0:  # to the screen or scan as is
                    pending[m] = i
                    known[m] = -1.0
                    m += not kept
                    continue
            bounded[c] = i
            which[c] = a
            c += not kept
        else:
            pending[m] = i
            known[m] = -1.0
            m += 1
    upper = False
    if screen is not None:  # (without one this compiles no _own_upper)
        upper = lazy
        row_bytes = X.shape[1] * X.itemsize
        if (lazy and READ_AHEAD_MIN_BYTES <= row_bytes <= READ_AHEAD_MAX_BYTES
                and (c + m) * READ_AHEAD_MIN_SHARE >= size):
            read_rows(X, start, stop, own)  # (own: scratch, written below)
    if upper:  # upper bounds serve the test; a label needs an exact distance only in the screen
        _own_upper(X, bounded[:c], centers, which, own)
    else:
        own_distances(X, bounded[:c], centers, which, own)
    passed = 0
    failed = 0  # rows that failed, in order, moved to the front of bounded and own
    # Branch-free: every row's bound and distance are stored; the screen or the scan rewrites a
    # failed row's (storing only the passed rows' made this loop about 9 ns a row slower where
    # half the rows pass: 5e5 x 10, k = 10, uniform).
    for q in range(c):
        i = bounded[q]
        a = which[q]
        dist = own[q]
        root = np.sqrt(dist)
        low = lower[i]
        ok = root + margin < max(low, half_sep[a])
        lower[i] = max(low, 2.0 * half_sep[a] - root)  # (|x - c_j| >= 2 half_sep[a] - root)
        distances[i] = root if lazy else dist
        passed += ok
        bounded[failed] = i
        own[failed] = -1.0 if upper else dist  # (known: exact distances only)
        failed += not ok
    # Pending rows in ascending order, merged from the end: the screen reads runs of them directly,
    # and every E-step then reads X in order (appending the failed rows instead made the scan and
    # the shifted screen 4-6% slower: 5e5 x 10, k = 10 and 1e5 x 50, k = 100, float64).
    q = failed - 1
    p = m - 1
    for e in range(m + failed - 1, -1, -1):
        if q < 0:
            break
        if p >= 0 and pending[p] > bounded[q]:
            pending[e] = pending[p]
            known[e] = known[p]
            p -= 1
        else:
            pending[e] = bounded[q]
            known[e] = own[q]
            q -= 1
    m += failed
    if screen is not None:
        rb = _screen_rows(centers.shape[0], X.shape[1], direct)
        scratch = _screen_scratch(rb, screen.shifted)
        for b in range(0, m, rb):
            e = min(m, b + rb)
            direct = _screen_block(X, pending[b:e], known[b:e], centers, screen, scratch,
                                   labels, lower, distances, lazy, sq_norms, direct) and direct
    else:
        width = lane_width(BLOCK_ROWS)
        nearest = Nearest(np.empty(width), np.empty(width), np.empty(width, dtype=np.int64))
        block_t = np.empty((X.shape[1], width))
        for b in range(0, m, BLOCK_ROWS):
            _scan_block(X, pending[b:min(m, b + BLOCK_ROWS)], centers_t, block_t, nearest,
                        labels, lower, distances, lazy)
    return c, passed, direct


@njit(inline="always")
def _add_row(X, weights, i, a, sums, weight_sums):
    """Add row ``i``, weighted, to the M-step sums of cluster ``a``."""
    u = np.uint64(i)  # (unsigned: no wraparound fix-ups, docs/style.md)
    ua = np.uint64(a)
    w = weights[u]
    weight_sums[ua] += w
    for f in range(X.shape[1]):
        sums[ua, f] += w * np.float64(X[u, f])


@njit(inline="always")
def _add_statistics(X, weights, labels, distances, start, stop, sums, weight_sums, acc):
    """IN/OUT ``sums`` (k, d) and ``weight_sums`` (k,): the M-step sums, to which rows
    ``start:stop`` are added in row order; returns ``acc`` plus their weighted inertia."""
    for i in range(start, stop):
        u = np.uint64(i)  # (unsigned: no wraparound fix-ups, docs/style.md)
        a = np.uint64(labels[u])
        acc += weights[u] * distances[u]
        _add_row(X, weights, u, a, sums, weight_sums)
    return acc


@njit(inline="always")
def _add_summed(X, weights, labels, start, stop, sums, weight_sums, summed, rows):
    """:func:`_add_statistics` of the rows whose cluster ``j`` has ``summed[j]`` (no inertia), in
    row order. ``rows`` (>= stop - start,): scratch, where those rows are first listed
    (branch-free); each listed row's lines are then asked for ``SUMMED_AHEAD`` rows before it is
    read (they are scattered through X, which the hardware prefetcher follows poorly; hints only,
    placed for a C-contiguous X: elsewhere they fall on other lines, harmlessly)."""
    m = 0
    for i in range(start, stop):
        rows[m] = i
        m += summed[labels[i]]
    d = X.shape[1]
    line = max(1, CACHE_LINE // X.itemsize)
    for q in range(m):
        if q + SUMMED_AHEAD < m:
            ahead = rows[q + SUMMED_AHEAD] * d
            for f in range(0, d, line):
                prefetch(X, ahead + f)
            prefetch(X, ahead + d - 1)
        i = rows[q]
        _add_row(X, weights, i, labels[i], sums, weight_sums)


@njit(inline="always")
def _clear(sums, weight_sums, summed):
    """Zero the rows ``j`` of ``sums`` and ``weight_sums`` with ``summed[j]``."""
    for j in range(weight_sums.shape[0]):
        if summed[j]:
            weight_sums[j] = 0.0
            sums[j] = 0.0


@njit(inline="always")
def _merge(part_sums, part_weights, part_inertia, n_parts, center_sums, weight_sums, inertia,
           summed):
    """Add the first ``n_parts`` chunk partials of the clusters with ``summed[j]``, in chunk
    order, to the totals; returns the inertia so far."""
    for c in range(n_parts):
        inertia += part_inertia[c]
        for j in range(weight_sums.shape[0]):
            if summed[j]:
                weight_sums[j] += part_weights[c, j]
                for f in range(center_sums.shape[1]):
                    center_sums[j, f] += part_sums[c, j, f]
    return inertia


def _wave_size(n, k, d):
    """Chunks whose partials are held at once: about ``_WAVE_BYTES``, a multiple of Numba's
    thread count, at least one per thread (the results do not depend on it)."""
    threads = numba.get_num_threads()
    per_chunk = 8 * (k * d + k + 1)
    size = max(1, _WAVE_BYTES // per_chunk)
    size = max(threads, size - size % threads)
    return min(n_chunks(n), size)


def lloyd_iteration(X, weights, centers, labels, distances, center_sums, weight_sums):
    """Assign every row to its nearest center and accumulate the M-step statistics.

    Parameters
    ----------
    X : float32 or float64 (n, d)          IN
    weights : float64 (n,)                 IN, >= 0
    centers : float64 (k, d)               IN
    labels : int64 (n,)                    OUT, nearest center (lowest index on ties)
    distances : float64 (n,)               OUT, squared distance to that center
    center_sums : float64 (k, d)           OUT, sum of ``weights[i] * X[i]`` per label
    weight_sums : float64 (k,)             OUT, sum of ``weights[i]`` per label

    Returns
    -------
    inertia : float
        ``sum_i weights[i] * distances[i]`` for the given centers ([MUFC] eq. (1), weighted).
    """
    return _one_estep(_lloyd_loop, read_only(X), weights, centers, labels, distances,
                      center_sums, weight_sums)


def _one_estep(loop, X, weights, centers, labels, distances, center_sums, weight_sums):
    # max_iter = 0: one E-step with every row scanned (no bound yet), no relocation, no update.
    # (the split marks of a run on X: it shares that run's compiled loop, and never splits)
    n, d = X.shape
    k = centers.shape[0]
    inertia, _, _ = loop(X, weights, np.array(centers, dtype=np.float64), 0, 0.0, 0.0, labels,
                         distances, center_sums, weight_sums, _wave_size(n, k, d), False,
                         split_marks(n, d, k, X.itemsize), None, None, None)
    return inertia


@njit
def _nearest_other_pairwise(centers, out):
    """OUT ``out[a]``: the least squared distance from center ``a`` to another, every pair in
    feature order, four pairs side by side (independent chains)."""
    k, d = centers.shape
    for a in range(k):
        out[a] = np.inf
    for a in range(k):
        low = out[a]
        b = a + 1
        while b + 3 < k:
            s0 = s1 = s2 = s3 = 0.0
            for f in range(d):
                c = centers[a, f]
                t0 = c - centers[b, f]
                t1 = c - centers[b + 1, f]
                t2 = c - centers[b + 2, f]
                t3 = c - centers[b + 3, f]
                s0 += t0 * t0
                s1 += t1 * t1
                s2 += t2 * t2
                s3 += t3 * t3
            low = min(min(low, s0), min(s1, min(s2, s3)))
            out[b] = min(out[b], s0)
            out[b + 1] = min(out[b + 1], s1)
            out[b + 2] = min(out[b + 2], s2)
            out[b + 3] = min(out[b + 3], s3)
            b += 4
        for q in range(b, k):
            acc = own_distance(centers, a, centers, q)
            low = min(low, acc)
            out[q] = min(out[q], acc)
        out[a] = low


@njit(inline="always")
def _nearest_other_screened(centers, out):
    """:func:`_nearest_other_pairwise` (the same bits) through float64 products of the centers,
    shifted by their mean, with each other, a block of rows at a time: ``|a'|^2 - 2 a'.b' +
    |b'|^2`` is within :func:`screen_eps` of the exact distance, so only the centers whose
    interval reaches the least exact distance found so far get their exact distance. Returns
    False, leaving ``out`` to the caller, where the squared norms could overflow."""
    k, d = centers.shape
    eps, tiny = screen_eps(d, False)
    screen = Screen(np.empty((k, d)), np.empty((0, 0)), np.empty(k), np.empty(k), np.empty(k),
                    np.empty(k),
                    np.empty(k), np.empty(d), eps, tiny, 0.0, 0.0, 0.0)
    _refresh_screen(centers, screen)
    norms = screen.norms
    root_max = 0.0
    for j in range(k):
        root_max = max(root_max, screen.roots[j])
    if not np.isfinite(4.0 * root_max * root_max):
        return False
    rows = max(1, min(k, _GRAM_BYTES // (8 * k)))
    approx = np.empty(k)
    for a0 in range(0, k, rows):
        a1 = min(k, a0 + rows)
        gram = np.dot(screen.shifted[a0:a1], screen.shifted.T)  # (rows, k)
        for a in range(a0, a1):
            g = gram[a - a0]
            na = norms[a]
            for b in range(k):
                approx[b] = (na - 2.0 * g[b]) + norms[b]
            approx[a] = np.inf
            nearest = 0
            for b in range(1, k):
                nearest = b if approx[b] < approx[nearest] else nearest
            err = _screen_error(screen, screen.roots[a] + root_max, d)  # >= every pair's
            low = own_distance(centers, a, centers, nearest)
            for b in range(k):
                # exact(a, b) >= approx - err: below ``low`` only if approx - err is
                if approx[b] - err <= low and b != nearest:
                    low = min(low, own_distance(centers, a, centers, b))
            out[a] = low
    return True


@njit
def half_separation(centers, out):
    """OUT ``out`` float64 (k,): half the distance from each center to its nearest other center
    (+inf when k = 1), the ``s(c) / 2`` of the bound test of [Hamerly].

    IN ``centers`` float64 (k, d). Each distance is the exact kernel's (pairs summed in feature
    order); from ``GRAM_MIN_CLUSTERS`` centers of ``GRAM_MIN_FEATURES`` they are screened by
    BLAS products first (the same bits: :func:`_nearest_other_screened`).
    """
    k, d = centers.shape
    screened = k >= GRAM_MIN_CLUSTERS and d >= GRAM_MIN_FEATURES
    if not (screened and _nearest_other_screened(centers, out)):
        _nearest_other_pairwise(centers, out)
    return _halve_roots(out)


@njit(inline="always")
def _halve_roots(out):
    """``out = sqrt(out) / 2`` in place (squared separations to half separations)."""
    for a in range(out.shape[0]):
        out[a] = 0.5 * np.sqrt(out[a])
    return out


@njit(inline="always")
def _farthest_rows(weights, distances, count):
    """The ``count`` positive-weight rows of largest ``distances``, largest first, ties by lowest
    row index (fewer when fewer rows have positive weight): one pass, kept in a sorted buffer."""
    best = np.empty(count, dtype=np.int64)
    size = 0
    for i in range(weights.shape[0]):
        if weights[i] <= 0.0:
            continue
        v = distances[i]
        if size == count and v <= distances[best[size - 1]]:
            continue  # rows come in index order: an equal distance stays behind
        pos = min(size, count - 1)
        while pos > 0 and distances[best[pos - 1]] < v:
            best[pos] = best[pos - 1]
            pos -= 1
        best[pos] = i
        size = min(size + 1, count)
    return best[:size]


@njit
def relocate_empty(X, weights, distances, labels, lower, center_sums, weight_sums):
    """Give each empty cluster the farthest positive-weight row (deterministic rule).

    Empty clusters, in increasing index, take the rows farthest from their assigned center
    (largest squared distance; ties by lowest row index) among rows of positive weight; each row
    moves with its weight out of its old cluster. IN/OUT ``labels``, ``lower`` (moved rows get 0),
    ``center_sums``, ``weight_sums``.
    """
    n_empty = 0
    for j in range(weight_sums.shape[0]):
        n_empty += weight_sums[j] == 0.0
    if n_empty == 0:
        return
    empty = np.empty(n_empty, dtype=np.int64)  # before any move empties another cluster
    e = 0
    for j in range(weight_sums.shape[0]):
        if weight_sums[j] == 0.0:
            empty[e] = j
            e += 1
    order = _farthest_rows(weights, distances, n_empty)
    for e in range(order.shape[0]):
        j = empty[e]
        row = order[e]
        old = labels[row]
        w = weights[row]
        for f in range(X.shape[1]):
            x = w * np.float64(X[row, f])
            center_sums[old, f] -= x
            center_sums[j, f] = x
        weight_sums[old] -= w
        weight_sums[j] = w
        labels[row] = j
        lower[row] = 0.0


@njit(inline="always")
def _exact_distances(X, centers, labels, distances):
    """OUT ``distances``: every row's exact distance to its labelled center, a chunk at a time."""
    n = X.shape[0]
    for c in prange(-(-n // CHUNK_SIZE)):
        lo, hi = c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)
        own_distances(X, row_range(lo, hi), centers, labels[lo:hi], distances[lo:hi])


@njit(fastmath={"reassoc", "contract"})
def _dot_shift(X, i, shift):
    """``X[i] . shift`` in float64, summed in any order (see :func:`direct_eps`)."""
    acc = 0.0
    for f in range(X.shape[1]):
        acc += np.float64(X[i, f]) * shift[f]
    return acc


@njit(inline="always")
def own_upper_factor(n_features):
    """``g`` such that ``g s~ + 2**-1000`` >= the squared distance ``s`` of
    :func:`~fedcore.kernels.kmeans.distances.own_distance` (a sequential sum in feature order)
    for ``s~``, the same sum of ``d`` squares taken in any order, with or without fused
    multiply-adds (:func:`_own_upper`).

    Both sums hold d terms ``fl(x_f - c_f)^2``, each difference rounded once (``|e| <= u =
    2**-53``), each square rounded (or fused into the addition) and each term added through at
    most ``d`` roundings. A sum of non-negative terms taken so is within ``gamma = (d + 2) u / (1 -
    (d + 2) u)`` relative of the exact ``S = sum (x_f - c_f)^2``, in any order: ``s <= S (1 +
    gamma)`` and ``S <= s~ / (1 - gamma)``, so ``s <= s~ (1 + gamma) / (1 - gamma) <= s~ (1 + 2.5
    (d + 2) u)`` while ``(d + 2) u <= 0.1``. ``g = 1 + 4 (d + 2) u`` leaves ``1.5 (d + 2) u >=
    4.5 u`` for the roundings of ``g`` and of ``g s~``. Underflow: each of the at most 4d + 2
    roundings of the two sums errs by at most ``2**-1075`` absolute in the subnormal range, which
    ``2**-1000`` covers.
    """
    return 1.0 + 4.0 * (n_features + 2) * 2.0 ** -53


@njit(fastmath={"reassoc", "contract"})
def _own_upper(X, rows, centers, which, out):
    """OUT ``out[r]`` >= :func:`~fedcore.kernels.kmeans.distances.own_distance` from
    ``X[rows[r]]`` to ``centers[which[r]]``: the sum in any order (one vectorized loop per row),
    raised by :func:`own_upper_factor`. Lazy E-steps test bounds with it: one thread, rows in
    cache, 2.8x faster than the exact sum at 50 float32 features and 3.1x at 784 (1.5x and 2.0x
    on rows read from memory)."""
    g = own_upper_factor(X.shape[1])
    for r in range(rows.shape[0]):
        i = rows[r]
        a = which[r]
        acc = 0.0
        for f in range(X.shape[1]):
            t = np.float64(X[i, f]) - centers[a, f]
            acc += t * t
        out[r] = g * acc + 2.0 ** -1000


@njit(fastmath={"reassoc", "contract"})
def _squared_norms(X, start, stop, out):
    """OUT ``out[start:stop]``: the squared norms of those rows in float64, summed in any order
    (see :func:`direct_eps`)."""
    for i in range(start, stop):
        acc = 0.0
        for f in range(X.shape[1]):
            t = np.float64(X[i, f])
            acc += t * t
        out[i] = acc


@njit(inline="always")
def _roots(distances):
    """``distances = sqrt(distances)`` in place, a chunk at a time."""
    n = distances.shape[0]
    for c in prange(-(-n // CHUNK_SIZE)):
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            distances[i] = np.sqrt(distances[i])


@njit  # not inlined: see the note in the body
def _record(trace, it, labels, lower, distances, centers, moved):
    # Inlined into the parallel variant of the loop, these writes through the trace's fields were
    # lost (Numba's parallel backend drops writes to a named tuple's arrays, numba#7135): a
    # recorded run of four chunks or more returned its uninitialized buffer as the trace.
    trace = grow_trace(trace, it)
    n = labels.shape[0]  # (copies as loops: fedcore.kernels.arrays)
    copy_into(trace.labels[it], labels, n)
    copy_into(trace.lower[it], lower, n)
    copy_into(trace.distances[it], distances, n)
    for j in range(centers.shape[0]):
        copy_into(trace.centers[it, j], centers[j], centers.shape[1])
    trace.moved[it] = moved
    return trace


@njit(inline="always")
def _update_centers(centers, center_sums, weight_sums, take_prior, dirty, next_prior, drifts):
    """Mean update. With ``take_prior``, clusters that are not ``dirty`` take ``next_prior``'s
    centers instead: the prior's next ones in a sparse replay, their own in a split E-step. OUT
    ``drifts`` (k,): how far each center moved; returns the total squared shift."""
    k, d = centers.shape
    shift = 0.0
    for j in range(k):
        drift = 0.0
        if take_prior and not dirty[j]:
            for f in range(d):
                t = next_prior[j, f] - centers[j, f]
                drift += t * t
                centers[j, f] = next_prior[j, f]
        elif weight_sums[j] > 0.0:
            for f in range(d):
                new = center_sums[j, f] / weight_sums[j]
                t = new - centers[j, f]
                drift += t * t
                centers[j, f] = new
        shift += drift
        drifts[j] = np.sqrt(drift)
    return shift


# Up to this many clusters the marks of a chunk are the bits of one word, set branch-free (a
# branch on each row's change mispredicts where many rows change).
_MARK_BITS = 64


@chunked_kernel
def _loosen_and_compare(labels, labels_old, lower, upper, lazy, drifts, loosen, compare, mark,
                        touched, changed):
    """The bound update of [Hamerly] (each row's lower bound drops by the largest move of a center
    other than its own; after a lazy E-step, its upper bound rises by its own center's move) if
    ``loosen``, then ``labels_old`` is set to ``labels``; and before that the label check if
    ``compare``, in one pass over chunks of rows. The check returns whether a label differs from
    ``labels_old`` (False without it), OUT ``changed[c]``: a label of chunk ``c`` differs; with
    ``mark``, OUT ``touched[c, j]``: a row of chunk ``c`` left or joined cluster ``j`` (the rows
    of chunks without a change are not cleared). Pass the flags as constants where the loop is
    hot: marking keeps the compiler from vectorizing it (uniform 1e5 x 10, k = 10: 2-3% slower
    fits). Each constant set of flags compiles a variant (the loop passes four), a kernel of its
    own rather than inlined: its types do not depend on X or the screen, so it compiles once for
    every specialisation of the loop (inlined four times, it took about 2 s of the serial loop's
    6.4-7 s compile and 4-5 s of the parallel loop's 13-15 s)."""
    top, top_j, runner = top_two(drifts)
    n = labels.shape[0]
    k = drifts.shape[0]
    bitwise = mark and k <= _MARK_BITS
    for c in prange(changed.shape[0]):
        flag = False
        bits = np.uint64(0)  # (bit j: a row left or joined cluster j, where k <= _MARK_BITS)
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            u = np.uint64(i)  # (unsigned: no wraparound fix-ups, docs/style.md)
            a = labels[u]
            if loosen:
                lower[u] -= runner if a == top_j else top
                if lazy:
                    upper[u] += drifts[np.uint64(a)]
            if compare:
                old = labels_old[u]
                if bitwise:  # branch-free (old is -1 before the first E-step)
                    t = np.uint64(a != old)
                    left = t & np.uint64(old >= 0)
                    bits |= (t << np.uint64(a)) | (left << np.uint64(old & 63))
                    flag |= a != old
                elif a != old:
                    if mark:
                        if not flag:
                            touched[c] = False
                        touched[c, a] = True
                        if old >= 0:  # (-1 before the first E-step)
                            touched[c, old] = True
                    flag = True
            if loosen:
                labels_old[u] = a
        if bitwise and flag:
            for j in range(k):
                touched[c, j] = (bits >> np.uint64(j)) & np.uint64(1) != np.uint64(0)
        if compare:
            changed[c] = flag
    any_change = False
    if compare:
        for c in range(changed.shape[0]):
            any_change = any_change or changed[c]
    return any_change


@njit(inline="always")
def _changed_clusters(touched, changed, dirty):
    """OUT ``dirty[j]``: a row left or joined cluster ``j`` (``touched`` and ``changed`` of
    :func:`_loosen_and_compare`). Returns how many did."""
    k = dirty.shape[0]
    dirty[:] = False
    for c in range(changed.shape[0]):
        if changed[c]:
            for j in range(k):
                dirty[j] = dirty[j] or touched[c, j]
    count = 0
    for j in range(k):
        count += dirty[j]
    return count


@njit
def _replay_estep(X, weights, centers, margin, prior, it, labels, lower, distances, moves, buf):
    """E-step ``it`` from the prior's: a sparse replay (one chunk in both runs) sets every row and
    returns ``(True, inertia)``; otherwise the bounds are primed for the full E-step and
    ``(False, 0.0)`` is returned."""
    p_trace = prior.trace
    top, top_j, runner = center_moves(centers, p_trace.centers[it], moves)
    if X.shape[0] <= CHUNK_SIZE and prior.weights.shape[0] <= CHUNK_SIZE:
        centers_t = np.empty((centers.shape[1], centers.shape[0]))
        transpose_into(centers, centers_t)
        sparse_estep(X, centers, centers_t, moves, top_j, top, runner, p_trace.labels[it],
                     p_trace.lower[it], p_trace.distances[it], prior.rows, margin, labels, lower,
                     distances, buf)
        inertia = 0.0
        for i in range(X.shape[0]):
            inertia += weights[i] * distances[i]
        return True, inertia
    prime_bounds(moves, top_j, top, runner, p_trace.labels[it], p_trace.lower[it], prior.rows,
                 labels, lower)
    return False, 0.0


@njit
def _replay_sums(X, weights, prior, it, last, labels, dirty, center_sums, weight_sums):
    """M-step sums of a sparse replay. Returns whether the clean clusters take the prior's next
    centers (same bits, unless a relocation made them): then only the dirty ones are summed."""
    p_trace = prior.trace
    take_prior = not last and it + 1 < p_trace.labels.shape[0] and not p_trace.moved[it]
    if take_prior:
        mark_dirty(weights, prior.weights, prior.rows, prior.gone, labels, p_trace.labels[it],
                   dirty)
        take_prior = sparse_sums(X, weights, labels, dirty, center_sums, weight_sums)
    if not take_prior and not last:  # every cluster summed, row by row
        dirty[:] = True
        sparse_sums(X, weights, labels, dirty, center_sums, weight_sums)
    return take_prior


@chunked_kernel
def _lloyd_loop(X, weights, centers, max_iter, tol, margin, labels, distances, center_sums,
                weight_sums, wave, direct_rows, touched, screen, trace, prior):
    """The compiled loop of :func:`lloyd_core`; returns ``(inertia, n_iter, trace)``. OUT
    ``center_sums`` (k, d), ``weight_sums`` (k,): scratch, the M-step totals of the last E-step.
    ``trace`` and ``prior`` may be None: Numba then compiles a loop without the record or the
    replay (a smaller, faster-compiling specialisation); :func:`lloyd_core` passes a prior of no
    E-steps whenever it records, so that recorded runs share one specialisation.
    ``direct_rows``: the screen may read float32 rows from X as they are (see
    :func:`uses_direct`). ``touched``: None, or the scratch of split E-steps (below) from
    :func:`split_marks`; None compiles a loop without them (smaller, faster to compile).

    Each E-step runs a ``prange`` over a wave of chunks (bounded, screened E-step and M-step
    partials of each chunk, ``_SPAN_BYTES`` of rows at a time, the sums in row order), then
    merges the wave's partials in chunk order (``wave`` chunks at a time, :func:`_wave_size`).

    With ``touched``, a lazy E-step is split where at most half the clusters changed in the last
    one, which moved no row by relocation: the E-step first, then the labels are compared with
    the last E-step's, and only the clusters that a row left or joined are summed, by the same
    chunk partials in the same order. Every center is then the mean of its rows as summed in the
    last E-step, so the others' sums, and so their centers, would come out the same bits. On
    clustered data most clusters settle after a few iterations, and their rows are no longer read
    (blobs 1e5 x 784, k = 10: 1.3-1.4x faster). A relocation within a split E-step takes every
    center from its sums (the moved row's cluster lost it).
    """
    n, d = X.shape
    k = centers.shape[0]
    span = max(_screen_rows(k, d), _SPAN_BYTES // (d * X.itemsize))
    labels_old = np.empty(n, dtype=np.int32)
    labels_old[:] = -1
    labels[:] = 0
    lower = np.empty(n)  # (np.empty and scalar slice stores: no np.zeros or np.ones to compile)
    lower[:] = 0.0
    n_chunks = max(1, -(-n // CHUNK_SIZE))
    tighten = np.empty(n_chunks, dtype=np.bool_)
    tighten[:] = True
    # float32 rows screened by a float32 product are read directly (squared norms once per run).
    # Their squared norms are taken in the first full E-step, a span at a time, as it reads them.
    direct = np.empty(n_chunks, dtype=np.bool_)
    direct[:] = False
    reads_rows = False
    if screen is not None:
        reads_rows = direct_rows and _single_rows(X, screen.shifted)
    sq_norms = np.empty(n if reads_rows else 0)
    normed = False
    # Lazy E-steps (below) need no record or replay of distances.
    lazy_run = trace is None and prior is None
    part_sums = np.empty((wave, k, d))
    part_weights = np.empty((wave, k))
    part_inertia = np.empty(wave)
    half_sep = np.empty(k)
    half_sep[:] = 0.0
    centers_t = np.empty((d, k))
    drifts = np.empty(k)
    moves = np.empty(k)
    dirty = np.empty(k, dtype=np.bool_)
    dirty[:] = True
    buf = np.empty(k)
    changed = np.empty(n_chunks, dtype=np.bool_)
    no_marks = np.empty((0, k), dtype=np.bool_)  # (the bound update's, where nothing is marked)
    every = np.empty(k, dtype=np.bool_)
    every[:] = True
    # Whether the next E-step is split: only where ``touched`` is given (each ``touched is None``
    # test below is decided at compile time: a loop without it compiles no split E-step).
    split = False
    n_dirty = k
    changes = False
    kept = trace  # grown as needed (the argument itself must stay unassigned for the pruning)
    n_iter = 0
    inertia = 0.0
    for it in range(max_iter + 1):
        sparse = False
        if prior is not None:
            if it < prior.trace.labels.shape[0]:
                sparse, inertia = _replay_estep(X, weights, centers, margin, prior, it, labels,
                                                lower, distances, moves, buf)
        # Only the final E-step's distances are kept (and every E-step's in a recorded or replayed
        # run): the others compute only the distances their labels need, and keep upper bounds
        # on the distances (not squared) in ``distances`` instead.
        # (a typed bool: ``a and b`` was typed int64 in plain runs and bool in recorded ones,
        # which compiled _estep_rows twice for each type of X and screen, and the bound update
        # twice)
        lazy = np.bool_(it < max_iter and lazy_run)
        # A split E-step sums, after it, only the clusters whose rows changed since the last
        # (the others' sums, and so their centers, would come out the same bits).
        split = split and lazy
        if not sparse:
            if screen is not None:  # a loop without the screen compiles no BLAS call
                half_separation(centers, half_sep)
            else:
                _nearest_other_pairwise(centers, half_sep)
                _halve_roots(half_sep)
            transpose_into(centers, centers_t)
            if screen is not None:
                _refresh_screen(centers, screen)
                direct[:] = reads_rows  # each chunk tries again with the new centers
            if not split:
                center_sums[:] = 0.0
                weight_sums[:] = 0.0
                inertia = 0.0
            for first in range(0, n_chunks, wave):
                n_parts = min(wave, n_chunks - first)
                for r in prange(n_parts):
                    p = last_chunk_first(r, n_parts)
                    start = (first + p) * CHUNK_SIZE
                    stop = min(n, start + CHUNK_SIZE)
                    if not split:
                        part_sums[p] = 0.0
                        part_weights[p] = 0.0
                    acc = 0.0
                    tightened = passed = 0
                    for lo in range(start, stop, span):  # E-step, then sums while in cache
                        hi = min(stop, lo + span)
                        if screen is not None:  # (a loop without one compiles no norms)
                            if reads_rows and not normed:
                                _squared_norms(X, lo, hi, sq_norms)
                        t, q, ok = _estep_rows(X, centers, centers_t, screen, half_sep, margin,
                                               lo, hi, labels, lower, distances, lazy,
                                               tighten[first + p], sq_norms, direct[first + p])
                        direct[first + p] = ok
                        tightened += t
                        passed += q
                        if not split:
                            acc = _add_statistics(X, weights, labels, distances, lo, hi,
                                                  part_sums[p], part_weights[p], acc)
                    part_inertia[p] = acc
                    # Tightening pays when it often proves the label (the exact scan too, by
                    # this rule: uniform 1e5 x 10, k = 10: 1.10-1.14x; x 16, k = 8: 1.11x).
                    if tightened > 0:
                        tighten[first + p] = 10 * tightened <= (k + 10) * passed
                if not split:
                    inertia = _merge(part_sums, part_weights, part_inertia, n_parts, center_sums,
                                     weight_sums, inertia, every)
            if touched is not None and split:  # only the clusters whose rows changed (above)
                changes = _loosen_and_compare(labels, labels_old, lower, distances, lazy, drifts,
                                              False, True, True, touched, changed)
                n_dirty = _changed_clusters(touched, changed, dirty)
                _clear(center_sums, weight_sums, dirty)
                for first in range(0, n_chunks, wave):
                    n_parts = min(wave, n_chunks - first)
                    for r in prange(n_parts):
                        p = last_chunk_first(r, n_parts)
                        start = (first + p) * CHUNK_SIZE
                        _clear(part_sums[p], part_weights[p], dirty)
                        _add_summed(X, weights, labels, start, min(n, start + CHUNK_SIZE),
                                    part_sums[p], part_weights[p], dirty,
                                    np.empty(CHUNK_SIZE, dtype=np.int64))
                    _merge(part_sums, part_weights, part_inertia, n_parts, center_sums,
                           weight_sums, 0.0, dirty)
            normed = reads_rows
        take_prior = False
        next_prior = centers
        if prior is not None:
            if sparse:
                take_prior = _replay_sums(X, weights, prior, it, it == max_iter, labels, dirty,
                                          center_sums, weight_sums)
                if take_prior:
                    next_prior = prior.trace.centers[it + 1]
        moved = np.bool_(False)  # (not a literal: a literal False compiled _record twice)
        if it < max_iter and not take_prior:
            for j in range(k):
                moved = moved or weight_sums[j] == 0.0
            if moved and lazy:  # the farthest rows, by exact distances
                _exact_distances(X, centers, labels, distances)
            relocate_empty(X, weights, distances, labels, lower, center_sums, weight_sums)
            if moved and lazy:  # back to upper bounds
                _roots(distances)
        if trace is not None:
            kept = _record(kept, it, labels, lower, distances, centers, moved)
        if it == max_iter:  # the final E-step for the final centers
            break
        n_iter = it + 1
        if split and moved:  # a relocated row's cluster lost it: every center from its sums
            dirty[:] = True
        shift = _update_centers(centers, center_sums, weight_sums, take_prior or split, dirty,
                                next_prior, drifts)
        # The labels after any relocation against the last E-step's (each call with constant
        # flags where it can: see _loosen_and_compare).
        if touched is None:
            changes = _loosen_and_compare(labels, labels_old, lower, distances, lazy, drifts,
                                          True, True, False, no_marks, changed)
        elif split:  # (compared before the sums: again only if a relocation changed labels)
            relocated = _loosen_and_compare(labels, labels_old, lower, distances, lazy, drifts,
                                            True, moved, False, touched, changed)
            changes = relocated if moved else changes
        else:
            changes = _loosen_and_compare(labels, labels_old, lower, distances, lazy, drifts,
                                          True, True, True, touched, changed)
            n_dirty = _changed_clusters(touched, changed, dirty)
        # Every center is now the mean of its rows, as summed, unless a relocation moved rows or
        # a cluster stayed empty (then moved is set): only then may the next E-step be split.
        if touched is not None:
            split = lazy_run and not moved and 2 * n_dirty <= k
        if not changes or shift <= tol:
            max_iter = it + 1  # one more pass: the final E-step
    if trace is None:
        return inertia, n_iter, trace
    m = n_iter + 1
    return inertia, n_iter, LloydTrace(kept.labels[:m], kept.lower[:m], kept.distances[:m],
                                       kept.centers[:m], kept.moved[:m])


def split_marks(n, d, k, itemsize):
    """The scratch of split E-steps for a lazy run (no record, no replay) on ``n`` rows of ``d``
    features of ``itemsize`` bytes and ``k`` clusters: bool (chunks, k), whether a row of each
    chunk left or joined each cluster in the last E-step; None where the ``SPLIT_*`` rule says
    not to split (the loop then compiles without split E-steps)."""
    row_bytes = d * itemsize
    if (row_bytes < SPLIT_MIN_ROW_BYTES or d < SPLIT_MIN_FEATURES) and (
            d < SPLIT_UNCACHED_MIN_FEATURES or n * row_bytes <= SPLIT_UNCACHED_MIN_BYTES):
        return None
    return np.empty((n_chunks(n), k), dtype=np.bool_)


def _empty_trace(n, k, d, capacity):
    return LloydTrace(np.empty((capacity, n), dtype=np.int64), np.empty((capacity, n)),
                      np.empty((capacity, n)), np.empty((capacity, k, d)),
                      np.empty(capacity, dtype=np.bool_))


# The same computation run as plain Python (the per-chunk steps stay compiled), for tests.
lloyd_iteration.py_func = functools.partial(_one_estep, _lloyd_loop.py_func)


@functools.lru_cache(maxsize=None)
def _blas_controller():
    """threadpoolctl's controller of the loaded BLAS libraries (scipy's, which Numba calls,
    included)."""
    import scipy.linalg.cython_blas  # noqa: F401  (load the BLAS Numba's np.dot calls)
    from threadpoolctl import ThreadpoolController
    return ThreadpoolController()


_BLAS_LOCK = threading.Lock()
_blas_holders = 0
_blas_limiter = None


@contextlib.contextmanager
def one_blas_thread():
    """Context holding BLAS to one thread (process-wide): the screen's products run inside
    fedcore's own threads, where a threaded BLAS would oversubscribe the cores.

    Contexts held at once (fits and predictions in several threads) share one limit: the first
    sets it, the last to leave restores the limits found before, whatever the order they leave
    in (threadpoolctl's limits, each restoring what it found, would leave BLAS at one thread
    when they overlap)."""
    global _blas_holders, _blas_limiter
    with _BLAS_LOCK:
        if _blas_holders == 0:
            _blas_limiter = _blas_controller().limit(limits=1, user_api="blas")
        _blas_holders += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _blas_holders -= 1
            if _blas_holders == 0:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None


def lloyd_core(X, weights, centers, max_iter, tol, margin, labels, distances, *, record=False,
               prior=None, single=True, screen=None, direct=None):
    """Weighted Lloyd from ``centers`` until convergence, optionally recording its E-steps and
    replaying a prior run's. Returns ``(inertia, n_iter, trace)``: the same bits either way.

    IN/OUT ``centers`` float64 (k, d): initial, then final centers. OUT ``labels`` int64 (n,),
    ``distances`` float64 (n,) for the final centers. Each iteration is the bounded, screened
    E-step, then :func:`relocate_empty`, then the mean update. Stops when the labels no longer
    change (strict convergence), when the squared center shift is at most ``tol`` (absolute), or
    after ``max_iter`` iterations, as scikit-learn's Lloyd; a last E-step gives labels and inertia
    for the final centers. The whole loop is compiled because the servers and clients of federated
    methods run many small problems, where per-iteration interpreter overhead would dominate.

    ``record``: return the :class:`~fedcore.kernels.kmeans.lloyd_replay.LloydTrace` of every E-step
    (else None). ``prior``: None or a :class:`~fedcore.kernels.kmeans.lloyd_replay.LloydPrior` of a
    run from the same initial centers; E-steps are replayed
    (:mod:`fedcore.kernels.kmeans.lloyd_replay`) until the prior's last one or its first empty
    cluster; with one chunk of rows in both runs only the rows and clusters touched by the change
    are recomputed. ``single`` and ``screen``: see :func:`make_screen` (``screen`` None: by shape);
    ``direct``: see :func:`uses_direct` (None: by shape; True has no effect on float64 X, and a
    non-contiguous X is copied block by block). The results are the same bits whatever they are.
    """
    n, d = X.shape
    k = centers.shape[0]
    trace = _empty_trace(n, k, d, 8) if record else None
    if record and prior is None:  # a prior of no E-steps: recorded runs share one compiled loop
        prior = LloydPrior(np.empty(0), _empty_trace(0, k, d, 0), np.empty(0, dtype=np.int64),
                           np.empty(0, dtype=np.int64))
    buffers = make_screen(d, k, single, screen)
    direct = uses_direct(d) if direct is None else direct
    touched = split_marks(n, d, k, X.itemsize) if prior is None else None  # (lazy runs only)
    with one_blas_thread() if buffers is not None else contextlib.nullcontext():
        return _lloyd_loop(read_only(X), weights, centers, max_iter, tol, margin, labels,
                           distances, np.empty((k, d)), np.empty(k), _wave_size(n, k, d),
                           bool(direct), touched, buffers, trace, prior)


def lloyd_run(X, weights, centers, max_iter, tol, margin, labels, distances, single=True,
              screen=None, direct=None):
    """:func:`lloyd_core` without record or replay; returns ``(inertia, n_iter)``."""
    inertia, n_iter, _ = lloyd_core(X, weights, centers, max_iter, tol, margin, labels, distances,
                                    single=single, screen=screen, direct=direct)
    return inertia, n_iter
