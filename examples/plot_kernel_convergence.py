"""
The Mondrian kernel converges to the Laplace kernel
====================================================

With M Mondrian trees of lifetime λ, the feature map φ of eq. (2) gives the
kernel estimate k_M(x, x') = φ(x)ᵀφ(x'): the fraction of trees in which x and
x' share a cell.  Two points share a cell of one tree with probability
exactly exp(-λ‖x - x'‖₁), so k_M is an average of M independent Bernoulli
draws of that mean and converges to the Laplace kernel as M grows
(Balog et al. 2016, Prop. 1), with error of order 1/√M.
"""
import matplotlib.pyplot as plt
import numpy as np

from mondrian import MondrianFeatures, laplace_kernel

rng = np.random.default_rng(0)
X = rng.random((100, 2))
lifetime = 3.0
K = laplace_kernel(X, X, lifetime)

# %%
# The largest and the mean absolute error over all pairs of points, for
# forests of increasing size (the features of the training points are read
# off the trees by ``fit_transform``).

n_trees = np.array([1, 3, 10, 30, 100, 300, 1000, 3000])
max_err, mean_err = [], []
for M in n_trees:
    Phi = MondrianFeatures(n_trees=int(M), lifetime=lifetime, random_state=1).fit_transform(X)
    err = np.abs((Phi @ Phi.T).toarray() - K)
    max_err.append(err.max())
    mean_err.append(err.mean())
    print(f"M = {M:5d}: max |k_M - k| = {err.max():.3f}, mean {err.mean():.4f}")

# %%
# Left: the errors against M, with the slope 1/√M of a Monte Carlo average.
# Right: k_M(x₀, ·) for one point x₀ against its ℓ₁ distance, at M = 10 and
# M = 1000, on the exact kernel's curve.

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
ax0.loglog(n_trees, max_err, "o-", label="max over pairs")
ax0.loglog(n_trees, mean_err, "s-", label="mean over pairs")
ax0.loglog(n_trees, mean_err[0] / np.sqrt(n_trees), "k:", label=r"$\propto 1/\sqrt{M}$")
ax0.set_xlabel("number of trees M")
ax0.set_ylabel(r"$|k_M(x, x') - e^{-\lambda\|x - x'\|_1}|$")
ax0.legend()

dist = np.abs(X - X[0]).sum(axis=1)
order = np.argsort(dist)
for M, marker in ((10, "x"), (1000, ".")):
    mf = MondrianFeatures(n_trees=M, lifetime=lifetime, random_state=2).fit(X)
    ax1.plot(dist, mf.kernel(X[:1], X)[0], marker, ls="", label=f"$k_M$, M = {M}")
ax1.plot(dist[order], np.exp(-lifetime * dist[order]), "k-", label="Laplace kernel")
ax1.set_xlabel(r"$\|x_0 - x\|_1$")
ax1.set_ylabel(r"$k(x_0, x)$")
ax1.legend()
fig.tight_layout()
plt.show()
