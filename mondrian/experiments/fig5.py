"""Fig. 5 of Balog et al. (2016, Sec. 8.1): maximum absolute error of the
Laplace-kernel approximation on all pairs of 100 uniform points in [0, 1]²,
λ = 10, against the number M of non-zero features per point, for the
Mondrian kernel, random binning and random Fourier features."""
from __future__ import annotations

import argparse

import numpy as np

from ..kernels import laplace_kernel
from ._common import output_path, pyplot_or_none, save_figure, write_csv
from ._family import LABELS, METHODS, plot_summary, prefix_maps, summarize

DESCRIPTION = "Fig. 5: max kernel-approximation error vs non-zero features (Mondrian, binning, Fourier)"

# Means at M = 50 from the authors' script (experiment_1, 5 repeats), for reference.
AUTHORS_AT_50 = {"mondrian": 0.18, "binning": 0.16, "fourier": 0.51}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n-points", type=int, default=100, help="points in [0,1]^2 (100)")
    parser.add_argument("--lifetime", type=float, default=10.0, help="lambda (10)")
    parser.add_argument("--m-max", type=int, default=50, help="largest M (50)")
    parser.add_argument("--repeats", type=int, default=5, help="independent repeats (5)")
    parser.add_argument("--seed", type=int, default=0, help="seed (0)")
    parser.add_argument("--quick", action="store_true", help="M <= 10, 2 repeats")


def run(args: argparse.Namespace) -> int:
    m_max, repeats = (min(args.m_max, 10), min(args.repeats, 2)) if args.quick else \
        (args.m_max, args.repeats)
    if m_max < 2 or repeats < 1 or args.n_points < 2 or not args.lifetime > 0:
        raise ValueError("need --m-max >= 2, --repeats >= 1, --n-points >= 2, --lifetime > 0")
    seeds = np.random.SeedSequence(args.seed)
    X = np.random.default_rng(seeds.spawn(1)[0]).random((args.n_points, 2))
    K = laplace_kernel(X, lifetime=args.lifetime)
    rows = []
    for r, child in enumerate(seeds.spawn(repeats)):
        for method, s in zip(METHODS, child.spawn(len(METHODS))):
            for M, Phi, _ in prefix_maps(method, X, None, args.lifetime, m_max, s):
                K_hat = Phi @ Phi.T
                K_hat = K_hat.toarray() if hasattr(K_hat, "toarray") else K_hat
                rows.append((method, M, r, float(np.abs(K_hat - K).max())))
    write_csv(output_path(args.out, "fig5.csv"),
              ["method", "nonzeros_per_point", "repeat", "max_abs_error"], rows)
    summary = summarize(rows)
    top = max(M for _, M, _, _ in rows)
    print(f"max |k - k_M| over all {args.n_points}^2 pairs at M = {top} "
          f"(mean ± sd over {repeats} repeats; authors' code at 50 in brackets):")
    for method in METHODS:
        mean, sd = summary[method][top]
        print(f"  {LABELS[method]:17s} {mean:.3f} ± {sd:.3f}   [{AUTHORS_AT_50[method]:.2f}]")
    plt = pyplot_or_none()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        plot_summary(ax, summary)
        ax.set_ylabel("maximum absolute error")
        ax.set_ylim(0, 1.2)
        ax.legend(frameon=False)
        save_figure(plt, fig, output_path(args.out, "fig5.png"))
    return 0

