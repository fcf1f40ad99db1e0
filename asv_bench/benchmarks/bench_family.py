"""The random-feature family on data the size of CPU (6554 x 21).

Targets (issue 4): ``RandomFourierFeatures.transform`` within 1.2x of
scikit-learn's ``RBFSampler.transform`` at equal numbers of frequencies;
``RandomBinningFeatures`` fit+transform with 350 grids <= 0.2 s;
``RandomMaclaurinFeatures`` no slower than the plain numpy reference of the
same sampling (``MaclaurinNumpyReference`` below).  Run from ``asv_bench/``:
``asv run --python=same --bench bench_family``.
"""
import numpy as np
from sklearn.kernel_approximation import RBFSampler

from ._cpu import cpu_arrays

try:
    from mondrian import RandomBinningFeatures, RandomFourierFeatures, RandomMaclaurinFeatures
except ImportError:  # older commits
    RandomFourierFeatures = None


class FourierCPU:
    """Equal numbers of frequencies: ours gives 2 columns (cos, sin) per frequency,
    RBFSampler one (cos with a random phase)."""
    params = ([100, 500],)
    param_names = ["n_frequencies"]

    def setup(self, n):
        self.X, _, _, _ = cpu_arrays()
        self.X = self.X / self.X.std(axis=0).clip(1e-12)
        self.rff = RandomFourierFeatures(kernel="gaussian", length_scale=3.0, n_components=n,
                                         random_state=0).fit(self.X)
        self.rbf = RBFSampler(gamma=1 / 18.0, n_components=n, random_state=0).fit(self.X)

    def time_transform_ours(self, n):
        self.rff.transform(self.X)

    def time_transform_rbfsampler(self, n):
        self.rbf.transform(self.X)

    def time_transform_rbfsampler_equal_columns(self, n):
        RBFSampler(gamma=1 / 18.0, n_components=2 * n, random_state=0).fit(self.X).transform(self.X)


class BinningCPU:
    params = ([50, 350], [1, 2])
    param_names = ["n_grids", "n_jobs"]

    def setup(self, n_grids, n_jobs):
        self.X, _, self.X_test, _ = cpu_arrays()
        self.rb = RandomBinningFeatures(lifetime=1e-6, n_grids=n_grids, random_state=0,
                                        n_jobs=n_jobs).fit(self.X)

    def time_fit_transform(self, n_grids, n_jobs):
        RandomBinningFeatures(lifetime=1e-6, n_grids=n_grids, random_state=0,
                              n_jobs=n_jobs).fit_transform(self.X)

    def time_transform_test(self, n_grids, n_jobs):
        self.rb.transform(self.X_test)

    def peakmem_fit_transform(self, n_grids, n_jobs):
        RandomBinningFeatures(lifetime=1e-6, n_grids=n_grids, random_state=0,
                              n_jobs=n_jobs).fit_transform(self.X)


def maclaurin_numpy_reference(X, n_components, scale, seed):
    """Plain numpy random Maclaurin features of exp(<x,y>/scale), p = 2:
    one degree per feature, one Rademacher vector per factor, a loop over features."""
    rng = np.random.default_rng(seed)
    D = X.shape[1]
    out = np.empty((X.shape[0], n_components))
    for i in range(n_components):
        N = rng.geometric(0.5) - 1
        W = rng.integers(0, 2, size=(N, D)) * 2.0 - 1.0
        a = 1.0 / (np.prod(np.arange(1, N + 1, dtype=float)) * scale**N)
        out[:, i] = np.sqrt(a * 2.0 ** (N + 1) / n_components) * np.prod(X @ W.T, axis=1)
    return out


class MaclaurinCPU:
    params = ([100, 500],)
    param_names = ["n_components"]

    def setup(self, n):
        X, _, _, _ = cpu_arrays()
        X = X / X.std(axis=0).clip(1e-12)
        self.X = X / np.linalg.norm(X, axis=1, keepdims=True)
        self.rm = RandomMaclaurinFeatures(n_components=n, random_state=0).fit(self.X)

    def time_fit_transform_ours(self, n):
        RandomMaclaurinFeatures(n_components=n, random_state=0).fit_transform(self.X)

    def time_transform_ours(self, n):
        self.rm.transform(self.X)

    def time_numpy_reference(self, n):
        maclaurin_numpy_reference(self.X, n, 1.0, 0)
