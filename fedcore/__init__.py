"""fedcore: federated clustering with exact unlearning, secure aggregation and coresets."""
__version__ = "0.1.0"  # before the imports: the kernels' cache directory is named after it

from . import datasets, metrics
from .algorithms import *  # noqa: F401,F403
from .algorithms import __all__ as _algorithms_all
from .federation import CommLedger, HorizontalFederation, VerticalFederation, partition
from .secagg import SCMAClient, SCMADecodeError, SCMAServer, SCMASetup

__all__ = sorted(_algorithms_all + [
    "CommLedger", "HorizontalFederation", "SCMAClient", "SCMADecodeError", "SCMAServer",
    "SCMASetup", "VerticalFederation", "datasets", "metrics", "partition", "__version__"])
