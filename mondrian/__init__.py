"""mondrian: kernel learning with Mondrian random features.

The Mondrian kernel (Balog, Lakshminarayanan, Ghahramani, Roy & Teh, 2016)
approximates the Laplace kernel exp(-λ‖x - x'‖₁) with sparse random features
from M Mondrian-process partitions; one forest serves every λ ≤ Λ.
"""
from .features import MondrianFeatures
from .kernels import laplace_kernel
from .ridge import MondrianKernelRidge, ridge_solve

__version__ = "0.1.0"

__all__ = [
    "MondrianFeatures",
    "MondrianKernelRidge",
    "laplace_kernel",
    "ridge_solve",
    "__version__",
]
