"""[FeCA]: one-shot federated centroid aggregation (client update and server aggregation)."""
from .feca import (FeCA, FeCACentroids, FeCAClient, FeCAResult, FeCAServer, FeCASetup,
                   FewerGroupsWarning, check_feca_params, client_update, feca, feca_client,
                   feca_server, radius_assign, server_aggregation)

__all__ = ["FeCA", "FeCAResult", "FewerGroupsWarning", "check_feca_params", "client_update",
           "feca", "feca_client", "feca_server", "radius_assign", "server_aggregation",
           "FeCAClient", "FeCAServer", "FeCASetup", "FeCACentroids"]

from ..._moved import moved_names

__getattr__ = moved_names(__name__)
