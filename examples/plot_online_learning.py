"""
Online learning: the CPU data as a stream
=========================================

:meth:`~mondrian.MondrianKernelRidge.partial_fit` learns from batches of
points (Balog et al. 2016, Sec. 5): each batch is inserted into the trees by
the conditional Mondrian -- the forest stays distributed as one grown in
batch on every point seen -- and the ridge weights are updated exactly, by
extending and updating a Cholesky factor.  After the whole stream the model
is the batch fit on all points with the same trees.

:func:`mondrian.online.prequential` predicts every batch before learning it:
the progressive validation error, an honest error on new points without a
held-out set.  Left: its learning curve on the CPU training data in arrival
order, beside the test error of the batch model fitted on all of it (the
paper's setting, λ = 1e-6, α = 0.1; 50 trees).  Right: the number of
feature columns as the stream goes: new cells become new columns, zero for
every earlier point.
"""
import matplotlib.pyplot as plt

from mondrian import MondrianKernelRidge
from mondrian.datasets import load_cpu
from mondrian.metrics import relative_error
from mondrian.online import prequential

data = load_cpu()
X, y = data.X_train, data.y_train


def model():
    return MondrianKernelRidge(n_trees=50, lifetime=1e-6, alpha=0.1, random_state=0)


result = prequential(model(), X, y, batch_size=1024, report_every=1024)

# The number of columns along the same stream (the same trees: same seed).
online = model()
n_seen, n_columns = [], []
for start in range(0, X.shape[0], 1024):
    online.partial_fit(X[start:start + 1024], y[start:start + 1024])
    n_seen.append(min(start + 1024, X.shape[0]))
    n_columns.append(online.coef_.shape[0])

batch = model().fit(X, y)
batch_error = relative_error(data.y_test, batch.predict(data.X_test))
online_error = relative_error(data.y_test, result.model.predict(data.X_test))

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
left.plot(result.n_seen, result.error, marker="o", ms=3, label="progressive validation error")
left.axhline(batch_error, color="k", ls="--", label=f"batch fit, test error {batch_error:.2f} %")
left.axhline(online_error, color="C1", ls=":",
             label=f"online model at the end, test error {online_error:.2f} %")
left.set_xlabel("points learnt")
left.set_ylabel("100·‖ŷ − y‖ / ‖y‖ (%)")
left.legend(fontsize=8)
right.plot(n_seen, n_columns, marker="o", ms=3)
right.set_xlabel("points learnt")
right.set_ylabel("feature columns (cells of the 50 trees)")
fig.tight_layout()
plt.show()
