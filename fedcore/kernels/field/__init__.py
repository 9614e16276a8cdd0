"""The prime field F_p and what SCMA decodes with: arithmetic, polynomials, Reed-Solomon.

``fedcore.kernels.field`` keeps exporting the arithmetic of :mod:`.arithmetic` (its path before
the field kernels became a package).
"""
from .arithmetic import *  # noqa: F401,F403
from .arithmetic import __all__
