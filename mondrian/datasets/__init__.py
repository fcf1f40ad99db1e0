"""Datasets: the CPU data bundled with the package, and a CSV loader.

Nothing here touches the network.  The CPU data (Rahimi & Recht 2007's split
of Delve comp-activ ``cpu_act``; see ``data/cpu_PROVENANCE.md``) ships inside
the package as a compressed ``.npz`` file.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from .._validation import check_fraction

__all__ = ["TrainTestData", "load_cpu", "load_csv"]


@dataclass(frozen=True)
class TrainTestData:
    """A regression or classification dataset with a fixed train/test split."""

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray

    def describe(self) -> str:
        """One line: name, sizes and dimension."""
        return (f"{self.name}: {self.X_train.shape[0]} train, {self.X_test.shape[0]} test, "
                f"{self.X_train.shape[1]} features")


def load_cpu() -> TrainTestData:
    """Load the CPU regression data used throughout the Mondrian-kernel paper.

    6554 training and 819 test points with D = 21 raw (unscaled) features;
    the target is the percentage of time the CPUs run in user mode, plus one
    (range 1-100).  The paper (Sec. 8) uses it unstandardised, hence its
    lifetimes of about 1e-6.

    Returns
    -------
    TrainTestData
        ``X_train`` (6554, 21), ``y_train`` (6554,), ``X_test`` (819, 21),
        ``y_test`` (819,), all float64.
    """
    with resources.files(__name__).joinpath("data", "cpu.npz").open("rb") as fh:
        with np.load(fh) as npz:
            return TrainTestData("cpu", *(np.ascontiguousarray(npz[k]) for k in
                                          ("X_train", "y_train", "X_test", "y_test")))


def load_csv(path: str | Path, *, target: int = -1, test_fraction: float = 0.2,
             random_state: int | None = 0, delimiter: str = ",") -> TrainTestData:
    """Load a numeric CSV file and split it into training and test data.

    Parameters
    ----------
    path : str or Path
        The file.  A first line that does not parse as numbers is taken to be
        a header and skipped.
    target : int, default=-1
        Column index of the target; every other column is a feature.
    test_fraction : float, default=0.2
        Fraction of the rows held out as test data, in (0, 1).
    random_state : int or None, default=0
        Seed of the shuffle before splitting.
    delimiter : str, default=","
        Field separator.

    Returns
    -------
    TrainTestData
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path: no such file {str(path)!r}")
    test_fraction = check_fraction(test_fraction, "test_fraction")
    with path.open() as fh:
        first = fh.readline()
    try:
        [float(v) for v in first.strip().split(delimiter)]
        skip = 0
    except ValueError:
        skip = 1
    try:
        data = np.loadtxt(path, delimiter=delimiter, skiprows=skip, ndmin=2, dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"path: {str(path)!r} is not a numeric CSV file ({exc})") from None
    n, k = data.shape
    if k < 2:
        raise ValueError(f"path: {str(path)!r} needs at least two columns (features and target)")
    if not -k <= target < k:
        raise ValueError(f"target must be a column index in [{-k}, {k}), got {target}")
    if n < 2:
        raise ValueError(f"path: {str(path)!r} needs at least two rows to split")
    return _split(path.stem, np.delete(data, target % k, axis=1), data[:, target],
                  test_fraction, random_state)


def _split(name: str, X: np.ndarray, y: np.ndarray, test_fraction: float,
           random_state) -> TrainTestData:
    """A seeded random split holding out ``test_fraction`` of the rows (at
    least one, and at least one left for training)."""
    n = X.shape[0]
    order = np.random.default_rng(random_state).permutation(n)
    n_test = min(max(1, int(round(test_fraction * n))), n - 1)
    test, train = order[:n_test], order[n_test:]
    return TrainTestData(name, np.ascontiguousarray(X[train]), y[train],
                         np.ascontiguousarray(X[test]), y[test])
