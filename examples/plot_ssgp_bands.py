"""
Sparse-spectrum GP regression against the exact GP
===================================================

A sparse-spectrum GP (Lázaro-Gredilla et al. 2010; Hoang et al. 2020,
Sec. 2) replaces the ARD Gaussian kernel by the average of p random cosine
features, so its evidence and predictions cost O(n p²) instead of O(n³).
Here both are trained on the same 1-D data, from the same starting
hyperparameters, and their predictive means and 95 % bands (of a new noisy
observation) are drawn together.  With 4 spectral points the SSGP's band
is far too narrow away from the data (a few periodic features cannot
express the prior's growing uncertainty) and its evidence is higher than
the exact GP's: trained on the evidence, a sparse spectrum overfits.  With
64 points its mean and band come close to the exact GP's.
"""
import matplotlib.pyplot as plt
import numpy as np

from mondrian import SparseSpectrumGPRegressor
from mondrian.gp import exact_gp_regressor

rng = np.random.default_rng(0)
X = np.sort(rng.uniform(-4, 4, 60))[:, None]
y = np.sin(1.5 * X[:, 0]) + 0.3 * X[:, 0] + 0.2 * rng.standard_normal(60)
X_plot = np.linspace(-7, 7, 400)[:, None]

exact = exact_gp_regressor(X, y)
mean, std = exact.predict(X_plot, return_std=True)

# %%
# The SSGP with 4 and with 64 spectral points (8 and 128 features).

fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
for ax, p in zip(axes, (4, 64)):
    ssgp = SparseSpectrumGPRegressor(n_components=p, random_state=0).fit(X, y)
    m, s = ssgp.predict(X_plot, return_std=True)
    ax.fill_between(X_plot[:, 0], mean - 1.96 * std, mean + 1.96 * std, color="0.85",
                    label="exact GP, 95 %")
    ax.plot(X_plot[:, 0], mean, color="0.4", lw=1.5, label="exact GP mean")
    ax.plot(X_plot[:, 0], m, color="C1", lw=1.5, label=f"SSGP mean, p = {p}")
    ax.plot(X_plot[:, 0], m - 1.96 * s, color="C1", lw=0.8, ls="--")
    ax.plot(X_plot[:, 0], m + 1.96 * s, color="C1", lw=0.8, ls="--", label="SSGP 95 %")
    ax.scatter(X[:, 0], y, s=10, color="k", zorder=3)
    ax.set_title(f"p = {p} spectral points: NLML {-ssgp.log_marginal_likelihood_value_:.1f} "
                 f"(exact {-exact.log_marginal_likelihood_value_:.1f})", fontsize=9)
    ax.set_xlabel("x")
axes[0].set_ylabel("y")
axes[0].legend(fontsize=7, loc="upper left")
fig.tight_layout()
plt.show()
