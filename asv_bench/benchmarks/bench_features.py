"""Mondrian features on data the size of CPU (6554 x 21), paper setting lambda = 1e-6.

Run from ``asv_bench/``: ``asv run --python=same`` (current environment), or
``asv run`` to build the wheel in a fresh virtualenv.  Each benchmark is read
together with the scikit-learn ``ExtraTreesRegressor`` of the same size
(350 trees, one random feature per split, 15 leaves, no bootstrap: about the
work of growing the Mondrian trees), measured in the same run.
"""
import numpy as np

from ._cpu import cpu_arrays, relative_error

try:
    from mondrian import MondrianFeatures, MondrianKernelRidge
except ImportError:  # older commits
    MondrianFeatures = None

from sklearn.ensemble import ExtraTreesRegressor


class MondrianFeaturesCPU:
    params = ([50, 350], [1, 2])
    param_names = ["n_trees", "n_jobs"]
    timeout = 120

    def setup(self, n_trees, n_jobs):
        self.X, self.y, self.X_test, self.y_test = cpu_arrays()
        self.mf = MondrianFeatures(n_trees=n_trees, lifetime=1e-6, random_state=0,
                                   n_jobs=n_jobs).fit(self.X)

    def time_fit(self, n_trees, n_jobs):
        MondrianFeatures(n_trees=n_trees, lifetime=1e-6, random_state=0,
                         n_jobs=n_jobs).fit(self.X)

    def time_fit_transform(self, n_trees, n_jobs):
        MondrianFeatures(n_trees=n_trees, lifetime=1e-6, random_state=0,
                         n_jobs=n_jobs).fit_transform(self.X)

    def time_transform_test(self, n_trees, n_jobs):
        self.mf.transform(self.X_test)

    def time_transform_train(self, n_trees, n_jobs):
        self.mf.transform(self.X)

    def peakmem_fit_transform(self, n_trees, n_jobs):
        MondrianFeatures(n_trees=n_trees, lifetime=1e-6, random_state=0,
                         n_jobs=n_jobs).fit_transform(self.X)

    def track_n_columns(self, n_trees, n_jobs):
        return self.mf.n_cells_


class ExtraTreesReferenceCPU:
    """The issue's reference: a forest of the same size from scikit-learn."""

    params = ([50, 350],)
    param_names = ["n_estimators"]
    timeout = 120

    def setup(self, n_estimators):
        self.X, self.y, _, _ = cpu_arrays()

    def time_fit(self, n_estimators):
        ExtraTreesRegressor(n_estimators=n_estimators, max_features=1, max_leaf_nodes=15,
                            bootstrap=False, n_jobs=2, random_state=0).fit(self.X, self.y)


class MondrianKernelRidgeCPU:
    params = ([50, 350],)
    param_names = ["n_trees"]
    timeout = 300

    def setup(self, n_trees):
        self.X, self.y, self.X_test, self.y_test = cpu_arrays()
        self.model = MondrianKernelRidge(n_trees=n_trees, lifetime=1e-6, alpha=0.1,
                                         random_state=0, n_jobs=2).fit(self.X, self.y)

    def time_fit(self, n_trees):
        MondrianKernelRidge(n_trees=n_trees, lifetime=1e-6, alpha=0.1, random_state=0,
                            n_jobs=2).fit(self.X, self.y)

    def time_predict(self, n_trees):
        self.model.predict(self.X_test)

    def track_test_error_percent(self, n_trees):
        return relative_error(self.y_test, self.model.predict(self.X_test))


class DefaultKernelRidgeLarge:
    """MondrianKernelRidge() at its defaults on 10⁵ synthetic rows (100 trees
    at λ₀, about 4900 columns): the exact route factorises ΦᵀΦ + αI in its
    own memory (its transpose is the Fortran-ordered matrix LAPACK wants; a
    copy was 0.19 GB and 0.14-0.19 s) after checking Φ's 10⁷ entries
    without temporary arrays."""

    timeout = 300
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self):
        from .bench_defaults import synthetic_regression

        self.X, self.y = synthetic_regression(100_000)[:2]

    def time_fit(self):
        MondrianKernelRidge(random_state=0).fit(self.X, self.y)

    def peakmem_fit(self):
        MondrianKernelRidge(random_state=0).fit(self.X, self.y)


class GrowthMillionRows:
    """Growing 20 trees on 10⁶ synthetic rows x 8 features to λ = 0.227 (the
    default fit's final forest at that size has 300 of them): a node's rows
    do not fit in the cache near the root, so the partition and the
    children's boxes are bound by memory traffic (``c/grow.c``:
    ``partition_boxes`` computes the boxes while it partitions)."""

    timeout = 300
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self):
        from .bench_defaults import synthetic_regression

        self.X = synthetic_regression(1_000_000)[0]

    def time_fit(self):
        MondrianFeatures(n_trees=20, lifetime=0.227, random_state=0, n_jobs=2).fit(self.X)


class SpawnStreams:
    """The trees' numpy streams: ``rng.spawn(n)``'s bit generators, spawned in
    bulk by ``mondrian._streams`` (the same streams; numpy's own spawn for
    reference), and the PCG64 seed words alone that the forest seeds its
    C-held streams from (``spawn_streams``).  10⁴ streams is the width path's
    second search on a few hundred rows."""
    params = [1000, 13000]
    param_names = ["n_streams"]

    def setup(self, n):
        try:
            from mondrian._streams import spawn_bit_generators
        except ImportError:  # older commits
            raise NotImplementedError
        self.spawn = spawn_bit_generators
        try:
            from mondrian._streams import spawn_streams
        except ImportError:
            spawn_streams = None
        self.words = spawn_streams

    def time_bulk(self, n):
        self.spawn(np.random.default_rng(0), n)

    def time_seed_words(self, n):
        if self.words is None:
            raise NotImplementedError
        self.words(np.random.default_rng(0), n)

    def time_numpy_spawn(self, n):
        np.random.default_rng(0).bit_generator.spawn(n)


class SmallForestGrowth:
    """Growing 9000 trees on 250 rows to lifetime 0.2 (a small set's dual path),
    the streams held in C (seed words) or as numpy bit generators: the same
    trees, the spawn included."""
    params = (["seed words", "bit generators"],)
    param_names = ["streams"]

    def setup(self, streams):
        try:
            from mondrian._ext._forest import Forest
            from mondrian._streams import spawn_bit_generators, spawn_streams
        except ImportError:  # older commits
            raise NotImplementedError
        self.X = np.random.default_rng(0).standard_normal((250, 8))
        self.forest = Forest
        self.spawn = spawn_streams if streams == "seed words" else spawn_bit_generators

    def time_fit(self, streams):
        self.forest(9000, 8).fit(self.X, 0.2, self.spawn(np.random.default_rng(5), 9000), 2)


class FeatureScaleCPU:
    """The per-feature scale inside the C forest (``feature_scale``): growth
    and ``transform`` of 350 trees on the raw CPU data divided by the
    features' deviations, against the same forest on the scaled points
    given as they are (the same trees, bit for bit: the difference is the
    cost of the division, once per fit and once per tile of rows).
    λ = 0.05 is a lifetime of the scaled points (about λ₀/2)."""
    params = (["scaled inside", "scaled outside"],)
    param_names = ["scale"]
    timeout = 120

    def setup(self, where):
        if MondrianFeatures is None or "feature_scale" not in MondrianFeatures().get_params():
            raise NotImplementedError("no feature_scale in this commit")
        X, _, X_test, _ = cpu_arrays()
        self.std = X.std(axis=0)
        self.std[self.std == 0] = 1.0
        inside = where == "scaled inside"
        self.X = X if inside else X / self.std
        self.X_test = X_test if inside else X_test / self.std
        self.kw = dict(n_trees=350, lifetime=0.05, random_state=0, n_jobs=2,
                       feature_scale=self.std if inside else None)
        self.mf = MondrianFeatures(**self.kw).fit(self.X)

    def time_fit(self, where):
        MondrianFeatures(**self.kw).fit(self.X)

    def time_transform_test(self, where):
        self.mf.transform(self.X_test)
