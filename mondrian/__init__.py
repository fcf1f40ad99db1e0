"""mondrian: kernel learning with Mondrian random features.

The Mondrian kernel (Balog, Lakshminarayanan, Ghahramani, Roy & Teh, 2016)
approximates the Laplace kernel exp(-λ‖x - x'‖₁) with sparse random features
from M Mondrian-process partitions; one forest serves every λ ≤ Λ.
"""
import importlib.util as _importlib_util
import os as _os
import sys as _sys


def _defer_to_installed_copy() -> None:
    """Run from a source checkout, import the installed package instead.

    ``python -m mondrian`` started in the checkout's root finds this source
    tree first on ``sys.path``, but the compiled core is not in it: it is in
    the installed package (an editable install's import hook finds it in its
    build directory, and then nothing is done here).  When the core cannot be
    found, point the package's ``__path__`` at the installed copy, so that
    every submodule comes from that one installation.
    """
    if _importlib_util.find_spec(f"{__name__}._ext._forest") is not None:
        return
    _sys.modules.pop(f"{__name__}._ext", None)
    here = _os.path.dirname(_os.path.abspath(__file__))
    for entry in _sys.path:
        candidate = _os.path.join(_os.path.abspath(entry or _os.getcwd()), "mondrian")
        ext = _os.path.join(candidate, "_ext")
        if candidate == here or not _os.path.isdir(ext):
            continue
        if any(name.startswith("_forest.") and name.endswith((".so", ".pyd"))
               for name in _os.listdir(ext)):
            __path__[:] = [candidate]
            return
    raise ImportError(
        f"mondrian is imported from its source tree ({here}), which has no compiled core, "
        "and no installed copy was found: run `pip install .` (or "
        "`pip install --no-build-isolation -e .` for development)")


_defer_to_installed_copy()

from .features import (MondrianFeatures, RandomBinningFeatures, RandomFourierFeatures,
                       RandomMaclaurinFeatures)
from .gp import DisentanglingEmbedding, SparseSpectrumGPRegressor
from .kernels import (dot_product_kernel, exponential_kernel, gaussian_kernel, laplace_kernel,
                      polynomial_kernel, rotated_laplace_kernel)
from .path import LifetimePosterior, MondrianKernelClassifierCV, MondrianKernelRidgeCV
from .ridge import MondrianKernelRidge, ridge_solve
from .sgd import MondrianSGDClassifier
from .forest import (DebiasedMondrianForestRegressor, MondrianForestClassifier,
                     MondrianForestRegressor)

__version__ = "0.1.0"

__all__ = [
    "MondrianFeatures",
    "MondrianKernelRidge",
    "MondrianSGDClassifier",
    "MondrianForestRegressor",
    "MondrianForestClassifier",
    "DebiasedMondrianForestRegressor",
    "laplace_kernel",
    "rotated_laplace_kernel",
    "RandomBinningFeatures",
    "RandomFourierFeatures",
    "RandomMaclaurinFeatures",
    "gaussian_kernel",
    "exponential_kernel",
    "polynomial_kernel",
    "dot_product_kernel",
    "ridge_solve",
    "MondrianKernelRidgeCV",
    "MondrianKernelClassifierCV",
    "LifetimePosterior",
    "SparseSpectrumGPRegressor",
    "DisentanglingEmbedding",
    "__version__",
]
