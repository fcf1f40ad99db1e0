"""Fig. 1 of Hoang, Hoang, Pham & Woodruff (2020): test RMSE of the sparse-
spectrum GP on abalone along its training, with and without the
disentangling embedding of Sec. 3.3, at p = 16, 32 and 64 spectral points,
with the exact GP as the reference line.

* Data: UCI abalone with the split the authors' code reads
  (``abalone.train``, the first 2927 rows; ``abalone.test``, the last 1250;
  see ``abalone/PROVENANCE.md``).  Inputs: the sex one-hot coded (M, F, I)
  and the seven physical measurements; target: the number of rings.
* "ssgp": :class:`~mondrian.gp.SparseSpectrumGPRegressor` on the inputs,
  with its spectral points sampled and fixed (the model of the paper's
  analysis; ``--optimize-frequencies`` trains them too, as the SSGP of
  Lázaro-Gredilla et al. does).
  "ssgp-embedding": the same regressor on
  :class:`~mondrian.gp.DisentanglingEmbedding` of the inputs (encoder means,
  α = 8, β = 1.2 as in the paper's Appendix C), one embedding per seed fitted
  on the training inputs and shared by every p.
* "RMSE per iteration": after every L-BFGS-B iteration (the regressor's
  ``callback``) of the run the regressor keeps (its defaults make 4 and 1
  further runs at p = 16 and 32 here, none with ``--optimize-frequencies``:
  ``n_restarts='auto'``; the lowest final NLML is kept) the current model
  predicts the test set; its RMSE and
  negative log predictive density NLPD = mean −log N(y*; μ*, σ*²) (σ*²
  with the noise) are recorded.  The last iteration's values are the final
  RMSE and NLPD.
* "exact-gp": :func:`~mondrian.gp.exact_gp_regressor` (scikit-learn's exact GP
  with the SSGP's kernel, initialisation and bounds).  scikit-learn's
  gradient of the evidence builds an n × n × (D + 2) tensor: at n = 2927 one
  evaluation takes about 20 s here and training several minutes per
  L-BFGS iteration, so by default the hyperparameters are trained on a
  seeded random subset of ``--exact-train-size`` training points and the
  exact posterior at those hyperparameters is then conditioned on all 2927
  (said in the output; ``--exact-train-size 0`` trains on all of them).

The curves of a seed end when L-BFGS-B stops; averages over seeds carry a
finished run's last value forward to the longest run's length.
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..datasets import TrainTestData
from ..datasets.shared import _folder
from ..gp import DisentanglingEmbedding, SparseSpectrumGPRegressor, exact_gp_regressor
from ._common import output_path, pyplot_or_none, save_figure, write_csv

DESCRIPTION = ("SSGP paper's Fig. 1 (Hoang et al. 2020): abalone test RMSE along training of "
               "the SSGP with and without the disentangling embedding, p = 16, 32, 64, exact GP")

METHODS = ("ssgp", "ssgp-embedding")
LABELS = {"ssgp": "SSGP", "ssgp-embedding": "SSGP on the embedding", "exact-gp": "exact GP"}
HEADER = ["method", "p", "seed", "iteration", "test_rmse", "test_nlpd", "final", "converged",
          "n_train", "n_test", "seconds"]
_SEXES = ("M", "F", "I")


def load_abalone(data_home=None) -> TrainTestData:
    """UCI abalone with the authors' sequential split: 2927 training rows
    (``abalone.train``), 1250 test rows (``abalone.test``).

    Features: the sex one-hot coded (columns M, F, I) and the seven
    physical measurements (length, diameter, height, whole, shucked, viscera
    and shell weight, as in the file: the UCI values divided by 200); target:
    the number of rings (float).
    """
    folder = _folder(data_home, "abalone", ("abalone.train", "abalone.test"))

    def read(name):
        rows = [line.strip().split(",") for line in (folder / name).read_text().splitlines()
                if line.strip()]
        if any(len(r) != 9 or r[0] not in _SEXES for r in rows):
            raise ValueError(f"{folder / name}: expected 9 columns with sex in {_SEXES}")
        sex = np.array([[r[0] == s for s in _SEXES] for r in rows], dtype=np.float64)
        num = np.array([[float(v) for v in r[1:9]] for r in rows], dtype=np.float64)
        return np.hstack([sex, num[:, :7]]), num[:, 7]

    X_train, y_train = read("abalone.train")
    X_test, y_test = read("abalone.test")
    return TrainTestData("abalone", X_train, y_train, X_test, y_test)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-home", default=None,
                        help="directory with abalone/ (default $MONDRIAN_DATA or ../shared/data)")
    parser.add_argument("--p", type=int, nargs="+", default=[16, 32, 64],
                        help="numbers of spectral points (16 32 64)")
    parser.add_argument("--seeds", type=int, default=5, help="independent runs, seeds 0.. (5)")
    parser.add_argument("--max-iter", type=int, default=100,
                        help="L-BFGS-B iterations of each SSGP (100)")
    parser.add_argument("--optimize-frequencies", action="store_true",
                        help="train the spectral points with the hyperparameters (Lazaro-Gredilla "
                             "et al.'s SSGP); default: sampled and fixed, the model of Hoang et "
                             "al.'s analysis")
    parser.add_argument("--alpha", type=float, default=8.0, help="embedding alpha (8.0)")
    parser.add_argument("--beta", type=float, default=1.2, help="embedding beta (1.2)")
    parser.add_argument("--embedding-epochs", type=int, default=100,
                        help="epochs of the embedding's Adam training (100)")
    parser.add_argument("--embedding-output", choices=["latent", "reconstruction"],
                        default="latent",
                        help="SSGP inputs: encoder means (latent) or their decoding (reconstruction)")
    parser.add_argument("--exact-train-size", type=int, default=1000,
                        help="training points on which the exact GP's hyperparameters are "
                             "trained (1000; 0: all)")
    parser.add_argument("--exact-max-iter", type=int, default=100,
                        help="L-BFGS-B iterations of the exact GP (100)")
    parser.add_argument("--no-exact", action="store_true", help="skip the exact GP")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 300 training / 200 test points, p = 4 8, one seed, "
                             "5 iterations, 3 embedding epochs, exact GP on 100 points")


def _scores(model, X_test, y_test) -> tuple[float, float]:
    """Test RMSE and NLPD = mean −log N(y*; μ*, σ*²) of a GP's predictions."""
    mean, std = model.predict(X_test, return_std=True)
    rmse = float(np.sqrt(np.mean((mean - y_test) ** 2)))
    var = std ** 2
    nlpd = float(np.mean(0.5 * np.log(2.0 * np.pi * var) + 0.5 * (y_test - mean) ** 2 / var))
    return rmse, nlpd


def _fit_ssgp(p, seed, max_iter, optimize_frequencies, X, y, X_test, y_test):
    """Fit one SSGP, recording (iteration, rmse, nlpd) after every iteration
    of the run it keeps (``n_restarts='auto'`` makes several runs on few
    spectral points; the kept one has the lowest final NLML)."""
    traces: dict[int, list] = {}

    def record(est, restart, iteration):
        traces.setdefault(restart, []).append((iteration, *_scores(est, X_test, y_test)))

    model = SparseSpectrumGPRegressor(n_components=p, max_iter=max_iter, random_state=seed,
                                      optimize_frequencies=optimize_frequencies, callback=record)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(X, y)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    for w in caught:
        if not issubclass(w.category, ConvergenceWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    final = _scores(model, X_test, y_test)
    trace = traces.get(int(np.argmin(model.nlml_restarts_)), [])
    if not trace or trace[-1][1:] != final:
        trace.append((model.n_iter_, *final))
    return trace, converged


def run(args: argparse.Namespace) -> int:
    data = load_abalone(args.data_home)
    X, y, X_te, y_te = data.X_train, data.y_train, data.X_test, data.y_test
    ps, seeds, max_iter, epochs = list(args.p), args.seeds, args.max_iter, args.embedding_epochs
    exact_size, exact_iter = args.exact_train_size, args.exact_max_iter
    if args.quick:
        keep = np.random.default_rng(0).choice(X.shape[0], 300, replace=False)
        X, y = X[keep], y[keep]
        X_te, y_te = X_te[:200], y_te[:200]
        ps, seeds, max_iter, epochs = [4, 8], 1, 5, 3
        exact_size, exact_iter = 100, 5
    if (min(ps) < 1 or seeds < 1 or max_iter < 1 or epochs < 1 or exact_size < 0
            or exact_iter < 1 or not args.alpha >= 0 or not args.beta >= 0):
        raise ValueError("need --p >= 1, --seeds >= 1, --max-iter >= 1, --embedding-epochs >= 1, "
                         "--exact-train-size >= 0, --exact-max-iter >= 1, --alpha, --beta >= 0")
    n, n_te = X.shape[0], X_te.shape[0]
    print(f"abalone: {n} training, {n_te} test points, {X.shape[1]} inputs; p = {ps}, "
          f"{seeds} seed(s), {max_iter} L-BFGS-B iterations, spectral points "
          f"{'trained' if args.optimize_frequencies else 'fixed'}; embedding alpha={args.alpha}, "
          f"beta={args.beta}, {epochs} epochs, output={args.embedding_output}")
    rows = []
    for seed in range(seeds):
        t0 = time.perf_counter()
        emb = DisentanglingEmbedding(alpha=args.alpha, beta=args.beta, max_epochs=epochs,
                                     output=args.embedding_output, random_state=seed)
        Z, Z_te = emb.fit_transform(X), emb.transform(X_te)
        sizes = np.bincount(emb.predict_cluster(X), minlength=emb.n_clusters)
        print(f"seed {seed}: embedding in {time.perf_counter() - t0:.1f} s, radius "
              f"{emb.radius_:.3g}, training points per prior component {sizes.tolist()}")
        inputs = {"ssgp": (X, X_te), "ssgp-embedding": (Z, Z_te)}
        for p in ps:
            for method in METHODS:
                A, A_te = inputs[method]
                t0 = time.perf_counter()
                trace, converged = _fit_ssgp(p, seed, max_iter, args.optimize_frequencies,
                                             A, y, A_te, y_te)
                seconds = time.perf_counter() - t0
                for k, (it, rmse, nlpd) in enumerate(trace):
                    last = k == len(trace) - 1
                    rows.append([method, p, seed, it, rmse, nlpd, int(last), int(converged),
                                 n, n_te, round(seconds, 3) if last else ""])
                print(f"  p={p:3d} {method:15s} RMSE {trace[-1][1]:.4f}  NLPD {trace[-1][2]:.4f}"
                      f"  ({trace[-1][0]} iterations{'' if converged else ', at max-iter'}, "
                      f"{seconds:.1f} s)")
    exact = None
    if not args.no_exact:
        t0 = time.perf_counter()
        sub = (np.arange(n) if exact_size == 0 or exact_size >= n else
               np.sort(np.random.default_rng(0).choice(n, exact_size, replace=False)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            trained = exact_gp_regressor(X[sub], y[sub], max_iter=exact_iter)
        converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
        theta = trained.kernel_.theta
        model = (trained if sub.size == n else
                 exact_gp_regressor(X, y, theta=theta, optimize=False))
        rmse, nlpd = _scores(model, X_te, y_te)
        seconds = time.perf_counter() - t0
        exact = (rmse, nlpd)
        rows.append(["exact-gp", "", "", "", rmse, nlpd, 1, int(converged), n, n_te,
                     round(seconds, 3)])
        print(f"exact GP (hyperparameters from {sub.size} points, conditioned on {n}): "
              f"RMSE {rmse:.4f}  NLPD {nlpd:.4f}  ({seconds:.1f} s)")

    write_csv(output_path(args.out, "ssgp_fig1.csv"), HEADER, rows)
    summary = _summary(rows, ps)
    print("final test RMSE / NLPD, mean ± sd over seeds:")
    for p in ps:
        for method in METHODS:
            (rm, rs), (nm, ns) = summary[(method, p)]
            print(f"  p={p:3d} {LABELS[method]:22s} RMSE {rm:.4f} ± {rs:.4f}   "
                  f"NLPD {nm:.4f} ± {ns:.4f}")
    plt = pyplot_or_none()
    if plt is not None:
        _plot(plt, rows, ps, exact, output_path(args.out, "ssgp_fig1.png"))
    return 0


def _summary(rows, ps):
    out = {}
    for p in ps:
        for method in METHODS:
            final = np.array([(r[4], r[5]) for r in rows
                              if r[0] == method and r[1] == p and r[6] == 1])
            sd = final.std(axis=0, ddof=1) if final.shape[0] > 1 else np.zeros(2)
            out[(method, p)] = ((final[:, 0].mean(), sd[0]), (final[:, 1].mean(), sd[1]))
    return out


def _curves(rows, method, p) -> np.ndarray:
    """RMSE per iteration, one row per seed, a finished run's last value
    carried forward to the longest run's length."""
    runs = {}
    for r in rows:
        if r[0] == method and r[1] == p:
            runs.setdefault(r[2], []).append(r[4])
    length = max(len(v) for v in runs.values())
    return np.array([v + [v[-1]] * (length - len(v)) for v in runs.values()])


def _plot(plt, rows, ps, exact, path) -> None:
    fig, axes = plt.subplots(1, len(ps), figsize=(4.2 * len(ps), 3.4), squeeze=False)
    colors = {"ssgp": "tab:blue", "ssgp-embedding": "tab:red"}
    for ax, p in zip(axes[0], ps):
        for method in METHODS:
            c = _curves(rows, method, p)
            it = np.arange(1, c.shape[1] + 1)
            ax.plot(it, c.mean(axis=0), color=colors[method], label=LABELS[method])
            if c.shape[0] > 1:
                ax.fill_between(it, c.min(axis=0), c.max(axis=0), color=colors[method],
                                alpha=0.2, lw=0)
        if exact is not None:
            ax.axhline(exact[0], color="k", ls="--", lw=1, label=LABELS["exact-gp"])
        ax.set_title(f"p = {p}")
        ax.set_xlabel("L-BFGS-B iteration")
        ax.set_ylabel("test RMSE (rings)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("abalone: mean over seeds (band: min-max)", fontsize=9)
    save_figure(plt, fig, path)
