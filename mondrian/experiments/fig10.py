"""Fig. 10 of Balog et al. (2016, Sec. 8.3): the weights learned by the
Mondrian kernel and by the Mondrian forest on the same trees, at λ = 2e-6.

The forest of Fig. 9 (M = 50 trees grown to Λ = 1e-5 on the CPU training
data) pruned at λ = 2e-6.  In the parametrisation of the paper's Sec. 6
both models predict wᵀφ(x) with the features φ (M entries 1/√M per row) and
w = M^{-1/2}[w⁽¹⁾ᵀ ⋯ w⁽ᴹ⁾ᵀ]ᵀ:

* kernel: the ridge weights ŵ = (ΦᵀΦ + δ²I)⁻¹Φᵀ(y - ȳ), fitted jointly
  (δ² as in Fig. 9: N·1e-4 by default, see there);
* forest as the authors ran it: w⁽ᵐ⁾ the leaf means of the centred targets
  (each tree alone), so w = leaf means / √M;
* our smoothed forest: w⁽ᵐ⁾ the posterior means of the leaves (hierarchical
  Gaussian smoothing, hyperparameters by leave-one-out at λ), / √M.

Every weight goes to fig10.csv (model, tree, cell's training points,
weight w, tree value √M·w: the tree's own prediction ŷ⁽ᵐ⁾ in its cell,
for the forest its leaf mean); the left panel of fig10.png shows the
histograms of w with the centred training targets scaled the same way
((y - ȳ)/√M, what a weight would be if every tree predicted y alone).  The paper's finding: the kernel's weights are
more peaked around 0 -- joint fitting reaches extreme predictions by adding
up several small weights.

The authors' script histogrammed the forest's leaf means themselves (not
divided by √M) against the kernel's ŵ, which puts the two on scales √M
apart (its per-tree ridge weights, on features 1/√M, are √M times the leaf
means, and it divided them by √M where M would give the joint w); the right
panel reproduces that plot, the left one compares like with like.
"""
from __future__ import annotations

import argparse

import numpy as np

from ..forest import MondrianForestRegressor
from ._common import output_path, pyplot_or_none, save_figure, write_csv
from ._kernel_forest import (add_common_arguments, check_common, column_trees, cpu_data,
                             forest_weights, grow, kernel_weights, resolve_alpha)

DESCRIPTION = "Fig. 10: weights of the Mondrian kernel vs the Mondrian forest at lambda=2e-6"

MODELS = ("kernel", "forest", "smoothed-forest")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)
    parser.add_argument("--lifetime", type=float, default=2e-6,
                        help="lifetime of the weights (2e-6)")


def smoothed_weights(forest: MondrianForestRegressor, lam: float) -> np.ndarray:
    """The smoothed forest's w at λ: every active node's posterior mean of
    the centred targets, in column order, divided by √M."""
    mean, _, _ = forest._components(lam, forest._resolved)
    col_of_node, _ = forest.forest_.active_columns(lam)
    active = col_of_node >= 0
    w = np.empty(int(active.sum()))
    w[col_of_node[active]] = mean[active]
    return w / np.sqrt(forest.forest_.n_trees)


def run(args: argparse.Namespace) -> int:
    check_common(args)
    if not 0 < args.lifetime <= args.max_lifetime:
        raise ValueError("need 0 < --lifetime <= --max-lifetime")
    X, y, _, _ = cpu_data(args)
    resolve_alpha(args, X.shape[0])
    features = grow(X, args)
    lam = args.lifetime
    yc = y - y.mean()
    trees = column_trees(features, lam)
    w_kernel = kernel_weights(features, yc, lam, args.alpha)
    w_forest, counts = forest_weights(features, yc, lam)
    smooth = MondrianForestRegressor.from_features(features, y, lifetime=lam,
                                                   random_state=args.seed)
    w_smooth = smoothed_weights(smooth, lam)
    weights = {"kernel": w_kernel, "forest": w_forest, "smoothed-forest": w_smooth}
    root_m = np.sqrt(features.forest_.n_trees)
    rows = [(model, int(t), int(c), float(v), float(v * root_m)) for model in MODELS
            for t, c, v in zip(trees, counts, weights[model])]
    write_csv(output_path(args.out, "fig10.csv"),
              ["model", "tree", "n_points", "weight", "tree_value"], rows)
    print(f"lambda = {lam:g}: {w_kernel.size} cells in {features.forest_.n_trees} trees; "
          f"weights w in the Sec. 6 parametrisation (tree values sqrt(M) w: the forest's "
          f"are its leaf means):")
    for model in MODELS:
        w = weights[model]
        print(f"  {model:16s} sd {w.std():7.3f}   median |w| {np.median(np.abs(w)):7.3f}   "
              f"range [{w.min():8.2f}, {w.max():7.2f}]")
    print(f"  centred targets / sqrt(M): sd {yc.std() / root_m:.3f}")
    print(f"as the authors' script plotted (forest leaf means against kernel w): sd "
          f"{w_forest.std() * root_m:.2f} against {w_kernel.std():.2f}")
    plt = pyplot_or_none()
    if plt is not None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        panels = ((axes[0], 1.0, "kernel w and forest w = leaf means/√M (Sec. 6)"),
                  (axes[1], root_m, "as the authors' script: forest leaf means, kernel w"))
        for ax, forest_scale, title in panels:
            shown = {"kernel": w_kernel, "forest": w_forest * forest_scale,
                     "smoothed-forest": w_smooth * forest_scale}
            target = yc / root_m * forest_scale
            every = np.concatenate(list(shown.values()) + [target])
            lo, hi = np.percentile(every, [0.5, 99.5])
            bins = np.linspace(lo, hi, 60)
            ax.hist(target, bins=bins, density=True, histtype="stepfilled", alpha=0.35,
                    color="C2", label="training targets y - ȳ" +
                    ("" if forest_scale != 1.0 else ", /√M"))
            for model, color, label in (("forest", "C3", '"M. forest"'),
                                        ("smoothed-forest", "C1", "smoothed M. forest"),
                                        ("kernel", "C0", "M. kernel w")):
                ax.hist(shown[model], bins=bins, density=True, histtype="step", lw=2,
                        color=color, label=label)
            ax.set_xlabel("value")
            ax.set_ylabel("density")
            ax.set_title(title, fontsize=9)
            ax.legend(frameon=False, fontsize=8)
        fig.suptitle(f"CPU weights at λ = {lam:g}, M = {features.forest_.n_trees}, "
                     f"δ² = {args.alpha:.3g}", fontsize=10)
        save_figure(plt, fig, output_path(args.out, "fig10.png"))
    return 0
