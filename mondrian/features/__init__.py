"""Random-feature maps: the Mondrian features and their peers (Fourier,
binning, Maclaurin), one scikit-learn transformer API.

* :mod:`mondrian.features.mondrian` -- :class:`MondrianFeatures` (Balog et
  al. 2016, Sec. 3): sparse features of M Mondrian partitions, one forest
  for every kernel width λ ≤ Λ;
* :mod:`mondrian.features.fourier` -- random Fourier features (Laplace ℓ₁ or
  ARD Gaussian kernel);
* :mod:`mondrian.features.binning` -- random binning features;
* :mod:`mondrian.features.maclaurin` -- random Maclaurin features for
  dot-product kernels.
"""
from .binning import RandomBinningFeatures
from .fourier import RandomFourierFeatures
from .maclaurin import RandomMaclaurinFeatures
from .mondrian import MondrianFeatures

__all__ = ["MondrianFeatures", "RandomFourierFeatures", "RandomBinningFeatures",
           "RandomMaclaurinFeatures"]
