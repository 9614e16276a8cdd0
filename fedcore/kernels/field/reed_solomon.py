"""Reed-Solomon syndrome decoding over F_p, the server side of SCMA ([MUFC] Alg. 2).

A sparse vector with nonzero values q_j at distinct nonzero points X_j is summarised by its
power-sum syndromes S_i = sum_j q_j X_j**(i-1), i = 1..s ([MUFC] Alg. 2 line 2). From 2t syndromes
of a vector with at most t nonzeros the server recovers it exactly ([MUFC] Alg. 2 line 3,
[MUFC] Appendix J):

1. ``berlekamp_massey``: the shortest linear recurrence, whose connection polynomial is the error
   locator Lambda(x) = prod_j (1 - X_j x);
2. ``find_roots``: the roots of x**L Lambda(1/x) = prod_j (x - X_j), i.e. the points X_j, by
   equal-degree splitting (Cantor-Zassenhaus / Rabin, by r-th power residue classes) after
   checking that the polynomial divides x**p - x (distinct roots, all in F_p);
3. ``forney_magnitudes``: q_j = -X_j Omega(X_j**-1) / Lambda'(X_j**-1) with
   Omega = S(x) Lambda(x) mod x**L, or ``solve_transposed_vandermonde``: the O(m**2) Bjorck-Pereyra
   solution of sum_j y_j X_j**i = b_i for many right-hand sides at once.

Kernels take p (odd prime < 2**62) and report failures by return codes; they never guess.
"""
import numpy as np

from ..arrays import copy_into
from ..jit import njit
from .arithmetic import (addmod, batch_inverse_ctx, dot_reverse, field_context, inverse, mulmod_ctx,
                    negmod, powmod_ctx, reduce_wide, sub_scaled_into, submod, _mulhi,
                    accumulation_limit)
from .polynomial import degree, eval_many_ctx, gcd_into
from .polynomial_mod import mul_linear_mod, powmod_into

__all__ = [
    "power_sums", "berlekamp_massey", "find_roots", "forney_magnitudes",
    "solve_transposed_vandermonde", "split_order", "ROOTS_NOT_SPLIT", "ROOTS_NO_SPLIT_FOUND",
]

ROOTS_NOT_SPLIT = -1
"""``find_roots`` status: the polynomial is zero or is not a product of distinct linear factors."""
ROOTS_NO_SPLIT_FOUND = -2
"""``find_roots`` status: random splitting failed too often (probability below 2**-100)."""

_MAX_SPLIT_ATTEMPTS = 200
SPLIT_ORDER_LIMIT = 32
"""Largest number of residue classes one splitting step of ``find_roots`` separates."""


@njit
def power_sums(points, weights, start, out, p):
    """Weighted power sums (syndromes) of several channels over the same points.

    ``out[c, i] = sum_j weights[c, j] * points[j]**(start + i)``, i.e. S_{start+i+1} of channel c
    ([MUFC] Alg. 2 line 2 without the mask). Cost O(n * K * (C + 1)) with lazy 128-bit
    accumulation.

    Parameters
    ----------
    points : ndarray of shape (K,), int64
        IN. Evaluation points X_j in [0, p).
    weights : ndarray of shape (C, K), int64
        IN. Values q_j (or q_j * c_j for coordinate channels) in [0, p), one row per channel.
    start : int
        Exponent of the first output column (0 gives S_1).
    out : ndarray of shape (C, n), int64
        OUT. Overwritten.
    p : int
        Odd prime below 2**62.
    """
    ctx = field_context(p)
    n_channels, n_points = weights.shape
    n = out.shape[1]
    # Powers V[j, i] = X_j**(start + i) once, then each channel is a sum of scaled rows kept in
    # 128-bit accumulators (reduced every ``accumulation_limit - 1`` rows): no per-entry reduction.
    V = np.empty((n_points, n), dtype=np.int64)
    for j in range(n_points):
        v = powmod_ctx(points[j], start, ctx)
        for i in range(n):
            V[j, i] = v
            v = mulmod_ctx(v, points[j], ctx)
    hi = np.empty(n, dtype=np.uint64)
    lo = np.empty(n, dtype=np.uint64)
    lim = accumulation_limit(ctx) - 1
    for c in range(n_channels):
        hi[:] = 0
        lo[:] = 0
        since = 0
        for j in range(n_points):
            if since == lim:
                for i in range(n):
                    lo[i] = np.uint64(reduce_wide(hi[i], lo[i], ctx))
                    hi[i] = 0
                since = 0
            ua = np.uint64(weights[c, j])
            for i in range(n):
                ub = np.uint64(V[j, i])
                pl = ua * ub
                t = lo[i] + pl
                lo[i] = t
                hi[i] += _mulhi(ua, ub) + np.uint64(t < pl)
            since += 1
        for i in range(n):
            out[c, i] = reduce_wide(hi[i], lo[i], ctx)


@njit
def berlekamp_massey(s, lam, p):
    """Shortest linear recurrence of a sequence (Massey, 1969): the error locator of [MUFC] Alg. 2
    line 3.

    Parameters
    ----------
    s : ndarray of shape (n,), int64
        IN. Sequence s_0..s_{n-1} in [0, p) (the syndromes S_1..S_n).
    lam : ndarray of shape (>= n + 1,), int64
        OUT. Connection polynomial C(x) = 1 + c_1 x + ... + c_L x**L in ``lam[:L + 1]`` (zeros
        after), with s_k + sum_{i=1..L} c_i s_{k-i} = 0 for L <= k < n. For syndromes of a vector
        with m <= n/2 nonzeros, C = Lambda(x) = prod_j (1 - X_j x) and L = m.
    p : int
        Odd prime below 2**62.

    Returns
    -------
    L : int
        Linear complexity (length of the shortest recurrence); deg C <= L.
    """
    ctx = field_context(p)
    n = s.shape[0]
    # C, B and a spare row live in one buffer selected by rotating indices: swapping array
    # variables inside the loop makes Numba's update loops several times slower. ``lens`` holds
    # each row's length (entries beyond it are zero).
    buf = np.zeros((3, n + 1), dtype=np.int64)
    lens = np.zeros(3, dtype=np.int64)
    ic, ib, it = 0, 1, 2
    buf[ic, 0] = 1
    buf[ib, 0] = 1
    lens[ic] = 1
    lens[ib] = 1
    L = np.int64(0)
    m = 1
    inv_b = np.int64(1)
    for k in range(n):
        d = addmod(s[k], dot_reverse(buf[ic], np.int64(1), s, k - 1, L, ctx), p)
        if d == 0:
            m += 1
            continue
        coef = mulmod_ctx(d, inv_b, ctx)
        lc = lens[ic]
        lb = lens[ib]
        end = max(lc, lb + m)
        change = 2 * L <= k  # Massey's length change: T = C - coef x**m B, B <- C, C <- T
        tgt = ic
        if change:
            tgt = it
            copy_into(buf[it], buf[ic], lc)
            buf[it, lc:max(end, lens[it])] = 0
        sub_scaled_into(buf[tgt, m:m + lb], coef, buf[ib, :lb], lb, ctx)
        Z = buf[tgt]
        while end > 1 and Z[end - 1] == 0:
            end -= 1
        lens[tgt] = end
        if change:
            ic, ib, it = it, ic, ib
            L = k + 1 - L
            inv_b = inverse(d, p)
            m = 1
        else:
            m += 1
    lam[:] = 0
    copy_into(lam, buf[ic], L + 1)
    return L


@njit
def _splitmix64(state):
    """One step of SplitMix64: returns (new state, 64-bit output)."""
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return state, z ^ (z >> np.uint64(31))


@njit
def _div_exact_monic(q, k, u, du, v, ctx):
    """v[:k - du + 1] = q[:k + 1] / u[:du + 1] for monic u dividing q (long division)."""
    work = q[:k + 1].copy()
    for i in range(k - du, -1, -1):
        c = work[i + du]
        v[i] = c
        if c != 0:
            sub_scaled_into(work[i:i + du], c, u, du, ctx)


@njit
def split_order(p, limit):
    """Largest r <= limit dividing p - 1: a splitting step separates roots into the r classes of
    r-th power residues (r = 2 is Rabin's quadratic-character split)."""
    for r in range(min(limit, p - 1), 1, -1):
        if (p - 1) % r == 0:
            return r
    return 2


@njit
def _roots_of_unity(r, ctx):
    """The r-th roots of unity 1, z, .., z**(r-1) for a primitive r-th root z (r | p - 1)."""
    p = ctx[0]
    out = np.empty(r, dtype=np.int64)
    y = np.int64(2)
    while True:
        z = powmod_ctx(y % p, (p - 1) // r, ctx)
        primitive = True
        for q in range(2, r + 1):  # z**(r/q) != 1 for every prime q dividing r
            if r % q == 0 and powmod_ctx(z, r // q, ctx) == 1:
                is_prime_q = True
                for f in range(2, q):
                    if q % f == 0:
                        is_prime_q = False
                if is_prime_q:
                    primitive = False
        if primitive:
            break
        y += 1
    out[0] = 1
    for k in range(1, r):
        out[k] = mulmod_ctx(out[k - 1], z, ctx)
    return out


@njit
def _split_classes(h, d, g, zetas, pool, offs, degs, sp, top, ctx):
    """Split the monic h (degree d) by the value of g = (x + a)**((p-1)/r) mod h at its roots.

    Each root X has g(X) = (X + a)**((p-1)/r), an r-th root of unity zeta (or 0 for X = -a), so
    h = prod_zeta gcd(g - zeta, h) * (x + a)**[h(-a) = 0]. Writes the nontrivial factors at
    ``pool[top:]`` and pushes them on the stack when there are at least two; returns
    (sp, top, split?).
    """
    p = ctx[0]
    rest = h[:d + 1].copy()
    d_rest = d
    gz = np.empty(d, dtype=np.int64)
    u = np.empty(d + 1, dtype=np.int64)
    v = np.empty(d + 1, dtype=np.int64)
    found = 0
    sp0 = sp
    o = top
    for k in range(zetas.shape[0]):
        if d_rest == 0:
            break
        copy_into(gz, g, d)
        gz[0] = submod(gz[0], zetas[k], p)
        du = gcd_into(gz, d, rest, d_rest + 1, u, ctx)
        if du <= 0:
            continue
        offs[sp], degs[sp] = o, du
        copy_into(pool[o:], u, du + 1)
        o += du + 1
        sp += 1
        found += 1
        if du < d_rest:
            _div_exact_monic(rest, d_rest, u, du, v, ctx)
            d_rest -= du
            copy_into(rest, v, d_rest + 1)
        else:
            d_rest = 0
    if d_rest > 0 and found > 0:  # the root -a, in no class
        offs[sp], degs[sp] = o, d_rest
        copy_into(pool[o:], rest, d_rest + 1)
        o += d_rest + 1
        sp += 1
        found += 1
    if found < 2:
        return sp0, top, False
    return sp, o, True


@njit
def find_roots(f, out, seed, p):
    """Roots of a polynomial that splits into distinct linear factors over F_p.

    With r a divisor of p - 1 (``split_order``: the largest r <= 32 for factors of degree >= 64,
    e.g. 31 for 2**61 - 1, else the largest r <= 6), first g = x**((p-1)/r) mod f is computed and
    x * g**r = x**p = x mod f is checked, which holds exactly when f divides x**p - x (squarefree,
    all roots in F_p). The same g splits f into the r classes of r-th power residues,
    gcd(g - zeta, f) over the r-th roots of unity zeta; every factor is then split again with
    g = (x + a)**((p-1)/r) for random shifts a (Rabin's equal-degree splitting, generalised from
    r = 2) until all factors are linear. Splitting into many classes at once leaves little work
    below the first, full-size modular powering. Expected cost O(M(d) log p) with M the
    Karatsuba product, plus O(r d**2) for the gcds.

    Parameters
    ----------
    f : ndarray of shape (n,), int64
        IN. Coefficients, lowest degree first, degree d = ``degree(f)``.
    out : ndarray of shape (>= d,), int64
        OUT. The d roots in increasing order.
    seed : int
        Seed of the SplitMix64 stream of shifts a (only the running time depends on it).
    p : int
        Odd prime below 2**62.

    Returns
    -------
    n_roots : int
        d on success; ``ROOTS_NOT_SPLIT`` (-1) if f is zero, has a repeated root or an
        irreducible factor of degree > 1; ``ROOTS_NO_SPLIT_FOUND`` (-2) if splitting failed
        ``_MAX_SPLIT_ATTEMPTS`` times for one factor.
    """
    ctx = field_context(p)
    d = degree(f, f.shape[0])
    if d < 0:
        return ROOTS_NOT_SPLIT
    if d == 0:
        return 0
    inv_lead = inverse(f[d], p)
    h = np.empty(d + 1, dtype=np.int64)
    for i in range(d + 1):
        h[i] = mulmod_ctx(f[i], inv_lead, ctx)
    n_roots = 0
    if h[0] == 0:  # the root 0 is in no residue class: take it out first
        if d >= 2 and h[1] == 0:
            return ROOTS_NOT_SPLIT
        out[0] = 0
        n_roots = 1
        h = h[1:].copy()
        d -= 1
    if d == 0:
        return n_roots
    if d == 1:
        out[n_roots] = negmod(h[0], p)
        out[:n_roots + 1].sort()
        return n_roots + 1
    return _split_roots(h, d, out, n_roots, seed, ctx, SPLIT_ORDER_LIMIT)


@njit(inline="always")  # (find_roots is its only caller: compiled once, inside it)
def _split_roots(h, d, out, n_roots, seed, ctx, limit):
    """``find_roots`` for the monic h of degree d >= 2 without the root 0 (roots after
    ``out[:n_roots]``); ``limit`` bounds the split order of factors of degree >= 64."""
    p = ctx[0]
    zero = np.int64(0)
    r = split_order(p, limit)
    zetas = _roots_of_unity(r, ctx)
    e = (p - 1) // r
    r_small = split_order(p, 6)
    zetas_small = _roots_of_unity(r_small, ctx)
    e_small = (p - 1) // r_small
    large = d >= 64  # many classes pay off only while the powering dominates the gcds
    g = np.empty(d, dtype=np.int64)
    powmod_into(g, zero, e if large else e_small, h, d, g, ctx)
    chk = np.empty(d, dtype=np.int64)
    powmod_into(g, np.int64(-1), r if large else r_small, h, d, chk, ctx)
    mul_linear_mod(chk, zero, h, d, ctx)  # x * g**r = x**p mod h
    if chk[1] != 1 or chk[0] != 0:
        return ROOTS_NOT_SPLIT
    for i in range(2, d):
        if chk[i] != 0:
            return ROOTS_NOT_SPLIT
    pool = np.empty(3 * d + 8, dtype=np.int64)
    offs = np.empty(d + 2, dtype=np.int64)
    degs = np.empty(d + 2, dtype=np.int64)
    sp, top, ok = _split_classes(h, d, g, zetas if large else zetas_small, pool, offs, degs,
                                 zero, zero, ctx)
    if not ok:  # every root in one class: start the random splitting from h itself
        offs[0] = 0
        degs[0] = d
        copy_into(pool, h, d + 1)
        sp = 1
    state = np.uint64(seed)
    while sp > 0:
        sp -= 1
        o = offs[sp]
        k = degs[sp]
        q = pool[o:o + k + 1].copy()
        if k == 1:
            out[n_roots] = negmod(q[0], p)
            n_roots += 1
            continue
        gk = np.empty(k, dtype=np.int64)
        large = k >= 64
        for _ in range(_MAX_SPLIT_ATTEMPTS):
            state, z = _splitmix64(state)
            a = np.int64(z % np.uint64(p))
            powmod_into(gk, a, e if large else e_small, q, k, gk, ctx)
            sp, top, ok = _split_classes(q, k, gk, zetas if large else zetas_small, pool, offs,
                                         degs, sp, o, ctx)
            if ok:
                break
        else:
            return ROOTS_NO_SPLIT_FOUND
    out[:n_roots].sort()
    return n_roots


@njit
def forney_magnitudes(s, lam, L, points, out, p):
    """Error magnitudes by Forney's formula (values of the aggregate, [MUFC] Alg. 2 line 3).

    With S(x) = sum_i s[i] x**i and Omega(x) = S(x) Lambda(x) mod x**L,
    q_j = -X_j Omega(X_j**-1) / Lambda'(X_j**-1), since S(x) = sum_j q_j / (1 - X_j x).

    Parameters
    ----------
    s : ndarray of shape (>= L,), int64
        IN. Syndromes S_1..S_L (more may follow; they are not read).
    lam : ndarray of shape (>= L + 1,), int64
        IN. Locator prod_j (1 - X_j x) from ``berlekamp_massey``.
    L : int
        Number of points.
    points : ndarray of shape (L,), int64
        IN. The points X_j (nonzero, distinct).
    out : ndarray of shape (L,), int64
        OUT. Magnitudes q_j.

    Returns
    -------
    status : int
        -1 on success, else the index j of a point with X_j = 0 or Lambda'(X_j**-1) = 0 (a
        repeated or foreign root; nothing useful is written).
    """
    ctx = field_context(p)
    if L == 0:
        return -1
    omega = np.empty(L, dtype=np.int64)
    for k in range(L):
        omega[k] = dot_reverse(lam, np.int64(0), s, k, k + 1, ctx)
    dlam = np.empty(L, dtype=np.int64)
    for i in range(1, L + 1):
        dlam[i - 1] = mulmod_ctx(np.int64(i % p), lam[i], ctx)
    xinv = np.empty(L, dtype=np.int64)
    bad = batch_inverse_ctx(points, L, xinv, ctx)
    if bad >= 0:
        return bad
    num = np.empty(L, dtype=np.int64)
    den = np.empty(L, dtype=np.int64)
    eval_many_ctx(omega, L, xinv, L, num, ctx)
    eval_many_ctx(dlam, L, xinv, L, den, ctx)
    bad = batch_inverse_ctx(den, L, den, ctx)
    if bad >= 0:
        return bad
    for j in range(L):
        v = mulmod_ctx(mulmod_ctx(points[j], num[j], ctx), den[j], ctx)
        out[j] = negmod(v, p)
    return -1


@njit
def solve_transposed_vandermonde(x, b, p):
    """Solve sum_j y_j x_j**i = b_i (i < m) for many right-hand sides, in place (Bjorck-Pereyra).

    The matrix V[i, j] = x_j**i is the one of [MUFC] Alg. 2 line 3 (unknown magnitudes, known
    points).
    This is the dual Bjorck-Pereyra algorithm (Golub and Van Loan, Matrix Computations, Alg. 4.6.2):
    O(m**2) per right-hand side, with the m(m-1)/2 divisions done once per k by batch inversion and
    shared by all columns.

    Parameters
    ----------
    x : ndarray of shape (m,), int64
        IN. Distinct nodes.
    b : ndarray of shape (m, C), int64
        IN/OUT. Column c holds right-hand side c on entry and solution c on exit.
    p : int
        Odd prime below 2**62.

    Returns
    -------
    status : int
        -1 on success; otherwise the nodes are not distinct and ``b`` is garbage.
    """
    ctx = field_context(p)
    m, n_cols = b.shape
    n = m - 1
    for k in range(n):
        xk = x[k]
        for i in range(n, k, -1):
            sub_scaled_into(b[i], xk, b[i - 1], n_cols, ctx)
    diffs = np.empty(max(m, 1), dtype=np.int64)
    for k in range(n - 1, -1, -1):
        for i in range(k + 1, n + 1):
            diffs[i - k - 1] = submod(x[i], x[i - k - 1], p)
        if batch_inverse_ctx(diffs, n - k, diffs, ctx) >= 0:
            return k
        for i in range(k + 1, n + 1):
            inv = diffs[i - k - 1]
            for c in range(n_cols):
                b[i, c] = mulmod_ctx(b[i, c], inv, ctx)
        for i in range(k, n):
            for c in range(n_cols):
                b[i, c] = submod(b[i, c], b[i + 1, c], p)
    return -1
