"""
Decision boundaries: the Mondrian kernel classifier and an SVC
==============================================================

:class:`~mondrian.MondrianKernelClassifierCV`, at its default parameters,
solves an L2-regularised logistic regression on the Mondrian features at
every lifetime λ of a grid and several C, warm-started along both (Balog
et al. 2016, Sec. 4.2.2), and keeps the pair of the best held-out log-loss:
the kernel width and the regularisation are learned from the data, around
the width a leave-one-out pilot found.  scikit-learn's
:class:`~sklearn.svm.SVC` with the exact Laplace kernel
exp(-γ‖x - x'‖₁) is the model it approximates; here its γ is chosen by a
5-fold grid search, which refits the SVC once per candidate and fold.

Two generated data sets, 300 training and 300 test points each (the test
points are drawn); the background shades each model's decision function,
the black line is its decision boundary, and the title gives the test
accuracy.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_circles, make_moons
from sklearn.metrics.pairwise import laplacian_kernel
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC

from mondrian import MondrianKernelClassifierCV

datasets = {
    "moons": make_moons(n_samples=600, noise=0.25, random_state=0),
    "circles": make_circles(n_samples=600, noise=0.15, factor=0.5, random_state=1),
}

fig, axes = plt.subplots(2, 2, figsize=(9, 8.5))
for row, (name, (X, y)) in zip(axes, datasets.items()):
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    X_train, y_train, X_test, y_test = X[:300], y[:300], X[300:], y[300:]
    mondrian = MondrianKernelClassifierCV(random_state=0).fit(X_train, y_train)
    # The exact Laplace kernel, γ on a grid, each one a precomputed-kernel SVC.
    best = None
    for gamma in (0.3, 1.0, 3.0, 10.0):
        search = GridSearchCV(SVC(kernel="precomputed"), {"C": [0.3, 1.0, 3.0]}, cv=5)
        search.fit(laplacian_kernel(X_train, gamma=gamma), y_train)
        if best is None or search.best_score_ > best[0]:
            best = (search.best_score_, gamma, search.best_estimator_)
    _, gamma, svc = best

    lo, hi = X.min(axis=0) - 0.5, X.max(axis=0) + 0.5
    g0, g1 = np.meshgrid(np.linspace(lo[0], hi[0], 150), np.linspace(lo[1], hi[1], 150))
    grid = np.column_stack([g0.ravel(), g1.ravel()])
    models = {
        f"Mondrian, λ̂ = {mondrian.lifetime_:.2g}": (
            mondrian.decision_function(grid), mondrian.score(X_test, y_test)),
        f"SVC, Laplace kernel, γ = {gamma:g}, C = {svc.C:g}": (
            svc.decision_function(laplacian_kernel(grid, X_train, gamma=gamma)),
            svc.score(laplacian_kernel(X_test, X_train, gamma=gamma), y_test)),
    }
    for ax, (title, (score, accuracy)) in zip(row, models.items()):
        ax.contourf(g0, g1, np.clip(score, -1.5, 1.5).reshape(g0.shape), levels=20,
                    cmap="RdBu_r", alpha=0.8)
        ax.contour(g0, g1, score.reshape(g0.shape), levels=[0], colors="k", linewidths=1)
        ax.scatter(*X_test.T, c=y_test, cmap="bwr", s=14, edgecolors="k", linewidths=0.4)
        ax.set_title(f"{name}: {title}\ntest accuracy {accuracy:.3f}", fontsize="medium")
        ax.set_xticks([])
        ax.set_yticks([])
        print(f"{name:8s} {title}: test accuracy {accuracy:.3f}")
fig.tight_layout()
plt.show()
