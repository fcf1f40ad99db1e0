"""Mondrian features and ridge regression on Dask arrays (optional: ``dask``).

Nothing outside this module imports dask; the estimators come here when
they are given a dask collection (:func:`is_dask_collection` looks at the
type's module, without importing dask).

Memory model (what each worker holds):

* **Trees.**  ``MondrianFeatures.fit`` grows the forest on a sample of at
  most :data:`SAMPLE_ROWS` rows, drawn from ``random_state``, on the client,
  then inserts the other rows block by block (the conditional Mondrian,
  :meth:`MondrianFeatures.partial_fit`): a chain of tasks, each on the
  worker that holds its block, passing on the forest *without its points*
  (``store_points=False``: boxes, split times and counts, O(nodes)).  Each
  insertion leaves the forest distributed as one grown in batch on every
  point inserted so far (``c/insert.h``), so the result is distributed as a
  forest grown on all rows.  A worker holds one block of X and the forest.
* **Features and normal equations.**  Every block's Φ (sparse, M entries per
  row) is made on its worker, which returns only ΦᵀΦ (C x C, dense up to
  :data:`DENSE_GRAM_MAX` columns, else sparse), Φᵀy, Φᵀ1, Σy and the row
  count; the blocks' results are summed pairwise (a tree reduction written
  with ``dask.delayed``: ``dask.array.dot`` on sparse blocks gathers every
  block into one task).  The fitted forest enters the graph once, as one
  key, which each worker fetches once.  The client solves the C x C system.
* ``predict`` and ``transform`` return dask arrays, block by block.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._validation import all_finite

__all__ = ["is_dask_collection", "SAMPLE_ROWS", "DENSE_GRAM_MAX"]

#: Rows of a dask X on which the trees are grown before the other rows are
#: inserted block by block.
SAMPLE_ROWS = 20_000

#: Up to this many columns the blocks' ΦᵀΦ are dense C x C arrays (8·C²
#: bytes each: 288 MB at the limit) and the client factorises ΦᵀΦ + αI by
#: Cholesky, as the in-memory solver does; above, they are sparse and the
#: client solves by conjugate gradients.
DENSE_GRAM_MAX = 6000


def is_dask_collection(obj) -> bool:
    """True for a dask array, series or data frame (checked by the type's
    module, so that dask is imported only when one is given)."""
    module = type(obj).__module__ or ""
    return module == "dask" or module.startswith(("dask.", "dask_expr."))


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:      # pragma: no cover - a dask object implies dask
        raise ImportError("dask input needs dask: pip install 'mondrian-kernel[dask]'") from exc
    return dask, da


def as_dask_array(X, name: str, *, ndim: int | None = None):
    """A dask array chunked by rows only, with known chunk sizes.

    Data frames and series become arrays (their partitions' lengths are
    computed); unknown chunk sizes (e.g. after boolean masking) are refused.
    """
    dask, da = _dask()
    if not isinstance(X, da.Array):
        to_array = getattr(X, "to_dask_array", None)
        if to_array is None:
            raise TypeError(f"{name} must be a dask array or data frame, got "
                            f"{type(X).__name__}")
        X = to_array(lengths=True)
    if any(np.isnan(c) for chunks in X.chunks for c in chunks):
        raise ValueError(f"{name} has unknown chunk sizes (nan); call "
                         f"{name}.compute_chunk_sizes() first")
    if ndim is not None and X.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {X.shape}")
    if X.ndim == 2 and len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    if X.shape[0] == 0:
        raise ValueError(f"{name} has no rows")
    return X


def _check_block(block, n_features: int, what: str = "X") -> np.ndarray:
    """One block of X, as the in-memory estimators would accept it."""
    block = np.asarray(block)
    if block.dtype.kind not in "biuf":
        raise TypeError(f"{what}: a block has dtype {block.dtype}, not numeric")
    block = np.ascontiguousarray(block, dtype=np.float64)
    if block.ndim != 2 or block.shape[1] != n_features:
        raise ValueError(f"{what}: a block has shape {block.shape}, expected "
                         f"(n, {n_features}) like the others")
    if not all_finite(block):
        raise ValueError(f"{what}: a block holds NaN or infinite values")
    return block


# ------------------------------------------------------------------- trees
def _key(prefix: str) -> str:
    import uuid
    return f"mondrian-{prefix}-{uuid.uuid4().hex}"


def _insert_block(features, block, skip: np.ndarray, n_features: int):
    """A copy of ``features`` with the rows of ``block`` (but those in
    ``skip``, already in the sample) inserted; the input is not modified."""
    import copy

    block = _check_block(block, n_features)
    if skip.size:
        block = np.delete(block, skip, axis=0)
    out = copy.copy(features)
    out.forest_ = features.forest_.copy()
    if block.shape[0]:
        out.partial_fit(block)
    return out


def _sample_rows(block, rows: np.ndarray, n_features: int) -> np.ndarray:
    return _check_block(block, n_features)[rows]


def fit_features(features, X) -> None:
    """:meth:`MondrianFeatures.fit` on a dask array (see the module's notes):
    trees grown on a sample of :data:`SAMPLE_ROWS` rows, then every other
    row inserted, block by block on the workers; the forest keeps no points."""
    from sklearn.base import clone

    from ._validation import check_random_generator
    dask, _ = _dask()
    X = as_dask_array(X, "X", ndim=2)
    n, d = X.shape
    sample_rng, tree_rng = check_random_generator(features.random_state).spawn(2)
    sample = (np.arange(n) if n <= SAMPLE_ROWS
              else np.sort(sample_rng.choice(n, SAMPLE_ROWS, replace=False)))
    bounds = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    blocks = X.to_delayed().ravel()
    local = [sample[(sample >= bounds[b]) & (sample < bounds[b + 1])] - bounds[b]
             for b in range(len(blocks))]
    # The sample's rows, block by block (each block checked where it lives).
    parts = dask.compute(*[dask.delayed(_sample_rows, pure=True)(
        block, rows, d, dask_key_name=_key(f"sample-{b}"))
        for b, (block, rows) in enumerate(zip(blocks, local)) if rows.size])
    grower = clone(features).set_params(random_state=tree_rng, store_points=False)
    grower.fit(np.concatenate(parts))
    current = grower
    for b, block in enumerate(blocks):
        skip = local[b]
        if skip.size == bounds[b + 1] - bounds[b]:
            continue
        current = dask.delayed(_insert_block, pure=True)(
            current, block, skip, d, dask_key_name=_key(f"insert-{b}"))
    if current is not grower:
        current = dask.compute(current)[0]
    for name, value in vars(current).items():
        if name.endswith("_") and not name.startswith("__"):
            setattr(features, name, value)


def transform_blocks(features, X, lifetime=None):
    """``features.transform`` of every block of a dask X: a dask array of
    scipy CSR blocks (rows of X, all columns)."""
    dask, _ = _dask()
    X = as_dask_array(X, "X", ndim=2)
    n_columns = features.transform(np.asarray(features.forest_.lower[:1]),
                                   lifetime).shape[1]
    model = dask.delayed(features, name=_key("features"))
    return X.map_blocks(_transform_block, model, lifetime, X.shape[1],
                        chunks=(X.chunks[0], (n_columns,)), dtype=np.float64,
                        meta=sp.csr_matrix((0, 0)))


def _transform_block(block, features, lifetime, n_features):
    return sp.csr_matrix(features.transform(_check_block(block, n_features), lifetime))


# ------------------------------------------------------------------- ridge
def _normal_block(features, block, yb, n_features: int, dense: bool):
    """(rows, Σy, ΦᵀΦ, Φᵀy, Φᵀ1) of one block.  Dense ΦᵀΦ comes from
    :meth:`MondrianFeatures.normal_sums` (tree-pair counts in C, without
    forming Φ); a sparse one from the sparse product."""
    block = _check_block(block, n_features)
    yb = np.asarray(yb, dtype=np.float64)
    if not all_finite(yb):
        raise ValueError("y: a block holds NaN or infinite values")
    if dense:
        G, Pty, Pt1 = features.normal_sums(block, yb)
        return block.shape[0], yb.sum(axis=0), G, Pty, Pt1
    Phi = features.transform(block)
    return (Phi.shape[0], yb.sum(axis=0), sp.csr_array(Phi.T @ Phi), np.asarray(Phi.T @ yb),
            np.asarray(Phi.T @ np.ones(Phi.shape[0])))


def _add(a, b):
    return tuple(x + y for x, y in zip(a, b))


def tree_sum(parts: list, split_every: int = 8):
    """Sum of the delayed tuples ``parts`` by a tree of additions (at most
    ``split_every`` parts per task), so no task holds more than that many
    partial sums."""
    dask, _ = _dask()

    def add_many(*xs):
        out = xs[0]
        for x in xs[1:]:
            out = _add(out, x)
        return out

    while len(parts) > 1:
        parts = [dask.delayed(add_many, pure=True)(*parts[i:i + split_every],
                                                   dask_key_name=_key("sum"))
                 for i in range(0, len(parts), split_every)]
    return parts[0]


def _normal_equations(features, X, y):
    """(n, Σy, ΦᵀΦ, Φᵀy, Φᵀ1) of dask X, y on ``features`` (tree reduction)."""
    dask, _ = _dask()
    dense = int(features.n_cells_) <= DENSE_GRAM_MAX
    model = dask.delayed(features, name=_key("features"))
    parts = [dask.delayed(_normal_block, pure=True)(model, xb, yb, X.shape[1], dense,
                                                    dask_key_name=_key(f"normal-{b}"))
             for b, (xb, yb) in enumerate(zip(X.to_delayed().ravel(), y.to_delayed().ravel()))]
    # At most about 256 MB of dense partial sums per addition task.
    part_bytes = 8 * int(features.n_cells_) ** 2 if dense else 0
    split_every = int(min(8, max(2, (256 << 20) // max(part_bytes, 1))))
    return dask.compute(tree_sum(parts, split_every))[0]


def _solve(G, rhs: np.ndarray, alpha: float, tol: float):
    """(coef, R or None, solver, iterations) of (G + αI)w = rhs: Cholesky for a
    dense G, conjugate gradients for a sparse one."""
    import scipy.linalg as la
    if sp.issparse(G):
        coef, n_iter = _cg_gram(sp.csr_array(G), rhs, alpha, tol=tol)
        return coef, None, "cg", n_iter
    A = np.array(G, dtype=np.float64)
    A[np.diag_indices_from(A)] += alpha
    # A is symmetric and C-ordered: its transpose is the Fortran-ordered
    # matrix LAPACK factorises in place (no second copy).
    R = la.cholesky(A.T, lower=False, overwrite_a=True, check_finite=False)
    return la.cho_solve((R, False), rhs, check_finite=False), R, "cholesky-primal", 0


def regression_data(X, y):
    """Validated dask X (rows x D, float64) and y (1-d or 2-d, X's row
    chunks); the blocks' values are checked where they are used."""
    X = as_dask_array(X, "X", ndim=2).astype(np.float64)
    y = as_dask_array(y, "y")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows and y {y.shape[0]}")
    if y.ndim > 2:
        raise ValueError(f"y must be 1- or 2-dimensional, got shape {y.shape}")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    y = y.astype(np.float64)
    return X, y.rechunk({0: X.chunks[0]} if y.ndim == 1 else {0: X.chunks[0], 1: -1})


def solve_normal(features, X, y, alpha: float, tol: float):
    """Ridge weights and intercept at α on ``features`` from dask X, y."""
    n, y_sum, G, Pty, Pt1 = _normal_equations(features, X, y)
    mean = y_sum / n
    rhs = Pty - (np.outer(Pt1, mean) if np.ndim(mean) else Pt1 * mean)
    coef = _solve(G, rhs, alpha, tol)[0]
    return coef, (float(mean) if np.ndim(mean) == 0 else mean)


def fit_ridge(est, X, y, alpha: float) -> None:
    """:meth:`MondrianKernelRidge.fit` on dask X and y (see the module's notes)."""
    from .features.mondrian import MondrianFeatures
    from .ridge import _OnlineRidge
    X, y = regression_data(X, y)
    features = MondrianFeatures(n_trees=est.n_trees, lifetime=est.lifetime,
                                random_state=est.random_state, n_jobs=est.n_jobs,
                                store_points=False, max_nodes=est.max_nodes,
                                rotation=est.rotation, feature_scale=est.feature_scale)
    fit_features(features, X)
    n, y_sum, G, Pty, Pt1 = _normal_equations(features, X, y)
    mean = y_sum / n
    rhs = Pty - (np.outer(Pt1, mean) if np.ndim(mean) else Pt1 * mean)
    coef, R, solver, n_iter = _solve(G, rhs, alpha, est.tol)
    online = _OnlineRidge(n, y_sum, Pty, Pt1, None)
    if R is not None:
        online.factor, online.order, online.alpha = R, np.arange(G.shape[0]), alpha
    est._online = online
    est.features_ = features
    est.coef_ = coef
    est.intercept_ = mean
    est.solver_ = solver
    est.n_iter_ = n_iter
    est.n_features_in_ = X.shape[1]


def _cg_gram(G, rhs: np.ndarray, alpha: float, *, tol: float,
             max_iter: int = 10_000) -> tuple[np.ndarray, int]:
    """Solve (G + αI)w = rhs, G = ΦᵀΦ sparse, by Jacobi-preconditioned CG to
    relative residual ``tol`` (as :func:`mondrian.ridge.ridge_solve`'s CG)."""
    import scipy.sparse.linalg as spla

    c = G.shape[0]
    op = spla.LinearOperator((c, c), matvec=lambda w: G @ w + alpha * w, dtype=np.float64)
    inv_diag = 1.0 / (G.diagonal() + alpha)
    precond = spla.LinearOperator((c, c), matvec=lambda r: inv_diag * r, dtype=np.float64)
    cols = rhs[:, None] if rhs.ndim == 1 else rhs
    out = np.empty_like(cols)
    worst = 0
    for k in range(cols.shape[1]):
        count = [0]
        out[:, k], info = spla.cg(op, cols[:, k], rtol=tol, atol=0.0, maxiter=max_iter,
                                  M=precond, callback=lambda _: count.__setitem__(0, count[0] + 1))
        if info != 0:
            raise RuntimeError(f"conjugate gradients did not reach tol={tol} in {max_iter} "
                               "iterations")
        worst = max(worst, count[0])
    return (out[:, 0] if rhs.ndim == 1 else out), worst


def predict_blocks(est, X):
    """``est.predict`` of every block of a dask X (a dask array)."""
    dask, _ = _dask()
    X = as_dask_array(X, "X", ndim=2)
    model = dask.delayed(est, name=_key("model"))
    coef = np.asarray(est.coef_)
    if coef.ndim == 1:
        return X.map_blocks(_predict_block, model, X.shape[1], drop_axis=1, dtype=np.float64)
    return X.map_blocks(_predict_block, model, X.shape[1],
                        chunks=(X.chunks[0], (coef.shape[1],)), dtype=np.float64)


def _predict_block(block, est, n_features):
    return est.predict(_check_block(block, n_features))


# -------------------------------------------------------------------- SSGP
def ssgp_data(X, y):
    """Validated dask X (rows x D, float64) and finite 1-d y (X's row chunks)."""
    _, da = _dask()
    X, y = regression_data(X, y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-dimensional, got shape {y.shape}")
    if not bool(da.isfinite(y).all().compute()):
        raise ValueError("y holds NaN or infinite values")
    return X, y


def gather_rows(X, y, rows: np.ndarray):
    """Rows ``rows`` (sorted) of dask X and y, as numpy arrays, each block
    checked where it lives."""
    dask, _ = _dask()
    d = X.shape[1]
    bounds = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    tasks = []
    for b, (xb, yb) in enumerate(zip(X.to_delayed().ravel(), y.to_delayed().ravel())):
        local = rows[(rows >= bounds[b]) & (rows < bounds[b + 1])] - bounds[b]
        if local.size:
            tasks.append(dask.delayed(_rows_xy, pure=True)(xb, yb, local, d))
    parts = dask.compute(*tasks)
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


def _rows_xy(xb, yb, local, d):
    return _check_block(xb, d)[local], np.asarray(yb, dtype=np.float64)[local]


def _ssgp_normal_block(xb, yb, omega, d):
    from .gp.ssgp import _normal_sums, _pass_rows
    xb = _check_block(xb, d)
    G, b, _ = _normal_sums(xb, np.ascontiguousarray(yb, dtype=np.float64), omega,
                           _pass_rows(2 * omega.shape[1], None))
    return G, b


def _ssgp_gradient_block(xb, yb, omega, M, alpha_as, d):
    from .gp.ssgp import _gradient_sums, _pass_rows
    xb = _check_block(xb, d)
    return (_gradient_sums(xb, np.ascontiguousarray(yb, dtype=np.float64), omega, M, alpha_as,
                           _pass_rows(2 * omega.shape[1], None)),)   # a tuple for tree_sum


def ssgp_normal_sums(X, y, omega):
    """ΦᵀΦ and Φᵀy of the SSGP features over every block (tree reduction)."""
    dask, _ = _dask()
    parts = [dask.delayed(_ssgp_normal_block, pure=True)(xb, yb, omega, X.shape[1],
                                                         dask_key_name=_key(f"ssgp-g-{b}"))
             for b, (xb, yb) in enumerate(zip(X.to_delayed().ravel(), y.to_delayed().ravel()))]
    return dask.compute(tree_sum(parts))[0]


def ssgp_gradient_sums(X, y, omega, M, alpha_as):
    """XᵀH of the SSGP gradient over every block (``_gradient_sums``)."""
    dask, _ = _dask()
    parts = [dask.delayed(_ssgp_gradient_block, pure=True)(xb, yb, omega, M, alpha_as,
                                                           X.shape[1],
                                                           dask_key_name=_key(f"ssgp-w-{b}"))
             for b, (xb, yb) in enumerate(zip(X.to_delayed().ravel(), y.to_delayed().ravel()))]
    return dask.compute(tree_sum(parts))[0][0]


def ssgp_predict_blocks(est, X, return_std: bool, include_noise: bool):
    """``est.predict`` block by block: the mean (and the std) as dask arrays."""
    dask, _ = _dask()
    import copy

    X = as_dask_array(X, "X", ndim=2)
    light = copy.copy(est)         # without the (dask) training data
    light.X_train_ = light.y_train_ = None
    model = dask.delayed(light, name=_key("ssgp"))
    mean = X.map_blocks(_ssgp_predict_block, model, X.shape[1], False, include_noise,
                        drop_axis=1, dtype=np.float64)
    if not return_std:
        return mean
    std = X.map_blocks(_ssgp_predict_block, model, X.shape[1], True, include_noise,
                       drop_axis=1, dtype=np.float64)
    return mean, std


def _ssgp_predict_block(block, est, d, want_std, include_noise):
    block = _check_block(block, d)
    if want_std:
        return est.predict(block, return_std=True, include_noise=include_noise)[1]
    return est.predict(block, include_noise=include_noise)


def dask_feature_scale(feature_scale, X, auto_lifetime: bool = False):
    """:func:`mondrian._scale.resolve_feature_scale` for a dask array X: the
    scales of :func:`mondrian._scale.feature_std` ('std') computed over its
    blocks (the deviations with each column scaled by a power of two first,
    exactly, so that no square overflows), then the same rules
    (:func:`mondrian._scale.adjust_deviations`, its quartiles from the same
    strided rows)."""
    from ._scale import auto_feature_scale, resolve_feature_scale
    feature_scale = auto_feature_scale(feature_scale, X.shape[0], auto_lifetime)
    if feature_scale is None:
        return None
    if isinstance(feature_scale, str) and feature_scale == "std":
        return dask_feature_deviations(X)[0]
    dask, _ = _dask()
    top = np.asarray(dask.compute(abs(X).max(axis=0))[0], dtype=np.float64)
    return resolve_feature_scale(feature_scale, top[None, :])


def dask_feature_deviations(X) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mondrian._scale.feature_deviations` of a dask array X: the
    features' scales and their plain deviations, the deviations computed
    once over the blocks."""
    from ._scale import adjust_deviations, quartile_rows
    dask, _ = _dask()
    lo, hi = (np.asarray(v, dtype=np.float64)
              for v in dask.compute(X.min(axis=0), X.max(axis=0)))
    exponent = np.frexp(np.maximum(np.abs(lo), np.abs(hi)))[1]
    std, two = dask.compute((X * np.ldexp(1.0, -exponent)).std(axis=0),
                            ((X == lo) | (X == hi)).all(axis=0))
    std = np.ldexp(np.asarray(std, dtype=np.float64), exponent)
    rows = np.asarray(quartile_rows(X).compute(), dtype=np.float64)
    return adjust_deviations(std.copy(), rows, lo, hi, np.asarray(two) & (hi > lo)), std
