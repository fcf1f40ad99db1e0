"""Loaders for the classification datasets of the random-features slides' table.

The files are not shipped with the package: they are read from a data
directory (``data_home``), by default the environment variable
``MONDRIAN_DATA`` or else ``../shared/data`` relative to the current
directory, laid out as ``<data_home>/<name>/`` with a ``PROVENANCE.md`` each
(read it for sources, checksums and licences).  Nothing is downloaded.

All loaders return :class:`~mondrian.datasets.TrainTestData` with dense
float64 features and integer labels.
"""
from __future__ import annotations

import lzma
import os
from pathlib import Path

import numpy as np

from .._validation import check_fraction
from . import TrainTestData, _split

__all__ = ["data_home_path", "load_nursery", "load_cod_rna", "load_a9a", "load_covertype"]

# Attribute values of UCI nursery in their natural order (nursery.names),
# so that ordinal codes 0, 1, 2, … follow the ordering of each attribute.
_NURSERY_VALUES = (
    ("usual", "pretentious", "great_pret"),
    ("proper", "less_proper", "improper", "critical", "very_crit"),
    ("complete", "completed", "incomplete", "foster"),
    ("1", "2", "3", "more"),
    ("convenient", "less_conv", "critical"),
    ("convenient", "inconv"),
    ("nonprob", "slightly_prob", "problematic"),
    ("recommended", "priority", "not_recom"),
)
NURSERY_CLASSES = ("not_recom", "recommend", "very_recom", "priority", "spec_prior")


def data_home_path(data_home: str | os.PathLike | None = None) -> Path:
    """The data directory: ``data_home``, else ``$MONDRIAN_DATA``, else ``../shared/data``."""
    if data_home is None:
        data_home = os.environ.get("MONDRIAN_DATA") or os.path.join("..", "shared", "data")
    return Path(data_home)


def _folder(data_home, name: str, files: tuple[str, ...]) -> Path:
    folder = data_home_path(data_home) / name
    for f in files:
        if not (folder / f).is_file():
            raise FileNotFoundError(
                f"dataset {name!r}: file {str(folder / f)!r} not found; set data_home or the "
                f"MONDRIAN_DATA environment variable to the directory holding {name}/")
    return folder


def load_nursery(data_home=None, *, test_fraction: float = 0.2,
                 random_state: int | None = 0) -> TrainTestData:
    """UCI nursery: 12960 applications, 8 ordinal attributes, 5 classes.

    Each attribute is coded 0, 1, 2, … in the order of its values in the
    UCI description; labels are indices into ``NURSERY_CLASSES``
    (not_recom, recommend, very_recom, priority, spec_prior).  The file has
    no split: a seeded random ``test_fraction`` is held out.

    Parameters
    ----------
    data_home : str or Path, optional
        Directory holding ``nursery/nursery.data``.
    test_fraction : float, default=0.2
    random_state : int or None, default=0
        Seed of the split.
    """
    test_fraction = check_fraction(test_fraction, "test_fraction")
    folder = _folder(data_home, "nursery", ("nursery.data",))
    rows = [line.strip().split(",") for line in
            (folder / "nursery.data").read_text().splitlines() if line.strip()]
    codes = [{v: i for i, v in enumerate(vals)} for vals in _NURSERY_VALUES]
    classes = {c: i for i, c in enumerate(NURSERY_CLASSES)}
    try:
        X = np.array([[codes[j][v] for j, v in enumerate(r[:8])] for r in rows], dtype=np.float64)
        y = np.array([classes[r[8]] for r in rows], dtype=np.int64)
    except (KeyError, IndexError) as exc:
        raise ValueError(f"nursery.data: unexpected content ({exc!r})") from exc
    return _split("nursery", X, y, test_fraction, random_state)


def load_cod_rna(data_home=None, *, test_fraction: float = 0.2,
                 random_state: int | None = 0) -> TrainTestData:
    """LIBSVM cod-rna (training part, 59535 rows, 8 features), labels -1/+1.

    Only the LIBSVM training file is available (see PROVENANCE.md), so a
    seeded random ``test_fraction`` of it is held out.
    """
    test_fraction = check_fraction(test_fraction, "test_fraction")
    folder = _folder(data_home, "cod_rna", ("cod-rna.train.csv",))
    data = np.loadtxt(folder / "cod-rna.train.csv", delimiter=",", dtype=np.float64, ndmin=2)
    if data.shape[1] != 9:
        raise ValueError(f"cod-rna.train.csv: expected 9 columns, got {data.shape[1]}")
    return _split("cod-rna", data[:, 1:], data[:, 0].astype(np.int64), test_fraction,
                  random_state)


def load_a9a(data_home=None) -> TrainTestData:
    """LIBSVM a9a (UCI adult): 32561 training and 16281 test rows, 123 binary
    features (densified), labels -1/+1, LIBSVM's own split."""
    from sklearn.datasets import load_svmlight_files

    folder = _folder(data_home, "adult_a9a", ("a9a", "a9a.t"))
    X_tr, y_tr, X_te, y_te = load_svmlight_files([str(folder / "a9a"), str(folder / "a9a.t")],
                                                 n_features=123)
    return TrainTestData("a9a", X_tr.toarray(), y_tr.astype(np.int64),
                         X_te.toarray(), y_te.astype(np.int64))


def load_covertype(data_home=None, *, binary: bool = True, test_fraction: float = 0.2,
                   random_state: int | None = 0) -> TrainTestData:
    """Covertype, the documented 100,000-row subset (raw UCI values, 54 features).

    The full 581,012-row set is not available here (PROVENANCE.md).  With
    ``binary=True`` the label is 1 for UCI class 2 (Lodgepole Pine) and -1
    otherwise, the LIBSVM binary task; else the 7 classes 0–6.  A seeded
    random ``test_fraction`` is held out.
    """
    test_fraction = check_fraction(test_fraction, "test_fraction")
    folder = _folder(data_home, "covertype", ("covtype_small_100k.csv.xz",))
    with lzma.open(folder / "covtype_small_100k.csv.xz", "rt") as fh:
        data = np.loadtxt(fh, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    if data.shape[1] != 55:
        raise ValueError(f"covtype_small_100k.csv: expected 55 columns, got {data.shape[1]}")
    label = data[:, -1].astype(np.int64)
    y = np.where(label == 1, 1, -1) if binary else label
    return _split("covertype-100k", data[:, :-1], y, test_fraction, random_state)
