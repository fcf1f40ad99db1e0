"""Helpers shared by the random-feature comparisons (fig5, fig6, slides-table).

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

__all__ = ["METHODS", "prefix_maps"]

METHODS = ("mondrian", "binning", "fourier")


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
