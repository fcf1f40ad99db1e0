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
