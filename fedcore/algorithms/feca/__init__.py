"""[FeCA]: one-shot federated centroid aggregation (client update and server aggregation), and
DeepFeCA ([FeCA] Alg. 6), federated representation learning on it (needs PyTorch)."""
from .deep import (DeepFeCA, DeepFeCACentroids, DeepFeCAClient, DeepFeCAReady,
                   DeepFeCAResult, DeepFeCAServer, DeepFeCASetup, DeepFeCAShape, DeepFeCAUpdate,
                   DeepFeCAWeights, check_deep_feca_params, deep_feca, fedavg, flatten_weights,
                   load_weights, pseudo_labels)
from .feca import (FeCA, FeCACentroids, FeCAClient, FeCAResult, FeCAServer, FeCASetup,
                   FewerGroupsWarning, check_feca_params, client_update, feca, feca_client,
                   feca_server, radius_assign, server_aggregation)

__all__ = ["FeCA", "FeCAResult", "FewerGroupsWarning", "check_feca_params", "client_update",
           "feca", "feca_client", "feca_server", "radius_assign", "server_aggregation",
           "FeCAClient", "FeCAServer", "FeCASetup", "FeCACentroids", "DeepFeCA", "DeepFeCAResult",
           "deep_feca", "check_deep_feca_params", "DeepFeCAServer", "DeepFeCAClient",
           "DeepFeCASetup", "DeepFeCAShape", "DeepFeCAWeights", "DeepFeCAReady",
           "DeepFeCACentroids", "DeepFeCAUpdate", "fedavg", "pseudo_labels", "flatten_weights",
           "load_weights"]

from ..._moved import moved_names

__getattr__ = moved_names(__name__)
