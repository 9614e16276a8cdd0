"""Polynomials over F_p: multiplication, division, gcd, powers modulo f, evaluation.

A polynomial is an int64 array of coefficients in [0, p), lowest degree first (``a[i]`` multiplies
x**i); trailing zeros are allowed and the degree is recomputed where it matters (``degree``).
Products use Karatsuba's recursion above ``KARATSUBA_THRESHOLD`` coefficients and a schoolbook
convolution with lazy 128-bit accumulation below it. Products and powers modulo a fixed f are in
``polynomial_mod.py``.

All kernels take the prime p (odd, below 2**62) and raise ZeroDivisionError when asked to divide by
the zero polynomial.
"""
import numpy as np

from ..arrays import copy_into
from ..jit import njit
from .arithmetic import (_mulhi, accumulation_limit, addmod, field_context, inverse,
                    mulmod_ctx, negmod, reduce_wide, sub_scaled_into, submod)

__all__ = [
    "KARATSUBA_THRESHOLD", "NEWTON_THRESHOLD", "degree", "poly_mul", "poly_divmod", "poly_gcd",
    "poly_eval", "poly_eval_rows", "poly_from_roots", "karatsuba_workspace", "mul_equal",
    "mul_general", "gcd_into", "rem_monic_inplace", "eval_many_ctx",
]

KARATSUBA_THRESHOLD = 32
NEWTON_THRESHOLD = 64


@njit
def degree(a, n):
    """Degree of the polynomial a[:n] (-1 for the zero polynomial)."""
    for i in range(n - 1, -1, -1):
        if a[i] != 0:
            return i
    return -1


@njit
def _school_rows(a, na, b, nb, out, hi, lo, ctx):
    """out[:na + nb - 1] = a[:na] * b[:nb], one outer-product row per coefficient of a.

    The rows go into 128-bit accumulators ``hi``/``lo`` (uint64, length >= na + nb - 1):
    independent accumulators pipeline better than one dot product per coefficient. Every
    ``accumulation_limit - 1`` rows the accumulators are reduced, so they never overflow.
    """
    n_out = na + nb - 1
    hi[:n_out] = 0
    lo[:n_out] = 0
    lim = accumulation_limit(ctx) - 1
    since = 0
    for i in range(na):
        if since == lim:  # reduce before the 128-bit sums could overflow
            for k in range(n_out):
                lo[k] = np.uint64(reduce_wide(hi[k], lo[k], ctx))
                hi[k] = 0
            since = 0
        ua = np.uint64(a[i])
        for j in range(nb):  # written inline: a helper call here costs a factor of three
            ub = np.uint64(b[j])
            pl = ua * ub
            s = lo[i + j] + pl
            lo[i + j] = s
            hi[i + j] += _mulhi(ua, ub) + np.uint64(s < pl)
        since += 1
    for k in range(n_out):
        out[k] = reduce_wide(hi[k], lo[k], ctx)


@njit
def _school_mul(a, na, b, nb, out, hi, lo, ctx):
    """out[:na + nb - 1] = a[:na] * b[:nb] (schoolbook), rows along the shorter operand."""
    if na <= nb:
        _school_rows(a, na, b, nb, out, hi, lo, ctx)
    else:
        _school_rows(b, nb, a, na, out, hi, lo, ctx)


@njit
def karatsuba_workspace(n):
    """Length of the workspace ``mul_equal`` needs for operands of length n."""
    total = 4 * n + 1  # copies of both operands and the product
    while n > KARATSUBA_THRESHOLD:
        hh = n - n // 2
        total += 4 * hh
        n = hh
    return total


@njit(inline="always")  # (mul_equal is its only caller: compiled once, inside it)
def _karatsuba(ws, ao, bo, n, oo, wo, square, ctx):
    """ws[oo : oo + 2n - 1] = ws[ao : ao + n] * ws[bo : bo + n], scratch from ws[wo:].

    Karatsuba: with a = a0 + x**h a1 and b = b0 + x**h b1, the product is
    z0 + x**h ((a0 + a1)(b0 + b1) - z0 - z2) + x**(2h) z2, three half-size products instead of four.
    The recursion runs on an explicit stack (frames of offsets into one workspace) because Numba
    cannot cache self-recursive functions. ``bo`` is ignored when ``square``.
    """
    p = ctx[0]
    hi = np.empty(2 * KARATSUBA_THRESHOLD, dtype=np.uint64)
    lo = np.empty(2 * KARATSUBA_THRESHOLD, dtype=np.uint64)
    # The base case runs on private copies: reading and writing the shared workspace in the same
    # loop makes LLVM assume aliasing and runs about 2.5 times slower.
    xa = np.empty(KARATSUBA_THRESHOLD, dtype=np.int64)
    xb = np.empty(KARATSUBA_THRESHOLD, dtype=np.int64)
    xo = np.empty(2 * KARATSUBA_THRESHOLD, dtype=np.int64)
    stack = np.empty((64, 6), dtype=np.int64)  # (ao, bo, n, oo, wo, stage); depth <= log2(n) + 2
    stack[0, 0], stack[0, 1], stack[0, 2] = ao, bo, n
    stack[0, 3], stack[0, 4], stack[0, 5] = oo, wo, 0
    sp = 1
    while sp > 0:
        f = sp - 1
        ao, bo, n, oo, wo, stage = (stack[f, 0], stack[f, 1], stack[f, 2], stack[f, 3],
                                    stack[f, 4], stack[f, 5])
        if n <= KARATSUBA_THRESHOLD:
            copy_into(xa, ws[ao:], n)
            if square:  # a symmetric base case saves half the products but pipelines worse
                _school_mul(xa, n, xa, n, xo, hi, lo, ctx)
            else:
                copy_into(xb, ws[bo:], n)
                _school_mul(xa, n, xb, n, xo, hi, lo, ctx)
            copy_into(ws[oo:], xo, 2 * n - 1)
            sp -= 1
            continue
        h = n // 2
        hh = n - h
        stack[f, 5] = stage + 1
        if stage == 0:    # z0 = a0 b0 into out[0 : 2h - 1]
            ca, cb, cn, co, cw = ao, bo, h, oo, wo
        elif stage == 1:  # z2 = a1 b1 into out[2h : 2n - 1]
            ws[oo + 2 * h - 1] = 0
            ca, cb, cn, co, cw = ao + h, bo + h, hh, oo + 2 * h, wo
        elif stage == 2:  # z1 = (a0 + a1)(b0 + b1) into scratch
            for i in range(h):
                ws[wo + i] = addmod(ws[ao + i], ws[ao + h + i], p)
            if hh > h:
                ws[wo + h] = ws[ao + n - 1]
            if not square:
                for i in range(h):
                    ws[wo + hh + i] = addmod(ws[bo + i], ws[bo + h + i], p)
                if hh > h:
                    ws[wo + hh + h] = ws[bo + n - 1]
            ca, cb, cn, co, cw = wo, wo + hh, hh, wo + 2 * hh, wo + 4 * hh
        else:             # out += x**h (z1 - z0 - z2)
            z1 = wo + 2 * hh
            for i in range(2 * h - 1):
                ws[z1 + i] = submod(ws[z1 + i], ws[oo + i], p)
            for i in range(2 * hh - 1):
                ws[z1 + i] = submod(ws[z1 + i], ws[oo + 2 * h + i], p)
            for i in range(2 * hh - 1):
                ws[oo + h + i] = addmod(ws[oo + h + i], ws[z1 + i], p)
            sp -= 1
            continue
        stack[sp, 0], stack[sp, 1], stack[sp, 2] = ca, cb, cn
        stack[sp, 3], stack[sp, 4], stack[sp, 5] = co, cw, 0
        sp += 1


@njit
def mul_equal(a, b, n, out, ws, square, ctx):
    """out[:2n - 1] = a[:n] * b[:n] (b ignored when ``square``).

    ``ws`` is a workspace of length ``karatsuba_workspace(n)``; ``out`` may alias a or b.
    """
    if n <= 0:
        return
    if n <= KARATSUBA_THRESHOLD:
        hi = np.empty(2 * n, dtype=np.uint64)
        lo = np.empty(2 * n, dtype=np.uint64)
        if square:
            _school_mul(a, n, a, n, ws, hi, lo, ctx)
        else:
            _school_mul(a, n, b, n, ws, hi, lo, ctx)
        copy_into(out, ws, 2 * n - 1)
        return
    copy_into(ws, a, n)
    if not square:
        copy_into(ws[n:], b, n)
    _karatsuba(ws, np.int64(0), n, n, 2 * n, 4 * n, square, ctx)
    copy_into(out, ws[2 * n:], 2 * n - 1)


@njit
def _mul_blocks(a, na, b, nb, out, ctx):
    """out[:na + nb - 1] = a[:na] * b[:nb] for na >= nb, a cut into blocks of length nb."""
    if nb <= KARATSUBA_THRESHOLD:
        hi = np.empty(na + nb, dtype=np.uint64)
        lo = np.empty(na + nb, dtype=np.uint64)
        _school_mul(a, na, b, nb, out, hi, lo, ctx)
        return
    p = ctx[0]
    ws = np.empty(karatsuba_workspace(nb), dtype=np.int64)
    tmp = np.empty(2 * nb - 1, dtype=np.int64)
    block = np.zeros(nb, dtype=np.int64)
    out[:na + nb - 1] = 0
    for start in range(0, na, nb):
        m = min(nb, na - start)
        copy_into(block, a[start:], m)
        block[m:] = 0
        mul_equal(block, b, nb, tmp, ws, np.bool_(False), ctx)
        for i in range(m + nb - 1):
            out[start + i] = addmod(out[start + i], tmp[i], p)


@njit
def mul_general(a, na, b, nb, out, ctx):
    """out[:na + nb - 1] = a[:na] * b[:nb] for any lengths (the longer one is cut into blocks).

    ``out`` must not alias a or b.
    """
    if na == 0 or nb == 0:
        return
    if na >= nb:
        _mul_blocks(a, na, b, nb, out, ctx)
    else:
        _mul_blocks(b, nb, a, na, out, ctx)


@njit
def poly_mul(a, b, out, p):
    """Product of two polynomials.

    Parameters
    ----------
    a, b : ndarray of shape (na,), (nb,), int64
        IN. Coefficients in [0, p), lowest degree first.
    out : ndarray of shape (>= na + nb - 1,), int64
        OUT. ``out[:na + nb - 1]`` receives the coefficients of a * b.
    p : int
        Odd prime below 2**62.
    """
    mul_general(a, a.shape[0], b, b.shape[0], out, field_context(p))


@njit
def rem_monic_inplace(a, na, h, d, ctx):
    """Reduce a[:na] modulo the monic h of degree d in place (schoolbook); a[:d] is the result."""
    for k in range(na - 1, d - 1, -1):
        c = a[k]
        if c != 0:
            sub_scaled_into(a[k - d:k], c, h, d, ctx)
            a[k] = 0


@njit
def poly_divmod(a, b, q, r, p):
    """Quotient and remainder of a / b by long division.

    Parameters
    ----------
    a, b : ndarray of shape (na,), (nb,), int64
        IN. Dividend and nonzero divisor.
    q : ndarray of shape (>= max(na - deg b, 1),), int64
        OUT. Quotient coefficients (zero-filled beyond its degree).
    r : ndarray of shape (>= max(deg b, 1),), int64
        OUT. Remainder coefficients.

    Returns
    -------
    deg_q, deg_r : int
        Degrees of quotient and remainder (-1 for zero).
    """
    ctx = field_context(p)
    db = degree(b, b.shape[0])
    if db < 0:
        raise ZeroDivisionError("poly_divmod: division by the zero polynomial")
    work = a.copy()
    da = degree(a, a.shape[0])
    inv_lead = inverse(b[db], p)
    q[:] = 0
    for k in range(da - db, -1, -1):
        c = mulmod_ctx(work[k + db], inv_lead, ctx)
        q[k] = c
        if c != 0:
            sub_scaled_into(work[k:k + db], c, b, db, ctx)
        work[k + db] = 0
    r[:] = 0
    for i in range(min(db, work.shape[0])):
        r[i] = work[i]
    return degree(q, q.shape[0]), degree(r, r.shape[0])


@njit
def gcd_into(a, na, b, nb, out, ctx):
    """Monic gcd of a[:na] and b[:nb] into out; returns its degree (-1 if both are zero).

    Euclid's algorithm on two rows of one buffer (rotating row indices rather than swapping array
    variables, which would slow Numba's inner loops several times).
    """
    p = ctx[0]
    r = np.zeros((2, max(na, nb, 1)), dtype=np.int64)
    copy_into(r[0], a, na)
    copy_into(r[1], b, nb)
    i0, i1 = 0, 1
    d0 = degree(r[0], na)
    d1 = degree(r[1], nb)
    if d0 < d1:
        i0, i1 = 1, 0
        d0, d1 = d1, d0
    while d1 >= 0:
        x = r[i0]
        y = r[i1]
        inv_lead = inverse(y[d1], p)
        for k in range(d0 - d1, -1, -1):
            c = mulmod_ctx(x[k + d1], inv_lead, ctx)
            if c != 0:
                sub_scaled_into(x[k:k + d1], c, y, d1, ctx)
            x[k + d1] = 0
        d0 = degree(x, d1)
        i0, i1 = i1, i0
        d0, d1 = d1, d0
    if d0 < 0:
        return -1
    x = r[i0]
    inv_lead = inverse(x[d0], p)
    for i in range(d0 + 1):
        out[i] = mulmod_ctx(x[i], inv_lead, ctx)
    return d0


@njit
def poly_gcd(a, b, out, p):
    """Monic greatest common divisor; ``out`` (length >= min(na, nb)) receives it.

    Returns its degree, or -1 when both inputs are zero.
    """
    return gcd_into(a, a.shape[0], b, b.shape[0], out, field_context(p))


@njit
def eval_many_ctx(c, n, points, m, out, ctx):
    """out[j] = c[:n] evaluated at points[j] for j < m (Horner, four points interleaved)."""
    p = ctx[0]
    j = 0
    while j + 4 <= m:
        x0, x1, x2, x3 = points[j], points[j + 1], points[j + 2], points[j + 3]
        r0 = r1 = r2 = r3 = np.int64(0)
        for i in range(n - 1, -1, -1):
            ci = c[i]
            r0 = addmod(mulmod_ctx(r0, x0, ctx), ci, p)
            r1 = addmod(mulmod_ctx(r1, x1, ctx), ci, p)
            r2 = addmod(mulmod_ctx(r2, x2, ctx), ci, p)
            r3 = addmod(mulmod_ctx(r3, x3, ctx), ci, p)
        out[j], out[j + 1], out[j + 2], out[j + 3] = r0, r1, r2, r3
        j += 4
    while j < m:
        x0 = points[j]
        r0 = np.int64(0)
        for i in range(n - 1, -1, -1):
            r0 = addmod(mulmod_ctx(r0, x0, ctx), c[i], p)
        out[j] = r0
        j += 1


@njit
def poly_eval(c, points, out, p):
    """Multipoint evaluation: ``out[j] = c(points[j])`` (O(len(c) * len(points)) Horner).

    Parameters
    ----------
    c : ndarray of shape (n,), int64
        IN. Coefficients, lowest degree first.
    points : ndarray of shape (m,), int64
        IN. Evaluation points in [0, p).
    out : ndarray of shape (m,), int64
        OUT.
    """
    eval_many_ctx(c, c.shape[0], points, points.shape[0], out, field_context(p))


@njit
def poly_eval_rows(rows, point, out, p):
    """Evaluate many polynomials at one point: ``out[k] = sum_i rows[k, i] point**i``.

    Parameters
    ----------
    rows : ndarray of shape (K, n), int64
        IN. One polynomial per row, lowest degree first.
    point : int
        Evaluation point in [0, p).
    out : ndarray of shape (K,), int64
        OUT.
    """
    ctx = field_context(p)
    for k in range(rows.shape[0]):
        r = np.int64(0)
        for i in range(rows.shape[1] - 1, -1, -1):
            r = addmod(mulmod_ctx(r, point, ctx), rows[k, i], p)
        out[k] = r


@njit
def poly_from_roots(roots, out, p):
    """Monic polynomial with the given roots: ``out[:m + 1] = prod_j (x - roots[j])``.

    Built bottom-up as a product tree (schoolbook leaves of ``KARATSUBA_THRESHOLD`` roots, then
    pairwise Karatsuba products), O(M(m) log m).

    Parameters
    ----------
    roots : ndarray of shape (m,), int64
        IN. Roots in [0, p) (repeats allowed).
    out : ndarray of shape (>= m + 1,), int64
        OUT.
    """
    ctx = field_context(p)
    m = roots.shape[0]
    leaf = KARATSUBA_THRESHOLD
    count = max((m + leaf - 1) // leaf, 1)
    # node j of a level covers roots [lo[j], lo[j + 1]) and sits at buf[lo[j] + j :]
    lo = np.empty(count + 1, dtype=np.int64)
    for j in range(count):
        lo[j] = min(j * leaf, m)
    lo[count] = m
    cur = np.zeros(m + count + 1, dtype=np.int64)
    nxt = np.zeros(m + count + 1, dtype=np.int64)
    for j in range(count):
        o = lo[j] + j
        cur[o] = 1
        for r in range(lo[j], lo[j + 1]):
            k = r - lo[j]
            neg = negmod(roots[r], p)
            cur[o + k + 1] = cur[o + k]
            for i in range(k, 0, -1):
                cur[o + i] = addmod(cur[o + i - 1], mulmod_ctx(neg, cur[o + i], ctx), p)
            cur[o] = mulmod_ctx(neg, cur[o], ctx)
    while count > 1:
        half = (count + 1) // 2
        for j in range(half):
            a0 = lo[2 * j] + 2 * j
            na = lo[2 * j + 1] - lo[2 * j] + 1
            o = lo[2 * j] + j
            if 2 * j + 1 < count:
                b0 = lo[2 * j + 1] + 2 * j + 1
                nb = lo[2 * j + 2] - lo[2 * j + 1] + 1
                mul_general(cur[a0:a0 + na], na, cur[b0:b0 + nb], nb, nxt[o:o + na + nb - 1], ctx)
            else:
                copy_into(nxt[o:], cur[a0:], na)
        for j in range(half):
            lo[j] = lo[2 * j]
        lo[half] = m
        count = half
        cur, nxt = nxt, cur
    copy_into(out, cur, m + 1)
