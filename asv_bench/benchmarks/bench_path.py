"""The kernel-width path on the CPU data (6554 x 21, raw), Lambda = 1e-6.

Run from ``asv_bench/``: ``asv run --python=same --bench bench_path``.
Targets of the path issue: the exact Cholesky path at M = 50 within 2 s; the
scalable (CG) path at M = 350 over >= 100 lifetimes; its peak memory within
3x of the feature matrix at Lambda plus the data (``track_phi_plus_data_mb``
is that reference, read next to ``peakmem_cg_path``); the test error of the
selected model (``track_test_error``, the paper's metric in percent).
"""

from ._cpu import cpu_arrays, relative_error

try:
    from mondrian import MondrianFeatures, MondrianKernelRidgeCV
    from mondrian.path import CGRidgePath, ExactRidgePath, lifetime_grid, split_events
except ImportError:  # older commits
    MondrianKernelRidgeCV = None


class ExactPathCPU:
    """Exact ridge at every event by Cholesky up/down-dates (Sec. 4.2.1)."""

    params = ([1, 4],)
    param_names = ["n_alphas"]
    timeout = 120

    def setup(self, n_alphas):
        X, y, _, _ = cpu_arrays()
        self.y = y - y.mean()
        self.alphas = [1e-3, 1e-2, 1e-1, 1.0][-n_alphas:]
        self.events = split_events(MondrianFeatures(n_trees=50, lifetime=1e-6,
                                                    random_state=0).fit(X))

    def time_exact_path(self, n_alphas):
        path = ExactRidgePath(self.events, self.y, self.alphas)
        path.run(1e-6)
        path.log_marginal_likelihood()

    def peakmem_exact_path(self, n_alphas):
        ExactRidgePath(self.events, self.y, self.alphas).run(1e-6)


class ExactPathFewPoints:
    """The exact path where the cells outnumber the points: 40 and 200
    synthetic points in 4 dimensions (y = sin x0 + x1 x2 + 0.1 noise), 300
    trees to 0.25 (2000-3400 cells), the six alphas of
    ``selection='evidence'``, every event, in the primal form (C x C factor,
    O(C²) per event) and in the dual (N x N, ``DualExactRidgePath``, O(N²)).
    The same evidence either way; the primal on 200 points is left out (two
    minutes a run)."""

    params = ([40, 200], ["primal", "dual"])
    param_names = ["n_points", "form"]
    timeout = 600

    def setup(self, n_points, form):
        import numpy as np

        if form == "primal" and n_points > 40:
            raise NotImplementedError("two minutes a run")
        rng = np.random.default_rng(0)
        X = rng.standard_normal((n_points, 4))
        y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(n_points)
        self.y = y - y.mean()
        self.events = split_events(MondrianFeatures(n_trees=300, lifetime=0.25,
                                                    random_state=0).fit(X))
        self.alphas = np.geomspace(1e-4, 10.0, 6)

    def time_exact_path(self, n_points, form):
        from mondrian.path import DualExactRidgePath

        cls = DualExactRidgePath if form == "dual" else ExactRidgePath
        path = cls(self.events, self.y, self.alphas)
        path.run(0.25)
        path.log_marginal_likelihood()


class CGPathCPU:
    """Warm-started CG ridge at a grid of lifetimes, M = 350."""

    params = ([100, 200], [1e-3, 1e-4], [1, 2])
    param_names = ["n_lifetimes", "tol", "n_jobs"]
    timeout = 600

    def setup(self, n_lifetimes, tol, n_jobs):
        self.X, y, _, _ = cpu_arrays()
        self.y = y - y.mean()
        self.mf = MondrianFeatures(n_trees=350, lifetime=1e-6, random_state=0).fit(self.X)
        self.events = split_events(self.mf)
        self.grid = lifetime_grid(self.events, n_lifetimes)

    def _run(self, tol, n_jobs):
        path = CGRidgePath(self.events, self.y, [0.1], tol=tol, n_jobs=n_jobs)
        for lam in self.grid:
            path.solve_at(lam)

    def time_cg_path(self, n_lifetimes, tol, n_jobs):
        self._run(tol, n_jobs)

    def peakmem_cg_path(self, n_lifetimes, tol, n_jobs):
        self._run(tol, n_jobs)

    def track_phi_plus_data_mb(self, n_lifetimes, tol, n_jobs):
        Phi = self.mf.training_features()
        nbytes = Phi.data.nbytes + Phi.indices.nbytes + Phi.indptr.nbytes + self.X.nbytes
        return nbytes / 2**20

    track_phi_plus_data_mb.unit = "MiB"


class RidgeCVCPU:
    """The whole estimator: forest, path over 100 lifetimes, selection, refit,
    with the paper's single alpha and with two alphas along the one path."""

    params = ([0, 1, 2], ["0.1", "0.1,1"])
    param_names = ["seed", "alphas"]
    timeout = 600

    def setup(self, seed, alphas):
        self.X, self.y, self.X_test, self.y_test = cpu_arrays()

    def _fit(self, seed, alphas):
        return MondrianKernelRidgeCV(n_trees=350, max_lifetime=1e-6,
                                     alphas=[float(a) for a in alphas.split(",")],
                                     n_lifetimes=100, tol=1e-3, n_jobs=2,
                                     random_state=seed).fit(self.X, self.y)

    def time_fit(self, seed, alphas):
        self._fit(seed, alphas)

    def track_test_error(self, seed, alphas):
        model = self._fit(seed, alphas)
        return relative_error(self.y_test, model.predict(self.X_test))

    track_test_error.unit = "percent"


class CGIterationsLargeForest:
    """Twenty CG iterations for two alphas on a forest with many cells: the
    synthetic set (5000 x 8), 2000 trees at λ = 0.223 (532k nodes), the
    sizes of the default fit's ladder.  ``gather``: 'auto' (the solve's
    blocked copy of the table, ``c/cgblock.h``) or 'rows' (row by row,
    ``block_rows = 1``): the same sums, so the same result."""

    params = (["auto", "rows"], [1, 2])
    param_names = ["gather", "n_jobs"]
    timeout = 300

    def setup(self, gather, n_jobs):
        from .bench_defaults import synthetic_regression

        X, y, _, _ = synthetic_regression(5000)
        self.y = y - y.mean()
        self.events = split_events(MondrianFeatures(n_trees=2000, lifetime=0.223,
                                                    random_state=0).fit(X))

    def time_twenty_iterations(self, gather, n_jobs):
        path = CGRidgePath(self.events, self.y, [1e-3, 1e-2], n_jobs=n_jobs)
        path.advance(0.223)
        if gather == "rows":
            path._state.block_rows = 1
        path._state.solve(1e-14, 20, 0)


def _dual_scorers(X, y):
    """λ₀ of X and a factory of fresh leave-one-out DualScorers (automatic
    alphas, two threads) on 1000 trees grown on X to λ₀."""
    import numpy as np
    from mondrian.path.dual import DualScorer
    from mondrian.path.estimators import AUTO_DUAL_ALPHAS
    from mondrian.path.search import lifetime_scale

    scale = lifetime_scale(X, np.random.default_rng(0))
    features = MondrianFeatures(n_trees=1000, lifetime=scale, random_state=0, n_jobs=2).fit(X)
    rows = np.arange(X.shape[0])
    return scale, lambda: DualScorer(features, y - y.mean(), AUTO_DUAL_ALPHAS, rows, n_jobs=2)


class PairL1:
    """The ℓ₁ distances of 1000 rows x 21 (the rows of the CPU data that
    ``lifetime_scale`` draws for λ₀ = 1/median distance): ``c/scale.h``
    (``mondrian._ext._path.pair_l1``) and scipy's ``pdist(X, 'cityblock')``,
    bitwise the same distances; 1.6 ms against 4.7 ms when added."""

    params = (["c/scale.h", "scipy pdist"],)
    param_names = ["implementation"]

    def setup(self, implementation):
        import numpy as np

        X, _, _, _ = cpu_arrays()
        self.rows = np.ascontiguousarray(
            X[np.random.default_rng(0).choice(X.shape[0], 1000, replace=False)])

    def time_distances(self, implementation):
        if implementation == "c/scale.h":
            from mondrian._ext._path import pair_l1
            pair_l1(self.rows)
        else:
            import scipy.spatial.distance
            scipy.spatial.distance.pdist(self.rows, metric="cityblock")


class DualSearchDescent:
    """The dual's lifetime search on 1200 rows of a smooth, low-noise set
    (5 inputs; its best width is below λ₀), 1000 trees, from λ₀ down to
    its minimum (λ₀/4: four lifetimes): one lifetime a round after the
    first two (``prefetch`` off), or the step down computed together with
    the lifetime needed after it, revealed only if asked for
    (``search_lifetime(..., prefetch=DualScorer.prefetch)``, the default
    from 1000 rows): 1.57-1.67 s against 1.10-1.15 s on two cores.  The
    same lifetimes, errors and selection either way."""

    params = (["one step a round", "prefetch"],)
    param_names = ["mode"]
    timeout = 300

    def setup(self, mode):
        import numpy as np

        r = np.random.default_rng(0)
        X = r.standard_normal((1200, 5))
        y = (np.sin(0.7 * X[:, 0]) + 0.5 * X[:, 1] - 0.3 * X[:, 2] ** 2
             + 0.05 * r.standard_normal(1200))
        self.scale, self.make = _dual_scorers(X, y)

    def time_search(self, mode):
        from mondrian.path.search import search_lifetime

        scorer = self.make()
        search_lifetime(scorer, self.scale, self.scale, evaluate_many=scorer.evaluate_many,
                        prefetch=scorer.prefetch if mode == "prefetch" else None)


class DualTwoLifetimes:
    """The dual solver's first two lifetimes (λ₀ and λ₀/2 of the lifetime
    search) on 800 synthetic rows, 1000 trees: exact leave-one-out over 45
    alphas from one eigendecomposition each, one after the other or together
    (``DualScorer.evaluate_many``: one Python thread and one BLAS thread
    each, LAPACK without the GIL).  The same numbers either way."""

    params = (["one by one", "together"],)
    param_names = ["mode"]
    timeout = 300

    def setup(self, mode):
        from .bench_defaults import synthetic_regression

        X, y, _, _ = synthetic_regression(800)
        self.lam, self.make = _dual_scorers(X, y)

    def time_two_lifetimes(self, mode):
        scorer = self.make()
        if mode == "together":
            scorer.evaluate_many([self.lam, self.lam / 2])
        else:
            scorer(self.lam)
            scorer(self.lam / 2)


class LabelKernel:
    """The dual's kernel matrix K[i, j] = #{trees where i and j share a cell}/M
    from cell labels (``mondrian_kernel_matrix``): 1127 rows (an
    airfoil-sized training set) with 2218 trees (the base budget of the
    dual's second search) and 8873 (the larger count a measured excess asks
    for, N·M = 10⁷), 17 cells per tree, 8-bit labels (``cell_labels``' choice
    while every tree has at most 256 cells) and 16-bit ones, one and two
    threads.  The C kernel compares 4096 trees at a time against blocks of
    32 rows kept in the L2 cache, with SSE2 or AVX2."""

    params = ([2218, 8873], ["uint8", "uint16"], [1, 2])
    param_names = ["n_trees", "labels", "n_jobs"]

    def setup(self, n_trees, labels, n_jobs):
        import numpy as np

        rng = np.random.default_rng(0)
        self.labels = rng.integers(0, 17, size=(1127, n_trees)).astype(labels)

    def time_kernel(self, n_trees, labels, n_jobs):
        from mondrian.path.dual import mondrian_kernel_matrix

        mondrian_kernel_matrix(self.labels, n_jobs=n_jobs)


class CellLabels:
    """The dual's cell-label table (``cell_labels``: each training point's
    cell in each tree at λ, read off the active nodes' point slices) on the
    forests of the dual's second search: 90 rows x 32 768 trees (a tiny set;
    the rows of the table 32 KB apart) and 600 rows x 12 809 trees (the
    600-row synthetic set), 8-bit labels, one and two threads.  The C writer
    takes 64 trees a task and, up to 4096 points, writes each tree's labels
    into a tile transposed into the table eight rows at a time."""

    params = (["90x32768", "600x12809"], [1, 2])
    param_names = ["shape", "n_jobs"]
    timeout = 300

    def setup(self, shape, n_jobs):
        import numpy as np

        from mondrian import MondrianFeatures

        n, n_trees = (int(v) for v in shape.split("x"))
        X = np.random.default_rng(0).standard_normal((n, 8 if n > 90 else 4))
        self.lam = 0.11
        self.features = MondrianFeatures(n_trees=n_trees, lifetime=self.lam, random_state=0,
                                         n_jobs=2).fit(X)
        self.features.forest_.active_columns(self.lam)  # the numbering, kept by the forest

    def time_labels(self, shape, n_jobs):
        from mondrian.path.dual import cell_labels

        cell_labels(self.features, self.lam, n_jobs=n_jobs)


class ExtendForestLadder:
    """One step of the confirmation ladder of ``MondrianKernelRidgeCV`` on
    5000 points: a CG path on a 2000-tree forest grown to λ = 0.1115 (two
    alphas, 20 % of the rows held out, solved at λ/2 and λ) moves onto the
    forest extended to 2λ (``CGRidgePath.extend_forest``: the growth, the
    events, and the learner's state carried over -- its N x M active-node
    table handed to the new state and remapped in place, not copied).
    Each sample needs a fresh path (the extension consumes it): ``number``
    is 1, so the setup runs before every sample, and no warm-up calls."""

    number = 1
    repeat = 7
    warmup_time = 0
    timeout = 300

    def setup(self):
        import numpy as np

        from mondrian import MondrianFeatures

        rng = np.random.default_rng(0)
        X = rng.standard_normal((5000, 8))
        y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(5000)
        mask = np.ones(5000, dtype=bool)
        mask[::5] = False
        self.features = MondrianFeatures(n_trees=2000, lifetime=0.1115, random_state=0,
                                         n_jobs=2).fit(X)
        self.path = CGRidgePath(split_events(self.features), y - y.mean(), [0.003, 0.009],
                                train_mask=mask, tol=3e-3, local_sweeps=0, n_jobs=2)
        self.path.solve_at(0.0557)
        self.path.solve_at(0.1115)

    def time_extend_forest(self):
        self.path.extend_forest(self.features, 0.223)
