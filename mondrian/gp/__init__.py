"""Gaussian-process regression with the sparse-spectrum approximation.

:class:`SparseSpectrumGPRegressor` is the sparse-spectrum GP of
Lázaro-Gredilla et al. (2010), the model of Hoang et al. (2020, Sec. 2);
:func:`exact_gp_regressor` sets up scikit-learn's exact
``GaussianProcessRegressor`` identically, as the baseline.
"""
from .embedding import DisentanglingEmbedding
from .exact import exact_gp_kernel, exact_gp_regressor
from .ssgp import (SparseSpectrumGPRegressor, initial_theta, length_scale_bounds,
                   sparse_spectrum_nlml)

__all__ = [
    "SparseSpectrumGPRegressor",
    "sparse_spectrum_nlml",
    "initial_theta",
    "length_scale_bounds",
    "exact_gp_regressor",
    "exact_gp_kernel",
    "DisentanglingEmbedding",
]
