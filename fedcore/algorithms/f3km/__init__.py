"""[F3KM]: coordinate-descent k-means (CDKM, BCDKM, DisBCDKM) and fair k-means by ADMM.

The federated methods split into a party role (:mod:`.party`, one party's columns) and a server
role (:mod:`.server`, sums over parties and every decision); :mod:`.fair_lp` is the Fair-LP
baseline.
"""
from .cdkm import BCDKM, CDKM, bcd_kmeans
from .fair import FairKMeans, fair_kmeans
from .fair_lp import FairLP

__all__ = ["BCDKM", "CDKM", "FairKMeans", "FairLP", "bcd_kmeans", "fair_kmeans"]
