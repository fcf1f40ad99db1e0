"""
The kernel-width path: validation error, evidence and the posterior over λ
===========================================================================

One forest grown to a terminal lifetime Λ holds the Mondrian features of
every lifetime λ ≤ Λ, so the width of the Laplace kernel exp(-λ‖x - x'‖₁)
is learned by one sweep over λ (Balog et al. 2016, Sec. 4):
:class:`~mondrian.MondrianKernelRidgeCV` with the exact solver
(``solver='cholesky'``) updates the Cholesky factor of the ridge system at
every split event, and records along the way

* the error on a held-out fifth of the data at a grid of lifetimes, and
* the exact log marginal likelihood L(λ) (the evidence) at every event,

from which :class:`~mondrian.LifetimePosterior` gives the posterior over λ
(uniform prior on [0, Λ]; L is constant between events).
"""
import matplotlib.pyplot as plt
import numpy as np

from mondrian import MondrianKernelRidgeCV

rng = np.random.default_rng(0)
X = rng.random((300, 1))
f = lambda x: np.sin(4 * np.pi * x) * np.exp(-x)  # noqa: E731
y = f(X[:, 0]) + 0.2 * rng.standard_normal(300)

model = MondrianKernelRidgeCV(n_trees=25, max_lifetime=20.0, alphas=(0.03, 0.1, 0.3),
                              solver="cholesky", n_lifetimes=60, random_state=0).fit(X, y)
path = model.path_
print(f"selected lifetime {model.lifetime_:.3g}, alpha {model.alpha_:g}; "
      f"{path['event_lifetimes'].shape[0]} split events, "
      f"{path['n_features'][-1]} columns at Λ = {path['max_lifetime']:g}")
lo, hi = model.posterior_.interval(0.95)
print(f"posterior over λ at alpha {model.alpha_:g}: mode {model.posterior_.mode():.3g}, "
      f"95 % interval [{lo:.3g}, {hi:.3g}]")

# %%
# Left: the held-out mean squared error along the lifetime grid, one line
# per alpha, and the selected lifetime.  Middle: the evidence L(λ), a step
# function of the events.  Right: the posterior density over λ at the
# selected alpha, with its 95 % interval.

fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
for a, alpha in enumerate(path["alphas"]):
    axes[0].plot(path["lifetimes"], path["validation_mse"][:, a], label=f"α = {alpha:g}")
    axes[1].step(path["event_lifetimes"], path["event_log_marginal_likelihood"][:, a],
                 where="post", label=f"α = {alpha:g}")
axes[0].axvline(model.lifetime_, color="k", ls=":", label="selected")
axes[0].axhline(0.2**2, color="0.5", lw=1, label="noise variance")
axes[0].set_ylim(0, 2.5 * np.nanmin(path["validation_mse"]))
axes[0].set_ylabel("held-out MSE")
axes[1].set_ylabel("log marginal likelihood L(λ)")
axes[1].set_ylim(np.nanmax(path["event_log_marginal_likelihood"]) - 150,
                 np.nanmax(path["event_log_marginal_likelihood"]) + 10)
grid = np.linspace(0, min(path["max_lifetime"], 3 * hi), 2000)
axes[2].plot(grid, model.posterior_.pdf(grid), "k-")
axes[2].axvspan(lo, hi, color="0.85", label="95 % interval")
axes[2].set_ylabel(f"posterior density of λ (α = {model.alpha_:g})")
for ax in axes:
    ax.set_xlabel("lifetime λ")
    ax.legend()
fig.tight_layout()
plt.show()

# %%
# The fitted function at a lifetime below the selected one, at the selected
# one and above it: too wide a kernel smooths the oscillation away, too
# narrow a one follows the noise.  ``features_`` is the forest the path
# swept; a fixed-width model on it at any λ ≤ Λ is a ridge fit on its
# features at that lifetime.

from mondrian import ridge_solve  # noqa: E402

grid_x = np.linspace(0, 1, 400)[:, None]
fig, ax = plt.subplots(figsize=(7, 3.8))
ax.scatter(X[:, 0], y, s=6, c="0.6", label="data")
ax.plot(grid_x[:, 0], f(grid_x[:, 0]), "k--", lw=1, label="true function")
for lam in (model.lifetime_ / 8, model.lifetime_, 8 * model.lifetime_):
    lam = min(lam, path["max_lifetime"])
    Phi = model.features_.transform(X, lifetime=lam)
    w = ridge_solve(Phi, y - y.mean(), model.alpha_).coef
    pred = model.features_.transform(grid_x, lifetime=lam) @ w + y.mean()
    ax.plot(grid_x[:, 0], pred, label=f"λ = {lam:.3g}")
ax.set_xlabel("x")
ax.legend(ncol=2, fontsize="small")
fig.tight_layout()
plt.show()
