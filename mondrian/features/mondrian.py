"""Mondrian random features (Balog et al. 2016, Sec. 3).

:class:`MondrianFeatures` grows M independent Mondrian trees on the training
data up to a lifetime Λ and maps points to the sparse feature vectors of
eq. (2): one indicator per tree, of the point's cell at lifetime λ ≤ Λ,
scaled by 1/√M.  The induced kernel k_M(x, x') = φ(x)ᵀφ(x') converges to the
Laplace kernel exp(-λ‖x - x'‖₁) as M → ∞ (Prop. 1).

The trees, a copy of the training points and the trees' random streams live
in one C forest (:class:`~mondrian._ext._forest.Forest`, ``forest_``); the
feature matrix, the Gram matrix and the kernel-width path
(:mod:`mondrian.path`) are all computed from it.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._ext._forest import Forest
from .._progress import check_verbose, progress
from .._validation import (check_array_input, check_int, check_lifetime,
                          check_random_generator, resolve_n_jobs)

__all__ = ["MondrianFeatures"]


class MondrianFeatures(TransformerMixin, BaseEstimator):
    """Sparse random features of the Mondrian kernel.

    ``fit`` grows ``n_trees`` Mondrian trees (paper Sec. 2.2) on X up to
    ``lifetime``; ``transform`` maps points to the feature vector of eq. (2)
    at any lifetime λ ≤ the fitted one, so one forest serves every kernel
    width in [0, Λ] (Sec. 4.1).

    Each row has exactly ``n_trees`` stored entries, one per tree.  For the
    training points every entry is 1/√M.  A point not seen in ``fit`` gets,
    in each tree, the *expected* value of its indicator under the
    conditional Mondrian (Sec. 2.4): the probability
    exp(-Σⱼ eⱼ(x)(min(τⱼ, λ) - τ_parent(j))⁺)/√M that no cut separates it
    from its cell's training points, where eⱼ(x) is the ℓ₁ distance of x to
    node j's data box.  Hence ``Φ(X_train) Φ(x)ᵀ`` is an unbiased estimate of
    exp(-λ‖x_train - x‖₁) for any x, also outside the training data's hull.

    Parameters
    ----------
    n_trees : int, default=100
        Number M of independent Mondrian trees (non-zeros per row).
    lifetime : float, default=1.0
        Terminal lifetime Λ ≥ 0: the Laplace kernel's inverse width λ of
        ``exp(-λ‖x - x'‖₁)`` (Sec. 3) and the largest lifetime ``transform``
        accepts.
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        Source of randomness.  Every tree draws from its own child stream
        (``Generator.spawn``), so results do not depend on ``n_jobs``.
    n_jobs : int or None, default=None
        Threads for growing trees and building features (None or -1: all cores;
        capped at the cores available).
    verbose : int, default=0
        0: silent; 1 or more: ``fit`` and ``extend`` report the trees grown
        and the time on stderr (a tqdm bar if tqdm is installed).  The trees
        are grown in one parallel call of the C core, so the report has two
        points, before and after.  Results do not depend on it.

    Attributes
    ----------
    forest_ : Forest
        The fitted forest: the trees in one global node numbering (read-only
        node arrays, views of the C memory), its own copy of the training
        points and the trees' bit generators.
    trees_ : tuple of TreeView
        Per-tree read-only access to ``forest_`` in node ids local to each
        tree (computed on access).
    lifetime_ : float
        The lifetime up to which the trees are grown.
    n_features_in_ : int
        Input dimension D.
    n_cells_ : int
        Number of columns of the feature matrix at ``lifetime_``.

    See Also
    --------
    mondrian.kernels.laplace_kernel : the exact kernel approximated here.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianFeatures
    >>> X = np.random.default_rng(0).random((200, 3))
    >>> mf = MondrianFeatures(n_trees=50, lifetime=2.0, random_state=0).fit(X)
    >>> Phi = mf.transform(X)
    >>> Phi.shape[0], Phi.nnz
    (200, 10000)
    """

    def __init__(self, n_trees: int = 100, lifetime: float = 1.0, *, random_state=None,
                 n_jobs: int | None = None, verbose: int = 0):
        self.n_trees = n_trees
        self.lifetime = lifetime
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None) -> "MondrianFeatures":
        """Grow the trees on X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points: dense, finite; float32 input is promoted.
        y : ignored

        Returns
        -------
        self
        """
        n_trees = check_int(self.n_trees, "n_trees")
        lifetime = check_lifetime(self.lifetime)
        n_threads = resolve_n_jobs(self.n_jobs)
        verbose = check_verbose(self.verbose)
        X = check_array_input(self, X, reset=True)
        rng = check_random_generator(self.random_state)
        streams = rng.spawn(n_trees)
        # The forest copies X: changing the caller's array later cannot
        # affect the trees or their extension.
        forest = Forest(n_trees, X.shape[1])
        with progress(n_trees, f"MondrianFeatures.fit: trees to lifetime {lifetime:.4g}",
                      verbose) as bar:
            forest.fit(X, lifetime, [g.bit_generator for g in streams], n_threads)
            bar.update(n_trees)
        self.forest_ = forest
        self.lifetime_ = lifetime
        self.n_cells_ = int(forest.n_leaves)
        return self

    def extend(self, lifetime: float) -> "MondrianFeatures":
        """Grow the fitted trees further, up to a larger ``lifetime``.

        By memorylessness of the exponential clocks (Sec. 2.2), a leaf that
        has not split by the fitted lifetime Λ splits at Λ + Exp(linear
        dimension), so continuing the existing trees gives forests with the
        same distribution as growing them to ``lifetime`` from scratch; the
        cells at every λ ≤ Λ are unchanged.  Each tree continues its own
        random stream.

        The forest is grown in place, unless split events or path learners
        (or views of its arrays) still read it: then a copy is grown and
        becomes ``forest_``, and they keep the forest they were made from.

        Parameters
        ----------
        lifetime : float
            The new terminal lifetime, >= ``lifetime_``.

        Returns
        -------
        self
        """
        check_is_fitted(self, "forest_")
        lifetime = check_lifetime(lifetime)
        if lifetime < self.lifetime_:
            raise ValueError(f"lifetime={lifetime!r} is below the fitted lifetime "
                             f"{self.lifetime_!r}; extend only grows trees")
        verbose = check_verbose(self.verbose)
        forest = self.forest_.copy() if self.forest_.shared else self.forest_
        with progress(forest.n_trees, f"MondrianFeatures.extend: trees to lifetime "
                      f"{lifetime:.4g}", verbose) as bar:
            forest.extend(lifetime, resolve_n_jobs(self.n_jobs))
            bar.update(forest.n_trees)
        self.forest_ = forest
        self.lifetime_ = lifetime
        self.n_cells_ = int(forest.n_leaves)
        return self

    @property
    def trees_(self) -> tuple:
        """The fitted trees as read-only :class:`TreeView` objects (local node
        ids), views of ``forest_``."""
        forest = self.forest_
        return tuple(forest.tree(m) for m in range(forest.n_trees))

    def fit_transform(self, X, y=None, **fit_params) -> sp.csr_array:
        """Grow the trees on X and return its features at the fitted lifetime.

        Faster than ``fit(X).transform(X)`` (the features of training points
        are read off the trees without lookups) and equal to it.
        """
        self.fit(X, y)
        return self._features(None, self.lifetime_)

    # ------------------------------------------------------------ transform
    def transform(self, X, lifetime: float | None = None) -> sp.csr_array:
        """Feature matrix Φ of X at ``lifetime`` (eq. (2)).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        lifetime : float, optional
            λ in [0, ``lifetime_``]; default ``lifetime_``.

        Returns
        -------
        scipy.sparse.csr_array of shape (n_samples, n_columns), float64
            Exactly ``n_trees`` stored entries per row, sorted by column;
            tree m's cells occupy a contiguous block of columns.
        """
        check_is_fitted(self, "forest_")
        X = check_array_input(self, X, reset=False)
        lam = self._check_lifetime_arg(lifetime)
        return self._features(X, lam)

    def training_features(self, lifetime: float | None = None) -> sp.csr_array:
        """Feature matrix of the training points at ``lifetime``, rows in fit order.

        Equal to ``transform(X_fit, lifetime)`` but read off the trees'
        node slices, without lookups.
        """
        check_is_fitted(self, "forest_")
        return self._features(None, self._check_lifetime_arg(lifetime))

    def gram(self, lifetime: float | None = None) -> np.ndarray:
        """Dense Gram matrix ΦᵀΦ of the training features at ``lifetime``.

        Entry (a, b) is the number of training points in both cells a and b,
        divided by M (Sec. 4.2.1's A = ΦᵀΦ + δ²I without the ridge term).
        Computed in C from the trees' point slices, tree pair by tree pair;
        several times faster than the sparse product ``Phi.T @ Phi``.

        Returns
        -------
        ndarray of shape (n_columns, n_columns)
            Symmetric; memory 8·n_columns² bytes.
        """
        check_is_fitted(self, "forest_")
        lam = self._check_lifetime_arg(lifetime)
        return self.forest_.gram(lam, resolve_n_jobs(self.n_jobs))

    def kernel(self, X, Y=None, lifetime: float | None = None) -> np.ndarray:
        """Mondrian kernel estimate k_M(x, y) = φ(x)ᵀφ(y) (Sec. 3.1).

        With training points in either argument this is an unbiased estimate
        of the Laplace kernel exp(-λ‖x - y‖₁) (Prop. 1); for two points both
        unseen in ``fit`` it is a product of expectations, not unbiased.

        Parameters
        ----------
        X : array-like of shape (n_x, n_features)
        Y : array-like of shape (n_y, n_features), optional
            Default: X.
        lifetime : float, optional
            λ in [0, ``lifetime_``]; default ``lifetime_``.

        Returns
        -------
        ndarray of shape (n_x, n_y)
        """
        Phi_x = self.transform(X, lifetime)
        Phi_y = Phi_x if Y is None else self.transform(Y, lifetime)
        return (Phi_x @ Phi_y.T).toarray()

    # -------------------------------------------------------------- helpers
    def _check_lifetime_arg(self, lifetime) -> float:
        if lifetime is None:
            return self.lifetime_
        return check_lifetime(lifetime, upper=self.lifetime_)

    def _features(self, X: np.ndarray | None, lifetime: float) -> sp.csr_array:
        n_threads = resolve_n_jobs(self.n_jobs)
        data, indices, indptr, n_cols = self.forest_.features(X, lifetime, n_threads)
        n_rows = self.forest_.n_points if X is None else X.shape[0]
        return _csr(data, indices, indptr, (n_rows, n_cols))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


def _csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
         shape: tuple[int, int]) -> sp.csr_array:
    """A csr_array over the C core's buffers (no copies; indices sorted per row)."""
    out = sp.csr_array((data, indices, indptr), shape=shape, copy=False)
    out.has_sorted_indices = True
    return out
