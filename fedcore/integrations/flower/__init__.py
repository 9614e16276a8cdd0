"""fedcore on Flower (the ``flower`` extra): ServerApps and ClientApps built from fedcore's own
algorithm objects, so each method has one implementation whether it runs in one process or
across Flower nodes.

Flower's built-in secure aggregation (SecAgg+, [SecAgg+]) sums dense vectors modulo 2**k, so MUFC's
sparse counts travel as fedcore's SCMA messages ([MUFC] Alg. 2; uint64 ``ArrayRecord`` records)
instead.
"""
from ._common import FlowerApps, FlowerRoundError, federation_from_settings, simulate
from .f3km import (F3KMFlowerResult, bcdkm_apps, fair_kmeans_apps, load_f3km_result,
                   vertical_from_settings)
from .feca import feca_apps, load_feca_result
from .mufc import MUFCFlowerResult, load_mufc_result, mufc_apps

__all__ = ["FlowerApps", "FlowerRoundError", "simulate", "feca_apps", "load_feca_result",
           "mufc_apps", "load_mufc_result", "MUFCFlowerResult", "bcdkm_apps", "fair_kmeans_apps",
           "load_f3km_result", "F3KMFlowerResult", "federation_from_settings",
           "vertical_from_settings"]
