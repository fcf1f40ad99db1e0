"""Converged L2-regularised classifiers along the lifetime path (Sec. 4.2.2).

At lifetime λ a training point's Mondrian feature vector φ_λ(x) holds
1/√M in the column of its cell in each of the M trees (Sec. 3), so the
feature matrix Φ_λ is the (M, N) table of those columns.  On it
:class:`NewtonClassifierPath` minimises, for several C at each lifetime of
a grid,

    f(w, b) = ½‖w‖² + C Σᵢ cᵢ ℓ(yᵢ, φ_λ(xᵢ)ᵀw + b)

(the objective of liblinear and of scikit-learn's ``LogisticRegression``:
the intercept b is not penalised; cᵢ is the weight of xᵢ's class) with

* ``loss='logistic'``: ℓ = log(1 + e^{-yz}) for two classes; for K > 2 the
  multinomial loss ℓ = log Σₖ e^{zₖ} - z_y on K weight columns, so that
  ``predict_proba`` is the fitted softmax model itself (probabilities that
  sum to one and are calibrated as a maximum-likelihood fit is), not K
  one-vs-rest sigmoids renormalised after the fact;
* ``loss='squared_hinge'``: ℓ = max(0, 1 - yz)² (liblinear's L2-loss SVM,
  the slides' linear learner); for K > 2 one-vs-rest, K binary problems
  (the loss has no probability model that would call for a joint fit).

**Solver.**  Truncated Newton with conjugate gradients and a backtracking
line search (liblinear's primal solver since version 2.40; Galli & Lin,
IEEE TNNLS 2022, after the trust-region TRON of Lin, Weng & Keerthi, JMLR
2008): each Newton step solves ∇²f s = -∇f approximately by conjugate
gradients, which need only Hessian-vector products
∇²f v = v + Φᵀ D Φ v (plus the intercept's row and column), one product
with Φ and one with Φᵀ, O(N·M) each, in C (``c/classify.h``, threads over
blocks of points and over trees, the GIL released).  The conjugate gradients are preconditioned as liblinear's are
(Hsia, Chiang & Lin, ACML 2018): by (1 - a)·I + a·diag(∇²f) with a = 0.01.
The full diagonal (1 + Σ_{i ∈ cell} Dᵢ/M per column, exact within one
tree) was measured worse: on 2000 points, 100 trees, three lifetimes and
C = 1, 10, 100 it took 1.3-2.5 times the CG iterations of the identity
for the logistic loss and (with the trust region first tried) up to 16
times the Newton iterations for the squared hinge -- the ill-conditioning of ΦᵀDΦ lies in the coupling of the
trees (the top eigenvectors of the kernel), which a diagonal does not
see.  A dual coordinate descent (liblinear's default for the hinge)
updates one point at a time: sequential, and with M nonzeros per row no
cheaper per pass than one Hessian product, while the Newton products run on
every core and its stopping rule is a gradient norm.

**Tolerance** (as liblinear states it): a solve stops when

    ‖∇f(w, b)‖₂ ≤ tol · ‖∇f(0, 0)‖₂,

the initial gradient taken at zero whatever the starting point, so a
warm-started solve and a cold one stop at the same criterion.

**Warm starts.**  Along the lifetime grid, at every split both children
take the parent's weight (no decision value changes, Sec. 4.2.2): the new
weights are read off the old ones through each point's old and new cell.
Along the C grid (increasing) each solve starts from the previous C's
solution at the same lifetime when there is no state from the previous
lifetime.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, log_expit, logsumexp, softmax

from .._ext._classify import cell_columns, cells_matvec, cells_rmatvec, release_threads
from .._ext._dual import symmetric_eigh
from .._validation import check_int, check_positive_float, resolve_n_jobs
from ..features.mondrian import MondrianFeatures
from .dual import (SERIAL_EIGH_ROWS, blas_threads, cell_labels, concurrent_lifetimes,
                   mondrian_kernel_matrix, prefetch_lifetimes)

__all__ = ["LOSSES", "NewtonClassifierPath", "NewtonResult", "newton_cg", "DualClassScorer",
           "class_sample_weights"]

#: Losses of the Newton solver.
LOSSES = ("logistic", "squared_hinge")

# Line search of the Newton solver (liblinear >= 2.40): sufficient decrease
# f(x + a·s) <= f(x) + _ARMIJO·a·∇f·s, a halved at most _MAX_HALVINGS times.
_ARMIJO = 0.01
_MAX_HALVINGS = 40
#: Inner conjugate gradients stop at ‖r‖_{M⁻¹} ≤ _CG_TOL·‖∇f‖_{M⁻¹}.
_CG_TOL = 0.1
#: Weight a of the Hessian's diagonal in the preconditioner (1 - a)·I + a·diag.
_PRECONDITIONER_MIX = 0.01
#: Smallest ‖∇f(0)‖ the relative tolerance refers to, as a fraction of the
#: gradient's scale without cancellation (:meth:`_Objective.grad_norm_at_zero`):
#: far above the rounding of its terms (1e-16 relative, times their number's
#: square root), far below any ‖∇f(0)‖ of classes that differ.
_GRAD_CANCELLATION = 1e-10
#: A line search that finds no decrease ends a solve as converged when the
#: Newton step's predicted decrease -∇f·s is below this fraction of |f|: the
#: Armijo test fails by rounding once 0.01·|∇f·s| < |f|·2.2e-16, so this
#: is 45 times above that boundary and far below any decrease that counts.
_F_PRECISION = 1e-12
#: Products over fewer table entries (points x trees) run on one thread: a
#: parallel region's start and barrier cost more than the work there, and
#: far more on a loaded machine.
SERIAL_ENTRIES = 1 << 18


def _product_threads(table: np.ndarray, n_jobs: int) -> int:
    return 1 if table.size < SERIAL_ENTRIES else n_jobs


def class_sample_weights(codes: np.ndarray, n_classes: int, class_weight,
                         classes: np.ndarray) -> np.ndarray:
    """Weight cᵢ of every point from ``class_weight``.

    None: 1; 'balanced': N/(K·N_k) for class k (scikit-learn's rule); a
    dict: {label: weight > 0}, classes not named weigh 1.  A dict naming a
    label that is not a class, or a weight that is not a positive finite
    number, raises a ValueError naming ``class_weight``.
    """
    if class_weight is None:
        return np.ones(codes.shape[0])
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError("class_weight must be None, 'balanced' or a dict, "
                             f"got {class_weight!r}")
        counts = np.bincount(codes, minlength=n_classes).astype(np.float64)
        per_class = codes.shape[0] / (n_classes * np.maximum(counts, 1.0))
        return per_class[codes]
    if not isinstance(class_weight, dict):
        raise TypeError("class_weight must be None, 'balanced' or a dict, "
                        f"got {type(class_weight).__name__}")
    per_class = np.ones(n_classes)
    for label, weight in class_weight.items():
        where = np.flatnonzero(classes == label) if classes.dtype.kind != "O" else \
            np.flatnonzero([c == label for c in classes])
        if where.size == 0:
            raise ValueError(f"class_weight names the label {label!r}, which is not a class "
                             f"(classes: {list(classes)})")
        w = float(weight)
        if not np.isfinite(w) or w <= 0:
            raise ValueError(f"class_weight[{label!r}] must be a positive finite number, "
                             f"got {weight!r}")
        per_class[where[0]] = w
    return per_class[codes]


# --------------------------------------------------------------------------
# The objective on the cell table
# --------------------------------------------------------------------------
class _Objective:
    """f(w, b) = ½‖w‖² + C Σᵢ cᵢ ℓ(yᵢ, zᵢ), z = Φw + b, on K weight columns.

    The variable x is W (n_cols x K, row-major) followed by b (K,), flat.
    ``kind`` is 'logistic' (K = 1, y ±1), 'multinomial' (y the class codes)
    or 'squared_hinge' (K = 1, y ±1).
    """

    def __init__(self, cols: np.ndarray, col_offset: np.ndarray, scale: float, y: np.ndarray,
                 weight: np.ndarray, C: float, kind: str, n_classes: int, n_jobs: int):
        self.cols, self.col_offset, self.scale = cols, col_offset, scale
        self.n_cols = int(col_offset[-1])
        self.K = n_classes if kind == "multinomial" else 1
        self.y, self.kind, self.n_jobs = y, kind, _product_threads(cols, n_jobs)
        self.cw = C * weight            # C·cᵢ
        if kind == "multinomial":
            self.onehot = np.zeros((y.shape[0], self.K))
            self.onehot[np.arange(y.shape[0]), y] = 1.0
        self.size = (self.n_cols + 1) * self.K

    # Products with the features (Φ scaled by 1/√M) ---------------------------
    def _Phi(self, W: np.ndarray) -> np.ndarray:
        Z = np.empty((self.cols.shape[1], self.K))
        cells_matvec(self.cols, W, self.scale, Z, self.n_jobs)
        return Z

    def _PhiT(self, V: np.ndarray, scale: float | None = None) -> np.ndarray:
        G = np.empty((self.n_cols, self.K))
        cells_rmatvec(self.cols, np.ascontiguousarray(V), self.col_offset,
                      self.scale if scale is None else scale, G, self.n_jobs)
        return G

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return x[:-self.K].reshape(self.n_cols, self.K), x[-self.K:]

    def decision(self, x: np.ndarray) -> np.ndarray:
        W, b = self.split(x)
        return self._Phi(W) + b[None, :]

    # Value, gradient, Hessian at a point -----------------------------------
    def evaluate(self, x: np.ndarray) -> "_Point":
        """f(x) and what the gradient and Hessian products at x need."""
        W, _ = self.split(x)
        Z = self.decision(x)
        reg = 0.5 * float(np.dot(W.ravel(), W.ravel()))
        if self.kind == "logistic":
            m = self.y * Z[:, 0]
            loss = -log_expit(m)
            dz = (-self.y * expit(-m))[:, None]
            D = (expit(m) * expit(-m))[:, None]
            P = None
        elif self.kind == "squared_hinge":
            v = np.maximum(1.0 - self.y * Z[:, 0], 0.0)
            loss = v * v
            dz = (-2.0 * self.y * v)[:, None]
            D = (2.0 * (v > 0))[:, None]
            P = None
        else:
            lse = logsumexp(Z, axis=1)
            loss = lse - Z[np.arange(Z.shape[0]), self.y]
            P = np.exp(Z - lse[:, None])
            dz = P - self.onehot
            D = P * (1.0 - P)           # the Hessian's diagonal blocks' diagonals
        f = reg + float(np.dot(self.cw, loss))
        return _Point(x=x, f=f, Z=Z, dz=dz * self.cw[:, None], D=D * self.cw[:, None], P=P)

    def _value(self, W_sq: float, Z: np.ndarray) -> float:
        """f from ‖W‖² and the decision values Z."""
        if self.kind == "logistic":
            loss = -log_expit(self.y * Z[:, 0])
        elif self.kind == "squared_hinge":
            v = np.maximum(1.0 - self.y * Z[:, 0], 0.0)
            loss = v * v
        else:
            loss = logsumexp(Z, axis=1) - Z[np.arange(Z.shape[0]), self.y]
        return 0.5 * W_sq + float(np.dot(self.cw, loss))

    def line(self, pt: "_Point", s: np.ndarray):
        """``value(a)`` = f(x + a·s) for the line search, from one product:
        Z(a) = Z + a·(Φ s_W + s_b), ‖W + a·s_W‖² expanded."""
        W, _ = self.split(pt.x)
        S, sb = self.split(s)
        dZ = self._Phi(S) + sb[None, :]
        ww, ws, ss = (float(np.dot(W.ravel(), W.ravel())), float(np.dot(W.ravel(), S.ravel())),
                      float(np.dot(S.ravel(), S.ravel())))
        return lambda a: self._value(ww + 2.0 * a * ws + a * a * ss, pt.Z + a * dZ)

    def gradient(self, pt: "_Point") -> np.ndarray:
        W, _ = self.split(pt.x)
        gW = W + self._PhiT(pt.dz)
        return np.concatenate([gW.ravel(), pt.dz.sum(axis=0)])

    def hess_vec(self, pt: "_Point", v: np.ndarray) -> np.ndarray:
        V, vb = self.split(v)
        U = self._Phi(V) + vb[None, :]
        if self.kind == "multinomial":
            # ∇²ℓ = diag(p) - ppᵀ per point, times C·cᵢ.
            PU = pt.P * U
            R = self.cw[:, None] * (PU - pt.P * PU.sum(axis=1, keepdims=True))
        else:
            R = pt.D * U
        HV = V + self._PhiT(R)
        return np.concatenate([HV.ravel(), R.sum(axis=0)])

    def preconditioner(self, pt: "_Point") -> np.ndarray:
        """(1 - a)·1 + a·diag(∇²f) at ``pt``, a = :data:`_PRECONDITIONER_MIX`
        (the diagonal of the multinomial Hessian's blocks for K > 2)."""
        dW = 1.0 + self._PhiT(pt.D, self.scale * self.scale)
        db = pt.D.sum(axis=0)
        diag = np.concatenate([dW.ravel(), db])
        return (1.0 - _PRECONDITIONER_MIX) + _PRECONDITIONER_MIX * diag

    def grad_norm_at_zero(self) -> float:
        """The reference of the relative tolerance: ‖∇f(0)‖₂, but at least
        :data:`_GRAD_CANCELLATION` times the norm of the same gradient with
        every term's absolute value, ‖(|Φ|ᵀ|∂ℓ(0)|, Σᵢ|∂ℓᵢ(0)|)‖₂.  Where
        the terms cancel (balanced classes on points with the same features,
        e.g. constant X) ∇f(0) is 0 up to rounding, 0 is the solution, and
        a test relative to that rounding could never pass: every solve ran
        to ``max_iter`` and warned."""
        pt = self.evaluate(np.zeros(self.size))
        size = np.abs(pt.dz)
        terms = np.concatenate([self._PhiT(size).ravel(), size.sum(axis=0)])
        return max(float(np.linalg.norm(self.gradient(pt))),
                   _GRAD_CANCELLATION * float(np.linalg.norm(terms)))


@dataclass
class _Point:
    x: np.ndarray
    f: float
    Z: np.ndarray       # decision values, (n, K)
    dz: np.ndarray      # C·cᵢ·∂ℓ/∂z, (n, K)
    D: np.ndarray       # C·cᵢ·∂²ℓ/∂z² (diagonal), (n, K)
    P: np.ndarray | None


@dataclass
class NewtonResult:
    """Outcome of :func:`newton_cg`.

    Attributes
    ----------
    x : ndarray
        The solution (W flattened row-major, then b).
    f : float
        Objective value at ``x``.
    grad_norm : float
        ‖∇f(x)‖₂.
    grad_norm0 : float
        ‖∇f(0)‖₂, the reference of the tolerance (at least a rounding
        level, :meth:`_Objective.grad_norm_at_zero`).
    n_iter : int
        Newton iterations.
    n_cg : int
        Conjugate-gradient iterations (Hessian products) in all.
    converged : bool
        ``grad_norm <= tol * grad_norm0``, or optimal to the precision of
        f (see :func:`newton_cg`).
    """
    x: np.ndarray
    f: float
    grad_norm: float
    grad_norm0: float
    n_iter: int
    n_cg: int
    converged: bool


def _pcg(obj: "_Objective", pt: "_Point", g: np.ndarray, m: np.ndarray):
    """Preconditioned conjugate gradients on ∇²f s = -g (M = diag(m)),
    stopped at ‖r‖_{M⁻¹} ≤ :data:`_CG_TOL`·‖g‖_{M⁻¹}, or at a direction of
    zero curvature (the unpenalised intercepts' null direction of the
    multinomial model, or a squared hinge without active points).
    Returns (s, iterations)."""
    s = np.zeros_like(g)
    r = -g
    z = r / m
    d = z.copy()
    rz = float(r @ z)
    stop = _CG_TOL * np.sqrt(rz)
    it = 0
    while np.sqrt(max(rz, 0.0)) > stop and it < g.shape[0]:
        it += 1
        Hd = obj.hess_vec(pt, d)
        dHd = float(d @ Hd)
        if dHd <= 1e-15 * float(d @ d):
            break
        alpha = rz / dHd
        s += alpha * d
        r -= alpha * Hd
        z = r / m
        rz_new = float(r @ z)
        d = z + (rz_new / rz) * d
        rz = rz_new
    if it == 0 or not np.any(s):
        s = -g / m
    return s, it


def newton_cg(obj: "_Objective", x0: np.ndarray, tol: float, max_iter: int,
         grad_norm0: float | None = None) -> NewtonResult:
    """Truncated Newton with backtracking line search from ``x0`` until
    ‖∇f(x)‖ ≤ tol·‖∇f(0)‖, or f cannot decrease in floating point at a
    point where the Newton step predicts less than :data:`_F_PRECISION`·|f|
    (both converged), or ``max_iter`` Newton iterations.

    liblinear's Newton solver since version 2.40 (Galli & Lin, "A study on
    truncated Newton methods for linear classification", IEEE TNNLS 2022;
    it replaced the trust region of Lin, Weng & Keerthi 2008): the Newton
    direction s from preconditioned CG (:func:`_pcg`), then the largest
    step 2⁻ᵏ with f(x + 2⁻ᵏs) ≤ f(x) + 0.01·2⁻ᵏ∇f·s.  A trial step costs
    no product with Φ: the decision values move along Φs, computed once
    (``_Objective.line``).  The trust region we tried first stalled on the
    squared hinge, whose generalised Hessian jumps when the active set
    changes.
    """
    if grad_norm0 is None:
        grad_norm0 = obj.grad_norm_at_zero()
    pt = obj.evaluate(np.array(x0, dtype=np.float64, copy=True))
    g = obj.gradient(pt)
    gnorm = float(np.linalg.norm(g))
    n_iter = n_cg = 0
    at_precision = False
    while gnorm > tol * grad_norm0 and n_iter < max_iter:
        n_iter += 1
        m = obj.preconditioner(pt)
        s, cg_it = _pcg(obj, pt, g, m)
        n_cg += cg_it
        gs = float(g @ s)
        if gs >= 0:         # not a descent direction: rounding at the optimum
            break
        line = obj.line(pt, s)
        step = 1.0
        for _ in range(_MAX_HALVINGS):
            f_new = line(step)
            if f_new <= pt.f + _ARMIJO * step * gs:
                break
            step *= 0.5
        else:
            # No decrease representable in floating point.  When the Newton
            # step promised less than f's rounding can show, x is optimal
            # to the precision of f: converged, whatever the gradient's
            # ratio to a ‖∇f(0)‖ that was itself that small.
            at_precision = -gs <= _F_PRECISION * abs(pt.f)
            break
        pt = obj.evaluate(pt.x + step * s)
        g = obj.gradient(pt)
        gnorm = float(np.linalg.norm(g))
    return NewtonResult(x=pt.x, f=pt.f, grad_norm=gnorm, grad_norm0=grad_norm0, n_iter=n_iter,
                      n_cg=n_cg, converged=gnorm <= tol * grad_norm0 or at_precision)


# --------------------------------------------------------------------------
# The path
# --------------------------------------------------------------------------
class NewtonClassifierPath:
    """L2-regularised logistic or squared-hinge classifiers on the Mondrian
    features of one forest, converged at each lifetime of a grid for
    several C, warm-started along both (see the module docstring).

    Parameters
    ----------
    features : MondrianFeatures
        A fitted forest; row indices refer to the points it was grown on.
    codes : ndarray of int, shape (N,)
        Class code 0..K-1 of every point (held-out points' codes are only
        used to score them).
    n_classes : int
        K >= 2.
    train_rows : ndarray of int
        Points the classifiers are fitted on.
    loss : {'logistic', 'squared_hinge'}
    Cs : sequence of float
        Inverse regularisations C > 0, solved in increasing order.
    sample_weight : ndarray of shape (N,), optional
        Weights cᵢ (class weights), default 1.
    tol : float
        ‖∇f‖ ≤ tol·‖∇f(0)‖ at every solve.
    max_iter : int
        Newton iterations per solve.
    n_jobs : int or None

    Attributes
    ----------
    lifetime : float or None
        Lifetime of the current solutions.
    results : list of list of NewtonResult
        ``results[c][p]``: the last solve of C = ``Cs[c]``, problem p (one
        problem, or K one-vs-rest problems for the squared hinge).
    """

    def __init__(self, features: MondrianFeatures, codes: np.ndarray, n_classes: int,
                 train_rows: np.ndarray, *, loss: str = "logistic", Cs=(1.0,),
                 sample_weight: np.ndarray | None = None, tol: float = 1e-3,
                 max_iter: int = 200, n_jobs: int | None = None):
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        self.features = features
        self.codes = np.asarray(codes, dtype=np.int64)
        self.n_classes = check_int(n_classes, "n_classes", minimum=2)
        self.train_rows = np.asarray(train_rows, dtype=np.intp)
        self.loss = loss
        Cs = np.asarray(Cs, dtype=np.float64).ravel()
        if Cs.size == 0 or not np.all(np.isfinite(Cs)) or np.any(Cs <= 0):
            raise ValueError(f"Cs must be positive finite numbers, got {Cs}")
        self.Cs = np.sort(Cs)
        n = self.codes.shape[0]
        self.sample_weight = (np.ones(n) if sample_weight is None
                              else np.asarray(sample_weight, dtype=np.float64))
        self.tol = check_positive_float(tol, "tol")
        self.max_iter = check_int(max_iter, "max_iter", minimum=1)
        self.n_jobs = resolve_n_jobs(n_jobs)
        self.scale = 1.0 / np.sqrt(features.n_trees)
        if loss == "logistic":
            self.problems = ([("logistic", 1)] if self.n_classes == 2
                             else [("multinomial", None)])
        else:
            self.problems = ([("squared_hinge", 1)] if self.n_classes == 2 else
                             [("squared_hinge", k) for k in range(self.n_classes)])
        self.lifetime = None
        self._cols = None
        self._cols_key = None
        self._tables = {}       # id(rows) -> (rows, their table) on the current columns
        self._offset = None
        self._x = None          # [c][p] flat solutions on the current columns
        self.results = None

    def _targets(self, kind: str, k) -> np.ndarray:
        y = self.codes[self.train_rows]
        if kind == "multinomial":
            return y
        return np.where(y == k, 1.0, -1.0)

    @property
    def n_columns(self) -> int:
        return int(self._offset[-1])

    def _inherit(self, cols_new: np.ndarray, n_new: int) -> None:
        """Map the solutions to the columns at the new lifetime: each new
        cell takes the weight of the old cell that contains it (every cell
        holds a point the forest was grown on, which names both)."""
        # The old column of each new one, by a scatter over the (M, N)
        # tables (the new cells nest in the old, so every point of a new
        # cell writes the same value): n_new indices, where gathering the
        # weights point by point made an (N·M, K) temporary (763 MiB on 10⁶
        # points x 100 trees).
        parent = np.full(n_new, -1, dtype=np.int64)
        parent[cols_new.ravel()] = self._cols.ravel()
        held = parent >= 0
        for c_list in self._x:
            for p, x in enumerate(c_list):
                K = x.shape[0] // (self.n_columns + 1)
                W, b = x[:-K].reshape(-1, K), x[-K:]
                W_new = np.zeros((n_new, K))
                W_new[held] = W[parent[held]]
                c_list[p] = np.concatenate([W_new.ravel(), b])

    def _key(self, lifetime: float) -> tuple:
        """What the column table at ``lifetime`` depends on: the forest
        (an extension that adds nodes renumbers the columns) and λ."""
        forest = self.features.forest_
        return (id(forest), forest.n_nodes, float(lifetime))

    def solve_at(self, lifetime: float) -> list[list[NewtonResult]]:
        """Move to ``lifetime`` and solve every C and problem to ``tol``.

        A larger lifetime than the current one starts from the inherited
        weights (children take their parent's weight); a smaller one from
        zero.  Vector operations run on one BLAS thread (the dot products
        of vectors over the cells are memory-bound, and BLAS threads
        competing with the products' OpenMP threads slowed a solve
        tenfold on two cores); the OpenMP pool is released at the end.
        """
        try:
            with blas_threads(1):
                return self._solve_at(float(lifetime))
        finally:
            release_threads()

    def _solve_at(self, lifetime: float) -> list[list[NewtonResult]]:
        if self._cols is not None and self._cols_key == self._key(lifetime):
            cols, offset = self._cols, self._offset    # the same columns (start_from)
        else:
            self._tables = {}
            cols, offset = cell_columns(self.features.forest_, float(lifetime), self.n_jobs)
            if self._x is not None:
                if float(lifetime) >= self.lifetime:
                    self._inherit(cols, int(offset[-1]))
                else:
                    self._x = None      # coarser cells: start again from zero
            self._cols, self._offset, self._cols_key = cols, offset, self._key(lifetime)
        self.lifetime = float(lifetime)
        table = self._table(self.train_rows)
        w = self.sample_weight[self.train_rows]
        results = []
        prev = None
        for c, C in enumerate(self.Cs):
            row = []
            for p, (kind, k) in enumerate(self.problems):
                obj = _Objective(table, offset, self.scale, self._targets(kind, k), w, C,
                                 "multinomial" if kind == "multinomial" else kind,
                                 self.n_classes, self.n_jobs)
                if self._x is not None:
                    x0 = self._x[c][p]
                elif prev is not None:
                    x0 = prev[p].x
                else:
                    x0 = np.zeros(obj.size)
                row.append(newton_cg(obj, x0, self.tol, self.max_iter))
            results.append(row)
            prev = row
        self._x = [[r.x for r in row] for row in results]
        self.results = results
        return results

    def start_from(self, lifetime: float, solutions: list[np.ndarray]) -> None:
        """Take ``solutions`` (one flat (W, b) per problem, on the columns at
        ``lifetime`` of the same forest) as the starting point of every C of
        the next :meth:`solve_at` at ``lifetime``."""
        cols, offset = cell_columns(self.features.forest_, float(lifetime), self.n_jobs)
        n = int(offset[-1])
        for x, (kind, _) in zip(solutions, self.problems):
            K = self.n_classes if kind == "multinomial" else 1
            if x.shape[0] != (n + 1) * K:
                raise ValueError(f"a solution has {x.shape[0]} entries, the columns at "
                                 f"lifetime {lifetime} need {(n + 1) * K}")
        self._cols, self._offset, self.lifetime = cols, offset, float(lifetime)
        self._cols_key = self._key(lifetime)
        self._tables = {}
        self._x = [[x.copy() for x in solutions] for _ in self.Cs]

    def coef(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        """(W of shape (n_columns, n_out), b of shape (n_out,)) for ``Cs[c]``
        at the current lifetime; n_out = 1 for two classes, else K."""
        Ws, bs = [], []
        n = self.n_columns
        for x in self._x[c]:
            K = x.shape[0] // (n + 1)
            Ws.append(x[:-K].reshape(n, K))
            bs.append(x[-K:])
        return np.hstack(Ws), np.concatenate(bs)

    def release(self) -> None:
        """Let go of the column tables and the solutions (a later
        :meth:`solve_at` starts from zero): the memory of a path whose
        results have been taken, before the refit's own tables."""
        self._cols = self._offset = self._cols_key = self._x = None
        self._tables = {}
        self.lifetime = None

    def _table(self, rows: np.ndarray) -> np.ndarray:
        """The columns of ``rows`` (an (M, len(rows)) table; every point in
        order is the table itself), gathered once per array of rows and set
        of columns: a sweep scores every C on the
        training and the validation rows, and gathering the training rows'
        table for each took 2.2 of 43 s on 3·10⁵ rows (the solve's own is
        the same table)."""
        entry = self._tables.get(id(rows))
        if entry is not None and entry[0] is rows:
            return entry[1]
        index = np.asarray(rows, dtype=np.intp)
        n = self._cols.shape[1]
        if index.shape[0] == n and np.array_equal(index, np.arange(n)):
            table = self._cols      # every point, in order: the table itself
        else:
            table = np.ascontiguousarray(self._cols[:, index])
        self._tables[id(rows)] = (rows, table)
        return table

    def decision_points(self, rows: np.ndarray, c: int) -> np.ndarray:
        """Decision values (len(rows), n_out) of points the forest was grown on."""
        W, b = self.coef(c)
        table = self._table(rows)
        Z = np.empty((table.shape[1], W.shape[1]))
        try:
            cells_matvec(table, np.ascontiguousarray(W), self.scale, Z,
                         _product_threads(table, self.n_jobs))
        finally:
            release_threads()
        return Z + b[None, :]


def decision_to_codes(dec: np.ndarray) -> np.ndarray:
    """Class codes from decision values of shape (n, 1) or (n, K)."""
    if dec.shape[1] == 1:
        return (dec[:, 0] > 0).astype(np.int64)
    return np.argmax(dec, axis=1)


def validation_loss(dec: np.ndarray, codes: np.ndarray, loss: str) -> float:
    """Mean loss of decision values on labelled points (the selection's
    tie-break): log-loss for 'logistic', squared hinge otherwise."""
    if dec.shape[1] == 1:
        y = np.where(codes == 1, 1.0, -1.0)
        z = dec[:, 0]
        if loss == "logistic":
            return float(np.mean(-log_expit(y * z)))
        return float(np.mean(np.maximum(1.0 - y * z, 0.0) ** 2))
    if loss == "logistic":
        return float(np.mean(logsumexp(dec, axis=1) - dec[np.arange(dec.shape[0]), codes]))
    Y = np.where(np.arange(dec.shape[1])[None, :] == codes[:, None], 1.0, -1.0)
    return float(np.mean(np.sum(np.maximum(1.0 - Y * dec, 0.0) ** 2, axis=1)))


def probabilities(dec: np.ndarray) -> np.ndarray:
    """Class probabilities of the logistic model: the sigmoid for two
    classes, the softmax of the multinomial model for more."""
    if dec.ndim == 1:
        p1 = expit(dec)
        return np.column_stack([1.0 - p1, p1])
    return softmax(dec, axis=1)


# --------------------------------------------------------------------------
# The width: kernel ridge on ±1 / one-hot labels, exact leave-one-out
# --------------------------------------------------------------------------
class DualClassScorer:
    """Leave-one-out error of kernel ridge regression on class indicators
    (±1 for two classes, centred one-hot columns for more: the
    least-squares SVM) at any lifetime of a small forest, for every alpha
    from one eigendecomposition (:mod:`mondrian.path.dual`).

    The error is the leave-one-out squared error summed over the indicator
    columns, averaged over the points; it finds the kernel width at the
    price of a few N x N eigendecompositions, and its alpha a starting C.

    Parameters
    ----------
    features : MondrianFeatures
        Forest grown on the pilot's points (at most 65535 trees).
    codes : ndarray of int, shape (N,)
    n_classes : int
    alphas : ndarray
    n_jobs : int
    """

    def __init__(self, features: MondrianFeatures, codes: np.ndarray, n_classes: int,
                 alphas: np.ndarray, n_jobs: int = 1):
        self.features, self.alphas, self.n_jobs = features, alphas, n_jobs
        if n_classes == 2:
            Y = np.where(codes == 1, 1.0, -1.0)[:, None]
        else:
            Y = (codes[:, None] == np.arange(n_classes)[None, :]).astype(np.float64)
        self.Y = Y - Y.mean(axis=0)
        self.records: dict[float, np.ndarray] = {}

    def __call__(self, lifetime: float) -> np.ndarray:
        """The errors at ``lifetime``, one per alpha (recorded)."""
        threads = 1 if self.Y.shape[0] <= SERIAL_EIGH_ROWS else self.n_jobs
        with blas_threads(threads):
            errors = self._compute(lifetime, self.n_jobs)
        self.records[float(lifetime)] = errors
        return errors

    def evaluate_many(self, lifetimes) -> list[np.ndarray]:
        """``[self(lam) for lam in lifetimes]``, on parallel Python threads
        with one BLAS thread each (as
        :meth:`mondrian.path.dual.DualScorer.evaluate_many`); the same
        numbers, bit for bit."""
        lifetimes = [float(lam) for lam in lifetimes]
        results = concurrent_lifetimes(self._compute, lifetimes, self.n_jobs, self.Y.shape[0])
        if results is None:
            return [self(lam) for lam in lifetimes]
        return [self._reveal(lam, errors) for lam, errors in zip(lifetimes, results)]

    def prefetch(self, lifetimes) -> list | None:
        """Callables that record and return the errors at ``lifetimes``,
        computed at once, or None where that does not pay
        (:func:`mondrian.path.dual.prefetch_lifetimes`)."""
        return prefetch_lifetimes(self._compute, lifetimes, self.n_jobs, self.Y.shape[0],
                                  self._reveal)

    def _reveal(self, lifetime: float, errors: np.ndarray) -> np.ndarray:
        self.records[lifetime] = errors
        return errors

    def _compute(self, lifetime: float, n_jobs: int | None) -> np.ndarray:
        """The errors at ``lifetime``; ``n_jobs=None``: one thread for the C
        kernels, BLAS threads as set."""
        threads = 1 if n_jobs is None else n_jobs
        labels = cell_labels(self.features, lifetime, n_jobs=threads)
        K = mondrian_kernel_matrix(labels, n_jobs=threads)
        s, U = symmetric_eigh(K)
        s = np.maximum(s, 0.0)
        UtY = U.T @ self.Y
        U2 = np.square(U)
        errors = np.empty(self.alphas.shape[0])
        for a, alpha in enumerate(self.alphas):
            F = alpha / (s + alpha)
            resid = U @ (F[:, None] * UtY)
            one_minus_h = U2 @ F
            errors[a] = np.mean(np.sum(np.square(resid / one_minus_h[:, None]), axis=1))
        return errors


# --------------------------------------------------------------------------
# Selection of (λ, C) along the path
# --------------------------------------------------------------------------
@dataclass
class NewtonSweep:
    """Rows of a sweep of :class:`NewtonClassifierPath` over lifetimes.

    Attributes
    ----------
    lifetimes : list of float
    train_accuracy, validation_accuracy, validation_loss : list of ndarray
        One array over ``Cs`` per lifetime.
    n_iter, n_cg : list of ndarray
        Newton and CG iterations per C (summed over one-vs-rest problems).
    n_columns : list of int
        Features (cells) at each lifetime.
    grad_ratio : list of ndarray
        Largest ‖∇f‖/‖∇f(0)‖ over the problems of each C.
    converged : list of ndarray
        Whether every problem of each C converged (``NewtonResult.converged``).
    best : tuple
        (-validation loss, validation accuracy, lifetime, C index,
        solutions, forest) of the best pair so far.
    extra : list
        Further solves recorded by the caller.
    """
    lifetimes: list
    train_accuracy: list
    validation_accuracy: list
    validation_loss: list
    n_iter: list
    n_cg: list
    grad_ratio: list
    best: tuple
    converged: list = field(default_factory=list)
    n_columns: list = field(default_factory=list)
    extra: list = field(default_factory=list)


def sweep(path: NewtonClassifierPath, grid, val_rows: np.ndarray, record: NewtonSweep | None,
          progress=None) -> NewtonSweep:
    """Solve ``path`` at every lifetime of ``grid`` (increasing) and score
    each C on ``val_rows``: the best pair has the smallest mean validation
    loss (the loss being minimised: log-loss or squared hinge), ties broken
    by the higher accuracy.  The loss is continuous where the accuracy of
    2000 validation points moves in steps of 0.05 % with a standard error
    near 0.8 %: selected by accuracy the test accuracy on a9a (10,000 rows)
    was 84.19 %, by the loss 84.83 %; cod-rna and covertype moved by 0.02
    and 0.3 points."""
    if record is None:
        record = NewtonSweep([], [], [], [], [], [], [],
                             (-np.inf, -np.inf, None, None, None, None))
    codes_tr = path.codes[path.train_rows]
    codes_val = path.codes[val_rows]
    for lam in grid:
        results = path.solve_at(float(lam))
        n_c = path.Cs.shape[0]
        tr_acc, val_acc, val_loss = np.empty(n_c), np.empty(n_c), np.empty(n_c)
        for c in range(n_c):
            dec_tr = path.decision_points(path.train_rows, c)
            tr_acc[c] = np.mean(decision_to_codes(dec_tr) == codes_tr)
            dec = path.decision_points(val_rows, c)
            val_acc[c] = np.mean(decision_to_codes(dec) == codes_val)
            val_loss[c] = validation_loss(dec, codes_val, path.loss)
            key = (-float(val_loss[c]), float(val_acc[c]))
            if key > record.best[:2]:
                record.best = key + (float(lam), c, [r.x.copy() for r in results[c]],
                                     path.features)
        record.lifetimes.append(float(lam))
        record.n_columns.append(path.n_columns)
        record.train_accuracy.append(tr_acc)
        record.validation_accuracy.append(val_acc)
        record.validation_loss.append(val_loss)
        record.n_iter.append(np.array([sum(r.n_iter for r in row) for row in results]))
        record.n_cg.append(np.array([sum(r.n_cg for r in row) for row in results]))
        record.grad_ratio.append(np.array([max(r.grad_norm / r.grad_norm0 if r.grad_norm0 > 0
                                               else 0.0 for r in row) for row in results]))
        record.converged.append(np.array([all(r.converged for r in row) for row in results]))
        if progress is not None:
            progress()
    return record
