"""Fig. 6 of Balog et al. (2016, Sec. 8.1): CPU test error against the number
M of non-zero features per point, ridge regression with δ² = 1e-4 at
λ = 1e-6, for the Mondrian kernel, random binning and random Fourier
features, with the exact Laplace kernel ridge line."""
from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.kernel_ridge import KernelRidge

from ..datasets import load_cpu
from ..metrics import relative_error
from ..ridge import ridge_solve
from ._common import output_path, pyplot_or_none, save_figure, write_csv
from ._family import LABELS, METHODS, plot_summary, prefix_maps, summarize

DESCRIPTION = "Fig. 6: CPU test error vs non-zero features (Mondrian, binning, Fourier, exact Laplace)"

AUTHORS_AT_50 = {"mondrian": 7.22, "binning": 7.37, "fourier": 5.58, "exact": 3.12}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lifetime", type=float, default=1e-6, help="lambda (1e-6)")
    parser.add_argument("--alpha", type=float, default=1e-4, help="ridge delta^2 (1e-4)")
    parser.add_argument("--m-max", type=int, default=50, help="largest M (50)")
    parser.add_argument("--repeats", type=int, default=5, help="independent repeats (5)")
    parser.add_argument("--seed", type=int, default=0, help="seed (0)")
    parser.add_argument("--quick", action="store_true",
                        help="M <= 10, 1 repeat, 1500 training points (exact line included)")


def run(args: argparse.Namespace) -> int:
    data = load_cpu()
    X, y, X_te, y_te = data.X_train, data.y_train, data.X_test, data.y_test
    m_max, repeats = args.m_max, args.repeats
    if args.quick:
        m_max, repeats = min(m_max, 10), 1
        keep = np.random.default_rng(args.seed).choice(X.shape[0], 1500, replace=False)
        X, y = X[keep], y[keep]
        print(f"--quick: {X.shape[0]} of {data.X_train.shape[0]} training points, "
              f"M <= {m_max}, 1 repeat")
    if m_max < 2 or repeats < 1 or not args.lifetime > 0 or not args.alpha > 0:
        raise ValueError("need --m-max >= 2, --repeats >= 1, --lifetime > 0, --alpha > 0")
    mean = y.mean()

    t = time.perf_counter()
    krr = KernelRidge(kernel="laplacian", gamma=args.lifetime, alpha=args.alpha).fit(X, y - mean)
    exact = relative_error(y_te, krr.predict(X_te) + mean)
    print(f"exact Laplace kernel ridge (sklearn KernelRidge, N = {X.shape[0]}): "
          f"{exact:.2f} % in {time.perf_counter() - t:.1f} s  [paper: 3.12 %]")

    rows = []
    seeds = np.random.SeedSequence(args.seed)
    for r, child in enumerate(seeds.spawn(repeats)):
        for method, s in zip(METHODS, child.spawn(len(METHODS))):
            for M, Phi, Phi_te in prefix_maps(method, X, X_te, args.lifetime, m_max, s):
                coef = ridge_solve(Phi, y - mean, args.alpha).coef
                rows.append((method, M, r, relative_error(y_te, Phi_te @ coef + mean)))
    rows.append(("exact", "", "", exact))
    write_csv(output_path(args.out, "fig6.csv"),
              ["method", "nonzeros_per_point", "repeat", "test_error_percent"], rows)
    summary = summarize(rows[:-1])
    top = max(M for _, M, _, _ in rows[:-1])
    print(f"test error at M = {top} (mean ± sd over {repeats} repeats; authors' code at 50 "
          f"in brackets):")
    for method in METHODS:
        mean, sd = summary[method][top]
        print(f"  {LABELS[method]:17s} {mean:.2f} ± {sd:.2f} %   "
              f"[{AUTHORS_AT_50[method]:.2f} %]")
    plt = pyplot_or_none()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        plot_summary(ax, summary)
        ax.axhline(exact, color="black", lw=2, label=f"exact Laplace ({exact:.2f} %)")
        ax.set_ylabel("relative test error [%]")
        ax.legend(frameon=False)
        save_figure(plt, fig, output_path(args.out, "fig6.png"))
    return 0
