"""Online learning on the CPU stream (6554 x 21, in arrival order), paper
setting lambda = 1e-6: insertion of every point into the trees, and exact
online ridge against the batch fit of the same size (issue 14's targets:
one pass into 50 trees in <= 0.1 s; exact online ridge with 350 trees in
<= 5x the batch fit)."""
from ._cpu import cpu_arrays, cpu_standardised

try:
    from mondrian import MondrianFeatures, MondrianKernelRidge
    _ONLINE = hasattr(MondrianFeatures, "partial_fit")
except ImportError:  # older commits
    _ONLINE = False


def _stream(model, X, y, batch_size, first=1):
    """A fit on the first ``first`` points, the rest inserted in batches."""
    if y is None:
        model.partial_fit(X[:first])
    else:
        model.partial_fit(X[:first], y[:first])
    for a in range(first, X.shape[0], batch_size):
        if y is None:
            model.partial_fit(X[a:a + batch_size])
        else:
            model.partial_fit(X[a:a + batch_size], y[a:a + batch_size])
    return model


class InsertCPU:
    """One pass of the CPU stream into the trees (a fit on the first point,
    every other point inserted)."""

    params = ([50, 350], [64, 1024, 6554])
    param_names = ["n_trees", "batch_size"]
    timeout = 120

    def setup(self, n_trees, batch_size):
        if not _ONLINE:
            raise NotImplementedError("no partial_fit in this commit")
        self.X, self.y, _, _ = cpu_arrays()

    def time_stream(self, n_trees, batch_size):
        _stream(MondrianFeatures(n_trees, 1e-6, random_state=0, n_jobs=1),
                self.X, None, batch_size)

    def track_n_columns(self, n_trees, batch_size):
        return _stream(MondrianFeatures(n_trees, 1e-6, random_state=0, n_jobs=1),
                       self.X, None, batch_size).n_cells_


class OnlineRidgeCPU:
    """Exact online ridge over the CPU stream vs the batch fit (350 trees,
    alpha = 0.1)."""

    params = ([1000, 2000],)
    param_names = ["batch_size"]
    timeout = 600
    number = 1
    repeat = 2

    def setup(self, batch_size):
        if not _ONLINE:
            raise NotImplementedError("no partial_fit in this commit")
        self.X, self.y, _, _ = cpu_arrays()

    def time_online(self, batch_size):
        _stream(MondrianKernelRidge(350, 1e-6, alpha=0.1, random_state=0), self.X, self.y,
                batch_size, batch_size)

    def time_batch(self, batch_size):
        MondrianKernelRidge(350, 1e-6, alpha=0.1, random_state=0).fit(self.X, self.y)


class InsertFixedCostCPU:
    """A small batch into 50 trees of one point per leaf (the CPU training
    data standardised, 655 000 nodes; two threads): every batch copies,
    renumbers and moves every node, so a batch of 1 or 100 points costs
    about as much as that pass (22-36 ms for one point, 2026-11-27).  The
    first insertion after ``fit`` also grows the node arrays' capacity by
    half into fresh memory (0.26-0.36 s in a fresh process, 0.03 s where
    freed memory is at hand); ``setup`` makes it, the timing is the next."""

    params = ([1, 100],)
    param_names = ["n_points"]
    number = 1
    repeat = 5
    timeout = 120

    def setup(self, n_points):
        if not _ONLINE:
            raise NotImplementedError("no partial_fit in this commit")
        X = cpu_standardised()[0]
        self.model = MondrianFeatures(50, 1180.0, random_state=0,
                                      n_jobs=2).fit(X[:-2 * n_points])
        self.model.partial_fit(X[-2 * n_points:-n_points])
        self.new = X[-n_points:]

    def time_insert(self, n_points):
        self.model.partial_fit(self.new)
