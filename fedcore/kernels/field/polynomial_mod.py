"""Polynomials over F_p modulo a fixed monic f: series inverse, products and powers mod f.

Reduction modulo f of degree d >= ``NEWTON_THRESHOLD`` uses a precomputed inverse of the reversed
modulus (Newton iteration), so a product modulo f costs three products of size d instead of a
quadratic long division; this is what makes the equal-degree root finder in ``reed_solomon.py``
fast. Polynomials are int64 coefficient arrays, lowest degree first, as in ``polynomial.py``.
"""
import numpy as np

from ..arrays import copy_into
from ..jit import njit
from .arithmetic import (addmod, dot_reverse, field_context, inverse, mulmod_ctx, negmod, submod)
from .polynomial import (NEWTON_THRESHOLD, degree, karatsuba_workspace, mul_equal,
                         rem_monic_inplace)

__all__ = ["series_inverse_into", "series_inverse", "modulus_inverse", "mulmod_poly",
           "mul_linear_mod", "powmod_into", "poly_powmod"]


@njit
def series_inverse_into(g, n, out, ctx):
    """out[:n] = g**-1 mod x**n (g[0] != 0, g has at least n entries) by Newton iteration.

    Each doubling k -> 2k uses g_inv <- g_inv - x**k g_inv * [(g g_inv) div x**k] (three
    length-k products); below ``NEWTON_THRESHOLD`` a schoolbook recurrence is used.
    """
    p = ctx[0]
    g0_inv = inverse(g[0], p)
    chain = np.empty(64, dtype=np.int64)  # precisions n, ceil(n/2), ... above the threshold
    n_chain = 0
    base = n
    while base > NEWTON_THRESHOLD:
        chain[n_chain] = base
        n_chain += 1
        base = base - base // 2
    out[0] = g0_inv
    for k in range(1, base):
        s = dot_reverse(g, np.int64(1), out, k - 1, k, ctx)
        out[k] = mulmod_ctx(negmod(s, p), g0_inv, ctx)
    if n_chain == 0:
        return
    w = np.empty(karatsuba_workspace(n), dtype=np.int64)
    prod = np.empty(2 * n, dtype=np.int64)
    pad = np.empty(n, dtype=np.int64)
    e_hi = np.empty(n, dtype=np.int64)
    k = base
    for idx in range(n_chain - 1, -1, -1):
        k2 = chain[idx]  # k < k2 <= 2k
        # e_hi = coefficients k .. k2-1 of g[:k2] * out[:k] (its low k coefficients are 1, 0, ...)
        mul_equal(g, out, k, prod, w, np.bool_(False), ctx)
        prod[2 * k - 1] = 0  # the product has 2k - 1 coefficients; k2 may reach 2k
        for i in range(k2 - k):
            e_hi[i] = prod[k + i]
        pad[:k] = 0
        copy_into(pad, g[k:], k2 - k)
        mul_equal(pad, out, k, prod, w, np.bool_(False), ctx)
        for i in range(k2 - k):
            e_hi[i] = addmod(e_hi[i], prod[i], p)
        e_hi[k2 - k:k] = 0
        mul_equal(e_hi, out, k, prod, w, np.bool_(False), ctx)
        for i in range(k2 - k):
            out[k + i] = negmod(prod[i], p)
        k = k2


@njit
def series_inverse(g, n, out, p):
    """Power-series inverse: ``out[:n] = g**-1 mod x**n`` (g[0] must be nonzero).

    Parameters
    ----------
    g : ndarray of shape (>= n,), int64
        IN. Series coefficients.
    n : int
        Precision.
    out : ndarray of shape (>= n,), int64
        OUT.
    """
    if g[0] == 0:
        raise ZeroDivisionError("series_inverse: g[0] is 0")
    series_inverse_into(g, n, out, field_context(p))


@njit(inline="always")  # (powmod_into is its only caller: compiled once, inside it)
def modulus_inverse(h, d, hinv, ctx):
    """hinv[:d-1] = rev(h)**-1 mod x**(d-1) for the monic h of degree d (for ``mulmod_poly``)."""
    if d < NEWTON_THRESHOLD:
        return
    rev = np.empty(d - 1, dtype=np.int64)
    for i in range(d - 1):
        rev[i] = h[d - i]
    series_inverse_into(rev, d - 1, hinv, ctx)


@njit
def mulmod_poly(x, y, square, h, d, hinv, out, P, T, Q, W, ctx):
    """out[:d] = x[:d] * y[:d] mod h, for the monic h of degree d >= 1.

    Buffers: P, Q of length >= 2d, T of length >= d, W of length ``karatsuba_workspace(d)``;
    ``hinv`` from ``modulus_inverse``. With rev(.) the coefficient reversal, the quotient of the
    product A by h is rev(rev(A) rev(h)**-1 mod x**(d-1)) and the remainder is
    (A - quo * h) mod x**d.
    """
    p = ctx[0]
    mul_equal(x, y, d, P, W, square, ctx)
    if d < NEWTON_THRESHOLD:
        rem_monic_inplace(P, 2 * d - 1, h, d, ctx)
        copy_into(out, P, d)
        return
    n = d - 1
    for i in range(n):
        T[i] = P[2 * d - 2 - i]
    mul_equal(T, hinv, n, Q, W, np.bool_(False), ctx)
    for i in range(n):
        T[i] = Q[n - 1 - i]
    T[n] = 0
    mul_equal(T, h, d, Q, W, np.bool_(False), ctx)
    for i in range(d):
        out[i] = submod(P[i], Q[i], p)


@njit
def mul_linear_mod(r, a, h, d, ctx):
    """r[:d] = r[:d] * (x + a) mod h in place (h monic of degree d), in O(d)."""
    p = ctx[0]
    top = r[d - 1]
    for i in range(d - 1, 0, -1):
        r[i] = addmod(r[i - 1], mulmod_ctx(a, r[i], ctx), p)
    r[0] = mulmod_ctx(a, r[0], ctx)
    if top != 0:
        for i in range(d):
            r[i] = submod(r[i], mulmod_ctx(top, h[i], ctx), p)


@njit
def powmod_into(base, linear_shift, e, h, d, out, ctx):
    """out[:d] = base**e mod h for the monic h of degree d >= 1.

    If ``linear_shift >= 0`` the base is x + linear_shift and ``base`` is ignored (each multiply
    step is then O(d)); otherwise ``base[:d]`` holds a polynomial already reduced modulo h.
    """
    P = np.empty(2 * d, dtype=np.int64)
    Q = np.empty(2 * d, dtype=np.int64)
    T = np.empty(d, dtype=np.int64)
    W = np.empty(karatsuba_workspace(d), dtype=np.int64)
    hinv = np.zeros(max(d - 1, 1), dtype=np.int64)
    modulus_inverse(h, d, hinv, ctx)
    r = np.zeros(d, dtype=np.int64)
    r[0] = 1
    top = -1
    while (e >> (top + 1)) > 0:
        top += 1
    for bit in range(top, -1, -1):
        mulmod_poly(r, r, np.bool_(True), h, d, hinv, r, P, T, Q, W, ctx)
        if (e >> bit) & 1:
            if linear_shift >= 0:
                if d == 1:
                    # modulo x + h[0], x is -h[0]
                    r[0] = mulmod_ctx(r[0], addmod(linear_shift, negmod(h[0], ctx[0]),
                                                   ctx[0]), ctx)
                else:
                    mul_linear_mod(r, linear_shift, h, d, ctx)
            else:
                mulmod_poly(r, base, np.bool_(False), h, d, hinv, r, P, T, Q, W, ctx)
    copy_into(out, r, d)


@njit
def poly_powmod(base, e, f, out, p):
    """base**e mod f.

    Parameters
    ----------
    base : ndarray of shape (nb,), int64
        IN. Any polynomial (reduced modulo f first).
    e : int
        Exponent, 0 <= e < 2**63.
    f : ndarray of shape (nf,), int64
        IN. Modulus of degree d >= 1 (need not be monic).
    out : ndarray of shape (>= d,), int64
        OUT. ``out[:d]`` receives the remainder.
    """
    ctx = field_context(p)
    d = degree(f, f.shape[0])
    if d < 1:
        raise ZeroDivisionError("poly_powmod: the modulus must have degree >= 1")
    inv_lead = inverse(f[d], p)
    h = np.empty(d + 1, dtype=np.int64)
    for i in range(d + 1):
        h[i] = mulmod_ctx(f[i], inv_lead, ctx)
    nb = base.shape[0]
    b = np.zeros(max(nb, d), dtype=np.int64)
    copy_into(b, base, nb)
    rem_monic_inplace(b, nb, h, d, ctx)
    powmod_into(b, np.int64(-1), e, h, d, out, ctx)
