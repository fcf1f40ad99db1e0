"""Online aggregation over the pruned subtrees of every tree (AMF).

Mourtada, Gaïffas & Scornet, "AMF: Aggregated Mondrian forests for online
learning" (JRSS-B 2021).  ``aggregation=True`` on
:class:`~mondrian.MondrianForestRegressor` and
:class:`~mondrian.MondrianForestClassifier` replaces the prediction of the
tree pruned at λ by the exponentially weighted average of the predictions of
ALL its pruned subtrees T (the same root, every node keeping both or none of
its children), with prior π(T) = 2^-N(T), N(T) the number of nodes of T that
are internal nodes of the tree (AMF's prior, 2 to the minus the number of
all of T's nodes on the infinite Mondrian tree, with everything below the
tree's leaves summed out), and weights exp(-η L_T), L_T the cumulative
loss of T's predictions on the points seen so far, each point predicted
before it is learnt.  Node v's weight
w_v = exp(-η L_v) (L_v the loss of v's own running prediction over the
points of its cell, in arrival order), the normalisers
w̄_v = ½ w_v + ½ w̄_left w̄_right (w̄ = w at the leaves) and the prediction
along x's path

    ŷ(leaf) = c(leaf),   ŷ(v) = a_v c(v) + (1 - a_v) ŷ(child of v holding x),
    a_v = w_v / (2 w̄_v),

are the context-tree-weighting recursions that make the average over
exponentially many subtrees exact in O(depth) per point (``c/amf.h``, with
the derivation).  Node predictions c(v): the running mean of the node's
(centred) targets under the square loss, the Dirichlet / Krichevsky-Trofimov
estimate (n_k + α)/(n + Kα) under the log loss; a node's first point is
not charged (the rule of the AMF authors' and river's implementations;
``c/amf.h`` has the measurements behind it).

This module holds the state arrays' bookkeeping; the estimators call it
from small hooks.  The state (``amf_state_``) has one row per node of the
forest: [-L_v, count, Σy, Σy²] (regression) or [-L_v, count, class
counts] (classification), L_v the node's cumulative loss: the step η
enters only at prediction.
"""
from __future__ import annotations

import numpy as np

from .._ext import _amf
from .._validation import check_positive_float

__all__ = ["check_step", "noise_variance", "auto_step", "new_state", "update", "insert", "predict",
           "regression_components", "class_components"]

#: ``lifetime='auto'`` with aggregation grows the trees to Λ = this · λ₀
#: (λ₀ = 1/median ℓ₁ distance): deep enough that the trees are (nearly)
#: the infinite-lifetime trees AMF uses, the aggregation doing the pruning.
AUTO_LIFETIME_FACTOR = 2.0**14
#: ``step='auto'`` of the regressor is η = AUTO_STEP_FACTOR / ŝ², ŝ² the
#: noise variance estimated on the trees (:func:`noise_variance`): 1/(2ŝ²),
#: the Gaussian likelihood's.
AUTO_STEP_FACTOR = 0.5
#: ŝ² is taken at least this fraction of Var(y) (so η ≤ 500 / Var(y)).
MIN_NOISE_FRACTION = 1e-3


def check_step(value, name: str, *, allow_auto: bool = False):
    """'auto' (where allowed) or a finite number > 0."""
    if isinstance(value, str):
        if allow_auto and value == "auto":
            return "auto"
        expected = "'auto' or a finite number > 0" if allow_auto else "a finite number > 0"
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return check_positive_float(value, name)


def noise_variance(forest, state: np.ndarray) -> float | None:
    """Noise variance of the targets estimated on the trees, from the
    regression state's counts and sums: the pooled within-node variance of
    the nodes whose two children are leaves,

        ŝ² = Σ_v Σ_{i ∈ v} (y_i - ȳ_v)² / Σ_v (n_v - 1),

    over those nodes of every tree.  They are the deepest splits, a few
    nearby points each (two, in trees grown to the end), so this is a
    nearest-neighbour difference estimate (Rice's, on the trees' pairs): it
    exceeds the noise variance by the regression function's variation
    inside such nodes, the safe side for η.  None if no such node has two
    points.
    """
    left, right = np.asarray(forest.left), np.asarray(forest.right)
    leaf = left < 0  # gathered below: a byte a node, not the 8 of left
    internal = np.flatnonzero(~leaf)
    bottom = internal[leaf[left[internal]] & leaf[right[internal]]]
    n = state[bottom, 1]
    bottom, n = bottom[n >= 2], n[n >= 2]
    if bottom.size == 0:
        return None
    within = state[bottom, 3] - state[bottom, 2] ** 2 / n
    return float(max(np.sum(within), 0.0) / np.sum(n - 1.0))


def auto_step(forest, state: np.ndarray, y_var: float) -> float:
    """η = AUTO_STEP_FACTOR / ŝ² of ``step='auto'`` (regression), ŝ² from
    :func:`noise_variance` (at least MIN_NOISE_FRACTION · Var(y); Var(y)
    itself when it cannot be estimated).  The state keeps the losses, not
    the weights, so η is re-estimated after every ``partial_fit`` and
    applies to the whole history.

    With η = 1/(2ŝ²), exp(-η Σ(ŷ - y)²) is the Gaussian likelihood of the
    targets with noise variance ŝ², and the aggregate the Bayesian
    posterior average over subtrees under the prior π.  Measured with 50
    trees (η·ŝ² = 1/8, 1/2, 2, 8; test RMSE): from 1/8
    to 1/2 the error falls by 1-10 % on CPU, CCPP, concrete, energy,
    abalone and protein and rises 5 % on a smooth synthetic set; beyond
    1/2 it changes by 2 % or less on them (table in ``doc/forests.rst``).
    On a dense, noisy set (2000 points in
    2-D, noise 0.6 of the variance) only η·ŝ² = 1/8 avoids interpolating
    the noise (RMSE 0.18 against 0.48): there, pass a smaller ``step`` or
    use ``aggregation=False``.  Scaling by ŝ², not by Var(y), keeps the
    likelihood's reading on noisy and clean targets alike.
    """
    s2 = noise_variance(forest, state)
    floor = MIN_NOISE_FRACTION * y_var
    s2 = y_var if s2 is None else max(s2, floor)
    return AUTO_STEP_FACTOR / s2


def new_state(forest, n_classes: int | None) -> np.ndarray:
    """The empty state (every node: weight 1, no point) of a regression
    (``n_classes=None``) or classification forest."""
    width = _amf.REGRESSION_WIDTH if n_classes is None else n_classes + 2
    return np.zeros((forest.n_nodes, width), dtype=np.float64)


def update(forest, X: np.ndarray, targets: np.ndarray, state: np.ndarray, *,
           n_classes: int | None, dirichlet: float | None, n_threads: int) -> np.ndarray:
    """Take the points (X, targets) in their order through every tree."""
    if n_classes is None:
        return _amf.update_regression(forest, X, targets, state, n_threads)
    return _amf.update_classes(forest, X, targets, n_classes, state, dirichlet, n_threads)


def insert(features, X: np.ndarray, targets: np.ndarray, state: np.ndarray, *,
           n_classes: int | None, dirichlet: float | None, n_threads: int) -> np.ndarray:
    """Insert X into the trees (``features.partial_fit``) and return the
    state of the grown trees after the points (X, targets), in order.

    The old nodes' rows are found again after the renumbering by (column
    key, split time); a new parent takes the row of the node it was
    inserted above (it had exactly that node's history), a new leaf the
    empty row (``c/amf.h``); then the new points are taken in order.
    """
    forest = features.forest_
    old_offset = np.array(forest.node_offset, dtype=np.int64)
    old_key = np.array(forest.column_keys, dtype=np.int64)
    old_tau = np.array(forest.tau, dtype=np.float64)
    features.partial_fit(X)
    forest = features.forest_
    state = _amf.carry(forest, old_offset, old_key, old_tau, state, n_threads)
    return update(forest, X, targets, state, n_classes=n_classes, dirichlet=dirichlet,
                  n_threads=n_threads)


def regression_components(state: np.ndarray) -> np.ndarray:
    """Node components (mean, second moment) of the centred targets (every
    node of a fitted forest has a point; an empty row would give 0)."""
    count = state[:, 1]
    safe = np.where(count > 0, count, 1.0)
    return state[:, 2:4] / safe[:, None]


def class_components(state: np.ndarray, dirichlet: float) -> np.ndarray:
    """Node class probabilities (n_k + α) / (n + Kα)."""
    counts = state[:, 2:]
    K = counts.shape[1]
    return (counts + dirichlet) / (state[:, 1:2] + K * dirichlet)


def predict(forest, X: np.ndarray, lam: float, state: np.ndarray, step: float,
            comp: np.ndarray, n_threads: int, cache: dict | None = None) -> np.ndarray:
    """The trees' aggregated predictions of ``comp``, averaged (n x K), with
    log w = step · state[:, 0].  A point follows the cuts (the AMF authors'
    convention), but outside a tree's root box it first separates from it
    with the conditional Mondrian's probability 1 - exp(-Δe) and then
    predicts the root's component, the prior (``c/amf.h``).  ``cache`` (a
    dict, emptied by the caller when the state changes) keeps the weights
    of the last (lifetime, step), and their arrays are those of the next
    (a selection over lifetimes computes them into the same memory: on the
    2·10⁷ nodes of 10⁵ rows, 0.5 GB of fresh pages a lifetime otherwise)."""
    key = (lam, step)
    if cache is not None and cache.get("key") == key:
        coef = cache["coef"]
    else:
        out = None if cache is None else cache.get("buffers")
        out = _amf.weights(forest, lam, state, step, n_threads, out=out)
        coef = out[1]
        if cache is not None:
            cache.update(key=key, coef=coef, buffers=out)
    return _amf.predict(forest, X, lam, coef, comp, n_threads, True)
