"""Mondrian forests on the Mondrian kernel's trees (paper Sec. 6 and 8.3).

:class:`MondrianForestRegressor` and :class:`MondrianForestClassifier` grow
their trees with :class:`~mondrian.MondrianFeatures` (the same C forest as the
kernel's) and predict by averaging the trees' predictive distributions; see
:mod:`mondrian.forest.estimators` for the model and ``doc/forests.rst`` for
the user guide.  :class:`DebiasedMondrianForestRegressor`
(:mod:`mondrian.forest.debiased`) is the debiased forest of Cattaneo,
Klusowski & Underwood with confidence intervals.
"""
from .debiased import DebiasedMondrianForestRegressor
from .estimators import MondrianForestClassifier, MondrianForestRegressor

__all__ = ["MondrianForestRegressor", "MondrianForestClassifier",
           "DebiasedMondrianForestRegressor"]
