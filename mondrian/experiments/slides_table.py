"""The table of Kar & Karnick's random-features slides (2012): exact kernel
SVMs (libsvm through scikit-learn's ``SVC``) against random features with a
linear SVM (liblinear through ``LinearSVC``) on nursery, cod-rna, adult (a9a)
and covertype: accuracy, training and test time, speed-ups.

Exact: ``SVC`` with the exponential dot-product kernel exp(⟨x, y⟩/σ²) (a
callable, so libsvm receives its Gram matrix) and with the Gaussian kernel
exp(-‖x - y‖²/(2σ²)) (libsvm's built-in 'rbf').  Random features:
``RandomFourierFeatures`` (Gaussian, 2·250 = 500 features, the slides' "RF")
and ``RandomMaclaurinFeatures`` (exponential, H0/1, 100 random features,
the slides' "H0/1"), each followed by ``LinearSVC``.  Added row:
``MondrianKernelClassifierCV`` at its default parameters (width and C
chosen from the training data, the Laplace kernel, a converged logistic
regression; ``random_state=seed`` only), which -- unlike the other rows,
run at the slides' fixed σ² and C -- tunes itself.

Inputs are min-max scaled to [0, 1] on the training data and divided by
√D, so that every row has norm ≤ 1 (Kar & Karnick normalise the data; the
exponential kernel's random Maclaurin features need bounded norms).  The exact SVMs need the
N×N Gram matrix (the exponential kernel reaches libsvm as a callable, so
scikit-learn materialises it: 1.2 GB at N = 12000) or O(N²) kernel
evaluations, and run for minutes beyond that; so they are trained on a
random subsample of at most ``--svm-max-train`` points (said in the output);
the random-feature pipelines are timed on that same subsample (for the
speed-ups) and on the whole training set.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler
from sklearn.svm import SVC, LinearSVC

from ..datasets.shared import load_a9a, load_cod_rna, load_covertype, load_nursery
from ..features.fourier import RandomFourierFeatures
from ..kernels import exponential_kernel
from ..features.maclaurin import RandomMaclaurinFeatures
from ..path.estimators import MondrianKernelClassifierCV
from ._common import output_path, pyplot_or_none, save_figure, write_csv

DESCRIPTION = ("Slides' table (Kar & Karnick 2012): exact SVC vs Fourier / H0/1 Maclaurin "
               "features + LinearSVC vs MondrianKernelClassifierCV() on nursery, cod-rna, "
               "adult (the a9a split), covertype-100k")

LOADERS = {"nursery": load_nursery, "cod-rna": load_cod_rna, "adult": load_a9a,
           "covertype": load_covertype}
# The slides' numbers: (accuracy %, train s, test s) for K+libsvm, RF+liblinear, H0/1+liblinear.
SLIDES = {
    "nursery": ((99.8, 10.8, 1.7), (99.6, 2.52, 0.6), (97.96, 0.4, 0.18)),
    "cod-rna": ((95.2, 91.5, 17.1), (94.9, 11.5, 2.8), (93.8, 0.67, 1.4)),
    "adult": ((83.7, 263.3, 33.4), (82.9, 39.8, 14.3), (84.8, 7.18, 9.4)),
    "covertype": ((80.6, 194.1, 695.8), (76.2, 21.4, 207.0), (75.5, 3.7, 80.4)),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets", nargs="+", default=list(LOADERS), choices=list(LOADERS))
    parser.add_argument("--data-home", default=None,
                        help="directory with the datasets (default $MONDRIAN_DATA or ../shared/data)")
    parser.add_argument("--sigma2", type=float, default=0.1,
                        help="kernel width sigma^2 of both kernels (0.1)")
    parser.add_argument("--C", type=float, default=10.0, help="SVM regularisation C (10)")
    parser.add_argument("--svm-max-train", type=int, default=12000,
                        help="largest training set of the exact SVMs (12000: the callable "
                             "exponential kernel needs the N x N Gram matrix, 1.2 GB)")
    parser.add_argument("--max-test", type=int, default=20000, help="test points used (20000)")
    parser.add_argument("--rf-frequencies", type=int, default=250,
                        help="Fourier frequencies (250, i.e. 500 features)")
    parser.add_argument("--h01-components", type=int, default=100,
                        help="random Maclaurin features beyond degree 1 (100)")
    parser.add_argument("--seed", type=int, default=0, help="seed (0)")
    parser.add_argument("--quick", action="store_true",
                        help="500-point SVM subsample, 2000 training / 1000 test points")


def _predict_chunked(model, X: np.ndarray, chunk: int = 2000) -> np.ndarray:
    return np.concatenate([model.predict(X[s:s + chunk]) for s in range(0, X.shape[0], chunk)])


def _timed(model, X_tr, y_tr, X_te, y_te) -> tuple[float, float, float]:
    t0 = time.perf_counter()
    model.fit(X_tr, y_tr)
    t1 = time.perf_counter()
    pred = _predict_chunked(model, X_te)
    t2 = time.perf_counter()
    return 100.0 * float(np.mean(pred == y_te)), t1 - t0, t2 - t1


def run(args: argparse.Namespace) -> int:
    svm_max, max_test, max_train = args.svm_max_train, args.max_test, None
    if args.quick:
        svm_max, max_test, max_train = min(svm_max, 500), min(max_test, 1000), 2000
    if svm_max < 10 or max_test < 1 or not args.sigma2 > 0 or not args.C > 0:
        raise ValueError("need --svm-max-train >= 10, --max-test >= 1, --sigma2 > 0, --C > 0")
    rng = np.random.default_rng(args.seed)
    s2 = args.sigma2
    methods = {
        "svc-exponential": lambda: SVC(kernel=lambda A, B: exponential_kernel(A, B, s2), C=args.C),
        "svc-gaussian": lambda: SVC(kernel="rbf", gamma=1.0 / (2.0 * s2), C=args.C),
        "fourier+linearsvc": lambda: make_pipeline(
            RandomFourierFeatures(kernel="gaussian", length_scale=np.sqrt(s2),
                                  n_components=args.rf_frequencies, random_state=args.seed),
            LinearSVC(C=args.C)),
        "h01+linearsvc": lambda: make_pipeline(
            RandomMaclaurinFeatures(kernel="exponential", scale=s2,
                                    n_components=args.h01_components, h01=True,
                                    random_state=args.seed),
            LinearSVC(C=args.C)),
        "mondrian-classifier": lambda: MondrianKernelClassifierCV(random_state=args.seed),
    }
    header = ["dataset", "method", "n_train", "n_test", "n_features", "accuracy_percent",
              "train_seconds", "test_seconds", "train_speedup", "test_speedup", "note"]
    rows = []
    for name in args.datasets:
        data = LOADERS[name](args.data_home)
        root_d = np.sqrt(data.X_train.shape[1])
        prep = make_pipeline(MinMaxScaler(), FunctionTransformer(lambda X: X / root_d))
        prep.fit(data.X_train)
        X_tr, X_te = prep.transform(data.X_train), prep.transform(data.X_test)
        y_tr, y_te = data.y_train, data.y_test
        if max_train is not None and X_tr.shape[0] > max_train:
            keep = rng.choice(X_tr.shape[0], max_train, replace=False)
            X_tr, y_tr = X_tr[keep], y_tr[keep]
        if X_te.shape[0] > max_test:
            keep = rng.choice(X_te.shape[0], max_test, replace=False)
            X_te, y_te = X_te[keep], y_te[keep]
        sub = rng.choice(X_tr.shape[0], min(svm_max, X_tr.shape[0]), replace=False)
        note = (f"subsample {sub.size} of {X_tr.shape[0]} training points (exact SVM cost)"
                if sub.size < X_tr.shape[0] else "all training points")
        print(f"{name}: {X_tr.shape[0]} train, {X_te.shape[0]} test, {X_tr.shape[1]} features; "
              f"comparison on {note}")
        ref = None
        for method, make in methods.items():
            acc, t_tr, t_te = _timed(make(), X_tr[sub], y_tr[sub], X_te, y_te)
            if ref is None:
                ref = (t_tr, t_te)
                sp_tr = sp_te = ""
            else:
                sp_tr, sp_te = f"{ref[0] / t_tr:.1f}", f"{ref[1] / t_te:.1f}"
            rows.append([name, method, sub.size, X_te.shape[0], X_tr.shape[1], f"{acc:.2f}",
                         f"{t_tr:.3f}", f"{t_te:.3f}", sp_tr, sp_te, note])
            print(f"  {method:18s} acc {acc:6.2f} %  train {t_tr:8.3f} s  test {t_te:7.3f} s"
                  + (f"  speed-up {sp_tr}x / {sp_te}x" if sp_tr else ""))
        if sub.size < X_tr.shape[0]:
            for method in ("fourier+linearsvc", "h01+linearsvc", "mondrian-classifier"):
                acc, t_tr, t_te = _timed(methods[method](), X_tr, y_tr, X_te, y_te)
                rows.append([name, method, X_tr.shape[0], X_te.shape[0], X_tr.shape[1],
                             f"{acc:.2f}", f"{t_tr:.3f}", f"{t_te:.3f}", "", "",
                             "all training points"])
                print(f"  {method:18s} acc {acc:6.2f} %  train {t_tr:8.3f} s  test {t_te:7.3f} s"
                      f"  (all {X_tr.shape[0]} training points)")
        slides = SLIDES[name]
        print(f"  slides (full data): K+libsvm {slides[0][0]} %, RF+liblinear {slides[1][0]} %, "
              f"H0/1+liblinear {slides[2][0]} %")
    write_csv(output_path(args.out, "slides_table.csv"), header, rows)
    plt = pyplot_or_none()
    if plt is not None:
        _plot(plt, rows, output_path(args.out, "slides_table.png"))
    return 0


def _plot(plt, rows, png) -> None:
    """Accuracy and training time per dataset and method (the subsample rows)."""
    names = list(dict.fromkeys(r[0] for r in rows))
    methods = list(dict.fromkeys(r[1] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    width = 0.8 / len(methods)
    for k, method in enumerate(methods):
        acc, ttr = [], []
        for name in names:
            sel = [r for r in rows if r[0] == name and r[1] == method]
            acc.append(float(sel[0][5]))
            ttr.append(float(sel[0][6]))
        xs = np.arange(len(names)) + k * width
        axes[0].bar(xs, acc, width, label=method)
        axes[1].bar(xs, ttr, width, label=method)
    for ax, label in zip(axes, ("test accuracy [%]", "training time [s]")):
        ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names)
        ax.set_ylabel(label)
    axes[0].set_ylim(50, 100)
    axes[1].set_yscale("log")
    axes[1].legend(frameon=False, fontsize=7)
    save_figure(plt, fig, png)
