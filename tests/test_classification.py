"""The converged classifier along the lifetime path (mondrian.path.classify)
and MondrianKernelClassifierCV's Newton solver."""
import numpy as np
import pytest
from scipy.special import expit, softmax
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from mondrian import MondrianFeatures, MondrianKernelClassifierCV
from mondrian._ext._classify import cell_columns, cells_matvec, cells_rmatvec
from mondrian.path.classify import NewtonClassifierPath, _Objective, newton_cg


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.random((240, 3))
    score = np.sin(5 * X[:, 0]) + X[:, 1] + 0.3 * rng.standard_normal(240)
    y2 = (score > 0.9).astype(int)
    y3 = np.digitize(score, [0.5, 1.2])
    forest = MondrianFeatures(n_trees=12, lifetime=6.0, random_state=0).fit(X)
    return X, y2, y3, forest


def dense_gradient(Phi, y, n_classes, loss, C, weight, W, b):
    """∇f of ½‖W‖² + C Σ cᵢ ℓ(yᵢ, Φᵢ W + b), written independently of the
    solver (dense Φ, one column per output)."""
    Z = Phi @ W + b
    if loss == "logistic" and n_classes == 2:
        s = np.where(y == 1, 1.0, -1.0)
        dz = (-s * expit(-s * Z[:, 0]))[:, None]
    elif loss == "logistic":
        dz = softmax(Z, axis=1) - np.eye(n_classes)[y]
    else:
        s = np.where(y[:, None] == np.arange(W.shape[1])[None, :], 1.0, -1.0)
        if n_classes == 2:
            s = np.where(y == 1, 1.0, -1.0)[:, None]
        dz = -2.0 * s * np.maximum(1.0 - s * Z, 0.0)
    dz = C * weight[:, None] * dz
    return np.concatenate([(W + Phi.T @ dz).ravel(), dz.sum(axis=0)])


def path_weights(path, c):
    W, b = path.coef(c)
    return W, b


# --------------------------------------------------------------------------
# The products in C
# --------------------------------------------------------------------------
@pytest.mark.parametrize("K", [1, 3])
def test_products_equal_the_dense_feature_matrix(problem, K):
    _, _, _, forest = problem
    cols, offset = cell_columns(forest.forest_, 2.5, 1)
    Phi = forest.training_features(2.5).toarray()
    assert cols.shape == (12, 240) and offset[-1] == Phi.shape[1]
    rng = np.random.default_rng(1)
    W = rng.standard_normal((Phi.shape[1], K))
    V = rng.standard_normal((240, K))
    scale = 1.0 / np.sqrt(12)
    out1, out2 = np.empty((240, K)), np.empty((240, K))
    cells_matvec(cols, W, scale, out1, 1)
    cells_matvec(cols, W, scale, out2, 2)
    np.testing.assert_allclose(out1, Phi @ W, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(out1, out2)          # same sums for any threads
    g1, g2 = np.empty((Phi.shape[1], K)), np.empty((Phi.shape[1], K))
    cells_rmatvec(cols, V, offset, scale, g1, 1)
    cells_rmatvec(cols, V, offset, scale, g2, 2)
    np.testing.assert_allclose(g1, Phi.T @ V, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(g1, g2)


def test_products_refuse_bad_columns(problem):
    _, _, _, forest = problem
    cols, offset = cell_columns(forest.forest_, 2.5, 1)
    bad = cols.copy()
    bad[3, 7] = offset[-1] + 5
    W = np.zeros((int(offset[-1]), 1))
    with pytest.raises(ValueError, match="out of the range"):
        cells_matvec(bad, W, 1.0, np.empty((240, 1)), 1)
    bad = cols.copy()
    bad[3, 7] = offset[3] - 1          # a column of tree 2 in tree 3's row
    with pytest.raises(ValueError, match="outside its tree"):
        cells_rmatvec(bad, np.ones((240, 1)), offset, 1.0, np.empty(W.shape), 1)


# --------------------------------------------------------------------------
# Optimality along the path
# --------------------------------------------------------------------------
@pytest.mark.parametrize("loss, labels", [("logistic", "y2"), ("logistic", "y3"),
                                          ("squared_hinge", "y2"),
                                          ("squared_hinge", "y3")])
def test_optimality_holds_at_every_grid_point(problem, loss, labels):
    X, y2, y3, forest = problem
    y = {"y2": y2, "y3": y3}[labels]
    K = int(y.max()) + 1
    weight = np.where(y == 0, 0.7, 1.6)      # class weights enter the objective
    train = np.arange(200)
    tol = 1e-4
    path = NewtonClassifierPath(forest, y, K, train, loss=loss, Cs=[0.3, 3.0, 30.0],
                                sample_weight=weight, tol=tol, max_iter=200)
    for lam in (0.5, 1.5, 4.0):
        results = path.solve_at(lam)
        Phi = forest.training_features(lam).toarray()[train] / 1.0
        for c, C in enumerate(path.Cs):
            W, b = path_weights(path, c)
            problems = ([(slice(None), W, b)] if loss == "logistic" or K == 2 else
                        [(slice(k, k + 1), W[:, k:k + 1], b[k:k + 1]) for k in range(K)])
            for p, (cols, Wp, bp) in enumerate(problems):
                yp = y[train] if loss == "logistic" or K == 2 else (y[train] == p).astype(int)
                kp = K if loss == "logistic" else 2
                g = dense_gradient(Phi, yp, kp, loss, C, weight[train], Wp, bp)
                g0 = dense_gradient(Phi, yp, kp, loss, C, weight[train], 0 * Wp, 0 * bp)
                # The stated criterion, recomputed independently of the solver.
                assert np.linalg.norm(g) <= tol * np.linalg.norm(g0)
                assert results[c][p].converged
                assert results[c][p].grad_norm == pytest.approx(np.linalg.norm(g),
                                                                rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("labels", ["y2", "y3"])
def test_equals_scikit_learn_logistic_regression(problem, labels):
    X, y2, y3, forest = problem
    y = {"y2": y2, "y3": y3}[labels]
    K = int(y.max()) + 1
    lam, C = 2.0, 4.0
    path = NewtonClassifierPath(forest, y, K, np.arange(240), loss="logistic", Cs=[C],
                                tol=1e-11, max_iter=500)
    path.solve_at(lam)
    W, b = path.coef(0)
    Phi = forest.training_features(lam).toarray()
    # Same features, same C, intercept fitted and not penalised in both.
    ref = LogisticRegression(C=C, tol=1e-12, max_iter=1000,
                             solver="newton-cholesky").fit(Phi, y)
    if K == 2:
        np.testing.assert_allclose(W[:, 0], ref.coef_[0], atol=1e-6)
        assert b[0] == pytest.approx(ref.intercept_[0], abs=1e-6)
    else:
        # The multinomial intercepts are defined up to a common shift.
        np.testing.assert_allclose(W, ref.coef_.T, atol=1e-6)
        np.testing.assert_allclose(b - b.mean(), ref.intercept_ - ref.intercept_.mean(),
                                   atol=1e-6)
    dec = Phi @ W + b
    proba = softmax(dec, axis=1) if K > 2 else np.column_stack([expit(-dec[:, 0]),
                                                                  expit(dec[:, 0])])
    np.testing.assert_allclose(proba, ref.predict_proba(Phi), atol=1e-7)


@pytest.mark.parametrize("loss, labels", [("logistic", "y2"), ("logistic", "y3"),
                                          ("squared_hinge", "y3")])
def test_warm_start_equals_cold_start(problem, loss, labels):
    X, y2, y3, forest = problem
    y = {"y2": y2, "y3": y3}[labels]
    K = int(y.max()) + 1
    tol = 1e-10
    kw = dict(loss=loss, Cs=[0.5, 5.0], tol=tol, max_iter=500)
    warm = NewtonClassifierPath(forest, y, K, np.arange(240), **kw)
    for lam in (0.3, 1.0, 2.0, 3.5):
        warm.solve_at(lam)               # children inherit their parent's weights
    cold = NewtonClassifierPath(forest, y, K, np.arange(240), **kw)
    cold_results = cold.solve_at(3.5)
    for c in range(2):
        Ww, bw = warm.coef(c)
        Wc, bc = cold.coef(c)
        # Both stop at ‖∇f‖ <= 1e-10·‖∇f(0)‖; f is 1-strongly convex in W,
        # so the weights agree to about that gradient norm.
        bound = 1e3 * tol * max(r.grad_norm0 for r in cold_results[c])
        np.testing.assert_allclose(Ww, Wc, atol=bound)
        if K == 2 or loss == "squared_hinge":
            np.testing.assert_allclose(bw, bc, atol=bound)
        else:
            np.testing.assert_allclose(bw - bw.mean(), bc - bc.mean(), atol=bound)



def test_finer_cells_inherit_their_parents_weights_exactly(problem):
    # Moving to a larger lifetime gives each new cell the weight of the old
    # cell holding it, so before any Newton step the decision values of
    # every point are those of the coarser solution, to the last bit
    # (each is the same sum of M weights, in the same tree order).
    X, y2, y3, forest = problem
    path = NewtonClassifierPath(forest, y3, 3, np.arange(240), Cs=[2.0], tol=1e-8)
    path.solve_at(0.5)
    before = path.decision_points(np.arange(240), 0)
    cols, offset = cell_columns(forest.forest_, 2.0, 1)
    assert offset[-1] > path.n_columns       # finer: more cells
    path._inherit(cols, int(offset[-1]))
    path._cols, path._offset = cols, offset
    np.testing.assert_array_equal(path.decision_points(np.arange(240), 0), before)


def test_a_solve_from_a_given_solution_reuses_its_columns(problem, monkeypatch):
    # start_from then solve_at at the same lifetime: the columns are
    # computed once, and the solve starts at the given solution (already
    # optimal: no Newton step moves it beyond the tolerance).
    import mondrian.path.classify as classify

    X, y2, y3, forest = problem
    kw = dict(Cs=[1.0], tol=1e-10, max_iter=500)
    first = NewtonClassifierPath(forest, y2, 2, np.arange(240), **kw)
    first.solve_at(1.5)
    W, b = first.coef(0)
    calls = []
    real = classify.cell_columns
    monkeypatch.setattr(classify, "cell_columns",
                        lambda *a: calls.append(a[1]) or real(*a))
    again = NewtonClassifierPath(forest, y2, 2, np.arange(240), **kw)
    again.start_from(1.5, [np.concatenate([W.ravel(), b])])
    result = again.solve_at(1.5)[0][0]
    assert calls == [1.5]
    assert result.converged and result.n_iter <= 1
    np.testing.assert_allclose(again.coef(0)[0], W, atol=1e-8)

def test_class_weight_equals_repeated_points(problem):
    """A class weight of 2 is the objective with that class's points twice."""
    _, y2, _, forest = problem
    cols, offset = cell_columns(forest.forest_, 1.5, 1)
    s = np.where(y2 == 1, 1.0, -1.0)
    scale = 1.0 / np.sqrt(12)
    weighted = _Objective(cols, offset, scale, s, np.where(y2 == 1, 2.0, 1.0), 3.0,
                          "logistic", 2, 1)
    rows = np.concatenate([np.arange(240), np.flatnonzero(y2 == 1)])
    repeated = _Objective(np.ascontiguousarray(cols[:, rows]), offset, scale, s[rows],
                          np.ones(rows.size), 3.0, "logistic", 2, 1)
    a = newton_cg(weighted, np.zeros(weighted.size), 1e-11, 500)
    b = newton_cg(repeated, np.zeros(repeated.size), 1e-11, 500)
    assert a.f == pytest.approx(b.f, rel=1e-12)
    np.testing.assert_allclose(a.x, b.x, atol=1e-8)


# --------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------
def test_default_classifier_multiclass_strings(problem):
    X, _, y3, _ = problem
    labels = np.array(["low", "mid", "high"])[y3]
    clf = MondrianKernelClassifierCV(random_state=0).fit(X[:200], labels[:200])
    assert clf.solver_ == "newton"
    np.testing.assert_array_equal(clf.classes_, ["high", "low", "mid"])
    proba = clf.predict_proba(X[200:])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(X[200:]), clf.classes_[np.argmax(proba, 1)])
    np.testing.assert_allclose(np.log(proba), clf.predict_log_proba(X[200:]))
    # The stated tolerance held at every solve of the path.
    assert np.all(clf.path_["grad_ratio"] <= clf.path_["tol"])
    # The multinomial model: one weight column per class.
    assert clf.coef_.shape[0] == 3 and clf.intercept_.shape == (3,)
    assert clf.path_["validation_accuracy"].shape == (clf.path_["lifetimes"].size,
                                                     clf.path_["Cs"].size)


def test_default_classifier_learns_a_nonlinear_boundary():
    rng = np.random.default_rng(1)
    X = rng.random((1200, 2))
    y = (np.sin(6 * X[:, 0]) > 2 * X[:, 1] - 1).astype(int)
    clf = MondrianKernelClassifierCV(random_state=0).fit(X[:800], y[:800])
    acc = clf.score(X[800:], y[800:])
    # A linear classifier gets about 80 % here; the boundary is noiseless,
    # so a kernel classifier with a good width errs only near it.  With 400
    # test points the standard error of the accuracy is at most 2.5 %.
    linear = LogisticRegression().fit(X[:800], y[:800]).score(X[800:], y[800:])
    assert acc > max(0.93, linear + 0.08)
    # The width came from the pilot and the path started there.
    assert clf.path_["lifetimes"][0] == pytest.approx(clf.path_["pilot_lifetime"])
    assert clf.lifetime_ in clf.path_["lifetimes"]


def test_class_weight_balanced_equals_the_dict(problem):
    X, y2, _, _ = problem
    n0, n1 = np.bincount(y2[:200])
    cw = {0: 200 / (2 * n0), 1: 200 / (2 * n1)}
    kw = dict(n_trees=10, max_lifetime=3.0, Cs=[1.0, 10.0], random_state=0,
              validation_fraction=0.25)
    a = MondrianKernelClassifierCV(class_weight="balanced", **kw).fit(X[:200], y2[:200])
    b = MondrianKernelClassifierCV(class_weight=cw, **kw).fit(X[:200], y2[:200])
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-10)
    plain = MondrianKernelClassifierCV(**kw).fit(X[:200], y2[:200])
    # Up-weighting the minority class moves predictions towards it.
    minority = int(n1 < n0)
    assert (np.mean(a.predict(X) == minority) > np.mean(plain.predict(X) == minority))


def test_squared_hinge_has_no_probabilities(problem):
    X, y2, _, _ = problem
    clf = MondrianKernelClassifierCV(loss="squared_hinge", n_trees=10, random_state=0)
    clf.fit(X, y2)
    assert not hasattr(clf, "predict_proba")
    assert clf.decision_function(X).shape == (240,)
    assert np.all(clf.path_["grad_ratio"] <= clf.path_["tol"])


@pytest.mark.parametrize("params, fit_y, match, exc", [
    ({}, "one", "at least 2 classes", ValueError),
    ({}, "nan", "NaN", ValueError),
    ({}, "continuous", "Unknown label type", ValueError),
    ({"class_weight": {7: 2.0}}, None, "class_weight names the label 7", ValueError),
    ({"class_weight": {0: -1.0}}, None, r"class_weight\[0\]", ValueError),
    ({"class_weight": "uniform"}, None, "class_weight", ValueError),
    ({"class_weight": [1, 2]}, None, "class_weight", TypeError),
    ({"Cs": []}, None, "Cs", ValueError),
    ({"Cs": [1.0, -2.0]}, None, "Cs", ValueError),
    ({"tol": 0.0}, None, "tol", ValueError),
    ({"max_iter": 0}, None, "max_iter", ValueError),
    ({"loss": "hinge", "solver": "newton"}, None, "hinge", ValueError),
    ({"loss": "squared_hinge", "solver": "sgd"}, None, "squared_hinge", ValueError),
    ({"solver": "lbfgs"}, None, "solver", ValueError),
    ({"warm_start": True}, None, "warm_start", ValueError),
    ({"n_lifetimes": 5}, None, "n_lifetimes", ValueError),
    ({"solver": "sgd", "class_weight": "balanced"}, None, "class_weight", ValueError),
])
def test_bad_input(problem, params, fit_y, match, exc):
    X, y2, _, _ = problem
    y = {None: y2, "one": np.zeros(240, dtype=int),
         "nan": np.where(y2 == 1, np.nan, 0.0), "continuous": X[:, 0]}[fit_y]
    with pytest.raises(exc, match=match):
        MondrianKernelClassifierCV(n_trees=5, **params).fit(X, y)


def test_validation_labels_must_be_classes(problem):
    X, y2, _, _ = problem
    with pytest.raises(ValueError, match="y_val holds labels not seen in y"):
        MondrianKernelClassifierCV(n_trees=5).fit(X[:200], y2[:200], X[200:],
                                                  np.full(40, 3))


def test_sgd_solver_with_automatic_lifetime(problem):
    """solver='sgd' (the paper's path) with max_lifetime='auto' sweeps
    [0, 4λ₀], λ₀ = 1/(median ℓ₁ distance between training points, divided
    by the features' standard deviations: feature_scale='auto')."""
    from mondrian._scale import lifetime_scale

    X, y2, _, _ = problem
    clf = MondrianKernelClassifierCV(solver="sgd", n_trees=5, n_lifetimes=4,
                                     random_state=0).fit(X, y2)
    assert clf.solver_ == "sgd" and clf.C_ is None
    np.testing.assert_array_equal(clf.feature_scale_, np.std(X, axis=0))
    # 240 rows: the median uses every pair, no random draw.
    assert clf.features_.lifetime_ == pytest.approx(
        4.0 * lifetime_scale(X / np.std(X, axis=0), np.random.default_rng(0)))
    assert clf.lifetime_ in clf.path_["lifetimes"]


def test_every_class_keeps_a_training_point():
    """A class whose only point would be held out for validation is kept
    in training, so that each problem has a finite solution."""
    rng = np.random.default_rng(3)
    X = rng.random((60, 2))
    y = (X[:, 0] > 0.5).astype(int)
    y[17] = 2                                   # a class with one point
    held_out = []
    for seed in (0, 9, 13):
        # The random split the estimator draws (first child of the seed).
        split = np.random.default_rng(seed).spawn(4)[0]
        held_out.append(17 in split.permutation(60)[:12])
        clf = MondrianKernelClassifierCV(n_trees=5, random_state=seed).fit(X, y)
        assert 17 not in clf.path_["validation_rows"]
        assert np.all(clf.path_["grad_ratio"] <= clf.path_["tol"])
    assert any(held_out)        # the rule was exercised


@pytest.mark.parametrize("n, k", [(30, 2), (1000, 2), (3000, 4)])
def test_balanced_classes_on_constant_features_converge_quietly(n, k):
    """Balanced classes on one point repeated: ∇f(0) cancels to rounding
    (the relative test against it could never pass) and, in the multinomial
    case, f stops decreasing representably near the optimum.  Both count as
    converged, so no ConvergenceWarning (warnings are errors in the suite),
    and the probabilities are the classes' frequencies."""
    X, y = np.ones((n, 3)), np.arange(n) % k
    clf = MondrianKernelClassifierCV(random_state=0).fit(X, y)
    assert np.all(clf.path_["converged"])
    np.testing.assert_allclose(clf.predict_proba(X[:2]), 1.0 / k, atol=0.02)


def test_newton_refuses_no_real_progress(problem):
    """The floor and the precision stop do not end a solve early: on data
    whose classes differ, the solution meets the relative tolerance."""
    _, y2, _, forest = problem
    cols, offset = cell_columns(forest.forest_, 1.5, 1)
    obj = _Objective(cols, offset, 1.0 / np.sqrt(12), np.where(y2 == 1, 1.0, -1.0),
                     np.ones(y2.size), 3.0, "logistic", 2, 1)
    g0 = float(np.linalg.norm(obj.gradient(obj.evaluate(np.zeros(obj.size)))))
    assert obj.grad_norm_at_zero() == g0     # far above the cancellation floor
    r = newton_cg(obj, np.zeros(obj.size), 1e-8, 100)
    assert r.converged and r.grad_norm <= 1e-8 * g0


def test_unconverged_solves_warn(problem):
    X, y2, _, _ = problem
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        clf = MondrianKernelClassifierCV(n_trees=10, max_iter=1, tol=1e-8,
                                         random_state=0).fit(X, y2)
    assert np.max(clf.path_["grad_ratio"]) > 1e-8


@pytest.mark.parametrize("n_classes", [2, 3])
def test_dual_class_scorer_prefetch_records_only_what_is_revealed(problem, n_classes,
                                                                  monkeypatch):
    # prefetch computes lifetimes at once (two Python threads) but records
    # each only when its callable is called: the revealed errors equal a
    # one-by-one evaluation bit for bit, and the unrevealed one is absent.
    # (The problem's rows are fewer than PAIR_ROWS, where prefetch declines.)
    from mondrian.path import dual as path_dual
    from mondrian.path.classify import DualClassScorer
    monkeypatch.setattr(path_dual, "PAIR_ROWS", 1)

    X, y2, y3, forest = problem
    codes = y2 if n_classes == 2 else y3
    alphas = np.logspace(-3, 1, 5)
    one = DualClassScorer(forest, codes, n_classes, alphas, n_jobs=1)
    ahead = DualClassScorer(forest, codes, n_classes, alphas, n_jobs=2)
    now, later = ahead.prefetch([3.0, 1.5])
    assert ahead.records == {}
    assert np.array_equal(now(), one(3.0))
    assert list(ahead.records) == [3.0]
    del later
    assert 1.5 not in ahead.records


@pytest.mark.parametrize("n_classes", [2, 3])
def test_dual_class_scorer_evaluate_many_equals_one_by_one(problem, n_classes):
    # The classifier's pilot: lifetimes evaluated together (two Python
    # threads) give its leave-one-out errors bit for bit as one by one,
    # and those equal a direct solve at one alpha.
    from mondrian.path.classify import DualClassScorer
    from mondrian.path.dual import cell_labels, mondrian_kernel_matrix

    X, y2, y3, forest = problem
    codes = y2 if n_classes == 2 else y3
    alphas = np.logspace(-3, 1, 5)
    lams = [1.5, 3.0, 6.0]
    one = DualClassScorer(forest, codes, n_classes, alphas, n_jobs=1)
    many = DualClassScorer(forest, codes, n_classes, alphas, n_jobs=2)
    seq = [one(lam) for lam in lams]
    par = many.evaluate_many(lams)
    for lam, a, b in zip(lams, seq, par):
        assert np.array_equal(a, b)
        assert np.array_equal(one.records[lam], many.records[lam])
    # Leave-one-out of ridge on the indicators at lifetime 3, alpha 0.1:
    # e = (A⁻¹Y)ᵢ / (A⁻¹)ᵢᵢ row by row, A = K + αI.
    K = mondrian_kernel_matrix(cell_labels(forest, 3.0))
    Ainv = np.linalg.inv(K + alphas[2] * np.eye(K.shape[0]))
    R = (Ainv @ one.Y) / np.diag(Ainv)[:, None]
    assert seq[1][2] == pytest.approx(np.mean(np.sum(R ** 2, axis=1)), rel=1e-8)


def test_scoring_gathers_each_rows_table_once_and_release_starts_afresh(problem):
    # decision_points gathers the (M, len(rows)) table of an array of rows
    # once per set of columns (a sweep scores every C on the same rows),
    # the training rows' being the solve's own; the values are those of a
    # direct product.  release() drops the tables and solutions: the next
    # solve is a cold one, equal to a fresh path's.
    X, y2, y3, forest = problem
    train, val = np.arange(200), np.arange(200, 240)
    kw = dict(Cs=[0.5, 5.0], tol=1e-8)
    path = NewtonClassifierPath(forest, y3, 3, train, **kw)
    path.solve_at(1.0)
    assert id(train) in path._tables
    first = path._tables[id(train)][1]
    for c in range(2):
        dec = path.decision_points(val, c)
        W, b = path.coef(c)
        cols, offset = cell_columns(forest.forest_, 1.0, 1)
        Phi = np.zeros((40, int(offset[-1])))
        for m in range(cols.shape[0]):
            Phi[np.arange(40), cols[m, 200:240]] = path.scale
        np.testing.assert_allclose(dec, Phi @ W + b, rtol=1e-12, atol=1e-12)
        path.decision_points(train, c)
    assert path._tables[id(train)][1] is first and len(path._tables) == 2
    path.solve_at(2.0)                    # new columns: new tables
    assert path._tables[id(train)][1] is not first
    path.release()
    assert path._tables == {} and path._x is None
    again = path.solve_at(2.0)
    fresh = NewtonClassifierPath(forest, y3, 3, train, **kw).solve_at(2.0)
    for a_row, f_row in zip(again, fresh):
        for a, f in zip(a_row, f_row):
            np.testing.assert_array_equal(a.x, f.x)


def test_auto_tree_count_is_lowered_to_the_available_memory(monkeypatch):
    # The Newton path's forest at the lifetime grid's top and its tables:
    # with memory for about a third of the automatic 300 trees, the count
    # is lowered to what fits, with a warning naming n_trees, and recorded;
    # with ample memory nothing changes; a number is never lowered.
    import warnings

    import mondrian.features.mondrian as fm
    from mondrian.path import estimators as pe

    rng = np.random.default_rng(5)
    X = rng.standard_normal((600, 3))
    y = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * rng.standard_normal(600) > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        free = MondrianKernelClassifierCV(random_state=0).fit(X, y)
    assert free.path_["memory_cap"] is None and free.n_trees_ == 300
    top = free.path_["pilot_lifetime"] * pe.CLASSIFIER_GRID_FACTORS[-1]
    monkeypatch.setattr(fm, "available_memory", lambda: 3 * 10**7)
    fits = free._trees_in_memory(X, 300, top, np.random.default_rng(0), 2,
                                 point_tree_bytes=pe.CLASSIFIER_POINT_TREE_BYTES,
                                 per_node_bytes=pe.CLASSIFIER_NODE_BYTES)
    assert 50 < fits < 200
    with pytest.warns(UserWarning, match=r"n_trees='auto': \d+ trees instead of 300"):
        capped = MondrianKernelClassifierCV(random_state=0).fit(X, y)
    assert capped.path_["memory_cap"] == capped.n_trees_ == capped.features_.n_trees
    # other pilot trees than the estimate's above: within a fifth of it
    assert 0.8 * fits <= capped.n_trees_ <= 1.2 * fits
    assert np.mean(capped.predict(X) == y) > 0.8
    monkeypatch.setattr(fm, "available_memory", lambda: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        fixed = MondrianKernelClassifierCV(n_trees=300, random_state=0).fit(X, y)
    assert fixed.n_trees_ == 300 and fixed.path_["memory_cap"] is None
