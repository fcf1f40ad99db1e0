"""MondrianKernelRidgeCV at its defaults: the dual solver with exact
leave-one-out, the lifetime search around the data's scale, the automatic
terminal lifetime and alpha grid, and the CG path centred on a dual pilot."""
import functools
import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.spatial.distance

from mondrian import MondrianFeatures, MondrianKernelRidgeCV
from mondrian._ext._dual import symmetric_eigh
from mondrian._validation import available_cores, resolve_n_jobs
from mondrian.path import estimators as path_estimators
from mondrian.path.dual import DualRidge, DualScorer, cell_labels, mondrian_kernel_matrix
from mondrian._scale import length_scale_median, lifetime_scale
from mondrian.path.search import FLAT_TIE, search_lifetime
from mondrian.ridge import ridge_solve


def _data(n=160, d=3, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, -1] + noise * rng.standard_normal(n)
    return X, y


@pytest.fixture(scope="module")
def forest():
    X, y = _data()
    return X, y - y.mean(), MondrianFeatures(n_trees=40, lifetime=1.0, random_state=3).fit(X)


# --------------------------------------------------------------------------
# The dual: kernel from labels, and every alpha from one eigendecomposition
# --------------------------------------------------------------------------
def test_label_kernel_equals_phi_phi_t(forest):
    X, _, mf = forest
    for lam in (0.0, 0.2, 1.0):
        Phi = mf.training_features(lam)
        labels = cell_labels(mf, lam)
        K = mondrian_kernel_matrix(labels)
        # Counts of shared cells over M: exact in floating point.
        np.testing.assert_allclose(K, (Phi @ Phi.T).toarray(), rtol=0, atol=1e-15)
        rows = np.array([5, 0, 77])
        K_cross = mondrian_kernel_matrix(cell_labels(mf, lam, rows), labels)
        np.testing.assert_allclose(K_cross, K[rows], rtol=0, atol=1e-15)
    assert np.all(np.diag(K) == 1.0)

@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_label_kernel_counts_across_chunks_and_blocks(n_jobs, dtype):
    # The C kernel compares 4096 trees per pass and 32 rows of b per block:
    # 9000 trees (two full chunks and a partial one) and 70 / 45 rows (full
    # and partial blocks, and rows past the last four) must still give every
    # count exactly -- for 8-bit labels too, whose byte counters are summed
    # every 128 steps: all-equal rows (the largest counts) included.
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, size=(70, 9000)).astype(dtype)
    b = rng.integers(0, 3, size=(45, 9000)).astype(dtype)
    a[:5] = 1
    b[:3] = 1
    K = mondrian_kernel_matrix(a, n_jobs=n_jobs)
    np.testing.assert_array_equal(K, (a[:, None, :] == a[None, :, :]).sum(-1) * (1.0 / 9000))
    assert np.all(K[:5, :5] == 1.0)
    K_cross = mondrian_kernel_matrix(a, b, n_jobs=n_jobs)
    np.testing.assert_array_equal(
        K_cross, (a[:, None, :] == b[None, :, :]).sum(-1) * (1.0 / 9000))
    # Tables of the two widths compare as 16-bit ones.
    other = np.uint16 if dtype == np.uint8 else np.uint8
    np.testing.assert_array_equal(mondrian_kernel_matrix(a, b.astype(other), n_jobs=n_jobs),
                                  K_cross)


def test_cell_labels_are_8_bit_while_every_tree_has_at_most_256_cells(forest):
    X, _, mf = forest
    small = cell_labels(mf, 0.3)
    assert small.dtype == np.uint8
    # Enough cells for some tree to pass 256: 16-bit labels, the same kernel.
    big = MondrianFeatures(n_trees=4, lifetime=1e3, random_state=0).fit(
        np.random.default_rng(0).standard_normal((600, 3)))
    counts = np.diff(big.forest_.active_columns(1e3)[1])
    assert counts.max() > 256
    wide = cell_labels(big, 1e3)
    assert wide.dtype == np.uint16
    Phi = big.training_features(1e3)
    np.testing.assert_allclose(mondrian_kernel_matrix(wide), (Phi @ Phi.T).toarray(),
                               rtol=0, atol=1e-15)
    # At a lifetime where every tree has at most 256 cells, the 8-bit table
    # holds the same numbers as a 16-bit one would.
    lam = 0.5
    assert np.diff(big.forest_.active_columns(lam)[1]).max() <= 256
    narrow = cell_labels(big, lam)
    assert narrow.dtype == np.uint8
    Phi = big.training_features(lam)
    np.testing.assert_allclose(mondrian_kernel_matrix(narrow), (Phi @ Phi.T).toarray(),
                               rtol=0, atol=1e-15)


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("n, lams", [
    (301, (0.0, 0.4, 1e3)),       # through a tile: 8- and 4-row blocks, tails of 5 and 1
    (4100, (0.3, 2.0)),           # past the tile's 4096 points: written straight
])
def test_cell_labels_are_each_points_cell_in_each_tree(n, lams, n_jobs):
    # The C writer takes 64 trees a task (130 trees: two full tasks and a
    # partial one) and, up to 4096 points, transposes a tile of them; the
    # table must hold, for every point and tree, the point's column of Φ
    # at λ minus the tree's first column -- for 8- and 16-bit labels.
    X = np.random.default_rng(n).standard_normal((n, 3))
    mf = MondrianFeatures(n_trees=130, lifetime=max(lams), random_state=1, n_jobs=2).fit(X)
    widths = set()
    for lam in lams:
        labels = cell_labels(mf, lam, n_jobs=n_jobs)
        Phi = mf.training_features(lam).tocsr()
        Phi.sort_indices()
        first = np.asarray(mf.forest_.active_columns(lam)[1])[:-1]
        expected = Phi.indices.reshape(n, 130) - first[None, :]
        np.testing.assert_array_equal(labels, expected)
        widths.add(labels.dtype)
    if n == 301:
        assert widths == {np.dtype(np.uint8), np.dtype(np.uint16)}



def test_dual_ridge_formulas_equal_direct_solves(forest):
    _, y, mf = forest
    # 60 points: the brute-force leave-one-out below refits n times per alpha.
    K = mondrian_kernel_matrix(cell_labels(mf, 0.3, np.arange(60)))
    y = y[:60] - y[:60].mean()
    n = y.shape[0]
    alphas = np.array([1e-3, 0.1, 3.0])
    ridge = DualRidge(K.copy(), y)
    loo = ridge.loo_mse(alphas)
    lml = ridge.log_marginal_likelihood(alphas)
    for a, alpha in enumerate(alphas):
        A = K + alpha * np.eye(n)
        c = np.linalg.solve(A, y)
        np.testing.assert_allclose(ridge.dual_coef(alpha), c, rtol=1e-9, atol=1e-12)
        assert ridge.train_mse([alpha])[0] == pytest.approx(np.mean((y - K @ c) ** 2), rel=1e-9)
        # Leave-one-out by brute force: n refits without point i.
        errs = []
        for i in range(n):
            keep = np.arange(n) != i
            ci = np.linalg.solve(A[np.ix_(keep, keep)], y[keep])
            errs.append(y[i] - K[i, keep] @ ci)
        assert loo[a] == pytest.approx(np.mean(np.square(errs)), rel=1e-8)
        # Profiled evidence: -n/2 log(yᵀA⁻¹y/n) - ½ log det A (+ a constant).
        _, logdet = np.linalg.slogdet(A)
        assert lml[a] == pytest.approx(-0.5 * n * np.log(y @ c / n) - 0.5 * logdet, rel=1e-9)


# --------------------------------------------------------------------------
# The search over log λ
# --------------------------------------------------------------------------
def test_lifetime_scale_is_inverse_median_l1_distance():
    rng = np.random.default_rng(0)
    X = rng.random((30, 4))
    d = np.abs(X[:, None, :] - X[None, :, :]).sum(-1)[np.triu_indices(30, 1)]
    assert lifetime_scale(X, rng) == pytest.approx(1.0 / np.median(d), rel=1e-12)
    assert lifetime_scale(np.ones((5, 2)), rng) == 1.0


def test_length_scale_median_is_median_l2_distance_at_any_scale():
    """The median ℓ₂ distance between distinct rows (repeats left out, 1.0
    when all rows coincide), the same relative value for X scaled by 1e±300
    (the squares inside the norm would leave double precision), refused
    where its inverse overflows."""
    for seed in range(10):
        rng = np.random.default_rng(seed)
        X = np.round(rng.normal(size=(int(rng.integers(3, 30)), 3)), 1)
        X = X[rng.integers(0, X.shape[0], X.shape[0] + 4)]
        d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))[np.triu_indices(X.shape[0], 1)]
        want = 1.0 if not np.any(d > 0) else np.median(d[d > 0])
        assert length_scale_median(X, rng) == pytest.approx(want, rel=1e-12)
        if np.any(d > 0):
            for c in (1e-300, 1e300):
                assert length_scale_median(X * c, rng) == pytest.approx(want * c, rel=1e-12)
    assert length_scale_median(np.ones((4, 2)), np.random.default_rng(0)) == 1.0
    with pytest.raises(ValueError, match="rescale X or pass a length_scale"):
        length_scale_median(np.eye(3) * 1e-320, np.random.default_rng(0))


def test_pair_l1_is_scipys_cityblock_bitwise():
    # c/scale.h sums each pair's coordinates in order, as scipy's pdist
    # does, so the distances (hence λ₀ and everything selected from it) are
    # the same bits: exact equality, over shapes with 0 or 1 row, 0
    # columns, fewer columns than the four-column sweep, repeated rows and
    # magnitudes from 1e-300 to 1e6.
    from mondrian._ext._path import pair_l1
    rng = np.random.default_rng(3)
    for n, d in [(0, 3), (1, 3), (2, 0), (2, 1), (7, 3), (9, 4), (33, 5), (64, 21), (5, 130)]:
        X = rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-6, 6, d)
        if n > 3:
            X[rng.integers(0, n, n // 2)] = X[0]
        want = scipy.spatial.distance.pdist(X, "cityblock") if n > 1 else np.zeros(0)
        np.testing.assert_array_equal(pair_l1(X), want)
        np.testing.assert_array_equal(pair_l1(X * 1e-300), scipy.spatial.distance.pdist(
            X * 1e-300, "cityblock") if n > 1 else np.zeros(0))


def test_lifetime_scale_ignores_zero_distances_of_repeated_rows():
    # Repeated rows give zero distances, which the median leaves out; the
    # in-place partition leaves them anywhere left of the middle, so both
    # parities of the positive count are checked over many draws.
    for seed in range(40):
        rng = np.random.default_rng(seed)
        X = np.round(rng.random((int(rng.integers(3, 25)), 2)), 1)
        X = X[rng.integers(0, X.shape[0], X.shape[0] + int(rng.integers(0, 8)))]
        d = np.abs(X[:, None, :] - X[None, :, :]).sum(-1)[np.triu_indices(X.shape[0], 1)]
        d = d[d > 0]
        want = 1.0 if d.size == 0 else 1.0 / np.median(d)
        assert lifetime_scale(X, np.random.default_rng(0)) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("u_best", [-5.3, -0.4, 3.7])
def test_search_finds_the_minimum_and_grows_the_ceiling(u_best):
    # A convex error in u = log2(λ/λ0), minimum at u_best: the search must
    # end within one octave of it, and grow the ceiling only as far as it
    # needs to see the error rise (one step past the minimum, plus one).
    grown = []

    def evaluate(lam):
        return np.array([(np.log2(lam) - u_best) ** 2 + 1.0])

    def extend(lam):
        grown.append(lam)
        return None

    result = search_lifetime(evaluate, 1.0, 1.0, extend=extend)
    g, _ = result.best
    assert abs(np.log2(result.lifetimes[g]) - u_best) <= 0.5
    assert result.stop_reason == "passed minimum"
    assert np.all(np.diff(result.lifetimes) > 0)
    assert result.max_lifetime == (max(grown) if grown else 1.0)
    assert np.log2(result.max_lifetime) <= max(0.0, np.ceil(u_best) + 2.0)


def test_symmetric_eigh_is_scipys_evd_bit_for_bit(forest):
    # The GIL-free decomposition must be scipy.linalg.eigh(driver='evd')
    # itself (same LAPACK routine, input and workspace), not merely close.
    _, _, mf = forest
    for K in (mondrian_kernel_matrix(cell_labels(mf, 0.3)),
              np.array([[2.0]]), np.array([[1.0, 0.5], [0.5, 1.0]])):
        w0, U0 = scipy.linalg.eigh(K, driver="evd", check_finite=False)
        w1, U1 = symmetric_eigh(K.copy())
        assert np.array_equal(w0, w1) and np.array_equal(U0, U1)
        np.testing.assert_allclose((U1 * w1) @ U1.T, K, atol=1e-12)
    # DualRidge decomposes a copy of a read-only or Fortran-ordered K.
    K = mondrian_kernel_matrix(cell_labels(mf, 0.3))
    y = np.linspace(-1.0, 1.0, K.shape[0])
    ref = DualRidge(K.copy(), y).loo_mse([0.1])
    frozen = K.copy()
    frozen.flags.writeable = False
    assert DualRidge(frozen, y).loo_mse([0.1]) == ref
    assert DualRidge(np.asfortranarray(K), y).loo_mse([0.1]) == ref
    w, U = symmetric_eigh(np.zeros((0, 0)))
    assert w.shape == (0,) and U.shape == (0, 0)
    with pytest.raises(ValueError, match="square"):
        symmetric_eigh(np.zeros((2, 3)))


@pytest.mark.parametrize("method", ["loo", "kfold", "holdout"])
def test_dual_scorer_evaluate_many_equals_one_by_one(forest, method):
    # Lifetimes evaluated together (on two Python threads) give the same
    # errors and records, bit for bit, as one call after another.
    _, y, mf = forest
    rows = np.arange(120)
    kw = dict(folds=np.arange(120) % 3) if method == "kfold" else (
        dict(val_rows=np.arange(120, 160)) if method == "holdout" else {})
    alphas = np.logspace(-4, 1, 6)
    lams = [0.25, 0.5, 1.0]
    one = DualScorer(mf, y, alphas, rows, n_jobs=1, **kw)
    many = DualScorer(mf, y, alphas, rows, n_jobs=2, **kw)
    assert one.method == many.method == method
    seq = [one(lam) for lam in lams]
    par = many.evaluate_many(lams)
    for a, b in zip(seq, par):
        assert np.array_equal(a, b)
    for key in one.records:
        assert np.array_equal(np.asarray(one.records[key]), np.asarray(many.records[key]))
    assert one.best["lifetime"] == many.best["lifetime"]
    assert one.best["error"] == many.best["error"]


@pytest.mark.parametrize("method", ["loo", "holdout"])
def test_dual_scorer_prefetch_records_only_what_is_revealed(forest, method, monkeypatch):
    # prefetch computes lifetimes at once (two Python threads); each is
    # recorded only when its callable is called, with the errors and records
    # of a one-by-one evaluation bit for bit; one never called leaves none.
    # It declines (None) below PAIR_ROWS rows and on one thread.
    from mondrian.path import dual as path_dual
    _, y, mf = forest
    assert DualScorer(mf, y, np.ones(1), np.arange(120), n_jobs=2).prefetch([0.5, 0.25]) is None
    monkeypatch.setattr(path_dual, "PAIR_ROWS", 100)
    assert DualScorer(mf, y, np.ones(1), np.arange(120), n_jobs=1).prefetch([0.5, 0.25]) is None
    rows = np.arange(120)
    kw = dict(val_rows=np.arange(120, 160)) if method == "holdout" else {}
    alphas = np.logspace(-4, 1, 6)
    one = DualScorer(mf, y, alphas, rows, n_jobs=1, **kw)
    ahead = DualScorer(mf, y, alphas, rows, n_jobs=2, **kw)
    now, later, unused = ahead.prefetch([0.5, 0.25, 1.0])
    assert ahead.records["lifetimes"] == []
    assert np.array_equal(later(), one(0.25))
    assert np.array_equal(now(), one(0.5))
    assert ahead.records["lifetimes"] == [0.25, 0.5]
    for key in one.records:
        assert np.array_equal(np.asarray(one.records[key]), np.asarray(ahead.records[key]))
    assert ahead.best["lifetime"] == one.best["lifetime"]
    del unused


def test_search_hands_independent_lifetimes_over_together():
    # The first two lifetimes, and the neighbours of the minimum filled in
    # at the end, go to evaluate_many together; the search and its result
    # are those of one-by-one evaluation.
    def evaluate(lam):
        return np.array([(np.log2(lam) - 1.3) ** 2 + 1.0])

    batches = []

    def evaluate_many(lams):
        batches.append(list(lams))
        return [evaluate(lam) for lam in lams]

    alone = search_lifetime(evaluate, 1.0, 1.0, extend=lambda lam: None)
    together = search_lifetime(evaluate, 1.0, 1.0, extend=lambda lam: None,
                               evaluate_many=evaluate_many)
    assert together.lifetimes.tolist() == alone.lifetimes.tolist()
    assert np.array_equal(together.errors, alone.errors)
    assert together.stop_reason == alone.stop_reason
    assert batches[0] == [1.0, 0.5]
    assert all(len(b) > 1 for b in batches)


def test_search_prefetch_gives_the_one_step_search():
    # With prefetch the search computes two lifetimes at a time going down
    # (the step, and the one it needs next if the step is the minimum) and
    # reveals the second only when it asks for it: the lifetimes, errors and
    # stop reason are those of the search without it, bit for bit.  Curves
    # with the minimum far below the start (every step down a pair), near it
    # (one computed ahead and dropped) and at a second dip that the
    # one-step descent does not reach (dropped too: it must not change the
    # selection).
    curves = [lambda u: (u + 6.3) ** 2 + 1.0, lambda u: (u + 1.2) ** 2 + 1.0,
              lambda u: min((u + 0.9) ** 2 + 1.0, (u + 3.0) ** 2 + 0.5)]
    for curve in curves:
        def evaluate(lam, curve=curve):
            return np.array([curve(np.log2(lam)), 2.0 * curve(np.log2(lam))])

        computed, revealed = [], []

        def prefetch(lams, evaluate=evaluate):
            computed.append(list(lams))
            values = [evaluate(lam) for lam in lams]
            return [functools.partial(lambda lam, v: (revealed.append(lam), v)[1], lam, v)
                    for lam, v in zip(lams, values)]

        plain = search_lifetime(evaluate, 1.0, 1.0, extend=lambda lam: None)
        ahead = search_lifetime(evaluate, 1.0, 1.0, extend=lambda lam: None, prefetch=prefetch)
        assert ahead.lifetimes.tolist() == plain.lifetimes.tolist()
        assert np.array_equal(ahead.errors, plain.errors)
        assert ahead.stop_reason == plain.stop_reason
        assert computed and all(len(c) == 2 for c in computed)
        # every lifetime the search kept was revealed or evaluated directly
        # once; those computed ahead and never revealed are not in the result
        dropped = {lam for c in computed for lam in c} - set(revealed)
        assert not dropped & set(ahead.lifetimes.tolist())
        if curve is curves[0]:
            # u = log2 λ, minimum at -6.3: after (0, -1), the steps -2 (with
            # -3 ahead), -3 (revealed), -5 (with -4), -7 (with -6), -9 (with
            # -8), then the neighbours -6 and -8 revealed: 5 rounds of
            # computation where the plain search with evaluate_many takes 7
            # ((0, -1), -2, -3, -5, -7, -9, (-6, -8)); -4, the midpoint of a
            # step the descent went past, is dropped.
            assert computed == [[0.25, 0.125], [2.0 ** -5, 2.0 ** -4],
                                [2.0 ** -7, 2.0 ** -6], [2.0 ** -9, 2.0 ** -8]]
            assert dropped == {2.0 ** -4}


def test_prefetch_leaves_the_fit_as_it_was(monkeypatch):
    # From PAIR_ROWS rows the dual's search computes a lifetime ahead as it
    # descends; forcing it off must give the same fit bit for bit (a smooth,
    # low-noise set whose best width is below λ₀, so the search goes down).
    from mondrian.path import dual as path_dual
    rng = np.random.default_rng(0)
    X = rng.standard_normal((path_dual.PAIR_ROWS + 50, 5))
    y = np.sin(0.7 * X[:, 0]) + 0.5 * X[:, 1] - 0.3 * X[:, 2] ** 2 \
        + 0.05 * rng.standard_normal(X.shape[0])
    assert X.shape[0] >= path_dual.PAIR_ROWS
    fits = []
    for on in (True, False):
        if not on:   # prefetch declines below PAIR_ROWS rows
            monkeypatch.setattr(path_dual, "PAIR_ROWS", X.shape[0] + 1)
        fits.append(MondrianKernelRidgeCV(n_trees=100, n_jobs=2, random_state=0).fit(X, y))
    ahead, plain = fits
    assert ahead.lifetime_ < ahead.path_["scale"]     # the search went down
    # Every table of the path, the scorer's records included: here a
    # lifetime computed ahead (λ₀/8) is not needed, and must leave no row.
    for key in ("lifetimes", "validation_mse", "train_mse", "log_marginal_likelihood",
                "n_features"):
        np.testing.assert_array_equal(ahead.path_[key], plain.path_[key])
    assert (ahead.lifetime_, ahead.alpha_) == (plain.lifetime_, plain.alpha_)
    np.testing.assert_array_equal(ahead.coef_, plain.coef_)


def test_search_stop_reasons():
    decreasing = lambda lam: np.array([1.0 / lam])        # noqa: E731
    increasing = lambda lam: np.array([lam])              # noqa: E731
    fixed = search_lifetime(decreasing, 1.0, 8.0)
    assert fixed.stop_reason == "max_lifetime" and fixed.lifetimes[-1] == 8.0
    assert search_lifetime(decreasing, 1.0, 1.0,
                           extend=lambda lam: "saturated").stop_reason == "saturated"
    # A flat error (no tree has split yet: a constant kernel) stays at the
    # ceiling instead of walking down the plateau.
    flat = search_lifetime(lambda lam: np.array([1.0]), 1.0, 1.0)
    assert flat.stop_reason == "max_lifetime" and flat.lifetimes.tolist() == [0.5, 1.0]
    floor = search_lifetime(increasing, 1.0, 1.0)
    assert floor.stop_reason == "floor" and floor.lifetimes[0] <= 2.0 ** -19


def test_search_stops_when_every_error_is_the_same():
    # Constant targets: every model predicts their mean, so every error is
    # the same, and the walk up (ties go to the larger lifetime) must not
    # grow the forest until it saturates: three octaves, then the neighbour.
    for value in (0.0, 0.7):
        grown = []
        same = search_lifetime(lambda lam: np.full(3, value), 1.0, 1.0,
                               extend=lambda lam: grown.append(lam))
        assert same.stop_reason == "flat" and grown == [2.0, 4.0]
        assert same.lifetimes.tolist() == [0.5, 1.0, 2.0, 4.0]


@pytest.mark.parametrize("n, value", [(120, 2.5), (120, 0.1), (300, 0.1)])
def test_constant_targets_fit_quietly_and_predict_the_constant(monkeypatch, n, value):
    # 0.1 is not a sum of powers of two: the mean of its copies may differ
    # from it in the last bit, and the fit must still see a constant.  300
    # rows go through the pilot and the CG ladder.
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_ROWS", 200)
    monkeypatch.setattr(path_estimators, "PILOT_ROWS", 100)
    X = np.random.default_rng(1).standard_normal((n, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = MondrianKernelRidgeCV(n_trees=20, random_state=0).fit(X, np.full(n, value))
    assert model.path_["stop_reason"] == "flat"
    # λ₀/2, λ₀ and 2λ₀, then the neighbour above the best (ties go up).
    assert model.path_["lifetimes"].size == 4
    assert model.solver_ == ("dual" if n <= 200 else "cg")
    np.testing.assert_allclose(model.predict(X + 0.3), value, rtol=1e-15)


def test_constant_training_targets_report_the_true_validation_error():
    # With X_val, only the training targets are constant: the validation
    # error is that of the mean, the same for every (λ, α), not zero.
    X = np.random.default_rng(2).standard_normal((150, 3))
    y_val = np.random.default_rng(3).standard_normal(40)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = MondrianKernelRidgeCV(n_trees=20, random_state=0).fit(
            X[:110], np.full(110, 1.5), X_val=X[110:], y_val=y_val)
    errors = model.path_["validation_mse"]
    np.testing.assert_allclose(errors[np.isfinite(errors)], np.mean((y_val - 1.5) ** 2),
                               rtol=1e-12)
    assert model.path_["stop_reason"] == "flat"


def test_auto_alphas_at_the_edge_of_a_holdout_say_why_they_were_not_extended():
    # Pure noise: on this seed the largest alpha (nearly the mean) wins.
    # With X_val the automatic grid is not extended (that needs
    # leave-one-out), and the warning must not tell the user that
    # alphas='auto' would extend it.
    rng = np.random.default_rng(6)
    X = rng.standard_normal((150, 3))
    with pytest.warns(UserWarning, match="extended only under leave-one-out"):
        model = MondrianKernelRidgeCV(n_trees=20, random_state=0).fit(
            X[:110], rng.standard_normal(110), X_val=X[110:], y_val=rng.standard_normal(40))
    assert model.alpha_ == model.path_["alphas"][-1]


def test_search_stops_going_up_where_the_error_barely_falls():
    # A noise target: the error falls by 1e-4 per octave up forever (each
    # octave up doubles the forest).  The search stops at the first octave
    # that gains less than FLAT_TIE, then fills the gap above the best.
    grown = []

    def extend(lam):
        grown.append(lam)
        return None

    creeping = lambda lam: np.array([1.0 - 1e-4 * np.log2(lam)])   # noqa: E731
    result = search_lifetime(creeping, 1.0, 1.0, extend=extend)
    assert result.stop_reason == "flat"
    assert result.lifetimes.tolist() == [0.5, 1.0, 2.0] and grown == [2.0]
    # An octave gaining just more than FLAT_TIE keeps the walk going: here
    # the gain is 2e-3 per octave up to λ = 2^5, then the error rises.
    steady = lambda lam: np.array([1.0 - 2 * FLAT_TIE * min(np.log2(lam), 5.0)   # noqa: E731
                                   + 1e-2 * max(np.log2(lam) - 5.0, 0.0)])
    walked = search_lifetime(steady, 1.0, 1.0, extend=lambda lam: None)
    assert walked.stop_reason == "passed minimum"
    assert walked.lifetimes[walked.best[0]] == 32.0


def test_search_evaluates_the_ceiling_exactly():
    # λ₀·2^log₂(Λ/λ₀) rounds above Λ = 3 for this λ₀: the search must ask
    # for Λ itself, never for a lifetime past the forest's.
    scale, ceiling = 0.6405920704482397, 3.0
    assert scale * 2.0 ** float(np.log2(ceiling / scale)) > ceiling
    asked = []

    def decreasing(lam):
        asked.append(lam)
        return np.array([1.0 / lam])

    result = search_lifetime(decreasing, scale, ceiling)
    assert max(asked) == ceiling == result.lifetimes[-1] == result.max_lifetime


# --------------------------------------------------------------------------
# The estimator's dual solver
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted():
    X, y = _data(n=200, d=4, seed=1)
    return X, y, MondrianKernelRidgeCV(n_trees=60, random_state=0).fit(X, y)


def test_defaults_use_the_dual_with_leave_one_out(fitted):
    X, y, model = fitted
    p = model.path_
    assert model.solver_ == "dual" and p["validation"] == "loo"
    np.testing.assert_array_equal(p["validation_rows"], np.arange(200))
    assert p["stop_reason"] == "passed minimum"
    # The selected pair is the smallest leave-one-out error on the record.
    g = int(np.flatnonzero(p["lifetimes"] == model.lifetime_)[0])
    assert np.nanmin(p["validation_mse"][g]) == np.nanmin(p["validation_mse"])
    a = int(np.flatnonzero(p["alphas"] == model.alpha_)[0])
    assert p["validation_mse"][g, a] == pytest.approx(np.nanmin(p["validation_mse"]), rel=1e-6)
    # The minimum is bracketed: a larger and a smaller lifetime were worse.
    best = np.nanmin(p["validation_mse"], axis=1)
    assert best[0] > best[g] and best[-1] > best[g]


def test_dual_weights_equal_primal_ridge(fitted):
    X, y, model = fitted
    Phi = model.features_.training_features(model.lifetime_)
    # Push-through identity: Φᵀ(ΦΦᵀ + αI)⁻¹ = (ΦᵀΦ + αI)⁻¹Φᵀ.
    primal = ridge_solve(Phi, y - y.mean(), model.alpha_, solver="cholesky").coef
    np.testing.assert_allclose(model.coef_, primal, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(model.predict(X[:7]),
                               model.features_.transform(X[:7], model.lifetime_) @ model.coef_
                               + y.mean(), rtol=1e-12)


def test_scale_free_on_raw_data():
    # Multiplying X by a power of two scales every draw of the trees, the
    # data's scale and the features' standard deviations exactly: with the
    # default feature_scale ('std' here) the trees see the same points, so
    # the fit selects the same λ and predicts bit for bit the same; with
    # feature_scale=None it must select λ/2²⁰ and predict the same.
    X, y = _data(n=150, d=3, seed=4)
    small = MondrianKernelRidgeCV(n_trees=30, random_state=1).fit(X, y)
    big = MondrianKernelRidgeCV(n_trees=30, random_state=1).fit(X * 2.0 ** 20, y)
    np.testing.assert_array_equal(big.feature_scale_, small.feature_scale_ * 2.0 ** 20)
    assert (big.lifetime_, big.alpha_) == (small.lifetime_, small.alpha_)
    np.testing.assert_array_equal(big.predict(X[:20] * 2.0 ** 20), small.predict(X[:20]))
    small = MondrianKernelRidgeCV(n_trees=30, random_state=1, feature_scale=None).fit(X, y)
    big = MondrianKernelRidgeCV(n_trees=30, random_state=1, feature_scale=None).fit(
        X * 2.0 ** 20, y)
    assert big.lifetime_ == small.lifetime_ * 2.0 ** -20
    assert big.alpha_ == small.alpha_
    np.testing.assert_allclose(big.predict(X[:20] * 2.0 ** 20), small.predict(X[:20]),
                               rtol=1e-10, atol=1e-12)


def test_folds_equal_leave_one_out_when_one_point_each():
    X, y = _data(n=40, d=2, seed=5)
    kw = dict(n_trees=20, random_state=2)
    loo = MondrianKernelRidgeCV(**kw).fit(X, y)
    folds = MondrianKernelRidgeCV(cv=40, **kw).fit(X, y)
    assert folds.path_["validation"] == "kfold"
    np.testing.assert_array_equal(loo.path_["lifetimes"], folds.path_["lifetimes"])
    # Algebraically equal; in floating point the folds' solves and the
    # leave-one-out formula part by rounding times the condition number
    # of K + αI, ~λ_max/α ≈ 10⁹ at the grid's smallest α = 1e-8 (measured:
    # 1.3e-7 relative there, falling as 1/α to 2e-11 at α >= 1e-4): rtol 1e-6.
    np.testing.assert_allclose(folds.path_["validation_mse"], loo.path_["validation_mse"],
                               rtol=1e-6)


def test_explicit_validation_data_is_a_holdout():
    X, y = _data(n=120, d=3, seed=6)
    model = MondrianKernelRidgeCV(n_trees=30, random_state=0).fit(X[:90], y[:90], X[90:], y[90:])
    p = model.path_
    assert p["validation"] == "holdout"
    np.testing.assert_array_equal(p["validation_rows"], np.arange(90, 120))
    # The holdout error at the first lifetime, recomputed from the kernel.
    mf, lam = model.features_, p["lifetimes"][0]
    labels = cell_labels(mf, lam)
    yc = y - y[:90].mean()
    K = mondrian_kernel_matrix(labels[:90])
    a = 30     # alpha = 10**-0.5: a well-conditioned system
    c = np.linalg.solve(K + p["alphas"][a] * np.eye(90), yc[:90])
    pred = mondrian_kernel_matrix(labels[90:], labels[:90]) @ c
    assert p["validation_mse"][0, a] == pytest.approx(np.mean((pred - yc[90:]) ** 2), rel=1e-10)


def test_user_grids_warn_at_their_edges():
    X, y = _data(n=100, d=2, seed=7)
    with pytest.warns(UserWarning, match="alphas"):
        MondrianKernelRidgeCV(n_trees=20, alphas=(10.0, 30.0), random_state=0).fit(X, y)
    with pytest.warns(UserWarning, match="max_lifetime"):
        MondrianKernelRidgeCV(n_trees=20, max_lifetime=0.02, random_state=0).fit(X, y)


def test_auto_alphas_extend_past_the_grid(monkeypatch):
    # An automatic grid far above the best alpha of a clean signal: the
    # selection lands on its lower end, and the grid is extended downwards
    # (at the selected lifetime) until the best alpha is inside it.
    grid = np.logspace(2.0, 3.0, 5)
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_ALPHAS", grid)
    X, y = _data(n=150, d=2, seed=8, noise=0.01)
    model = MondrianKernelRidgeCV(n_trees=30, random_state=0).fit(X, y)
    alphas = model.path_["alphas"]
    assert alphas[0] < grid[0] and model.alpha_ < grid[0]
    np.testing.assert_allclose(np.diff(np.log10(alphas)), 0.25, rtol=1e-9)
    g = int(np.flatnonzero(model.path_["lifetimes"] == model.lifetime_)[0])
    errors = model.path_["validation_mse"][g]
    a = int(np.flatnonzero(alphas == model.alpha_)[0])
    assert errors[a] == np.nanmin(errors)
    assert 0 < a < alphas.shape[0] - 1 or alphas.shape[0] == 5 + 2 * 12


def test_dual_is_reproducible_for_any_n_jobs():
    X, y = _data(n=120, d=3, seed=9)
    fits = [MondrianKernelRidgeCV(n_trees=25, random_state=0, n_jobs=k).fit(X, y)
            for k in (1, 2, 10**5)]
    for other in fits[1:]:
        np.testing.assert_array_equal(other.coef_, fits[0].coef_)
        np.testing.assert_array_equal(other.path_["validation_mse"],
                                      fits[0].path_["validation_mse"])


def test_n_jobs_none_means_every_core_and_large_counts_are_capped():
    assert resolve_n_jobs(None) == available_cores() == resolve_n_jobs(-1)
    assert resolve_n_jobs(10**5) == available_cores()
    assert resolve_n_jobs(1) == 1


# --------------------------------------------------------------------------
# Above the dual's size: a dual pilot, then CG on all points
# --------------------------------------------------------------------------
def test_pilot_selects_then_cg_solves_on_all_points(monkeypatch):
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_ROWS", 100)
    monkeypatch.setattr(path_estimators, "PILOT_ROWS", 80)
    # Tight CG tolerances, so that the ladder's errors and the final weights
    # can be checked against direct solves (the ladder's looser, as at the
    # defaults).
    monkeypatch.setattr(path_estimators, "CONFIRM_TOL", 1e-10)
    monkeypatch.setattr(path_estimators, "PATH_TOL", 1e-11)
    X, y = _data(n=300, d=3, seed=10)
    model = MondrianKernelRidgeCV(n_trees=20, random_state=0).fit(X, y)
    p = model.path_
    assert model.solver_ == "cg" and p["validation"] == "loo"
    pilot = p["validation_rows"]
    assert pilot.size == 80 and np.unique(pilot).size == 80
    # The selected pair has the smallest leave-one-out error of the table,
    # and that error is the exact leave-one-out error of kernel ridge on the
    # pilot's rows, computed here from the hat matrix directly.
    c = p["confirm"]
    g = int(np.flatnonzero(p["lifetimes"] == c["pilot_lifetime"])[0])
    a = int(np.flatnonzero(p["alphas"] == c["pilot_alpha"])[0])
    # The largest lifetime within PILOT_TIE of the smallest error, and its
    # best alpha.
    per_lifetime = np.nanmin(p["validation_mse"], axis=1)
    near = per_lifetime <= (1 + path_estimators.PILOT_TIE) * per_lifetime.min()
    assert g == np.flatnonzero(near)[-1]
    assert p["validation_mse"][g, a] == np.nanmin(p["validation_mse"][g])
    # The pilot's forest was grown on the pilot's rows only, to the
    # search's terminal lifetime.
    assert model.pilot_features_.forest_.n_points == 80
    assert model.pilot_features_.lifetime_ == p["max_lifetime"] >= c["pilot_lifetime"]
    Phi_p = model.pilot_features_.training_features(c["pilot_lifetime"]).toarray()
    assert Phi_p.shape[0] == 80
    K = Phi_p @ Phi_p.T
    yp = y[pilot] - y[pilot].mean()
    H = K @ np.linalg.inv(K + c["pilot_alpha"] * np.eye(pilot.size))
    loo = (yp - H @ yp) / (1.0 - np.diag(H))
    assert np.mean(loo ** 2) == pytest.approx(p["validation_mse"][g, a], rel=1e-7)
    # The ladder (300 rows <= CONFIRM_ROWS: on the final forest) climbs by
    # octaves from the pilot's lifetime and keeps the best rung, which it
    # scored on held-out rows by a fit on the others.
    k = c["lifetimes"].shape[0]
    np.testing.assert_array_equal(c["lifetimes"], c["pilot_lifetime"] * 2.0 ** np.arange(k))
    np.testing.assert_array_equal(c["rows"], np.arange(300))
    assert c["validation_rows"].size == 60
    assert model.lifetime_ in c["lifetimes"] and model.alpha_ in c["alphas"]
    assert model.features_.lifetime_ == c["lifetimes"][-1] >= model.lifetime_
    held = c["validation_rows"]
    train = np.setdiff1d(np.arange(300), held)
    i = int(np.flatnonzero(c["lifetimes"] == model.lifetime_)[0])
    Phi = model.features_.training_features(model.lifetime_).toarray()
    ym = y[train].mean()
    for j, alpha in enumerate(c["alphas"]):
        # The rung's error is that of ridge on the training rows.
        A = Phi[train].T @ Phi[train] + alpha * np.eye(Phi.shape[1])
        w = np.linalg.solve(A, Phi[train].T @ (y[train] - ym))
        err = np.mean((Phi[held] @ w + ym - y[held]) ** 2)
        assert c["validation_mse"][i, j] == pytest.approx(err, rel=1e-7)
    # The weights solve the normal equations on all 300 points to the
    # ladder's tolerance (warm from the ladder on the same forest, tol auto).
    yc = y - y.mean()
    r = Phi.T @ (yc - Phi @ model.coef_) - model.alpha_ * model.coef_
    assert np.linalg.norm(r) <= p["tol"] * np.linalg.norm(Phi.T @ yc) * 1.0001
    assert p["tol"] == path_estimators.CONFIRM_TOL
    # A tol given by the user is the refit's, whatever the warm start.
    exact = MondrianKernelRidgeCV(n_trees=20, tol=1e-6, random_state=0).fit(X, y)
    assert exact.path_["tol"] == 1e-6
    Phi = exact.features_.training_features(exact.lifetime_).toarray()
    r = Phi.T @ (yc - Phi @ exact.coef_) - exact.alpha_ * exact.coef_
    assert np.linalg.norm(r) <= 1e-6 * np.linalg.norm(Phi.T @ yc) * 1.0001


def test_confirmation_ladder_runs_on_its_own_forest_above_confirm_rows(monkeypatch):
    # Above CONFIRM_ROWS rows the ladder runs on a random subset with a
    # forest of its own; the final forest is then grown on every row to the
    # selected lifetime exactly.
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_ROWS", 100)
    monkeypatch.setattr(path_estimators, "PILOT_ROWS", 80)
    monkeypatch.setattr(path_estimators, "CONFIRM_ROWS", 150)
    X, y = _data(n=400, d=3, seed=12)
    model = MondrianKernelRidgeCV(n_trees=20, random_state=1).fit(X, y)
    c = model.path_["confirm"]
    assert c["rows"].size == 150 and np.unique(c["rows"]).size == 150
    assert np.isin(c["validation_rows"], c["rows"]).all() and c["validation_rows"].size == 30
    assert model.features_.lifetime_ == model.lifetime_
    assert model.features_.forest_.n_points == 400
    errors = np.asarray(c["validation_mse"])
    i = int(np.flatnonzero(c["lifetimes"] == model.lifetime_)[0])
    # No earlier rung beats the selection, and a later rung beats it by no
    # more than CONFIRM_TIE (the ladder stopped there).
    assert errors[:i + 1].min() == errors[i].min()
    assert (errors[i + 1:].min(axis=1) >= errors[i].min() * (1 - path_estimators.CONFIRM_TIE)).all()
    # With X_val, the ladder validates on it.
    Xv, yv = _data(n=50, d=3, seed=13)
    with_val = MondrianKernelRidgeCV(n_trees=20, random_state=1).fit(X, y, X_val=Xv, y_val=yv)
    cv = with_val.path_["confirm"]
    np.testing.assert_array_equal(cv["validation_rows"], 400 + np.arange(50))


def test_confirmation_ladder_stops_where_its_next_forest_would_exceed_the_bytes(monkeypatch):
    # The ladder extends its forest an octave only while the forest's bytes
    # times its growth over the last octave (at least 2) fit
    # CONFIRM_FOREST_BYTES: with a budget just below what its first
    # extension asks, it stops there ('memory') and keeps the best rung so
    # far, whose error and weights are those of the unbounded ladder.
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_ROWS", 100)
    monkeypatch.setattr(path_estimators, "PILOT_ROWS", 80)
    X, y = _data(n=300, d=3, seed=10)
    free = MondrianKernelRidgeCV(n_trees=20, random_state=2).fit(X, y)
    c = free.path_["confirm"]
    assert c["lifetimes"].size >= 3          # it extended past the second rung
    # The bytes of the ladder's forest (on all 300 rows, not the pilot's 80)
    # when it checks its first extension, at the second rung.
    seen = []
    original = path_estimators.forest_bytes

    def spy(features):
        value = original(features)
        if features.forest_.n_points == 300:
            seen.append((features.lifetime_, value))
        return value

    monkeypatch.setattr(path_estimators, "forest_bytes", spy)
    MondrianKernelRidgeCV(n_trees=20, random_state=2).fit(X, y)
    lifetime, nbytes = seen[0]
    assert lifetime == c["lifetimes"][1]
    monkeypatch.setattr(path_estimators, "forest_bytes", original)
    monkeypatch.setattr(path_estimators, "CONFIRM_FOREST_BYTES", 2.0 * nbytes - 1.0)
    capped = MondrianKernelRidgeCV(n_trees=20, random_state=2).fit(X, y)
    cc = capped.path_["confirm"]
    assert cc["stop_reason"] == "memory"
    np.testing.assert_array_equal(cc["lifetimes"], c["lifetimes"][:2])
    np.testing.assert_array_equal(cc["validation_mse"], c["validation_mse"][:2])
    assert capped.features_.lifetime_ == c["lifetimes"][1]
    i = int(np.argmin(np.min(cc["validation_mse"], axis=1)))
    assert capped.lifetime_ == cc["lifetimes"][i]


def test_pilot_folds_equal_its_leave_one_out_when_one_point_each(monkeypatch):
    # cv=k above the dual's size: k folds over the pilot's rows, on the same
    # forest; with one pilot row per fold it is the pilot's leave-one-out.
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_ROWS", 100)
    monkeypatch.setattr(path_estimators, "PILOT_ROWS", 60)
    X, y = _data(n=200, d=3, seed=11)
    kw = dict(n_trees=20, random_state=3)
    loo = MondrianKernelRidgeCV(**kw).fit(X, y)
    folds = MondrianKernelRidgeCV(cv=60, **kw).fit(X, y)
    assert folds.solver_ == "cg" and folds.path_["validation"] == "kfold"
    np.testing.assert_array_equal(loo.path_["validation_rows"], folds.path_["validation_rows"])
    np.testing.assert_array_equal(loo.path_["lifetimes"], folds.path_["lifetimes"])
    # rtol as in test_folds_equal_leave_one_out_when_one_point_each (here
    # 2.4e-7 relative at α = 1e-8).
    np.testing.assert_allclose(folds.path_["validation_mse"], loo.path_["validation_mse"],
                               rtol=1e-6)


def test_auto_trees_shrink_with_the_rows():
    f = path_estimators.auto_path_trees
    assert f(1501) == path_estimators.AUTO_DUAL_TREES
    assert f(path_estimators.AUTO_TREE_BUDGET // 500) == 500
    assert f(10 ** 7) == path_estimators.AUTO_PATH_TREES
    sizes = np.unique(np.geomspace(1501, 10 ** 7, 50).astype(int))
    assert np.all(np.diff([f(n) for n in sizes]) <= 0)


def test_cg_path_from_a_pilot(monkeypatch):
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_ROWS", 100)
    monkeypatch.setattr(path_estimators, "PILOT_ROWS", 80)
    monkeypatch.setattr(path_estimators, "AUTO_EXACT_COLUMNS", 10)
    X, y = _data(n=300, d=3, seed=10)
    model = MondrianKernelRidgeCV(n_trees=20, solver="cg", random_state=0).fit(X, y)
    p = model.path_
    assert model.solver_ == "cg" and p["validation"] == "holdout"
    assert p["validation_rows"].size == 60
    assert p["stop_reason"] in ("passed minimum", "saturated")
    # The grid climbs by half octaves from half the pilot's lifetime.
    np.testing.assert_allclose(np.diff(np.log2(p["lifetimes"])), 0.5, rtol=1e-12)
    # Alphas: the pilot's and a third of it.
    assert p["alphas"][1] == pytest.approx(3 * p["alphas"][0], rel=1e-12)
    # The refit solves the normal equations on all points to tol.
    Phi = model.features_.training_features(model.lifetime_)
    yc = y - y.mean()
    r = Phi.T @ (yc - Phi @ model.coef_) - model.alpha_ * model.coef_
    assert np.linalg.norm(r) <= p["tol"] * np.linalg.norm(Phi.T @ yc) * 1.0001


# --------------------------------------------------------------------------
# n_trees='auto': more trees where the kernel estimate's Monte-Carlo error
# still shows on the pilot
# --------------------------------------------------------------------------
def test_tree_sensitivity_is_the_leave_one_out_excess_of_half_forests(forest):
    X, y, mf = forest
    labels = cell_labels(mf, 0.7)
    alpha = 0.05

    def loo(part):
        return DualRidge(mondrian_kernel_matrix(np.ascontiguousarray(part)),
                         y).loo_mse(np.array([alpha]))[0]

    # both halves of three splits of the 40 trees: first and last, even and
    # odd, and a fixed permutation's (the same for every call)
    splits = path_estimators._half_splits(20, 3)
    assert [sorted(o) for o in splits] == [list(range(40))] * 3
    np.testing.assert_array_equal(splits[0], np.arange(40))
    np.testing.assert_array_equal(splits[1][:20], np.arange(0, 40, 2))
    np.testing.assert_array_equal(splits[2], path_estimators._half_splits(20, 3)[2])
    assert not {tuple(sorted(o[:20])) for o in splits[2:]} & {
        tuple(range(20)), tuple(range(20, 40)), tuple(range(0, 40, 2)), tuple(range(1, 40, 2))}
    for count in (1, 3):
        halves = np.mean([loo(labels[:, o[:20]]) for o in splits[:count]]
                         + [loo(labels[:, o[20:]]) for o in splits[:count]])
        expected = np.sqrt(halves / loo(labels)) - 1.0
        got = path_estimators.tree_sensitivity(labels, y, alpha, splits=count)
        assert got == pytest.approx(expected, rel=1e-9)
        given = path_estimators.tree_sensitivity(labels, y, alpha, whole_mse=loo(labels),
                                                 splits=count)
        assert given == pytest.approx(expected, rel=1e-9)
    assert path_estimators.tree_sensitivity(labels, y, alpha) == \
        path_estimators.tree_sensitivity(labels, y, alpha, splits=1)
    # Identical trees: every half has the whole forest's kernel, no excess.
    same = np.ascontiguousarray(np.repeat(labels[:, :1], 40, axis=1))
    assert abs(path_estimators.tree_sensitivity(same, y, alpha)) < 1e-10
    with pytest.raises(ValueError, match="at least 2 trees"):
        path_estimators.tree_sensitivity(labels[:, :1], y, alpha)
    with pytest.raises(ValueError, match="splits must be >= 1"):
        path_estimators.tree_sensitivity(labels, y, alpha, splits=0)
    with pytest.raises(TypeError, match="splits must be an integer"):
        path_estimators.tree_sensitivity(labels, y, alpha, splits=1.5)


def test_auto_trees_double_when_half_forests_are_worse(monkeypatch):
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_ROWS", 100)
    monkeypatch.setattr(path_estimators, "PILOT_ROWS", 80)
    monkeypatch.setattr(path_estimators, "AUTO_PATH_TREES", 10)
    monkeypatch.setattr(path_estimators, "AUTO_TREE_BUDGET", 300 * 30)
    X, y = _data(n=300, d=3, seed=14, noise=0.01)
    model = MondrianKernelRidgeCV(random_state=0).fit(X, y)
    trees = model.path_["trees"]
    # The recorded sensitivity is the pilot's, at the pilot's selection.
    c = model.path_["confirm"]
    pilot = model.path_["validation_rows"]
    labels = cell_labels(model.pilot_features_, c["pilot_lifetime"])[:pilot.size]
    yp = y[pilot] - y[pilot].mean()
    assert trees["sensitivity"] == pytest.approx(path_estimators.tree_sensitivity(
        labels, yp, c["pilot_alpha"], splits=path_estimators.PILOT_SENSITIVITY_SPLITS),
        rel=1e-9)
    assert trees["pilot"] == model.pilot_features_.n_trees == 30
    # Low noise: half the trees are clearly worse, so the ladder's forest,
    # which is the final one, has twice as many.
    assert trees["sensitivity"] > path_estimators.TREE_GAIN
    assert trees["final"] == model.n_trees_ == model.features_.n_trees == 60
    assert model.features_.lifetime_ >= model.lifetime_
    # The weights solve ridge on all points on the final forest.
    Phi = model.features_.training_features(model.lifetime_).toarray()
    yc = y - y.mean()
    r = Phi.T @ (yc - Phi @ model.coef_) - model.alpha_ * model.coef_
    assert np.linalg.norm(r) <= model.path_["tol"] * np.linalg.norm(Phi.T @ yc) * 1.0001
    # Above the margin only: the same fit with a margin it does not pass
    # keeps the pilot's count and the pilot's selection.
    monkeypatch.setattr(path_estimators, "TREE_GAIN", trees["sensitivity"] * 1.01)
    same = MondrianKernelRidgeCV(random_state=0).fit(X, y)
    assert same.n_trees_ == same.path_["trees"]["final"] == same.features_.n_trees == 30
    assert same.path_["trees"]["sensitivity"] == trees["sensitivity"]
    assert same.path_["confirm"]["pilot_lifetime"] == c["pilot_lifetime"]
    # A noisy target does not ask for more trees: the Monte-Carlo error of
    # the kernel is small beside the noise.
    monkeypatch.setattr(path_estimators, "TREE_GAIN", 0.02)
    Xn, yn = _data(n=300, d=3, seed=14, noise=1.0)
    noisy = MondrianKernelRidgeCV(random_state=0).fit(Xn, yn)
    assert noisy.path_["trees"]["sensitivity"] < trees["sensitivity"]
    # An explicit n_trees is never changed.
    fixed = MondrianKernelRidgeCV(n_trees=30, random_state=0).fit(X, y)
    assert fixed.n_trees_ == 30 and fixed.path_["trees"]["sensitivity"] is None


def test_auto_dual_trees_wide_scales_with_the_measured_excess(monkeypatch):
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_TREE_BUDGET", 2_500_000)
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_MAX_TREES", 8000)
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_TREE_BUDGET_HIGH", 10_000_000)
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_HIGH_MAX_TREES", 32768)
    monkeypatch.setattr(path_estimators, "TREE_EXCESS", 0.02)
    wide = path_estimators.auto_dual_trees_wide
    # Without a measurement (or an excess of zero): the base budget.
    assert wide(1000) == wide(1000, 0.0) == 2500
    assert wide(250) == 8000
    # M = first·s/TREE_EXCESS trees where that is more than the base ...
    assert wide(1000, 0.1) == 5000
    assert wide(1000, 0.1, first=500) == 2500
    assert wide(400, 0.3) == 15000
    # ... within N·M <= 10^7 and 32768 trees ...
    assert wide(1000, 0.5) == 10000
    assert wide(100, 2.0) == 32768
    assert wide(1000, np.inf) == 10000
    # ... and never fewer than the base budget.
    assert wide(1000, 0.01) == 2500
    assert wide(1500, 0.03) == 1666


def test_dual_searches_again_on_more_trees_when_half_forests_are_worse(monkeypatch):
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_TREES", 20)
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_TREE_BUDGET", 150 * 60)
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_TREE_BUDGET_HIGH", 150 * 90)
    X, y = _data(n=150, d=3, seed=15, noise=0.01)
    model = MondrianKernelRidgeCV(random_state=0).fit(X, y)
    trees = model.path_["trees"]
    assert model.solver_ == "dual"
    # The recorded sensitivity is that of the first forest at its selection:
    # the fit with n_trees=20 draws the same forest and makes the same
    # selection.
    first = MondrianKernelRidgeCV(n_trees=20, random_state=0).fit(X, y)
    yc = y - y.mean()
    assert trees["sensitivity"] == pytest.approx(path_estimators.tree_sensitivity(
        cell_labels(first.features_, first.lifetime_), yc, first.alpha_), rel=1e-9)
    # Low noise: half the trees are clearly worse, so the search ran again
    # on a larger forest, from the same scale: as many trees as bring the
    # expected excess to TREE_EXCESS (20·s/0.02 here), within the high budget
    # (90 trees on 150 points).
    s = trees["sensitivity"]
    assert s > path_estimators.TREE_GAIN
    final = max(60, min(int(np.ceil(20 * s / path_estimators.TREE_EXCESS)), 90))
    assert final > 60
    assert trees["first"] == 20 and trees["final"] == model.n_trees_ == final
    assert model.features_.n_trees == final
    assert model.path_["scale"] == first.path_["scale"]
    # The weights are exact kernel ridge on the final forest at (λ̂, α̂).
    Phi = model.features_.training_features(model.lifetime_).toarray()
    K = Phi @ Phi.T
    c = np.linalg.solve(K + model.alpha_ * np.eye(K.shape[0]), yc)
    np.testing.assert_allclose(model.coef_, Phi.T @ c, rtol=1e-8, atol=1e-10)
    # Above the margin only: otherwise the first fit is kept as it is.
    monkeypatch.setattr(path_estimators, "TREE_GAIN", trees["sensitivity"] * 1.01)
    same = MondrianKernelRidgeCV(random_state=0).fit(X, y)
    assert same.n_trees_ == same.path_["trees"]["final"] == 20
    np.testing.assert_array_equal(same.coef_, first.coef_)
    assert same.lifetime_ == first.lifetime_ and same.alpha_ == first.alpha_
    # Folds (not leave-one-out) and an explicit n_trees never change the count.
    monkeypatch.setattr(path_estimators, "TREE_GAIN", 0.0)
    folds = MondrianKernelRidgeCV(cv=3, random_state=0).fit(X, y)
    assert folds.n_trees_ == 20 and folds.path_["trees"]["sensitivity"] is None
    assert first.n_trees_ == 20 and first.path_["trees"]["sensitivity"] is None


def test_dual_second_search_stays_within_the_forest_memory_budget(monkeypatch):
    # The bytes per tree of a fitted forest: its nodes (boxes of 2·D doubles
    # plus links), its row of point indices and its stream.  Wide inputs make
    # trees heavy: 120 x 600 inputs allow far fewer trees than 120 x 3.
    rng = np.random.default_rng(3)
    narrow = MondrianFeatures(n_trees=40, lifetime=2.0, random_state=0).fit(
        rng.standard_normal((120, 3)))
    f = narrow.forest_
    per_tree = (f.n_nodes * (72 + 16 * 3) / 40 + 8 * 120
                + path_estimators.TREE_OBJECT_BYTES)
    assert path_estimators.dual_trees_in_memory(narrow) == int(
        path_estimators.AUTO_DUAL_FOREST_BYTES // per_tree)
    wide = MondrianFeatures(n_trees=40, lifetime=2.0 * 3 / 600, random_state=0).fit(
        rng.standard_normal((120, 600)))
    assert path_estimators.dual_trees_in_memory(wide) < path_estimators.dual_trees_in_memory(
        narrow) / 50
    # A rotated forest also holds each tree's D x D rotation.
    turned = MondrianFeatures(n_trees=40, lifetime=2.0, rotation="uniform",
                              random_state=0).fit(rng.standard_normal((120, 3)))
    f = turned.forest_
    assert path_estimators.forest_bytes(turned) == (
        f.n_nodes * (72 + 16 * 3) + 40 * (8 * 120 + path_estimators.TREE_OBJECT_BYTES + 72))
    # The estimator: the count the measurement asks for, lowered to the
    # budget and recorded; a budget below the first forest keeps that one.
    # (At a fixed Λ, which the search reaches anyway: the budget also
    # limits the growth of the forest, tested below.)
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_TREES", 20)
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_TREE_BUDGET", 150 * 60)
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_TREE_BUDGET_HIGH", 150 * 90)
    X, y = _data(n=150, d=3, seed=15, noise=0.01)
    free = MondrianKernelRidgeCV(random_state=0).fit(X, y)
    assert free.n_trees_ > 40 and "memory_cap" not in free.path_["trees"]
    top = free.features_.lifetime_

    def fit(**kw):
        with warnings.catch_warnings():
            # the best lifetime may sit at the fixed ceiling: not the point here
            warnings.simplefilter("ignore", UserWarning)
            return MondrianKernelRidgeCV(max_lifetime=top, random_state=0, **kw).fit(X, y)

    first = fit(n_trees=20)
    budget = path_estimators.AUTO_DUAL_FOREST_BYTES / path_estimators.dual_trees_in_memory(
        first.features_)
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_FOREST_BYTES", int(budget * 40.5))
    capped = fit()
    assert capped.path_["trees"]["memory_cap"] == 40
    assert capped.n_trees_ == capped.path_["trees"]["final"] == 40
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_FOREST_BYTES", int(budget * 10))
    kept = fit()
    assert kept.path_["trees"]["memory_cap"] == 10
    assert kept.n_trees_ == kept.path_["trees"]["final"] == 20
    np.testing.assert_array_equal(kept.coef_, first.coef_)


def test_dual_search_grows_the_forest_only_within_the_memory_budget(monkeypatch):
    # An octave's extension at least doubles a splitting forest, so the
    # dual's search grows it only while twice its bytes fit in
    # AUTO_DUAL_FOREST_BYTES; else it stops there ('memory' if the error was
    # still falling).  This fit grows its forest from λ₀ to 4λ₀ when free.
    X, y = _data(n=150, seed=0, noise=0.01)
    free = MondrianKernelRidgeCV(n_trees=20, random_state=0).fit(X, y)
    scale = free.path_["scale"]
    assert free.features_.lifetime_ == 4 * scale
    with pytest.warns(UserWarning, match="still falls at max_lifetime"):
        at_scale = MondrianKernelRidgeCV(n_trees=20, max_lifetime=scale,
                                         feature_scale=free.feature_scale_,
                                         random_state=0).fit(X, y)
    size = path_estimators.forest_bytes(at_scale.features_)   # the same draw, at λ₀
    assert size == (at_scale.features_.forest_.n_nodes * (72 + 16 * 3)
                    + 20 * (8 * 150 + path_estimators.TREE_OBJECT_BYTES))
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_FOREST_BYTES", int(2 * size) - 1)
    held = MondrianKernelRidgeCV(n_trees=20, random_state=0).fit(X, y)
    assert held.features_.lifetime_ == held.path_["max_lifetime"] == scale
    assert held.path_["stop_reason"] == "memory"
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_FOREST_BYTES", int(2 * size) + 1)
    once = MondrianKernelRidgeCV(n_trees=20, random_state=0).fit(X, y)
    assert once.features_.lifetime_ == 2 * scale


def test_ladder_tries_larger_alphas_while_the_largest_wins(monkeypatch):
    # The pilot's alpha is too small at large N; when the larger of the two
    # alphas wins at the best rung, the ladder tries CONFIRM_ALPHA_UP times
    # more while the held-out error falls.  Forced here with a pilot that
    # proposes alphas far too small for a noisy target.
    monkeypatch.setattr(path_estimators, "AUTO_DUAL_ROWS", 100)
    monkeypatch.setattr(path_estimators, "PILOT_ROWS", 80)
    monkeypatch.setattr(path_estimators, "CONFIRM_TOL", 1e-11)
    monkeypatch.setattr(path_estimators, "PATH_TOL", 1e-11)
    monkeypatch.setattr(MondrianKernelRidgeCV, "_pilot_alphas",
                        lambda self, p, lifetime: np.array([1e-2, 3e-2]))
    X, y = _data(n=300, d=3, seed=10, noise=2.0)
    model = MondrianKernelRidgeCV(n_trees=20, random_state=0).fit(X, y)
    c = model.path_["confirm"]
    up, up_mse = c["larger_alphas"], c["larger_alphas_mse"]
    assert up.size == path_estimators.CONFIRM_ALPHA_STEPS
    factor = path_estimators.CONFIRM_ALPHA_UP
    np.testing.assert_allclose(up, 3e-2 * factor ** np.arange(1, up.size + 1), rtol=1e-12)
    # Each error is that of ridge on the ladder's training rows at the
    # selected lifetime, scored on its held-out rows.
    held = c["validation_rows"]
    train = np.setdiff1d(np.arange(300), held)
    Phi = model.features_.training_features(model.lifetime_).toarray()
    ym = y[train].mean()
    for alpha, mse in zip(up, up_mse):
        A = Phi[train].T @ Phi[train] + alpha * np.eye(Phi.shape[1])
        w = np.linalg.solve(A, Phi[train].T @ (y[train] - ym))
        assert mse == pytest.approx(np.mean((Phi[held] @ w + ym - y[held]) ** 2), rel=1e-7)
    # Accepted while each lowered the error; the selection is the last
    # accepted one.
    i = int(np.flatnonzero(c["lifetimes"] == model.lifetime_)[0])
    previous = c["validation_mse"][i].min()
    accepted = []
    for alpha, mse in zip(up, up_mse):
        if not mse < previous:
            break
        accepted.append(alpha)
        previous = mse
    assert 0 < len(accepted) < up.size and model.alpha_ == accepted[-1]
    # The defaults' own alphas leave the list empty when the smaller wins.
    monkeypatch.setattr(MondrianKernelRidgeCV, "_pilot_alphas",
                        lambda self, p, lifetime: np.array([0.3, 1e6]))
    other = MondrianKernelRidgeCV(n_trees=20, random_state=0).fit(X, y)
    assert other.path_["confirm"]["larger_alphas"].size == 0


def test_pilot_route_lowers_the_auto_tree_count_to_the_available_memory(monkeypatch):
    # The pilot route on 600 rows (its row thresholds lowered so that the
    # test stays small): with ample memory the final forest has the
    # automatic count; with memory for a few hundred trees of the forest on
    # every row and its CG ridge, the count is lowered to what fits, with
    # a warning naming n_trees, recorded in path_, and the ladder ranks
    # on that forest.  The cap is the estimator's own memory count.
    import mondrian.features.mondrian as fm

    monkeypatch.setattr(path_estimators, "AUTO_DUAL_ROWS", 200)
    monkeypatch.setattr(path_estimators, "PILOT_ROWS", 200)
    X, y = _data(n=600, d=3, seed=4, noise=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        free = MondrianKernelRidgeCV(random_state=0).fit(X, y)
    assert free.path_["solver"] == "cg" and "memory_cap" not in free.path_["trees"]
    M = free.n_trees_
    monkeypatch.setattr(fm, "available_memory", lambda: 2 * 10**7)
    fits = free._trees_in_memory(X, M, free.lifetime_, np.random.default_rng(0), 2)
    assert 0 < fits < M / 2
    with pytest.warns(UserWarning, match=r"n_trees='auto': \d+ trees instead of %d" % M):
        capped = MondrianKernelRidgeCV(random_state=0).fit(X, y)
    trees = capped.path_["trees"]
    assert trees["memory_cap"] == trees["final"] == capped.n_trees_ == capped.features_.n_trees
    # counted at the ladder's first lifetime (2λ̂ of the pilot), within a
    # few percent of the count at the selection (other pilot trees)
    assert 0.8 * fits <= capped.n_trees_ <= 1.2 * fits
    assert np.all(np.isfinite(capped.predict(X)))
    # a number is a number: no cap, no warning (with the memory to fit it)
    monkeypatch.setattr(fm, "available_memory", lambda: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        fixed = MondrianKernelRidgeCV(n_trees=M, random_state=0).fit(X, y)
    assert fixed.n_trees_ == M
