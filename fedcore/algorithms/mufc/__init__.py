"""[MUFC]: federated k-means with secure aggregation and exact unlearning of points and clients.

Clients seed with exact-unlearning k-means++ (:mod:`.unlearning`), quantize their centers
(:mod:`.quantize`) and send them through SCMA (:mod:`.aggregation`); the server clusters the
aggregate and re-fits exactly after a removal (:mod:`.coupled`).
"""
from .estimators import MUFC, MUFCRemovalReport, SimplifiedFC
from .unlearning import RemovalResult, UnlearnableKMeans

__all__ = ["MUFC", "MUFCRemovalReport", "RemovalResult", "SimplifiedFC", "UnlearnableKMeans"]
