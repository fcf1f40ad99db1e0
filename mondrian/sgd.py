"""An online classifier on Mondrian features: stochastic gradient descent
with the hinge or logistic loss (paper Sec. 5: new cells are new features,
whose weights start at zero).

The features of a training point have exactly M entries of 1/√M (one per
tree), so ‖φ(x)‖ = 1 for every point learnt: a step size of order 1 is safe
whatever the data's scale, which is what makes the defaults work without
tuning.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ._validation import (check_array_input, check_bool, check_int, check_positive_float,
                          check_random_generator, check_rotation, plain_scalar)
from .features.mondrian import MondrianFeatures, SharesTreesOnCopy

__all__ = ["MondrianSGDClassifier"]

_LOSSES = ("log_loss", "hinge")


def sgd_pass(Phi, targets: np.ndarray, order: np.ndarray, W: np.ndarray, b: np.ndarray,
             t: int, *, loss: str, alpha: float, eta0: float, binary: bool) -> int:
    """One pass of one-vs-rest SGD over the rows ``order`` of the CSR matrix
    Phi, in place on the weights W (columns, one per class, or one for the
    second of two classes if ``binary``) and intercepts b; ``targets`` are
    class indices, t the number of steps taken before.  Returns the new t.

    W is kept as scale·V so that the weight decay (1 - ηα) of a step is one
    multiplication, and a step touches only the point's M rows.
    """
    hinge = loss == "hinge"
    k = W.shape[1]
    indptr, indices, data = Phi.indptr, Phi.indices, Phi.data
    scale = 1.0
    signs = np.empty(k)
    for i in order:
        idx = indices[indptr[i]:indptr[i + 1]]
        val = data[indptr[i]:indptr[i + 1]]
        eta = eta0 / (1.0 + alpha * eta0 * t)
        s = scale * (val @ W[idx]) + b
        if binary:
            signs[0] = 1.0 if targets[i] == 1 else -1.0
        else:
            signs[:] = -1.0
            signs[targets[i]] = 1.0
        margin = signs * s
        if hinge:
            g = np.where(margin < 1.0, -signs, 0.0)
        else:
            # d/ds log(1 + e^{-ts}) = -t / (1 + e^{ts}), computed stably
            g = -signs * np.exp(-np.logaddexp(0.0, margin))
        scale *= 1.0 - eta * alpha
        if scale < 1e-9:              # fold the scale back into the weights
            W *= scale
            scale = 1.0
        W[idx] -= (eta / scale) * np.outer(val, g)
        b -= eta * g
        t += 1
    W *= scale
    return t


class MondrianSGDClassifier(SharesTreesOnCopy, ClassifierMixin, BaseEstimator):
    """Linear classifier on Mondrian features learnt by SGD, online or in batch.

    Minimises Σᵢ ℓ(yᵢ, wₖᵀφ(xᵢ) + bₖ) + (α/2)‖W‖² one vs rest (one weight
    vector per class; one in all for two classes) by stochastic gradient
    descent, one point at a time, with the step ηₜ = η₀/(1 + α·η₀·t) at the
    t-th point learnt (Bottou's schedule: about η₀ at first, 1/(α·t) in the
    end).  ℓ is the logistic loss log(1 + e^{-ts}) or the hinge loss
    max(0, 1 - ts) with t = ±1.

    ``partial_fit`` inserts the batch into the trees
    (:meth:`MondrianFeatures.partial_fit`), pads the weights of the new cells
    with zeros (which keeps every earlier point's scores: its features are
    zero there) and makes one pass over the batch in order.  ``fit`` grows
    the trees on X and makes ``max_iter`` passes in random orders.

    Parameters
    ----------
    n_trees : int, default=100
        Number M of Mondrian trees.
    lifetime : float or 'auto', default='auto'
        Kernel lifetime λ (inverse width of the Laplace kernel).  'auto': the
        data's scale λ₀ = 1/(median ℓ₁ distance between rows of X), see
        :class:`~mondrian.MondrianFeatures` (the fitted value is
        ``features_.lifetime_``).
    loss : {'log_loss', 'hinge'}, default='log_loss'
        'log_loss' gives :meth:`predict_proba`.
    alpha : float, default=1e-4
        L2 regularisation α > 0 (also sets the decay of the step).
    eta0 : float, default=1.0
        Initial step η₀ > 0 (features have unit norm, so about 1 is safe).
    max_iter : int, default=5
        Passes over the data in ``fit`` (``partial_fit`` makes one).
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        The trees and the orders of ``fit``'s passes.
    n_jobs : int or None, default=None
        Threads for the trees and features.
    store_points : bool, default=True
        See :class:`~mondrian.MondrianFeatures` (``False``: memory O(nodes)
        over a stream).
    max_nodes : int or None, default=None
        Per-tree node cap for ``partial_fit`` (see
        :class:`~mondrian.MondrianFeatures`).
    rotation : None or 'uniform', default=None
        One Haar-random rotation per tree about the training mean of the
        first batch (see :class:`~mondrian.MondrianFeatures`).
    feature_scale : 'auto', 'std', None or array-like of shape (n_features,), default='auto'
        Per-feature length scales of the trees, as in
        :class:`~mondrian.MondrianFeatures` ('auto': the features' standard
        deviations over the first ``fit`` or ``partial_fit`` with
        ``lifetime='auto'`` and at least 10 rows, X as given otherwise).
        Fitted value: ``features_.feature_scale_``.

    Attributes
    ----------
    features_ : MondrianFeatures
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_columns,) or (n_columns, n_classes)
        One column per class (a vector for two classes: the second class's
        score).
    intercept_ : float or ndarray of shape (n_classes,)
    t_ : int
        Points learnt (SGD steps taken).
    n_iter_ : int
        Passes over the data made by the last ``fit`` or ``partial_fit``
        (``max_iter``, or 1).
    n_features_in_ : int
    """

    def __init__(self, n_trees: int = 100, lifetime: float | str = "auto", *,
                 loss: str = "log_loss", alpha: float = 1e-4, eta0: float = 1.0,
                 max_iter: int = 5, random_state=None, n_jobs: int | None = None,
                 store_points: bool = True,
                 max_nodes: int | None = None, rotation=None, feature_scale="auto"):
        self.n_trees = n_trees
        self.lifetime = lifetime
        self.loss = loss
        self.alpha = alpha
        self.eta0 = eta0
        self.max_iter = max_iter
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.store_points = store_points
        self.max_nodes = max_nodes
        self.rotation = rotation
        self.feature_scale = feature_scale

    # ------------------------------------------------------------- learning

    def _check_params(self) -> None:
        if self.loss not in _LOSSES:
            raise ValueError(f"loss must be one of {_LOSSES}, got {self.loss!r}")
        check_positive_float(self.alpha, "alpha")
        check_positive_float(self.eta0, "eta0")
        check_int(self.max_iter, "max_iter")
        check_bool(self.store_points, "store_points")
        check_rotation(self.rotation)

    def _new_features(self, rng) -> MondrianFeatures:
        """The (unfitted) trees of this estimator's parameters."""
        return MondrianFeatures(self.n_trees, self.lifetime, random_state=rng,
                                n_jobs=self.n_jobs, store_points=self.store_points,
                                max_nodes=self.max_nodes, rotation=self.rotation,
                                feature_scale=self.feature_scale)

    def fit(self, X, y) -> "MondrianSGDClassifier":
        """Grow the trees on X and make ``max_iter`` SGD passes over (X, y).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).

        Returns
        -------
        self
        """
        self._check_params()
        X, y = check_array_input(self, X, reset=True, y=y)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"y has one class ({plain_scalar(classes[0])!r}); a classifier "
                             "needs 2 classes")
        rng = check_random_generator(self.random_state)
        features = self._new_features(rng)
        Phi = features.fit_transform(X)
        k = 1 if classes.size == 2 else classes.size
        W = np.zeros((Phi.shape[1], k))
        b = np.zeros(k)
        targets = np.searchsorted(classes, y)
        t = 0
        for _ in range(int(self.max_iter)):
            order = rng.permutation(X.shape[0])
            t = self._sgd(Phi, targets, order, W, b, t)
        self.features_ = features
        self.classes_ = classes
        self._set_weights(W, b)
        self.t_ = t
        self.n_iter_ = int(self.max_iter)
        return self

    def partial_fit(self, X, y, classes=None) -> "MondrianSGDClassifier":
        """Insert the batch into the trees and make one SGD pass over it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like, optional
            Every class of the stream: required on the first call (unless
            ``fit`` was called), optional but checked later.

        Returns
        -------
        self
        """
        self._check_params()
        first = not hasattr(self, "classes_")
        X, y = check_array_input(self, X, reset=first, y=y)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit "
                                 "(every class of the stream)")
            all_classes = np.unique(np.asarray(classes))
            if all_classes.size < 2:
                raise ValueError(f"classes must hold at least two classes, got {all_classes}")
        else:
            all_classes = self.classes_
            if classes is not None and not np.array_equal(np.unique(np.asarray(classes)),
                                                          all_classes):
                raise ValueError(f"classes={classes!r} differs from the classes of the first "
                                 f"call ({all_classes!r})")
        unseen = np.setdiff1d(np.unique(y), all_classes)
        if unseen.size:
            raise ValueError(f"y has labels {unseen!r} not among the classes "
                             f"{all_classes!r}; pass every class on the first call")
        if first:
            rng = check_random_generator(self.random_state)
            features = self._new_features(rng)
            Phi = features.fit_transform(X)
            k = 1 if all_classes.size == 2 else all_classes.size
            W, b, t = np.zeros((0, k)), np.zeros(k), 0
        else:
            features = self.features_
            features.partial_fit(X)
            Phi = features.transform(X)
            W, b, t = self._weights(), np.array(self.intercept_, ndmin=1, dtype=float), self.t_
        if W.shape[0] < Phi.shape[1]:     # new cells: zero weights
            W = np.vstack([W, np.zeros((Phi.shape[1] - W.shape[0], W.shape[1]))])
        targets = np.searchsorted(all_classes, y)
        t = self._sgd(Phi, targets, np.arange(X.shape[0]), W, b, t)
        self.features_ = features
        self.classes_ = all_classes
        self._set_weights(W, b)
        self.t_ = t
        self.n_iter_ = 1
        return self

    def _sgd(self, Phi, targets: np.ndarray, order: np.ndarray, W: np.ndarray, b: np.ndarray,
             t: int) -> int:
        return sgd_pass(Phi, targets, order, W, b, t, loss=self.loss, alpha=float(self.alpha),
                        eta0=float(self.eta0), binary=W.shape[1] == 1)

    def _weights(self) -> np.ndarray:
        return self.coef_.reshape(self.coef_.shape[0], -1).copy()

    def _set_weights(self, W: np.ndarray, b: np.ndarray) -> None:
        self.coef_ = W[:, 0].copy() if W.shape[1] == 1 else W
        self.intercept_ = float(b[0]) if b.shape[0] == 1 else b.copy()

    # ----------------------------------------------------------- prediction
    def decision_function(self, X) -> np.ndarray:
        """Scores φ(x)ᵀW + b: shape (n_samples,) for two classes (the second
        class's score), else (n_samples, n_classes)."""
        check_is_fitted(self, "coef_")
        X = check_array_input(self, X, reset=False)
        return self.features_.dot(X, self.coef_) + self.intercept_

    def predict(self, X) -> np.ndarray:
        """Class of the largest score."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (``loss='log_loss'`` only): the sigmoid of the
        score for two classes; one vs rest sigmoids normalised to sum 1 for
        more.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        if self.loss != "log_loss":
            raise AttributeError("predict_proba needs loss='log_loss'")
        scores = self.decision_function(X)
        p = np.exp(-np.logaddexp(0.0, -scores))
        if p.ndim == 1:
            return np.column_stack([1.0 - p, p])
        total = p.sum(axis=1, keepdims=True)
        return np.where(total > 0, p / np.where(total > 0, total, 1.0), 1.0 / p.shape[1])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags
