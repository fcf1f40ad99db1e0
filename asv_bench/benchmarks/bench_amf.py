"""Online aggregation (AMF, ``aggregation=True``) of the Mondrian forest on
the CPU data (6554 x 21 training points, 819 test; X and y standardised
with the training statistics), 50 trees: ``fit`` (grow, then one ordered
pass of the points through the trees), one online pass of ``partial_fit``
over the stream in batches of 1000 and point by point (each ending when
its last points are in the trees), a prequential pass (predict each batch
of 100, then learn it), prediction, and test RMSE (units of the
training targets' sd).  Issue 15's target for one online pass: <= 0.2 s."""
import numpy as np

from ._cpu import cpu_standardised

try:
    from mondrian import MondrianForestRegressor
    from mondrian.forest import aggregation as _aggregation  # noqa: F401
except ImportError:  # older commits
    MondrianForestRegressor = None


def _model():
    return MondrianForestRegressor(n_trees=50, random_state=0, n_jobs=1, aggregation=True)


class AMFCPU:
    """AMF regression at its defaults."""

    timeout = 300

    def setup(self):
        if MondrianForestRegressor is None:
            raise NotImplementedError("no aggregation in this commit")
        self.X, self.y, self.Xt, self.yt = cpu_standardised()
        self.model = _model().fit(self.X, self.y)

    def time_fit(self):
        _model().fit(self.X, self.y)

    def _online_pass(self, batch):
        model = _model()
        for s in range(0, len(self.y), batch):
            model.partial_fit(self.X[s:s + batch], self.y[s:s + batch])
        # The points wait until the state is read: the pass ends when the
        # last ones are in the trees.
        model.amf_state_

    def time_online_pass_batches_of_1000(self):
        self._online_pass(1000)

    def time_online_pass_point_by_point(self):
        self._online_pass(1)

    def time_prequential_batches_of_100(self):
        """Fit on the first 1000 points, then predict each next batch of
        100 before learning it: every prediction inserts the batch that
        waits, a pass over the nodes per batch."""
        model = _model().fit(self.X[:1000], self.y[:1000])
        for s in range(1000, len(self.y), 100):
            model.predict(self.X[s:s + 100])
            model.partial_fit(self.X[s:s + 100], self.y[s:s + 100])

    def time_predict(self):
        self.model.predict(self.Xt)

    def track_rmse(self):
        return float(np.sqrt(np.mean((self.model.predict(self.Xt) - self.yt) ** 2)))
