"""``python -m mondrian online``: exact online ridge on a stream, prequentially.

Streams the training data (the bundled CPU data by default, in its arrival
order, or shuffled with ``--seed``) through
:class:`~mondrian.MondrianKernelRidge` ``.partial_fit`` in batches, prints
the progressive validation error every ``--every`` points
(:func:`mondrian.online.prequential`), then the test error of the online
model and of the batch model fitted on all the training data, and plots the
learning curve beside the batch model's errors (``online.png`` in
``--output-dir``; skipped without matplotlib).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ._args import (add_dataset_arguments, add_forest_arguments, add_output_argument,
                    load_dataset, nonneg_float, nonneg_int, positive_float, positive_int,
                    prepare_output_dir)

__all__ = ["add_command", "run"]


def add_command(subparsers) -> None:
    """Register ``online`` on the CLI's subparsers."""
    p = subparsers.add_parser(
        "online", help="exact online Mondrian kernel ridge on a stream, with its learning curve",
        description="Stream the training data through MondrianKernelRidge.partial_fit "
                    "(exact online ridge, paper Sec. 5), print the progressive validation "
                    "error 100*||y_hat-y||/||y|| every --every points and compare with the "
                    "batch model.  Default: the bundled CPU data in arrival order.")
    add_dataset_arguments(p)
    p.add_argument("--lifetime", type=nonneg_float, default=None,
                   help="kernel lifetime; default 1e-6 for CPU, "
                        "10 / (L1 diameter of the training data) for --dataset")
    p.add_argument("--alpha", type=positive_float, default=0.1,
                   help="ridge regularisation (default 0.1)")
    p.add_argument("--batch-size", type=positive_int, default=256,
                   help="points per partial_fit call (default 256)")
    p.add_argument("--every", type=positive_int, default=500,
                   help="report the progressive error every this many points (default 500)")
    p.add_argument("--seed", type=nonneg_int, default=None,
                   help="shuffle the stream with this seed (default: arrival order)")
    # 100 trees: each batch updates a Cholesky factor of C ~ 15·M columns in O(C²).
    add_forest_arguments(p, n_trees=100)
    add_output_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Body of ``python -m mondrian online``."""
    from ..experiments._common import pyplot_or_none, save_figure
    from ..metrics import relative_error
    from ..online import prequential
    from ..ridge import MondrianKernelRidge

    data, lifetime, how = load_dataset(args, args.lifetime, per_diameter=10.0)
    out_dir = prepare_output_dir(args.output_dir)
    X, y = data.X_train, data.y_train
    order = "arrival order"
    if args.seed is not None:
        perm = np.random.default_rng(args.seed).permutation(X.shape[0])
        X, y = X[perm], y[perm]
        order = f"shuffled with seed {args.seed}"
    print(data.describe() + f"; stream: the training data in {order}")

    def model():
        return MondrianKernelRidge(n_trees=args.n_trees, lifetime=lifetime, alpha=args.alpha,
                                   solver=args.solver, random_state=args.random_state,
                                   n_jobs=args.n_jobs)

    print(f"model: MondrianKernelRidge(n_trees={args.n_trees}, lifetime={lifetime:.6g}{how}, "
          f"alpha={args.alpha:g}, solver={args.solver!r}), batches of {args.batch_size}")
    print(f"{'points':>8}  {'progressive error %':>20}")
    result = prequential(model(), X, y, batch_size=args.batch_size, report_every=args.every,
                         callback=lambda n, e: print(f"{n:>8}  {e:>20.2f}", flush=True))
    online = result.model
    online_test = relative_error(data.y_test, online.predict(data.X_test))
    t0 = time.perf_counter()
    batch = model().fit(X, y)
    t_batch = time.perf_counter() - t0
    batch_test = relative_error(data.y_test, batch.predict(data.X_test))
    print(f"online: {result.seconds[-1]:.2f} s for {X.shape[0]} points, "
          f"{online.coef_.shape[0]} columns; test error {online_test:.2f} %")
    print(f"batch fit on all points: {t_batch:.2f} s, {batch.coef_.shape[0]} columns; "
          f"test error {batch_test:.2f} %")
    plt = pyplot_or_none()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(result.n_seen, result.error, marker="o", ms=3,
                label="online: progressive validation error")
        ax.axhline(batch_test, color="k", ls="--", label="batch fit on all points: test error")
        ax.axhline(online_test, color="C1", ls=":", label="online model at the end: test error")
        ax.set_xlabel("points learnt")
        ax.set_ylabel("100·‖ŷ − y‖ / ‖y‖  (%)")
        ax.set_title(f"Exact online Mondrian kernel ridge (M = {args.n_trees}, "
                     f"λ = {lifetime:.3g})")
        ax.legend()
        save_figure(plt, fig, out_dir / "online.png")
    return 0
