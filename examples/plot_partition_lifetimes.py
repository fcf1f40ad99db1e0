"""
A Mondrian partition of 2-D data at several lifetimes
=====================================================

A Mondrian tree cuts its box at exponential times: a cell whose data box has
ℓ₁ size (linear dimension) s is cut after an Exp(s) time, along a dimension
chosen with probability proportional to its extent, at a uniform position
(Balog et al. 2016, Sec. 2.2).  One tree grown to a lifetime Λ holds the
partition at every λ ≤ Λ: the cells at λ are those of the cuts made before
λ.  Here one tree is grown once on the two-moons data to Λ = 8 and drawn at
four lifetimes; the larger λ, the finer the cells, and the narrower the
Laplace kernel exp(-λ‖x - x'‖₁) that a forest of such trees approximates.
"""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle
from sklearn.datasets import make_moons

from mondrian import MondrianFeatures

X, y = make_moons(n_samples=200, noise=0.1, random_state=0)
mf = MondrianFeatures(n_trees=1, lifetime=8.0, random_state=3).fit(X)
tree = mf.trees_[0]

# %%
# The cells of the tree at lifetime λ: starting from the root with the
# drawing window as its region, a node whose split time is at most λ has
# been cut, at ``threshold`` along ``feature``, and its region is divided
# between its children; the other nodes reached are the cells at λ.  Each
# cell's data box (``lower``, ``upper``: the bounding box of its training
# points, where the Mondrian process of the tree lives) is filled.


def cells_at(tree, lifetime, region):
    """(region, node) of every cell of ``tree`` at ``lifetime``."""
    out, stack = [], [(0, region)]
    while stack:
        node, (lo, hi) = stack.pop()
        if tree.split_time[node] > lifetime:
            out.append(((lo, hi), node))
            continue
        f, t = tree.feature[node], tree.threshold[node]
        left_hi, right_lo = hi.copy(), lo.copy()
        left_hi[f], right_lo[f] = t, t
        stack.append((tree.left[node], (lo, left_hi)))
        stack.append((tree.right[node], (right_lo, hi)))
    return out


window = (X.min(axis=0) - 0.3, X.max(axis=0) + 0.3)
# Red, blue, yellow and white, one colour per node: a cell keeps its colour
# from one lifetime to the next until it is cut.
palette = np.array(["#c8102e", "#0a3d91", "#f4c300", "#ecebe4", "#ecebe4", "#ecebe4"])
node_colour = palette[np.random.default_rng(0).integers(len(palette), size=tree.n_nodes)]
lifetimes = [0.5, 1.5, 3.0, 8.0]
fig, axes = plt.subplots(1, len(lifetimes), figsize=(14, 3.6))
for ax, lam in zip(axes, lifetimes):
    cells = cells_at(tree, lam, window)
    for (lo, hi), node in cells:
        ax.add_patch(Rectangle(lo, *(hi - lo), facecolor="none", edgecolor="k", lw=2.5))
        box_lo, box_hi = tree.lower[node], tree.upper[node]
        ax.add_patch(Rectangle(box_lo, *(box_hi - box_lo), lw=0,
                               facecolor=node_colour[node]))
    ax.scatter(*X[y == 0].T, s=7, c="k", zorder=3)
    ax.scatter(*X[y == 1].T, s=7, facecolors="w", edgecolors="k", lw=0.6, zorder=3)
    ax.set_xlim(window[0][0], window[1][0])
    ax.set_ylim(window[0][1], window[1][1])
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(f"λ = {lam:g}: {len(cells)} cells")
fig.tight_layout()
plt.show()

# %%
# The number of cells grows with λ as the cuts accumulate; the feature map
# reports the same count at each lifetime (one column per cell):

for lam in lifetimes:
    print(f"λ = {lam:g}: {mf.transform(X, lifetime=lam).shape[1]} feature columns")
