"""Invalid input raises ValueError/TypeError naming the argument."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from mondrian import MondrianFeatures, MondrianKernelRidge, laplace_kernel

X = np.random.default_rng(0).random((20, 3))
y = X.sum(axis=1)


@pytest.mark.parametrize("params, exc, match", [
    ({"n_trees": 0}, ValueError, "n_trees"),
    ({"n_trees": 2.5}, TypeError, "n_trees"),
    ({"n_trees": True}, TypeError, "n_trees"),
    ({"lifetime": -1.0}, ValueError, "lifetime"),
    ({"lifetime": np.inf}, ValueError, "lifetime"),
    ({"lifetime": np.nan}, ValueError, "lifetime"),
    ({"lifetime": "1"}, ValueError, "lifetime"),  # a string other than 'auto'
    ({"lifetime": None}, TypeError, "lifetime"),
    ({"n_jobs": 0}, ValueError, "n_jobs"),
    ({"n_jobs": 1.5}, TypeError, "n_jobs"),
    ({"random_state": "seed"}, TypeError, "random_state"),
    ({"random_state": -3}, ValueError, "random_state"),
])
def test_bad_parameters(params, exc, match):
    with pytest.raises(exc, match=match):
        MondrianFeatures(**params).fit(X)
    with pytest.raises(exc, match=match):
        MondrianKernelRidge(**params).fit(X, y)


@pytest.mark.parametrize("params, match", [
    ({"alpha": 0.0}, "alpha"), ({"alpha": -1.0}, "alpha"), ({"alpha": np.nan}, "alpha"),
    ({"solver": "lsqr"}, "solver"), ({"tol": 0.0}, "tol"),
])
def test_bad_ridge_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        MondrianKernelRidge(**params).fit(X, y)


@pytest.mark.parametrize("bad, match", [
    (np.array([[0.0, np.nan, 1.0]]), "NaN"),
    (np.array([[0.0, np.inf, 1.0]]), "infinity"),
    (np.zeros((0, 3)), "0 sample"),
    (np.zeros((4, 0)), "0 feature"),
    (np.zeros(5), "2D array"),
    (np.zeros((2, 2, 2)), "dim"),
    (np.array([[1e308, 0.0], [-1e308, 1.0]]), "overflow"),
])
def test_bad_X_in_fit(bad, match):
    with pytest.raises(ValueError, match=match):
        MondrianFeatures().fit(bad)


def test_sparse_input_is_rejected_clearly():
    with pytest.raises(TypeError, match="sparse"):
        MondrianFeatures().fit(sp.csr_array(X))
    mf = MondrianFeatures(n_trees=3).fit(X)
    with pytest.raises(TypeError, match="sparse"):
        mf.transform(sp.csr_matrix(X))
    with pytest.raises(TypeError, match="sparse"):
        laplace_kernel(sp.csr_array(X))


def test_bad_transform_input():
    mf = MondrianFeatures(n_trees=3, lifetime=2.0, random_state=0).fit(X)
    with pytest.raises(ValueError, match="features"):
        mf.transform(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="NaN"):
        mf.transform(np.array([[np.nan, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="exceeds the fitted lifetime"):
        mf.transform(X, lifetime=2.5)
    with pytest.raises(ValueError, match="lifetime"):
        mf.transform(X, lifetime=-0.1)
    with pytest.raises(ValueError, match="lifetime"):
        mf.kernel(X, lifetime=np.nan)
    with pytest.raises(ValueError, match="features"):
        mf.kernel(X, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="lifetime"):
        mf.extend(np.inf)


def test_unfitted_use_is_an_error():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        MondrianFeatures().transform(X)
    with pytest.raises(NotFittedError):
        MondrianKernelRidge().predict(X)


def test_bad_y():
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        MondrianKernelRidge().fit(X, y[:-1])
    with pytest.raises(ValueError, match="NaN"):
        MondrianKernelRidge().fit(X, np.where(np.arange(20) == 3, np.nan, y))


def test_laplace_kernel_bad_input():
    with pytest.raises(ValueError, match="lifetime"):
        laplace_kernel(X, lifetime=-1.0)
    with pytest.raises(ValueError, match="features"):
        laplace_kernel(X, np.zeros((2, 4)))
    with pytest.raises(ValueError, match="NaN"):
        laplace_kernel(np.array([[np.nan]]))
    with pytest.raises(ValueError, match="2-dimensional"):
        laplace_kernel(np.zeros(3))


# ----------------------------------------------------------------- issue 10
def test_same_seed_sequence_gives_equal_fits():
    ss = np.random.SeedSequence(2024)
    mf = MondrianFeatures(n_trees=4, lifetime=3.0, random_state=ss)
    a = mf.fit_transform(X).toarray()
    b = mf.fit_transform(X).toarray()
    np.testing.assert_array_equal(a, b)
    assert ss.n_children_spawned == 0       # the caller's sequence is not consumed


def test_huge_thread_counts_are_capped_or_refused():
    from mondrian._validation import available_cores, resolve_n_jobs

    assert resolve_n_jobs(10**5) == available_cores()
    with pytest.raises(ValueError, match="n_jobs"):
        resolve_n_jobs(2**40)
    mf = MondrianFeatures(n_trees=4, random_state=0, n_jobs=10**5).fit(X)
    ref = MondrianFeatures(n_trees=4, random_state=0, n_jobs=1).fit(X)
    assert (mf.transform(X) != ref.transform(X)).nnz == 0
    # The C seam caps a direct call too and names a bad count.
    f = mf.forest_
    assert f.features(None, 0.5, 10**6)[3] == f.features(None, 0.5, 1)[3]
    with pytest.raises(ValueError, match="n_threads"):
        f.gram(0.5, 0)


def test_mondrian_features_have_feature_names():
    mf = MondrianFeatures(n_trees=3, lifetime=2.0, random_state=0).fit(X)
    names = mf.get_feature_names_out()
    assert names.shape == (mf.n_cells_,) == (mf.transform(X).shape[1],)
    assert names[0] == "mondrianfeatures0" and names[-1] == f"mondrianfeatures{mf.n_cells_ - 1}"


def test_expected_leaves_bound_bounds_the_mean_leaf_count(mean_and_se):
    from mondrian.features.mondrian import expected_leaves_bound

    # Dense uniform points: the trees' leaves are nearly the Mondrian
    # process's cells, whose mean is prod(1 + lambda * extent).  The mean
    # over 200 trees must not exceed the bound by more than 5 standard errors.
    Xd = np.random.default_rng(1).random((4000, 2))
    mf = MondrianFeatures(n_trees=200, lifetime=3.0, random_state=0).fit(Xd)
    off = mf.forest_.node_offset
    leaves = (np.diff(off) + 1) / 2
    mean, se = mean_and_se(leaves)
    bound = expected_leaves_bound(Xd.shape[0], np.ptp(Xd, axis=0), 3.0)
    assert mean <= bound + 5 * se
    assert mean >= 0.9 * bound      # and the bound is nearly attained on dense data
    assert expected_leaves_bound(10, np.ones(3), 1e300) == 10.0


def test_memory_refusal_names_the_estimate_and_what_to_change(monkeypatch):
    import mondrian.features.mondrian as fm

    monkeypatch.setattr(fm, "available_memory", lambda: 10**6)
    with pytest.raises(MemoryError, match=r"needs about .* available; use fewer trees "
                                          r"\(n_trees=500\), a smaller lifetime"):
        MondrianFeatures(n_trees=500, lifetime=1e6, random_state=0).fit(X)
    monkeypatch.setattr(fm, "available_memory", lambda: 10**9)
    mf = MondrianFeatures(n_trees=5, lifetime=1.0, random_state=0).fit(X)
    monkeypatch.setattr(fm, "available_memory", lambda: 2 * 10**4)
    with pytest.raises(MemoryError, match="extending n_trees=5 trees"):
        mf.extend(1e6)
    assert mf.lifetime_ == 1.0


def test_insertion_refused_by_memory_leaves_the_forest_as_it_was(monkeypatch):
    import mondrian.features.mondrian as fm

    rng = np.random.default_rng(0)
    mf = MondrianFeatures(n_trees=20, lifetime=50.0, random_state=0).fit(rng.random((300, 3)))
    before = (mf.forest_.n_nodes, mf.forest_.n_points, np.array(mf.forest_.tau))
    # 5000 points into 20 trees: up to 2 * 5000 * 20 new nodes of 120 bytes
    # in the forest and their boxes (48 bytes) in the scratch, 34 MB:
    # refused with 10 MB available.
    monkeypatch.setattr(fm, "available_memory", lambda: 10 * 2**20)
    with pytest.raises(MemoryError, match=r"inserting 5000 points into n_trees=20 trees .*"
                                          r"insert fewer points at once"):
        mf.partial_fit(rng.random((5000, 3)))
    assert (mf.forest_.n_nodes, mf.forest_.n_points) == before[:2]
    np.testing.assert_array_equal(mf.forest_.tau, before[2])
    mf.partial_fit(rng.random((10, 3)))      # a small batch fits
    assert mf.forest_.n_points == 310


def test_feature_names_of_a_second_data_set_must_match():
    from mondrian._validation import check_feature_names

    class Frame:
        columns = ["a", "b", "d"]

    class Fitted:
        feature_names_in_ = np.array(["a", "b", "c"], dtype=object)

    with pytest.raises(ValueError, match="X_val has the columns"):
        check_feature_names(Fitted(), Frame(), "X_val")
    Frame.columns = ["a", "b", "c"]
    check_feature_names(Fitted(), Frame(), "X_val")          # same names: accepted
    check_feature_names(Fitted(), np.zeros((2, 3)), "X_val")  # no names: by position


def test_diverging_sgd_is_an_error():
    from mondrian.path import split_events
    from mondrian.path.learners import SGDPath

    mf = MondrianFeatures(n_trees=5, lifetime=3.0, random_state=0).fit(X)
    # Squared loss: a step changes a prediction by about 2*eta*(f - y)
    # (weights and intercept), so eta = 1.9 overshoots by a factor 2.8.
    path = SGDPath(split_events(mf), 100 * y, loss="squared", learning_rate=1.9, alpha=0.0,
                   random_state=np.random.default_rng(0))
    with pytest.raises(ValueError, match="SGD diverged.*learning_rate"):
        path.epochs(200)
    with pytest.raises(ValueError, match="learning_rate \\* alpha"):
        SGDPath(split_events(mf), y, loss="hinge", learning_rate=3.0, alpha=1.0)


def test_cg_path_memory_error_names_what_it_allocates(monkeypatch):
    # A failed allocation of the CG learner's state says what and how much.
    from mondrian._ext import _path
    from mondrian.path import split_events
    from mondrian.path.learners import CGRidgePath

    X = np.random.default_rng(0).random((40, 2))
    features = MondrianFeatures(n_trees=5, lifetime=2.0, random_state=0).fit(X)
    events = split_events(features)

    class Failing:
        def __init__(self, *args):
            raise MemoryError("Unable to allocate 1.00 TiB")

    monkeypatch.setattr(_path, "CGPath", Failing)
    with pytest.raises(MemoryError,
                       match=r"CG ridge path: .*40 points x 5 trees x 2 alphas.*n_trees"):
        CGRidgePath(events, X[:, 0], [0.1, 1.0])


def test_ridge_solve_converts_and_checks_its_inputs():
    from mondrian import ridge_solve
    rng = np.random.default_rng(0)
    X = rng.random((60, 3))
    y = X[:, 0]
    # Integer and boolean features are converted (the Gram matrix too).
    B = X > 0.5
    ref = ridge_solve(B.astype(float), y, 1.0).coef
    np.testing.assert_array_equal(ridge_solve(B, y, 1.0).coef, ref)
    G = B.T.astype(int) @ B.astype(int)
    np.testing.assert_allclose(ridge_solve(B.astype(int), y, 1.0, gram=G).coef, ref, rtol=1e-12)
    np.testing.assert_array_equal(ridge_solve(X.tolist(), y, 1.0).coef,
                                  ridge_solve(X, y, 1.0).coef)
    bad = X.copy()
    bad[3, 1] = np.nan
    cases = [((X[:, 0], y, 1.0), {}, "Phi must be 2-dimensional"),
             ((X, 3.0, 1.0), {}, "y must have shape"),
             ((X, y[:, None, None], 1.0), {}, "y must have shape"),
             ((bad, y, 1.0), {}, "Phi contains NaN"),
             ((X, np.where(y > 0.5, np.inf, y), 1.0), {}, "y contains NaN"),
             ((X * 1e200, y, 1.0), {}, "Phi is too large"),
             ((X[:0], y[:0], 1.0), {}, "Phi must be non-empty"),
             ((X, y, 1.0), {"tol": -1.0}, "tol"),
             ((X, y, 1.0), {"x0": np.zeros(5), "solver": "cg"}, "x0 must have shape"),
             ((X, y, 1.0), {"x0": np.full(3, np.nan), "solver": "cg"}, "x0 contains NaN")]
    for args, kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            ridge_solve(*args, **kwargs)
    with pytest.raises(TypeError, match="max_iter"):
        ridge_solve(X, y, 1.0, max_iter=2.5)


def test_ridge_alpha_too_small_for_the_factorisation_is_named():
    from mondrian import MondrianKernelRidge
    # Repeated rows make ΦΦᵀ exactly singular; alpha = 1e-300 vanishes
    # beside its unit diagonal, so the factorisation meets a zero pivot.
    X = np.repeat(np.random.default_rng(0).random((100, 3)), 2, axis=0)
    with pytest.raises(FloatingPointError, match="alpha"):
        MondrianKernelRidge(alpha=1e-300, random_state=0).fit(X, X[:, 0])


def test_kernel_cv_refuses_alphas_below_the_rounding_of_the_dual():
    """alpha = 1e-300 divided the eigendecomposition's rounding noise by
    itself (predictions of 1e285); below N·eps·(largest eigenvalue) an alpha
    scores inf, and a grid with nothing above it is refused."""
    from mondrian import MondrianKernelRidgeCV
    X = np.random.default_rng(0).random((200, 3))
    y = np.sin(3 * X[:, 0])
    for alphas in [(1e-300,), (1e-16,)]:
        with pytest.raises(FloatingPointError, match="alpha"):
            MondrianKernelRidgeCV(n_trees=10, random_state=0, alphas=alphas).fit(X, y)
    for cv in (None, 3):
        # 1e-2 is the grid's largest: a fit may warn that a larger one may
        # be better, which is beside the point here.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            mixed = MondrianKernelRidgeCV(n_trees=10, random_state=0, alphas=(1e-300, 1e-2),
                                          cv=cv).fit(X, y)
            alone = MondrianKernelRidgeCV(n_trees=10, random_state=0, alphas=(1e-2,),
                                          cv=cv).fit(X, y)
        assert mixed.alpha_ == 1e-2
        np.testing.assert_allclose(mixed.predict(X[:20]), alone.predict(X[:20]), rtol=1e-12)


def test_kernel_classifier_cv_with_nothing_to_hold_out_says_so():
    from mondrian import MondrianKernelClassifierCV
    X = np.random.default_rng(0).random((6, 3))
    for y in ([0, 1], [0, 1, 2]):
        with pytest.raises(ValueError, match="X_val"):
            MondrianKernelClassifierCV(n_trees=20, random_state=0).fit(X[:len(y)], y)
    model = MondrianKernelClassifierCV(n_trees=20, random_state=0).fit(
        X[:2], [0, 1], X_val=X[2:6], y_val=[0, 1, 0, 1])
    assert set(model.predict(X)) <= {0, 1}


def test_review_of_edge_inputs():
    """Inputs found by an adversarial review: each gave NaN, an overflow or
    an error that did not name its cause."""
    import mondrian as M
    import mondrian.theory as T
    rng = np.random.default_rng(0)
    X = rng.random((200, 3))
    y = X[:, 0]
    # A batch of equal, huge targets has centred norm 0: checked against
    # the fitted mean instead (std had been NaN).
    model = M.MondrianForestRegressor(n_trees=5, lifetime=2.0, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="too large for the forest's node statistics"):
        model.partial_fit(X[:5], np.full(5, 1e200))
    with pytest.raises(ValueError, match="too large for a Gaussian process likelihood"):
        M.SparseSpectrumGPRegressor(n_components=8, random_state=0).fit(X, y * 1e155)
    with pytest.raises(ValueError, match="too large for the forest's node statistics"):
        M.DebiasedMondrianForestRegressor(random_state=0).fit(X, y * 1e155)
    with pytest.raises(ValueError, match="breaks must be finite"):
        M.LifetimePosterior([0.0, np.nan, 1.0], [0.0, 1.0, 0.5], 2.0)
    with pytest.raises(ValueError, match="X_val has no rows"):
        M.MondrianKernelRidgeCV(n_trees=5).fit(X, y, X_val=X[:0], y_val=y[:0])
    with pytest.raises(ValueError, match="distance"):
        T.ssgp_sample_complexity(100, 1e-300, 0.1)
    for make in (lambda: M.MondrianFeatures(n_trees=3), lambda: M.MondrianKernelRidgeCV(n_trees=5),
                 lambda: M.MondrianForestRegressor(n_trees=3),
                 lambda: M.DebiasedMondrianForestRegressor(n_trees=3),
                 M.RandomFourierFeatures, M.RandomBinningFeatures):
        with pytest.raises(ValueError, match="rescale X or pass a lifetime"):
            make().fit(X * 1e-310, y)
    with pytest.raises(ValueError, match="rescale X or pass a length_scale"):
        M.RandomFourierFeatures(kernel="gaussian").fit(X * 1e-310)
    # A node cap no tree can reach is no cap (it overflowed the C size).
    capped = M.MondrianFeatures(n_trees=3, max_nodes=10**20, random_state=0).fit(X)
    free = M.MondrianFeatures(n_trees=3, random_state=0).fit(X)
    assert capped.partial_fit(X * 2).n_cells_ == free.partial_fit(X * 2).n_cells_
    # Distances beyond double precision: the kernels' limit 0, not an error or NaN.
    np.testing.assert_array_equal(M.rotated_laplace_kernel(X[:4] * 1e200), np.eye(4))
    np.testing.assert_array_equal(M.gaussian_kernel(X[:4] * 1e160), np.eye(4))
    np.testing.assert_array_equal(M.gaussian_kernel(X[:4], length_scale=1e-320), np.eye(4))


def test_gaussian_kernel_far_from_the_origin():
    """From the differences: exact for the (rounded) inputs at an offset of
    1e8, where the expansion ‖x‖² + ‖y‖² - 2xᵀy returned 1.0 for 0.487."""
    import mondrian as M
    X = np.random.default_rng(0).random((2, 3)) + 1e8
    d = X[0] - X[1]
    assert M.gaussian_kernel(X)[0, 1] == pytest.approx(np.exp(-0.5 * d @ d), rel=1e-14)


def test_unused_lifetime_and_asymmetric_gram_are_refused():
    import mondrian as M
    import mondrian.theory as T
    X = np.random.default_rng(0).random((20, 3))
    for value, exc in ((np.nan, ValueError), ("1", ValueError), (None, TypeError)):
        with pytest.raises(exc, match="lifetime"):
            M.RandomFourierFeatures(kernel="gaussian", lifetime=value).fit(X)
    K = M.laplace_kernel(X)
    bent = K.copy()
    bent[0, 1] += 0.5
    with pytest.raises(ValueError, match="symmetric"):
        T.gp_posterior(bent, K[:2], np.ones(2), X[:, 0], noise_variance=0.1)


def test_dot_product_kernels_beyond_double_precision_are_refused():
    """Kernel values above 1.8e308 are inf, not an approximation: a
    ValueError naming X instead of inf with a RuntimeWarning."""
    import mondrian as M
    X = np.random.default_rng(0).random((20, 3))
    cases = [lambda: M.polynomial_kernel(X * 1e200), lambda: M.exponential_kernel(X * 100),
             lambda: M.dot_product_kernel(X * 1e200, coefficients=(1.0, 1.0, 1.0)),
             lambda: M.RandomMaclaurinFeatures(random_state=0).fit(X).transform(X * 1e200)]
    for case in cases:
        with pytest.raises(ValueError, match="overflow double precision"):
            case()


def test_forest_partial_fit_refuses_a_joint_range_that_overflows():
    """Points kept aside by partial_fit are checked when they arrive: a range
    that overflows together with the trees' and the other waiting points'
    is refused at that call (naming X), and the refused points are not
    kept; points inside the range already checked are accepted."""
    import mondrian as M
    X = np.random.default_rng(0).random((50, 2))
    for model in (M.MondrianForestRegressor(n_trees=3, random_state=0, feature_scale=None),
                  M.MondrianForestRegressor(n_trees=3, random_state=0, aggregation=True,
                                            feature_scale=None)):
        model.fit(X, X[:, 0])
        model.partial_fit(np.array([[1e308, 0.5]]), [0.0])    # range 1e308: finite
        model.partial_fit(np.array([[0.5, 0.5]]), [0.0])      # inside: no new check
        with pytest.raises(ValueError, match="X: the feature ranges of X and the fitted"):
            model.partial_fit(np.array([[-1e308, 0.5]]), [0.0])
        assert sum(c[0].shape[0] for c in model.__dict__["_pending"]) == 2
        assert model.predict(X[:2]).shape == (2,)      # the two kept points inserted
        assert model.forest_.n_points == 52


def test_points_beyond_the_fitted_scale_are_refused():
    """With a feature_scale (the default 'std' of an automatic lifetime) the
    trees see x / l: a point whose coordinate overflows there (1e308 / 0.29)
    is refused by name wherever it comes in, and not kept."""
    import mondrian as M
    X = np.random.default_rng(0).random((50, 2))
    far = np.array([[1e308, 0.5]])
    for model in (M.MondrianForestRegressor(n_trees=3, random_state=0),
                  M.MondrianKernelRidgeCV(random_state=0),
                  M.DebiasedMondrianForestRegressor(n_trees=3, random_state=0)):
        model.fit(X, X[:, 0])
        assert model.feature_scale_ is not None
        with pytest.raises(ValueError, match="divided by the fitted feature_scale_ overflows"):
            model.predict(far)
        if hasattr(model, "partial_fit"):
            with pytest.raises(ValueError, match="feature_scale_ overflows"):
                model.partial_fit(far, [0.0])
            assert model.predict(X[:2]).shape == (2,)
            assert model.forest_.n_points == 50
    features = M.MondrianFeatures(3, 1.0, feature_scale=[1e-10, 1.0]).fit(X)
    with pytest.raises(ValueError, match="feature_scale_ overflows"):
        features.transform(np.array([[1e300, 0.5]]))


def test_target_scale_bound_at_its_edge():
    """``check_target_scale`` refuses exactly the targets whose centred norm
    exceeds MAX_TARGET_NORM: its shortcut (√n·max|y| within the bound
    implies the norm is) accepts nothing the norm would refuse."""
    from mondrian._validation import MAX_TARGET_NORM, check_target_scale
    edge = MAX_TARGET_NORM / np.sqrt(2.0)
    check_target_scale(np.array([edge, -edge]) * (1 - 1e-9))       # norm just below
    with pytest.raises(ValueError, match="too large"):
        check_target_scale(np.array([edge, -edge]) * (1 + 1e-9))   # norm just above
    check_target_scale(np.full(7, 0.9 * MAX_TARGET_NORM))           # centred norm 0
    with pytest.raises(ValueError, match="too large"):
        check_target_scale(np.full(7, 0.9 * MAX_TARGET_NORM), centre=False)
    rng = np.random.default_rng(0)
    for _ in range(200):   # the shortcut and the norm agree on random scales
        y = rng.standard_normal(rng.integers(1, 9)) * 10.0 ** rng.uniform(145, 152)
        norm = np.linalg.norm(y - y.mean())
        if norm > MAX_TARGET_NORM * (1 + 1e-12):
            with pytest.raises(ValueError):
                check_target_scale(y)
        elif norm < MAX_TARGET_NORM * (1 - 1e-12):
            check_target_scale(y)


def test_all_finite_and_largest_magnitude_without_flag_arrays():
    """``all_finite`` decides by the sum when it is finite and entry by
    entry otherwise: finite entries whose sum overflows are finite, a NaN or
    an infinity anywhere is not; ``largest_magnitude`` is max |entry|."""
    from mondrian._validation import all_finite, largest_magnitude
    rng = np.random.default_rng(3)
    a = rng.standard_normal((50, 7))
    assert all_finite(a)
    huge = np.full(4, 1e308)                          # the sum overflows to inf
    assert all_finite(huge) and all_finite(-huge)
    mixed = np.array([1e308, 1e308, -1e308, -1e308])  # the running sum overflows
    assert all_finite(mixed)
    for bad in (np.nan, np.inf, -np.inf):
        b = a.copy()
        b[31 // 7, 31 % 7] = bad
        assert not all_finite(b)
    assert not all_finite(np.array([np.inf, -np.inf]))  # the sum is NaN
    assert all_finite(np.zeros(0))
    # Past _SMALL_ENTRIES the sum decides first: the same answers.
    from mondrian._validation import _SMALL_ENTRIES
    n = 4 * _SMALL_ENTRIES
    assert all_finite(np.full(n, 1e308)) and all_finite(np.tile([1e308, -1e308], n // 2))
    for bad in (np.nan, np.inf, -np.inf):
        b = rng.standard_normal(n)
        b[n - 3] = bad
        assert not all_finite(b)
    assert not all_finite(np.tile([np.inf, -np.inf], n // 2))
    assert largest_magnitude(a) == np.max(np.abs(a))
    assert largest_magnitude(np.array([-5.0, 2.0])) == 5.0
    assert largest_magnitude(np.array([[3.0], [-1.0]])) == 3.0


def test_ridge_solve_tells_overflowing_finite_entries_from_nan():
    """Finite entries whose sum overflows are refused as too large, not as
    NaN (the finiteness test's fallback), and a NaN is named as such."""
    from mondrian.ridge import ridge_solve
    Phi = np.eye(4)
    with pytest.raises(ValueError, match="too large"):
        ridge_solve(Phi * 1e308, np.ones(4), 1.0)
    with pytest.raises(ValueError, match="too large"):
        ridge_solve(Phi, np.full(4, 1e308), 1.0)
    bad = Phi.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="Phi contains NaN"):
        ridge_solve(bad, np.ones(4), 1.0)


def test_one_class_message_names_the_class_as_written():
    """The single class is shown as the value it is (0, 'a'), not as numpy
    writes its scalars (np.int64(0))."""
    from mondrian import MondrianKernelClassifierCV, MondrianSGDClassifier
    X = np.random.default_rng(0).standard_normal((30, 2))
    for est, y, shown in ((MondrianKernelClassifierCV(), np.zeros(30, dtype=int), "(0)"),
                          (MondrianSGDClassifier(), np.zeros(30, dtype=int), "(0)"),
                          (MondrianKernelClassifierCV(), np.array(["a"] * 30), "('a')")):
        with pytest.raises(ValueError, match="class") as err:
            est.fit(X, y)
        assert shown in str(err.value) and "np." not in str(err.value)


def test_most_trees_fit_in_the_memory_it_is_given(monkeypatch):
    import mondrian.features.mondrian as fm

    rng = np.random.default_rng(1)
    Xb = rng.standard_normal((3000, 3))
    lam = 1.0

    def most(available, share=fm.MEMORY_SHARE, **kw):
        monkeypatch.setattr(fm, "available_memory", lambda: available)
        return fm._MemoryBudget(Xb, 500, 2).most_trees(Xb, lam, np.random.default_rng(0),
                                                       share=share, **kw)

    assert most(None) == 500                      # nothing known: as asked
    assert most(10**12) == 500                    # the bound fits
    assert most(8 * 10**6) == 0                   # not even one tree (and 4 MiB a thread)
    counts = [most(a) for a in (16 * 10**6, 24 * 10**6, 32 * 10**6, 48 * 10**6)]
    assert 0 < counts[0] and counts == sorted(counts) and counts[-1] < 500
    # What a caller keeps per tree and per node lowers the count.
    assert most(24 * 10**6, bytes_per_tree=8 * 3000, bytes_per_node=180) < counts[1]
    # The count it gives is a forest the fit's own check accepts, at a
    # tenth more memory than the share it was counted in (the check's
    # pilot trees are other draws than most_trees'; their node counts
    # differ by a few percent).
    r = most(16 * 10**6, share=0.9)
    monkeypatch.setattr(fm, "available_memory", lambda: 16 * 10**6)
    MondrianFeatures(n_trees=r, lifetime=lam, random_state=0, n_jobs=2).fit(Xb)
    with pytest.raises(MemoryError):
        MondrianFeatures(n_trees=2 * r, lifetime=lam, random_state=0, n_jobs=2).fit(Xb)


def test_most_trees_counts_on_a_subsample_when_no_pilot_fits(monkeypatch):
    # Points near a line in 6 dimensions: the bound on the nodes (4⁶ leaves
    # a tree at λ = 3) gives a count below M, far above what the trees hold,
    # and two pilot trees' worst case (2N - 1 nodes each) does not fit.  The
    # pilot then grows on as many random points as fit, its nodes scaled by
    # N over them (an upper bound in expectation); without room even for
    # that (PILOT_MIN_ROWS raised past N), the bound's count stands.  Both
    # are above 0, the pilot's at least the bound's (30 and 14 here: the
    # bound is looser), and both are forests the fit's own check accepts.
    import mondrian.features.mondrian as fm

    rng = np.random.default_rng(3)
    Xb = rng.random(200_000)[:, None] + 1e-3 * rng.standard_normal((200_000, 6))
    monkeypatch.setattr(fm, "available_memory", lambda: 12 * 10**7)
    budget = fm._MemoryBudget(Xb, 50, 2)
    assert budget._pilot_peak(2) > fm.MEMORY_SHARE * 12 * 10**7
    r = budget.most_trees(Xb, 3.0, np.random.default_rng(0))
    MondrianFeatures(n_trees=r, lifetime=3.0, random_state=0, n_jobs=2,
                     feature_scale=None).fit(Xb)
    monkeypatch.setattr(fm, "PILOT_MIN_ROWS", 10**6)
    r_bound = budget.most_trees(Xb, 3.0, np.random.default_rng(0))
    assert 0 < r_bound <= r < 50
    MondrianFeatures(n_trees=r_bound, lifetime=3.0, random_state=0, n_jobs=2,
                     feature_scale=None).fit(Xb)


def test_fit_check_counts_on_a_subsample_when_no_pilot_fits(monkeypatch):
    # Points near a line in 10 dimensions: the bound on the nodes
    # (∏(1 + λ·extent) leaves a tree, 59 049 at λ = 2) is far above what
    # the trees hold (their cells follow the line), and two pilot trees'
    # worst case (2N - 1 nodes each, 370 MB) does not fit in 120 MB.  The
    # check grows its pilot on as many random points as fit and accepts the
    # forest (which then fits); with no room for that (PILOT_MIN_ROWS
    # raised past N) it refuses, as it did before the subsample pilot.
    import mondrian.features.mondrian as fm

    rng = np.random.default_rng(3)
    t = rng.random(200_000)
    Xl = t[:, None] + 1e-3 * rng.standard_normal((200_000, 10))
    monkeypatch.setattr(fm, "available_memory", lambda: 12 * 10**7)
    budget = fm._MemoryBudget(Xl, 10, 2)
    bound = 10 * (2 * fm.expected_leaves_bound(200_000, np.ptp(Xl, axis=0), 2.0) - 1)
    assert budget.peak(bound) > 12 * 10**7 and budget._pilot_peak(2) > 12 * 10**7
    f = MondrianFeatures(n_trees=10, lifetime=2.0, random_state=0, n_jobs=2,
                         feature_scale=None).fit(Xl)
    assert budget.peak(f.forest_.n_nodes) < 12 * 10**7 and f.forest_.n_nodes < bound / 50
    monkeypatch.setattr(fm, "PILOT_MIN_ROWS", 10**6)
    with pytest.raises(MemoryError, match="growing n_trees=10 trees"):
        MondrianFeatures(n_trees=10, lifetime=2.0, random_state=0, n_jobs=2,
                         feature_scale=None).fit(Xl)
