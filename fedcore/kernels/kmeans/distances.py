"""Squared Euclidean distances and nearest-center assignment.

Distances are sums of squared differences accumulated in float64 in feature order, never the
expanded form ``|x|^2 - 2 x.c + |c|^2`` (which cancels catastrophically for near points), so a
nearest-center argmin is exact up to one rounding per term. Centers are passed transposed,
``centers_t`` of shape (d, k), so that the inner loop runs over centers and vectorizes without
reassociating any sum. :func:`nearest_lanes` runs the scan over rows held transposed instead,
``LANE_ROWS`` rows per call, each row's sum in a vector lane.
"""
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ..._config import CHUNK_SIZE, NUMBA_CACHE
from ..arrays import row_range
from ..jit import njit
from ..parallel import chunked_kernel

__all__ = ["row_distances", "own_distance", "own_distances", "by_lanes", "nearest_center",
           "nearest_two", "LANE_ROWS", "LANES_MAX_FEATURES", "lane_width", "nearest_lanes",
           "nearest_rows", "pairwise_sq_distances", "assign_nearest", "tile_lanes", "TILE_ROWS",
           "transpose_lanes", "transpose_rows", "smallest_two", "smallest_two_lanes",
           "SCREEN_BYTES", "screen_lanes", "screen_fused"]

# Rows per call of nearest_lanes: two vectors of eight float64 lanes, two independent sums in
# flight per center (one vector: 3-10% slower at d = 16, k = 8 and d = 3, k = 50; four: within
# noise of two on AVX-512, and twice the registers an AVX2 core has).
_LANES = 8
_VECTORS = 2
LANE_ROWS = _LANES * _VECTORS
# Rows per call of own_lanes: one vector of eight float64 lanes (two vectors: within noise, and
# eight more rows left to the four-row chains). Against four scalar chains, rows in cache, ns per
# feature and row: float32 d = 10, 50, 784: 0.45 -> 0.30, 0.38 -> 0.13, 0.37 -> 0.11; float64:
# 0.49 -> 0.39, 0.46 -> 0.19, 0.32 -> 0.18.
OWN_ROWS = _LANES
# Rows per call of tile_lanes: eight vectors of eight float64 lanes, for two candidates sixteen
# sums in registers (one candidate a call: greedy seeding 1.04-1.15x against the loop over rows,
# two: 1.05-1.25x).
_TILE_VECTORS = 8
TILE_ROWS = _LANES * _TILE_VECTORS
OWN_LANES_MIN_FEATURES = 8
# Columns per call of smallest_two_lanes: SCREEN_BYTES // itemsize, _SCREEN_VECTORS vectors of
# 64 bytes (sixteen float32 lanes or eight float64).
_SCREEN_VECTORS = 4
SCREEN_BYTES = _SCREEN_VECTORS * 64
# Centers per step of screen_lanes: their dots side by side, so that each load of a feature's
# lanes serves both.
_FUSED = 2
# Rows per block of assign_nearest, which scans blocks (nearest_rows) up to this many features;
# wider rows one at a time (nearest_center), where each center's pass over a block's column of
# rows outgrows L1. KMeans.predict, 1e5 uniform rows, against nearest_center (median of 11
# calls): d = 10, k = 10: 2.38 -> 0.82 ms; d = 20, k = 20: 4.16 -> 1.51 ms; d = 50, k = 10: 9.68
# -> 6.61 ms; d = 100, k = 5: 18.1 -> 18.9 ms; d = 784, k = 10 and 100: 141 -> 200 and 385 -> 570.
_ASSIGN_ROWS = 128
LANES_MAX_FEATURES = 64


@njit(inline="always")
def row_distances(X, i, centers_t, out):
    """OUT ``out`` float64 (k,): squared distances from ``X[i]`` to every center."""
    d, k = centers_t.shape
    out[:] = 0.0
    for f in range(d):
        xf = np.float64(X[i, f])
        for j in range(k):
            t = xf - centers_t[f, j]
            out[j] += t * t


@njit
def own_distance(X, i, centers, a):
    """Squared distance from ``X[i]`` to ``centers[a]`` (centers (k, d)): the same bits as
    :func:`row_distances` computes for that center."""
    acc = 0.0
    for f in range(X.shape[1]):
        t = np.float64(X[i, f]) - centers[a, f]
        acc += t * t
    return acc


def by_lanes(X, rows, centers, which, out):
    """:func:`own_distances` of the first rows, ``OWN_ROWS`` at a time by :func:`own_lanes`, for
    C-contiguous rows of ``OWN_LANES_MIN_FEATURES`` or more; returns how many rows it did."""


@overload(by_lanes, jit_options={"cache": NUMBA_CACHE})
def _by_lanes_impl(X, rows, centers, which, out):
    if not _lanes_take(X, rows, centers, which, out):  # (own_lanes reads rows as vectors)
        return lambda X, rows, centers, which, out: 0

    def impl(X, rows, centers, which, out):
        if X.shape[1] < OWN_LANES_MIN_FEATURES:
            return 0
        m = rows.shape[0]
        full = m - m % OWN_ROWS
        for r in range(0, full, OWN_ROWS):
            own_lanes(X, rows, centers, which, r, out)
        return full
    return impl


@njit(inline="always")
def own_distances(X, rows, centers, which, out):
    """OUT ``out[r]``: :func:`own_distance` from ``X[rows[r]]`` to ``centers[which[r]]``, the
    same bits, for ``r < rows.shape[0]`` (indices from 0: nothing is checked).

    Each sum is one chain in feature order, but independent chains run side by side instead of
    each row waiting on its own d additions in turn: ``OWN_ROWS`` rows at a time in vector lanes
    (:func:`own_lanes`; C-contiguous rows of ``OWN_LANES_MIN_FEATURES`` or more), then four rows
    at a time, then two. The same row may appear several times (its distances to several
    centers).
    """
    m = rows.shape[0]
    done = by_lanes(X, rows, centers, which, out)
    full = done + (m - done) // 4 * 4
    for r in range(done, full, 4):
        i0, i1, i2, i3 = rows[r], rows[r + 1], rows[r + 2], rows[r + 3]
        a0, a1, a2, a3 = which[r], which[r + 1], which[r + 2], which[r + 3]
        s0 = s1 = s2 = s3 = 0.0
        for f in range(X.shape[1]):
            t0 = np.float64(X[i0, f]) - centers[a0, f]
            t1 = np.float64(X[i1, f]) - centers[a1, f]
            t2 = np.float64(X[i2, f]) - centers[a2, f]
            t3 = np.float64(X[i3, f]) - centers[a3, f]
            s0 += t0 * t0
            s1 += t1 * t1
            s2 += t2 * t2
            s3 += t3 * t3
        out[r], out[r + 1], out[r + 2], out[r + 3] = s0, s1, s2, s3
    if m - full >= 2:
        i0, i1, a0, a1 = rows[full], rows[full + 1], which[full], which[full + 1]
        s0 = s1 = 0.0
        for f in range(X.shape[1]):
            t0 = np.float64(X[i0, f]) - centers[a0, f]
            t1 = np.float64(X[i1, f]) - centers[a1, f]
            s0 += t0 * t0
            s1 += t1 * t1
        out[full], out[full + 1] = s0, s1
        full += 2
    if full < m:
        out[full] = own_distance(X, rows[full], centers, which[full])


@njit(inline="always")
def nearest_center(X, i, centers_t, buf):
    """Return ``(j, dist)``: the nearest center (lowest index on ties) and its squared distance."""
    row_distances(X, i, centers_t, buf)
    best = 0
    best_d = buf[0]
    for j in range(1, buf.shape[0]):
        if buf[j] < best_d:
            best_d = buf[j]
            best = j
    return best, best_d


@njit
def nearest_two(X, i, centers_t, buf):
    """Return ``(j, dist, second)``: the nearest center (lowest index on ties), its squared
    distance and the squared distance to the nearest other center (+inf when k = 1). ``buf``
    holds every squared distance afterwards."""
    row_distances(X, i, centers_t, buf)
    a, dist, second = 0, buf[0], np.inf
    for j in range(1, buf.shape[0]):
        if buf[j] < dist:
            second, dist, a = dist, buf[j], j
        elif buf[j] < second:
            second = buf[j]
    return a, dist, second


def _is_array(a, ndim, dtype):
    """Whether the Numba type ``a`` is a C-contiguous ``ndim``-dimensional array of ``dtype``."""
    return (isinstance(a, types.Array) and a.ndim == ndim and a.layout == "C"
            and a.dtype == dtype)


def _splat(builder, value, kind):
    """The vector of type ``kind`` with ``value`` in every lane."""
    i32 = ir.IntType(32)
    lane = builder.insert_element(ir.Constant(kind, ir.Undefined), value, i32(0))
    return builder.shuffle_vector(lane, ir.Constant(kind, ir.Undefined),
                                  ir.Constant(ir.VectorType(i32, kind.count), [0] * kind.count))


def _lanes(builder, data, index, kind):
    """A pointer to the vector of type ``kind`` at element ``index`` of ``data``."""
    return builder.bitcast(builder.gep(data, [index]), kind.as_pointer())


def _transpose(builder, vectors):
    """The transpose of ``_LANES`` vectors of ``_LANES`` lanes (lane ``f`` of vector ``r`` ->
    lane ``r`` of vector ``f``): three rounds of shuffles, each pairing vectors ``r`` and
    ``r + h`` (``h`` = 1, 2, 4) and swapping their blocks of ``h`` lanes across."""
    out = list(vectors)
    index = ir.VectorType(ir.IntType(32), _LANES)
    h = 1
    while h < _LANES:
        first = [j if j & h == 0 else j - h + _LANES for j in range(_LANES)]
        second = [j + h if j & h == 0 else j + _LANES for j in range(_LANES)]
        for r in range(_LANES):
            if r & h == 0:
                a, b = out[r], out[r + h]
                out[r] = builder.shuffle_vector(a, b, ir.Constant(index, first))
                out[r + h] = builder.shuffle_vector(a, b, ir.Constant(index, second))
        h *= 2
    return out


def _two_slots(builder, real, whole, count):
    """``count`` registers each (allocas) for the running two smallest of :func:`_keep_two`:
    ``(low, runner, which)``, the first two of vector type ``real`` set to +inf, ``which`` of
    integer vector type ``whole`` set to 0."""
    lanes = real.count
    slots = tuple([cgutils.alloca_once(builder, kind) for _ in range(count)]
                  for kind in (real, real, whole))
    for v in range(count):
        builder.store(ir.Constant(real, [np.inf] * lanes), slots[0][v])
        builder.store(ir.Constant(real, [np.inf] * lanes), slots[1][v])
        builder.store(ir.Constant(whole, [0] * lanes), slots[2][v])
    return slots


def _keep_two(builder, value, index, low, runner, which):
    """The running two smallest, branch-free: ``value`` (a vector) and its ``index`` update the
    smallest (``low``), the first index at it (``which``) and the second smallest (``runner``),
    pointers to vectors, as a loop's ``value < low`` / ``value < runner`` tests would: a value
    equal to the smallest counts as the second, a NaN value changes nothing."""
    smallest = builder.load(low)
    second = builder.load(runner)
    closer = builder.fcmp_ordered("<", value, smallest)
    other = builder.select(builder.fcmp_ordered("<", value, second), value, second)
    builder.store(builder.select(closer, smallest, other), runner)
    builder.store(builder.select(closer, index, builder.load(which)), which)
    builder.store(builder.select(closer, value, smallest), low)


def _store_two(builder, slots, arrays, columns, align):
    """Store the running two smallest and their indices (``slots`` of :func:`_two_slots`) into
    ``arrays`` (best, second, arg: Numba array structures), vector ``v`` at element
    ``columns[v]``."""
    for slot, array in zip(slots, arrays):
        for v, column in enumerate(columns):
            value = builder.load(slot[v])
            builder.store(value, _lanes(builder, array.data, column, value.type), align=align)


@intrinsic
def nearest_lanes(typingctx, block_t, centers_t, start, best, second, arg):
    """Nearest and second-nearest center of ``LANE_ROWS`` rows held transposed: for
    ``r`` in ``start:start + LANE_ROWS``, OUT ``best[r]``, ``second[r]``: the two smallest squared
    distances from column ``r`` of ``block_t`` to the centers, ``arg[r]``: the first center at the
    smallest (lowest index on ties).

    ``block_t`` float64 (d, m) and ``centers_t`` float64 (d, k), both C-contiguous; ``best``,
    ``second`` float64 and ``arg`` int64 (m,). Each distance is summed over features in order, as
    :func:`row_distances` sums it (a subtraction, a product and a sum per feature, each rounded:
    the same bits), but the rows are vector lanes and each sum stays in a register, where a loop
    over rows would load and store it at every feature. The caller guarantees
    ``start + LANE_ROWS <= m``; nothing is checked.
    """
    if not (_is_array(block_t, 2, types.float64) and _is_array(centers_t, 2, types.float64)
            and isinstance(start, types.Integer) and _is_array(best, 1, types.float64)
            and _is_array(second, 1, types.float64) and _is_array(arg, 1, types.int64)):
        return None

    def codegen(context, builder, signature, args):
        block, centers, best_out, second_out, arg_out = (
            context.make_array(signature.args[i])(context, builder, args[i])
            for i in (0, 1, 3, 4, 5))
        d, m = cgutils.unpack_tuple(builder, block.shape, 2)
        k = cgutils.unpack_tuple(builder, centers.shape, 2)[1]
        first = context.cast(builder, args[2], signature.args[2], types.intp)
        i64 = ir.IntType(64)
        real, whole = ir.VectorType(ir.DoubleType(), _LANES), ir.VectorType(i64, _LANES)

        columns = [builder.add(first, i64(_LANES * v)) for v in range(_VECTORS)]
        acc = [cgutils.alloca_once(builder, real) for _ in columns]
        low, runner, which = _two_slots(builder, real, whole, _VECTORS)
        with cgutils.for_range(builder, k) as center:
            j = center.index
            for v in range(_VECTORS):
                builder.store(ir.Constant(real, [0.0] * _LANES), acc[v])
            with cgutils.for_range(builder, d) as feature:
                f = feature.index
                c = builder.load(builder.gep(centers.data, [builder.add(builder.mul(f, k), j)]))
                c = _splat(builder, c, real)
                row = builder.mul(f, m)
                for v in range(_VECTORS):
                    x = builder.load(
                        _lanes(builder, block.data, builder.add(row, columns[v]), real), align=8)
                    t = builder.fsub(x, c)
                    builder.store(builder.fadd(builder.load(acc[v]), builder.fmul(t, t)), acc[v])
            index = _splat(builder, j, whole)
            for v in range(_VECTORS):
                _keep_two(builder, builder.load(acc[v]), index, low[v], runner[v], which[v])
        _store_two(builder, (low, runner, which), (best_out, second_out, arg_out), columns,
                   align=8)
        return context.get_dummy_value()
    return types.void(block_t, centers_t, start, best, second, arg), codegen


@intrinsic
def tile_lanes(typingctx, tile, candidates, first, second, out):
    """OUT ``out[p, r] = sum_f (tile[f, r] - candidates[p, f])^2`` for ``p`` in ``(first,
    second)`` and the ``TILE_ROWS`` rows ``r`` held transposed in ``tile`` (the same candidate
    twice is allowed).

    Each sum is taken over features in order, a subtraction, a product and a sum per feature,
    each rounded (no fused multiply-add), as a loop over features sums it; the rows are vector
    lanes and the sums stay in registers, where a loop over rows loads and stores them at every
    feature, and each load of a feature's rows serves both candidates. ``tile`` float32/float64
    (d, TILE_ROWS), ``candidates`` float64 (L, d) and ``out`` float64 (L, TILE_ROWS), all
    C-contiguous. The caller guarantees the shapes and the candidate indices; nothing is checked.
    """
    if not ((_is_array(tile, 2, types.float64) or _is_array(tile, 2, types.float32))
            and _is_array(candidates, 2, types.float64) and _is_array(out, 2, types.float64)
            and isinstance(first, types.Integer) and isinstance(second, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        block, means, sums = (context.make_array(signature.args[i])(context, builder, args[i])
                              for i in (0, 1, 4))
        d = cgutils.unpack_tuple(builder, block.shape, 2)[0]
        which = [context.cast(builder, args[i], signature.args[i], types.intp) for i in (2, 3)]
        i64 = ir.IntType(64)
        real = ir.VectorType(ir.DoubleType(), _LANES)
        single = signature.args[0].dtype == types.float32
        kind = ir.VectorType(ir.FloatType() if single else ir.DoubleType(), _LANES)
        acc = [[cgutils.alloca_once(builder, real) for _ in range(_TILE_VECTORS)] for _ in which]
        for pair in acc:
            for slot in pair:
                builder.store(ir.Constant(real, [0.0] * _LANES), slot)
        with cgutils.for_range(builder, d) as feature:
            f = feature.index
            row = builder.mul(f, i64(TILE_ROWS))
            xs = []
            for v in range(_TILE_VECTORS):
                x = builder.load(_lanes(builder, block.data, builder.add(row, i64(_LANES * v)),
                                        kind), align=4 if single else 8)
                xs.append(builder.fpext(x, real) if single else x)  # (exact in float64)
            for q, pair in zip(which, acc):
                c = builder.load(builder.gep(means.data, [builder.add(builder.mul(q, d), f)]))
                c = _splat(builder, c, real)
                for x, slot in zip(xs, pair):
                    t = builder.fsub(x, c)
                    builder.store(builder.fadd(builder.load(slot), builder.fmul(t, t)), slot)
        for q, pair in zip(which, acc):
            row = builder.mul(q, i64(TILE_ROWS))
            for v, slot in enumerate(pair):
                builder.store(builder.load(slot),
                              _lanes(builder, sums.data, builder.add(row, i64(_LANES * v)), real),
                              align=8)
        return context.get_dummy_value()
    return types.void(tile, candidates, first, second, out), codegen


def _screen_takes(out, norms, constant, best, second, arg):
    """Whether :func:`smallest_two_lanes` takes these Numba types: C-contiguous float32 or
    float64 ``out`` (two-dimensional), ``norms``, ``constant``, ``best`` and ``second``
    (one-dimensional), all of one dtype, and C-contiguous int32 ``arg``."""
    if not isinstance(out, types.Array) or out.dtype not in (types.float32, types.float64):
        return False
    return (_is_array(out, 2, out.dtype) and _is_array(norms, 1, out.dtype)
            and _is_array(constant, 1, out.dtype) and _is_array(best, 1, out.dtype)
            and _is_array(second, 1, out.dtype) and _is_array(arg, 1, types.int32))


class _ScreenCall(NamedTuple):
    """What a call of :func:`smallest_two_lanes` or :func:`screen_lanes` holds in registers: the
    vector types of its dtype (``real``; ``whole``, int32 lanes), the alignment of its elements,
    its columns (the first lane of each vector), the rows' norms (``nx``, one vector per column)
    and the running two smallest (``slots`` of :func:`_two_slots`), stored by ``store`` into the
    call's outputs (``outputs``: best, second, arg)."""
    real: ir.VectorType
    whole: ir.VectorType
    align: int
    columns: list
    nx: list
    slots: tuple
    outputs: tuple

    def store(self, builder):
        _store_two(builder, self.slots, self.outputs, self.columns, align=4)


def _screen_call(context, builder, signature, args, start):
    """The :class:`_ScreenCall` of an intrinsic whose argument ``start`` is the first column,
    followed by best, second and arg, and whose argument ``start - 2`` is the rows' norms; the
    dtype is that of argument 0."""
    arrays = [context.make_array(signature.args[i])(context, builder, args[i])
              for i in (start - 2, start + 1, start + 2, start + 3)]
    first = context.cast(builder, args[start], signature.args[start], types.intp)
    dtype = signature.args[0].dtype
    lanes = 512 // dtype.bitwidth
    real = ir.VectorType(context.get_value_type(dtype), lanes)
    whole = ir.VectorType(ir.IntType(32), lanes)
    align = dtype.bitwidth // 8
    columns = [builder.add(first, ir.IntType(64)(lanes * v)) for v in range(_SCREEN_VECTORS)]
    nx = [builder.load(_lanes(builder, arrays[0].data, c, real), align=align) for c in columns]
    slots = _two_slots(builder, real, whole, _SCREEN_VECTORS)
    return _ScreenCall(real, whole, align, columns, nx, slots, tuple(arrays[1:]))


def _screen_center(builder, call, products, offsets, j):
    """Screen center ``j`` in a :class:`_ScreenCall`: ``products``, one vector of the product's
    entries per column of the call, become the approximations ``(nx - (p + p)) + offsets[j]``,
    each operation rounded, and update the running two smallest (:func:`_keep_two`)."""
    norm = _splat(builder, builder.load(builder.gep(offsets.data, [j])), call.real)
    index = _splat(builder, builder.trunc(j, call.whole.element), call.whole)
    low, runner, which = call.slots
    for v, p in enumerate(products):
        approx = builder.fadd(builder.fsub(call.nx[v], builder.fadd(p, p)), norm)
        _keep_two(builder, approx, index, low[v], runner[v], which[v])


@intrinsic
def smallest_two_lanes(typingctx, out, norms, constant, start, best, second, arg):
    """:func:`smallest_two` of ``SCREEN_BYTES // itemsize`` columns of a product: for ``c`` in
    ``start:start + SCREEN_BYTES // itemsize``, OUT ``best[c]`` and ``second[c]``, the two
    smallest of ``(norms[c] - (out[j, c] + out[j, c])) + constant[j]`` over the rows ``j`` of
    ``out``, and ``arg[c]`` the first ``j`` at the smallest (lowest index on ties).

    Each approximation is rounded in ``out``'s precision as the loop over centers and columns
    rounds it, and the running two smallest are updated by the same comparisons (an
    approximation that is NaN changes nothing), so the results are the same bits; but the
    columns are vector lanes and the running values stay in registers for all the centers, where
    the loop loads and stores them at every center. ``out`` (k, w), ``norms`` and ``constant``:
    float32 or float64, one dtype; ``best``, ``second`` of that dtype and ``arg`` int32; all
    C-contiguous (:func:`_screen_takes`). The caller guarantees ``start + SCREEN_BYTES // itemsize
    <= w`` and ``constant`` of ``k`` entries; nothing is checked.
    """
    if not (_screen_takes(out, norms, constant, best, second, arg)
            and isinstance(start, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        product, offsets = (context.make_array(signature.args[i])(context, builder, args[i])
                            for i in (0, 2))
        k, w = cgutils.unpack_tuple(builder, product.shape, 2)
        call = _screen_call(context, builder, signature, args, 3)
        real, columns = call.real, call.columns
        with cgutils.for_range(builder, k) as center:
            j = center.index
            row = builder.mul(j, w)
            ps = [builder.load(_lanes(builder, product.data, builder.add(row, c), real),
                               align=call.align) for c in columns]
            _screen_center(builder, call, ps, offsets, j)
        call.store(builder)
        return context.get_dummy_value()
    return types.void(out, norms, constant, start, best, second, arg), codegen


@njit
def smallest_two(out, norms, constant, best, second, arg):
    """OUT, for every column ``c`` of the product ``out`` (k, w): ``best[c]`` and ``second[c]``,
    the two smallest of ``(norms[c] - (out[j, c] + out[j, c])) + constant[j]`` (each operation
    rounded in ``out``'s precision), and ``arg[c]`` the first ``j`` at the smallest (lowest
    index on ties): Lloyd's screen, one column (a row of X) per vector lane.

    Groups of lanes by :func:`smallest_two_lanes` (the running values in registers), the last
    group ending at the last column (it may redo columns of the one before: the same values);
    fewer columns than a group by the loop over centers and columns, the same bits. In one
    function with the lanes that loop lost its vector code (0.9-1.0 ns per entry against 0.2-0.3
    at k = 100, 20 and 63 columns, float32), so it stays a call of its own. Types: see
    :func:`_screen_takes`; ``norms`` and the outputs of at least ``w`` entries, ``constant`` of
    ``k``.
    """
    w = out.shape[1]
    group = SCREEN_BYTES // out.itemsize
    if w < group:
        _smallest_two_loop(out, norms, constant, best, second, arg)
        return
    c = 0
    while c + group < w:
        smallest_two_lanes(out, norms, constant, c, best, second, arg)
        c += group
    smallest_two_lanes(out, norms, constant, w - group, best, second, arg)


@njit
def _smallest_two_loop(out, norms, constant, best, second, arg):
    """:func:`smallest_two` by a loop over centers, then columns (vectorized by the compiler)."""
    k, w = out.shape
    for c in range(w):
        best[c] = np.inf
        second[c] = np.inf
        arg[c] = 0
    for j in range(k):
        row = out[j]
        norm = constant[j]
        jj = np.int32(j)
        for c in range(w):
            approx = (norms[c] - (row[c] + row[c])) + norm
            closer = approx < best[c]
            second[c] = best[c] if closer else (approx if approx < second[c] else second[c])
            arg[c] = jj if closer else arg[c]
            best[c] = approx if closer else best[c]


def _fused_takes(block_t, shifted, norms, constant, best, second, arg):
    """Whether :func:`screen_lanes` takes these Numba types: ``block_t`` and ``shifted``
    C-contiguous two-dimensional, the others as :func:`_screen_takes`, all of one dtype."""
    return (_screen_takes(block_t, norms, constant, best, second, arg)
            and _is_array(shifted, 2, block_t.dtype))


@intrinsic
def screen_lanes(typingctx, block_t, shifted, norms, constant, start, best, second, arg):
    """:func:`smallest_two` of the product ``shifted @ block_t`` without forming it: for ``c`` in
    ``start:start + SCREEN_BYTES // itemsize``, OUT ``best[c]`` and ``second[c]``, the two
    smallest of ``(norms[c] - (p + p)) + constant[j]`` with ``p`` the dot of ``shifted[j]`` and
    column ``c`` of ``block_t``, over the rows ``j`` of ``shifted``, and ``arg[c]`` the first
    ``j`` at the smallest (lowest index on ties).

    Each dot is a chain of fused multiply-adds over the features in order, rounded in the
    product's precision (the screen's bound holds for any order, with or without them: see
    :func:`fedcore.kernels.kmeans.lloyd.screen_eps`); the columns are vector lanes, two centers'
    dots at a time, and the running two smallest stay in registers (:func:`_keep_two`, the
    centers in ascending order). ``block_t`` (d, w) and ``shifted`` (k, d), ``norms``,
    ``constant``, ``best``, ``second``: float32 or float64, one dtype; ``arg`` int32; all
    C-contiguous (:func:`_fused_takes`). The caller guarantees ``start + SCREEN_BYTES //
    itemsize <= w``, ``norms`` of ``w`` entries and ``constant`` of ``k``; nothing is checked.
    """
    if not (_fused_takes(block_t, shifted, norms, constant, best, second, arg)
            and isinstance(start, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        block, centers, offsets = (
            context.make_array(signature.args[i])(context, builder, args[i]) for i in (0, 1, 3))
        d, w = cgutils.unpack_tuple(builder, block.shape, 2)
        k = cgutils.unpack_tuple(builder, centers.shape, 2)[0]
        call = _screen_call(context, builder, signature, args, 4)
        real, columns, align = call.real, call.columns, call.align
        i64 = ir.IntType(64)
        zero = ir.Constant(real, [0.0] * real.count)
        fma = cgutils.get_or_insert_function(  # (llvm.fma.v16f32 or .v8f64)
            builder.module, ir.FunctionType(real, [real] * 3),
            f"llvm.fma.v{real.count}f{signature.args[0].dtype.bitwidth}")
        acc = [[cgutils.alloca_once(builder, real) for _ in columns] for _ in range(_FUSED)]

        def centers_from(j, count):  # the dots of centers j, j + 1, ..., then their screen
            for q in range(count):
                for slot in acc[q]:
                    builder.store(zero, slot)
            rows = [builder.mul(builder.add(j, i64(q)), d) for q in range(count)]
            with cgutils.for_range(builder, d) as feature:
                f = feature.index
                line = builder.mul(f, w)
                xs = [builder.load(_lanes(builder, block.data, builder.add(line, c), real),
                                   align=align) for c in columns]
                for q in range(count):
                    s = builder.load(builder.gep(centers.data, [builder.add(rows[q], f)]))
                    s = _splat(builder, s, real)
                    for x, slot in zip(xs, acc[q]):
                        builder.store(builder.call(fma, [x, s, builder.load(slot)]), slot)
            for q in range(count):
                _screen_center(builder, call, [builder.load(slot) for slot in acc[q]], offsets,
                               builder.add(j, i64(q)))

        pairs = builder.udiv(k, i64(_FUSED))
        with cgutils.for_range(builder, pairs) as pair:
            centers_from(builder.mul(pair.index, i64(_FUSED)), _FUSED)
        rest = builder.mul(pairs, i64(_FUSED))
        with cgutils.for_range(builder, builder.sub(k, rest)) as extra:
            centers_from(builder.add(rest, extra.index), 1)
        call.store(builder)
        return context.get_dummy_value()
    return (types.void(block_t, shifted, norms, constant, start, best, second, arg), codegen)


@njit
def screen_fused(block_t, shifted, norms, constant, best, second, arg, w):
    """OUT, for the first ``w`` columns ``c`` of ``block_t`` (d, >= w): ``best[c]``,
    ``second[c]`` and ``arg[c]`` of :func:`screen_lanes` (the two smallest screened
    approximations and the first center at the smallest), groups of ``SCREEN_BYTES // itemsize``
    columns a call, the last group ending at column ``w - 1`` (it may redo columns of the one
    before: the same values). ``w`` is at least one group (pad a narrower block) and at most the
    block's columns; ``shifted`` (k, d); ``norms``, ``best``, ``second``, ``arg`` of ``w`` entries
    or more, ``constant`` of ``k``: checked (ValueError) before any lane is read. The types are
    :func:`screen_lanes`'s."""
    group = SCREEN_BYTES // block_t.itemsize
    k, d = shifted.shape
    if not (group <= w <= block_t.shape[1] and d == block_t.shape[0]
            and min(norms.shape[0], best.shape[0], second.shape[0], arg.shape[0]) >= w
            and constant.shape[0] >= k):
        raise ValueError("screen_fused: w must be from one group of lanes to the block's "
                         "columns, shifted (k, d) with the block's d, norms, best, second "
                         "and arg of w entries, constant of k")
    c = 0
    while c + group < w:
        screen_lanes(block_t, shifted, norms, constant, c, best, second, arg)
        c += group
    screen_lanes(block_t, shifted, norms, constant, w - group, best, second, arg)


def _lanes_take(X, rows, centers, which, out):
    """Whether :func:`own_lanes` takes these Numba types: C-contiguous two-dimensional
    float32/float64 ``X`` and ``centers``, one-dimensional integer ``rows`` and ``which`` and
    float64 ``out`` (any layout)."""
    def table(a):
        return _is_array(a, 2, types.float32) or _is_array(a, 2, types.float64)

    def indices(a):
        return isinstance(a, types.Array) and a.ndim == 1 and isinstance(a.dtype, types.Integer)
    return (table(X) and indices(rows) and table(centers) and indices(which)
            and isinstance(out, types.Array) and out.ndim == 1 and out.dtype == types.float64)


@intrinsic
def own_lanes(typingctx, X, rows, centers, which, start, out):
    """OUT ``out[r]``: :func:`own_distance` from ``X[rows[r]]`` to ``centers[which[r]]``, the
    same bits, for ``r`` in ``start:start + OWN_ROWS``.

    Each row is a vector lane: for every ``_LANES`` features, each row's differences
    ``fl(x_f - c_f)`` are taken as one vector, the ``_LANES`` rows' vectors are transposed in
    registers (:func:`_transpose`), and each row's sum then takes its features in order, a
    product and a sum per feature, each rounded (no fused multiply-add), as
    :func:`own_distance` sums them; the features past the last whole vector one at a time.
    ``X`` (n, d) and ``centers`` (k, d) float32/float64, C-contiguous; ``rows``, ``which``:
    integers, ``out`` float64, any layout. The caller guarantees the indices; nothing is
    checked.
    """
    if not (_lanes_take(X, rows, centers, which, out) and isinstance(start, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        x_t, rows_t, c_t, which_t, start_t, out_t = signature.args
        data, row_ids, means, labels, dists = (
            context.make_array(signature.args[i])(context, builder, args[i])
            for i in (0, 1, 2, 3, 5))
        d = cgutils.unpack_tuple(builder, data.shape, 2)[1]
        first = context.cast(builder, args[4], start_t, types.intp)
        i32, i64 = ir.IntType(32), ir.IntType(64)
        real = ir.VectorType(ir.DoubleType(), _LANES)

        def vector(array_t):  # the vector type that reads ``_LANES`` elements of a row
            return ir.VectorType(context.get_value_type(array_t.dtype), _LANES)

        def widen(value, array_t, kind):  # (float32 rows or centers: exact in float64)
            return builder.fpext(value, kind) if array_t.dtype == types.float32 else value

        def entry(array_t, array, r):  # element ``first + r`` of a one-dimensional array
            return cgutils.get_item_pointer(context, builder, array_t, array,
                                            [builder.add(first, i64(r))])

        def index(array_t, array, r):
            value = builder.load(entry(array_t, array, r))
            return context.cast(builder, value, array_t.dtype, types.intp)

        x_rows = [builder.gep(data.data, [builder.mul(index(rows_t, row_ids, r), d)])
                  for r in range(OWN_ROWS)]
        c_rows = [builder.gep(means.data, [builder.mul(index(which_t, labels, r), d)])
                  for r in range(OWN_ROWS)]
        acc = cgutils.alloca_once(builder, real)
        builder.store(ir.Constant(real, [0.0] * _LANES), acc)
        whole = builder.sub(d, builder.srem(d, i64(_LANES)))
        with cgutils.for_range_slice(builder, i64(0), whole, i64(_LANES)) as (f, _):
            diffs = []
            for r in range(OWN_ROWS):
                x = builder.load(_lanes(builder, x_rows[r], f, vector(x_t)),
                                 align=x_t.dtype.bitwidth // 8)
                c = builder.load(_lanes(builder, c_rows[r], f, vector(c_t)),
                                 align=c_t.dtype.bitwidth // 8)
                diffs.append(builder.fsub(widen(x, x_t, real), widen(c, c_t, real)))
            total = builder.load(acc)
            for t in _transpose(builder, diffs):  # (feature by feature, in order)
                total = builder.fadd(total, builder.fmul(t, t))
            builder.store(total, acc)
        with cgutils.for_range_slice(builder, whole, d, i64(1)) as (f, _):
            t = ir.Constant(real, ir.Undefined)
            for r in range(OWN_ROWS):
                x = widen(builder.load(builder.gep(x_rows[r], [f])), x_t, ir.DoubleType())
                c = widen(builder.load(builder.gep(c_rows[r], [f])), c_t, ir.DoubleType())
                t = builder.insert_element(t, builder.fsub(x, c), i32(r))
            builder.store(builder.fadd(builder.load(acc), builder.fmul(t, t)), acc)
        total = builder.load(acc)
        for r in range(OWN_ROWS):
            builder.store(builder.extract_element(total, i32(r)), entry(out_t, dists, r))
        return context.get_dummy_value()
    return types.void(X, rows, centers, which, start, out), codegen


def _transpose_takes(X, rows, block_t):
    """Whether :func:`transpose_lanes` takes these Numba types: C-contiguous two-dimensional
    float32/float64 ``X``, one-dimensional integer ``rows`` (any layout) and C-contiguous
    two-dimensional ``block_t`` of float64 or of X's dtype."""
    return ((_is_array(X, 2, types.float32) or _is_array(X, 2, types.float64))
            and isinstance(rows, types.Array) and rows.ndim == 1
            and isinstance(rows.dtype, types.Integer)
            and (_is_array(block_t, 2, types.float64) or _is_array(block_t, 2, X.dtype)))


@intrinsic
def transpose_lanes(typingctx, X, rows, start, block_t):
    """OUT ``block_t[f, start + r] = X[rows[start + r], f]`` (float32 rows into float64: widened,
    exact) for every feature ``f`` and the ``_LANES`` rows ``r < _LANES``.

    ``_LANES`` features of the ``_LANES`` rows are read as vectors and transposed in registers
    (:func:`_transpose`), so each feature's rows are stored as one vector; the features past the
    last whole vector (all of them where ``d < _LANES``) are gathered lane by lane. A loop over
    rows and features leaves the compiler a scatter store per row (one element per line of
    ``block_t``): about 30% of the exact scan's E-step (uniform 5e5 x 10, k = 10). Types: see
    :func:`_transpose_takes`. The caller guarantees ``start + _LANES <= rows.shape[0]``, the
    indices, and ``d`` rows and at least ``start + _LANES`` columns of ``block_t``; nothing is
    checked.
    """
    if not (_transpose_takes(X, rows, block_t) and isinstance(start, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        x_t, rows_t, start_t, _ = signature.args
        data, row_ids, block = (context.make_array(signature.args[i])(context, builder, args[i])
                                for i in (0, 1, 3))
        d = cgutils.unpack_tuple(builder, data.shape, 2)[1]
        w = cgutils.unpack_tuple(builder, block.shape, 2)[1]
        first = context.cast(builder, args[2], start_t, types.intp)
        i32, i64 = ir.IntType(32), ir.IntType(64)
        single = x_t.dtype == types.float32
        kind = ir.VectorType(ir.FloatType() if single else ir.DoubleType(), _LANES)
        widen = single and signature.args[3].dtype == types.float64
        real = ir.VectorType(ir.DoubleType(), _LANES) if widen else kind
        align = real.element.get_abi_size(context.target_data)

        def row(r):  # a pointer to the first feature of row ``rows[first + r]``
            entry = cgutils.get_item_pointer(context, builder, rows_t, row_ids,
                                             [builder.add(first, i64(r))])
            i = context.cast(builder, builder.load(entry), rows_t.dtype, types.intp)
            return builder.gep(data.data, [builder.mul(i, d)])

        def column(f):  # a pointer to the vector at ``block_t[f, first]``
            return _lanes(builder, block.data, builder.add(builder.mul(f, w), first), real)

        x_rows = [row(r) for r in range(_LANES)]
        whole = builder.sub(d, builder.srem(d, i64(_LANES)))
        with cgutils.for_range_slice(builder, i64(0), whole, i64(_LANES)) as (f, _):
            vectors = []
            for x in x_rows:
                v = builder.load(_lanes(builder, x, f, kind), align=4 if single else 8)
                vectors.append(builder.fpext(v, real) if widen else v)
            for q, t in enumerate(_transpose(builder, vectors)):
                builder.store(t, column(builder.add(f, i64(q))), align=align)
        with cgutils.for_range_slice(builder, whole, d, i64(1)) as (f, _):
            t = ir.Constant(real, ir.Undefined)
            for r, x in enumerate(x_rows):
                v = builder.load(builder.gep(x, [f]))
                t = builder.insert_element(t, builder.fpext(v, real.element) if widen else v,
                                           i32(r))
            builder.store(t, column(f), align=align)
        return context.get_dummy_value()
    return types.void(X, rows, start, block_t), codegen


def _transposed(X, rows, block_t):
    """:func:`transpose_lanes` of the first rows, ``_LANES`` at a time, where it takes these
    types (:func:`_transpose_takes`); returns how many rows it did."""


@overload(_transposed, jit_options={"cache": NUMBA_CACHE})
def _transposed_impl(X, rows, block_t):
    if not _transpose_takes(X, rows, block_t):
        return lambda X, rows, block_t: 0

    def impl(X, rows, block_t):
        full = rows.shape[0] - rows.shape[0] % _LANES
        for r in range(0, full, _LANES):
            transpose_lanes(X, rows, r, block_t)
        return full
    return impl


@njit(inline="always")
def lane_width(rows):
    """Columns of a block that holds ``rows`` rows for :func:`nearest_rows`: whole calls of
    :func:`nearest_lanes`."""
    return rows + (-rows) % LANE_ROWS


@njit(inline="always")
def nearest_rows(X, rows, centers_t, block_t, best, second, arg):
    """Nearest center of each row in ``rows`` (lowest index on ties): OUT ``best[r]``, ``arg[r]``
    its squared distance and index, ``second[r]`` the squared distance to the nearest other
    center (+inf for one center), for ``r < rows.shape[0]``, the bits of :func:`nearest_two`.

    The rows are transposed into ``block_t`` float64 (d, w) by :func:`transpose_rows`, the
    columns after them up to :func:`lane_width` set to zero, and :func:`nearest_lanes` scans them
    ``LANE_ROWS`` at a time.
    IN ``X`` float32/float64 (n, d); ``centers_t`` float64 (d, k) C-contiguous. The caller
    guarantees ``d`` rows of ``block_t`` and ``w``, and the lengths of ``best``, ``second`` and
    ``arg`` (float64, float64, int64), at least :func:`lane_width` of the rows: nothing is checked
    here (a check inside the parallel loops that call this doubled their time).
    """
    full = lane_width(rows.shape[0])
    transpose_rows(X, rows, block_t, full)
    for r in range(0, full, LANE_ROWS):
        nearest_lanes(block_t, centers_t, r, best, second, arg)


@njit(inline="always")
def transpose_rows(X, rows, block_t, width):
    """OUT ``block_t[f, r] = X[rows[r], f]`` for every feature ``f`` and ``r < m =
    rows.shape[0]`` (float32 rows into float64: widened, exact), and zeros in the columns ``m``
    to ``width - 1`` (finite values in the lanes after the rows).

    C-contiguous X: eight rows at a time by :func:`transpose_lanes`, the rest one at a time.
    IN ``X`` float32/float64 (n, d); OUT ``block_t`` (d, >= width), float64 or X's dtype. The
    caller guarantees the indices and the shapes; nothing is checked.
    """
    m = rows.shape[0]
    d = X.shape[1]
    for r in range(_transposed(X, rows, block_t), m):
        i = rows[r]
        for f in range(d):
            block_t[f, r] = X[i, f]
    for f in range(d):
        for r in range(m, width):
            block_t[f, r] = 0.0


@chunked_kernel
def pairwise_sq_distances(X, centers_t, out):
    """OUT ``out`` float64 (n, k): squared distances from each row of ``X`` to each center.

    IN ``X`` float32/float64 (n, d); ``centers_t`` float64 (d, k).
    """
    n = X.shape[0]
    for c in prange(-(-n // CHUNK_SIZE)):
        for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
            row_distances(X, i, centers_t, out[i])


@chunked_kernel
def assign_nearest(X, centers_t, labels, distances):
    """OUT ``labels`` int64 (n,) nearest center (lowest index on ties),
    ``distances`` float64 (n,): the bits of :func:`nearest_center`, a block of rows at a time
    (:func:`nearest_rows`) up to ``LANES_MAX_FEATURES`` features, else a row at a time
    (:func:`fedcore.algorithms.kmeans.lloyd.assign` screens wide rows where it can).

    IN ``X`` float32/float64 (n, d); ``centers_t`` float64 (d, k) C-contiguous.
    """
    n, d = X.shape
    if centers_t.shape[0] != d:  # (the scans trust the widths)
        raise ValueError("assign_nearest: centers_t has another number of features than X")
    if d > LANES_MAX_FEATURES:
        k = centers_t.shape[1]
        for c in prange(-(-n // CHUNK_SIZE)):
            buf = np.empty(k)
            for i in range(c * CHUNK_SIZE, min(n, (c + 1) * CHUNK_SIZE)):
                j, dist = nearest_center(X, i, centers_t, buf)
                labels[i] = j
                distances[i] = dist
        return
    width = lane_width(_ASSIGN_ROWS)
    for c in prange(-(-n // CHUNK_SIZE)):
        lo = c * CHUNK_SIZE
        rows = row_range(lo, min(n, lo + CHUNK_SIZE))
        block_t = np.empty((d, width))
        best = np.empty(width)
        second = np.empty(width)
        arg = np.empty(width, dtype=np.int64)
        for b in range(0, rows.shape[0], _ASSIGN_ROWS):
            part = rows[b:b + _ASSIGN_ROWS]
            nearest_rows(X, part, centers_t, block_t, best, second, arg)
            for r in range(part.shape[0]):
                labels[part[r]] = arg[r]
                distances[part[r]] = best[r]
