"""mondrian: kernel learning with Mondrian random features.

The Mondrian kernel (Balog, Lakshminarayanan, Ghahramani, Roy & Teh, 2016)
approximates the Laplace kernel exp(-λ‖x - x'‖₁) with sparse random features
from M Mondrian-process partitions; one forest serves every λ ≤ Λ.
"""
from .binning import RandomBinningFeatures
from .features import MondrianFeatures
from .fourier import RandomFourierFeatures
from .kernels import (dot_product_kernel, exponential_kernel, gaussian_kernel, laplace_kernel,
                      polynomial_kernel)
from .maclaurin import RandomMaclaurinFeatures
from .ridge import MondrianKernelRidge, ridge_solve

__version__ = "0.1.0"

__all__ = [
    "MondrianFeatures",
    "MondrianKernelRidge",
    "laplace_kernel",
    "RandomBinningFeatures",
    "RandomFourierFeatures",
    "RandomMaclaurinFeatures",
    "gaussian_kernel",
    "exponential_kernel",
    "polynomial_kernel",
    "dot_product_kernel",
    "ridge_solve",
    "__version__",
]
