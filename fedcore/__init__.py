"""fedcore: federated clustering with exact unlearning, secure aggregation and coresets."""
__version__ = "0.1.0"  # before the imports: the kernels' cache directory is named after it

from ._moved import install as _install_moved

_install_moved()

from . import datasets, metrics  # noqa: E402
from .algorithms import *  # noqa: E402,F401,F403
from .algorithms import __all__ as _algorithms_all  # noqa: E402
from .federation import (CommLedger, HorizontalFederation, VerticalFederation,  # noqa: E402
                         partition)
from .persistence import load  # noqa: E402
from .secagg import SCMAClient, SCMADecodeError, SCMAServer, SCMASetup  # noqa: E402

__all__ = sorted(_algorithms_all + [
    "CommLedger", "HorizontalFederation", "SCMAClient", "SCMADecodeError", "SCMAServer",
    "SCMASetup", "VerticalFederation", "datasets", "load", "metrics", "partition",
    "__version__"])
