"""[F3KM]: coordinate-descent k-means (CDKM, BCDKM, DisBCDKM) and fair k-means by ADMM.

The federated methods split into a party role (:mod:`.party`: ``F3KMParty``, one party's columns,
and the messages) and a server role (:mod:`.server`: ``F3KMServer``, sums over parties and every
decision) that talk over any channel of :mod:`fedcore.federation.protocol`; :mod:`.fair_lp` is
the Fair-LP baseline.
"""
from .cdkm import BCDKM, CDKM, bcd_kmeans
from .fair import FairKMeans, fair_kmeans
from .fair_lp import FairLP

__all__ = ["BCDKM", "CDKM", "FairKMeans", "FairLP", "bcd_kmeans", "fair_kmeans"]
