"""SSGP at scale (issue 11): 10⁶ synthetic rows × 8 inputs, p = 256.

    python asv_bench/ssgp_scale.py [--rows 1000000] [--p 256] [--repeat 3]

Prints, in one process:

* the BLAS limit: one ΦᵀΦ product over all rows, accumulated over the
  blocks the SSGP uses (numpy's ``Pb.T @ Pb``, a BLAS syrk, on a fixed
  block of features: the product alone, no feature construction);
* one NLML-and-gradient evaluation over all rows (two passes: features and
  ΦᵀΦ, then features again and the gemm ΦM of the gradient) and its ratio
  to that product (minimum over ``--repeat`` runs of each);
* the whole fit of ``SparseSpectrumGPRegressor(p, random_state=0)`` at its
  defaults (``subsample='auto'``: training on 20 000 rows, then Newton
  refinement on all rows), its wall time, test RMSE on 10⁵ fresh rows,
  the number of passes over all rows, and the process's peak RSS.

The data: x ~ N(0, I₈), y = sin(1.5 x₁) + ½ x₂x₃ + cos x₄ + 0.3 ε.
"""
import argparse
import resource
import time

import numpy as np

from mondrian.gp import SparseSpectrumGPRegressor
from mondrian.gp import ssgp


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
    args = parser.parse_args()
    n, p = args.rows, args.p
    X, y = data(n, 0)
    X_test, y_test = data(100_000, 1)
    m2 = 2 * p
    rows = ssgp._block_rows(n, m2, None)

    rng = np.random.default_rng(2)
    block = rng.standard_normal((rows, m2))
    syrk, syrk_cpu = [], []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        G = np.zeros((m2, m2))
        for start in range(0, n, rows):
            Pb = block[:min(rows, n - start)]
            G += Pb.T @ Pb
        syrk.append(time.perf_counter() - t0)
        syrk_cpu.append(time.process_time() - c0)
    del block

    yn = (y - y.mean()) / y.std()
    yy = float(yn @ yn)
    eps = rng.standard_normal((p, 8))
    theta = ssgp.initial_theta(X, yn)
    evals, evals_cpu = [], []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        with ssgp._blas_limit(n, m2):
            ssgp._nlml(X, yn, yy, eps, theta, gradient=True, block_size=None)
        evals.append(time.perf_counter() - t0)
        evals_cpu.append(time.process_time() - c0)
    print(f"{n} rows x 8, p = {p} (blocks of {rows} rows)")
    print(f"  one PhiT Phi product (syrk), min of {args.repeat}: {min(syrk):.2f} s wall, "
          f"{min(syrk_cpu):.2f} s CPU")
    print(f"  one NLML-and-gradient evaluation, min of {args.repeat}: {min(evals):.2f} s wall "
          f"= {min(evals) / min(syrk):.2f} x the product; {min(evals_cpu):.2f} s CPU = "
          f"{min(evals_cpu) / min(syrk_cpu):.2f} x")

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
