"""Helpers shared by the random-feature comparisons of fig5 and fig6.

Each map is drawn once with the largest number of components and read at
every smaller M through its first M trees / grids / frequencies, rescaled:
exactly as drawing M components afresh (components are iid), and as the
authors' scripts do.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..features.binning import RandomBinningFeatures
from ..features.mondrian import MondrianFeatures
from ..features.fourier import RandomFourierFeatures

__all__ = ["METHODS", "LABELS", "prefix_maps", "summarize", "plot_summary"]

METHODS = ("mondrian", "binning", "fourier")
LABELS = {"mondrian": "Mondrian kernel", "binning": "random binning", "fourier": "Fourier features"}


def prefix_maps(method: str, X_train: np.ndarray, X_test: np.ndarray | None, lifetime: float,
                m_max: int, seed: int):
    """Features of X_train (and X_test) for every number M = 1 … m_max of
    non-zero features per point.

    Yields ``(M, Phi_train, Phi_test)``; ``Phi_test`` is None without
    X_test.  Fourier features give 2 non-zeros per frequency, so they yield
    only even M (M = 2R for R frequencies).
    """
    if method == "mondrian":
        fmap = MondrianFeatures(n_trees=m_max, lifetime=lifetime, random_state=seed)
        Phi = fmap.fit_transform(X_train)
        Phi_te = None if X_test is None else fmap.transform(X_test)
        leaves = np.array([(t.n_nodes + 1) // 2 for t in fmap.trees_])
        offsets = np.concatenate([[0], np.cumsum(leaves)])
        steps = [(M, int(offsets[M]), np.sqrt(m_max / M)) for M in range(1, m_max + 1)]
    elif method == "binning":
        fmap = RandomBinningFeatures(lifetime=lifetime, n_grids=m_max, random_state=seed)
        Phi = fmap.fit_transform(X_train)
        Phi_te = None if X_test is None else fmap.transform(X_test)
        steps = [(M, int(fmap.bin_offsets_[M]), np.sqrt(m_max / M)) for M in range(1, m_max + 1)]
    elif method == "fourier":
        n_freq = m_max // 2
        fmap = RandomFourierFeatures(kernel="laplace", lifetime=lifetime, n_components=n_freq,
                                     random_state=seed)
        Phi = fmap.fit_transform(X_train)
        Phi_te = None if X_test is None else fmap.transform(X_test)
        steps = [(2 * R, 2 * R, np.sqrt(n_freq / R)) for R in range(1, n_freq + 1)]
    else:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if sp.issparse(Phi):
        Phi = Phi.tocsc()
        Phi_te = None if Phi_te is None else Phi_te.tocsc()
    for M, stop, scale in steps:
        tr = Phi[:, :stop] * scale
        te = None if Phi_te is None else Phi_te[:, :stop] * scale
        if sp.issparse(tr):
            tr = sp.csr_array(tr)
            te = None if te is None else sp.csr_array(te)
        yield M, tr, te


def summarize(rows) -> dict[str, dict[int, tuple[float, float]]]:
    """Mean and standard deviation over repeats, per method and M.

    ``rows`` are ``(method, M, repeat, value)``; returns
    ``{method: {M: (mean, sd)}}``.
    """
    values: dict[str, dict[int, list[float]]] = {}
    for method, M, _, value in rows:
        values.setdefault(method, {}).setdefault(M, []).append(value)
    return {m: {M: (float(np.mean(v)), float(np.std(v))) for M, v in d.items()}
            for m, d in values.items()}


def plot_summary(ax, summary: dict[str, dict[int, tuple[float, float]]]) -> None:
    """Mean ± sd against M, one marker per method (the papers' Fig. 5/6 style)."""
    for method, marker in zip(METHODS, "v o ^".split()):
        Ms = sorted(summary[method])
        ax.errorbar(Ms, [summary[method][M][0] for M in Ms],
                    yerr=[summary[method][M][1] for M in Ms], marker=marker, ls="",
                    label=LABELS[method])
    ax.set_xlabel("M (non-zero features per data point)")
