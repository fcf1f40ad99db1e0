"""DebiasedMondrianForestRegressor at its defaults on the coverage set of
``asv_bench/debiased_check.py`` (2000 points in 2-D, y = sin(2πx₁) + x₂² +
N(0, 0.5²)): fit, and intervals at 1000 points, with the leave-one-out noise
estimate (the default; one more pass over the training points) and with
CKU's."""
import numpy as np

try:
    from mondrian import DebiasedMondrianForestRegressor
except ImportError:  # older commits
    DebiasedMondrianForestRegressor = None


class DebiasedFit:
    params = (["loo", "cku"],)
    param_names = ["variance"]
    timeout = 300

    def setup(self, variance):
        if DebiasedMondrianForestRegressor is None:
            raise NotImplementedError("no DebiasedMondrianForestRegressor in this commit")
        rng = np.random.default_rng(0)
        self.X = rng.random((2000, 2))
        self.y = (np.sin(2 * np.pi * self.X[:, 0]) + self.X[:, 1] ** 2
                  + 0.5 * rng.normal(size=2000))
        self.grid = rng.uniform(0.1, 0.9, (1000, 2))
        try:
            self.model = DebiasedMondrianForestRegressor(
                random_state=0, variance=variance).fit(self.X, self.y)
        except TypeError:  # before the variance parameter: CKU's only
            if variance != "cku":
                raise NotImplementedError("no variance='loo' in this commit")
            self.model = DebiasedMondrianForestRegressor(random_state=0).fit(self.X, self.y)
        self.variance = variance

    def time_fit(self, variance):
        self.model.fit(self.X, self.y)

    def time_intervals(self, variance):
        self.model.predict(self.grid, return_ci=True)

    def track_coverage(self, variance):
        """Share of the 1000 points whose 95 % interval holds μ (one replicate)."""
        _, ci = self.model.predict(self.grid, return_ci=True)
        mu = np.sin(2 * np.pi * self.grid[:, 0]) + self.grid[:, 1] ** 2
        return float(np.mean((ci[:, 0] <= mu) & (mu <= ci[:, 1])))


class DebiasedPredictDeep:
    """Mean predictions of 5000 new points on the default forest of 2·10⁴
    points in 8-D (100 trees of about 4·10⁴ nodes each): every new point
    lies outside the data boxes of the last 5-6 nodes of its path (of
    about 20), so every (point, tree) pair is walked for its empty-cell
    events (``_debias.paths``, twice: one lifetime and 1.5 times it)."""
    timeout = 300

    def setup(self):
        if DebiasedMondrianForestRegressor is None:
            raise NotImplementedError("no DebiasedMondrianForestRegressor in this commit")
        rng = np.random.default_rng(0)
        X = rng.random((20_000, 8))
        y = np.sin(2 * np.pi * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=20_000)
        self.model = DebiasedMondrianForestRegressor(random_state=0).fit(X, y)
        self.X_new = rng.random((5000, 8))

    def time_predict(self):
        self.model.predict(self.X_new)
