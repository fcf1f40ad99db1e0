"""Online learning (paper Sec. 5): insertion of points into a grown forest
(c/insert.h), MondrianFeatures.partial_fit and MondrianKernelRidge.partial_fit.

The distribution tests compare forests of many trees: the trees of a forest
are independent (each draws from its own stream), so one forest of M trees
gives M independent samples of a tree."""
import hashlib
import pickle
import platform
import sys

import numpy as np
import pytest
import scipy.linalg as la
from scipy import stats

from mondrian import MondrianFeatures, MondrianKernelRidge
from mondrian._ext._forest import Forest
from mondrian.path import ExactRidgePath, split_events

NODE_ARRAYS = ("tree_of", "parent", "left", "right", "feature", "start", "end",
               "threshold", "tau", "lower", "upper", "node_offset", "X", "perm",
               "column_keys")


def _streamed(X, n_trees, lifetime, seed, batches, n_jobs=1, first=1):
    """MondrianFeatures fitted on X[:first], then X[first:] inserted in
    consecutive batches of the given sizes (cycled)."""
    mf = MondrianFeatures(n_trees, lifetime, random_state=seed, n_jobs=n_jobs)
    mf.partial_fit(X[:first])
    a, k = first, 0
    while a < len(X):
        b = batches[k % len(batches)]
        mf.partial_fit(X[a:a + b])
        a, k = a + b, k + 1
    return mf


def _assert_forest_valid(forest):
    """The C check (run on unpickling) accepts the forest, and every node's
    box is the tight bounding box of its points (what the distribution of
    the next insertions depends on)."""
    g = pickle.loads(pickle.dumps(forest))
    assert g.n_nodes == forest.n_nodes
    X, perm = forest.X, forest.perm
    lower, upper = forest.lower, forest.upper
    for j in range(forest.n_nodes):
        pts = X[perm[forest.tree_of[j], forest.start[j]:forest.end[j]]]
        np.testing.assert_array_equal(lower[j], pts.min(axis=0))
        np.testing.assert_array_equal(upper[j], pts.max(axis=0))


# ---------------------------------------------------------------- structure
def test_inserted_forest_is_valid_and_every_reader_agrees(rng):
    X = rng.random((300, 3))
    mf = _streamed(X, 8, 3.0, 0, [1, 5, 40], first=20)
    f = mf.forest_
    assert f.n_points == 300 and f.has_column_keys
    _assert_forest_valid(f)
    # Tree m's nodes contiguous, root first, parents before children.
    for m in range(f.n_trees):
        lo, hi = f.node_offset[m], f.node_offset[m + 1]
        assert f.parent[lo] == -1 and np.all(f.tree_of[lo:hi] == m)
        assert np.all(f.parent[lo + 1:hi] < np.arange(lo + 1, hi))
    # Lookups of the points (now training points) agree with the slices.
    for lam in (0.5, 3.0):
        a, b = mf.transform(X, lam), mf.training_features(lam)
        np.testing.assert_array_equal(a.toarray(), b.toarray())
        assert np.all(b.data == 1 / np.sqrt(8))
        np.testing.assert_allclose(mf.gram(lam), (b.T @ b).toarray(), rtol=0, atol=1e-12)
    # Node sums and events (the path's readers) against numpy formulas.
    ev = split_events(mf)
    internal = np.flatnonzero(f.left >= 0)
    np.testing.assert_array_equal(ev.nodes, internal[np.lexsort((internal, f.tau[internal]))])
    values = rng.standard_normal(300)
    expected = [values[f.perm[f.tree_of[j], f.start[j]:f.end[j]]].sum()
                for j in range(f.n_nodes)]
    np.testing.assert_allclose(ev.node_sums(values), expected, rtol=1e-12, atol=1e-12)


def test_exact_path_learner_on_an_inserted_forest_matches_a_direct_solve(rng):
    X = rng.random((150, 2))
    y = np.sin(3 * X[:, 0]) + X[:, 1]
    mf = _streamed(X, 6, 2.0, 1, [7, 30], first=10)
    path = ExactRidgePath(split_events(mf), y - y.mean(), [0.3])
    path.run(2.0)
    Phi = mf.training_features()
    G = mf.gram()
    G[np.diag_indices_from(G)] += 0.3
    w = la.solve(G, Phi.T @ (y - y.mean()))
    np.testing.assert_allclose(path.predict_points(np.arange(150))[0], Phi @ w,
                               rtol=1e-9, atol=1e-9)


def test_result_does_not_depend_on_batch_sizes_nor_threads(rng):
    X = rng.random((400, 4))
    ref = _streamed(X, 12, 4.0, 3, [399])
    for batches, n_jobs in (([1], 1), ([3, 17, 64], 2), ([100], 2)):
        other = _streamed(X, 12, 4.0, 3, batches, n_jobs=n_jobs)
        for name in NODE_ARRAYS:
            np.testing.assert_array_equal(getattr(other.forest_, name),
                                          getattr(ref.forest_, name), err_msg=name)
        np.testing.assert_array_equal(other.transform(X).toarray(), ref.transform(X).toarray())


def test_existing_columns_keep_their_index_and_new_ones_are_zero_for_old_points(rng):
    X = rng.random((500, 3))
    X[200:] = 2 * X[200:] - 0.5        # new points partly outside the hull
    mf = MondrianFeatures(10, 5.0, random_state=2).fit(X[:200])
    mf2 = pickle.loads(pickle.dumps(mf)).partial_fit(X[200:350]).partial_fit(X[350:])
    for lam in (1.0, 5.0):
        before = mf.transform(X[:200], lam).toarray()
        query = mf.transform(X[200:], lam).indices.reshape(300, 10)
        after = mf2.transform(X[:200], lam).toarray()
        c = before.shape[1]
        assert after.shape[1] > c
        np.testing.assert_array_equal(after[:, :c], before)
        assert not after[:, c:].any()
        # A new point either has a new cell in a tree or joined the very
        # cell its query walk reached before the insertion (insert.h: an
        # insertion never changes an old cell's points).
        cols = mf2.transform(X[200:], lam).indices.reshape(300, 10)
        old = cols < c
        assert 0 < old.mean() < 1
        np.testing.assert_array_equal(cols[old], query[old])
    assert mf2.n_cells_ == mf2.forest_.n_leaves == mf2.transform(X[:1]).shape[1]


def test_partial_fit_alone_and_after_fit(rng):
    X = rng.random((100, 2))
    alone = MondrianFeatures(5, 2.0, random_state=4).partial_fit(X[:30]).partial_fit(X[30:])
    fitted = MondrianFeatures(5, 2.0, random_state=4).fit(X[:30]).partial_fit(X[30:])
    np.testing.assert_array_equal(alone.forest_.tau, fitted.forest_.tau)
    assert alone.forest_.n_points == 100
    # fit starts afresh: the keys go, columns follow the trees again.
    alone.fit(X)
    assert not alone.forest_.has_column_keys and alone.forest_.n_points == 100


def test_shared_forest_is_copied_not_changed(rng):
    X = rng.random((60, 2))
    mf = MondrianFeatures(4, 2.0, random_state=0).fit(X[:30])
    events = split_events(mf)
    old = mf.forest_
    mf.partial_fit(X[30:])
    assert mf.forest_ is not old and old.n_points == 30 and mf.forest_.n_points == 60
    assert events.forest is old


def test_insert_into_rotated_forests_and_reject_bad_points(rng):
    X = rng.random((40, 3))
    new = rng.random((25, 3)) * 1.4 - 0.2      # some outside the boxes
    f = MondrianFeatures(3, 2.0, random_state=0).fit(X).forest_
    # The identity rotation about 0 walks every tree exactly as no rotation.
    cls, args, state = f.__reduce__()
    identity = cls(*args)
    identity.__setstate__(dict(state, rotation=np.repeat(np.eye(3)[None], 3, axis=0),
                               center=np.zeros(3)))
    plain = f.copy().insert(new)
    identity.insert(new)
    for name in ("parent", "feature", "threshold", "tau", "lower", "upper", "perm"):
        np.testing.assert_array_equal(getattr(identity, name), getattr(plain, name))
    # A rotated forest takes points in each tree's own coordinates: after a
    # pickle round trip (which checks in C that every box holds its points,
    # rotated) the features of every point are those its leaves give.
    mf = MondrianFeatures(4, 2.0, random_state=1, rotation="uniform").fit(X)
    mf.partial_fit(new)
    forest = pickle.loads(pickle.dumps(mf.forest_))
    assert forest.n_points == 65
    for m in range(4):
        Z = forest.transform(np.vstack([X, new]), m)
        root = forest.node_offset[m]
        assert np.all(Z >= forest.lower[root] - 1e-12) and np.all(Z <= forest.upper[root] + 1e-12)
    Phi = mf.transform(np.vstack([X, new]))
    np.testing.assert_array_equal(Phi.sum(axis=1), np.full(65, 4 ** -0.5 * 4))
    g = f.copy()
    with pytest.raises(ValueError, match="finite"):
        g.insert(np.array([[0.5, np.nan, 0.5]]))
    with pytest.raises(ValueError, match="features"):
        g.insert(np.zeros((2, 2)))
    np.testing.assert_array_equal(g.tau, f.tau)
    assert g.n_points == 40 and not g.has_column_keys


def test_corrupt_column_keys_are_rejected(rng):
    X = rng.random((50, 2))
    f = MondrianFeatures(3, 3.0, random_state=0).fit(X[:10]).partial_fit(X[10:]).forest_
    cls, args, state = f.__reduce__()
    key = state["key"]
    leaves = np.flatnonzero(state["left"] < 0)
    bad = key.copy()
    bad[leaves[1]] = key[leaves[0]]           # two cells with one key
    with pytest.raises(ValueError, match="inconsistent"):
        cls(*args).__setstate__(dict(state, key=bad))
    with pytest.raises(ValueError, match="inconsistent"):
        cls(*args).__setstate__(dict(state, key=np.full_like(key, -1)))


# ------------------------------------------------------------- distribution
# Forests of M = 3000 trees on the same 40 points in the unit square, to
# Λ = 3 (about 10 leaves per tree): grown in batch, and grown online (fit on
# 2 points, the other 38 inserted in a random order in batches of 1, 5 and
# 13).  Two-sample comparisons of per-tree statistics use
# |mean_online - mean_batch| <= 5 se with se² = se_online² + se_batch² (the
# conftest rule: a false failure has probability ~6e-7 per comparison), and
# Kolmogorov-Smirnov tests reject at p < 1e-4 (a false failure, with these
# fixed seeds, has probability 1e-4 per test).  A per-node bias of a few
# percent in the split rate shifts the mean cell count by several se.
N_TREES, LIFETIME = 3000, 3.0


@pytest.fixture(scope="module")
def forests():
    rng = np.random.default_rng(2024)
    X = rng.random((40, 2))
    batch = MondrianFeatures(N_TREES, LIFETIME, random_state=10).fit(X)
    order = rng.permutation(40)
    online = _streamed(X[order], N_TREES, LIFETIME, 11, [1, 5, 13], first=2)
    return X, batch.forest_, online.forest_


def _cells(forest, lam):
    _, offset = forest.active_columns(lam)
    return np.diff(offset)


def _depth(forest, x):
    out = np.empty(forest.n_trees)
    left, right = forest.left, forest.right
    feature, threshold = forest.feature, forest.threshold
    for m, j in enumerate(forest.roots):
        d = 0
        while left[j] >= 0:
            j = left[j] if x[feature[j]] <= threshold[j] else right[j]
            d += 1
        out[m] = d
    return out


def test_online_and_batch_forests_have_the_same_distribution(forests, assert_within_k_se,
                                                             mean_and_se):
    X, batch, online = forests
    samples = {}
    for lam in (0.5, 1.5, 3.0):
        samples[f"cells at {lam}"] = (_cells(online, lam), _cells(batch, lam))
    # The root splits after Λ (tau = inf) with probability e^{-Λ L} ~ 0.3 %:
    # compare the censored time min(τ, Λ).
    samples["root split time"] = (np.minimum(online.tau[online.roots], LIFETIME),
                                  np.minimum(batch.tau[batch.roots], LIFETIME))
    samples["depth of x0"] = (_depth(online, X[0]), _depth(batch, X[0]))
    samples["depth of x17"] = (_depth(online, X[17]), _depth(batch, X[17]))
    for name, (a, b) in samples.items():
        (ma, sa), (mb, sb) = mean_and_se(a), mean_and_se(b)
        assert_within_k_se(ma, mb, np.hypot(sa, sb))
        assert stats.ks_2samp(a, b).pvalue > 1e-4, name
    # Root split dimension: proportional to the root box's extents (the box
    # of all 40 points in both forests).  Bernoulli se from the exact p.
    ext = X.max(axis=0) - X.min(axis=0)
    p = ext[0] / ext.sum()
    for forest in (online, batch):
        frac = np.mean(forest.feature[forest.roots] == 0)
        assert_within_k_se(frac, p, np.sqrt(p * (1 - p) / N_TREES))


def test_split_times_are_exponential_given_the_box(forests):
    """Every node j with a non-degenerate box: E = τ_j - τ_parent is Exp(L_j)
    (L_j the linear dimension of its data box) censored at Λ - τ_parent.
    The probability integral transform U = 1 - exp(-L_j E), randomised
    uniformly above the censoring point for the leaves, is then iid U(0, 1)
    over all nodes (each E is a fresh exponential given the tree above it).
    With ~46,000 nodes a rate off by 10 % fails the KS test (checked below:
    the test has that power); river's old rate 1/L is far off."""
    _, batch, online = forests
    check = np.random.default_rng(5)
    for forest in (online, batch):
        L = (forest.upper - forest.lower).sum(axis=1)
        parent = forest.parent
        t0 = np.where(parent >= 0, forest.tau[np.maximum(parent, 0)], 0.0)
        keep = L > 0
        internal = forest.left >= 0
        F = 1 - np.exp(-L * np.where(internal, forest.tau - t0, LIFETIME - t0))
        U = np.where(internal, F, F + (1 - F) * check.random(forest.n_nodes))[keep]
        assert U.size > 10000
        assert stats.kstest(U, "uniform").pvalue > 1e-4
        # Against a rate 10 % too high: the test has the power to see it.
        F2 = 1 - np.exp(-1.1 * L * np.where(internal, forest.tau - t0, LIFETIME - t0))
        U2 = np.where(internal, F2, F2 + (1 - F2) * check.random(forest.n_nodes))[keep]
        assert stats.kstest(U2, "uniform").pvalue < 1e-4


def test_online_kernel_estimate_is_unbiased_inside_and_outside_the_hull(assert_within_k_se):
    """k_M(x_i, z) = φ(x_i)ᵀφ(z) with x_i a point inserted online and z any
    point: an average over M iid trees of the tree's product, unbiased for
    exp(-λ‖x_i - z‖₁) (Prop. 1 with the expected features of Sec. 2.4);
    se = sample std of the per-tree products over √M."""
    rng = np.random.default_rng(7)
    X = rng.random((30, 2))
    M, lam = 4000, 2.0
    mf = _streamed(X, M, lam, 8, [4, 9], first=3)
    Z = np.array([[0.5, 0.5], [0.2, 0.9], [1.4, 0.3], [-0.5, 1.6], [3.0, 3.0]])
    Phi_x = mf.transform(X[[0, 7, 29]]).toarray() * np.sqrt(M)
    Phi_z = mf.transform(Z).toarray() * np.sqrt(M)
    for i, x in enumerate(X[[0, 7, 29]]):
        truth = np.exp(-lam * np.abs(Z - x).sum(axis=1))
        per_tree = Phi_x[i][None, :] * Phi_z          # (n_z, columns), one cell per tree
        # Sum each tree's column block: the product of the tree's entries.
        prods = np.zeros((Z.shape[0], M))
        cols = mf.transform(Z).indices.reshape(Z.shape[0], M)
        for q in range(Z.shape[0]):
            prods[q] = per_tree[q, cols[q]]
        est = prods.mean(axis=1)
        se = prods.std(axis=1, ddof=1) / np.sqrt(M)
        assert_within_k_se(est, truth, se, atol=1e-12)


# -------------------------------------------------------------------- ridge
def _batch_solution(model, X, y, alpha):
    """Ridge on every point seen with the model's trees: ΦᵀΦ from the trees,
    targets centred by their mean."""
    f = model.features_
    Phi = f.training_features()
    G = f.gram()
    G[np.diag_indices_from(G)] += alpha
    w = la.solve(G, Phi.T @ (y - y.mean(axis=0)), assume_a="pos")
    return w, Phi


@pytest.mark.parametrize("solver", ["auto", "cg"])
def test_exact_online_ridge_equals_the_batch_fit_on_all_points(rng, solver):
    X = rng.random((1200, 3))
    y = np.sin(5 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(1200)
    model = MondrianKernelRidge(10, 3.0, alpha=0.2, random_state=3, solver=solver, tol=1e-12)
    model.partial_fit(X[:50], y[:50])
    # Small blocks take the dtpqrt update (6 b < C, C ~ 500-800), the block of
    # 150 a new factorisation.
    sizes = [1, 3, 37, 1, 5, 150]
    a, k = 50, 0
    while a < 1200:
        b = sizes[k % len(sizes)]
        model.partial_fit(X[a:a + b], y[a:a + b])
        a, k = a + b, k + 1
    assert k > 30 and model.coef_.shape[0] > 6 * 37
    assert model.solver_ == ("cholesky-primal" if solver == "auto" else "cg")
    w, Phi = _batch_solution(model, X, y, 0.2)
    # The 1e-8 relative (CG: to a residual of 1e-12 relative).
    np.testing.assert_allclose(model.coef_, w, rtol=1e-8, atol=1e-8 * np.abs(w).max())
    np.testing.assert_allclose(model.intercept_, y.mean(), rtol=1e-12)
    pred = model.predict(X)
    expected = Phi @ w + y.mean()
    assert np.abs(pred - expected).max() <= 1e-8 * np.abs(expected).max()


def test_online_ridge_multi_target_and_fit_then_partial_fit(rng):
    X = rng.random((400, 2))
    Y = np.column_stack([np.cos(4 * X[:, 0]), X[:, 1] ** 2])
    model = MondrianKernelRidge(10, 3.0, alpha=0.5, random_state=0).fit(X[:100], Y[:100])
    for a in range(100, 400, 60):
        model.partial_fit(X[a:a + 60], Y[a:a + 60])
    w, _ = _batch_solution(model, X, Y, 0.5)
    np.testing.assert_allclose(model.coef_, w, rtol=1e-8, atol=1e-8 * np.abs(w).max())
    assert model.coef_.shape == (model.features_.n_cells_, 2)
    with pytest.raises(ValueError, match="target"):
        model.partial_fit(X[:5], Y[:5, 0])


def test_inserting_a_point_that_creates_no_cell_keeps_the_columns(rng):
    """A copy of a training point lies in its leaf's box in every tree (gap
    0 everywhere), so it creates no cell: the columns, hence the warm start
    of the CG learner (the earlier weights, nothing to pad), are unchanged,
    and both learners reach the ridge solution on all points."""
    X = rng.random((100, 2))
    y = np.sin(4 * X[:, 0])
    for solver in ("cg", "cholesky"):
        model = MondrianKernelRidge(5, 3.0, alpha=0.5, solver=solver, tol=1e-12,
                                    random_state=0).fit(X, y)
        c, nodes = model.coef_.shape[0], model.features_.forest_.n_nodes
        Xa, ya = np.vstack([X, X[[3]]]), np.append(y, 0.7)
        model.partial_fit(X[[3]], ya[-1:])
        assert model.coef_.shape[0] == c and model.features_.forest_.n_nodes == nodes
        w, _ = _batch_solution(model, Xa, ya, 0.5)
        np.testing.assert_allclose(model.coef_, w, rtol=1e-8, atol=1e-10)


def _snapshot(model):
    f = model.features_.forest_
    return (model.coef_.copy(), np.copy(model.intercept_), f.n_points, f.n_nodes,
            np.array(f.tau), model._online.n)


@pytest.mark.parametrize("bad, match", [
    (lambda X, y: (X[:, :2], y), "features"),
    (lambda X, y: (np.where(X == X[0, 0], np.nan, X), y), "NaN|finite"),
    (lambda X, y: (X, None), "requires y"),
    (lambda X, y: (X, y[:-1]), "inconsistent|samples"),
    (lambda X, y: (X, np.full_like(y, np.inf)), "infinity|finite"),
])
def test_bad_input_leaves_the_fitted_state_unchanged(rng, bad, match):
    X = rng.random((60, 3))
    y = X.sum(axis=1)
    model = MondrianKernelRidge(4, 2.0, random_state=0).fit(X[:40], y[:40])
    model.partial_fit(X[40:50], y[40:50])
    before = _snapshot(model)
    Xb, yb = bad(X[50:], y[50:])
    with pytest.raises(ValueError, match=match):
        model.partial_fit(Xb, yb)
    after = _snapshot(model)
    for u, v in zip(before, after):
        np.testing.assert_array_equal(u, v)
    mf = model.features_
    if Xb.shape[1] != 3 or not np.isfinite(Xb).all():
        with pytest.raises(ValueError):
            mf.partial_fit(Xb)
        assert mf.forest_.n_points == before[2]


def test_online_ridge_identical_for_one_and_two_threads(rng):
    X = rng.random((300, 2))
    y = X[:, 0] - X[:, 1]
    out = []
    for n_jobs in (1, 2):
        model = MondrianKernelRidge(8, 3.0, random_state=5, n_jobs=n_jobs)
        for a in range(0, 300, 45):
            model.partial_fit(X[a:a + 45], y[a:a + 45])
        out.append((model.coef_, model.predict(X)))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


# ------------------------------------------------------- streams, node caps
def test_store_points_false_keeps_the_trees_and_refuses_point_readers(rng):
    X = rng.random((900, 3))
    kept = MondrianFeatures(6, 3.0, random_state=1).fit(X[:100])
    lean = MondrianFeatures(6, 3.0, random_state=1, store_points=False).fit(X[:100])
    for a in range(100, 900, 200):
        kept.partial_fit(X[a:a + 200])
        lean.partial_fit(X[a:a + 200])
    f, g = kept.forest_, lean.forest_
    assert not g.stores_points and g.n_points == f.n_points == 900
    for name in NODE_ARRAYS:
        if name not in ("X", "perm"):
            np.testing.assert_array_equal(getattr(g, name), getattr(f, name), err_msg=name)
    np.testing.assert_array_equal(lean.transform(X).toarray(), kept.transform(X).toarray())
    for call in (lean.training_features, lean.gram, lambda: lean.extend(4.0),
                 lambda: split_events(lean).node_sums(np.ones(900)), lambda: g.X):
        with pytest.raises(ValueError, match="store_points=False"):
            call()
    h = pickle.loads(pickle.dumps(g))      # the C check of a forest without points
    assert h.n_points == 900 and not h.stores_points
    np.testing.assert_array_equal(h.end - h.start, g.end - g.start)
    # fit_transform gives the training features before the points are dropped.
    Phi = MondrianFeatures(6, 3.0, random_state=1, store_points=False).fit_transform(X[:100])
    np.testing.assert_array_equal(Phi.toarray(), kept.transform(X[:100], 3.0).toarray()
                                  [:, :Phi.shape[1]])


def test_ridge_without_points_equals_ridge_with_points(rng):
    X = rng.random((800, 2))
    y = np.sin(5 * X[:, 0]) * X[:, 1]
    models = [MondrianKernelRidge(8, 3.0, alpha=0.3, random_state=0, store_points=s)
              for s in (True, False)]
    for model in models:
        model.partial_fit(X[:100], y[:100])
        for a in range(100, 800, 70):
            model.partial_fit(X[a:a + 70], y[a:a + 70])
    np.testing.assert_allclose(models[1].coef_, models[0].coef_, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="exact solver"):
        MondrianKernelRidge(store_points=False, solver="cg").fit(X, y)
    lean = models[1].set_params(alpha=1.0)
    before = lean.coef_.copy()
    with pytest.raises(ValueError, match="store_points=False"):
        lean.partial_fit(X[:5], y[:5])
    np.testing.assert_array_equal(lean.coef_, before)


def test_node_cap_bounds_memory_over_a_long_stream():
    """10⁶ points streamed into trees capped at 255 nodes, without points:
    the node count and the allocated node capacity stop growing once the
    cap is reached (memory O(nodes), not O(points)), and the features of the
    stream's points stay exact (value 1/√M: every point is in its cells)."""
    rng = np.random.default_rng(3)
    mf = MondrianFeatures(5, 20.0, random_state=0, store_points=False, max_nodes=255)
    mf.partial_fit(rng.random((100, 2)))
    capacity = {}
    for k in range(100):
        batch = rng.random((10_000, 2))
        mf.partial_fit(batch)
        assert np.all(np.diff(mf.forest_.node_offset) <= 255)
        if k in (9, 99):
            capacity[k] = mf.forest_.node_capacity
    f = mf.forest_
    assert f.n_points == 1_000_100 and not f.stores_points
    assert np.all(np.diff(f.node_offset) >= 253)       # the cap was reached
    assert capacity[9] == capacity[99] and f.n_nodes <= 5 * 255
    Phi = mf.transform(batch[:500])
    np.testing.assert_array_equal(Phi.data, np.full(2500, 1 / np.sqrt(5)))


# ------------------------------------------------------------- prequential
def test_prequential_predicts_each_batch_before_learning_it(rng):
    from mondrian.online import prequential

    X = rng.random((700, 2))
    y = np.cos(3 * X[:, 0]) + X[:, 1] + 2.0
    seen = []
    result = prequential(MondrianKernelRidge(6, 2.0, random_state=0), X, y, batch_size=100,
                         report_every=250, callback=lambda n, e: seen.append((n, e)))
    np.testing.assert_array_equal(result.n_seen, [300, 500, 700])
    assert [n for n, _ in seen] == [300, 500, 700]
    # The same by hand: batch k predicted by the model learnt on batches < k.
    model = MondrianKernelRidge(6, 2.0, random_state=0)
    err = num = 0.0
    for a in range(0, 700, 100):
        if a:
            err += np.sum((model.predict(X[a:a + 100]) - y[a:a + 100]) ** 2)
            num += np.sum(y[a:a + 100] ** 2)
        model.partial_fit(X[a:a + 100], y[a:a + 100])
    assert result.error[-1] == pytest.approx(100 * np.sqrt(err / num), rel=1e-12)
    np.testing.assert_array_equal(result.model.coef_, model.coef_)
    assert np.all(np.diff(result.seconds) >= 0)
    with pytest.raises(ValueError, match="batch_size"):
        prequential(model, X, y, batch_size=0)
    with pytest.raises(ValueError, match="rows"):
        prequential(model, X, y[:-1])


def test_online_command_prints_the_learning_curve_and_writes_the_plot(tmp_path, capsys):
    from mondrian.cli import main

    status = main(["online", "--n-trees", "10", "--batch-size", "1000", "--every", "2000",
                   "--seed", "1", "--output-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0
    assert "shuffled with seed 1" in out and "progressive error" in out
    rows = [line.split() for line in out.splitlines()
            if line.strip() and line.split()[0].isdigit() and len(line.split()) == 2]
    assert [int(r[0]) for r in rows] == [2000, 4000, 6000, 6554]
    errors = [float(r[1]) for r in rows]
    assert all(0 < e < 30 for e in errors)       # CPU targets: a sane regression error
    assert "test error" in out and "batch fit on all points" in out
    pytest.importorskip("matplotlib")
    assert (tmp_path / "online.png").stat().st_size > 0


# -------------------------------------------------------------- classifier
def _xor(rng, n):
    X = rng.random((n, 2))
    return X, ((X[:, 0] - 0.5) * (X[:, 1] - 0.5) > 0).astype(int)


@pytest.mark.parametrize("loss", ["log_loss", "hinge"])
def test_sgd_classifier_learns_xor_online_and_in_batch(loss):
    """XOR in the unit square is not linearly separable; the Laplace kernel
    at λ = 5 separates it.  Accuracy on 1000 fresh points (fixed seeds)
    above 0.9: a linear model gets about 0.5."""
    from mondrian import MondrianSGDClassifier

    rng = np.random.default_rng(0)
    X, y = _xor(rng, 3000)
    Xt, yt = _xor(rng, 1000)
    batch = MondrianSGDClassifier(50, 5.0, loss=loss, random_state=0).fit(X, y)
    online = MondrianSGDClassifier(50, 5.0, loss=loss, random_state=0)
    for a in range(0, 3000, 100):
        online.partial_fit(X[a:a + 100], y[a:a + 100], classes=[0, 1])
    for model in (batch, online):
        assert model.score(Xt, yt) > 0.9
    assert online.t_ == 3000 and online.coef_.shape == (online.features_.n_cells_,)
    if loss == "log_loss":
        p = online.predict_proba(Xt)
        np.testing.assert_allclose(p.sum(axis=1), 1.0)
        np.testing.assert_array_equal(online.classes_[p.argmax(axis=1)], online.predict(Xt))
    else:
        with pytest.raises(AttributeError, match="log_loss"):
            online.predict_proba(Xt)


def test_sgd_classifier_multiclass_and_class_checks(rng):
    from mondrian import MondrianSGDClassifier

    X = rng.random((1500, 2))
    y = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [0.33, 0.66])]
    model = MondrianSGDClassifier(30, 5.0, random_state=0)
    with pytest.raises(ValueError, match="classes must be passed"):
        model.partial_fit(X[:10], y[:10])
    model.partial_fit(X[:500], y[:500], classes=["a", "b", "c"])
    model.partial_fit(X[500:], y[500:])
    assert model.coef_.shape == (model.features_.n_cells_, 3)
    assert model.score(X, y) > 0.9
    before = (model.coef_.copy(), model.t_, model.features_.forest_.n_points)
    with pytest.raises(ValueError, match="not among the classes"):
        model.partial_fit(X[:5], np.array(["a", "b", "d", "a", "a"]))
    with pytest.raises(ValueError, match="differs"):
        model.partial_fit(X[:5], y[:5], classes=["a", "b"])
    np.testing.assert_array_equal(model.coef_, before[0])
    assert (model.t_, model.features_.forest_.n_points) == before[1:]


def test_sgd_classifier_same_for_one_and_two_threads(rng):
    from mondrian import MondrianSGDClassifier

    X, y = _xor(rng, 400)
    coefs = []
    for n_jobs in (1, 2):
        model = MondrianSGDClassifier(10, 3.0, random_state=4, n_jobs=n_jobs)
        for a in range(0, 400, 64):
            model.partial_fit(X[a:a + 64], y[a:a + 64], classes=[0, 1])
        coefs.append(model.coef_)
    np.testing.assert_array_equal(coefs[0], coefs[1])


def test_sgd_classifier_rotated_trees(rng):
    """rotation='uniform' reaches the trees (each with its rotation), online
    and in batch, and learns XOR; a bad value is refused by name."""
    from mondrian import MondrianSGDClassifier

    X, y = _xor(rng, 600)
    model = MondrianSGDClassifier(30, 5.0, random_state=0, rotation="uniform")
    for a in range(0, 600, 100):
        model.partial_fit(X[a:a + 100], y[a:a + 100], classes=[0, 1])
    assert model.features_.forest_.rotation is not None
    reference = MondrianSGDClassifier(30, 5.0, random_state=0).partial_fit(
        X[:100], y[:100], classes=[0, 1])
    assert reference.features_.forest_.rotation is None
    assert model.score(X, y) > 0.8
    batch = MondrianSGDClassifier(30, 5.0, random_state=0, rotation="uniform").fit(X, y)
    assert batch.features_.forest_.rotation is not None and batch.score(X, y) > 0.8
    with pytest.raises(ValueError, match="rotation"):
        MondrianSGDClassifier(rotation="random").fit(X, y)


def test_extend_after_partial_fit_renumbers_the_columns_and_keeps_the_trees(rng):
    X = rng.random((200, 2))
    mf = MondrianFeatures(4, 2.0, random_state=0).fit(X[:50]).partial_fit(X[50:])
    cells_at_2 = mf.transform(X, 2.0).toarray()
    mf.extend(4.0)
    f = mf.forest_
    assert not f.has_column_keys and f.n_points == 200
    _assert_forest_valid(f)
    # The cells at λ <= 2 are unchanged, up to the column order.
    again = mf.transform(X, 2.0).toarray()
    assert again.shape == cells_at_2.shape
    np.testing.assert_array_equal(again @ again.T, cells_at_2 @ cells_at_2.T)
    with pytest.raises(ValueError, match="fit it first"):
        Forest(2, 2).insert(np.zeros((1, 2)))


def test_partial_fit_after_extend_keeps_the_forest_valid(rng):
    # extend appends the new nodes after a tree's old ones, so the next
    # insertion's renumbering moves some old nodes before others: insert.c
    # then copies the old boxes aside instead of moving them in place (the
    # order it checks).  Boxes, slices and links must come out right either
    # way, and the cells at the fitted lifetime are those of the points'
    # lookups.
    X = rng.random((400, 3))
    mf = MondrianFeatures(6, 2.0, random_state=3).fit(X[:300])
    mf.extend(6.0)
    mf.partial_fit(X[300:350]).partial_fit(X[350:])
    f = mf.forest_
    assert f.n_points == 400
    _assert_forest_valid(f)
    for m in range(f.n_trees):
        lo, hi = f.node_offset[m], f.node_offset[m + 1]
        assert np.all(f.parent[lo + 1:hi] < np.arange(lo + 1, hi))
    for lam in (1.0, 6.0):
        np.testing.assert_array_equal(mf.transform(X, lam).toarray(),
                                      mf.training_features(lam).toarray())


def test_parallel_insertion_of_a_large_batch_equals_the_serial_one(rng):
    """40 trees x 30,000 points: above insert.c's serial threshold (2^20
    entries of work), so n_jobs=2 runs the trees on two threads."""
    X = rng.random((30_000, 2))
    forests = [_streamed(X, 40, 2.0, 9, [15_000], n_jobs=n_jobs, first=100).forest_
               for n_jobs in (1, 2)]
    for name in NODE_ARRAYS:
        np.testing.assert_array_equal(getattr(forests[0], name), getattr(forests[1], name),
                                      err_msg=name)


@pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
                    reason="digests recorded on x86-64 Linux (glibc's log)")
@pytest.mark.parametrize("max_nodes, expected", [(None, "aafbb3053c3d5155"),
                                                 (41, "f313628a6d9c36b0")])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_insertion_reproduces_the_copying_implementation_bit_for_bit(max_nodes, expected,
                                                                     n_jobs):
    """Digests recorded with insert.c before the walk enlarged the boxes in
    place (commit c58694a: every tree's boxes copied into a scratch and
    back): trees of unequal sizes, so that the in-place moves of the boxes
    overlap, and a node cap that some trees reach before others."""
    X = np.random.default_rng(5).random((400, 3))
    mf = MondrianFeatures(12, 4.0, random_state=1, n_jobs=n_jobs, max_nodes=max_nodes)
    mf.partial_fit(X[:10])
    a, k, sizes = 10, 0, [1, 7, 50, 120]
    while a < len(X):
        b = sizes[k % 4]
        mf.partial_fit(X[a:a + b])
        a, k = a + b, k + 1
    f = mf.forest_
    h = hashlib.sha256()
    for name in NODE_ARRAYS:
        h.update(np.ascontiguousarray(getattr(f, name)).tobytes())
    assert h.hexdigest()[:16] == expected
    _assert_forest_valid(f)


@pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
                    reason="digests recorded on x86-64 Linux (glibc's log)")
@pytest.mark.parametrize("d, n, lifetime, rotation, expected", [
    (1, 500, 50.0, None, "2a6cd63c43ffa79f"),
    (21, 800, 1e3, None, "c30990312220d836"),      # boxes of three cache lines a side
    (300, 300, 2.0, None, "9bc4d34406e42af7"),     # rows of 38 lines
    (8, 500, 1e3, "uniform", "4f777dd82b7f6b74"),  # walks in each tree's coordinates
])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_insertion_walk_by_bisection_reproduces_the_node_by_node_walk(d, n, lifetime, rotation,
                                                                     expected, n_jobs):
    """Digests recorded with insert.c's node-by-node walk (ba84393: every
    box on the path tested in turn) before the walk took the path by the
    cuts first and bisected the prefix of boxes that hold the point: the
    same draws, so the same trees, at one feature, at 21 (the CPU data's),
    at 300 (the prefetch of long rows) and in a rotated forest, on full-depth
    and shallow trees, in batches of 1 to 1000 points."""
    X = np.random.default_rng(d).standard_normal((n, d))
    mf = MondrianFeatures(7, lifetime, random_state=3, n_jobs=n_jobs, rotation=rotation)
    mf.fit(X[:50])
    a = 50
    for b in (1, 2, 30, 1, 200, 5, 1000):
        mf.partial_fit(X[a:a + b])
        a += b
        if a >= n:
            break
    f = mf.forest_
    h = hashlib.sha256()
    for name in NODE_ARRAYS:
        h.update(np.ascontiguousarray(getattr(f, name)).tobytes())
    assert h.hexdigest()[:16] == expected
    if rotation is None:
        _assert_forest_valid(f)     # boxes against X (a rotated forest's are not in X's axes)
    else:
        assert pickle.loads(pickle.dumps(f)).n_nodes == f.n_nodes   # the C check accepts it
