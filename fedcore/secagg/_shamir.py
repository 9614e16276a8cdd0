"""Shamir t-of-n secret sharing of 32-byte keys over F_p, p = 2**61 - 1 ([SecAgg] Sec. 3).

A 256-bit secret is split into five 60-bit chunks (each below p). Chunk c is the constant term of
a polynomial f_c of degree t - 1 whose other coefficients are uniform on F_p (OS entropy); the
share of holder h (a client id) is (f_c(h + 1))_c, five field elements. Any t shares give the
chunks by Lagrange interpolation at 0; t - 1 shares are jointly uniform, independent of the
secret (perfect secrecy per chunk).
"""
import os

import numpy as np

from ..kernels.jit import njit
from ..kernels.field.arithmetic import MERSENNE_61, addmod, field_context, mulmod_ctx

__all__ = ["SHARE_PRIME", "N_CHUNKS", "split_secret", "join_secret", "deal", "reconstruct",
           "share_bytes", "share_values"]

SHARE_PRIME = MERSENNE_61
CHUNK_BITS = 60
N_CHUNKS = 5            # 5 * 60 >= 256 bits
SHARE_BYTES = 8 * N_CHUNKS


def split_secret(secret):
    """The five 60-bit chunks (int64) of a 32-byte secret."""
    value = int.from_bytes(bytes(secret), "little")
    mask = (1 << CHUNK_BITS) - 1
    return np.array([(value >> (CHUNK_BITS * c)) & mask for c in range(N_CHUNKS)], dtype=np.int64)


def join_secret(chunks):
    """The 32-byte secret of five chunks; None if a chunk or the value is out of range."""
    value = 0
    for c, v in enumerate(chunks):
        v = int(v)
        if not 0 <= v < 1 << CHUNK_BITS:
            return None
        value |= v << (CHUNK_BITS * c)
    if value >= 1 << 256:
        return None
    return value.to_bytes(32, "little")


def _uniform(shape):
    """Uniform elements of F_p (int64) from OS entropy, by rejection of the top 61 bits."""
    n = int(np.prod(shape))
    out = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        words = np.frombuffer(os.urandom(8 * (n - filled + 8)), dtype=np.uint64) >> np.uint64(3)
        ok = words[words < np.uint64(SHARE_PRIME)][:n - filled]
        out[filled:filled + ok.shape[0]] = ok.view(np.int64)
        filled += ok.shape[0]
    return out.reshape(shape)


@njit
def _evaluate(coeffs, xs, p, out):
    """out[s, h] = sum_k coeffs[s, k] xs[h]**k mod p (Horner), coefficients in [0, p)."""
    ctx = field_context(p)
    n_poly, degree = coeffs.shape[0], coeffs.shape[1] - 1
    for s in range(n_poly):
        for h in range(xs.shape[0]):
            acc = coeffs[s, degree]
            for k in range(degree - 1, -1, -1):
                acc = addmod(mulmod_ctx(acc, xs[h], ctx), coeffs[s, k], p)
            out[s, h] = acc


def deal(secrets, threshold, holders):
    """Shares of several secrets for several holders.

    Parameters
    ----------
    secrets : sequence of 32-byte secrets
    threshold : int
        Shares needed to reconstruct (the polynomials have degree threshold - 1).
    holders : sequence of int
        Holder ids h (shares are evaluations at h + 1).

    Returns
    -------
    shares : int64 array of shape (len(secrets), len(holders), N_CHUNKS)
    """
    n_sec = len(secrets)
    xs = np.asarray(holders, dtype=np.int64) + 1
    if n_sec == 0:
        return np.zeros((0, xs.shape[0], N_CHUNKS), dtype=np.int64)
    coeffs = _uniform((n_sec * N_CHUNKS, int(threshold)))
    coeffs[:, 0] = np.concatenate([split_secret(s) for s in secrets])
    out = np.empty((n_sec * N_CHUNKS, xs.shape[0]), dtype=np.int64)
    _evaluate(coeffs, xs, SHARE_PRIME, out)
    return out.reshape(n_sec, N_CHUNKS, xs.shape[0]).transpose(0, 2, 1).copy()


def reconstruct(holders, values):
    """The secret (32 bytes, or None if the chunks are out of range) from shares.

    ``holders``: the ids of t holders (distinct); ``values``: their shares, shape (t, N_CHUNKS).
    Lagrange interpolation at 0 in exact integer arithmetic.
    """
    p = SHARE_PRIME
    xs = [int(h) + 1 for h in holders]
    chunks = [0] * N_CHUNKS
    for i, xi in enumerate(xs):
        num, den = 1, 1
        for j, xj in enumerate(xs):
            if j != i:
                num = num * (-xj) % p
                den = den * (xi - xj) % p
        weight = num * pow(den, p - 2, p) % p
        for c in range(N_CHUNKS):
            chunks[c] = (chunks[c] + weight * int(values[i][c])) % p
    return join_secret(chunks)


def share_bytes(values):
    """A share (N_CHUNKS field elements) as 40 bytes, for transport."""
    return np.asarray(values, dtype="<u8").tobytes()


def share_values(share, name="unmask_shares"):
    """The N_CHUNKS field elements of a share given as 40 bytes (or a sequence of ints)."""
    if isinstance(share, (bytes, bytearray, memoryview)):
        share = bytes(share)
        if len(share) != SHARE_BYTES:
            raise ValueError(f"Argument {name!r}: a key share must be {SHARE_BYTES} bytes, got "
                             f"{len(share)}")
        values = np.frombuffer(share, dtype="<u8").astype(np.int64)
    else:
        values = np.asarray(share)
        if values.shape != (N_CHUNKS,) or values.dtype.kind not in "iu":
            raise ValueError(f"Argument {name!r}: a key share must be {SHARE_BYTES} bytes or "
                             f"{N_CHUNKS} integers, got {values.shape} {values.dtype}")
        values = values.astype(np.int64)
    if (values < 0).any() or (values >= SHARE_PRIME).any():
        raise ValueError(f"Argument {name!r}: a key share holds a value outside [0, 2**61 - 1)")
    return values
