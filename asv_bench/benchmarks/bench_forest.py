"""Mondrian forests on the CPU data (6554 x 21 training points, 819 test),
at the paper's lambda = 1e-5 (issue 15's target: a batch fit of 50 trees in
<= 0.05 s), and at the defaults (lifetime and smoothing selected on
held-out points).  RMSE is tracked in units of the raw target."""
import numpy as np

from ._cpu import cpu_arrays

try:
    from mondrian import MondrianForestRegressor
except ImportError:  # older commits
    MondrianForestRegressor = None


class ForestCPU:
    """Fit and predict of MondrianForestRegressor at a fixed lifetime."""

    params = ([True, False],)
    param_names = ["smoothing"]
    timeout = 120

    def setup(self, smoothing):
        if MondrianForestRegressor is None:
            raise NotImplementedError("no MondrianForestRegressor in this commit")
        self.X, self.y, self.Xt, self.yt = cpu_arrays()
        self.model = self._model(smoothing).fit(self.X, self.y)

    def _model(self, smoothing):
        return MondrianForestRegressor(n_trees=50, lifetime=1e-5, random_state=0, n_jobs=1,
                                       smoothing=smoothing, noise_variance=0.03,
                                       prior_scale=1.0)

    def time_fit(self, smoothing):
        self._model(smoothing).fit(self.X, self.y)

    def time_predict_with_std(self, smoothing):
        self.model.predict(self.Xt, return_std=True)

    def track_rmse(self, smoothing):
        return float(np.sqrt(np.mean((self.model.predict(self.Xt) - self.yt) ** 2)))


class ForestDefaultsCPU:
    """MondrianForestRegressor() at its defaults (100 trees, selection on
    held-out points: the lifetime, the smoothing and, since aggregation='auto',
    AMF or not): fit time, test RMSE and the coverage of ±1.96 std."""

    timeout = 300

    def setup(self):
        if MondrianForestRegressor is None:
            raise NotImplementedError("no MondrianForestRegressor in this commit")
        self.X, self.y, self.Xt, self.yt = cpu_arrays()

    def time_fit(self):
        MondrianForestRegressor(random_state=0, n_jobs=1).fit(self.X, self.y)

    def track_rmse(self):
        model = MondrianForestRegressor(random_state=0, n_jobs=1).fit(self.X, self.y)
        return float(np.sqrt(np.mean((model.predict(self.Xt) - self.yt) ** 2)))

    def track_coverage(self):
        """Fraction of the test targets within ±1.96 predictive std."""
        model = MondrianForestRegressor(random_state=0, n_jobs=1).fit(self.X, self.y)
        mean, std = model.predict(self.Xt, return_std=True)
        return float(np.mean(np.abs(self.yt - mean) <= 1.96 * std))


class NodePosteriorLarge:
    """One candidate of the held-out selection: the smoothing's node
    posterior (a belief propagation over every node) of the default
    regressor's 100 trees grown to one point per leaf on 10⁵ synthetic rows
    (2·10⁷ nodes), with a scratch of its own per call (0.8 GB of fresh pages
    for the kernel to clear) or the one the selection now shares across
    candidates (``gauss_posterior(work=...)``).  On the CPU data's 655 000
    nodes the two take the same time: the allocator reuses the memory it
    freed."""

    params = ([False, True],)
    param_names = ["shared_scratch"]
    timeout = 300
    number = 1
    repeat = (1, 5, 60.0)

    def setup(self, shared_scratch):
        if MondrianForestRegressor is None:
            raise NotImplementedError("no MondrianForestRegressor in this commit")
        from mondrian._ext import _mforest

        from .bench_defaults import synthetic_regression
        X, y = synthetic_regression(100_000)[:2]
        model = MondrianForestRegressor(n_trees=100, lifetime=100.0, random_state=0,
                                        aggregation=False).fit(X, y)
        n = model.forest_.n_nodes
        self.posterior = _mforest.gauss_posterior
        self.args = (model.forest_, model.lifetime_, model.node_count_, model.node_sum_, 0.0,
                     model.y_var_, 1e-3, 0.05 * model.y_var_, 2)
        self.out = tuple(np.empty(n) for _ in range(3))
        self.work = np.empty(5 * n) if shared_scratch else None
        try:
            self.posterior(*self.args, out=self.out, work=self.work)
        except TypeError:  # older commits: no work argument
            if shared_scratch:
                raise NotImplementedError("gauss_posterior has no work argument here")

    def time_posterior(self, shared_scratch):
        if self.work is None:
            self.posterior(*self.args, out=self.out)
        else:
            self.posterior(*self.args, out=self.out, work=self.work)


class HeldOutPathsCPU:
    """The stored paths of 1000 held-out CPU points down 100 trees grown to
    the default Λ = 2⁷λ₀ on the other points (about 9·10⁵ nodes): what the
    default fit's selection walks once and reads for every candidate
    (``mondrian._ext._mforest.Paths``)."""

    params = ([1, 2],)
    param_names = ["n_jobs"]
    timeout = 120

    def setup(self, n_jobs):
        try:
            from mondrian import MondrianFeatures
            from mondrian._ext import _mforest
            from mondrian._scale import lifetime_scale
        except ImportError:  # older commits
            raise NotImplementedError("no stored paths in this commit")
        X, _, _, _ = cpu_arrays()
        lam0 = lifetime_scale(X, np.random.default_rng(0))
        self.forest = MondrianFeatures(100, lifetime=128 * lam0,
                                       random_state=0).fit(X[1000:]).forest_
        self.X_held = np.ascontiguousarray(X[:1000])
        self.paths = _mforest.Paths

    def time_paths(self, n_jobs):
        self.paths(self.forest, self.X_held, n_jobs)
