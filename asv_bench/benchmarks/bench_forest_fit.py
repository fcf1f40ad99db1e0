"""Batch fit of MondrianForestRegressor(50 trees) on the CPU data (6554 x 21)
at its defaults but the lifetime (smoothing selected by leave-one-out on the
trees of every point): issue 15's target is <= 0.05 s on two cores.  The
trees alone (MondrianFeatures.fit) are the floor; lifetime='auto' adds the
held-out selection of the lifetime and the insertion of those points."""
from ._cpu import cpu_arrays, cpu_standardised

try:
    from mondrian import MondrianFeatures, MondrianForestRegressor
except ImportError:  # older commits
    MondrianForestRegressor = None


class ForestFitCPU:
    params = (["1e-5", "1e-6", "auto"], [None, 1])
    param_names = ["lifetime", "n_jobs"]
    timeout = 300

    def setup(self, lifetime, n_jobs):
        if MondrianForestRegressor is None:
            raise NotImplementedError("no MondrianForestRegressor in this commit")
        self.X, self.y, _, _ = cpu_arrays()
        self.lifetime = lifetime if lifetime == "auto" else float(lifetime)

    def time_forest_fit(self, lifetime, n_jobs):
        MondrianForestRegressor(50, lifetime=self.lifetime, random_state=0,
                                n_jobs=n_jobs).fit(self.X, self.y)

    def time_trees_only(self, lifetime, n_jobs):
        if lifetime == "auto":
            raise NotImplementedError("the trees of 'auto' depend on the data's scale")
        MondrianFeatures(50, lifetime=self.lifetime, random_state=0, n_jobs=n_jobs).fit(self.X)


class DeepWideForestMemory:
    """Peak memory of growing 50 trees to one point per leaf on 4000 x 60
    uniform points (0.39 GiB of nodes, most of it the data boxes): the
    grown trees are held once, so the peak is about the nodes' bytes plus
    the process (it was twice the nodes' bytes while every packed tree was
    kept until the last was copied into the forest); and of inserting 1000
    more points into them."""
    timeout = 300

    def setup(self):
        import numpy as np
        rng = np.random.default_rng(0)
        self.X = rng.random((4000, 60))
        self.new = rng.random((1000, 60))

    def peakmem_fit(self):
        MondrianFeatures(50, lifetime=1e4, random_state=0, n_jobs=2).fit(self.X)

    def peakmem_fit_and_insert(self):
        MondrianFeatures(50, lifetime=1e4, random_state=0, n_jobs=2).fit(self.X) \
            .partial_fit(self.new)


class TreesToTheirLeavesCPU:
    """50 trees grown to one point per leaf on the CPU data standardised
    (655 000 nodes, 270 MB of node records: the trees of
    ``MondrianForestRegressor(aggregation=True)``): mostly memory written for
    the first time, which ``c/grow.c`` writes once (each tree straight from
    the growing thread's scratch into the forest at m times the first
    tree's size) instead of twice (packed, then stored).  asv repeats the
    fit in one process, where freed pages may come back warm; the first fit
    of a process, a user's, pays the most for fresh pages (doc/forests.rst,
    "Fit time")."""
    params = [None, 1]
    param_names = ["n_jobs"]
    timeout = 300

    def setup(self, n_jobs):
        self.X = cpu_standardised()[0]

    def time_fit(self, n_jobs):
        MondrianFeatures(50, lifetime=1e9, random_state=0, n_jobs=n_jobs).fit(self.X)


class ExtendLadderForestCPU:
    """One octave of extension of the default kernel ridge's ladder forest
    on the raw CPU data (2000 trees on 6554 x 21 points, 1.37e-6 -> 2.73e-6:
    79 000 -> 206 000 nodes, 105 MB of permutations): the extension permutes
    each tree's row of the forest's permutation in place (``c/grow.c``);
    it used to copy every row into the growing thread, into the packed tree
    and back.  ``peakmem_`` of the same, with a path learner reading the
    forest, which ``CGRidgePath.extend_forest`` lets go of first, so that
    the forest is extended in place rather than copied."""
    timeout = 300
    number = 1
    repeat = 5

    def setup(self):
        self.X = cpu_arrays()[0]
        self.features = MondrianFeatures(2000, lifetime=1.367e-6, random_state=0,
                                         n_jobs=None).fit(self.X)

    def time_extend(self):
        self.features.extend(2.734e-6)

    def peakmem_extend_under_a_path(self):
        import numpy as np
        from mondrian.path import CGRidgePath, split_events
        y = np.zeros(self.X.shape[0])
        y[::2] = 1.0
        path = CGRidgePath(split_events(self.features), y - y.mean(), [0.1], tol=1e-3)
        path.extend_forest(self.features, 2.734e-6)
