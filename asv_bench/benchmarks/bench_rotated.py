"""The uniformly rotated Mondrian features against the axis-aligned ones on
CPU (6554 x 21), 350 trees.

The paper's lifetimes: λ = 1e-6 axis-aligned, λ = 2.5e-7 rotated (the same
width in Euclidean distance: E‖v‖₁ ≈ 3.6 in 21 dimensions), and the
rotated features also at λ = 1e-6 (same lifetime, four times the cells).
The rotation costs D² = 441 multiply-adds per point per tree in ``fit``
and ``transform`` (``mt_forest_transform``).  Read ``time_fit_transform``
of ``RotatedFeaturesCPU`` against that of ``MondrianFeaturesCPU``
(``bench_features.py``) or of the axis-aligned case here.
"""
from ._cpu import cpu_arrays

try:
    from mondrian import MondrianFeatures
    MondrianFeatures(rotation="uniform")
except (ImportError, TypeError):  # older commits
    MondrianFeatures = None


class RotatedFeaturesCPU:
    params = (["axis 1e-6", "rotated 2.5e-7", "rotated 1e-6"], [1, 2])
    param_names = ["features", "n_jobs"]
    timeout = 180

    def setup(self, features, n_jobs):
        if MondrianFeatures is None:
            raise NotImplementedError("no rotated Mondrian features in this commit")
        self.X, _, self.X_test, _ = cpu_arrays()
        kind, lam = features.split()
        self.kwargs = dict(n_trees=350, lifetime=float(lam), random_state=0, n_jobs=n_jobs,
                           rotation=None if kind == "axis" else "uniform")
        self.mf = MondrianFeatures(**self.kwargs).fit(self.X)

    def time_fit_transform(self, features, n_jobs):
        MondrianFeatures(**self.kwargs).fit_transform(self.X)

    def time_transform_test(self, features, n_jobs):
        self.mf.transform(self.X_test)

    def peakmem_fit_transform(self, features, n_jobs):
        MondrianFeatures(**self.kwargs).fit_transform(self.X)

    def track_n_columns(self, features, n_jobs):
        return self.mf.n_cells_
