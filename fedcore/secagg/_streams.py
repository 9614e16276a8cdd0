"""Cryptographic pairwise mask streams for SCMA: ChaCha20 keystreams read as uniform F_p elements.

The pair {a, b} (a < b) holds a 256-bit key K_ab (``fedcore.secagg._keys``). Its mask of round r
is read from the ChaCha20 keystream (RFC 8439, through ``cryptography``) under K_ab, a 16-byte
nonce being

    block counter (4 bytes, little endian) || segment (8 bytes) || stream id (4 bytes)

Every round takes W words (``words_for``: the message length plus a margin for rejections, a
whole number B = W / 8 of 64-byte blocks): with R = floor((2**32 - 1) / B) rounds per segment,
round r reads blocks (r mod R) B .. (r mod R + 1) B - 1 of segment r div R (stream id 0), so
every (round, block) pair is read once and the 32-bit block counter never wraps. In the rare
event that a round's W words hold too few accepted values, the round continues in its own
overflow stream (nonce: counter || r || stream id 1).

Uniform elements of [0, p) come from rejection sampling, as in the PCG64 generator: the top
b = p.bit_length() bits of each 64-bit little-endian word are kept when they are below p, so
there is no modulo bias; the values are the first ``length`` accepted words. Client a adds the
stream and client b subtracts it ([MUFC] Alg. 2 line 2: the masks of a round sum to zero over its
participants).

:func:`zero_sum_masks` expands many pairs at once and adds each stream into both members' masks,
so an in-process round generates every pair's stream once (``SCMASetup.round_masks``), while a
deployed client expands only its own L - 1 streams (same function, one output row). An
in-process setup also keeps each pair's cipher context between consecutive rounds (the keystream
of round r + 1 follows that of round r), which saves setting up 4950 contexts per round at
L = 100; a fresh context positioned by the nonce gives the same words.
"""
import functools
import math
import threading

import numpy as np

from ..kernels.jit import njit

__all__ = ["STREAM_MASK", "STREAM_OVERFLOW", "chacha_nonce", "round_position",
           "keystream_words", "overflow_words", "words_for", "zero_sum_masks",
           "accumulate_streams"]

STREAM_MASK = 0
"""Stream id of the zero-sum masks in the ChaCha20 nonce."""
STREAM_OVERFLOW = 1
"""Stream id of a round's continuation when its W words run short."""

_BATCH_BYTES = 1 << 20   # keystream bytes per batch of pairs (1 MiB: read back from cache)
_BLOCK_WORDS = 8         # 64-bit words per 64-byte ChaCha20 block
_MAX_COUNTER = (1 << 32) - 1
_scratch = threading.local()  # per thread: keystream buffer, its byte rows and zeros, per W


def chacha_nonce(counter, segment, stream=STREAM_MASK):
    """The 16-byte ChaCha20 nonce: block counter, segment (or round), stream id."""
    return (int(counter).to_bytes(4, "little") + int(segment).to_bytes(8, "little")
            + int(stream).to_bytes(4, "little"))


def round_position(round, n_words):
    """(segment, first block) of round ``round``'s W = ``n_words`` words in the mask stream."""
    blocks = n_words // _BLOCK_WORDS
    per_segment = _MAX_COUNTER // blocks
    segment, index = divmod(int(round), per_segment)
    return segment, index * blocks


def _chacha20():
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
    return Cipher, algorithms.ChaCha20


def _encryptor(key, nonce):
    Cipher, ChaCha20 = _chacha20()
    return Cipher(ChaCha20(key, nonce), mode=None).encryptor()


def keystream_words(key, round, n_words):
    """The W = ``n_words`` words (uint64) of a pair's mask stream for ``round``, from a fresh
    cipher context positioned by the nonce."""
    segment, block = round_position(round, n_words)
    raw = _encryptor(key, chacha_nonce(block, segment)).update(bytes(8 * int(n_words)))
    return np.frombuffer(raw, dtype=np.uint64)


def overflow_words(key, round, n_words, chunk):
    """Chunk ``chunk`` (W = ``n_words`` words) of round ``round``'s overflow stream."""
    nonce = chacha_nonce(chunk * (n_words // _BLOCK_WORDS), round, STREAM_OVERFLOW)
    return np.frombuffer(_encryptor(key, nonce).update(bytes(8 * int(n_words))),
                         dtype=np.uint64)


@functools.lru_cache(maxsize=64)
def words_for(length, p):
    """Keystream words generated for ``length`` accepted values (a multiple of 8 words).

    With acceptance rate a = p / 2**b, the number of rejections among W words is Binomial(W,
    1 - a); W covers its mean plus six standard deviations plus 8, so a stream runs short with
    probability below 1e-9 (it is then continued, see :func:`zero_sum_masks`).
    """
    bits = int(p).bit_length()
    reject = 1.0 - p / float(1 << bits)
    w0 = length / (1.0 - reject)
    extra = reject * w0 + 6.0 * math.sqrt(w0 * reject * (1.0 - reject)) + 8
    w = int(length + math.ceil(extra))
    return -(-w // _BLOCK_WORDS) * _BLOCK_WORDS


@njit
def _accumulate_one(words, k, start, shift, p, length, acc, plus, minus):
    """Add the accepted values of ``words[k]`` (from position ``start`` of the stream) to row
    ``plus`` and subtract them from row ``minus`` of ``acc`` (-1: no such row). Returns the
    position reached (``length`` when the stream is complete)."""
    up = np.uint64(p)
    j = start
    n = words.shape[1]
    i = 0
    while j < length and i < n:
        v = words[k, i] >> shift
        i += 1
        if v < up:
            x = np.int64(v)
            if plus >= 0:
                a = acc[plus, j] + x
                acc[plus, j] = a - p if a >= p else a
            if minus >= 0:
                a = acc[minus, j] - x
                acc[minus, j] = a + p if a < 0 else a
            j += 1
    return j


@njit
def _add_words(w, shift, p, length, row, sign):
    """row[i] += sign * (w[i] >> shift) mod p for i < length (sign +1 or -1); returns the number
    of words whose top bits are >= p (which the caller must then undo and scan)."""
    up = np.uint64(p)
    rejected = 0
    if sign > 0:
        for i in range(length):
            v = w[i] >> shift
            rejected += v >= up
            a = row[i] + np.int64(v)
            row[i] = a - p if a >= p else a
    else:
        for i in range(length):
            v = w[i] >> shift
            rejected += v >= up
            b = row[i] - np.int64(v)
            row[i] = b + p if b < 0 else b
    return rejected


@njit
def accumulate_streams(words, shift, p, length, plus_rows, minus_rows, acc, filled):
    """For each stream k (row of the uint64 array ``words``): its first ``length`` accepted
    values (top bits ``words >> shift`` below p) are added to ``acc[plus_rows[k]]`` and
    subtracted from ``acc[minus_rows[k]]`` mod p (a row of -1 is skipped). ``filled[k]`` receives
    the number of values taken (below ``length`` when the stream ran short).

    The first ``length`` words are taken optimistically in one fused pass; if one of them is
    rejected (for p = 2**61 - 1 a word is rejected with probability 2**-61) the pass is undone
    and the stream is scanned word by word.
    """
    up = np.uint64(p)
    m = min(length, words.shape[1])
    for k in range(words.shape[0]):
        plus = plus_rows[k]
        minus = minus_rows[k]
        w = words[k]
        rejected = 0
        if m == length and plus >= 0 and minus >= 0:
            ap = acc[plus]
            am = acc[minus]
            for i in range(length):
                v = w[i] >> shift
                rejected += v >= up
                x = np.int64(v)
                a = ap[i] + x
                ap[i] = a - p if a >= p else a
                b = am[i] - x
                am[i] = b + p if b < 0 else b
        elif m == length and plus >= 0:
            rejected = _add_words(w, shift, p, length, acc[plus], 1)
        elif m == length and minus >= 0:
            rejected = _add_words(w, shift, p, length, acc[minus], -1)
        elif m == length:
            for i in range(length):
                rejected += (w[i] >> shift) >= up
        else:
            rejected = 1  # fewer words than values: scan
        if rejected == 0:
            filled[k] = length
            continue
        if m == length:  # undo the optimistic pass (exact: addition mod p is invertible)
            if plus >= 0:
                _add_words(w, shift, p, length, acc[plus], -1)
            if minus >= 0:
                _add_words(w, shift, p, length, acc[minus], 1)
        filled[k] = _accumulate_one(words, k, 0, shift, p, length, acc, plus, minus)


def zero_sum_masks(pairs, keys, round, length, p, plus_rows, minus_rows, out, contexts=None):
    """Add every pair's mask stream of ``round`` into ``out`` (int64 of shape (rows, length)).

    Parameters
    ----------
    pairs : sequence of (a, b)
        The pairs, a < b.
    keys : sequence of bytes
        The 32-byte key of each pair.
    round : int
    length : int
        Values per stream.
    p : int
    plus_rows, minus_rows : int64 arrays
        Row of ``out`` that adds (client a) and that subtracts (client b) each pair's stream, or
        -1 when that member's mask is not wanted (a deployed client has one row).
    out : int64 array of shape (rows, length), entries in [0, p); updated in place.
    contexts : dict, optional
        Cipher contexts kept between calls ({key: (context, next round)}): a pair's context is
        reused when this round follows the one it last produced in the same segment.
    """
    n_pairs = len(keys)
    if n_pairs == 0:
        return out
    shift = np.uint64(64 - int(p).bit_length())
    n_words = words_for(length, p)
    buf, rows, zeros = _buffers(n_words)
    batch = min(n_pairs, buf.shape[0])
    filled = np.empty(batch, dtype=np.int64)
    plus_rows = np.asarray(plus_rows, dtype=np.int64)
    minus_rows = np.asarray(minus_rows, dtype=np.int64)
    Cipher, ChaCha20 = _chacha20()
    segment, block = round_position(round, n_words)
    nonce = chacha_nonce(block, segment)
    keep = contexts is not None and round_position(round + 1, n_words)[0] == segment
    after = round + 1
    for start in range(0, n_pairs, batch):
        stop = min(n_pairs, start + batch)
        if contexts is None:
            for i, key in enumerate(keys[start:stop]):
                Cipher(ChaCha20(key, nonce), mode=None).encryptor().update_into(zeros, rows[i])
        else:
            for i, key in enumerate(keys[start:stop]):
                entry = contexts.pop(key, None)
                ctx = entry[0] if entry is not None and entry[1] == round else \
                    Cipher(ChaCha20(key, nonce), mode=None).encryptor()
                ctx.update_into(zeros, rows[i])
                if keep:
                    contexts[key] = (ctx, after)
        accumulate_streams(buf[:stop - start], shift, p, length, plus_rows[start:stop],
                           minus_rows[start:stop], out, filled[:stop - start])
        for i in np.flatnonzero(filled[:stop - start] < length):
            _continue_stream(keys[start + int(i)], round, n_words, int(filled[i]), shift, p,
                             length, plus_rows[start + int(i)], minus_rows[start + int(i)], out)
    return out


def _buffers(n_words):
    """This thread's keystream buffer for W = ``n_words`` (rows of at most _BATCH_BYTES), its rows
    as byte arrays (what ``update_into`` writes to) and W * 8 zero bytes; the last W is kept."""
    cached = getattr(_scratch, "buffers", None)
    if cached is None or cached[0] != n_words:
        batch = max(1, _BATCH_BYTES // (8 * n_words))
        buf = np.empty((batch, n_words), dtype=np.uint64)
        rows = list(buf.view(np.uint8))
        cached = _scratch.buffers = (n_words, buf, rows, bytes(8 * n_words))
    return cached[1:]


def _continue_stream(key, round, n_words, position, shift, p, length, plus, minus, out):
    """Finish a stream that ran short, from the round's overflow stream."""
    chunk = 0
    while position < length:
        more = overflow_words(key, round, n_words, chunk).reshape(1, -1)
        position = _accumulate_one(more, 0, position, shift, p, length, out, plus, minus)
        chunk += 1
    return position
