"""Regenerate tests/data/scma_galois_vectors.json: SCMA decoding vectors computed by galois.

Run from the repository root: ``python scripts/make_scma_vectors.py`` (takes a few minutes; galois
runs fields above 2**62 in pure Python and compiles its kernels per field).

The file lets tests/kernels/test_reed_solomon.py check fedcore's Reed-Solomon kernels against an
independent implementation even where galois is not installed:

* ``berlekamp_massey``: random sequences and ``galois.berlekamp_massey(..., output="connection")``;
* ``roots``: ``galois.Poly.Roots(planted)`` and its roots from ``galois.Poly.roots()`` (for
  p = 2**61 - 1 galois' root finder is too slow, so the planted roots are stored and galois only
  checks that the polynomial vanishes on them);
* ``no_split``: polynomials whose galois roots are fewer than their degree (a factor of degree > 1
  or a repeated root), which fedcore must reject;
* ``magnitudes``: points, syndromes S_i = sum_j q_j X_j**(i-1) and the magnitudes from
  ``numpy.linalg.solve`` on the galois Vandermonde system (Alg. 2 line 3).

Polynomials are stored lowest degree first (galois lists them highest first).
"""
import json
import os
import sys

import galois
import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "scma_galois_vectors.json")
ROOT_FIELDS = [13, 101, 65537, 2**31 - 1]       # galois roots() runs in acceptable time
ALL_FIELDS = ROOT_FIELDS + [2**61 - 1]


def low_first(poly):
    return [int(c) for c in poly.coeffs[::-1]]


def sample_distinct(rng, p, m, low=1):
    if p < 10**6:
        return [int(v) + low for v in rng.choice(p - low, size=m, replace=False)]
    out = set()
    while len(out) < m:
        out.add(int(rng.integers(low, p)))
    return sorted(out)


def main():
    rng = np.random.default_rng(20240601)
    data = {"generator": "scripts/make_scma_vectors.py", "galois_version": galois.__version__,
            "berlekamp_massey": [], "roots": [], "no_split": [], "magnitudes": []}
    for p in ALL_FIELDS:
        GF = galois.GF(p)
        print("field", p, file=sys.stderr)
        for n in [1, 2, 5, 8, 13, 20]:
            for kind in ("random", "syndromes"):
                if kind == "random":
                    seq = [int(v) for v in rng.integers(0, p, n, dtype=np.int64)]
                else:
                    m = min(n // 2, p - 2)
                    pts = sample_distinct(rng, p, m)
                    q = [int(v) for v in rng.integers(1, p, m, dtype=np.int64)]
                    seq = [sum(qj * pow(x, i, p) for x, qj in zip(pts, q)) % p for i in range(n)]
                if not any(seq):
                    continue
                c = galois.berlekamp_massey(GF(seq), output="connection")
                data["berlekamp_massey"].append({"p": p, "sequence": seq,
                                                 "connection": low_first(c)})
        for m in [1, 2, 3, 6, 10]:
            m = min(m, p - 1)
            planted = sample_distinct(rng, p, m, low=0)
            f = galois.Poly.Roots(GF(planted))
            if p in ROOT_FIELDS:
                roots = sorted(int(r) for r in f.roots())
                source = "galois.Poly.roots"
            else:
                assert all(int(v) == 0 for v in f(GF(planted)))
                roots = sorted(planted)
                source = "planted, verified by galois evaluation"
            data["roots"].append({"p": p, "poly": low_first(f), "roots": roots, "source": source})
            # planted magnitudes on the nonzero points
            pts = [x for x in planted if x != 0]
            if pts:
                q = [int(v) for v in rng.integers(1, p, len(pts), dtype=np.int64)]
                V = GF([[pow(x, i, p) for x in pts] for i in range(len(pts))])
                syn = [sum(qj * pow(x, i, p) for x, qj in zip(pts, q)) % p
                       for i in range(2 * len(pts))]
                sol = np.linalg.solve(V, GF(syn[:len(pts)]))
                assert [int(v) for v in sol] == q
                data["magnitudes"].append({"p": p, "points": pts, "syndromes": syn,
                                           "magnitudes": [int(v) for v in sol]})
        if p in ROOT_FIELDS:
            for _ in range(6):
                d = int(rng.integers(2, 7))
                coeffs = [int(v) for v in rng.integers(0, p, d, dtype=np.int64)] + [1]
                f = galois.Poly(coeffs[::-1], field=GF)
                roots = f.roots()
                if len(roots) < d:
                    data["no_split"].append({"p": p, "poly": coeffs})
            r = int(rng.integers(1, p))
            f = galois.Poly.Roots(GF([r, r, (r + 1) % p]))  # repeated root
            data["no_split"].append({"p": p, "poly": low_first(f)})
    with open(OUT, "w") as fh:
        json.dump(data, fh, indent=0)
    print("wrote", OUT, {k: len(v) for k, v in data.items() if isinstance(v, list)},
          file=sys.stderr)


if __name__ == "__main__":
    main()
