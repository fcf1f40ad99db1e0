#!/usr/bin/env python
"""Measure ``MondrianKernelRidgeCV().fit(X, y)`` at its defaults: accuracy, scaling, contention.

Every estimator parameter stays at its default except ``random_state``; the
script measures what the defaults issue asks of them.

accuracy
    On twelve regression sets (see ``SETS``) and for each seed: a seeded
    train/test split (at most 5,000 training rows, up to 5,000 test rows),
    X and y standardised with the training statistics (``cpu_raw`` keeps X
    raw), then three fits:

    (a) ``MondrianKernelRidgeCV(random_state=seed)``, timed in a fresh
        subprocess (so a slow fit can be stopped by ``--fit-timeout``);
    (b) the exact Laplace kernel ridge regression it approximates,
        ``KernelRidge(kernel='laplacian')`` (exp(-gamma |x - x'|_1), the
        Mondrian kernel's limit with gamma = lifetime), tuned by 3-fold
        ``GridSearchCV`` (n_jobs=2) over gamma = g0 * 2**k, k = -6..4,
        g0 = 1 / median L1 distance between training rows, and
        alpha = 10**(-4..1).  A choice at a grid edge widens the grid by two
        steps that way and scores the new points (up to ``MAX_WIDENINGS``
        times), so the reference is truly tuned; the *time* compared is that
        of the first, 66-point search plus one refit, the search a user
        would run (joblib's workers started beforehand, not timed);
    (c) ``HistGradientBoostingRegressor(random_state=seed)``.

    Printed: one row per set and seed (Mondrian RMSE / exact RMSE, the two
    times and their ratio, HGB RMSE / exact RMSE, the selected lifetime,
    the forest's terminal lifetime, alpha, trees and solver, the exact
    reference's gamma / g0 and alpha), then per-set medians and the goal
    count: a set meets the goal when its median RMSE ratio is <= 1.10 and
    its median Mondrian time is <= its median grid-search time / 5.
    RMSEs are in units of the standardised y.  Only ``fit`` is timed (not
    the subprocess's start-up and ``import mondrian``).

scaling
    Synthetic data, d = 8 standard normal features,
    y = sin(x0) + x1*x2 + 0.5*cos(x3 + x4) + 0.1*noise (so RMSE >= 0.1):
    fit time, time per 1000 rows, peak RSS (and the RSS before the fit: the
    interpreter, imports and data), RMSE on 2,000 held-out rows and
    the selection at N = 600 ... 10**6 rows, one fresh subprocess per size
    (so peaks do not accumulate) with a ``--timeout``; after a timeout the
    larger sizes are skipped.

contention
    The default fit on the 5,000-row synthetic set and on ``cpu_raw``
    (seed 0), ``--repeats`` times quietly and as many times while one extra
    busy-looping process runs; median quiet and loaded times and their ratio
    (goal <= 2.5).

Run it with the package installed (no network is used), e.g. from the repository root::

    python asv_bench/defaults_check.py --section accuracy --quick --seeds 0
    python asv_bench/defaults_check.py --section scaling --quick
    python asv_bench/defaults_check.py --section all --json defaults.json
    python asv_bench/defaults_check.py --sets energy,cpu_raw --seeds 0,1,2

``--quick``: accuracy on the sets of at most 1,000 training rows (``QUICK_SETS``)
with a 120 s limit per Mondrian fit, scaling up to 10**5 rows, one repeat in
contention.  The data directory is ``--data-home``, else ``$MONDRIAN_DATA``,
else ``../shared/data`` next to the repository.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_DATA_HOME = HERE.parent.parent / "shared" / "data"

MAX_TRAIN = 5000          # training rows at most (a random subset of bigger sets)
MAX_TEST = 5000           # test rows at most
TRAIN_FRACTION = 0.8      # of the rows, for sets smaller than MAX_TRAIN / TRAIN_FRACTION
RMSE_GOAL = 1.10          # Mondrian RMSE / exact RMSE
SPEED_GOAL = 5.0          # grid-search time / Mondrian time
CONTENTION_GOAL = 2.5     # loaded time / quiet time

GAMMA_STEPS = range(-6, 5)      # gamma = g0 * 2**k
ALPHA_STEPS = range(-4, 2)      # alpha = 10**k
MAX_WIDENINGS = 3
MEDIAN_ROWS = 1000              # rows used for the median L1 distance g0

SCALING_SIZES = (600, 5_000, 10_000, 100_000, 1_000_000)
QUICK_SCALING_MAX = 100_000
SCALING_TEST_ROWS = 2000
IMPORT_RETRIES = 3              # a package rebuilt by others mid-run: wait and retry
IMPORT_RETRY_WAIT = 60.0

#: Fitted attributes recorded when present (dotted: attribute or dict key of the one before).
FITTED_ATTRS = ("lifetime_", "alpha_", "n_trees", "n_trees_", "solver_", "features_.lifetime_",
                "path_time_", "path_.validation", "path_.stop_reason", "path_.scale")


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------
Arrays = tuple[np.ndarray, np.ndarray]


def data_home(arg: str | None) -> Path:
    """``--data-home``, else ``$MONDRIAN_DATA``, else ``../shared/data`` beside the repository."""
    return Path(arg or os.environ.get("MONDRIAN_DATA") or DEFAULT_DATA_HOME)


def _indexed_txt(folder: Path) -> Arrays:
    """UCI benchmark layout: data.txt plus 0-based index_features/index_target."""
    data = np.loadtxt(folder / "data.txt", ndmin=2)
    features = np.loadtxt(folder / "index_features.txt", dtype=np.int64, ndmin=1)
    target = int(np.loadtxt(folder / "index_target.txt", dtype=np.int64))
    return data[:, features], data[:, target]


def load_energy(home: Path) -> Arrays:
    """768 x 8, target heating load."""
    return _indexed_txt(home / "energy")


def load_concrete(home: Path) -> Arrays:
    """1030 x 8, target compressive strength."""
    return _indexed_txt(home / "concrete")


def load_protein(home: Path) -> Arrays:
    """45730 x 9, target RMSD."""
    return _indexed_txt(home / "protein_casp")


def load_ccpp(home: Path) -> Arrays:
    """9568 x 4 (AT, V, AP, RH), target PE; CSV with a header line, CRLF."""
    data = np.loadtxt(home / "ccpp" / "Folds5x2_pp.csv", delimiter=",", skiprows=1)
    return data[:, :4], data[:, 4]


def load_abalone(home: Path) -> Arrays:
    """4177 x 10 (sex one-hot M/F/I, 7 measurements), target rings;
    abalone.train and abalone.test pooled."""
    rows = [line.split(",") for part in ("abalone.train", "abalone.test")
            for line in (home / "abalone" / part).read_text().splitlines() if line.strip()]
    sex = np.array([row[0] for row in rows])
    numbers = np.array([row[1:] for row in rows], dtype=np.float64)
    one_hot = (sex[:, None] == np.array(["M", "F", "I"])).astype(np.float64)
    return np.hstack([one_hot, numbers[:, :-1]]), numbers[:, -1]


def load_cpu_pooled(home: Path) -> Arrays:
    """7373 x 21 raw features (the package's CPU data, train and test pooled)."""
    from mondrian.datasets import load_cpu

    data = load_cpu()
    return np.vstack([data.X_train, data.X_test]), np.concatenate([data.y_train, data.y_test])


def load_diabetes(home: Path) -> Arrays:
    """442 x 10, scikit-learn's bundled copy."""
    from sklearn.datasets import load_diabetes as sklearn_diabetes

    return sklearn_diabetes(return_X_y=True)


@dataclass(frozen=True)
class RegressionSet:
    """A loader and how its seeded split is used."""

    load: Callable[[Path], Arrays]
    max_train: int = MAX_TRAIN   # < MAX_TRAIN: a random subsample of the train split
    scale_X: bool = True         # False: X stays raw (y is still standardised)


SETS: dict[str, RegressionSet] = {
    "energy": RegressionSet(load_energy),
    "concrete": RegressionSet(load_concrete),
    "ccpp": RegressionSet(load_ccpp),
    "protein_casp": RegressionSet(load_protein),
    "abalone": RegressionSet(load_abalone),
    "cpu": RegressionSet(load_cpu_pooled),
    "diabetes": RegressionSet(load_diabetes),
    "energy250": RegressionSet(load_energy, max_train=250),
    "concrete250": RegressionSet(load_concrete, max_train=250),
    "ccpp250": RegressionSet(load_ccpp, max_train=250),
    "ccpp1000": RegressionSet(load_ccpp, max_train=1000),
    "cpu_raw": RegressionSet(load_cpu_pooled, scale_X=False),
}
QUICK_SETS = ("diabetes", "energy", "concrete", "energy250", "concrete250", "ccpp250",
              "ccpp1000")


@dataclass(frozen=True)
class Split:
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def _standardise(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre and scale both by the training mean and standard deviation."""
    mean, std = train.mean(axis=0), train.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return (train - mean) / std, (test - mean) / std


def split_set(name: str, seed: int, home: Path) -> Split:
    """The seeded split of set ``name``: a random permutation, the first
    min(MAX_TRAIN, 80 %) rows for training (of which the first ``max_train``
    are kept), up to MAX_TEST of the rest for testing; standardised with the
    training statistics.  Subsampled sets share the test rows of their parent."""
    spec = SETS[name]
    X, y = spec.load(home)
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    order = np.random.default_rng(seed).permutation(y.shape[0])
    n_train = min(MAX_TRAIN, int(TRAIN_FRACTION * y.shape[0]))
    train, test = order[:n_train][:spec.max_train], order[n_train:n_train + MAX_TEST]
    X_train, X_test = X[train], X[test]
    if spec.scale_X:
        X_train, X_test = _standardise(X_train, X_test)
    y_train, y_test = _standardise(y[train], y[test])
    return Split(np.ascontiguousarray(X_train), y_train, np.ascontiguousarray(X_test), y_test)


def synthetic(n_train: int, seed: int, n_test: int = SCALING_TEST_ROWS) -> Split:
    """d = 8 standard normal features, y = sin(x0) + x1 x2 + 0.5 cos(x3 + x4) + 0.1 noise;
    defined once, with the asv benchmarks (which cannot import from outside their package)."""
    from benchmarks.bench_defaults import synthetic_regression

    return Split(*synthetic_regression(n_train, seed, n_test))


def rmse(y: np.ndarray, prediction: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(y) - np.asarray(prediction)) ** 2)))


# --------------------------------------------------------------------------
# The default Mondrian fit, in a fresh subprocess
# --------------------------------------------------------------------------
def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


def _fitted_attr(model, dotted: str):
    for name in dotted.split("."):
        model = model.get(name) if isinstance(model, dict) else getattr(model, name, None)
    return _jsonable(model)


def fit_default(split: Split, seed: int) -> dict:
    """Fit ``MondrianKernelRidgeCV(random_state=seed)``: fit time, test RMSE,
    fitted attributes and peak RSS (MiB) of this process."""
    from mondrian import MondrianKernelRidgeCV

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    model = MondrianKernelRidgeCV(random_state=seed).fit(split.X_train, split.y_train)
    seconds = time.perf_counter() - start
    return {"status": "ok", "time": seconds,
            "rmse": rmse(split.y_test, model.predict(split.X_test)),
            "rss_before_mib": rss_before,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            **{attr: _fitted_attr(model, attr) for attr in FITTED_ATTRS}}


def child_task(task: dict) -> dict:
    """Entry point of the subprocess: ``task`` names a set and seed
    (``{"set": name, "seed": s, "data_home": path}``) or a synthetic size
    (``{"synthetic": n, "seed": s}``)."""
    if "synthetic" in task:
        split = synthetic(task["synthetic"], task["seed"])
    else:
        split = split_set(task["set"], task["seed"], Path(task["data_home"]))
    return fit_default(split, task["seed"])


_CHILD_CODE = ("import json, sys; sys.path.insert(0, sys.argv[1]); import defaults_check as m; "
               "print(json.dumps(m.child_task(json.loads(sys.argv[2]))))")


def run_child(task: dict, timeout: float | None) -> dict:
    """Run ``child_task(task)`` in ``sys.executable -c``, killed after ``timeout`` s.

    Returns its result, ``{"status": "timeout"}`` or ``{"status": "error"}``;
    an ImportError (the package being rebuilt) is retried after a pause.
    """
    command = [sys.executable, "-c", _CHILD_CODE, str(HERE), json.dumps(task)]
    for attempt in range(IMPORT_RETRIES + 1):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "time": timeout}
        if done.returncode == 0:
            return json.loads(done.stdout.strip().splitlines()[-1])
        error = (done.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        if "ImportError" not in error and "ModuleNotFoundError" not in error:
            break
        if attempt < IMPORT_RETRIES:
            print(f"  [import failed: {error}; retrying in {IMPORT_RETRY_WAIT:.0f} s]", flush=True)
            time.sleep(IMPORT_RETRY_WAIT)
    return {"status": "error", "error": error}


# --------------------------------------------------------------------------
# Section: accuracy
# --------------------------------------------------------------------------
def median_l1_distance(X: np.ndarray) -> float:
    from scipy.spatial.distance import pdist

    return float(np.median(pdist(X[:MEDIAN_ROWS], "cityblock")))


def _widen(steps: list[int], index: int) -> list[int] | None:
    """Two more steps beyond the edge that ``index`` sits on, or None if inside."""
    if index == 0:
        return [steps[0] - 2, steps[0] - 1] + steps
    if index == len(steps) - 1:
        return steps + [steps[-1] + 1, steps[-1] + 2]
    return None


def _warm_up_workers(n_jobs: int) -> None:
    """Start joblib's worker processes (and their imports) before a timed
    search: a first search in a process, or one after the workers idled out,
    would otherwise pay seconds of start-up that the grid itself does not cost."""
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV

    X = np.random.default_rng(0).standard_normal((30, 2))
    GridSearchCV(KernelRidge(kernel="laplacian"), {"alpha": [0.1, 1.0]}, cv=3,
                 n_jobs=n_jobs).fit(X, X[:, 0])


def tuned_laplace_krr(split: Split, n_jobs: int = 2) -> dict:
    """Exact Laplace kernel ridge regression tuned by 3-fold grid search.

    While the best (gamma, alpha) sits on an edge of the grid, the grid is
    widened and only its new points are scored (the unshuffled 3-fold splits
    are the same every time, so the scores compare).  ``time`` is that of the
    first search plus one refit: what ``GridSearchCV(refit=True)`` over the
    first grid costs a user, with the worker processes already started.
    """
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV

    g0 = 1.0 / median_l1_distance(split.X_train)

    def params(gamma_step: int, alpha_step: int) -> dict[str, float]:
        return {"gamma": g0 * 2.0 ** gamma_step, "alpha": 10.0 ** alpha_step}

    gamma_steps, alpha_steps = list(GAMMA_STEPS), list(ALPHA_STEPS)
    scores: dict[tuple[int, int], float] = {}
    times, edges = [], []
    _warm_up_workers(n_jobs)
    for _ in range(MAX_WIDENINGS + 1):
        new = [(g, a) for g in gamma_steps for a in alpha_steps if (g, a) not in scores]
        grid = [{k: [v] for k, v in params(g, a).items()} for g, a in new]
        search = GridSearchCV(KernelRidge(kernel="laplacian"), grid, cv=3,
                              scoring="neg_mean_squared_error", n_jobs=n_jobs, refit=False)
        start = time.perf_counter()
        search.fit(split.X_train, split.y_train)
        times.append(time.perf_counter() - start)
        scores.update(zip(new, search.cv_results_["mean_test_score"]))
        best_gamma, best_alpha = max(scores, key=scores.get)
        wider_gamma = _widen(gamma_steps, gamma_steps.index(best_gamma))
        wider_alpha = _widen(alpha_steps, alpha_steps.index(best_alpha))
        edge = "".join(tag for tag, wider in (("g", wider_gamma), ("a", wider_alpha)) if wider)
        if not edge:
            break
        edges.append(edge)
        gamma_steps, alpha_steps = wider_gamma or gamma_steps, wider_alpha or alpha_steps
    best = params(best_gamma, best_alpha)
    start = time.perf_counter()
    model = KernelRidge(kernel="laplacian", **best).fit(split.X_train, split.y_train)
    refit_time = time.perf_counter() - start
    return {"time": times[0] + refit_time, "time_with_widening": sum(times) + refit_time,
            "rmse": rmse(split.y_test, model.predict(split.X_test)),
            "gamma": best["gamma"], "gamma_over_g0": best["gamma"] / g0, "alpha": best["alpha"],
            "edges": edges, "still_at_edge": bool(edge)}


def hist_gradient_boosting(split: Split, seed: int) -> dict:
    from sklearn.ensemble import HistGradientBoostingRegressor

    start = time.perf_counter()
    model = HistGradientBoostingRegressor(random_state=seed).fit(split.X_train, split.y_train)
    return {"time": time.perf_counter() - start,
            "rmse": rmse(split.y_test, model.predict(split.X_test))}


def fit_time(result: dict) -> float:
    """Seconds of a finished child fit; NaN for a timed-out or failed one."""
    return result["time"] if result["status"] == "ok" else math.nan


def _ratio(a: float | None, b: float | None) -> float:
    return a / b if a is not None and b else math.nan


def accuracy_row(name: str, seed: int, home: Path, fit_timeout: float | None) -> dict:
    split = split_set(name, seed, home)
    mondrian = run_child({"set": name, "seed": seed, "data_home": str(home)}, fit_timeout)
    exact = tuned_laplace_krr(split)
    hgb = hist_gradient_boosting(split, seed)
    return {"set": name, "seed": seed, "n_train": split.X_train.shape[0],
            "n_test": split.X_test.shape[0], "d": split.X_train.shape[1],
            "mondrian": mondrian, "exact": exact, "hgb": hgb,
            "rmse_ratio": _ratio(mondrian.get("rmse"), exact["rmse"]),
            "time_ratio": _ratio(fit_time(mondrian), exact["time"]),
            "hgb_ratio": _ratio(hgb["rmse"], exact["rmse"]), "load": os.getloadavg()[0]}


def _fmt(value, spec: str = ".3g") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec) if isinstance(value, (int, float)) else str(value)


def _mondrian_time(result: dict) -> str:
    if result["status"] == "ok":
        return _fmt(result["time"], ".1f")
    if result["status"] == "timeout":
        return f">{result['time']:.0f}(TO)"
    return "ERROR"


SELECTION_HEADER = f"{'lifetime_':>10}{'Lambda':>9}{'alpha_':>9}{'trees':>6}{'solver_':>9}"


def selection_cells(result: dict) -> str:
    """The fitted lifetime, terminal lifetime Lambda, alpha, trees and solver."""
    trees = result.get("n_trees_") or result.get("n_trees")
    return (f"{_fmt(result.get('lifetime_')):>10}{_fmt(result.get('features_.lifetime_')):>9}"
            f"{_fmt(result.get('alpha_')):>9}{_fmt(trees, '.0f'):>6}"
            f"{_fmt(result.get('solver_')):>9}")


ACCURACY_HEADER = (f"{'set':<13}{'seed':>4}{'n_train':>8}{'d':>4}{'rmse/ex':>9}{'t_mond':>10}"
                   f"{'t_grid':>8}{'t_ratio':>8}{'hgb/ex':>8}{SELECTION_HEADER}{'load':>5}"
                   f"  exact gamma/g0, alpha")


def format_accuracy_row(row: dict) -> str:
    m, ex = row["mondrian"], row["exact"]
    edge = f" edge:{','.join(ex['edges'])}" if ex["edges"] else ""
    edge += " STILL-AT-EDGE" if ex["still_at_edge"] else ""
    error = f"  [{m['error']}]" if m["status"] == "error" else ""
    return (f"{row['set']:<13}{row['seed']:>4}{row['n_train']:>8}{row['d']:>4}"
            f"{_fmt(row['rmse_ratio'], '.3f'):>9}{_mondrian_time(m):>10}"
            f"{_fmt(ex['time'], '.1f'):>8}{_fmt(row['time_ratio'], '.2f'):>8}"
            f"{_fmt(row['hgb_ratio'], '.3f'):>8}{selection_cells(m)}{row['load']:>5.1f}"
            f"  {ex['gamma_over_g0']:.3g}, {ex['alpha']:.0e}{edge}{error}")


def _nan_as_inf(value: float) -> float:
    """A failed or timed-out fit (NaN) ranks as worst, never hidden by the others."""
    return math.inf if math.isnan(value) else value


def _median(values: Sequence[float]) -> float:
    return statistics.median(_nan_as_inf(v) for v in values)


def summarise_accuracy(rows: list[dict]) -> tuple[list[dict], dict]:
    """Per-set medians and goal flags; overall geometric mean, max and count."""
    per_set = []
    for name in dict.fromkeys(row["set"] for row in rows):
        mine = [row for row in rows if row["set"] == name]
        ratio = _median([row["rmse_ratio"] for row in mine])
        t_mond = _median([fit_time(row["mondrian"]) for row in mine])
        t_grid = _median([row["exact"]["time"] for row in mine])
        per_set.append({"set": name, "median_rmse_ratio": ratio, "median_time": t_mond,
                        "median_grid_time": t_grid, "median_time_ratio": t_mond / t_grid,
                        "median_hgb_ratio": _median([row["hgb_ratio"] for row in mine]),
                        "meets_goal": ratio <= RMSE_GOAL and t_mond <= t_grid / SPEED_GOAL})
    finite = [s["median_rmse_ratio"] for s in per_set if math.isfinite(s["median_rmse_ratio"])]
    overall = {"geometric_mean_rmse_ratio": float(np.exp(np.mean(np.log(finite))))
               if finite else math.nan,
               "n_sets_in_mean": len(finite),
               "max_rmse_ratio": max(_nan_as_inf(row["rmse_ratio"]) for row in rows),
               "sets_meeting_goal": sum(s["meets_goal"] for s in per_set),
               "n_sets": len(per_set)}
    return per_set, overall


def print_accuracy_summary(per_set: list[dict], overall: dict) -> None:
    print(f"\n{'set':<13}{'med rmse/ex':>12}{'med t_mond':>11}{'med t_grid':>11}"
          f"{'t_ratio':>9}{'hgb/ex':>8}  goal (ratio <= {RMSE_GOAL}, t <= t_grid/{SPEED_GOAL:g})")
    for s in per_set:
        print(f"{s['set']:<13}{_fmt(s['median_rmse_ratio'], '.3f'):>12}"
              f"{_fmt(s['median_time'], '.1f'):>11}{_fmt(s['median_grid_time'], '.1f'):>11}"
              f"{_fmt(s['median_time_ratio'], '.2f'):>9}{_fmt(s['median_hgb_ratio'], '.3f'):>8}"
              f"  {'yes' if s['meets_goal'] else 'no'}")
    print(f"geometric mean of per-set median RMSE ratios: "
          f"{overall['geometric_mean_rmse_ratio']:.3f} (over {overall['n_sets_in_mean']} sets "
          f"with a finished fit); max ratio: "
          f"{overall['max_rmse_ratio']:.3f}; sets meeting the goal: "
          f"{overall['sets_meeting_goal']} / {overall['n_sets']}")


def section_accuracy(args: argparse.Namespace) -> dict:
    print(f"== accuracy (fit timeout {args.fit_timeout:g} s; RMSE in standardised y units; "
          "t in s; t_grid = the first 66-point grid search; load = 1-min load average;\n"
          "   Lambda = features_.lifetime_, the forest's terminal lifetime; "
          "edge:g/a = a search chose an edge gamma/alpha and the grid was widened)")
    print(ACCURACY_HEADER, flush=True)
    rows = []
    for name in args.sets:
        for seed in args.seeds:
            rows.append(accuracy_row(name, seed, args.data_home, args.fit_timeout))
            print(format_accuracy_row(rows[-1]), flush=True)
    per_set, overall = summarise_accuracy(rows)
    print_accuracy_summary(per_set, overall)
    return {"rows": rows, "per_set": per_set, "overall": overall}


# --------------------------------------------------------------------------
# Section: scaling
# --------------------------------------------------------------------------
def section_scaling(args: argparse.Namespace) -> list[dict]:
    sizes = [n for n in SCALING_SIZES if not args.quick or n <= QUICK_SCALING_MAX]
    print(f"\n== scaling (synthetic d = 8, noise floor RMSE 0.1, {SCALING_TEST_ROWS} test rows, "
          f"timeout {args.timeout:g} s per size)")
    print(f"{'N':>9}{'time[s]':>10}{'s/1k rows':>10}{'peak RSS':>10}{'pre-fit':>10}"
          f"{'RMSE':>8}{SELECTION_HEADER}{'path_time_':>11}{'load':>5}", flush=True)
    rows, skip = [], False
    for n in sizes:
        result = ({"status": "skipped"} if skip
                  else run_child({"synthetic": n, "seed": 0}, args.timeout))
        rows.append({"n": n, **result, "load": os.getloadavg()[0]})
        if result["status"] == "ok":
            print(f"{n:>9}{result['time']:>10.1f}{1000 * result['time'] / n:>10.3f}"
                  f"{result['peak_rss_mib']:>8.0f}Mi{result['rss_before_mib']:>8.0f}Mi"
                  f"{result['rmse']:>8.3f}{selection_cells(result)}"
                  f"{_fmt(result.get('path_time_'), '.1f'):>11}{rows[-1]['load']:>5.1f}",
                  flush=True)
        else:
            detail = {"timeout": f"timed out after {args.timeout:g} s",
                      "skipped": "skipped (a smaller size did not finish)"}.get(
                result["status"], f"error: {result.get('error')}")
            print(f"{n:>9}  {detail}", flush=True)
            skip = True
    return rows


# --------------------------------------------------------------------------
# Section: contention
# --------------------------------------------------------------------------
@contextmanager
def busy_process() -> Iterator[None]:
    """One extra CPU-bound process for the duration of the block."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        hog.kill()
        hog.wait()


def _fit_times(task: dict, repeats: int, timeout: float) -> list[float]:
    """Fit times of ``repeats`` fresh fits (NaN for a failed or timed-out fit)."""
    return [fit_time(run_child(task, timeout)) for _ in range(repeats)]


def section_contention(args: argparse.Namespace) -> list[dict]:
    cases = {"synthetic5000": {"synthetic": 5000, "seed": 0},
             "cpu_raw": {"set": "cpu_raw", "seed": 0, "data_home": str(args.data_home)}}
    print(f"\n== contention ({args.repeats} repeat(s), one extra busy process when loaded; "
          f"goal loaded/quiet <= {CONTENTION_GOAL})")
    print(f"{'case':<15}{'quiet[s]':>10}{'loaded[s]':>10}{'ratio':>8}  goal", flush=True)
    rows = []
    for name, task in cases.items():
        quiet = _fit_times(task, args.repeats, args.timeout)
        with busy_process():
            loaded = _fit_times(task, args.repeats, args.timeout)
        ratio = _median(loaded) / _median(quiet)
        rows.append({"case": name, "quiet": quiet, "loaded": loaded, "ratio": ratio})
        print(f"{name:<15}{_fmt(_median(quiet), '.2f'):>10}{_fmt(_median(loaded), '.2f'):>10}"
              f"{_fmt(ratio, '.2f'):>8}  {'yes' if ratio <= CONTENTION_GOAL else 'no'}",
              flush=True)
    return rows


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------
def _int_list(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def _set_list(text: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [n for n in names if n not in SETS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown set(s) {unknown}; known: {', '.join(SETS)}")
    return names


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Measure the default MondrianKernelRidgeCV (see the module docstring).")
    parser.add_argument("--section", choices=("accuracy", "scaling", "contention", "all"),
                        default="all")
    parser.add_argument("--quick", action="store_true",
                        help=f"sets {','.join(QUICK_SETS)}, a 120 s fit timeout, scaling up to "
                             f"{QUICK_SCALING_MAX} rows, one contention repeat")
    parser.add_argument("--sets", type=_set_list, default=None,
                        help=f"comma-separated, from: {', '.join(SETS)}")
    parser.add_argument("--seeds", type=_int_list, default=[0, 1, 2])
    parser.add_argument("--data-home", default=None,
                        help="default: $MONDRIAN_DATA, else ../shared/data beside the repo")
    parser.add_argument("--fit-timeout", type=float, default=None,
                        help="seconds per Mondrian fit in accuracy (default 900; quick: 120)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds per fit in scaling and contention (default 900)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="contention repeats (default 3; quick: 1)")
    parser.add_argument("--json", type=Path, default=None, help="save all results here")
    args = parser.parse_args(argv)
    args.data_home = data_home(args.data_home)
    args.sets = args.sets or list(QUICK_SETS if args.quick else SETS)
    args.fit_timeout = args.fit_timeout or (120.0 if args.quick else 900.0)
    args.repeats = args.repeats or (1 if args.quick else 3)
    return args


def environment() -> dict:
    """Versions and the checkout's revision, to tell saved results apart."""
    import mondrian
    import sklearn

    try:
        revision = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=HERE,
                                  capture_output=True, text=True).stdout.strip()
    except OSError:
        revision = None
    return {"python": sys.version.split()[0], "numpy": np.__version__,
            "sklearn": sklearn.__version__, "mondrian": getattr(mondrian, "__version__", None),
            "git": revision, "cpus": os.cpu_count(), "load": round(os.getloadavg()[0], 2),
            "time": time.strftime("%Y-%m-%d %H:%M:%S")}


SECTIONS: dict[str, Callable[[argparse.Namespace], object]] = {
    "accuracy": section_accuracy, "scaling": section_scaling, "contention": section_contention}


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    env = environment()
    print(" ".join(f"{k}={v}" for k, v in env.items()), f"data={args.data_home}")
    chosen = list(SECTIONS) if args.section == "all" else [args.section]
    results = {"environment": env, "arguments": {k: str(v) for k, v in vars(args).items()}}
    for section in chosen:
        results[section] = SECTIONS[section](args)
        if args.json:   # after every section, so a long run keeps what it has
            args.json.write_text(json.dumps(results, indent=1, default=_jsonable) + "\n")


if __name__ == "__main__":
    main()
