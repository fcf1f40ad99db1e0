"""
Mondrian forest: predictive bands, kernel against forest
========================================================

The same kind of Mondrian trees serve two models (paper Sec. 6).  The
Mondrian *forest* fits every tree on its own and averages the trees'
predictive distributions: here on 1-D data with a gap, its 95 % band
(``predict(X, return_std=True)``) widens in the gap and beyond the data,
where a test point separates from the trees' data boxes (the conditional
Mondrian).  The Mondrian *kernel* fits the weights of every tree's cells
jointly (ridge regression on the features): a smoother fit from the same
number of trees, without a predictive band.
"""
import matplotlib.pyplot as plt
import numpy as np

from mondrian import MondrianForestRegressor, MondrianKernelRidgeCV

rng = np.random.default_rng(1)
x = np.concatenate([rng.uniform(-4, -0.7, 70), rng.uniform(0.9, 4, 70)])
X = x[:, None]
y = np.sin(1.3 * x) + 0.25 * x + 0.2 * rng.standard_normal(x.size)
X_plot = np.linspace(-6, 6, 500)[:, None]

forest = MondrianForestRegressor(n_trees=100, random_state=0).fit(X, y)
mean, std = forest.predict(X_plot, return_std=True)
kernel = MondrianKernelRidgeCV(n_trees=100, random_state=0).fit(X, y)

fig, ax = plt.subplots(figsize=(8, 3.8))
ax.fill_between(X_plot[:, 0], mean - 1.96 * std, mean + 1.96 * std, color="C0", alpha=0.2,
                label="Mondrian forest, 95 % band")
ax.plot(X_plot[:, 0], mean, color="C0", lw=1.5, label="Mondrian forest mean")
ax.plot(X_plot[:, 0], kernel.predict(X_plot), color="C3", lw=1.5,
        label="Mondrian kernel ridge")
ax.scatter(x, y, s=8, color="k", label="training points")
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.set_title(f"forest at lifetime {forest.lifetime_:.3g}, kernel at {kernel.lifetime_:.3g}")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
plt.show()
