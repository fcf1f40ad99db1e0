"""SSGP at scale (issue 11): 10⁶ synthetic rows × 8 inputs, p = 256.

    python asv_bench/ssgp_scale.py [--rows 1000000] [--p 256] [--repeat 3]
                                   [--single-thread] [--skip-fit]

Prints, in one process (each figure the minimum over ``--repeat`` runs,
the runs of the different figures interleaved; with the load average):

* the BLAS limit: one ΦᵀΦ product over all rows, accumulated over the
  blocks the SSGP uses, on a fixed block of features (the product alone,
  no feature construction), two ways: numpy's ``Pb.T @ Pb`` (a BLAS syrk)
  with the BLAS's own threads, and the same syrk on one BLAS thread in
  each of two threads taking half the blocks each (the data-parallel
  split the evaluation uses) -- the faster of the two is the limit;
* one NLML-and-gradient evaluation over all rows (two passes: features,
  ΦᵀΦ and Φᵀy; then features again, the gemm ΦM and the pairing) and its
  ratio to each product; and the NLML alone (the first pass);
* with ``--single-thread``, the same evaluation and syrk on one thread
  (one worker, one BLAS thread): CPU-time ratios that the load of other
  processes hardly moves;
* unless ``--skip-fit``, the whole fit of
  ``SparseSpectrumGPRegressor(p, random_state=0)`` at its defaults
  (``subsample='auto'``: training on 20 000 rows, then Newton refinement on
  all rows), its wall time, test RMSE on 10⁵ fresh rows, the number of
  passes over all rows, and the process's peak RSS.

The data: x ~ N(0, I₈), y = sin(1.5 x₁) + ½ x₂x₃ + cos x₄ + 0.3 ε.
"""
import argparse
import os
import resource
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from mondrian.gp import SparseSpectrumGPRegressor
from mondrian.gp import ssgp
from mondrian.path.dual import blas_threads


def data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 8))
    y = (np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + np.cos(X[:, 3])
         + 0.3 * rng.standard_normal(n))
    return X, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--p", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-fit", action="store_true")
    parser.add_argument("--single-thread", action="store_true")
    args = parser.parse_args()
    n, p = args.rows, args.p
    X, y = data(n, 0)
    X_test, y_test = data(100_000, 1)
    m2 = 2 * p
    rows = ssgp._pass_rows(m2, None)

    rng = np.random.default_rng(2)
    blocks = [rng.standard_normal((rows, m2)) for _ in range(2)]
    starts = list(range(0, n, rows))

    def syrk_blocks(block, part):
        G = np.zeros((m2, m2))
        for start in part:
            Pb = block[:min(rows, n - start)]
            G += Pb.T @ Pb
        return G

    def syrk_blas_threads():
        syrk_blocks(blocks[0], starts)

    pool = ThreadPoolExecutor(2)

    def syrk_two_workers():
        with blas_threads(1):
            list(pool.map(syrk_blocks, blocks, (starts[0::2], starts[1::2])))

    yn = (y - y.mean()) / y.std()
    yy = float(yn @ yn)
    eps = rng.standard_normal((p, 8))
    theta = ssgp.initial_theta(X, yn)

    def evaluation(gradient=True):
        with ssgp._blas_limit(n, m2):
            ssgp._nlml(X, yn, yy, eps, theta, gradient=gradient, block_size=None)

    def single(f):
        def run():
            saved = ssgp._feature_threads
            ssgp._feature_threads = lambda n_, m2_: 1
            try:
                with blas_threads(1):
                    f()
            finally:
                ssgp._feature_threads = saved
        return run

    cases = {"syrk, BLAS threads": syrk_blas_threads, "syrk, 2 workers x 1 thread": syrk_two_workers,
             "evaluation": evaluation, "NLML only": lambda: evaluation(False)}
    if args.single_thread:
        cases["syrk, 1 thread"] = single(syrk_blas_threads)
        cases["evaluation, 1 thread"] = single(evaluation)
    wall = {k: [] for k in cases}
    cpu = {k: [] for k in cases}
    loads = []
    for _ in range(args.repeat):
        for name, f in cases.items():
            loads.append(os.getloadavg()[0])
            t0, c0 = time.perf_counter(), time.process_time()
            f()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    w = {k: min(v) for k, v in wall.items()}
    c = {k: min(v) for k, v in cpu.items()}
    limit = min(w["syrk, BLAS threads"], w["syrk, 2 workers x 1 thread"])
    print(f"{n} rows x 8, p = {p} (blocks of {rows} rows); 1-min load average during the "
          f"runs {min(loads):.1f}-{max(loads):.1f}; min of {args.repeat}")
    for name in cases:
        print(f"  {name:28s} {w[name]:7.2f} s wall ({w[name] / limit:.2f} x the limit, "
              f"{w[name] / w['syrk, BLAS threads']:.2f} x numpy's syrk), {c[name]:7.2f} s CPU  "
              f"[{', '.join(f'{v:.2f}' for v in wall[name])}]")
    if args.single_thread:
        print(f"  one thread: evaluation / syrk = "
              f"{c['evaluation, 1 thread'] / c['syrk, 1 thread']:.2f} (CPU time)")

    if args.skip_fit:
        return
    passes = [0]
    original = ssgp._nlml

    def counting(Xa, *a, **k):
        if Xa.shape[0] == n:
            passes[0] += 1
        return original(Xa, *a, **k)

    ssgp._nlml = counting
    t0, c0 = time.perf_counter(), time.process_time()
    model = SparseSpectrumGPRegressor(p, random_state=0).fit(X, y)
    fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
    ssgp._nlml = original
    rmse = float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  fit at the defaults: {fit_s:.1f} s wall, {fit_cpu:.1f} s CPU (trained on {model.subsample_rows_} rows, "
          f"{model.n_iter_ - model.n_refine_steps_} L-BFGS-B iterations there, "
          f"{model.n_refine_steps_} Newton steps on all rows, {passes[0]} evaluations "
          f"over all rows); test RMSE {rmse:.4f} (noise 0.3); peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
