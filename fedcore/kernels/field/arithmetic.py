"""Arithmetic in the prime field F_p, for any prime p < 2**62 passed as an argument.

Field elements are int64 values in [0, p). Products are exact: the 64 x 64 -> 128-bit product is
formed by an LLVM intrinsic (one ``mul`` instruction on x86-64) and reduced by Barrett's method
(Menezes, van Oorschot and Vanstone, Handbook of Applied Cryptography, Alg. 14.42) with constants
derived from p, or by folding for the Mersenne prime 2**61 - 1 (the default SCMA field). No floating
point is involved, so every bit is exact for any p < 2**62.

Calls between kernels pass ``np.int64(0)`` rather than a bare ``0`` (and ``np.bool_`` flags):
Numba compiles a separate specialisation for every literal argument, which multiplies compile time.

Kernels that multiply many times take ``p`` and build a *field context* once with
:func:`field_context`; the context is a tuple ``(p, mu, s, r64, kind)`` of int64 that the inline
helpers (``mulmod_ctx``, ``mac``, ``reduce_wide``) read. Sums of products are accumulated lazily in
128 bits (``mac``) and reduced once per ``accumulation_limit(ctx)`` terms.
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ..jit import njit

__all__ = [
    "MERSENNE_61", "MAX_PRIME", "is_prime", "field_context", "mulmod", "mulmod_ctx", "powmod",
    "powmod_ctx", "inverse", "batch_inverse", "batch_inverse_ctx", "addmod", "submod", "negmod",
    "mac",
    "reduce_wide", "accumulation_limit", "dot_forward", "dot_reverse", "sub_scaled_into",
    "add_into", "sub_into", "sum_messages",
    "scale_into", "mul_into",
]

MERSENNE_61 = (1 << 61) - 1
"""The default SCMA prime 2**61 - 1 (products reduce by shifts and adds)."""
MAX_PRIME = 1 << 62
"""Exclusive upper bound on the primes the kernels accept."""

KIND_GENERIC = 0
KIND_MERSENNE_61 = 1
KIND_SMALL = 2  # p < 2**31: products fit in 62 bits; 64-bit Barrett, 128-bit sums never overflow

_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def is_prime(n):
    """Deterministic Miller-Rabin primality test for n < 3.18e23 (pure Python).

    The first twelve primes as bases are a proven witness set for every n below
    318665857834031151167461 (Sorenson and Webster, 2015), which covers every p < 2**62 the
    kernels accept.
    """
    n = int(n)
    if n < 2:
        return False
    for q in _MR_BASES:
        if n % q == 0:
            return n == q
    d, r = n - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for a in _MR_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


@intrinsic
def _mulhi(typingctx, a, b):
    """High 64 bits of the 128-bit product of two uint64 (zext, mul i128, lshr 64, trunc)."""
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        i128 = ir.IntType(128)
        prod = builder.mul(builder.zext(args[0], i128), builder.zext(args[1], i128))
        return builder.trunc(builder.lshr(prod, ir.Constant(i128, 64)), ir.IntType(64))

    return sig, codegen


@njit
def field_context(p):
    """Constants for arithmetic mod p.

    Parameters
    ----------
    p : int64
        Odd prime, 3 <= p < 2**62 (not checked here).

    Returns
    -------
    ctx : tuple of five int64
        ``(p, mu, s, r64, kind)`` where s is the bit length of p, ``mu = floor(2**(2s) / p)`` is
        Barrett's constant (< 2**63), ``r64 = 2**64 mod p`` and ``kind`` selects the reduction
        (0 generic Barrett, 1 Mersenne 2**61 - 1, 2 small p < 2**31).
    """
    s = 0
    while (np.int64(1) << s) <= p:
        s += 1
    # Long division of 2**(2s) by p, one bit at a time; r < p < 2**62 so 2r never overflows.
    r = np.int64(1)
    mu = np.int64(0)
    for _ in range(2 * s):
        r = r * 2
        mu = mu * 2
        if r >= p:
            r -= p
            mu += 1
    r64 = np.int64(1)
    for _ in range(64):
        r64 = r64 * 2
        if r64 >= p:
            r64 -= p
    kind = KIND_GENERIC
    if p == MERSENNE_61:
        kind = KIND_MERSENNE_61
    elif s <= 31:
        kind = KIND_SMALL
    return (np.int64(p), mu, np.int64(s), r64, np.int64(kind))


@njit
def _fold_mersenne61(hi, lo):
    """x mod (2**61 - 1) for the 128-bit x = hi * 2**64 + lo (uint64 halves)."""
    m = np.uint64(MERSENNE_61)
    t = (lo & m) + ((lo >> np.uint64(61)) | ((hi << np.uint64(3)) & m)) + (hi >> np.uint64(58))
    r = (t & m) + (t >> np.uint64(61))
    if r >= m:
        r -= m
    return np.int64(r)


@njit
def mulmod_ctx(a, b, ctx):
    """a * b mod p for int64 a, b in [0, p); ``ctx`` from :func:`field_context`."""
    ua = np.uint64(a)
    ub = np.uint64(b)
    lo = ua * ub
    if ctx[4] == KIND_SMALL:
        # p < 2**31: x = ab < 2**62 and Barrett's quotient estimate fits in 64 bits
        up = np.uint64(ctx[0])
        q = ((lo >> np.uint64(ctx[2] - 1)) * np.uint64(ctx[1])) >> np.uint64(ctx[2] + 1)
        r = lo - q * up
        if r >= up:
            r -= up
        if r >= up:
            r -= up
        return np.int64(r)
    hi = _mulhi(ua, ub)
    if ctx[4] == KIND_MERSENNE_61:
        return _fold_mersenne61(hi, lo)
    # Barrett (HAC Alg. 14.42 with base 2, k = s): q = floor(floor(x / 2**(s-1)) * mu / 2**(s+1)).
    up = np.uint64(ctx[0])
    sm1 = np.uint64(ctx[2] - 1)
    sp1 = np.uint64(ctx[2] + 1)
    x1 = (lo >> sm1) | (hi << (np.uint64(64) - sm1))
    umu = np.uint64(ctx[1])
    q = ((x1 * umu) >> sp1) | (_mulhi(x1, umu) << (np.uint64(64) - sp1))
    r = lo - q * up  # the true remainder is below 3p < 2**64, so wrap-around arithmetic is exact
    if r >= up:
        r -= up
    if r >= up:
        r -= up
    return np.int64(r)


@njit
def addmod(a, b, p):
    """a + b mod p for int64 a, b in [0, p)."""
    c = a + b
    if c >= p:
        c -= p
    return c


@njit
def submod(a, b, p):
    """a - b mod p for int64 a, b in [0, p)."""
    c = a - b
    if c < 0:
        c += p
    return c


@njit
def negmod(a, p):
    """-a mod p for int64 a in [0, p)."""
    return p - a if a != 0 else a


@njit
def mac(hi, lo, a, b):
    """Add the 128-bit product a * b (int64 in [0, p)) to the accumulator (hi, lo) of uint64."""
    ua = np.uint64(a)
    ub = np.uint64(b)
    pl = ua * ub
    lo2 = lo + pl
    hi2 = hi + _mulhi(ua, ub) + np.uint64(lo2 < pl)
    return hi2, lo2


@njit
def reduce_wide(hi, lo, ctx):
    """(hi * 2**64 + lo) mod p for a 128-bit accumulator of uint64 halves."""
    if ctx[4] == KIND_MERSENNE_61:
        return _fold_mersenne61(hi, lo)
    up = np.uint64(ctx[0])
    h = np.int64(hi % up)
    l_ = np.int64(lo % up)
    return addmod(mulmod_ctx(h, ctx[3], ctx), l_, ctx[0])


@njit
def accumulation_limit(ctx):
    """How many products of elements of [0, p) a 128-bit accumulator can sum without overflow."""
    if ctx[4] == KIND_MERSENNE_61:
        return np.int64(64)  # 64 * (2**61 - 2)**2 < 2**128
    spare = 128 - 2 * ctx[2]  # each product is below p**2 < 2**(2s)
    if spare >= 62:
        return np.int64(1) << 62
    return np.int64(1) << spare


@njit
def _dot_small(a, ao, b, bo, step, n, ctx):
    """``_dot`` for p < 2**31: every product is below 2**62, so its low and high 32-bit halves
    are summed in two plain uint64 sums (no carries; exact for n < 2**32), which pipelines well."""
    m32 = np.uint64(0xFFFFFFFF)
    s_lo = np.uint64(0)
    s_hi = np.uint64(0)
    if step == 1:
        for k in range(n):
            pl = np.uint64(a[ao + k]) * np.uint64(b[bo + k])
            s_lo += pl & m32
            s_hi += pl >> np.uint64(32)
    else:
        for k in range(n):
            pl = np.uint64(a[ao + k]) * np.uint64(b[bo - k])
            s_lo += pl & m32
            s_hi += pl >> np.uint64(32)
    up = np.uint64(ctx[0])
    two32 = np.int64((np.uint64(1) << np.uint64(32)) % up)
    return addmod(mulmod_ctx(np.int64(s_hi % up), two32, ctx), np.int64(s_lo % up), ctx[0])


@njit
def _dot(a, ao, b, bo, step, n, ctx):
    """sum_{i<n} a[ao + i] * b[bo + step * i] mod p, step = +1 or -1.

    Four independent 128-bit accumulators break the carry dependency between consecutive terms
    (about three times the throughput of a single chain); each is reduced after at most
    ``accumulation_limit`` terms.
    """
    if ctx[4] == KIND_SMALL:
        return _dot_small(a, ao, b, bo, step, n, ctx)
    lim = accumulation_limit(ctx)
    p = ctx[0]
    total = np.int64(0)
    i = 0
    while i < n:
        stop = min(n, i + 4 * min(lim, np.int64(1) << 40))
        h0 = l0 = h1 = l1 = h2 = l2 = h3 = l3 = np.uint64(0)
        k = i
        while k + 4 <= stop:
            h0, l0 = mac(h0, l0, a[ao + k], b[bo + step * k])
            h1, l1 = mac(h1, l1, a[ao + k + 1], b[bo + step * (k + 1)])
            h2, l2 = mac(h2, l2, a[ao + k + 2], b[bo + step * (k + 2)])
            h3, l3 = mac(h3, l3, a[ao + k + 3], b[bo + step * (k + 3)])
            k += 4
        while k < stop:
            h0, l0 = mac(h0, l0, a[ao + k], b[bo + step * k])
            k += 1
        r = addmod(reduce_wide(h0, l0, ctx), reduce_wide(h1, l1, ctx), p)
        r = addmod(r, addmod(reduce_wide(h2, l2, ctx), reduce_wide(h3, l3, ctx), p), p)
        total = addmod(total, r, p)
        i = stop
    return total


@njit
def dot_forward(a, ao, b, bo, n, ctx):
    """sum_{i<n} a[ao + i] * b[bo + i] mod p (int64 arrays of field elements)."""
    return _dot(a, ao, b, bo, np.int64(1), n, ctx)


@njit
def dot_reverse(a, ao, b, bo, n, ctx):
    """sum_{i<n} a[ao + i] * b[bo - i] mod p (a convolution term)."""
    return _dot(a, ao, b, bo, np.int64(-1), n, ctx)


@njit
def sub_scaled_into(y, c, x, n, ctx):
    """y[i] = y[i] - c * x[i] mod p for i < n (an axpy step of elimination-type kernels).

    The reduction is chosen once, outside the loop, so the loop body has no branch on the kind
    of prime and LLVM can vectorise it (64-bit Barrett for p < 2**31 runs about 5 times faster
    that way). Pass slices (``y[k:k + n]``) rather than offsets.
    """
    p = ctx[0]
    uc = np.uint64(c)
    if ctx[4] == KIND_SMALL:
        up = np.uint64(p)
        sm1 = np.uint64(ctx[2] - 1)
        sp1 = np.uint64(ctx[2] + 1)
        mu = np.uint64(ctx[1])
        for i in range(n):
            lo = uc * np.uint64(x[i])
            r = lo - (((lo >> sm1) * mu) >> sp1) * up
            r = r - up if r >= up else r
            r = r - up if r >= up else r
            t = y[i] - np.int64(r)
            y[i] = t + p if t < 0 else t
    elif ctx[4] == KIND_MERSENNE_61:
        for i in range(n):
            ub = np.uint64(x[i])
            t = y[i] - _fold_mersenne61(_mulhi(uc, ub), uc * ub)
            y[i] = t + p if t < 0 else t
    else:
        for i in range(n):
            y[i] = submod(y[i], mulmod_ctx(c, x[i], ctx), p)


@njit
def mulmod(a, b, p):
    """a * b mod p (convenience form; hot loops build the context once and use ``mulmod_ctx``)."""
    return mulmod_ctx(a, b, field_context(p))


@njit
def powmod_ctx(a, e, ctx):
    """a**e mod p by left-to-right square and multiply; e >= 0 (int64)."""
    result = np.int64(1) % ctx[0]
    if e == 0:
        return result
    top = 0
    while (e >> (top + 1)) > 0:
        top += 1
    for bit in range(top, -1, -1):
        result = mulmod_ctx(result, result, ctx)
        if (e >> bit) & 1:
            result = mulmod_ctx(result, a, ctx)
    return result


@njit
def powmod(a, e, p):
    """a**e mod p for int64 a in [0, p), e >= 0."""
    return powmod_ctx(a, e, field_context(p))


@njit
def inverse(a, p):
    """a**-1 mod p by the extended Euclidean algorithm; raises ZeroDivisionError for a = 0.

    The Bezout coefficient stays within (-p, p), so int64 never overflows for p < 2**62.
    """
    if a == 0:
        raise ZeroDivisionError("0 has no inverse modulo p")
    t = np.int64(0)
    new_t = np.int64(1)
    r = np.int64(p)
    new_r = np.int64(a)
    while new_r != 0:
        q = r // new_r
        t, new_t = new_t, t - q * new_t
        r, new_r = new_r, r - q * new_r
    if t < 0:
        t += p
    return t


@njit
def batch_inverse_ctx(a, n, out, ctx):
    """out[:n] = a[:n]**-1 mod p by Montgomery's trick (3(n-1) products and one inversion).

    Returns the index of the first zero in ``a[:n]`` (nothing useful is written then), or -1.
    ``out`` may be ``a`` itself.
    """
    p = ctx[0]
    if n == 0:
        return -1
    prefix = np.empty(n, dtype=np.int64)
    acc = np.int64(1)
    for i in range(n):
        if a[i] == 0:
            return i
        prefix[i] = acc
        acc = mulmod_ctx(acc, a[i], ctx)
    inv = inverse(acc, p)  # inverse of the product of all entries
    for i in range(n - 1, -1, -1):
        ai = a[i]
        out[i] = mulmod_ctx(inv, prefix[i], ctx)
        inv = mulmod_ctx(inv, ai, ctx)
    return -1


@njit
def batch_inverse(a, out, p):
    """Invert every entry of ``a``.

    Parameters
    ----------
    a : ndarray of shape (n,), int64
        IN. Nonzero field elements in [1, p).
    out : ndarray of shape (n,), int64
        OUT. ``out[i] = a[i]**-1 mod p``; may alias ``a``.
    p : int
        Odd prime below 2**62.

    Raises ZeroDivisionError if some entry is zero.
    """
    bad = batch_inverse_ctx(a, a.shape[0], out, field_context(p))
    if bad >= 0:
        raise ZeroDivisionError("batch_inverse: an entry is 0")


@njit
def add_into(acc, x, p):
    """acc[i] = acc[i] + x[i] mod p, in place (int64 arrays of equal shape, entries in [0, p))."""
    a = acc.reshape(-1)
    b = x.reshape(-1)
    for i in range(a.shape[0]):
        a[i] = addmod(a[i], b[i], p)


@njit
def sum_messages(messages, p, out):
    """OUT ``out`` int64 (m,): sum mod p of the int64 or uint64 arrays of length m in
    ``messages`` (a typed List of them, or their rows stacked in a 2-D array). Returns -1, or the
    first message holding an entry outside [0, p) (then ``out`` is unspecified); needs p < 2^62.

    Entries are read as unsigned (a negative int64 or a uint64 >= 2^63 is then >= p) and summed
    in uint64, ``g`` messages at a time with ``(g + 1) p <= 2^64 - 1`` and ``g <= 7``; the
    partial sums, below 8p, are reduced by subtracting 4p, 2p and p where they fit. No division,
    no branch in the inner loop, no copy of the messages.
    """
    m = out.shape[0]
    pu = np.uint64(p)
    group = min(np.uint64(7), np.uint64(0xFFFFFFFFFFFFFFFF) // pu - np.uint64(1))
    p2, p4 = pu * np.uint64(2), pu * np.uint64(4)  # 4p < 2^64 for p < 2^62
    acc = np.zeros(m, dtype=np.uint64)
    bad = False
    for r in range(len(messages)):
        row = messages[r]
        for i in range(m):
            u = np.uint64(row[i])
            bad |= u >= pu
            acc[i] += u
        if (r + 1) % group == 0 or r == len(messages) - 1:
            for i in range(m):
                a = acc[i]
                if group >= np.uint64(4):
                    a -= p4 * np.uint64(a >= p4)
                a -= p2 * np.uint64(a >= p2)
                a -= pu * np.uint64(a >= pu)
                acc[i] = a
    if bad:
        for r in range(len(messages)):
            for i in range(m):
                if np.uint64(messages[r][i]) >= pu:
                    return r
    for i in range(m):
        out[i] = np.int64(acc[i])
    return -1


@njit
def sub_into(acc, x, p):
    """acc[i] = acc[i] - x[i] mod p, in place."""
    a = acc.reshape(-1)
    b = x.reshape(-1)
    for i in range(a.shape[0]):
        a[i] = submod(a[i], b[i], p)


@njit
def scale_into(acc, c, p):
    """acc[i] = c * acc[i] mod p, in place (c in [0, p))."""
    ctx = field_context(p)
    a = acc.reshape(-1)
    for i in range(a.shape[0]):
        a[i] = mulmod_ctx(a[i], c, ctx)


@njit
def mul_into(acc, x, p):
    """acc[i] = acc[i] * x[i] mod p, in place (int64 arrays of equal size, entries in [0, p))."""
    ctx = field_context(p)
    a = acc.reshape(-1)
    b = x.reshape(-1)
    for i in range(a.shape[0]):
        a[i] = mulmod_ctx(a[i], b[i], ctx)
