# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython kernels of the kernel-width path (Balog et al. 2016, Sec. 4).

All split events of a Mondrian forest, sorted by time, replace one feature
(the cell that splits) by two (its children).  The classes here keep, for
every training point and tree, the id of the point's active node (the
``act`` table, shape (N, M)), update it from the children's slices
``perm[start:end]`` (per event where the learner needs it; once per
:meth:`CGPath.advance`, from the cells still active), and carry a learner
along:

* :class:`CholeskyPath` -- exact ridge regression for several alphas through
  O(C²) up/down-dates of the Cholesky factor of A = ΦᵀΦ + αI
  (``c/cholupdate.h``), with the statistics of the log marginal likelihood
  at every event (Sec. 4.2.1);
* :class:`CGPath` -- weights warm-started across events (parent weight
  copied to both children) and solved by Jacobi-preconditioned conjugate
  gradients at chosen lifetimes, on compact vectors over the active nodes,
  Φ applied from a copy of the ``act`` table in compact positions, blocked
  by rows and tree-major within a block (``c/cgblock.h``);
* :class:`SGDPath` -- stochastic gradient descent with squared, hinge or
  logistic loss, warm-started at every split (Sec. 4.2.2);
* :func:`dual_events` -- the exact path in the dual: the N x N factor of
  K + αI through a rank-1 update and downdate per split (:func:`dual_split`
  is one such event on any factor);

and the ℓ₁ distances between rows behind the path's scale λ₀ = 1/median
distance (:func:`pair_l1`, ``c/scale.h``).

Every learner reads the trees straight from the C arrays of a
:class:`~mondrian._ext._forest.Forest` (cimported): node ids are the
forest's global ids, the events are the forest's own split events
(``Forest.split_events``, ``c/events.h``), and the learner pins the forest,
so the arrays cannot move while it lives.  The checks here guard memory
safety only.
"""
from cython.parallel cimport prange, threadid
from libc.math cimport exp, sqrt
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy, memset

import numpy as np

from ._c cimport MT_OK, MT_ERR_NOMEM, MT_ERR_STATE, mt_index, mt_forest, mt_threads_release
from ._forest cimport Forest
from ._status cimport check_status, check_threads

cdef extern from "c/gather.h" nogil:
    void mt_gather(const int32_t *idx, size_t n, const double *v, size_t stride,
                   double *out)
    double mt_gather_one(const int32_t *idx, size_t n, const double *v, size_t stride,
                         size_t off)

cdef extern from "c/cgblock.h" nogil:
    void mt_cgblock_table(const int32_t *act, size_t M, const int64_t *rows, size_t nb,
                          const int32_t *pos, int32_t *out)
    void mt_cgblock_gather(const int32_t *tab, size_t M, size_t nb, const double *x,
                           size_t K, double scale, const int64_t *rows, double *f,
                           double *acc)

cdef extern from "c/scale.h" nogil:
    int mt_pair_l1(const double *X, size_t n, size_t d, double *out)

cdef extern from "c/cholupdate.h" nogil:
    int mt_chol_delete(double *L, size_t ld, size_t n, size_t c, double *work)
    int mt_chol_append(double *L, size_t ld, size_t n, const double *a, double d,
                       double *work)
    void mt_chol_forward(const double *L, size_t ld, size_t n, double *b)
    void mt_chol_backward(const double *L, size_t ld, size_t n, double *b)
    double mt_chol_logdet(const double *L, size_t ld, size_t n)
    int mt_chol_rank1(double *L, size_t ld, size_t n, double *x, int down)

__all__ = ["CholeskyPath", "CGPath", "SGDPath", "pair_l1", "dual_split", "dual_events"]


def pair_l1(const double[:, ::1] X not None):
    """The ℓ₁ distances of every pair of rows of X (n x d, C-contiguous
    float64), in scipy's condensed order ((0, 1), (0, 2), ..., (1, 2), ...),
    each summed over the coordinates in order: bitwise
    ``scipy.spatial.distance.pdist(X, 'cityblock')``, three times faster."""
    cdef size_t n = X.shape[0], d = X.shape[1]
    cdef int status
    out = np.empty(n * (n - 1) // 2 if n > 1 else 0, dtype=np.float64)
    cdef double[::1] o = out
    if n < 2:
        return out
    with nogil:
        status = mt_pair_l1(&X[0, 0], n, d, &o[0])
    check_status(status, "pair_l1")
    return out

cdef int _dual_step(double *L, size_t n, const double *d, const double *p, const double *y,
                    double *c, double *work, double *out) noexcept nogil:
    """The event of :func:`dual_split` on raw arrays; out = (log det G, yᵀc,
    cᵀc).  Returns the status of the up- and downdate."""
    cdef size_t i
    cdef int status
    cdef double yc = 0.0, cc = 0.0
    memcpy(work, d, n * sizeof(double))
    memcpy(work + n, p, n * sizeof(double))
    status = mt_chol_rank1(L, n, n, work, 0)
    if status == MT_OK:
        status = mt_chol_rank1(L, n, n, work + n, 1)
    if status != MT_OK:
        return status
    memcpy(c, y, n * sizeof(double))
    mt_chol_forward(L, n, n, c)
    mt_chol_backward(L, n, n, c)
    for i in range(n):
        yc += y[i] * c[i]
        cc += c[i] * c[i]
    out[0] = mt_chol_logdet(L, n, n)
    out[1] = yc
    out[2] = cc
    return MT_OK


def dual_split(double[::1, :] L not None, const double[::1] d not None,
               const double[::1] p not None, const double[::1] y not None,
               double[::1] c not None, double[::1] work not None):
    """One split event of the exact path in the dual, for one alpha.

    ``L`` (n x n, Fortran order, lower triangle read) is the Cholesky factor
    of G = K + αI over the n training points.  A cell of one of the M
    trees that splits into children l and r separates their pairs:
    K changes by -(1/M)(1_l 1_rᵀ + 1_r 1_lᵀ) = ddᵀ - ppᵀ with
    d = (1_l - 1_r)/√(2M) and p = (1_l + 1_r)/√(2M) (the caller's vectors).
    ``L`` becomes the factor of G + ddᵀ - ppᵀ by a rank-1 update and a
    rank-1 downdate (``c/cholupdate.h``), and ``c`` = G⁻¹y (two triangular
    solves), all in O(n²).  ``work`` holds 2n doubles.  Returns
    (log det G, yᵀc, cᵀc)."""
    cdef size_t n = L.shape[0]
    cdef int status = MT_OK
    cdef double out[3]
    if <size_t>L.shape[1] != n or <size_t>d.shape[0] != n or <size_t>p.shape[0] != n or \
            <size_t>y.shape[0] != n or <size_t>c.shape[0] != n or <size_t>work.shape[0] < 2 * n:
        raise ValueError("dual_split: L must be n x n, d, p, y and c of length n, work 2n")
    if n == 0:
        return 0.0, 0.0, 0.0
    with nogil:
        status = _dual_step(&L[0, 0], n, &d[0], &p[0], &y[0], &c[0], &work[0], out)
    _raise(status, "dual_split")
    return out[0], out[1], out[2]


cdef inline void _mark(double *buf, size_t n, const int32_t *rows, int64_t k0, int64_t k1,
                       double d, double p) noexcept nogil:
    """buf[i] = d and buf[n + i] = p for the points i = rows[k0:k1]."""
    cdef int64_t k
    for k in range(k0, k1):
        buf[rows[k]] = d
        buf[n + rows[k]] = p


def dual_events(double[:, :, ::1] L not None, double[:, ::1] c not None,
                const double[::1] y not None, const int64_t[::1] tree not None,
                const int64_t[::1] left not None, const int64_t[::1] right not None,
                const int64_t[::1] tstart not None, const int64_t[::1] tend not None,
                const int32_t[:, ::1] perm not None, Py_ssize_t e0, Py_ssize_t e1,
                double scale, double[:, :, ::1] rec not None, int n_threads=1):
    """Events e0 .. e1 - 1 of the exact path in the dual, every alpha.

    ``L[a]`` holds alpha a's factor transposed (C order: the Fortran-ordered
    lower factor of :func:`dual_split`), ``c[a]`` its G⁻¹y; event e splits a
    cell of tree ``tree[e]`` into ``left[e]`` and ``right[e]``, whose
    training points are ``perm[tree, tstart:tend]`` (ranks 0 .. n - 1 among
    the training points), and d, p are their indicators times ``scale`` =
    1/√(2M) (:func:`dual_split`); a child without training points leaves G
    as it is.  ``rec[e + 1, :, a]`` gets (log det G, yᵀc, cᵀc) after event
    e.  The alphas run on up to ``n_threads`` threads (each its own factor,
    events in order): the records do not depend on the thread count."""
    cdef Py_ssize_t n_alpha = L.shape[0], a, e
    cdef size_t n = L.shape[1]
    cdef int64_t m, l, r
    cdef double *buf
    cdef int st
    if (<size_t>L.shape[2] != n or c.shape[0] != n_alpha or <size_t>c.shape[1] != n
            or <size_t>y.shape[0] != n or <size_t>perm.shape[1] < n
            or rec.shape[1] != 3 or rec.shape[2] != n_alpha
            or e0 < 0 or e1 > tree.shape[0] or e1 + 1 > rec.shape[0]
            or left.shape[0] < e1 or right.shape[0] < e1
            or tstart.shape[0] != tend.shape[0]):
        raise ValueError("dual_events: inconsistent shapes")
    if n == 0 or e1 <= e0 or n_alpha == 0:
        return
    if perm.shape[0] * perm.shape[1] > 0:
        values = np.asarray(perm)
        if values.min() < 0 or values.max() >= <int64_t>n:
            raise ValueError("dual_events: perm holds a point outside 0 .. n - 1")
    status = np.zeros(n_alpha, dtype=np.intc)
    cdef int[::1] sv = status
    cdef int nt = check_threads(n_threads)
    for e in range(e0, e1):
        m, l, r = tree[e], left[e], right[e]
        if (m < 0 or m >= perm.shape[0] or l < 0 or r < 0 or l >= tstart.shape[0]
                or r >= tstart.shape[0] or tstart[l] < 0 or tend[l] > <int64_t>n
                or tstart[r] < 0 or tend[r] > <int64_t>n):
            raise ValueError(f"dual_events: event {e} is outside the forest")
    for a in prange(n_alpha, num_threads=min(nt, n_alpha), schedule="static", nogil=True):
        # d, p, the step's work (2n) and its three results: one block a thread
        buf = <double *>calloc(4 * n + 3, sizeof(double))
        if buf == NULL:
            sv[a] = MT_ERR_NOMEM
            continue
        st = MT_OK
        for e in range(e0, e1):
            m, l, r = tree[e], left[e], right[e]
            if tstart[l] == tend[l] or tstart[r] == tend[r]:
                # a child without training points: K over them is unchanged
                rec[e + 1, 0, a] = rec[e, 0, a]
                rec[e + 1, 1, a] = rec[e, 1, a]
                rec[e + 1, 2, a] = rec[e, 2, a]
                continue
            # d = (1_l - 1_r)·scale, p = (1_l + 1_r)·scale; zeroed again after
            _mark(buf, n, &perm[m, 0], tstart[l], tend[l], scale, scale)
            _mark(buf, n, &perm[m, 0], tstart[r], tend[r], -scale, scale)
            st = _dual_step(&L[a, 0, 0], n, buf, buf + n, &y[0], &c[a, 0], buf + 2 * n,
                            buf + 4 * n)
            _mark(buf, n, &perm[m, 0], tstart[l], tend[l], 0.0, 0.0)
            _mark(buf, n, &perm[m, 0], tstart[r], tend[r], 0.0, 0.0)
            if st != MT_OK:
                break
            rec[e + 1, 0, a] = buf[4 * n]
            rec[e + 1, 1, a] = buf[4 * n + 1]
            rec[e + 1, 2, a] = buf[4 * n + 2]
        free(buf)
        sv[a] = st
    for a in range(n_alpha):
        _raise(sv[a], "dual_events")


# Most rows in one block of the CGPath's Φx gather (c/cgblock.h); up to
# ROW_MAJOR_BYTES of packed x (it stays in cache) the gather runs row by row.
cdef enum:
    MAX_BLOCK_ROWS = 1024
    ROW_MAJOR_BYTES = 65536

#: The CG path's copy of the active-node table in compact positions (4·N·M
#: bytes for N training rows and M trees) is made only up to this size;
#: above it (10⁶ rows x 300 trees: 1.2 GB) the Φx gather reads the
#: active-node table itself, row by row, with x scattered to node space
#: (slower on large forests, the same sums in the same order).
CG_TABLE_MAX_BYTES = 1 << 29

cdef int _raise(int status, str what) except -1:
    if status == MT_ERR_STATE:
        raise FloatingPointError(
            f"{what}: the regularised feature covariance lost positive definiteness "
            f"in floating point; use a larger alpha")
    return check_status(status, what)


cdef class _PathBase:
    """The forest (read from its C arrays), the event cursor and the (N, M)
    active-node table."""

    cdef readonly Forest forest
    cdef const mt_index *left
    cdef const mt_index *right
    cdef const mt_index *tree_of
    cdef const mt_index *start
    cdef const mt_index *end
    cdef const mt_index *perm
    cdef const double *tau
    cdef Py_ssize_t pstride
    cdef const int64_t[::1] events
    cdef const unsigned char[::1] is_train
    cdef int32_t[:, ::1] act
    cdef readonly Py_ssize_t n_points, n_trees, n_nodes, n_events, cursor
    cdef readonly double inv_sqrt_m
    cdef object __weakref__

    def __init__(self, Forest forest not None, is_train, act=None):
        cdef const mt_forest *f = &forest.f
        if f.n_nodes == 0:
            raise ValueError("the forest has no trees; fit it first")
        if f.n_nodes >= 2**31 - 1:
            raise ValueError(f"the forest has {f.n_nodes} nodes; at most 2**31 - 2 "
                             f"are supported")
        is_train = np.ascontiguousarray(is_train, dtype=np.uint8)
        if is_train.shape != (f.n_points,):
            raise ValueError("is_train must have one entry per point")
        # The arrays must not move while this learner reads them.
        forest.pin(self)
        self.forest = forest
        self.left = f.left
        self.right = f.right
        self.tree_of = f.tree_of
        self.start = f.start
        self.end = f.end
        self.perm = f.perm
        self.tau = f.tau
        self.pstride = f.point_capacity
        self.events = forest.split_events()[0]
        self.is_train = is_train
        self.n_trees = f.n_trees
        self.n_points = f.n_points
        self.n_nodes = f.n_nodes
        self.n_events = self.events.shape[0]
        if act is None:
            act = np.empty((self.n_points, self.n_trees), dtype=np.int32)
            act[:, :] = np.asarray(forest.roots, dtype=np.int32)[None, :]
        else:
            # A table handed over by a path continuing on this forest (its
            # ids already remapped): adopted, not copied, and loaded with
            # its cursor by _set_base.  Until then it is the roots' table
            # only in shape, so it is checked here and again there.
            if (not isinstance(act, np.ndarray) or act.dtype != np.int32
                    or act.shape != (self.n_points, self.n_trees)
                    or not act.flags.c_contiguous or not act.flags.writeable):
                raise ValueError(f"act must be a writeable C-contiguous int32 array of shape "
                                 f"({self.n_points}, {self.n_trees})")
        self.act = act
        self.cursor = 0
        self.inv_sqrt_m = 1.0 / sqrt(<double>self.n_trees)

    def active_table(self):
        """Copy of the (N, M) table of active node ids."""
        return np.asarray(self.act).copy()

    def _set_base(self, act, Py_ssize_t cursor):
        """Load an active-node table and event cursor (continuing a path)."""
        act = np.asarray(act, dtype=np.int32)
        if act.shape != (self.n_points, self.n_trees):
            raise ValueError("active table of the wrong shape")
        if cursor < 0 or cursor > self.n_events:
            raise ValueError("cursor out of range")
        if act.size and (act.min() < 0 or act.max() >= self.n_nodes):
            raise ValueError("active table holds an invalid node id")
        own = np.asarray(self.act)
        if not (act.size and act.ctypes.data == own.ctypes.data):
            own[:, :] = act   # else it is the table adopted at construction
        self.cursor = cursor

    def gather(self, W, const int64_t[::1] rows, n_threads=1):
        """Predictions Σₘ W[k, act[i, m]]/√M of the points ``rows`` for
        node-space weights W of shape (K, n_nodes); returns (K, len(rows))."""
        W = np.ascontiguousarray(W, dtype=np.float64)
        if W.ndim != 2 or W.shape[1] != self.n_nodes:
            raise ValueError(f"W must have shape (K, {self.n_nodes})")
        cdef Py_ssize_t r
        for r in range(rows.shape[0]):
            if rows[r] < 0 or rows[r] >= self.n_points:
                raise ValueError("rows holds an index out of range")
        out = np.empty((W.shape[0], rows.shape[0]))
        cdef const double[:, ::1] Wv = W
        cdef double[:, ::1] o = out
        cdef Py_ssize_t k, K = W.shape[0]
        cdef int64_t i
        cdef int nt = check_threads(n_threads)
        with nogil:
            for r in prange(rows.shape[0], num_threads=nt, schedule="static"):
                i = rows[r]
                for k in range(K):
                    o[k, r] = mt_gather_one(&self.act[i, 0], self.n_trees, &Wv[k, 0], 1,
                                            0) * self.inv_sqrt_m
            mt_threads_release()   # after every entry point with prange: c/threads.h
        return out

    cdef inline void _move_points(self, int64_t child) noexcept nogil:
        cdef int64_t m = self.tree_of[child], k
        for k in range(self.start[child], self.end[child]):
            self.act[self.perm[m * self.pstride + k], m] = <int32_t>child


# --------------------------------------------------------------------------
# Exact ridge: Cholesky up/down-dates
# --------------------------------------------------------------------------
cdef class CholeskyPath(_PathBase):
    """Exact ridge weights along the path, one Cholesky factor per alpha.

    Parameters: the ``forest``, ``is_train`` (points that enter the fit),
    ``node_y`` (Φᵀy per node: Σ y over the node's training points / √M),
    ``counts`` (training points per node), ``alphas``, ``capacity`` (the
    number of columns at the terminal lifetime) and ``n_threads`` (threads
    over alphas).

    Records per state k (k = 0: λ = 0, k ≥ 1: after event k-1): the number
    of columns, ‖z‖² with z = L⁻¹Φᵀy (so ŵᵀΦᵀy = ‖z‖²), ‖ŵ‖² and log det A.
    """

    cdef double[::1] alphas, aL, aR, b
    cdef const double[::1] node_y, counts
    cdef double[:, ::1] L, work, sol
    cdef int64_t[::1] order, pos
    cdef int[::1] status
    cdef readonly Py_ssize_t n_alpha, capacity, n_columns
    cdef int n_threads
    cdef readonly object rec_columns, rec_zz, rec_ww, rec_logdet
    cdef int64_t[::1] r_cols
    cdef double[:, ::1] r_zz, r_ww, r_logdet

    def __init__(self, Forest forest not None, is_train, node_y, counts, alphas,
                 Py_ssize_t capacity, n_threads=1):
        _PathBase.__init__(self, forest, is_train)
        if np.shape(node_y) != (self.n_nodes,) or np.shape(counts) != (self.n_nodes,):
            raise ValueError("node_y and counts need one entry per node")
        cdef const int64_t[::1] roots = forest.roots
        self.counts = counts
        cdef Py_ssize_t M = self.n_trees, k, a
        self.alphas = np.ascontiguousarray(alphas, dtype=np.float64)
        self.n_alpha = self.alphas.shape[0]
        self.node_y = node_y
        if capacity < M + self.n_events:
            raise ValueError("capacity below the number of columns at the terminal lifetime")
        self.capacity = capacity + 1
        self.n_threads = check_threads(n_threads)
        cdef Py_ssize_t cap = self.capacity
        self.L = np.zeros((self.n_alpha, cap * cap), dtype=np.float64)
        self.work = np.zeros((self.n_alpha, cap), dtype=np.float64)
        self.sol = np.zeros((self.n_alpha, cap), dtype=np.float64)
        self.aL = np.zeros(cap, dtype=np.float64)
        self.aR = np.zeros(cap, dtype=np.float64)
        self.b = np.zeros(cap, dtype=np.float64)
        self.order = np.full(cap, -1, dtype=np.int64)
        self.pos = np.full(self.n_nodes, -1, dtype=np.int64)
        self.status = np.zeros(self.n_alpha, dtype=np.intc)
        self.rec_columns = np.zeros(self.n_events + 1, dtype=np.int64)
        self.rec_zz = np.zeros((self.n_events + 1, self.n_alpha))
        self.rec_ww = np.zeros((self.n_events + 1, self.n_alpha))
        self.rec_logdet = np.zeros((self.n_events + 1, self.n_alpha))
        self.r_cols = self.rec_columns
        self.r_zz = self.rec_zz
        self.r_ww = self.rec_ww
        self.r_logdet = self.rec_logdet
        # λ = 0: every point is in every root, so A = (N/M) 11ᵀ + αI.
        cdef double share = self.counts[roots[0]] / <double>M
        cdef int st
        for k in range(M):
            self.aL[k] = share
        for a in range(self.n_alpha):
            for k in range(M):
                st = mt_chol_append(&self.L[a, 0], cap, k, &self.aL[0],
                                    share + self.alphas[a], &self.work[a, 0])
                _raise(st, "CholeskyPath")
        for k in range(M):
            self.order[k] = roots[k]
            self.pos[roots[k]] = k
            self.b[k] = self.node_y[roots[k]]
        self.n_columns = M
        with nogil:
            self._solve(0)
            mt_threads_release()

    cdef void _solve(self, Py_ssize_t rec) noexcept nogil:
        cdef Py_ssize_t a, k, n = self.n_columns, cap = self.capacity
        cdef double zz, ww
        self.r_cols[rec] = n
        for a in prange(self.n_alpha, num_threads=self.n_threads, schedule="static"):
            memcpy(&self.sol[a, 0], &self.b[0], n * sizeof(double))
            mt_chol_forward(&self.L[a, 0], cap, n, &self.sol[a, 0])
            zz = 0.0
            for k in range(n):
                zz = zz + self.sol[a, k] * self.sol[a, k]
            self.r_zz[rec, a] = zz
            self.r_logdet[rec, a] = mt_chol_logdet(&self.L[a, 0], cap, n)
            mt_chol_backward(&self.L[a, 0], cap, n, &self.sol[a, 0])
            ww = 0.0
            for k in range(n):
                ww = ww + self.sol[a, k] * self.sol[a, k]
            self.r_ww[rec, a] = ww

    cdef void _cross(self, int64_t child, int64_t m, double *out, Py_ssize_t n) noexcept nogil:
        """out[pos] = (Φ_posᵀ Φ_child) for the current columns (other trees)."""
        cdef int64_t k, p, m2, M = self.n_trees
        cdef double inv_m = 1.0 / <double>M
        memset(out, 0, n * sizeof(double))
        for k in range(self.start[child], self.end[child]):
            p = self.perm[m * self.pstride + k]
            if not self.is_train[p]:
                continue
            for m2 in range(M):
                if m2 != m:
                    out[self.pos[self.act[p, m2]]] += inv_m

    cdef int _step(self) noexcept nogil:
        cdef int64_t g = self.events[self.cursor]
        cdef int64_t m = self.tree_of[g], gl = self.left[g], gr = self.right[g]
        cdef Py_ssize_t n = self.n_columns, c = self.pos[g], k, a
        cdef Py_ssize_t cap = self.capacity
        cdef double inv_m = 1.0 / <double>self.n_trees
        cdef double dL = self.counts[gl] * inv_m
        cdef double dR = self.counts[gr] * inv_m
        cdef int st
        for k in range(c, n - 1):
            self.order[k] = self.order[k + 1]
            self.pos[self.order[k]] = k
            self.b[k] = self.b[k + 1]
        self.pos[g] = -1
        self._cross(gl, m, &self.aL[0], n - 1)
        self._cross(gr, m, &self.aR[0], n - 1)
        self.aR[n - 1] = 0.0   # the two children are disjoint
        for a in prange(self.n_alpha, num_threads=self.n_threads, schedule="static"):
            st = mt_chol_delete(&self.L[a, 0], cap, n, c, &self.work[a, 0])
            if st == MT_OK:
                st = mt_chol_append(&self.L[a, 0], cap, n - 1, &self.aL[0],
                                    dL + self.alphas[a], &self.work[a, 0])
            if st == MT_OK:
                st = mt_chol_append(&self.L[a, 0], cap, n, &self.aR[0],
                                    dR + self.alphas[a], &self.work[a, 0])
            self.status[a] = st
        for a in range(self.n_alpha):
            if self.status[a] != MT_OK:
                return self.status[a]
        self.order[n - 1] = gl
        self.pos[gl] = n - 1
        self.b[n - 1] = self.node_y[gl]
        self.order[n] = gr
        self.pos[gr] = n
        self.b[n] = self.node_y[gr]
        self.n_columns = n + 1
        self._move_points(gl)
        self._move_points(gr)
        self.cursor += 1
        self._solve(self.cursor)
        return MT_OK

    def run(self, double lifetime):
        """Process every event with split time <= ``lifetime``; returns the count."""
        cdef Py_ssize_t done = 0
        cdef int st = MT_OK
        with nogil:
            while self.cursor < self.n_events and self.tau[self.events[self.cursor]] <= lifetime:
                st = self._step()
                if st != MT_OK:
                    break
                done += 1
            mt_threads_release()
        _raise(st, "CholeskyPath.run")
        return done

    def weights(self):
        """(node ids of the current columns, weights of shape (n_alpha, C))."""
        n = self.n_columns
        return (np.asarray(self.order)[:n].copy(), np.asarray(self.sol)[:, :n].copy())

    def _export(self):
        """Everything needed to continue this path on an extended forest."""
        n, cap, k = self.n_columns, self.capacity, self.cursor + 1
        L = np.asarray(self.L).reshape(self.n_alpha, cap, cap)[:, :n, :n].copy()
        return dict(act=self.active_table(), cursor=self.cursor, L=L,
                    order=np.asarray(self.order)[:n].copy(),
                    sol=np.asarray(self.sol)[:, :n].copy(),
                    rec_columns=np.asarray(self.rec_columns)[:k].copy(),
                    rec_zz=np.asarray(self.rec_zz)[:k].copy(),
                    rec_ww=np.asarray(self.rec_ww)[:k].copy(),
                    rec_logdet=np.asarray(self.rec_logdet)[:k].copy())

    def _import(self, state):
        """Load :meth:`_export` output whose node ids are already remapped."""
        order = np.asarray(state["order"], dtype=np.int64)
        n = order.shape[0]
        L = np.asarray(state["L"], dtype=np.float64)
        k = state["rec_columns"].shape[0]
        if (n >= self.capacity or L.shape != (self.n_alpha, n, n)
                or k != state["cursor"] + 1 or k > self.n_events + 1):
            raise ValueError("inconsistent path state")
        if n and (order.min() < 0 or order.max() >= self.n_nodes):
            raise ValueError("path state holds an invalid node id")
        self._set_base(state["act"], state["cursor"])
        cap = self.capacity
        Lv = np.asarray(self.L).reshape(self.n_alpha, cap, cap)
        Lv[:, :n, :n] = L
        np.asarray(self.order)[:n] = order
        pos = np.asarray(self.pos)
        pos[:] = -1
        pos[order] = np.arange(n)
        np.asarray(self.b)[:n] = np.asarray(self.node_y)[order]
        np.asarray(self.sol)[:, :n] = state["sol"]
        self.n_columns = n
        for name in ("rec_columns", "rec_zz", "rec_ww", "rec_logdet"):
            getattr(self, name)[:k] = state[name]

    def factor(self, Py_ssize_t alpha_index):
        """The current lower Cholesky factor (C x C) for one alpha, columns in
        the order of :meth:`weights`."""
        n, cap = self.n_columns, self.capacity
        full = np.asarray(self.L)[alpha_index].reshape(cap, cap)[:n, :n].T
        return np.tril(full)


# --------------------------------------------------------------------------
# Scalable ridge: warm-started preconditioned conjugate gradients
# --------------------------------------------------------------------------
cdef class CGPath(_PathBase):
    """Ridge weights for several alphas, warm-started across events and
    solved by Jacobi-preconditioned CG when asked.

    Weights live in node space (one slot per node of the forest, zero for
    nodes not active).  Within one tree ΦₘᵀΦₘ is diagonal (cell counts / M),
    so diag(A) = count/M + α is the exact Jacobi preconditioner.  Only the
    points with ``is_train`` enter Φ.

    A solve runs on compact vectors: position c = 0..n_ids-1 for the c-th
    active node in increasing id (``ids``, ``pos``), the weights copied in
    at the start and back at the end.  The products ΦᵀΦx are two gathers:
    f = Φx from a copy of the active-node table holding compact positions,
    rebuilt once per solve in blocks of training rows, tree after tree
    within a block (``c/cgblock.h``: one tree's x values stay in cache
    while a block's rows are summed), then Φᵀf over the cells' training
    point slices.  Both run on ``n_threads`` threads; every sum (the
    products' and the CG's dot products) runs in a fixed order, so the
    results depend neither on the thread count nor on the block size
    (``block_rows``, 0: chosen per solve -- row by row while the packed x
    fits in cache, else blocks; 1 sums row by row).  The table's copy is
    made only while it takes at most ``table_max_bytes``
    (:data:`CG_TABLE_MAX_BYTES`); above, f = Φx is summed row by row from the
    active-node table itself, x scattered to node space -- again the same
    sums.

    ``act``: an (N, M) int32 C-contiguous table to adopt as the active-node
    table instead of allocating one (a path continuing on an extended
    forest hands over its remapped table: :meth:`_export` with
    ``take_table=True``, then :meth:`_import` of that state, which checks
    its ids and does not copy it).
    """

    cdef const double[::1] alphas, node_y, diag0, y
    cdef const int64_t[::1] tstart, tend
    cdef const int32_t[:, ::1] ptrain
    cdef double[:, ::1] W
    cdef double[:, ::1] Wc, rc, pc, qc
    cdef double[::1] nyc, dc, xpack, fpack, cellsum, acc, rzv, beta
    cdef int64_t[::1] cofs, clen
    cdef int[::1] live, conv
    cdef double[:, ::1] resid
    cdef unsigned char[::1] active
    cdef const int64_t[::1] rows
    cdef int32_t[::1] pos, tab
    cdef double[::1] xnode
    cdef readonly Py_ssize_t n_alpha
    cdef public Py_ssize_t block_rows, table_max_bytes
    cdef bint use_table
    cdef Py_ssize_t cap, n_block
    cdef int n_threads
    cdef int64_t[::1] ids, fresh
    cdef Py_ssize_t n_ids, n_fresh
    cdef bint resid_valid

    def __init__(self, Forest forest not None, is_train, node_y, counts, y, alphas,
                 n_threads=1, act=None):
        _PathBase.__init__(self, forest, is_train, act)
        if (np.shape(node_y) != (self.n_nodes,) or np.shape(counts) != (self.n_nodes,)
                or np.shape(y) != (self.n_points,)):
            raise ValueError("node_y and counts need one entry per node, y one per point")
        roots = forest.roots
        self.tstart, self.tend, self.ptrain = forest.train_slices(is_train)
        self.alphas = np.ascontiguousarray(alphas, dtype=np.float64)
        self.n_alpha = self.alphas.shape[0]
        self.node_y = node_y
        self.diag0 = np.ascontiguousarray(counts, dtype=np.float64) / self.n_trees
        self.y = y
        self.rows = np.flatnonzero(np.asarray(is_train)).astype(np.int64)
        self.n_threads = check_threads(n_threads)
        self.W = np.zeros((self.n_alpha, self.n_nodes))
        self.cap = 0
        self.fpack = np.zeros(max(1, self.n_alpha * self.n_points))
        self.rzv = np.zeros(self.n_alpha)
        self.beta = np.zeros(self.n_alpha)
        self.live = np.zeros(self.n_alpha, dtype=np.intc)
        self.conv = np.zeros(self.n_alpha, dtype=np.intc)
        self.resid = np.repeat(np.asarray(y, dtype=np.float64)[None, :], self.n_alpha, axis=0)
        self.resid_valid = True
        self.fresh = np.zeros(self.n_nodes, dtype=np.int64)
        self.n_fresh = 0
        act = np.zeros(self.n_nodes, dtype=np.uint8)
        act[np.asarray(roots, dtype=np.int64)] = 1
        self.active = act
        self.ids = np.zeros(self.n_nodes, dtype=np.int64)
        self.pos = np.zeros(self.n_nodes, dtype=np.int32)
        self.tab = np.zeros(1, dtype=np.int32)
        self.xnode = np.zeros(1)
        self.acc = np.zeros(1)
        self.block_rows = 0
        self.table_max_bytes = CG_TABLE_MAX_BYTES
        self.use_table = True
        self.n_block = 1

    def advance(self, double lifetime, bint dual=False):
        """Apply every event with split time <= ``lifetime``.

        ``dual=False``: children take the parent's weight (predictions
        unchanged, Sec. 4.2.2).  ``dual=True``: the dual weights
        β = (y - Φw)/α of the last :meth:`solve` are kept and the children
        get w_child = φ_childᵀβ = Σ_{i ∈ child} residualᵢ/(α√M), so the
        warm start stays in the range of Φᵀ, where the ridge solution lies
        (no component in the null space of Φ, which preconditioned CG
        removes slowly: its eigenvalues are α/(count/M + α)).
        """
        cdef int64_t g, gl, gr, k, m, i, j
        cdef Py_ssize_t a, f, done = 0, first_fresh = self.n_fresh
        cdef double sl, sr
        with nogil:
            while self.cursor < self.n_events and self.tau[self.events[self.cursor]] <= lifetime:
                g = self.events[self.cursor]
                gl = self.left[g]
                gr = self.right[g]
                m = self.tree_of[g]
                for a in range(self.n_alpha):
                    if dual:
                        sl = 0.0
                        sr = 0.0
                        for k in range(self.start[gl], self.end[gl]):
                            sl += self.resid[a, self.perm[m * self.pstride + k]]
                        for k in range(self.start[gr], self.end[gr]):
                            sr += self.resid[a, self.perm[m * self.pstride + k]]
                        self.W[a, gl] = sl * self.inv_sqrt_m / self.alphas[a]
                        self.W[a, gr] = sr * self.inv_sqrt_m / self.alphas[a]
                    else:
                        self.W[a, gl] = self.W[a, g]
                        self.W[a, gr] = self.W[a, g]
                    self.W[a, g] = 0.0
                self.active[g] = 0
                self.active[gl] = 1
                self.active[gr] = 1
                self.fresh[self.n_fresh] = gl
                self.fresh[self.n_fresh + 1] = gr
                self.n_fresh += 2
                self.cursor += 1
                done += 1
            # The active-node table is brought up to date once, from the
            # cells created by this call that are still active: each point
            # of a tree that moved is in exactly one of them, so this writes
            # at most N·M entries, where moving the points at every event
            # writes one per point and level crossed (N·M·depth).
            for f in range(first_fresh, self.n_fresh):
                j = self.fresh[f]
                if self.active[j]:
                    self._move_points(j)
            if dual and done > 0:
                self.resid_valid = False
        return done

    cdef void _local_sweeps(self, Py_ssize_t a, int n_sweeps) noexcept nogil:
        """Gauss-Seidel sweeps over the cells created since the last solve.

        With predictions preserved at the splits, the residual of the normal
        equations is concentrated on the new cells; one coordinate step on
        cell j costs O(n_j) with the training residual e = y - Φw kept up to
        date: δ = (Σ_{i∈j} eᵢ/√M - α w_j)/(count_j/M + α), w_j += δ,
        eᵢ -= δ/√M for i ∈ j.
        """
        cdef Py_ssize_t sweep, f, k
        cdef int64_t j, m, i
        cdef double acc, delta
        for sweep in range(n_sweeps):
            for f in range(self.n_fresh):
                j = self.fresh[f]
                if not self.active[j]:
                    continue
                m = self.tree_of[j]
                acc = 0.0
                for k in range(self.start[j], self.end[j]):
                    i = self.perm[m * self.pstride + k]
                    if self.is_train[i]:
                        acc += self.resid[a, i]
                delta = ((acc * self.inv_sqrt_m - self.alphas[a] * self.W[a, j])
                         / (self.diag0[j] + self.alphas[a]))
                self.W[a, j] += delta
                delta = delta * self.inv_sqrt_m
                for k in range(self.start[j], self.end[j]):
                    i = self.perm[m * self.pstride + k]
                    if self.is_train[i]:
                        self.resid[a, i] -= delta

    cdef int _prepare(self) except -1:
        """List the active nodes (``ids``, ``pos``), size the compact buffers
        and choose the block of rows of the Φx gather."""
        cdef Py_ssize_t j, n = 0, K = self.n_alpha, T = self.n_threads
        cdef Py_ssize_t n_rows = self.rows.shape[0], B, nb
        for j in range(self.n_nodes):
            if self.active[j]:
                self.ids[n] = j
                self.pos[j] = <int32_t>n
                n += 1
        self.n_ids = n
        if n > self.cap:
            # grows with the lifetime only: at most once per solve
            self.Wc = np.zeros((K, n))
            self.rc = np.zeros((K, n))
            self.pc = np.zeros((K, n))
            self.qc = np.zeros((K, n))
            self.nyc = np.zeros(n)
            self.cofs = np.zeros(n, dtype=np.int64)
            self.clen = np.zeros(n, dtype=np.int64)
            self.dc = np.zeros(n)
            self.xpack = np.zeros(K * n)
            self.cellsum = np.zeros(K * n)
            self.cap = n
        self.use_table = <size_t>n_rows * self.n_trees * sizeof(int32_t) <= \
            <size_t>max(self.table_max_bytes, 0)
        if not self.use_table:
            # no copy of the table: row by row from act, x in node space
            if self.xnode.shape[0] < K * self.n_nodes:
                self.xnode = np.zeros(K * self.n_nodes)
            self.n_block = 1
            return 0
        if self.tab.shape[0] < n_rows * self.n_trees:
            self.tab = np.zeros(n_rows * self.n_trees, dtype=np.int32)
        B = self.block_rows
        if B <= 0 and n * K * sizeof(double) <= ROW_MAJOR_BYTES:
            # x fits in cache: row by row, the sums in registers
            B = 1
        elif B <= 0:
            # blocks of at most MAX_BLOCK_ROWS rows, as many per thread
            nb = max(1, (n_rows + T * MAX_BLOCK_ROWS - 1) // (T * MAX_BLOCK_ROWS)) * T
            B = (n_rows + nb - 1) // nb
        self.n_block = max(1, min(B, n_rows))
        if self.acc.shape[0] < T * 4 * K * self.n_block:
            self.acc = np.zeros(T * 4 * K * self.n_block)
        return 0

    cdef void _build_table(self) noexcept nogil:
        """The blocked table of compact positions (``c/cgblock.h``) from the
        active-node table, threads over blocks (none above
        ``table_max_bytes``)."""
        cdef Py_ssize_t B = self.n_block, M = self.n_trees, n_rows = self.rows.shape[0]
        cdef Py_ssize_t b, r0, n_b = (n_rows + B - 1) // B
        if not self.use_table:
            return
        for b in prange(n_b, num_threads=self.n_threads, schedule="static"):
            r0 = b * B
            mt_cgblock_table(&self.act[0, 0], M, &self.rows[r0], min(B, n_rows - r0),
                             &self.pos[0], &self.tab[r0 * M])

    cdef void _load_cells(self) noexcept nogil:
        """Per compact position: Φᵀy, count/M and the cell's training-point
        slice (offset into ``ptrain``, length), so the vector loops and
        Φᵀf read them in order instead of through ``ids``."""
        cdef Py_ssize_t c
        cdef int64_t j, stride = self.ptrain.shape[1]
        for c in prange(self.n_ids, num_threads=self.n_threads, schedule="static"):
            j = self.ids[c]
            self.nyc[c] = self.node_y[j]
            self.dc[c] = self.diag0[j]
            self.cofs[c] = self.tree_of[j] * stride + self.tstart[j]
            self.clen[c] = self.tend[j] - self.tstart[j]

    cdef void _pack(self, double[:, ::1] x, Py_ssize_t n_live) noexcept nogil:
        """xpack[c·K + l] = x[live[l], c] (K = n_live)."""
        cdef Py_ssize_t c, l, K = n_live
        cdef double *xp = &self.xpack[0]
        for c in prange(self.n_ids, num_threads=self.n_threads, schedule="static"):
            for l in range(K):
                xp[c * K + l] = x[self.live[l], c]

    cdef void _pack_direction(self, Py_ssize_t n_live, bint first) noexcept nogil:
        """The new search directions p = z + βp (p = z on the first
        iteration), z = r/diag(A), written to ``pc`` and packed as in
        :meth:`_pack`."""
        cdef Py_ssize_t c, l, K = n_live
        cdef int a
        cdef double v
        cdef double *xp = &self.xpack[0]
        for c in prange(self.n_ids, num_threads=self.n_threads, schedule="static"):
            for l in range(K):
                a = self.live[l]
                v = self.rc[a, c] / (self.dc[c] + self.alphas[a])
                if not first:
                    v = v + self.beta[a] * self.pc[a, c]
                self.pc[a, c] = v
                xp[c * K + l] = v

    cdef void _gather_rows(self, Py_ssize_t K, double scale) noexcept nogil:
        """fpack[i·K + l] = scale·Σₘ xpack[(cell of row i in tree m)·K + l]
        for the training rows i (``c/cgblock.h``, threads over blocks); without
        the table copy, row by row from the active-node table with x
        scattered to node space (blocks of one row: the same sums)."""
        cdef Py_ssize_t B = self.n_block, n_rows = self.rows.shape[0], M = self.n_trees
        cdef Py_ssize_t b, r0, n_b = (n_rows + B - 1) // B, c, l, r
        cdef int tid
        cdef double *acc = &self.acc[0]
        cdef double *xn = &self.xnode[0]
        cdef double *fp = &self.fpack[0]
        if not self.use_table:
            for c in prange(self.n_ids, num_threads=self.n_threads, schedule="static"):
                for l in range(K):
                    xn[self.ids[c] * K + l] = self.xpack[c * K + l]
            for r in prange(n_rows, num_threads=self.n_threads, schedule="static"):
                # a block of one row: its row of act, summed in registers
                mt_cgblock_gather(&self.act[self.rows[r], 0], M, 1, xn, K, scale,
                                  &self.rows[r], fp, NULL)
            return
        for b in prange(n_b, num_threads=self.n_threads, schedule="static"):
            tid = threadid()
            r0 = b * B
            mt_cgblock_gather(&self.tab[r0 * M], M, min(B, n_rows - r0), &self.xpack[0], K,
                              scale, &self.rows[r0], &self.fpack[0], &acc[tid * 4 * K * B])

    cdef void _apply(self, double[:, ::1] x, double[:, ::1] out, Py_ssize_t n_live) noexcept nogil:
        """out[a] = (ΦᵀΦ + αₐI) x[a] for the alphas a = live[0:n_live], on
        compact vectors, x already packed in ``xpack`` (:meth:`_pack`).

        Two gathers, no scatter: f = Φx from the blocked table
        (fᵢ = Σₘ x[cell of i in tree m]/√M, ``c/cgblock.h``, threads over
        blocks of rows), then (Φᵀf)_c = Σ_{i∈c} fᵢ/√M cell by cell from the
        trees' training-point slices (threads over cells).  Every sum runs in
        a fixed order (four partial sums over the trees or points, combined
        as (s0 + s1) + (s2 + s3), ``c/gather.h``) that depends neither on the
        thread count nor on the block size, so the products -- hence the
        whole CG path -- are bitwise identical for any ``n_jobs``.  The
        alphas are interleaved (x packed as xp[c·K + l], f as f[i·K + l]),
        so one index load serves all of them.
        """
        cdef Py_ssize_t T = self.n_threads, K = n_live, c, l
        cdef const int32_t *pt = &self.ptrain[0, 0]
        cdef double *fp = &self.fpack[0]
        cdef double *cs = &self.cellsum[0]
        self._gather_rows(K, self.inv_sqrt_m * self.inv_sqrt_m)
        for c in prange(self.n_ids, num_threads=T, schedule="dynamic", chunksize=64):
            mt_gather(pt + self.cofs[c], self.clen[c], fp, K, &cs[c * K])
            for l in range(K):
                out[self.live[l], c] = self.alphas[self.live[l]] * x[self.live[l], c] + cs[c * K + l]

    cdef void _train_sse(self, double[::1] sse) noexcept nogil:
        """Training residuals y - Φw of every alpha into ``resid`` from the
        compact weights (one gather for all alphas, :meth:`_gather_rows`:
        the sums of ``c/gather.h``, in its order) and their sums of squares
        (summed in row order)."""
        cdef Py_ssize_t r, K = self.n_alpha
        cdef int a
        cdef int64_t i
        cdef double s
        for a in range(self.n_alpha):
            self.live[a] = a
        self._pack(self.Wc, K)
        self._gather_rows(K, self.inv_sqrt_m)
        for r in prange(self.rows.shape[0], num_threads=self.n_threads, schedule="static"):
            i = self.rows[r]
            for a in range(self.n_alpha):
                self.resid[a, i] = self.y[i] - self.fpack[i * K + a]
        for a in range(self.n_alpha):
            s = 0.0
            for r in range(self.rows.shape[0]):
                i = self.rows[r]
                s += self.resid[a, i] * self.resid[a, i]
            sse[a] = s

    cdef void _start_alpha(self, int a, double bound) noexcept nogil:
        """Residual r = Φᵀy - q of alpha a (q = A w) and, unless
        ‖r‖² <= bound (conv[a] = 1), rᵀz into rzv[a]."""
        cdef Py_ssize_t c, n = self.n_ids
        cdef double *r = &self.rc[a, 0]
        cdef const double *q = &self.qc[a, 0]
        cdef double al = self.alphas[a], rr = 0.0, rz = 0.0
        for c in range(n):
            r[c] = self.nyc[c] - q[c]
            rr += r[c] * r[c]
        self.conv[a] = rr <= bound
        if self.conv[a]:
            return
        for c in range(n):
            rz += r[c] * (r[c] / (self.dc[c] + al))
        self.rzv[a] = rz

    cdef void _step_alpha(self, int a, double bound) noexcept nogil:
        """One CG step of alpha a from p and q = A p: w += s p, r -= s q
        with s = rᵀz / pᵀq, then conv[a] = ‖r‖² <= bound, else the new rᵀz
        and β (applied to p by :meth:`_pack_direction`).  The dot products
        are summed in position order on one thread."""
        cdef Py_ssize_t c, n = self.n_ids
        cdef double *w = &self.Wc[a, 0]
        cdef double *r = &self.rc[a, 0]
        cdef const double *p = &self.pc[a, 0]
        cdef const double *q = &self.qc[a, 0]
        cdef const double *d = &self.dc[0]
        cdef double al = self.alphas[a], pq = 0.0, rr = 0.0, rz = 0.0, step
        for c in range(n):
            pq += p[c] * q[c]
        step = self.rzv[a] / pq
        for c in range(n):
            w[c] += step * p[c]
            r[c] -= step * q[c]
            rr += r[c] * r[c]
            rz += r[c] * (r[c] / (d[c] + al))
        self.conv[a] = rr <= bound
        if not self.conv[a]:
            self.beta[a] = rz / self.rzv[a]
            self.rzv[a] = rz

    cdef void _cg(self, double tol, Py_ssize_t max_iter, int64_t[::1] iters) noexcept nogil:
        """Preconditioned CG from the current weights for all alphas in
        lockstep (one shared pass over the table and the slices per
        product); iters[a] is the number of iterations of alpha a, or -1 if
        ``max_iter`` was reached.  The weights are copied to compact ``Wc``
        and back; the per-alpha vector work runs on threads over the alphas
        (each alpha's sums on one thread, in position order)."""
        cdef Py_ssize_t c, l, n_live, n_next, it, n = self.n_ids
        cdef int a, T
        cdef int64_t j
        cdef double bnorm2 = 0.0, bound
        for c in prange(n, num_threads=self.n_threads, schedule="static"):
            j = self.ids[c]
            for a in range(self.n_alpha):
                self.Wc[a, c] = self.W[a, j]
        for c in range(n):
            bnorm2 += self.nyc[c] * self.nyc[c]
        bound = tol * tol * bnorm2
        for a in range(self.n_alpha):
            self.live[a] = a
        T = <int>min(self.n_threads, self.n_alpha)
        self._pack(self.Wc, self.n_alpha)
        self._apply(self.Wc, self.qc, self.n_alpha)
        for l in prange(self.n_alpha, num_threads=T, schedule="static", chunksize=1):
            self._start_alpha(<int>l, bound)
        n_next = 0
        for l in range(self.n_alpha):
            if self.conv[l]:
                iters[l] = 0
            else:
                self.live[n_next] = <int>l
                n_next += 1
        n_live = n_next
        it = 0
        while n_live > 0 and it < max_iter:
            it += 1
            self._pack_direction(n_live, it == 1)
            self._apply(self.pc, self.qc, n_live)
            T = <int>min(self.n_threads, n_live)
            for l in prange(n_live, num_threads=T, schedule="static", chunksize=1):
                self._step_alpha(self.live[l], bound)
            n_next = 0
            for l in range(n_live):
                a = self.live[l]
                if self.conv[a]:
                    iters[a] = it
                else:
                    self.live[n_next] = a
                    n_next += 1
            n_live = n_next
        for l in range(n_live):
            iters[self.live[l]] = -1
        for c in prange(n, num_threads=self.n_threads, schedule="static"):
            j = self.ids[c]
            for a in range(self.n_alpha):
                self.W[a, j] = self.Wc[a, c]

    def solve(self, double tol, Py_ssize_t max_iter, int local_sweeps=0):
        """Solve (ΦᵀΦ + αI)w = Φᵀy for every alpha by preconditioned CG from
        the warm-started weights, to ‖residual‖ <= tol·‖Φᵀy‖, after
        ``local_sweeps`` Gauss-Seidel sweeps over the cells created since the
        last solve (copy warm start only).

        Returns (iterations per alpha (-1: not converged), training sum of
        squared residuals per alpha).
        """
        cdef Py_ssize_t a
        self._prepare()
        iters = np.zeros(self.n_alpha, dtype=np.int64)
        sse = np.zeros(self.n_alpha)
        cdef int64_t[::1] it_v = iters
        cdef double[::1] sse_v = sse
        cdef int sweeps = local_sweeps if self.resid_valid else 0
        with nogil:
            for a in range(self.n_alpha):
                self._local_sweeps(a, sweeps)
            self._build_table()
            self._load_cells()
            self._cg(tol, max_iter, it_v)
            self._train_sse(sse_v)
            mt_threads_release()
        self.n_fresh = 0
        self.resid_valid = True
        return iters, sse

    def _product(self, X):
        """(ΦᵀΦ + αₐI) X[a] on the active nodes, node space, shape
        (n_alpha, n_nodes), through the gathers of :meth:`solve` (zero off
        the active nodes; for tests)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.shape != (self.n_alpha, self.n_nodes):
            raise ValueError(f"X must have shape {(self.n_alpha, self.n_nodes)}")
        self._prepare()
        cdef Py_ssize_t n = self.n_ids, a
        ids = np.asarray(self.ids)[:n]
        np.asarray(self.Wc)[:, :n] = X[:, ids]
        for a in range(self.n_alpha):
            self.live[a] = <int>a
        with nogil:
            self._build_table()
            self._load_cells()
            self._pack(self.Wc, self.n_alpha)
            self._apply(self.Wc, self.qc, self.n_alpha)
            mt_threads_release()
        out = np.zeros((self.n_alpha, self.n_nodes))
        out[:, ids] = np.asarray(self.qc)[:, :n]
        return out

    def weights(self):
        """Node-space weights, shape (n_alpha, n_nodes) (zero off the active nodes)."""
        return np.asarray(self.W).copy()

    def set_weights(self, W):
        """Replace the node-space weights (n_alpha, n_nodes); entries off the
        active nodes are ignored (set to zero)."""
        W = np.ascontiguousarray(W, dtype=np.float64)
        if W.shape != (self.n_alpha, self.n_nodes):
            raise ValueError(f"W must have shape {(self.n_alpha, self.n_nodes)}")
        np.asarray(self.W)[:, :] = W * np.asarray(self.active, dtype=bool)[None, :]
        self.resid_valid = False
        self.n_fresh = 0

    def _export(self, take_table=False):
        """Everything needed to continue this path on an extended forest;
        ``take_table``: the active-node table itself rather than a copy (for
        a caller that drops this path and hands the table to its successor:
        the N x M int32 table is most of the state)."""
        nf = self.n_fresh
        return dict(act=np.asarray(self.act) if take_table else self.active_table(),
                    cursor=self.cursor,
                    W=np.asarray(self.W).copy(), active=np.asarray(self.active).copy(),
                    resid=np.asarray(self.resid).copy(), resid_valid=bool(self.resid_valid),
                    fresh=np.asarray(self.fresh)[:nf].copy())

    def _import(self, state):
        """Load :meth:`_export` output whose node-space arrays are remapped."""
        W = np.asarray(state["W"], dtype=np.float64)
        active = np.asarray(state["active"], dtype=np.uint8)
        fresh = np.asarray(state["fresh"], dtype=np.int64)
        if (W.shape != (self.n_alpha, self.n_nodes) or active.shape != (self.n_nodes,)
                or np.shape(state["resid"]) != (self.n_alpha, self.n_points)):
            raise ValueError("inconsistent path state")
        self._set_base(state["act"], state["cursor"])
        np.asarray(self.W)[:, :] = W
        np.asarray(self.active)[:] = active
        np.asarray(self.resid)[:, :] = state["resid"]
        self.resid_valid = state["resid_valid"]
        np.asarray(self.fresh)[:fresh.shape[0]] = fresh
        self.n_fresh = fresh.shape[0]


# --------------------------------------------------------------------------
# SGD along the path (Sec. 4.2.2)
# --------------------------------------------------------------------------
from libc.stdlib cimport qsort


cdef int _cmp_int64(const void *a, const void *b) noexcept nogil:
    cdef int64_t x = (<const int64_t *>a)[0], y = (<const int64_t *>b)[0]
    return (x > y) - (x < y)


cdef inline double _dloss(int loss, double y, double f) noexcept nogil:
    if loss == 0:
        return f - y
    if loss == 1:
        return -y if y * f < 1.0 else 0.0
    if y * f > 0.0:
        return -y * exp(-y * f) / (1.0 + exp(-y * f))
    return -y / (1.0 + exp(y * f))


cdef class SGDPath(_PathBase):
    """Stochastic gradient descent on Σᵢ ℓ(yᵢ, φ(xᵢ)ᵀw + b) + (α/2)‖w‖² along
    the path, warm-started at every split (parent weight copied to both
    children, so predictions are unchanged by the split, Sec. 4.2.2).

    ``loss``: 0 squared ½(f-y)², 1 hinge max(0, 1-yf), 2 logistic
    log(1+exp(-yf)) (labels ±1 for the last two).  A step on point i with
    step size η: g = ℓ'(yᵢ, fᵢ); w_j -= η(g/√M + α w_j) for the M weights
    point i touches (the penalty is applied to touched weights only, the
    usual sparse-SGD form); b -= η g when ``fit_intercept``.

    The pass over a split cell visits its training points in increasing
    index, an order fixed by the cell alone: extending the forest reorders
    the points inside the trees' slices, and a path continued on the
    extended forest (:meth:`_export`/:meth:`_import`) must repeat a path run
    straight through on it.
    """

    cdef double[::1] W, y
    cdef int64_t[::1] cell_buf
    cdef readonly double intercept
    cdef double eta, alpha
    cdef int loss
    cdef bint fit_intercept

    def __init__(self, Forest forest not None, is_train, y, int loss, double eta,
                 double alpha, bint fit_intercept):
        _PathBase.__init__(self, forest, is_train)
        if np.shape(y) != (self.n_points,):
            raise ValueError("y needs one entry per point")
        if loss not in (0, 1, 2):
            raise ValueError(f"loss code must be 0, 1 or 2, got {loss}")
        self.y = y
        self.loss = loss
        self.eta = eta
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.intercept = 0.0
        self.W = np.zeros(self.n_nodes)
        self.cell_buf = np.zeros(max(1, self.n_points), dtype=np.int64)

    cdef inline void _sgd_step(self, int64_t i) noexcept nogil:
        cdef Py_ssize_t m, M = self.n_trees
        cdef double f = self.intercept, g
        cdef int32_t *row = &self.act[i, 0]
        for m in range(M):
            f += self.W[row[m]] * self.inv_sqrt_m
        g = _dloss(self.loss, self.y[i], f)
        for m in range(M):
            self.W[row[m]] -= self.eta * (g * self.inv_sqrt_m + self.alpha * self.W[row[m]])
        if self.fit_intercept:
            self.intercept -= self.eta * g

    def advance(self, double lifetime, bint cell_pass=True, const int64_t[::1] epoch_order=None):
        """Apply the events with split time <= ``lifetime``.  After each
        split: with ``cell_pass``, one SGD pass over the training points of
        the split cell (the only points whose features changed), in
        increasing index; with
        ``epoch_order``, one pass over all points in that order (the
        authors' choice, O(N·M) per event)."""
        cdef int64_t g, gl, gr, m, k, p
        cdef Py_ssize_t done = 0, i, n_cell
        cdef bint full = epoch_order is not None
        if full:
            for i in range(epoch_order.shape[0]):
                if epoch_order[i] < 0 or epoch_order[i] >= self.n_points:
                    raise ValueError("epoch_order holds an index out of range")
        with nogil:
            while self.cursor < self.n_events and self.tau[self.events[self.cursor]] <= lifetime:
                g = self.events[self.cursor]
                gl = self.left[g]
                gr = self.right[g]
                m = self.tree_of[g]
                self.W[gl] = self.W[g]
                self.W[gr] = self.W[g]
                self.W[g] = 0.0
                self._move_points(gl)
                self._move_points(gr)
                self.cursor += 1
                done += 1
                if cell_pass:
                    n_cell = 0
                    for k in range(self.start[g], self.end[g]):
                        p = self.perm[m * self.pstride + k]
                        if self.is_train[p]:
                            self.cell_buf[n_cell] = p
                            n_cell += 1
                    qsort(&self.cell_buf[0], n_cell, sizeof(int64_t), _cmp_int64)
                    for i in range(n_cell):
                        self._sgd_step(self.cell_buf[i])
                if full:
                    for i in range(epoch_order.shape[0]):
                        self._sgd_step(epoch_order[i])
        return done

    def epoch(self, const int64_t[::1] order):
        """One SGD pass over the training points in ``order``."""
        cdef Py_ssize_t i
        for i in range(order.shape[0]):
            if order[i] < 0 or order[i] >= self.n_points:
                raise ValueError("order holds an index out of range")
        with nogil:
            for i in range(order.shape[0]):
                self._sgd_step(order[i])

    def weights(self):
        """Node-space weights, shape (n_nodes,)."""
        return np.asarray(self.W).copy()

    def _export(self):
        """Everything needed to continue this path on an extended forest
        (the loss, step size, penalty and targets are constructor arguments)."""
        return dict(act=self.active_table(), cursor=self.cursor,
                    W=np.asarray(self.W).copy(), intercept=float(self.intercept))

    def _import(self, state):
        """Load :meth:`_export` output whose node-space arrays are remapped."""
        W = np.asarray(state["W"], dtype=np.float64)
        intercept = float(state["intercept"])
        if W.shape != (self.n_nodes,) or not np.isfinite(intercept):
            raise ValueError("inconsistent path state")
        self._set_base(state["act"], state["cursor"])
        np.asarray(self.W)[:] = W
        self.intercept = intercept

    def train_decision(self):
        """φ(x)ᵀw + b for the training points at the current lifetime."""
        out = np.empty(self.n_points)
        cdef double[::1] o = out
        cdef Py_ssize_t i, m
        cdef double fi
        with nogil:
            for i in range(self.n_points):
                fi = 0.0
                for m in range(self.n_trees):
                    fi = fi + self.W[self.act[i, m]]
                o[i] = fi * self.inv_sqrt_m + self.intercept
        return out
