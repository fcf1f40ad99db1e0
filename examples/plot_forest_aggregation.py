"""
Mondrian forest: smoothing or aggregation, chosen on held-out points
====================================================================

:class:`~mondrian.MondrianForestRegressor` has two ways to turn a tree's
nodes into a prediction.  The *smoothed* forest (``aggregation=False``)
puts a hierarchical Gaussian prior on the node means (Lakshminarayanan et
al. 2016); the *aggregated* one (``aggregation=True``, AMF: Mourtada et
al. 2021) averages every pruned subtree of each tree, weighted by how well
it predicted the training points one after the other.  The default,
``aggregation='auto'``, fits both on the same trees, keeps the one with the
smaller squared error on the held-out points that also select the
lifetime, and, for AMF, scales its predictive standard deviation so that
±1.96 std covers 95 % of those points (``std_scale_``).

Here the target has flat steps and one sharp rise.  The aggregation prunes
the flat parts to shallow subtrees and keeps the deep ones at the rise.
Left of the data and right of it (x < 0 or x > 10) a test point leaves
every tree's root box with the conditional Mondrian's probability and gets
the prior: the band widens to the targets' spread.
"""
import matplotlib.pyplot as plt
import numpy as np

from mondrian import MondrianForestRegressor

rng = np.random.default_rng(0)
x = rng.uniform(0, 10, 600)
X = x[:, None]
truth = lambda t: np.floor(t / 2.5) + 1.5 * (t > 6.0) * (t < 6.5)  # noqa: E731
y = truth(x) + 0.15 * rng.standard_normal(x.size)
X_plot = np.linspace(-3, 13, 800)[:, None]

auto = MondrianForestRegressor(n_trees=50, random_state=0).fit(X, y)
smooth = MondrianForestRegressor(n_trees=50, random_state=0, aggregation=False).fit(X, y)
best_amf = min(v[0] for v in auto.aggregation_scores_.values())
best_smooth = smooth.validation_scores_[(smooth.lifetime_, smooth.hyper_)][0]

fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
for ax, model, name in [(axes[0], smooth, "smoothed (aggregation=False)"),
                        (axes[1], auto, f"default: aggregation_={auto.aggregation_}")]:
    mean, std = model.predict(X_plot, return_std=True)
    ax.fill_between(X_plot[:, 0], mean - 1.96 * std, mean + 1.96 * std, color="C0",
                    alpha=0.2, label="95 % band")
    ax.plot(X_plot[:, 0], mean, color="C0", lw=1.4, label="mean")
    inside = (X_plot[:, 0] >= 0) & (X_plot[:, 0] <= 10)
    ax.plot(X_plot[inside, 0], truth(X_plot[inside, 0]), color="k", lw=0.8, ls="--",
            label="truth")
    ax.scatter(x, y, s=3, color="0.5")
    ax.set_title(name, fontsize=10)
    ax.set_xlabel("x")
axes[0].set_ylabel("y")
axes[1].legend(loc="upper left", fontsize=8)
fig.suptitle(f"held-out MSE: smoothed {best_smooth:.4f}, aggregated {best_amf:.4f} "
             f"(std_scale_ {auto.std_scale_:.2f})", fontsize=10)
fig.tight_layout()
plt.show()
