"""Online aggregation over pruned subtrees (AMF; c/amf.h, mondrian/forest/aggregation.py).

The main check is a brute force written here from the definition, independent
of the C recursions: every pruned subtree T of a small tree (pruned at λ) is
enumerated, with prior π(T) = 2^-(number of nodes of T that are internal
nodes of the tree pruned at λ) and weight π(T) exp(-η Σ_{leaves v of T} L_v),
L_v the loss of node v's running prediction over the points of its cell in
arrival order, each point charged before it is counted, the node's first
point not charged (regression: the running mean; classes: the Dirichlet
estimate).  The aggregated
prediction at x is the weighted average of c(leaf of T holding x).
"""
import pickle

import numpy as np
import pytest

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian._ext import _amf
from mondrian.forest import aggregation as amf


def _data(n, seed=0, d=2):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = np.sin(6 * X[:, 0]) + X[:, 1] + 0.3 * rng.normal(size=n)
    return X, y


# ---------------------------------------------------------------- brute force

def _path(forest, m, x):
    """Node ids of x's path in tree m, following the cuts (no rotation)."""
    j = int(forest.roots[m])
    path = [j]
    while forest.left[j] != -1:
        j = int(forest.left[j] if x[forest.feature[j]] <= forest.threshold[j]
                else forest.right[j])
        path.append(j)
    return path


def _node_losses(forest, X, targets, step, kind, n_classes=None, dirichlet=None):
    """L_v and the final node components of every node, point by point."""
    loss = {}
    seen = {}
    for i in range(X.shape[0]):
        for m in range(forest.n_trees):
            for j in _path(forest, m, X[i]):
                hist = seen.setdefault(j, [])
                loss.setdefault(j, 0.0)
                if not hist:             # a node's first point is not charged
                    pass
                elif kind == "regression":
                    loss[j] += (np.mean(hist) - targets[i]) ** 2
                else:
                    counts = np.bincount(np.asarray(hist, dtype=int), minlength=n_classes)
                    p = (counts[targets[i]] + dirichlet) / (len(hist) + n_classes * dirichlet)
                    loss[j] -= np.log(p)
                hist.append(targets[i])
    comp = {}
    for j, hist in seen.items():
        if kind == "regression":
            h = np.asarray(hist)
            comp[j] = np.array([h.mean(), np.mean(h**2)])
        else:
            counts = np.bincount(np.asarray(hist, dtype=int), minlength=n_classes)
            comp[j] = (counts + dirichlet) / (len(hist) + n_classes * dirichlet)
    return {j: step * v for j, v in loss.items()}, comp


def _subtrees(forest, j, lam):
    """Every pruned subtree of the λ-tree below j: (leaves, internal count),
    the internal count being the nodes of the subtree that are internal
    nodes of the λ-tree (the exponent of the prior)."""
    if forest.tau[j] > lam:          # a leaf of the tree pruned at λ
        return [((j,), 0)]
    out = [((j,), 1)]                # stop at j
    for left in _subtrees(forest, int(forest.left[j]), lam):
        for right in _subtrees(forest, int(forest.right[j]), lam):
            out.append((left[0] + right[0], 1 + left[1] + right[1]))
    return out


def _brute_force(forest, X, targets, Xq, lam, step, kind, n_classes=None, dirichlet=None):
    eta_loss, comp = _node_losses(forest, X, targets, step, kind, n_classes, dirichlet)
    K = 2 if kind == "regression" else n_classes
    out = np.zeros((Xq.shape[0], K))
    for m in range(forest.n_trees):
        trees = _subtrees(forest, int(forest.roots[m]), lam)
        logw = np.array([-k * np.log(2.0) - sum(eta_loss[v] for v in leaves)
                         for leaves, k in trees])
        post = np.exp(logw - logw.max())
        post /= post.sum()
        root = int(forest.roots[m])
        lo, hi = np.asarray(forest.lower)[root], np.asarray(forest.upper)[root]
        span = min(float(forest.tau[root]), lam)
        for q, x in enumerate(Xq):
            path = set(_path(forest, m, x))
            agg = sum(p * comp[[v for v in leaves if v in path][0]]
                      for (leaves, _), p in zip(trees, post))
            # Outside the root's box x first leaves the tree with probability
            # 1 - exp(-Δ·gap) (conditional Mondrian) and predicts the root's
            # component, the prior (c/amf.h).
            gap = np.sum(np.maximum(lo - x, 0.0) + np.maximum(x - hi, 0.0))
            sep = 1.0 - np.exp(-span * gap)
            out[q] += (1.0 - sep) * agg + sep * comp[root]
    return out / forest.n_trees


def _small_trees(model):
    sizes = np.diff(model.forest_.node_offset)
    assert 7 <= sizes.max() <= 40, sizes  # small enough to enumerate, not trivial
    return model


@pytest.mark.parametrize("frac", [1.0, 0.4])
def test_regression_equals_brute_force_over_pruned_subtrees(frac):
    X, y = _data(24)
    Xq, _ = _data(15, seed=5)
    Xq = Xq * 1.4 - 0.2                  # some queries outside the trees' boxes
    model = _small_trees(MondrianForestRegressor(
        n_trees=3, lifetime=4.0, random_state=1, aggregation=True, step=0.7).fit(X, y))
    lam = frac * model.max_lifetime_
    expected = _brute_force(model.forest_, X, y - model.y_mean_, Xq, lam, 0.7, "regression")
    mean, std = model.predict(Xq, return_std=True, lifetime=lam)
    np.testing.assert_allclose(mean, expected[:, 0] + model.y_mean_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(std**2, expected[:, 1] - expected[:, 0] ** 2, rtol=0, atol=1e-10)


@pytest.mark.parametrize("frac", [1.0, 0.5])
def test_classification_equals_brute_force_over_pruned_subtrees(frac):
    X, y = _data(24, seed=2)
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    Xq, _ = _data(12, seed=6)
    model = _small_trees(MondrianForestClassifier(
        n_trees=3, lifetime=4.0, random_state=2, aggregation=True, step=1.3,
        dirichlet=0.25).fit(X, labels))
    lam = frac * model.max_lifetime_
    expected = _brute_force(model.forest_, X, labels, Xq, lam, 1.3, "classes", 3, 0.25)
    np.testing.assert_allclose(model.predict_proba(Xq, lifetime=lam), expected,
                               rtol=0, atol=1e-10)


def test_cut_paths_are_the_point_slices_after_insertion():
    """The weights follow each point's cuts; batch growth and insertion put
    every point in exactly the nodes of its cut path (its slices)."""
    X, y = _data(80)
    model = MondrianForestRegressor(n_trees=3, lifetime=6.0, random_state=0,
                                    aggregation=True).fit(X[:40], y[:40])
    model.partial_fit(X[40:], y[40:])
    f = model.forest_
    for m in range(f.n_trees):
        perm = np.asarray(f.perm[m])
        for i in range(80):
            holders = {j for j in range(f.node_offset[m], f.node_offset[m + 1])
                       if i in perm[f.start[j]:f.end[j]]}
            assert holders == set(_path(f, m, X[i]))


@pytest.mark.parametrize("lifetime", [2.0, 1e4])
@pytest.mark.parametrize("kind", ["regression", "classes"])
def test_update_with_the_forests_own_points_equals_their_walks(lifetime, kind):
    """The forest's own points, in their order, are taken through the trees
    by merging each node's points in row order bottom-up rather than by a
    walk per point (``c/amf.c``, ``merge_tree``): the state equals the walks'
    written out here, the same operations in the same order, bit for bit;
    trees of one point per leaf and of several (lifetime 2), 1 and 2
    threads.  Other points (here the same rows in another order) take the
    walks, and equal them too."""
    import math

    X, y = _data(120, seed=5, d=3)
    targets = y - y.mean() if kind == "regression" else np.digitize(y, np.quantile(y, [0.3, 0.7]))
    n_classes, dirichlet = (None, None) if kind == "regression" else (3, 0.5)
    model = MondrianForestRegressor(n_trees=4, lifetime=lifetime, random_state=2).fit(X, y)
    forest = model.forest_

    def walks(order):
        state = amf.new_state(forest, n_classes)
        for i in order:
            for m in range(forest.n_trees):
                for j in _path(forest, m, X[i]):
                    s = state[j]
                    if kind == "regression":
                        if s[1] > 0.0:
                            r = s[2] / s[1] - targets[i]
                            s[0] -= r * r
                        s[1] += 1.0
                        s[2] += targets[i]
                        s[3] += targets[i] * targets[i]
                    else:
                        c = 2 + int(targets[i])
                        if s[1] > 0.0:
                            s[0] += math.log((s[c] + dirichlet) / (s[1] + 3 * dirichlet))
                        s[1] += 1.0
                        s[c] += 1.0
        return state

    assert forest.n_points == 120 and np.array_equal(np.asarray(forest.X), X)
    sizes = np.diff(forest.node_offset)
    assert (sizes == 2 * 120 - 1).all() if lifetime > 100 else (sizes < 2 * 120 - 1).all()
    for order in (np.arange(120), np.random.default_rng(0).permutation(120)):
        expected = walks(order)
        for n_threads in (1, 2):
            got = amf.update(forest, X[order], targets[order],
                             amf.new_state(forest, n_classes), n_classes=n_classes,
                             dirichlet=dirichlet, n_threads=n_threads)
            np.testing.assert_array_equal(got, expected)


# ------------------------------------------------------------ online = batch

@pytest.mark.parametrize("batch", [1, 7])
@pytest.mark.parametrize("kind", ["regression", "classes"])
def test_partial_fit_state_equals_recomputation_on_final_trees(batch, kind):
    """Fit on 30 points, insert 45 more in batches: the carried state equals
    the state computed from scratch on the final trees, bit for bit (same
    operations in the same order), and its predictions the brute force."""
    X, y = _data(75, seed=3)
    if kind == "regression":
        model = MondrianForestRegressor(n_trees=2, lifetime=3.0, random_state=4,
                                        aggregation=True, step=0.5)
        targets = y
    else:
        targets = np.digitize(y, np.quantile(y, [0.5]))
        model = MondrianForestClassifier(n_trees=2, lifetime=3.0, random_state=4,
                                         aggregation=True)
    model.fit(X[:30], targets[:30])
    for s in range(30, 75, batch):
        model.partial_fit(X[s:s + batch], targets[s:s + batch])
    forest = model.forest_
    if kind == "regression":
        t = y - model.y_mean_
        fresh = amf.update(forest, X, t, amf.new_state(forest, None), 
                           n_classes=None, dirichlet=None, n_threads=1)
    else:
        t = targets
        fresh = amf.update(forest, X, t, amf.new_state(forest, 2), n_classes=2,
                           dirichlet=0.5, n_threads=1)
    np.testing.assert_array_equal(model.amf_state_, fresh)
    sizes = np.diff(forest.node_offset)
    if sizes.max() <= 40:
        Xq, _ = _data(8, seed=9)
        if kind == "regression":
            expected = _brute_force(forest, X, t, Xq, model.max_lifetime_, 0.5, "regression")
            np.testing.assert_allclose(model.predict(Xq), expected[:, 0] + model.y_mean_,
                                       rtol=0, atol=1e-10)
        else:
            expected = _brute_force(forest, X, t, Xq, model.max_lifetime_, 1.0, "classes",
                                    2, 0.5)
            np.testing.assert_allclose(model.predict_proba(Xq), expected, rtol=0, atol=1e-10)


def test_carry_of_a_batch_equals_single_points():
    """One batch of 20 insertions or 20 batches of one: the trees differ (the
    streams are consumed alike, but let the check not rely on it), so each
    is compared with its own recomputation; both with a rotation."""
    X, y = _data(60, seed=7, d=3)
    for batch in (20, 1):
        model = MondrianForestRegressor(n_trees=4, lifetime=5.0, random_state=0,
                                        rotation="uniform", aggregation=True)
        model.fit(X[:40], y[:40])
        for s in range(40, 60, batch):
            model.partial_fit(X[s:s + batch], y[s:s + batch])
        fresh = amf.update(model.forest_, X, y - model.y_mean_,
                           amf.new_state(model.forest_, None),
                           n_classes=None, dirichlet=None, n_threads=2)
        np.testing.assert_array_equal(model.amf_state_, fresh)
        # step='auto' is re-estimated on the final trees, after every batch
        assert model.step_ == amf.auto_step(model.forest_, fresh, model.y_var_)


# --------------------------------------------------------- reproducibility

def test_identical_for_any_thread_count_and_after_pickling():
    X, y = _data(300, seed=1, d=3)
    Xq, _ = _data(50, seed=2, d=3)
    preds = []
    for n_jobs in (1, 2):
        model = MondrianForestRegressor(n_trees=8, random_state=3, n_jobs=n_jobs,
                                        aggregation=True).fit(X[:200], y[:200])
        model.partial_fit(X[200:], y[200:])
        preds.append(model.predict(Xq, return_std=True))
    np.testing.assert_array_equal(preds[0][0], preds[1][0])
    np.testing.assert_array_equal(preds[0][1], preds[1][1])
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.predict(Xq), preds[1][0])
    X2, y2 = _data(30, seed=8, d=3)
    np.testing.assert_array_equal(clone.partial_fit(X2, y2).predict(Xq),
                                  model.partial_fit(X2, y2).predict(Xq))

    labels = (y > np.median(y)).astype(int)
    probas = [MondrianForestClassifier(n_trees=8, random_state=3, n_jobs=n_jobs,
                                       aggregation=True).fit(X, labels).predict_proba(Xq)
              for n_jobs in (1, 2)]
    np.testing.assert_array_equal(probas[0], probas[1])


def test_aggregation_false_ignores_the_amf_parameters():
    X, y = _data(200)
    base = MondrianForestRegressor(n_trees=5, random_state=0).fit(X, y)
    other = MondrianForestRegressor(n_trees=5, random_state=0, aggregation=False,
                                    step=123.0).fit(X, y)
    np.testing.assert_array_equal(base.predict(X), other.predict(X))
    assert not hasattr(other, "amf_state_")
    labels = (y > 1).astype(int)
    base = MondrianForestClassifier(n_trees=5, random_state=0).fit(X, labels)
    other = MondrianForestClassifier(n_trees=5, random_state=0, step=9.0,
                                     dirichlet=3.0).fit(X, labels)
    np.testing.assert_array_equal(base.predict_proba(X), other.predict_proba(X))


def test_order_matters_and_auto_step():
    """AMF is online: the weights depend on the order of the points (the
    node statistics do not).  step='auto' is AUTO_STEP_FACTOR / ŝ², ŝ² the
    pooled variance within the nodes whose children are both leaves."""
    X, y = _data(150)
    a = MondrianForestRegressor(n_trees=4, random_state=0, aggregation=True).fit(X, y)
    f = a.forest_
    left, right = np.asarray(f.left), np.asarray(f.right)
    ss, dof = 0.0, 0
    for v in range(f.n_nodes):
        if left[v] >= 0 and left[left[v]] < 0 and left[right[v]] < 0:
            pts = y[np.asarray(f.perm[f.tree_of[v]][f.start[v]:f.end[v]])]
            if pts.size >= 2:
                ss += np.sum((pts - pts.mean()) ** 2)
                dof += pts.size - 1
    assert dof > 100
    np.testing.assert_allclose(a.step_, amf.AUTO_STEP_FACTOR * dof / ss, rtol=1e-10)
    # the noise here is N(0, 0.3²): the estimate is a pooled variance on dof
    # degrees of freedom (relative standard error √(2/dof) ≈ 0.14 for dof >
    # 100), above the noise only by the function's variation inside the
    # deepest nodes, not by much on 150 points in 2D: within 5 standard
    # errors below, and at most twice the noise above
    s2 = amf.AUTO_STEP_FACTOR / a.step_
    assert 0.3**2 * (1 - 5 * np.sqrt(2 / dof)) < s2 < 2 * 0.3**2
    assert a.max_lifetime_ == pytest.approx(amf.AUTO_LIFETIME_FACTOR * a.lifetime_scale_)
    order = np.random.default_rng(0).permutation(150)
    fresh = amf.update(a.forest_, X[order], (y - a.y_mean_)[order],
                       amf.new_state(a.forest_, None), n_classes=None,
                       dirichlet=None, n_threads=1)
    np.testing.assert_allclose(fresh[:, 1:], a.amf_state_[:, 1:], rtol=1e-12, atol=1e-12)
    assert not np.allclose(fresh[:, 0], a.amf_state_[:, 0])


def test_partial_fit_from_scratch_with_classes():
    """The first partial_fit with ``classes`` recomputes the Dirichlet
    weights with every class (K enters (n_k + α)/(n + Kα))."""
    X, y = _data(60)
    labels = np.where(y > 1, "b", "c")
    model = MondrianForestClassifier(n_trees=3, lifetime=4.0, random_state=0,
                                     aggregation=True)
    model.partial_fit(X[:30], labels[:30], classes=["a", "b", "c"])
    model.partial_fit(X[30:], labels[30:])
    codes = np.searchsorted(model.classes_, labels)
    fresh = amf.update(model.forest_, X, codes, amf.new_state(model.forest_, 3),
                       n_classes=3, dirichlet=0.5, n_threads=1)
    np.testing.assert_array_equal(model.amf_state_, fresh)
    assert model.predict_proba(X[:5]).shape == (5, 3)


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("value", [0.0, -1.0, np.nan, np.inf, "big"])
def test_bad_step_and_dirichlet(value):
    X, y = _data(40)
    with pytest.raises(ValueError, match="step"):
        MondrianForestRegressor(n_trees=2, aggregation=True, step=value).fit(X, y)
    with pytest.raises(ValueError, match="step"):
        MondrianForestClassifier(n_trees=2, aggregation=True, step=value).fit(X, y > 1)
    with pytest.raises(ValueError, match="dirichlet"):
        MondrianForestClassifier(n_trees=2, aggregation=True, dirichlet=value).fit(X, y > 1)
    with pytest.raises(ValueError, match="step"):
        MondrianForestClassifier(n_trees=2, aggregation=True, step="auto").fit(X, y > 1)
    with pytest.raises(ValueError, match="aggregation"):
        MondrianForestRegressor(n_trees=2, aggregation="yes").fit(X, y)
    with pytest.raises(TypeError, match="aggregation"):
        MondrianForestClassifier(n_trees=2, aggregation=1).fit(X, y > 1)


def test_seam_rejects_bad_state_and_labels():
    X, y = _data(30)
    model = MondrianForestRegressor(n_trees=2, lifetime=3.0, random_state=0,
                                    aggregation=True).fit(X, y)
    f = model.forest_
    with pytest.raises(ValueError, match="state"):
        _amf.update_regression(f, X, y, np.zeros((f.n_nodes, 3)))
    with pytest.raises(ValueError, match="finite"):
        _amf.update_regression(f, X, np.full(30, np.nan), np.zeros((f.n_nodes, 4)))
    with pytest.raises(ValueError, match="labels"):
        _amf.update_classes(f, X, np.full(30, 2), 2, np.zeros((f.n_nodes, 4)), 0.5)
    with pytest.raises(ValueError, match="lifetime"):
        _amf.weights(f, 2 * f.lifetime, model.amf_state_, 1.0)
    with pytest.raises(ValueError, match="step"):
        _amf.weights(f, f.lifetime, model.amf_state_, 0.0)
    with pytest.raises(ValueError, match="lifetime"):
        model.predict(X, lifetime=2 * model.max_lifetime_)


def test_node_cap_keeps_the_state_exact():
    """Under ``max_nodes`` an insertion may join a leaf without splitting:
    the carried state still equals the recomputation on the final trees."""
    X, y = _data(120, seed=4)
    model = MondrianForestRegressor(n_trees=3, lifetime=50.0, random_state=0,
                                    aggregation=True, max_nodes=41).fit(X[:20], y[:20])
    for s in range(20, 120, 9):
        model.partial_fit(X[s:s + 9], y[s:s + 9])
    assert np.diff(model.forest_.node_offset).max() <= 41
    fresh = amf.update(model.forest_, X, y - model.y_mean_,
                       amf.new_state(model.forest_, None),
                       n_classes=None, dirichlet=None, n_threads=1)
    np.testing.assert_array_equal(model.amf_state_, fresh)


def test_log_wbar_of_the_root_is_the_normaliser_over_subtrees():
    """log w̄_root = log Σ_T π(T) Π_{leaves v of T} w_v, at Λ and below."""
    X, y = _data(24)
    model = _small_trees(MondrianForestRegressor(
        n_trees=3, lifetime=4.0, random_state=1, aggregation=True, step=0.7).fit(X, y))
    f, lw = model.forest_, 0.7 * model.amf_state_[:, 0]
    for lam in (model.max_lifetime_, 0.3 * model.max_lifetime_):
        log_wbar, coef = _amf.weights(f, lam, model.amf_state_, 0.7)
        for m in range(f.n_trees):
            root = int(f.roots[m])
            terms = [-k * np.log(2.0) + sum(lw[v] for v in leaves)
                     for leaves, k in _subtrees(f, root, lam)]
            np.testing.assert_allclose(log_wbar[root], np.logaddexp.reduce(terms),
                                       rtol=1e-12, atol=1e-12)
        inside = ~np.isnan(coef[:, 0])
        np.testing.assert_allclose(coef[inside].sum(axis=1), 1.0, rtol=1e-12)


def test_kept_components_and_weights_follow_the_state_and_dirichlet():
    """The node components and weights are kept between predictions (a
    single row no longer pays O(nodes)): row-by-row predictions equal the
    batch's, a new ``dirichlet`` is used at once, and an insertion (which
    changes the state) is reflected."""
    rng = np.random.default_rng(4)
    X = rng.random((300, 2))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.standard_normal(300)
    Xt = rng.random((40, 2))
    reg = MondrianForestRegressor(n_trees=8, aggregation=True, random_state=0).fit(X, y)
    full = reg.predict(Xt)
    np.testing.assert_array_equal([reg.predict(Xt[i:i + 1])[0] for i in range(10)], full[:10])
    clf = MondrianForestClassifier(n_trees=8, aggregation=True, random_state=0).fit(X, y > 0)
    before = clf.predict_proba(Xt)
    # dirichlet is read when predicting (as when inserting): the node
    # probabilities follow it; the weights are those of the points seen.
    clf.set_params(dirichlet=5.0)
    after = clf.predict_proba(Xt)
    counts = clf.amf_state_[:, 2:]
    comp = (counts + 5.0) / (counts.sum(axis=1, keepdims=True) + 2 * 5.0)
    _, coef = _amf.weights(clf.forest_, clf.lifetime_, clf.amf_state_, clf.step_, 1)
    want = _amf.predict(clf.forest_, Xt, clf.lifetime_, coef, comp, 1, True)
    np.testing.assert_array_equal(after, want / want.sum(axis=1, keepdims=True))
    assert not np.allclose(after, before)
    reg.partial_fit(Xt[:20], np.sin(6 * Xt[:20, 0]))
    again = MondrianForestRegressor(n_trees=8, aggregation=True, random_state=0).fit(X, y)
    again.partial_fit(Xt[:20], np.sin(6 * Xt[:20, 0]))
    np.testing.assert_array_equal(reg.predict(Xt), again.predict(Xt))


def _smooth(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    return X, np.sin(6 * X[:, 0]) + X[:, 1] + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auto_aggregation_keeps_the_better_held_out_loss(seed):
    """aggregation='auto' (the regressor's default) scores AMF on the trees and
    held-out points of the smoothed forest's selection and keeps AMF only if
    its held-out squared error is smaller; otherwise the fit is the
    aggregation=False fit exactly (the candidate draws no random numbers)."""
    X, y = _smooth(300, seed)
    Xt, _ = _smooth(50, seed + 10)
    auto = MondrianForestRegressor(n_trees=10, random_state=seed).fit(X, y)
    plain = MondrianForestRegressor(n_trees=10, random_state=seed, aggregation=False).fit(X, y)
    rival = plain.validation_scores_[(plain.lifetime_, plain.hyper_)][0]
    best = min(v[0] for v in auto.aggregation_scores_.values())
    assert auto.aggregation_ == (best < rival)
    if auto.aggregation_:
        assert auto.aggregation_scores_[auto.lifetime_][0] == best
        assert auto.hyper_ is None and auto.amf_state_.shape[0] == auto.forest_.n_nodes
        assert auto.forest_.n_points == 300  # the held-out points joined the trees
    else:
        for a, b in zip(auto.predict(Xt, return_std=True), plain.predict(Xt, return_std=True)):
            np.testing.assert_array_equal(a, b)
    assert not plain.aggregation_ and plain.std_scale_ == 1.0


def test_auto_aggregation_chooses_each_way():
    """Both outcomes occur: AMF on a piecewise-constant function of one input
    (the aggregation prunes where the function is flat), the smoothed forest on
    a smooth, noisy one where the leaves' own means interpolate the noise."""
    rng = np.random.default_rng(0)
    X = rng.random((600, 2))
    steps = np.floor(4 * X[:, 0]) + 0.05 * rng.standard_normal(600)
    assert MondrianForestRegressor(n_trees=20, random_state=0).fit(X, steps).aggregation_
    noisy = np.sin(3 * X[:, 0]) + 0.8 * rng.standard_normal(600)
    assert not MondrianForestRegressor(n_trees=20, random_state=0).fit(X, noisy).aggregation_


def test_auto_aggregation_std_is_calibrated_on_held_out_points():
    """std_scale_ makes ±1.96 std cover 95 % of the held-out points; on new
    points of the same distribution the coverage is 95 % up to the sampling
    error of the scale's quantile (400 held-out points: sd 0.011 in coverage)
    and of the test coverage (2000 points: 0.005): within 0.05 (over 4 sd)."""
    X, y = _smooth(2000, 0)
    Xt, yt = _smooth(2000, 1)
    model = MondrianForestRegressor(n_trees=30, random_state=0).fit(X, y)
    assert model.aggregation_ and model.std_scale_ != 1.0
    mean, std = model.predict(Xt, return_std=True)
    coverage = np.mean(np.abs(yt - mean) <= 1.96 * std)
    assert abs(coverage - 0.95) < 0.05, coverage


@pytest.mark.parametrize("n", [50, 123, 1000])
def test_std_scale_is_the_split_conformal_quantile(n):
    """std_scale_ is q/1.96 with q the k-th smallest normalised held-out
    residual, k = ⌈0.95 (n + 1)⌉ (the split-conformal rank): ±1.96 std then
    covers exactly k of the n held-out points (no ties), more than the
    plain 0.95 quantile's ⌈0.95 n⌉ -- the O(1/n) by which that one falls
    short of the 0.95 guarantee for a new point."""
    from mondrian.forest.estimators import conformal_rank

    rng = np.random.default_rng(n)
    mean, std = rng.standard_normal(n), rng.uniform(0.5, 2.0, n)
    y = mean + std * rng.standard_normal(n)
    pred = np.column_stack([mean, std**2 + mean**2])  # (mean, second moment)
    std = np.sqrt(pred[:, 1] - mean**2)                # as the forest reads it back
    model = MondrianForestRegressor()
    model._calibrate(pred, y)
    k = conformal_rank(n, 0.95)
    assert k == int(np.ceil(0.95 * (n + 1))) and k > np.ceil(0.95 * n)
    ratio = np.sort(np.abs(y - mean) / std)
    assert model.std_scale_ == ratio[k - 1] / 1.959963984540054
    covered = np.abs(y - mean) <= 1.959963984540054 * model.std_scale_ * std * (1 + 1e-12)
    assert covered.sum() == k
    # exact integer products: 0.95 * 20 = 19, 0.95 * 40 = 38
    assert conformal_rank(19, 0.95) == 19 and conformal_rank(39, 0.95) == 38
    assert conformal_rank(10, 0.95) == 11  # > n: no finite quantile
    model._calibrate(np.column_stack([mean[:10], std[:10]**2 + mean[:10]**2]), y[:10])
    assert model.std_scale_ == 1.0


def test_aggregated_prediction_far_from_the_data_is_the_prior():
    """A point far outside the trees' root boxes separates from every tree
    (probability 1 - exp(-Δ·gap) = 1 in floating point) and predicts the
    roots' component: the mean and spread of the training targets."""
    X, y = _smooth(400, 3)
    model = MondrianForestRegressor(n_trees=10, random_state=0, aggregation=True).fit(X, y)
    far = np.array([[1e6, -1e6], [-1e6, 5e5]])
    mean, std = model.predict(far, return_std=True)
    np.testing.assert_allclose(mean, np.mean(y), rtol=0, atol=1e-12)
    np.testing.assert_allclose(std, np.std(y), rtol=1e-10)
    # Inside the roots' boxes nothing separates: the points follow the cuts.
    state, step = model.amf_state_, model.step_
    _, coef = _amf.weights(model.forest_, model.lifetime_, state, step, 1)
    comp = amf.regression_components(state)
    inside = X[:20] * 0.5 + 0.25
    np.testing.assert_array_equal(
        _amf.predict(model.forest_, inside, model.lifetime_, coef, comp, 1, True),
        _amf.predict(model.forest_, inside, model.lifetime_, coef, comp, 1, False))


def test_classifier_auto_aggregation_keeps_the_better_log_loss():
    X, y = _smooth(300, 4)
    labels = y > np.median(y)
    auto = MondrianForestClassifier(n_trees=10, random_state=0, aggregation="auto").fit(X, labels)
    plain = MondrianForestClassifier(n_trees=10, random_state=0).fit(X, labels)
    assert plain.aggregation is False and not plain.aggregation_
    rival = plain.validation_scores_[(plain.lifetime_, plain.hyper_)][0]
    best = min(v[0] for v in auto.aggregation_scores_.values())
    assert auto.aggregation_ == (best < rival)
    proba = auto.predict_proba(X[:5])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)


def test_auto_aggregation_needs_enough_held_out_points():
    """Below 50 held-out points (250 training points at the default 20 %)
    'auto' does not try AMF: a 0.95 quantile of fewer residuals (std_scale_)
    and a choice on them would be mostly noise."""
    X, y = _smooth(240, 0)
    model = MondrianForestRegressor(n_trees=5, random_state=0).fit(X, y)
    assert not model.aggregation_ and model.aggregation_scores_ is None
    assert model.std_scale_ == 1.0
    X, y = _smooth(250, 0)
    assert MondrianForestRegressor(n_trees=5, random_state=0).fit(X, y).aggregation_scores_


def test_auto_aggregation_keeps_the_smoothed_forest_when_amf_does_not_fit(monkeypatch):
    """The AMF candidate's node weights are one more array per node: where
    they cannot be allocated 'auto' says so and keeps the smoothed forest
    (the same fit as aggregation=False) instead of failing."""
    X, y = _smooth(300, 0)
    plain = MondrianForestRegressor(n_trees=5, random_state=0, aggregation=False).fit(X, y)

    def no_memory(forest, n_classes):
        raise MemoryError("test")

    monkeypatch.setattr(amf, "new_state", no_memory)
    with pytest.warns(UserWarning, match="aggregation='auto'"):
        auto = MondrianForestRegressor(n_trees=5, random_state=0).fit(X, y)
    assert not auto.aggregation_
    np.testing.assert_array_equal(auto.predict(X[:20]), plain.predict(X[:20]))


def test_weights_into_given_arrays_and_reused_by_a_cache():
    """weights(out=...) writes the numbers of a fresh call into the caller's
    arrays and refuses arrays of the wrong shape, type or layout; predict's
    cache computes a new lifetime's weights into the arrays of the last."""
    X, y = _data(150)
    model = MondrianForestRegressor(n_trees=4, random_state=0, aggregation=True).fit(X, y)
    f, state, n = model.forest_, model.amf_state_, model.forest_.n_nodes
    lam = 0.5 * f.lifetime
    want = _amf.weights(f, lam, state, 0.7)
    out = (np.full(n, np.nan), np.full((n, 2), np.nan))
    got = _amf.weights(f, lam, state, 0.7, out=out)
    for a, b, c in zip(got, want, out):
        assert a is c
        np.testing.assert_array_equal(a, b)
    for bad in [(np.empty(n - 1), np.empty((n, 2))), (np.empty(n), np.empty((n, 3))),
                (np.empty(n, dtype=np.float32), np.empty((n, 2))),
                (np.empty(2 * n)[::2], np.empty((n, 2))),
                (np.empty(n), np.empty((n, 4))[:, :2])]:
        with pytest.raises(ValueError, match="out"):
            _amf.weights(f, lam, state, 0.7, out=bad)
    shared = np.empty(3 * n)
    with pytest.raises(ValueError, match="overlap"):
        _amf.weights(f, lam, state, 0.7, out=(shared[:n], shared[n // 2:n // 2 + 2 * n]
                                              .reshape(n, 2)))
    inside_state = state.reshape(-1)[:2 * n].reshape(n, 2)   # a view of the state
    with pytest.raises(ValueError, match="state"):
        _amf.weights(f, lam, state, 0.7, out=(np.empty(n), inside_state))
    comp = np.ascontiguousarray(amf.regression_components(state))
    cache = {}
    first = amf.predict(f, X[:20], f.lifetime, state, 0.7, comp, 1, cache)
    buffers = cache["buffers"]
    second = amf.predict(f, X[:20], lam, state, 0.7, comp, 1, cache)
    assert cache["buffers"][1] is buffers[1] and cache["coef"] is buffers[1]
    np.testing.assert_array_equal(second, amf.predict(f, X[:20], lam, state, 0.7, comp, 1))
    np.testing.assert_array_equal(first, amf.predict(f, X[:20], f.lifetime, state, 0.7, comp, 1))
