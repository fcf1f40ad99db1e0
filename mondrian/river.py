"""River adapters: the online Mondrian estimators behind river's one-point API.

`river <https://riverml.xyz>`_ learns from one point at a time, given as a
dict ``{feature name: value}``.  :class:`MondrianKernelRidgeRegressor` and
:class:`MondrianFeaturesTransformer` wrap
:class:`~mondrian.MondrianKernelRidge` (exact online ridge) and
:class:`~mondrian.MondrianFeatures` with river's ``learn_one`` /
``predict_one`` / ``transform_one``.  river is an optional dependency,
imported only by this module (``pip install river``).

Labels (:class:`MondrianSGDClassifier`) may appear at any time, as river
expects: a new label gets a one-vs-rest weight vector starting at zero.

Feature names.  The trees live in a fixed input dimension, set by the first
point learnt: its features, sorted by name, are the dimensions.  A feature
missing from a later point takes the running mean of the values seen for
it; a feature that was not in the first point is ignored.  The forest keeps
no points (``store_points=False``) and caps every tree at ``max_nodes``
nodes, so memory stays bounded however long the stream.
"""
from __future__ import annotations

try:
    from river import base as _river_base
except ImportError as exc:  # pragma: no cover - exercised without river
    raise ImportError("mondrian.river needs the river package: pip install river") from exc

import numpy as np

from .features.mondrian import MondrianFeatures
from .ridge import MondrianKernelRidge
from .sgd import sgd_pass

__all__ = ["MondrianKernelRidgeRegressor", "MondrianFeaturesTransformer",
           "MondrianSGDClassifier"]


class _Vectorizer:
    """Dict -> row of the fixed dimensions (see the module docstring)."""

    def __init__(self):
        self.names = None
        self.sums = None
        self.counts = None

    def learn(self, x: dict) -> np.ndarray:
        if self.names is None:
            self.names = sorted(x, key=str)
            self.sums = np.zeros(len(self.names))
            self.counts = np.zeros(len(self.names))
        row = self.row(x)
        for k, name in enumerate(self.names):
            if name in x:
                self.sums[k] += float(x[name])
                self.counts[k] += 1
        return row

    def row(self, x: dict) -> np.ndarray:
        means = np.divide(self.sums, self.counts, out=np.zeros_like(self.sums),
                          where=self.counts > 0)
        out = np.array([float(x[n]) if n in x else means[k]
                        for k, n in enumerate(self.names)], dtype=np.float64)
        if not np.all(np.isfinite(out)):
            raise ValueError(f"x has non-finite values: {x!r}")
        return out[None, :]


class MondrianKernelRidgeRegressor(_river_base.Regressor):
    """Exact online Mondrian kernel ridge regression, river style.

    Each ``learn_one`` inserts the point into the trees and updates the
    ridge weights exactly (:meth:`mondrian.MondrianKernelRidge.partial_fit`);
    ``predict_one`` is 0 before the first point.

    Parameters
    ----------
    n_trees : int, default=20
        Number of Mondrian trees.
    lifetime : float, default=1.0
        Kernel lifetime (inverse width, in the features' units: standardise
        them first, e.g. with ``river.preprocessing.StandardScaler``).
    alpha : float, default=1.0
        Ridge regularisation.
    max_nodes : int, default=63
        Node cap per tree (32 cells): a memory bound, and a time bound, as
        each ``learn_one`` updates a Cholesky factor of the C ≤ 32·n_trees
        columns in O(C²).
    seed : int or None, default=None
        Random seed of the trees.
    """

    def __init__(self, n_trees: int = 20, lifetime: float = 1.0, alpha: float = 1.0,
                 max_nodes: int = 63, seed: int | None = None):
        self.n_trees = n_trees
        self.lifetime = lifetime
        self.alpha = alpha
        self.max_nodes = max_nodes
        self.seed = seed
        self._vectorizer = _Vectorizer()
        self._model = MondrianKernelRidge(n_trees=n_trees, lifetime=lifetime, alpha=alpha,
                                          random_state=seed, n_jobs=1, store_points=False,
                                          max_nodes=max_nodes)

    @property
    def _is_stochastic(self):
        return True

    @classmethod
    def _unit_test_params(cls):
        yield {"n_trees": 5, "max_nodes": 63}

    def learn_one(self, x: dict, y: float) -> None:
        """Learn one point."""
        row = self._vectorizer.learn(x)
        self._model.partial_fit(row, np.array([float(y)]))

    def predict_one(self, x: dict) -> float:
        """Prediction for one point (0 before any learning)."""
        if self._vectorizer.names is None:
            return 0.0
        return float(self._model.predict(self._vectorizer.row(x))[0])


class MondrianFeaturesTransformer(_river_base.Transformer):
    """Mondrian random features of one point, river style.

    ``transform_one`` returns the point's sparse feature vector as a dict
    ``{column: value}`` with one entry per tree (columns keep their index as
    the trees grow, new cells get new columns; see
    :meth:`mondrian.MondrianFeatures.partial_fit`), ready for a river linear
    model; ``{}`` before the first point.

    Parameters
    ----------
    n_trees : int, default=20
    lifetime : float, default=1.0
    max_nodes : int, default=63
    seed : int or None, default=None
    """

    def __init__(self, n_trees: int = 20, lifetime: float = 1.0, max_nodes: int = 63,
                 seed: int | None = None):
        self.n_trees = n_trees
        self.lifetime = lifetime
        self.max_nodes = max_nodes
        self.seed = seed
        self._vectorizer = _Vectorizer()
        self._features = MondrianFeatures(n_trees=n_trees, lifetime=lifetime, random_state=seed,
                                          n_jobs=1, store_points=False, max_nodes=max_nodes)

    @property
    def _is_stochastic(self):
        return True

    @classmethod
    def _unit_test_params(cls):
        yield {"n_trees": 5, "max_nodes": 63}

    def learn_one(self, x: dict) -> None:
        """Insert one point into the trees."""
        self._features.partial_fit(self._vectorizer.learn(x))

    def transform_one(self, x: dict) -> dict:
        """The point's features ``{column: value}``."""
        if self._vectorizer.names is None:
            return {}
        phi = self._features.transform(self._vectorizer.row(x))
        return {int(c): float(v) for c, v in zip(phi.indices, phi.data)}


class MondrianSGDClassifier(_river_base.Classifier):
    """Online classifier on Mondrian features, river style.

    One-vs-rest SGD with the logistic or hinge loss on the features of
    :class:`~mondrian.MondrianFeatures` (one step per ``learn_one``, step
    η₀/(1 + α·η₀·t), as :class:`mondrian.MondrianSGDClassifier`); new cells
    and new labels start with zero weights.  ``predict_proba_one`` gives the
    one-vs-rest sigmoids normalised to sum 1 ({} before any label, 1 for the
    only label seen so far).

    Parameters
    ----------
    n_trees : int, default=20
    lifetime : float, default=1.0
    loss : {'log_loss', 'hinge'}, default='log_loss'
    alpha : float, default=1e-4
    eta0 : float, default=1.0
    max_nodes : int, default=63
    seed : int or None, default=None
    """

    def __init__(self, n_trees: int = 20, lifetime: float = 1.0, loss: str = "log_loss",
                 alpha: float = 1e-4, eta0: float = 1.0, max_nodes: int = 63,
                 seed: int | None = None):
        if loss not in ("log_loss", "hinge"):
            raise ValueError(f"loss must be 'log_loss' or 'hinge', got {loss!r}")
        self.n_trees = n_trees
        self.lifetime = lifetime
        self.loss = loss
        self.alpha = alpha
        self.eta0 = eta0
        self.max_nodes = max_nodes
        self.seed = seed
        self._vectorizer = _Vectorizer()
        self._features = MondrianFeatures(n_trees=n_trees, lifetime=lifetime, random_state=seed,
                                          n_jobs=1, store_points=False, max_nodes=max_nodes)
        self._labels = []
        self._W = np.zeros((0, 0))
        self._b = np.zeros(0)
        self._t = 0

    @property
    def _multiclass(self):
        return True

    @property
    def _is_stochastic(self):
        return True

    @classmethod
    def _unit_test_params(cls):
        yield {"n_trees": 5, "max_nodes": 63}

    def learn_one(self, x: dict, y) -> None:
        """One SGD step on the point (after inserting it into the trees)."""
        if y not in self._labels:
            self._labels.append(y)
            self._W = np.hstack([self._W, np.zeros((self._W.shape[0], 1))])
            self._b = np.append(self._b, 0.0)
        self._features.partial_fit(self._vectorizer.learn(x))
        phi = self._features.transform(self._vectorizer.row(x))
        if self._W.shape[0] < phi.shape[1]:
            self._W = np.vstack([self._W, np.zeros((phi.shape[1] - self._W.shape[0],
                                                    self._W.shape[1]))])
        self._t = sgd_pass(phi, np.array([self._labels.index(y)]), np.array([0]), self._W,
                           self._b, self._t, loss=self.loss, alpha=float(self.alpha),
                           eta0=float(self.eta0), binary=False)

    def predict_proba_one(self, x: dict) -> dict:
        """Class probabilities of one point."""
        if not self._labels:
            return {}
        if len(self._labels) == 1:
            return {self._labels[0]: 1.0}
        phi = self._features.transform(self._vectorizer.row(x))
        W = self._W[: phi.shape[1]]
        scores = phi @ W + self._b
        p = np.exp(-np.logaddexp(0.0, -scores[0]))
        total = p.sum()
        p = p / total if total > 0 else np.full(p.shape, 1.0 / p.size)
        return {label: float(q) for label, q in zip(self._labels, p)}
