"""The kernel-width path (mondrian.path): exact, CG and SGD learners along
the split events and the posterior over λ."""
import numpy as np
import pytest
from scipy import integrate

from mondrian import LifetimePosterior, MondrianFeatures
from mondrian._validation import check_alphas
from mondrian._ext._path import dual_split
from mondrian.path import (CGRidgePath, DualExactRidgePath, ExactRidgePath, SGDPath,
                           check_exact_size, exact_ridge_path, lifetime_grid, split_events)
from mondrian.path.learners import check_dual_size


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.random((150, 3))
    y = np.sin(5 * X[:, 0]) + X[:, 1] + 0.1 * rng.standard_normal(150)
    y = y - y.mean()
    mf = MondrianFeatures(n_trees=6, lifetime=4.0, random_state=1).fit(X)
    return X, y, mf, split_events(mf)


def _direct(mf, y, lam, alpha, mask=None):
    Phi = mf.training_features(lam).toarray()
    if mask is not None:
        Phi = Phi[mask]
        y = y[mask]
    A = Phi.T @ Phi + alpha * np.eye(Phi.shape[1])
    return Phi, A, np.linalg.solve(A, Phi.T @ y)


def test_split_events_structure(problem):
    _, _, mf, ev = problem
    assert ev.n_columns == mf.n_cells_
    assert np.all(np.diff(ev.times) >= 0)
    assert np.all(ev.times <= mf.lifetime_)
    for lam in (0.0, 0.7, 2.0, 4.0):
        cols = ev.columns_at(lam)
        assert cols.shape[0] == mf.training_features(lam).shape[1]
        assert cols.shape[0] == ev.n_trees + np.searchsorted(ev.times, lam, side="right")


def test_exact_path_matches_direct_solve_at_random_events(problem):
    _, y, mf, ev = problem
    alphas = [0.05, 1.0]
    path = ExactRidgePath(ev, y, alphas)
    rng = np.random.default_rng(3)
    stops = np.sort(rng.choice(ev.times, size=6, replace=False))
    for lam in stops:
        path.run(lam)
        ids, w = path.weights()
        cols = ev.columns_at(lam)
        np.testing.assert_array_equal(np.sort(ids), cols)
        pos = np.searchsorted(cols, ids)
        for a, alpha in enumerate(alphas):
            Phi, A, w_direct = _direct(mf, y, lam, alpha)
            # Factor after the deletions and appends equals A (permuted) to
            # rounding: relative 1e-8 is far above double-precision error.
            Lf = path.factor(a)
            Ap = A[np.ix_(pos, pos)]
            assert np.abs(Lf @ Lf.T - Ap).max() <= 1e-8 * np.abs(Ap).max()
            assert np.abs(w[a] - w_direct[pos]).max() <= 1e-8 * np.abs(w_direct).max()
            sse = np.sum((y - Phi @ w_direct) ** 2)
            assert path.train_sse()[-1, a] == pytest.approx(sse, rel=1e-8)


@pytest.mark.parametrize("prior_variance", [1.0, 2.5])
def test_log_marginal_likelihood_equals_direct_formula(problem, prior_variance):
    _, y, mf, ev = problem
    alphas = [0.1, 0.7]
    path = ExactRidgePath(ev, y, alphas)
    lam = ev.times[len(ev.times) // 3]
    path.run(lam)
    n = y.shape[0]
    for a, alpha in enumerate(alphas):
        Phi = mf.training_features(lam).toarray()
        # y ~ N(0, s² ΦΦᵀ + α s² I): the GP view, no Woodbury.
        K = prior_variance * (Phi @ Phi.T + alpha * np.eye(n))
        _, logdet = np.linalg.slogdet(K)
        direct = -0.5 * y @ np.linalg.solve(K, y) - 0.5 * logdet - 0.5 * n * np.log(2 * np.pi)
        got = path.log_marginal_likelihood(prior_variance)[-1, a]
        assert got == pytest.approx(direct, rel=1e-9)


def test_profile_evidence_is_the_maximum_over_scales(problem):
    _, y, _, ev = problem
    path = ExactRidgePath(ev, y, [0.3])
    path.run(ev.times[20])
    prof = path.log_marginal_likelihood("profile")[-1, 0]
    scales = np.geomspace(1e-3, 1e3, 61)
    values = [path.log_marginal_likelihood(s)[-1, 0] for s in scales]
    assert prof >= max(values) - 1e-9
    # The grid is fine near the optimum: within 1 % of its log-spacing.
    assert prof - max(values) < 0.05 * abs(prof)


def test_exact_path_with_held_out_points(problem):
    _, y, mf, ev = problem
    mask = np.ones(y.shape[0], dtype=bool)
    mask[::4] = False
    path = ExactRidgePath(ev, y, [0.2], train_mask=mask)
    lam = ev.times[-5]
    path.run(lam)
    Phi_all = mf.training_features(lam).toarray()
    _, _, w = _direct(mf, y, lam, 0.2, mask)
    expected = Phi_all[~mask] @ w
    got = path.predict_points(np.flatnonzero(~mask))[0]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("warm_start", ["copy", "dual"])
def test_cg_path_reaches_its_tolerance(problem, warm_start):
    _, y, mf, ev = problem
    tol = 1e-8
    path = CGRidgePath(ev, y, [0.05, 1.0], tol=tol, warm_start=warm_start)
    for lam in lifetime_grid(ev, 8):
        iters, sse = path.solve_at(lam)
        W = path.node_weights()
        cols = ev.columns_at(lam)
        # Weights vanish off the active nodes.
        off = np.setdiff1d(np.arange(ev.n_nodes), cols)
        assert np.all(W[:, off] == 0)
        for a, alpha in enumerate([0.05, 1.0]):
            Phi, A, w_direct = _direct(mf, y, lam, alpha)
            b = Phi.T @ y
            r = A @ W[a, cols] - b
            assert np.linalg.norm(r) <= tol * np.linalg.norm(b) * (1 + 1e-6) + 1e-14
            # ‖w - w*‖ ≤ ‖r‖/λ_min(A) ≤ ‖r‖/α (plus rounding at λ = 0,
            # where Φᵀy = 0 for centred y).
            assert (np.linalg.norm(W[a, cols] - w_direct)
                    <= tol * np.linalg.norm(b) / alpha + 1e-12)
            assert sse[a] == pytest.approx(np.sum((y - Phi @ w_direct) ** 2), rel=1e-6)


@pytest.mark.parametrize("loss", ["squared", "hinge", "logistic"])
def test_sgd_split_preserves_predictions(problem, loss):
    _, y, _, ev = problem
    target = y if loss == "squared" else np.where(y > 0, 1.0, -1.0)
    path = SGDPath(ev, target, loss=loss, random_state=np.random.default_rng(0))
    path.epochs(2)
    for lam in lifetime_grid(ev, 6)[1:]:
        before = path.decision_points()
        path.advance(lam, learn=False)
        # Children inherit the parent's weight: every prediction is unchanged
        # (exactly: the same sum is formed from the same values).
        np.testing.assert_array_equal(path.decision_points(), before)
        path.epochs(1)


def test_sgd_path_learns(problem):
    _, y, _, ev = problem
    path = SGDPath(ev, y, loss="squared", learning_rate=0.3,
                   random_state=np.random.default_rng(0))
    path.epochs(5)
    err0 = np.mean((path.decision_points() - y) ** 2)
    path.advance(ev.lifetime)
    path.epochs(20)
    # Fine cells fit the smooth target far better than the constant model.
    assert np.mean((path.decision_points() - y) ** 2) < 0.2 * err0


def _brute_posterior(breaks, ll, lam_max, prior, lmin=None):
    def L(lam):
        k = np.searchsorted(breaks, lam, side="right") - 1
        return ll[k]

    if prior == "uniform":
        def dens(lam):
            return np.exp(L(lam) - ll.max()) / lam_max
        lo = 0.0
    else:
        def dens(lam):
            return np.exp(L(lam) - ll.max()) / (lam * np.log(lam_max / lmin))
        lo = lmin
    pts = np.unique(np.clip(np.concatenate([breaks, [lo, lam_max]]), lo, lam_max))
    Z = sum(integrate.quad(dens, a, b)[0] for a, b in zip(pts[:-1], pts[1:]) if b > a)
    m1 = sum(integrate.quad(lambda t: t * dens(t), a, b)[0]
             for a, b in zip(pts[:-1], pts[1:]) if b > a)
    return Z, dens, m1 / Z, pts


@pytest.mark.parametrize("prior", ["uniform", "log-uniform"])
def test_posterior_integrates_to_one_and_matches_brute_force(prior):
    rng = np.random.default_rng(2)
    breaks = np.concatenate([[0.0], np.sort(rng.uniform(0, 10, 30))])
    ll = rng.normal(0, 2, breaks.shape[0])
    lmin = 0.5
    post = LifetimePosterior(breaks, ll, 10.0, prior=prior, lifetime_min=lmin)
    Z, dens, mean, pts = _brute_posterior(breaks, ll, 10.0, prior, lmin)
    total = sum(integrate.quad(lambda t: post.pdf(t)[0], a, b)[0]
                for a, b in zip(pts[:-1], pts[1:]) if b > a)
    assert total == pytest.approx(1.0, rel=1e-8)
    assert post.mean() == pytest.approx(mean, rel=1e-7)
    for t in rng.uniform(pts[0], 10.0, 5):
        assert post.pdf(t)[0] == pytest.approx(dens(t) / Z, rel=1e-8)
        below = sum(integrate.quad(dens, a, min(b, t))[0]
                    for a, b in zip(pts[:-1], pts[1:]) if min(b, t) > a) / Z
        assert post.cdf(t)[0] == pytest.approx(below, rel=1e-7, abs=1e-10)
    q = np.array([0.05, 0.5, 0.95])
    np.testing.assert_allclose(post.cdf(post.ppf(q)), q, atol=1e-10)
    lo, hi = post.interval(0.9)
    assert post.cdf(hi)[0] - post.cdf(lo)[0] == pytest.approx(0.9, abs=1e-10)
    mode = post.mode()
    grid = np.linspace(pts[0] + 1e-9, 10.0, 20001)
    assert post.pdf(mode)[0] >= post.pdf(grid).max() * (1 - 1e-9)


def test_posterior_invalid_arguments():
    with pytest.raises(ValueError, match="start at 0"):
        LifetimePosterior([0.5, 1.0], [0.0, 1.0], 2.0)
    with pytest.raises(ValueError, match="same length"):
        LifetimePosterior([0.0, 1.0], [0.0], 2.0)
    with pytest.raises(ValueError, match="prior"):
        LifetimePosterior([0.0, 1.0], [0.0, 1.0], 2.0, prior="flat")
    with pytest.raises(ValueError, match="lifetime_min"):
        LifetimePosterior([0.0, 1.0], [0.0, 1.0], 2.0, prior="log-uniform", lifetime_min=3.0)


def test_dual_exact_path_records_equal_the_primal_ones(problem):
    # The dual form follows K + αI (150 x 150) where the primal follows
    # ΦᵀΦ + αI (C x C): the columns, the training error, the evidence (both
    # prior variances and the profile) and the weights Φᵀc at every state
    # equal the primal's to rounding (1e-13 measured; 1e-9 relative leaves
    # room for the up- and downdates' error growth along 600+ events).
    _, y, mf, ev = problem
    alphas = [0.05, 1.0, 7.0]
    primal, dual = ExactRidgePath(ev, y, alphas), DualExactRidgePath(ev, y, alphas)
    rng = np.random.default_rng(5)
    stops = np.concatenate([[0.0], np.sort(rng.choice(ev.times, size=5, replace=False)),
                            [mf.lifetime_]])
    for lam in stops:
        assert primal.run(lam) == dual.run(lam)
        assert dual.n_done == primal.n_done
        np.testing.assert_array_equal(dual.n_columns, primal.n_columns)
        np.testing.assert_array_equal(dual.lifetimes, primal.lifetimes)
        for prior in (1.0, 2.5, "profile"):
            np.testing.assert_allclose(dual.log_marginal_likelihood(prior),
                                       primal.log_marginal_likelihood(prior), rtol=1e-9)
        sse = primal.train_sse()
        assert np.abs(dual.train_sse() - sse).max() <= 1e-9 * sse.max()
        W = primal.node_weights()
        # (at λ = 0 the one root weight of centred y is rounding, ~1e-14)
        assert np.abs(dual.node_weights() - W).max() <= 1e-9 * np.abs(W).max() + 1e-12
    assert dual.run(0.5) == 0  # a lifetime already passed: nothing to run


def test_dual_exact_path_with_held_out_points_equals_the_primal(problem):
    # A fifth of the points held out: K and G over the others only (a child
    # holding only held-out points leaves them unchanged), the held-out
    # points predicted from their cells' weights -- as the primal does.
    _, y, mf, ev = problem
    mask = np.ones(y.shape[0], dtype=bool)
    mask[::5] = False
    alphas = [0.05, 1.0]
    primal = ExactRidgePath(ev, y, alphas, train_mask=mask)
    dual = DualExactRidgePath(ev, y, alphas, train_mask=mask)
    held = np.flatnonzero(~mask)
    for lam in (0.0, ev.times[40], ev.times[len(ev.times) // 2], mf.lifetime_):
        primal.run(lam)
        dual.run(lam)
        assert dual.n_points == primal.n_points == mask.sum()
        np.testing.assert_allclose(dual.log_marginal_likelihood(),
                                   primal.log_marginal_likelihood(), rtol=1e-9)
        sse = primal.train_sse()
        assert np.abs(dual.train_sse() - sse).max() <= 1e-9 * sse.max()
        pred = primal.predict_points(held)
        assert np.abs(dual.predict_points(held) - pred).max() <= 1e-9 * np.abs(pred).max() + 1e-12
    with pytest.raises(ValueError, match="rows must index"):
        dual.predict_points([y.shape[0]])


def test_dual_exact_path_does_not_depend_on_the_thread_count(problem):
    # Each alpha's factor follows the events in order on one thread: the
    # records are the same bits on one thread or two.
    _, y, mf, ev = problem
    one = DualExactRidgePath(ev, y, [0.05, 1.0, 7.0], n_jobs=1)
    two = DualExactRidgePath(ev, y, [0.05, 1.0, 7.0], n_jobs=2)
    for lam in (0.5, mf.lifetime_):
        one.run(lam)
        two.run(lam)
        np.testing.assert_array_equal(one.log_marginal_likelihood(),
                                      two.log_marginal_likelihood())
        np.testing.assert_array_equal(one.node_weights(), two.node_weights())


def test_exact_ridge_path_takes_the_cheaper_form(problem):
    _, y, mf, ev = problem
    # 150 points, more columns at Λ = 4: the dual, with or without held-out points.
    assert ev.n_columns > y.shape[0]
    assert isinstance(exact_ridge_path(ev, y, [0.1]), DualExactRidgePath)
    mask = np.ones(y.shape[0], dtype=bool)
    mask[::5] = False
    assert isinstance(exact_ridge_path(ev, y, [0.1], train_mask=mask), DualExactRidgePath)
    # Fewer columns than points (a shallow forest): the primal.
    X = np.random.default_rng(0).random((150, 3))
    shallow = split_events(MondrianFeatures(n_trees=6, lifetime=0.5, random_state=1).fit(X))
    assert shallow.n_columns < 150
    assert isinstance(exact_ridge_path(shallow, y, [0.1]), ExactRidgePath)


def test_dual_split_is_the_factor_of_the_split_kernel():
    # One event on a dense 9 x 9 G: the factor of G - (1/M)(1_l 1_rᵀ + 1_r 1_lᵀ),
    # G⁻¹y and the log-determinant, against numpy.
    rng = np.random.default_rng(2)
    n, M = 9, 4
    B = rng.standard_normal((n, n))
    G = B @ B.T + 3.0 * np.eye(n)
    L = np.asfortranarray(np.linalg.cholesky(G))
    y = rng.standard_normal(n)
    left, right = np.zeros(n), np.zeros(n)
    left[[1, 4]], right[[2, 7, 8]] = 1.0, 1.0
    d, p = (left - right) / np.sqrt(2 * M), (left + right) / np.sqrt(2 * M)
    c, work = np.empty(n), np.empty(2 * n)
    logdet, yc, cc = dual_split(L, d, p, y, c, work)
    G2 = G - (np.outer(left, right) + np.outer(right, left)) / M
    Lt = np.tril(L)
    np.testing.assert_allclose(Lt @ Lt.T, G2, rtol=0, atol=1e-12)
    np.testing.assert_allclose(c, np.linalg.solve(G2, y), rtol=1e-12)
    assert logdet == pytest.approx(np.linalg.slogdet(G2)[1], rel=1e-12)
    assert (yc, cc) == (pytest.approx(y @ c, rel=1e-14), pytest.approx(c @ c, rel=1e-14))
    # A downdate past positive definiteness is refused, not square-rooted.
    L = np.asfortranarray(np.eye(3))
    with pytest.raises(FloatingPointError, match="positive definiteness"):
        dual_split(L, np.zeros(3), np.array([0.0, 2.0, 0.0]), np.ones(3), np.empty(3),
                   np.empty(6))
    with pytest.raises(ValueError, match="work 2n"):
        dual_split(np.asfortranarray(np.eye(3)), np.zeros(3), np.zeros(3), np.ones(3),
                   np.empty(3), np.empty(5))


def test_invalid_alphas_and_sizes(problem):
    _, y, _, ev = problem
    for bad in ([], [0.1, -1.0], [np.nan], [[0.1, 0.2]]):
        with pytest.raises(ValueError, match="alphas"):
            check_alphas(bad)
    with pytest.raises(TypeError, match="alphas"):
        check_alphas(["a"])
    with pytest.raises(ValueError, match="y must have shape"):
        ExactRidgePath(ev, y[:-1], [0.1])
    with pytest.raises(ValueError, match="O\\(C²\\) memory"):
        check_exact_size(100_000, 1)
    with pytest.raises(ValueError, match="in the dual needs O\\(N²\\) memory"):
        check_dual_size(20_000, 1)
    # 2400 points within the memory limit, but 240 000 splits: too long.
    with pytest.raises(ValueError, match="steps per alpha"):
        check_dual_size(2400, 1, 240_000)
    with pytest.raises(ValueError, match="train_mask"):
        CGRidgePath(ev, y, [0.1], train_mask=np.zeros(y.shape[0], bool))


@pytest.mark.parametrize("kind", ["exact", "dual", "cg"])
def test_extending_the_forest_continues_the_path(kind):
    rng = np.random.default_rng(4)
    X = rng.random((120, 2))
    y = np.cos(4 * X[:, 0]) + 0.1 * rng.standard_normal(120)
    y = y - y.mean()

    def fresh():
        return MondrianFeatures(n_trees=5, lifetime=1.5, random_state=7).fit(X)

    def make(ev):
        if kind == "exact":
            return ExactRidgePath(ev, y, [0.1, 1.0])
        if kind == "dual":
            return DualExactRidgePath(ev, y, [0.1, 1.0])
        return CGRidgePath(ev, y, [0.1, 1.0], tol=1e-10)

    def advance(path, lam):
        if kind != "cg":
            path.run(lam)
            return path.node_weights()
        path.solve_at(lam)
        return path.node_weights()

    mf = fresh()
    path = make(split_events(mf))
    advance(path, 1.5)
    mf.extend(4.0)   # memorylessness: trees continue from 1.5, old nodes unchanged
    ev_big = split_events(mf)
    n_before = path.events.times.shape[0]
    path.extend(ev_big)
    if kind != "cg":
        assert path.n_done == n_before          # nothing re-run
    W = advance(path, 4.0)
    # Same forest grown straight to 4.0 from the same seed, path run from 0.
    reference = make(ev_big)
    W_ref = advance(reference, 4.0)
    cols = ev_big.columns_at(4.0)
    # Exact: equal to rounding; CG: both within ‖w - w*‖ ≤ tol·‖Φᵀy‖/α ≈ 1e-8.
    np.testing.assert_allclose(W[:, cols], W_ref[:, cols], rtol=1e-6, atol=1e-7)
    if kind != "cg":
        np.testing.assert_allclose(path.log_marginal_likelihood(),
                                   reference.log_marginal_likelihood(), rtol=1e-9)
    with pytest.raises(ValueError, match="extend"):
        path.extend(split_events(MondrianFeatures(n_trees=5, lifetime=4.0,
                                                  random_state=8).fit(X)))


def test_cg_extend_forest_grows_in_place_and_equals_extend():
    """``CGRidgePath.extend_forest`` lets go of the forest, has it extended
    in place (no copy) and continues: the same state as ``extend`` on the
    events of a copy extended by ``MondrianFeatures.extend``.  A failing
    extension leaves the learner on the forest as it was."""
    rng = np.random.default_rng(5)
    X = rng.random((150, 3))
    y = np.sin(5 * X[:, 0]) + 0.1 * rng.standard_normal(150)
    y = y - y.mean()
    mask = rng.random(150) < 0.8

    def start():
        mf = MondrianFeatures(n_trees=6, lifetime=1.0, random_state=3).fit(X)
        path = CGRidgePath(split_events(mf), y, [0.1, 1.0], train_mask=mask, tol=1e-8)
        path.solve_at(1.0)
        return mf, path

    mf_a, a = start()
    mf_a.extend(3.0)                  # the path reads the forest: a copy is grown
    a.extend(split_events(mf_a))
    mf_b, b = start()
    forest = mf_b.forest_
    events = b.extend_forest(mf_b, 3.0)
    assert mf_b.forest_ is forest and b.events is events and events.forest is forest
    assert forest.lifetime == 3.0
    np.testing.assert_array_equal(events.nodes, a.events.nodes)
    for path in (a, b):
        path.solve_at(3.0)
    np.testing.assert_array_equal(a.node_weights(), b.node_weights())
    np.testing.assert_array_equal(a.predict_points(np.arange(150)),
                                  b.predict_points(np.arange(150)))
    with pytest.raises(ValueError, match="feature map whose forest"):
        b.extend_forest(mf_a, 4.0)
    # Refused before any growth (below the fitted lifetime): still usable.
    with pytest.raises(ValueError, match="below the fitted lifetime"):
        b.extend_forest(mf_b, 2.0)
    assert b.events.forest is mf_b.forest_
    b.solve_at(3.0)
    np.testing.assert_array_equal(a.node_weights(), b.node_weights())


def test_cg_state_adopts_a_handed_table():
    """A CG path state built with ``act=`` (how ``extend_forest`` hands the
    dropped state's active-node table to its successor) keeps that very
    array -- no copy -- and, loaded with the exported state, continues
    exactly; a table of the wrong dtype, shape or layout is refused."""
    from mondrian._ext import _path
    rng = np.random.default_rng(9)
    X = rng.random((120, 3))
    y = np.cos(4 * X[:, 1]) + 0.1 * rng.standard_normal(120)
    y = y - y.mean()
    mf = MondrianFeatures(n_trees=7, lifetime=2.0, random_state=4).fit(X)
    events = split_events(mf)
    path = CGRidgePath(events, y, [0.05, 0.5], tol=1e-9)
    path.solve_at(1.0)
    state = path._state._export(take_table=True)
    yt, is_train, node_y, counts = events.learner_inputs(y, None)
    args = (events.forest, is_train, node_y, counts, yt, path.alphas, 1)
    twin = _path.CGPath(*args, act=state["act"])
    twin._import(state)
    assert np.shares_memory(twin._export(take_table=True)["act"], state["act"])
    np.testing.assert_array_equal(twin.gather(np.asarray(path.node_weights()),
                                              np.arange(120, dtype=np.int64)),
                                  path._state.gather(np.asarray(path.node_weights()),
                                                     np.arange(120, dtype=np.int64)))
    for bad in (state["act"].astype(np.int64), state["act"][:-1],
                np.asfortranarray(state["act"])):
        with pytest.raises(ValueError, match="act must be"):
            _path.CGPath(*args, act=bad)
    out_of_range = state["act"].copy()
    out_of_range[0, 0] = events.n_nodes
    wrong = _path.CGPath(*args, act=out_of_range)
    with pytest.raises(ValueError, match="invalid node id"):
        wrong._import(dict(state, act=out_of_range))


def test_sgd_full_pass_schedule(problem):
    _, y, _, ev = problem
    path = SGDPath(ev, y, loss="squared", learning_rate=0.3, pass_="full",
                   random_state=np.random.default_rng(1))
    err0 = np.mean((path.decision_points() - y) ** 2)
    path.advance(ev.times[len(ev.times) // 2])
    # One epoch after every split (the authors' schedule) fits the target.
    assert np.mean((path.decision_points() - y) ** 2) < 0.5 * err0
    with pytest.raises(ValueError, match="pass_"):
        SGDPath(ev, y, pass_="half")
    with pytest.raises(ValueError, match="loss"):
        SGDPath(ev, y, loss="huber")


def test_cg_path_does_not_depend_on_the_thread_count(problem):
    # Every sum in the CG products runs in a fixed order (rows of the active
    # table, then cell slices), so the path is bitwise identical for any
    # n_jobs -- not merely within the tolerance.
    _, y, _, ev = problem
    mask = np.arange(y.shape[0]) % 5 != 0
    runs = []
    for n_jobs in (1, 2, 3):
        path = CGRidgePath(ev, y, [0.05, 1.0], train_mask=mask, tol=1e-6, n_jobs=n_jobs)
        out = []
        for lam in lifetime_grid(ev, 6):
            iters, sse = path.solve_at(lam)
            out.append((iters, sse, path.node_weights(),
                        path.predict_points(np.flatnonzero(~mask))))
        runs.append(out)
    for other in runs[1:]:
        for (i0, s0, w0, p0), (i1, s1, w1, p1) in zip(runs[0], other):
            np.testing.assert_array_equal(i0, i1)
            np.testing.assert_array_equal(s0, s1)
            np.testing.assert_array_equal(w0, w1)
            np.testing.assert_array_equal(p0, p1)


def _product_in_gather_order(ev, mask, table, alphas, X):
    # (ΦᵀΦ + αI)x summed as c/gather.h sums: four partial sums over the
    # trees (rows) or the slice (cells), the tail in the first, combined as
    # (s0 + s1) + (s2 + s3); each addition a separate IEEE operation.
    def chains(values):
        s = [np.zeros_like(values[0]) for _ in range(4)]
        n4 = len(values) // 4 * 4
        for k, v in enumerate(values):
            c = k % 4 if k < n4 else 0
            s[c] = s[c] + v
        return (s[0] + s[1]) + (s[2] + s[3])

    M = table.shape[1]
    inv = 1.0 / np.sqrt(float(M))
    rows = np.flatnonzero(mask)
    f = np.zeros((X.shape[0], table.shape[0]))
    f[:, rows] = chains([X[:, table[rows, m]] for m in range(M)]) * (inv * inv)
    tstart, tend, ptrain = ev.forest.train_slices(mask)
    out = np.zeros_like(X)
    for j in np.unique(table):
        pts = ptrain[ev.tree_of[j], tstart[j]:tend[j]]
        cs = chains([f[:, i] for i in pts]) if pts.size else np.zeros(X.shape[0])
        out[:, j] = np.asarray(alphas) * X[:, j] + cs
    return out


def test_cg_products_do_not_depend_on_the_blocks_of_rows(problem):
    # The CG products gather Φx from a table of compact positions in blocks
    # of rows, tree by tree within a block (c/cgblock.h); every row keeps
    # the four partial sums of c/gather.h, so any block size -- 1 is the
    # row-by-row order -- gives the same bits, and so does a reference that
    # adds in that order.  Six trees: two go to the tail of the first sum.
    _, y, _, ev = problem
    mask = np.arange(y.shape[0]) % 7 != 3
    alphas = [0.05, 0.3, 1.0]
    rng = np.random.default_rng(5)
    for lam in lifetime_grid(ev, 5)[1:]:
        products = {}
        for block in (1, 2, 5, 64, 10**6, 0, None):
            path = CGRidgePath(ev, y, alphas, train_mask=mask, tol=1e-10, n_jobs=2)
            if block is None:
                # no copy of the table (above CG_TABLE_MAX_BYTES): row by
                # row from the active-node table
                path._state.table_max_bytes = 0
            else:
                path._state.block_rows = block
            path.advance(lam)
            X = rng.standard_normal((len(alphas), ev.n_nodes)) if not products else X
            products[block] = path._state._product(X)
            table = path._state.active_table()
        expected = _product_in_gather_order(ev, mask, table, alphas, X)
        off = np.ones(ev.n_nodes, dtype=bool)
        off[np.unique(table)] = False
        for block, out in products.items():
            np.testing.assert_array_equal(out, expected, err_msg=f"block_rows={block}")
            assert np.all(out[:, off] == 0.0)
    # The whole solve, too (the products and the CG's sums).
    runs = []
    for block in (1, 3, 0, None):
        path = CGRidgePath(ev, y, alphas, train_mask=mask, tol=1e-8, n_jobs=2)
        if block is None:
            path._state.table_max_bytes = 0
        else:
            path._state.block_rows = block
        runs.append([(path.solve_at(lam), path.node_weights())
                     for lam in lifetime_grid(ev, 4)])
    for other in runs[1:]:
        for ((i0, s0), w0), ((i1, s1), w1) in zip(runs[0], other):
            np.testing.assert_array_equal(i0, i1)
            np.testing.assert_array_equal(s0, s1)
            np.testing.assert_array_equal(w0, w1)


def test_events_and_learners_read_the_forest_without_copies(problem):
    # split_events keeps the C forest and views of its arrays; the learners
    # read its C arrays directly, and both pin it against growth in place.
    _, y, mf, ev = problem
    f = mf.forest_
    assert ev.forest is f
    for view in (ev.node_offset, ev.roots, ev.tree_of):
        assert view.base is f and not view.flags.writeable
    np.testing.assert_array_equal(ev.roots, ev.node_offset[:-1])
    path = CGRidgePath(ev, y, [0.1])
    assert path._state.forest is f
    with pytest.raises(BufferError):
        f.extend(f.lifetime + 1.0)
    assert f.lifetime == mf.lifetime_


def test_cg_active_table_equals_the_cell_of_every_point(problem):
    # CGPath.advance brings the (N, M) active-node table up to date once per
    # call, from the cells it created (not point by point at every event).
    # At every lifetime, however the path got there, each entry must be the
    # node whose cell holds the point: the SGD path's table (moved at every
    # event) and the cell lookup of the features (columns of Φ at λ) agree.
    X, y, mf, ev = problem
    grid = lifetime_grid(ev, 7)
    for steps in (grid, grid[::3], grid[-1:]):
        cg = CGRidgePath(ev, y, [0.1], local_sweeps=0)
        sgd = SGDPath(ev, y, random_state=np.random.default_rng(0))
        for lam in steps:
            cg.advance(lam)
            sgd.advance(lam, learn=False)
            table = cg._state.active_table()
            np.testing.assert_array_equal(table, sgd._state.active_table())
            # The table's nodes, as columns of Φ at λ, are Φ's non-zeros.
            cols = ev.columns_at(lam)
            col_of = np.full(ev.n_nodes, -1)
            col_of[cols] = np.arange(cols.size)
            Phi = mf.training_features(lam).tocsr()
            expected = np.sort(Phi.indices.reshape(X.shape[0], -1), axis=1)
            np.testing.assert_array_equal(np.sort(col_of[table], axis=1), expected)
