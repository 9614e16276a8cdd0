"""Slow, obviously correct pure-Python references for the finite-field kernels.

Everything here uses Python's unbounded integers and lists of coefficients (index i holds the
coefficient of x**i), so nothing can overflow. The kernels in ``fedcore.kernels.field``,
``fedcore.kernels.field.polynomial`` and ``fedcore.kernels.field.reed_solomon`` are compared
against these functions by property tests.
"""

__all__ = [
    "is_prime", "inverse", "poly_trim", "poly_mul", "poly_divmod", "poly_gcd", "poly_powmod",
    "poly_eval", "poly_from_roots", "power_sums", "berlekamp_massey",
    "find_roots", "solve_linear", "forney_magnitudes", "solve_transposed_vandermonde",
]


def is_prime(n):
    """Trial division (use only for n below about 10**12)."""
    if n < 2:
        return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True


def inverse(a, p):
    """a**-1 mod p by Fermat's little theorem (p prime, a != 0 mod p)."""
    if a % p == 0:
        raise ZeroDivisionError("0 has no inverse")
    return pow(a, p - 2, p)


def poly_trim(a):
    """Drop trailing zero coefficients; the zero polynomial is []."""
    a = list(a)
    while a and a[-1] == 0:
        a.pop()
    return a


def poly_mul(a, b, p):
    if not a or not b:
        return []
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] = (out[i + j] + x * y) % p
    return out


def poly_divmod(a, b, p):
    """Quotient and remainder of a / b (b nonzero), both trimmed."""
    a = poly_trim([x % p for x in a])
    b = poly_trim([x % p for x in b])
    if not b:
        raise ZeroDivisionError("division by the zero polynomial")
    inv_lead = inverse(b[-1], p)
    r = list(a)
    q = [0] * max(len(a) - len(b) + 1, 0)
    for k in range(len(a) - len(b), -1, -1):
        c = r[k + len(b) - 1] * inv_lead % p
        q[k] = c
        for i, y in enumerate(b):
            r[k + i] = (r[k + i] - c * y) % p
    return poly_trim(q), poly_trim(r[:len(b) - 1])


def poly_gcd(a, b, p):
    """Monic gcd (the zero polynomial if both are zero)."""
    a = poly_trim([x % p for x in a])
    b = poly_trim([x % p for x in b])
    while b:
        a, b = b, poly_divmod(a, b, p)[1]
    if not a:
        return []
    inv_lead = inverse(a[-1], p)
    return [x * inv_lead % p for x in a]


def poly_powmod(base, e, f, p):
    """base**e mod f by square and multiply."""
    result = [1]
    b = poly_divmod(base, f, p)[1]
    while e:
        if e & 1:
            result = poly_divmod(poly_mul(result, b, p), f, p)[1]
        b = poly_divmod(poly_mul(b, b, p), f, p)[1]
        e >>= 1
    return poly_divmod(result, f, p)[1]


def poly_eval(a, x, p):
    acc = 0
    for c in reversed(a):
        acc = (acc * x + c) % p
    return acc


def poly_from_roots(roots, p):
    """prod_j (x - r_j), monic."""
    out = [1]
    for r in roots:
        out = poly_mul(out, [(-r) % p, 1], p)
    return out


def power_sums(points, weights, start, n_terms, p):
    """[sum_j w_j x_j**(start + i) mod p for i in range(n_terms)] (syndromes S_{start+i+1})."""
    return [sum(w * pow(x, start + i, p) for x, w in zip(points, weights)) % p
            for i in range(n_terms)]


def berlekamp_massey(s, p):
    """Massey's algorithm; returns (connection polynomial C with C[0] = 1, linear complexity L).

    C has length L + 1 (padded with zeros if its degree is below L) and satisfies
    s[k] + sum_{i=1..L} C[i] s[k-i] = 0 (mod p) for L <= k < len(s).
    """
    C, B = [1], [1]
    L, m, b = 0, 1, 1
    for n in range(len(s)):
        d = s[n] % p
        for i in range(1, L + 1):
            if i < len(C):
                d = (d + C[i] * s[n - i]) % p
        if d == 0:
            m += 1
            continue
        coef = d * inverse(b, p) % p
        T = list(C)
        need = len(B) + m
        if len(C) < need:
            C = C + [0] * (need - len(C))
        for i, y in enumerate(B):
            C[i + m] = (C[i + m] - coef * y) % p
        if 2 * L <= n:
            L, B, b, m = n + 1 - L, T, d, 1
        else:
            m += 1
    C = (C + [0] * (L + 1))[:L + 1]
    return C, L


def find_roots(f, p):
    """Sorted roots of f in F_p by brute force over the field (small p only)."""
    return sorted(x for x in range(p) if poly_eval(f, x, p) == 0)


def solve_linear(A, b, p):
    """Solve A y = b over F_p by Gaussian elimination (A square and invertible)."""
    n = len(A)
    M = [[A[i][j] % p for j in range(n)] + [b[i] % p] for i in range(n)]
    for col in range(n):
        piv = next(r for r in range(col, n) if M[r][col])
        M[col], M[piv] = M[piv], M[col]
        inv = inverse(M[col][col], p)
        M[col] = [v * inv % p for v in M[col]]
        for r in range(n):
            if r != col and M[r][col]:
                c = M[r][col]
                M[r] = [(v - c * w) % p for v, w in zip(M[r], M[col])]
    return [M[i][n] for i in range(n)]


def solve_transposed_vandermonde(nodes, rhs, p):
    """Solve sum_j y_j nodes_j**i = rhs_i for i < m (m = len(nodes)) by Gaussian elimination."""
    m = len(nodes)
    A = [[pow(x, i, p) for x in nodes] for i in range(m)]
    return solve_linear(A, rhs[:m], p)


def forney_magnitudes(syndromes, points, p):
    """Magnitudes q_j with sum_j q_j X_j**(i-1) = S_i, i = 1..m, by a dense linear solve."""
    return solve_transposed_vandermonde(points, syndromes, p)
