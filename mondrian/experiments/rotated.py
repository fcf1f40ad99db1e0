"""The uniformly rotated Mondrian kernel (Osborne & O'Reilly, AISTATS 2025)
against the axis-aligned one, in three parts:

* ``kernel``: maximum absolute error of the kernel estimate on all pairs of
  100 uniform points in [0, 1]², λ = 10, against the number M of trees, each
  forest against its own limit kernel (the ℓ₁ Laplace kernel, the rotated
  Laplace kernel :func:`~mondrian.kernels.rotated_laplace_kernel`);
* ``cpu``: CPU test error of ridge regression (δ² = 1e-4) on M ≤ 50 trees,
  Mondrian at λ = 1e-6 against rotated at λ = 2.5e-7 (their widths in
  Euclidean distance match: λ·E‖v‖₁ ≈ 3.6 λ in 21 dimensions), 5 repeats,
  with exact Laplace kernel ridge (the paper's 3.12 %) and exact rotated
  kernel ridge;
* ``line``: the "Mondrian line", 500 + 500 points in 3-D along
  (1, 1, 1)/√3 with a target varying along it, M = 500 trees: test RMSE of
  ridge against λ for both forests, and of ``MondrianKernelRidgeCV`` at its
  defaults with each ``rotation``.

Each part writes ``rotated_<part>.csv`` and ``rotated_<part>.png``.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp

from ..datasets import load_cpu
from ..features.mondrian import MondrianFeatures
from ..kernels import laplace_kernel, rotated_laplace_kernel, sphere_l1_mean
from ..metrics import relative_error
from ..path.estimators import MondrianKernelRidgeCV
from ..ridge import ridge_solve
from ._common import output_path, pyplot_or_none, save_figure, write_csv

DESCRIPTION = ("Rotated Mondrian kernel (Osborne & O'Reilly 2025): kernel error, CPU "
               "error and the 'Mondrian line', against the axis-aligned kernel")

PARTS = ("kernel", "cpu", "line")
KINDS = {"axis": None, "rotated": "uniform"}
LABELS = {"axis": "Mondrian (axis-aligned)", "rotated": "rotated Mondrian"}
COLORS = {"axis": "tab:blue", "rotated": "tab:red"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--part", choices=("all",) + PARTS, default="all",
                        help="which part to run (all)")
    parser.add_argument("--m-max", type=int, default=50,
                        help="largest M of the kernel and CPU parts (50)")
    parser.add_argument("--repeats", type=int, default=5, help="independent repeats (5)")
    parser.add_argument("--line-trees", type=int, default=500,
                        help="trees of the line part (500)")
    parser.add_argument("--seed", type=int, default=0, help="seed (0)")
    parser.add_argument("--quick", action="store_true",
                        help="M <= 10, 2 repeats, 1500 CPU training points, 50 line trees")


def prefix_features(kind: str, X: np.ndarray, X_test: np.ndarray | None, lifetime: float,
                    m_max: int, seed):
    """Features of the first M = 1 … m_max trees of one forest, rescaled to
    1/√M: yields (M, Phi_train, Phi_test)."""
    fmap = MondrianFeatures(n_trees=m_max, lifetime=lifetime, random_state=seed,
                            rotation=KINDS[kind])
    Phi = fmap.fit_transform(X).tocsc()
    Phi_te = None if X_test is None else fmap.transform(X_test).tocsc()
    leaves = np.array([(t.n_nodes + 1) // 2 for t in fmap.trees_])
    offsets = np.concatenate([[0], np.cumsum(leaves)])
    for M in range(1, m_max + 1):
        scale = np.sqrt(m_max / M)
        tr = sp.csr_array(Phi[:, :offsets[M]] * scale)
        te = None if Phi_te is None else sp.csr_array(Phi_te[:, :offsets[M]] * scale)
        yield M, tr, te


def _summary(rows, key=2, value=-1):
    """{kind: {M: (mean, sd)}} over the repeats."""
    out = {}
    for kind in KINDS:
        by_m = {}
        for row in rows:
            if row[0] == kind:
                by_m.setdefault(row[1], []).append(row[value])
        out[kind] = {m: (float(np.mean(v)), float(np.std(v))) for m, v in sorted(by_m.items())}
    return out


def _plot_curves(ax, summary) -> None:
    for kind, by_m in summary.items():
        ms = np.array(list(by_m))
        mean = np.array([by_m[m][0] for m in ms])
        sd = np.array([by_m[m][1] for m in ms])
        ax.plot(ms, mean, color=COLORS[kind], label=LABELS[kind])
        ax.fill_between(ms, mean - sd, mean + sd, color=COLORS[kind], alpha=0.2, lw=0)
    ax.set_xlabel("trees M (non-zero features per point)")


def run_kernel(args, m_max: int, repeats: int) -> None:
    lam, n = 10.0, 100
    seeds = np.random.SeedSequence(args.seed)
    X = np.random.default_rng(seeds.spawn(1)[0]).random((n, 2))
    exact = {"axis": laplace_kernel(X, lifetime=lam),
             "rotated": rotated_laplace_kernel(X, lifetime=lam)}
    rows = []
    for r, child in enumerate(seeds.spawn(repeats)):
        for kind, s in zip(KINDS, child.spawn(len(KINDS))):
            for M, Phi, _ in prefix_features(kind, X, None, lam, m_max, s):
                K_hat = (Phi @ Phi.T).toarray()
                rows.append((kind, M, r, float(np.abs(K_hat - exact[kind]).max())))
    write_csv(output_path(args.out, "rotated_kernel.csv"),
              ["kernel", "trees", "repeat", "max_abs_error"], rows)
    summary = _summary(rows)
    print(f"(a) max |k - k_M| over the {n}² pairs of {n} uniform points in [0, 1]², λ = {lam:g},"
          f" each against its own limit kernel, at M = {m_max} (mean ± sd, {repeats} repeats):")
    for kind in KINDS:
        mean, sd = summary[kind][m_max]
        print(f"  {LABELS[kind]:24s} {mean:.3f} ± {sd:.3f}")
    plt = pyplot_or_none()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        _plot_curves(ax, summary)
        ax.set_ylabel("maximum absolute error")
        ax.set_ylim(0, 1.05)
        ax.legend(frameon=False)
        save_figure(plt, fig, output_path(args.out, "rotated_kernel.png"))


def run_cpu(args, m_max: int, repeats: int) -> None:
    data = load_cpu()
    X, y, X_te, y_te = data.X_train, data.y_train, data.X_test, data.y_test
    if args.quick:
        keep = np.random.default_rng(args.seed).choice(X.shape[0], 1500, replace=False)
        X, y = X[keep], y[keep]
        print(f"--quick: {X.shape[0]} of {data.X_train.shape[0]} CPU training points")
    lifetimes = {"axis": 1e-6, "rotated": 2.5e-7}
    alpha = 1e-4
    mean = y.mean()
    exact = {}
    for kind, kernel in (("axis", laplace_kernel), ("rotated", rotated_laplace_kernel)):
        t = time.perf_counter()
        K = kernel(X, lifetime=lifetimes[kind])
        K[np.diag_indices_from(K)] += alpha
        c = np.linalg.solve(K, y - mean)
        del K
        pred = kernel(X_te, X, lifetime=lifetimes[kind]) @ c + mean
        exact[kind] = relative_error(y_te, pred)
        print(f"(b) exact {kind} kernel ridge, λ = {lifetimes[kind]:g}, N = {X.shape[0]}: "
              f"{exact[kind]:.2f} % in {time.perf_counter() - t:.1f} s"
              + ("  [paper: 3.12 %]" if kind == "axis" and not args.quick else ""))
    rows = []
    for r, child in enumerate(np.random.SeedSequence(args.seed).spawn(repeats)):
        for kind, s in zip(KINDS, child.spawn(len(KINDS))):
            for M, Phi, Phi_te in prefix_features(kind, X, X_te, lifetimes[kind], m_max, s):
                coef = ridge_solve(Phi, y - mean, alpha).coef
                rows.append((kind, M, r, relative_error(y_te, Phi_te @ coef + mean)))
    rows += [(f"exact-{kind}", "", "", exact[kind]) for kind in KINDS]
    write_csv(output_path(args.out, "rotated_cpu.csv"),
              ["method", "trees", "repeat", "test_error_percent"], rows)
    summary = _summary(rows[:-2])
    print(f"(b) CPU relative test error at M = {m_max} (mean ± sd over {repeats} repeats; "
          f"λ = 1e-6 axis-aligned, 2.5e-7 rotated, δ² = {alpha:g}):")
    for kind in KINDS:
        mean_e, sd = summary[kind][m_max]
        print(f"  {LABELS[kind]:24s} {mean_e:.2f} ± {sd:.2f} %")
    plt = pyplot_or_none()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        _plot_curves(ax, summary)
        for kind, style in (("axis", "-"), ("rotated", "--")):
            ax.axhline(exact[kind], color="black", ls=style, lw=1.5,
                       label=f"exact {'Laplace' if kind == 'axis' else 'rotated'} "
                             f"({exact[kind]:.2f} %)")
        ax.set_ylabel("relative test error [%]")
        ax.set_ylim(0, max(20.0, 1.1 * max(v[0] for v in summary["axis"].values())))
        ax.legend(frameon=False, fontsize=8)
        save_figure(plt, fig, output_path(args.out, "rotated_cpu.png"))


def line_data(n: int, rng: np.random.Generator):
    """n points on the segment s·(1, 1, 1)/√3, s ~ U(-1, 1), with the target
    sin(3πs) + N(0, 0.1²): the target varies along the diagonal only."""
    s = rng.uniform(-1.0, 1.0, n)
    X = s[:, None] * np.ones(3) / np.sqrt(3.0)
    y = np.sin(3 * np.pi * s) + 0.1 * rng.standard_normal(n)
    return X, y


def run_line(args, n_trees: int) -> None:
    rng = np.random.default_rng(np.random.SeedSequence(args.seed).spawn(1)[0])
    X, y = line_data(500, rng)
    X_te, y_te = line_data(500, rng)
    alpha = 0.01
    # A common grid of Euclidean widths: λ_axis = w/√3 (‖δ‖₁ = √3‖δ‖₂ on
    # the diagonal), λ_rot = w/E‖v‖₁ (the rotated kernel's slope at 0).
    widths = np.geomspace(0.5, 200.0, 12)
    scale = {"axis": np.sqrt(3.0), "rotated": sphere_l1_mean(3)}
    rows = []
    for kind in KINDS:
        fmap = MondrianFeatures(n_trees=n_trees, lifetime=float(widths[-1] / scale[kind]),
                                random_state=args.seed, rotation=KINDS[kind]).fit(X)
        for w in widths:
            lam = float(w / scale[kind])
            Phi = fmap.training_features(lam)
            coef = ridge_solve(Phi, y - y.mean(), alpha).coef
            pred = fmap.transform(X_te, lam) @ coef + y.mean()
            rows.append((kind, "fixed", w, lam, float(np.sqrt(np.mean((pred - y_te) ** 2)))))
    cv = {}
    for kind in KINDS:
        model = MondrianKernelRidgeCV(n_trees=n_trees, random_state=args.seed,
                                      rotation=KINDS[kind]).fit(X, y)
        rmse = float(np.sqrt(np.mean((model.predict(X_te) - y_te) ** 2)))
        cv[kind] = rmse
        rows.append((kind, "MondrianKernelRidgeCV", "", model.lifetime_, rmse))
    write_csv(output_path(args.out, "rotated_line.csv"),
              ["kernel", "fit", "euclidean_width", "lifetime", "test_rmse"], rows)
    print(f"(c) the Mondrian line (500 + 500 points along (1,1,1)/√3, target sin(3πs), "
          f"noise sd 0.1, M = {n_trees}): test RMSE")
    for kind in KINDS:
        fixed = [r for r in rows if r[0] == kind and r[1] == "fixed"]
        best = min(fixed, key=lambda r: r[-1])
        print(f"  {LABELS[kind]:24s} best on the width grid {best[-1]:.4f} (λ = {best[3]:.3g}); "
              f"MondrianKernelRidgeCV {cv[kind]:.4f}")
    plt = pyplot_or_none()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        for kind in KINDS:
            fixed = [r for r in rows if r[0] == kind and r[1] == "fixed"]
            ax.plot([r[2] for r in fixed], [r[-1] for r in fixed], "o-", color=COLORS[kind],
                    ms=3, label=f"{LABELS[kind]} (CV: {cv[kind]:.3f})")
        ax.axhline(0.1, color="black", lw=1, ls=":", label="noise sd")
        ax.set_xscale("log")
        ax.set_xlabel("λ · (slope factor): width in Euclidean distance")
        ax.set_ylabel("test RMSE")
        ax.legend(frameon=False, fontsize=8)
        save_figure(plt, fig, output_path(args.out, "rotated_line.png"))


def run(args: argparse.Namespace) -> int:
    m_max, repeats, line_trees = args.m_max, args.repeats, args.line_trees
    if args.quick:
        m_max, repeats, line_trees = min(m_max, 10), min(repeats, 2), min(line_trees, 50)
        print(f"--quick: M <= {m_max}, {repeats} repeats, {line_trees} line trees")
    if m_max < 1 or repeats < 1 or line_trees < 1:
        raise ValueError("need --m-max >= 1, --repeats >= 1, --line-trees >= 1")
    parts = PARTS if args.part == "all" else (args.part,)
    if "kernel" in parts:
        run_kernel(args, m_max, repeats)
    if "cpu" in parts:
        run_cpu(args, m_max, repeats)
    if "line" in parts:
        run_line(args, line_trees)
    return 0
