"""
Mondrian kernel ridge on a Dask array
=====================================

``MondrianKernelRidge`` takes a dask array chunked by rows (here with
dask's threaded scheduler; the same code runs on a ``distributed`` cluster,
see the Dask page of the user guide).  The trees are grown on a sample and
every other row is inserted block by block; each block returns only its
normal equations (ΦᵀΦ, Φᵀy), summed by a tree reduction; the client solves
them.  Given the forest, the weights are those of the in-memory solve: the
figure plots the dask model's predictions against the in-memory solve on
the same trees.  Needs ``pip install "mondrian-kernel[dask]"``.
"""
import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

from mondrian import MondrianKernelRidge
from mondrian.ridge import ridge_solve

rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, (20_000, 3))
y = np.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(X.shape[0])
X_dask = da.from_array(X, chunks=(5_000, 3))
y_dask = da.from_array(y, chunks=5_000)

model = MondrianKernelRidge(n_trees=50, lifetime=3.0, alpha=1.0, random_state=0)
model.fit(X_dask, y_dask)
prediction = model.predict(X_dask[:2000]).compute()    # a dask array until computed

# The same trees in memory: the same ridge weights, up to the order of sums.
Phi = model.features_.transform(X)
reference = ridge_solve(Phi, y - y.mean(), 1.0, solver="cholesky")
print(f"largest weight difference: {np.max(np.abs(model.coef_ - reference.coef)):.2e}")

fig, ax = plt.subplots(figsize=(4.5, 4.5))
ax.scatter(Phi[:2000] @ reference.coef + y.mean(), prediction, s=4)
ax.set_xlabel("in-memory solve on the same trees")
ax.set_ylabel("dask fit, predict(X_dask)")
ax.set_title(f"{X.shape[0]} rows in {len(X_dask.chunks[0])} blocks")
fig.tight_layout()
plt.show()
