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
