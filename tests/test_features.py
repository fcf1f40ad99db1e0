"""MondrianFeatures: the Mondrian kernel's random features (paper Secs. 2-4)."""
import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp

from mondrian import MondrianFeatures, laplace_kernel


def per_tree(Phi, n_trees):
    """(indices, data) of a Mondrian feature matrix as (n_rows, n_trees) arrays.

    Every row has exactly one entry per tree, stored in tree order.
    """
    Phi = Phi.tocsr()
    n = Phi.shape[0]
    assert np.array_equal(np.diff(Phi.indptr), np.full(n, n_trees))
    return Phi.indices.reshape(n, n_trees), Phi.data.reshape(n, n_trees)


def _pairwise_tree_values(Phi_a, Phi_b, n_trees):
    """Per-tree kernel values M * phi_m(a) phi_m(b) for all row pairs: (n_a, n_b, M)."""
    ia, da = per_tree(Phi_a, n_trees)
    ib, db = per_tree(Phi_b, n_trees)
    same = ia[:, None, :] == ib[None, :, :]
    return same * da[:, None, :] * db[None, :, :] * n_trees


def _assert_within_5_se(values, exact, mask):
    """Mean over trees within 5 standard errors of the exact kernel.

    Trees are independent, so the mean of M per-tree values has standard
    error std/sqrt(M); a 5-SE deviation has probability < 6e-7 per pair
    (normal approximation, M in the thousands), so over a few hundred pairs
    a correct implementation fails with probability < 1e-3.
    """
    m = values.shape[-1]
    mean = values.mean(axis=-1)
    se = values.std(axis=-1, ddof=1) / np.sqrt(m)
    assert mask.sum() > 10
    dev = np.abs(mean - exact)[mask]
    assert np.all(dev <= 5 * se[mask]), (dev / se[mask]).max()


def test_prop1_training_pairs():
    # Prop. 1: E[k_1(x, x')] = exp(-lambda ||x - x'||_1) for points the trees were grown on.
    X = np.random.default_rng(0).random((25, 3))
    lam, M = 1.5, 4000
    mf = MondrianFeatures(n_trees=M, lifetime=lam, random_state=1, n_jobs=2)
    values = _pairwise_tree_values(*(2 * [mf.fit_transform(X)]), M)
    exact = laplace_kernel(X, X, lam)
    # Pairs with k in (0.02, 0.98) have a non-degenerate per-tree variance.
    _assert_within_5_se(values, exact, (exact > 0.02) & (exact < 0.98))


def test_prop1_new_points_outside_hull():
    # The expected feature of a new point (conditional Mondrian, DESIGN §3) keeps
    # phi(x_train)^T phi(x) unbiased also outside the training data's box.
    rng = np.random.default_rng(2)
    X = rng.random((20, 2))
    new = np.array([[1.4, 0.5], [-0.3, -0.2], [0.5, 1.25], [0.3, 0.6], [2.0, 2.0]])
    lam, M = 1.0, 8000
    mf = MondrianFeatures(n_trees=M, lifetime=lam, random_state=3, n_jobs=2).fit(X)
    values = _pairwise_tree_values(mf.transform(X), mf.transform(new), M)
    exact = laplace_kernel(X, new, lam)
    _assert_within_5_se(values, exact, exact > 0.02)
    # kernel() is the mean of the same per-tree values.
    assert np.allclose(mf.kernel(X, new), values.mean(axis=-1), rtol=0, atol=1e-12)


def test_features_at_smaller_lifetime_are_unbiased():
    # One forest serves every lambda <= Lambda (Sec. 4.1).
    X = np.random.default_rng(4).random((20, 2))
    M = 4000
    mf = MondrianFeatures(n_trees=M, lifetime=4.0, random_state=5, n_jobs=2).fit(X)
    new = np.array([[1.2, 0.4], [0.5, 0.5]])
    for lam in (0.5, 2.0):
        values = _pairwise_tree_values(mf.transform(X, lam), mf.transform(new, lam), M)
        exact = laplace_kernel(X, new, lam)
        _assert_within_5_se(values, exact, (exact > 0.02) & (exact < 0.98))


def test_root_split_time_is_exponential():
    # Sec. 2.2: the first cut of a box with linear dimension L comes at Exp(L).
    X = np.array([[0.0, 0.0], [1.0, 0.5], [0.2, 0.3]])
    L = 1.5
    M = 20000
    mf = MondrianFeatures(n_trees=M, lifetime=50.0, random_state=6).fit(X)
    forest = mf.forest_
    t = forest.tau[forest.roots]
    assert np.all(np.isfinite(t))  # P(no split by 50) = exp(-75)
    # Mean of Exp(L) is 1/L with standard deviation 1/L: 5 standard errors.
    assert abs(t.mean() - 1 / L) <= 5 / L / np.sqrt(M)
    # Dimension chosen with probability extent/L: dim 0 with 1/1.5.
    dims = forest.feature[forest.roots]
    p = 1.0 / L
    assert abs(np.mean(dims == 0) - p) <= 5 * np.sqrt(p * (1 - p) / M)


def _reference_leaf_sizes(X, lam, rng):
    """Leaf sizes of one Mondrian tree on X grown to lam the textbook way:
    every node's exact data box, split at Exp(linear dimension)."""
    sizes, stack = [], [(np.arange(X.shape[0]), 0.0)]
    while stack:
        rows, t0 = stack.pop()
        lo, hi = X[rows].min(axis=0), X[rows].max(axis=0)
        ext = hi - lo
        L = ext.sum()
        t = t0 + rng.exponential(1 / L) if L > 0 else np.inf
        if not t <= lam:
            sizes.append(rows.size)
            continue
        d = rng.choice(ext.size, p=ext / L)
        a = rng.uniform(lo[d], hi[d])
        left = X[rows, d] <= a
        stack += [(rows[left], t), (rows[~left], t)]
    return np.array(sizes)


def test_thinned_sampler_matches_the_exact_box_sampler():
    # grow.c draws each node's split from a bound of its box (its parent's,
    # cut) and rejects the candidates that miss the points (thinning); nodes
    # of more than 16 points take that path.  Against the textbook sampler
    # (exact boxes), on 400 points in 4-D: the pairs' co-occurrence is the
    # Laplace kernel (Prop. 1), and the number of leaves and of leaves with
    # one point have the same mean.  5 standard errors of the difference of
    # two independent means (2000 trees each): a correct sampler fails with
    # probability ~1e-6 per comparison.
    rng = np.random.default_rng(21)
    X = rng.random((400, 4))
    lam, M = 3.0, 2000
    mf = MondrianFeatures(n_trees=M, lifetime=lam, random_state=22, n_jobs=2).fit(X)
    f = mf.forest_
    leaf = np.asarray(f.left) < 0
    tree = np.asarray(f.tree_of)
    count = np.asarray(f.end) - np.asarray(f.start)
    ours_leaves = np.bincount(tree[leaf], minlength=M)
    ours_single = np.bincount(tree[leaf & (count == 1)], minlength=M)
    ref = [_reference_leaf_sizes(X, lam, rng) for _ in range(M)]
    ref_leaves = np.array([s.size for s in ref])
    ref_single = np.array([np.sum(s == 1) for s in ref])
    for ours, theirs in ((ours_leaves, ref_leaves), (ours_single, ref_single)):
        se = np.sqrt(ours.var(ddof=1) / M + theirs.var(ddof=1) / M)
        assert abs(ours.mean() - theirs.mean()) <= 5 * se, (ours.mean(), theirs.mean(), se)
    assert ref_leaves.mean() > 20  # the trees do split nodes of more than 16 points
    pairs = rng.choice(400, (60, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    Phi = mf.transform(X).tocsr()
    idx, _ = per_tree(Phi, M)
    same = (idx[pairs[:, 0]] == idx[pairs[:, 1]]).mean(axis=1)
    exact = np.exp(-lam * np.abs(X[pairs[:, 0]] - X[pairs[:, 1]]).sum(axis=1))
    se = np.sqrt(exact * (1 - exact) / M)
    mask = (exact > 0.02) & (exact < 0.98)
    assert mask.sum() > 10
    assert np.all(np.abs(same - exact)[mask] <= 5 * se[mask])


def test_exactly_M_entries_per_row_and_values():
    rng = np.random.default_rng(7)
    X = rng.random((300, 4))
    M = 37
    mf = MondrianFeatures(n_trees=M, lifetime=3.0, random_state=0)
    Phi = mf.fit_transform(X)
    assert isinstance(Phi, sp.csr_array) and Phi.dtype == np.float64
    assert np.array_equal(np.diff(Phi.indptr), np.full(300, M))
    assert np.all(Phi.data == 1.0 / np.sqrt(M))
    assert Phi.shape[1] == mf.n_cells_
    # Every column is used by some training point.
    assert np.array_equal(np.unique(Phi.indices), np.arange(Phi.shape[1]))
    # Tree m's cells are one block of columns, in tree order.
    idx, _ = per_tree(Phi, M)
    assert np.all(np.diff(idx, axis=1) > 0)
    new = rng.normal(size=(50, 4)) * 2
    Q = mf.transform(new)
    assert np.array_equal(np.diff(Q.indptr), np.full(50, M))
    assert np.all((Q.data > 0) & (Q.data <= 1 / np.sqrt(M)))
    assert Q.shape[1] == Phi.shape[1]


def test_fit_transform_equals_transform_of_training_data(rng):
    X = rng.random((200, 3))
    mf = MondrianFeatures(n_trees=20, lifetime=5.0, random_state=1)
    Phi = mf.fit_transform(X)
    for lam in (None, 0.0, 1.0, 5.0):
        A = mf.transform(X, lam)
        B = mf.training_features(lam)
        assert (A != B).nnz == 0
    assert (mf.transform(X) != Phi).nnz == 0


def test_lifetime_zero_is_one_cell_per_tree(rng):
    X = rng.random((30, 2))
    mf = MondrianFeatures(n_trees=5, lifetime=2.0, random_state=0).fit(X)
    Phi = mf.transform(rng.normal(size=(10, 2)) * 10, lifetime=0.0)
    assert Phi.shape == (10, 5)
    assert np.all(Phi.toarray() == 1 / np.sqrt(5))


def test_partitions_refine_with_lifetime(rng):
    # Cuts are never removed (Sec. 4.1): same cell at lambda2 => same cell at lambda1 < lambda2.
    X = rng.random((150, 3))
    M = 10
    mf = MondrianFeatures(n_trees=M, lifetime=8.0, random_state=2).fit(X)
    prev = None
    for lam in (0.0, 0.5, 2.0, 4.0, 8.0):
        idx, _ = per_tree(mf.training_features(lam), M)
        if prev is not None:
            for m in range(M):
                fine, coarse = idx[:, m], prev[:, m]
                # Each fine cell lies inside one coarse cell.
                pairs = np.unique(np.stack([fine, coarse]), axis=1)
                assert np.unique(pairs[0]).size == pairs.shape[1]
        prev = idx


def test_tree_structure_invariants(rng):
    # Global node ids: tree m owns [node_offset[m], node_offset[m+1]), root first.
    X = rng.random((120, 3))
    X[:, 2] = 0.25  # a constant column never gets cut
    mf = MondrianFeatures(n_trees=8, lifetime=6.0, random_state=3).fit(X)
    f = mf.forest_
    off, perm_all = f.node_offset, f.perm
    assert off[0] == 0 and off[-1] == f.n_nodes and np.all(np.diff(off) >= 1)
    for m in range(f.n_trees):
        perm = perm_all[m]
        assert np.array_equal(np.sort(perm), np.arange(120))
        root = off[m]
        assert f.start[root] == 0 and f.end[root] == 120 and f.parent[root] == -1
        for j in range(off[m], off[m + 1]):
            assert f.tree_of[j] == m
            pts = X[perm[f.start[j]:f.end[j]]]
            assert np.array_equal(f.lower[j], pts.min(axis=0))
            assert np.array_equal(f.upper[j], pts.max(axis=0))
            left, right = f.left[j], f.right[j]
            if left < 0:
                assert right < 0 and np.isinf(f.tau[j]) and f.feature[j] == -1
                continue
            assert off[m] < left < off[m + 1] and off[m] < right < off[m + 1]
            d, a = f.feature[j], f.threshold[j]
            assert d != 2
            assert f.lower[j, d] <= a < f.upper[j, d]
            assert f.tau[j] <= f.lifetime
            assert f.parent[left] == j and f.parent[right] == j and j < left and j < right
            assert (f.start[left] == f.start[j] and f.end[left] == f.start[right]
                    and f.end[right] == f.end[j])
            assert np.all(X[perm[f.start[left]:f.end[left]], d] <= a)
            assert np.all(X[perm[f.start[right]:f.end[right]], d] > a)
            p = f.parent[j]
            if p >= 0:
                assert f.tau[j] >= f.tau[p]
    # trees_ gives the same trees in local ids.
    for m, t in enumerate(mf.trees_):
        lo = off[m]
        assert t.n_nodes == off[m + 1] - lo
        for name in ("parent", "left", "right"):
            g = getattr(f, name)[lo:off[m + 1]]
            np.testing.assert_array_equal(getattr(t, name), np.where(g >= 0, g - lo, -1))
        np.testing.assert_array_equal(t.split_time, f.tau[lo:off[m + 1]])
        np.testing.assert_array_equal(t.perm, perm_all[m])


def test_same_seed_same_features_for_any_thread_count(rng):
    X = rng.random((400, 5))
    new = rng.random((50, 5)) * 1.5
    outs = []
    for n_jobs in (1, 2, 1):
        mf = MondrianFeatures(n_trees=30, lifetime=3.0, random_state=42, n_jobs=n_jobs)
        outs.append((mf.fit_transform(X), mf.transform(new)))
    for A, B in outs[1:]:
        assert (A != outs[0][0]).nnz == 0 and (B != outs[0][1]).nnz == 0
    other = MondrianFeatures(n_trees=30, lifetime=3.0, random_state=43).fit_transform(X)
    assert other.shape != outs[0][0].shape or (other != outs[0][0]).nnz > 0


def test_random_state_kinds(rng):
    X = rng.random((50, 2))
    a = MondrianFeatures(n_trees=4, lifetime=2.0, random_state=np.random.SeedSequence(9))
    b = MondrianFeatures(n_trees=4, lifetime=2.0, random_state=np.random.SeedSequence(9))
    assert (a.fit_transform(X) != b.fit_transform(X)).nnz == 0
    gen = np.random.default_rng(0)
    c = MondrianFeatures(n_trees=4, lifetime=2.0, random_state=gen)
    c.fit(X)  # a Generator is consumed: a second fit draws new trees
    first = c.forest_.tau[c.forest_.roots].copy()
    c.fit(X)
    assert not np.array_equal(first, c.forest_.tau[c.forest_.roots])
    # A RandomState seeds the forest from its stream, as scikit-learn does.
    d = MondrianFeatures(n_trees=4, lifetime=2.0, random_state=np.random.RandomState(0))
    e = MondrianFeatures(n_trees=4, lifetime=2.0, random_state=np.random.RandomState(0))
    assert (d.fit_transform(X) != e.fit_transform(X)).nnz == 0


def test_pickle_round_trip(rng):
    X = rng.random((100, 3))
    new = rng.random((20, 3)) * 2 - 0.5
    mf = MondrianFeatures(n_trees=15, lifetime=4.0, random_state=0).fit(X)
    mf2 = pickle.loads(pickle.dumps(mf))
    for lam in (None, 1.0):
        assert (mf.transform(new, lam) != mf2.transform(new, lam)).nnz == 0
    for name in ("node_offset", "tree_of", "parent", "left", "right", "feature", "threshold",
                 "tau", "lower", "upper", "start", "end", "perm", "X"):
        assert np.array_equal(getattr(mf.forest_, name), getattr(mf2.forest_, name))
    # Continuing the trees after unpickling gives the same forest as without pickling.
    mf.extend(6.0)
    mf2.extend(6.0)
    assert (mf.transform(new) != mf2.transform(new)).nnz == 0


def test_tree_arrays_are_read_only(rng):
    mf = MondrianFeatures(n_trees=1, lifetime=1.0, random_state=0).fit(rng.random((20, 2)))
    with pytest.raises(ValueError):
        mf.forest_.threshold[0] = 1.0
    with pytest.raises(ValueError):
        mf.trees_[0].threshold[0] = 1.0


def test_fit_copies_X_so_extend_ignores_later_changes(rng):
    # The forest keeps its own copy of the training points: changing the
    # caller's array after fit must not corrupt extend (it did when the
    # estimator kept a reference to X).
    X = rng.random((100, 3))
    new = rng.random((20, 3))
    ref = MondrianFeatures(n_trees=10, lifetime=1.0, random_state=0).fit(X.copy()).extend(5.0)
    mf = MondrianFeatures(n_trees=10, lifetime=1.0, random_state=0).fit(X)
    X[:] = rng.random((100, 3)) * 10
    mf.extend(5.0)
    a, b = mf.transform(new), ref.transform(new)
    assert a.shape == b.shape and (a != b).nnz == 0
    assert (mf.training_features() != ref.training_features()).nnz == 0


def test_extend_keeps_cells_and_is_unbiased():
    X = np.random.default_rng(8).random((15, 2))
    M = 4000
    mf = MondrianFeatures(n_trees=M, lifetime=0.5, random_state=9, n_jobs=2).fit(X)
    before = mf.transform(X, 0.5)
    mf.extend(2.0)
    assert mf.lifetime_ == 2.0
    assert (mf.transform(X, 0.5) != before).nnz == 0
    # Memorylessness: the extended forest is a Mondrian forest with lifetime 2.
    values = _pairwise_tree_values(*(2 * [mf.training_features()]), M)
    exact = laplace_kernel(X, X, 2.0)
    _assert_within_5_se(values, exact, (exact > 0.02) & (exact < 0.98))
    with pytest.raises(ValueError, match="below the fitted lifetime"):
        mf.extend(1.0)


def test_concurrent_transforms_agree(rng):
    # The C lookups release the GIL; concurrent calls on one model must not interfere.
    X = rng.random((300, 4))
    new = rng.random((500, 4)) * 1.2
    mf = MondrianFeatures(n_trees=40, lifetime=3.0, random_state=0, n_jobs=2).fit(X)
    ref = mf.transform(new)
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda lam: mf.transform(new, lam), [None, 3.0, None, 3.0]))
    for out in outs:
        assert (out != ref).nnz == 0


@pytest.mark.parametrize("X", [
    np.array([[0.5, 1.0]]),                       # one sample
    np.ones((10, 3)),                             # all rows identical
    np.repeat(np.random.default_rng(0).random((5, 2)), 4, axis=0),  # duplicate rows
    np.random.default_rng(1).random((40, 1)),     # D = 1
    np.random.default_rng(2).random((30, 3)).astype(np.float32),  # float32
])
def test_edge_case_inputs(X):
    M = 6
    mf = MondrianFeatures(n_trees=M, lifetime=10.0, random_state=0)
    Phi = mf.fit_transform(X)
    assert Phi.shape[0] == X.shape[0]
    assert np.array_equal(np.diff(Phi.indptr), np.full(X.shape[0], M))
    # Identical rows always share a cell.
    _, inverse = np.unique(np.asarray(X, dtype=np.float64), axis=0, return_inverse=True)
    idx, _ = per_tree(Phi, M)
    for g in np.unique(inverse):
        rows = idx[inverse.ravel() == g]
        assert np.all(rows == rows[0])
    assert (mf.transform(X) != Phi).nnz == 0


def test_kernel_defaults_and_shape(rng):
    X = rng.random((12, 2))
    mf = MondrianFeatures(n_trees=10, lifetime=1.0, random_state=0).fit(X)
    K = mf.kernel(X)
    assert K.shape == (12, 12)
    assert np.allclose(np.diag(K), 1.0)
    assert np.allclose(K, K.T)
    assert mf.kernel(X, rng.random((3, 2))).shape == (12, 3)


def test_transform_fast_and_full_validation_agree(rng):
    # A C-contiguous finite float64 ndarray skips scikit-learn's generic
    # checks; every other form goes through them.  Both give the same Φ,
    # and the shortcut never lets a non-finite value or a wrong width pass.
    X = rng.random((60, 3))
    mf = MondrianFeatures(n_trees=8, lifetime=3.0, random_state=0).fit(X)
    X_new = rng.random((15, 3)) * 2 - 0.5
    ref = mf.transform(X_new).toarray()
    for other in (np.hstack([X_new, X_new])[:, :3], X_new.tolist(), np.asfortranarray(X_new)):
        np.testing.assert_array_equal(mf.transform(other).toarray(), ref)
    for bad in (np.nan, np.inf, -np.inf):
        X_bad = X_new.copy()
        X_bad[4, 1] = bad
        with pytest.raises(ValueError, match="NaN|infinity"):
            mf.transform(X_bad)
    with pytest.raises(ValueError, match="features"):
        mf.transform(np.ascontiguousarray(X_new[:, :2]))
    # Finite entries whose sum overflows take the full path and are accepted.
    huge = np.full((2, 3), 1e308)
    assert mf.transform(huge).shape == (2, mf.n_cells_)


def test_spawn_streams_are_the_generators_spawn_and_restore_the_collector():
    import gc

    from mondrian._streams import spawn_bit_generators as spawn_streams

    a, b = np.random.default_rng(5), np.random.default_rng(5)
    for n in (7, 3):  # twice: the parent's counter moves on as with spawn
        ours = spawn_streams(a, n)
        theirs = [g.bit_generator for g in b.spawn(n)]
        assert [g.state for g in ours] == [g.state for g in theirs]
    assert gc.isenabled()
    gc.disable()
    try:
        spawn_streams(a, 2)
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


@pytest.mark.parametrize("n", [300, 1500])
def test_auto_lifetime_is_the_data_scale(n):
    """lifetime='auto' (the default) is λ₀ = 1/median ℓ₁ distance, on at
    most 1000 rows drawn from random_state; the trees are those of the
    number itself (the draws do not touch the trees' streams), and λ₀
    follows the units of X."""
    from mondrian._scale import lifetime_scale
    X = np.random.default_rng(5).normal(size=(n, 4)) * [1.0, 10.0, 1e3, 1e-2]
    auto = MondrianFeatures(n_trees=20, random_state=0).fit(X)
    lam = lifetime_scale(X, np.random.default_rng(0))
    assert auto.lifetime_ == lam
    fixed = MondrianFeatures(n_trees=20, lifetime=lam, random_state=0).fit(X)
    assert (auto.transform(X) != fixed.transform(X)).nnz == 0
    scaled = MondrianFeatures(n_trees=20, random_state=0).fit(X * 1000.0)
    assert scaled.lifetime_ == pytest.approx(lam / 1000.0, rel=1e-12)


def test_auto_lifetime_of_the_estimators_on_raw_data():
    """MondrianKernelRidge and MondrianSGDClassifier take the same default:
    on features of very different scales, lifetime=1 gave one cell per
    point and tree, 'auto' a few per tree: λ₀ of the features divided by
    their standard deviations (feature_scale='auto'), or, with
    feature_scale=None, of the raw features."""
    from mondrian import MondrianKernelRidge, MondrianSGDClassifier
    from mondrian._scale import lifetime_scale
    rng = np.random.default_rng(1)
    X = rng.random((400, 3)) * [1e5, 1.0, 1e3]
    y = np.sin(X[:, 0] / 2e4)
    std = np.std(X, axis=0)
    for scale, Z in ((None, X), ("auto", X / std)):
        lam = lifetime_scale(Z, np.random.default_rng(0))
        for model in (MondrianKernelRidge(n_trees=10, random_state=0, feature_scale=scale),
                      MondrianSGDClassifier(n_trees=10, random_state=0, feature_scale=scale)):
            model.fit(X, y) if isinstance(model, MondrianKernelRidge) else model.fit(X, y > 0.5)
            assert model.features_.lifetime_ == lam
            assert model.features_.n_cells_ < 10 * 40
    assert MondrianFeatures(n_trees=10, lifetime=1.0, random_state=0).fit(X).n_cells_ == 4000


def test_dot_is_the_sparse_product_without_the_matrix(rng):
    """``dot`` gives the numbers of ``transform(X, λ) @ coef`` exactly (each
    row sums its trees in tree order, as scipy's CSR product): vector and
    matrix coef, lifetimes below Λ, points outside the training box, after
    insertions (columns numbered by key), with rotations, for any n_jobs."""
    X = rng.random((300, 3))
    Y = rng.random((150, 3)) * 1.6 - 0.3
    for mf in (MondrianFeatures(n_trees=30, lifetime=4.0, random_state=0, n_jobs=1).fit(X),
               MondrianFeatures(n_trees=30, lifetime=4.0, random_state=0,
                                rotation="uniform").fit(X),
               MondrianFeatures(n_trees=30, lifetime=4.0, random_state=0).fit(X)
               .partial_fit(rng.random((40, 3)) * 1.2)):
        for lam in (None, 1.5, 0.0):
            P = mf.transform(Y, lam)
            W = rng.standard_normal((P.shape[1], 3))
            np.testing.assert_array_equal(mf.dot(Y, W, lam), P @ W)
            for n_jobs in (1, 2):
                mf.set_params(n_jobs=n_jobs)
                np.testing.assert_array_equal(mf.dot(Y, W[:, 1], lam), P @ W[:, 1])
    with pytest.raises(ValueError, match="X: Found array with 0 sample"):
        mf.dot(Y[:0], W[:, 0])      # as transform


def test_training_features_rdot_is_the_transposed_product(rng):
    """Φᵀv read off the node slices equals the sparse product
    ``training_features(λ).T @ v`` to rounding (prefix sums: |error| below
    1e-13 for values of order 1 over 300 points), at Λ, below it and at 0,
    with rotations and after insertions (columns numbered by key)."""
    X = rng.random((300, 3))
    for mf in (MondrianFeatures(n_trees=30, lifetime=4.0, random_state=0).fit(X),
               MondrianFeatures(n_trees=30, lifetime=4.0, random_state=0,
                                rotation="uniform").fit(X),
               MondrianFeatures(n_trees=30, lifetime=4.0, random_state=0).fit(X)
               .partial_fit(rng.random((40, 3)) * 1.2)):
        v = rng.standard_normal(mf.forest_.n_points)
        for lam in (None, 1.5, 0.0):
            expected = mf.training_features(lam).T @ v
            got = mf.training_features_rdot(v, lam)
            assert got.shape == expected.shape
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-13)
    assert mf.training_features_rdot(np.arange(340), 0.0).shape == (30,)     # ints taken


@pytest.mark.parametrize("values, exc, match", [
    (np.ones(19), ValueError, "values must have shape"),
    (np.ones((20, 1)), ValueError, "values must have shape"),
    (np.array([np.nan] + [0.0] * 19), ValueError, "finite"),
    (np.array(["a"] * 20), TypeError, "real numbers"),
    (sp.csr_array(np.ones((20, 1))), TypeError, "dense"),
])
def test_training_features_rdot_refuses_bad_values(rng, values, exc, match):
    mf = MondrianFeatures(n_trees=7, lifetime=1.0, random_state=0).fit(rng.random((20, 2)))
    with pytest.raises(exc, match=match):
        mf.training_features_rdot(values)
    with pytest.raises(ValueError, match="lifetime"):
        mf.training_features_rdot(np.ones(20), 2.0)     # above the fitted lifetime
    mf.set_params(store_points=False).fit(rng.random((20, 2)))
    with pytest.raises(ValueError, match="keeps no training points"):
        mf.training_features_rdot(np.ones(20))


@pytest.mark.parametrize("coef, exc, match", [
    (np.ones(5), ValueError, "coef must have shape"),
    (np.ones((7, 0)), ValueError, "coef must have shape"),
    (np.array(["a"] * 7), TypeError, "real numbers"),
    (sp.csr_array(np.ones((7, 1))), TypeError, "dense"),
])
def test_dot_refuses_bad_coef(rng, coef, exc, match):
    mf = MondrianFeatures(n_trees=7, lifetime=0.0, random_state=0).fit(rng.random((20, 2)))
    assert mf.n_cells_ == 7     # one cell per tree at lifetime 0
    with pytest.raises(exc, match=match):
        mf.dot(rng.random((4, 2)), coef)
    with pytest.raises(ValueError, match="features"):
        mf.dot(rng.random((4, 3)), np.ones(7))


def test_column_numbering_is_kept_until_the_trees_change(rng):
    """``Forest.active_columns`` keeps the last lifetime's numbering (read
    only) so that transforms of a few rows do not renumber every node; an
    insertion or extension in place drops it, and the features follow."""
    X = rng.random((200, 2))
    mf = MondrianFeatures(n_trees=10, lifetime=3.0, random_state=0).fit(X)
    col_of_node, col_offset = mf.forest_.active_columns(3.0)
    assert not col_of_node.flags.writeable and not col_offset.flags.writeable
    assert mf.forest_.active_columns(3.0)[0] is col_of_node      # kept
    before = mf.transform(X[:5]).shape[1]
    mf.partial_fit(rng.random((30, 2)) * 3.0)                    # in place: no pins
    assert mf.transform(X[:5]).shape[1] == mf.n_cells_ > before
    assert mf.forest_.active_columns(3.0)[0].shape[0] == mf.forest_.n_nodes
    mf.extend(6.0)
    np.testing.assert_array_equal(mf.transform(X, 6.0).toarray(),
                                  mf.training_features(6.0).toarray()[:200])
