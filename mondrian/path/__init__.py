"""The kernel-width path: every lifetime from one forest (Balog et al. 2016, Sec. 4).

A Mondrian forest grown to a terminal lifetime Λ holds the features of every
lifetime λ ∈ [0, Λ]: sorting the split events of all trees by time, each
event replaces the feature of the cell that splits by the features of its two
children (Sec. 4.1).  Learners follow the events warm-started.

* :mod:`~mondrian.path.events` -- the split events and lifetime grids;
* :mod:`~mondrian.path.learners` -- exact (Cholesky, in the primal or the
  dual) and scalable (CG) ridge paths and the SGD path;
* :mod:`~mondrian.path.classify` -- converged logistic / squared-hinge
  classifiers along the path (truncated Newton), and the classifier's
  leave-one-out width pilot;
* :mod:`~mondrian.path.posterior` -- the exact posterior over λ;
* :mod:`~mondrian.path.estimators` -- :class:`MondrianKernelRidgeCV` and
  :class:`MondrianKernelClassifierCV`.
"""
from .classify import DualClassScorer, NewtonClassifierPath
from .estimators import MondrianKernelClassifierCV, MondrianKernelRidgeCV
from .events import SplitEvents, lifetime_grid, split_events
from .learners import (EXACT_MAX_BYTES, EXACT_MAX_COLUMNS, CGRidgePath, DualExactRidgePath,
                       ExactRidgePath, SGDPath, check_exact_size, exact_path_memory,
                       exact_ridge_path)
from .posterior import LifetimePosterior

__all__ = [
    "SplitEvents", "split_events", "lifetime_grid",
    "ExactRidgePath", "DualExactRidgePath", "exact_ridge_path", "CGRidgePath", "SGDPath",
    "check_exact_size", "exact_path_memory",
    "NewtonClassifierPath", "DualClassScorer",
    "EXACT_MAX_COLUMNS", "EXACT_MAX_BYTES",
    "LifetimePosterior",
    "MondrianKernelRidgeCV", "MondrianKernelClassifierCV",
]
