#!/usr/bin/env python
"""MondrianKernelRidge and SSGP on Dask against the in-memory fit, per row.

On ``LocalCluster(n_workers=2, threads_per_worker=1, memory_limit=...)``:
a synthetic regression set of ``--rows`` rows x 10 features generated lazily
by dask (uniform X, y = sin(3 x0) + x1 x2 + 0.1 noise), fitted by
``MondrianKernelRidge(n_trees=100)`` and by
``SparseSpectrumGPRegressor(256)`` at its defaults (above 80 000 rows:
trained on a 20 000-row subsample gathered to the client, then refined by
Newton steps, each a pass over all rows on the cluster); then the same
estimators in memory on ``--memory-rows`` rows of the same law.  Printed:
fit times, time per row and its ratio (dask / in-memory; goal <= 3), the
workers' peak resident memory (getrusage) against the limit, and whether
any worker spilled to disk.

    python asv_bench/dask_scale.py --rows 10000000 --memory-rows 1000000
    python asv_bench/dask_scale.py --rows 1000000 --memory-rows 200000   # a trial
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np


def synthetic_numpy(n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 10))
    y = np.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(n)
    return X, y


def synthetic_dask(n: int, seed: int, chunk: int):
    import dask.array as da
    state = da.random.default_rng(seed)
    X = state.random((n, 10), chunks=(chunk, 10))
    noise = state.standard_normal(n, chunks=chunk)
    y = da.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * noise
    return X, y


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def spilled(dask_worker) -> int:
    data = getattr(dask_worker, "data", None)
    slow = getattr(data, "slow", None)
    return len(slow) if slow is not None else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--memory-rows", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=250_000)
    parser.add_argument("--memory-limit", default="2GiB")
    parser.add_argument("--lifetime", type=float, default=0.5,
                        help="about 1.5^10 = 58 cells per tree: C <= 6000, a dense Gram matrix")
    parser.add_argument("--ssgp-iter", type=int, default=1000,
                        help="max_iter of the SSGP fits (default: the estimator's)")
    parser.add_argument("--skip-ssgp", action="store_true")
    parser.add_argument("--skip-ridge", action="store_true")
    args = parser.parse_args()

    from dask.distributed import Client, LocalCluster

    from mondrian import MondrianKernelRidge
    from mondrian.gp import SparseSpectrumGPRegressor

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, memory_limit=args.memory_limit,
                           dashboard_address=":0")
    client = Client(cluster)
    X, y = synthetic_dask(args.rows, 0, args.chunk)
    Xm, ym = synthetic_numpy(args.memory_rows, 1)
    rows = []
    models = []
    if not args.skip_ridge:
        models.append(("MondrianKernelRidge(100)",
                       lambda: MondrianKernelRidge(n_trees=100, lifetime=args.lifetime,
                                                   alpha=1.0, random_state=0)))
    if not args.skip_ssgp:
        models.append(("SSGP(p=256)", lambda: SparseSpectrumGPRegressor(
            256, max_iter=args.ssgp_iter, random_state=0)))
    for name, make in models:
        t = time.perf_counter()
        fitted = make().fit(X, y)
        t_dask = time.perf_counter() - t
        detail = ""
        if hasattr(fitted, "n_refine_steps_"):
            detail = f" ({fitted.n_refine_steps_} Newton steps on all rows)"
        t = time.perf_counter()
        fitted_m = make().fit(Xm, ym)
        t_mem = time.perf_counter() - t
        if hasattr(fitted_m, "n_refine_steps_"):
            detail += f" (in memory: {fitted_m.n_refine_steps_})"
        ratio = (t_dask / args.rows) / (t_mem / args.memory_rows)
        rows.append((name, t_dask, t_mem, ratio))
        print(f"{name}: dask {args.rows} rows {t_dask:.1f} s, in memory {args.memory_rows} rows "
              f"{t_mem:.1f} s; time per row ratio {ratio:.2f} (goal <= 3){detail}", flush=True)
    peaks = client.run(peak_rss_mib)
    spills = client.run(spilled)
    print(f"workers' peak RSS (MiB): {sorted(round(v) for v in peaks.values())}, limit "
          f"{args.memory_limit}; keys spilled to disk: {sum(spills.values())}")
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
