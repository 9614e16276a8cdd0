"""SCMA: exact secure compressed multiset aggregation over a prime field (MUFC paper, Alg. 2).

Clients hold sparse non-negative integer vectors over a possibly huge index space (integers, or
d-dimensional bin coordinates); the server learns their exact sum and nothing else. Each client
sends Reed-Solomon syndromes of its vector masked by pairwise zero-sum noise; the server adds the
messages, which cancels the masks, and decodes the syndromes (Berlekamp-Massey, root finding,
Forney's formula). Decoding never returns a wrong sum: it raises :class:`SCMADecodeError`.

>>> from fedcore.secagg import SCMASetup, SCMAClient, SCMAServer
>>> setup = SCMASetup(n_clients=3, capacity=8, n_dims=10, bins=173, random_state=1)
>>> clients = [SCMAClient(l, setup) for l in range(3)]
>>> x = [[5] * 10, [172] * 10]
>>> msgs = [c.encode(x, [l + 1, 1], round=0) for l, c in enumerate(clients)]
>>> bins, counts = SCMAServer(setup).decode(msgs, round=0)
>>> bins[:, 0].tolist(), counts.tolist()
([5, 172], [6, 3])
"""
from ._errors import SCMADecodeError
from .client import SCMAClient
from .server import SCMAServer
from .setup import SCMASetup

__all__ = ["SCMASetup", "SCMAClient", "SCMAServer", "SCMADecodeError"]
