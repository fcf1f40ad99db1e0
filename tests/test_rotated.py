"""The uniformly rotated Mondrian kernel (Osborne & O'Reilly 2025; DESIGN.md §11).

``rotation='uniform'`` gives every tree a Haar-random rotation of SO(D),
drawn from the tree's own stream, about the training mean; its limit kernel
is ``rotated_laplace_kernel``.
"""
import hashlib
import pickle
import platform
import sys

import numpy as np
import pytest
from scipy import integrate, stats

from mondrian import (MondrianFeatures, MondrianKernelClassifierCV, MondrianKernelRidge,
                      MondrianKernelRidgeCV)
from mondrian.kernels import (laplace_kernel, rotated_laplace_kernel, rotated_laplace_profile,
                              sphere_l1_mean)
from mondrian.path.search import lifetime_scale


def per_tree_kernel(mf, A, B):
    """M·φ_m(a)φ_m(b) for every pair and tree, shape (n_a, n_b, M): tree m's
    unbiased estimate of the kernel (1/0 for two training points, the
    probability of sharing the cell for a new point)."""
    M = mf.n_trees
    pa, pb = mf.transform(A), mf.transform(B)
    ia, da = pa.indices.reshape(-1, M), pa.data.reshape(-1, M)
    ib, db = pb.indices.reshape(-1, M), pb.data.reshape(-1, M)
    same = ia[:, None, :] == ib[None, :, :]
    return same * da[:, None, :] * db[None, :, :] * M


# --------------------------------------------------------------------------
# the limit kernel
# --------------------------------------------------------------------------
def test_profile_in_one_dimension_is_the_laplace_kernel():
    t = np.array([0.0, 1e-6, 0.3, 1.0, 7.5, 40.0, 800.0])
    assert np.array_equal(rotated_laplace_profile(t, 1), np.exp(-t))
    x = np.array([[0.0], [0.4], [-1.3]])
    np.testing.assert_allclose(rotated_laplace_kernel(x, lifetime=2.0),
                               laplace_kernel(x, lifetime=2.0), rtol=1e-15)


@pytest.mark.parametrize("t", [1e-4, 0.05, 0.7, 2.0, 6.0, 25.0, 90.0])
def test_profile_in_two_dimensions_matches_the_angular_integral(t):
    # (4/π)∫₀^{π/4} exp(-√2 t cos θ) dθ, by adaptive quadrature with e^{-t}
    # factored out (√2 cos θ ≥ 1 on the range) to 1e-13 relative.
    inner = integrate.quad(lambda th: np.exp(-t * (np.sqrt(2.0) * np.cos(th) - 1.0)),
                           0.0, np.pi / 4, epsabs=0.0, epsrel=1e-13)[0]
    exact = 4.0 / np.pi * inner * np.exp(-t)
    assert rotated_laplace_profile(np.array([t]), 2)[0] == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("t", [0.01, 0.5, 3.0, 12.0])
def test_profile_in_three_dimensions_matches_a_cubature(t):
    # On S² the height z = |v₃| is uniform on [0, 1] (Archimedes) and the
    # azimuth φ uniform on [0, π/2] in the positive octant, so
    # k = E exp(-t(z + √(1 - z²)(cos φ + sin φ))): a smooth 2-D integral,
    # by nested adaptive quadrature (relative tolerance 1e-12 each).
    def f(phi, z):
        return np.exp(-t * (z - 1.0 + np.sqrt(1.0 - z * z) * (np.cos(phi) + np.sin(phi))))
    inner = integrate.dblquad(f, 0.0, 1.0, 0.0, np.pi / 2, epsabs=0.0, epsrel=1e-12)[0]
    exact = inner * (2.0 / np.pi) * np.exp(-t)
    assert rotated_laplace_profile(np.array([t]), 3)[0] == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("d", [2, 5, 20, 60])
def test_profile_small_t_expansion(d):
    # k(t) = 1 - μ₁t + μ₂t²/2 - ... with μ₁ = E‖v‖₁ and
    # μ₂ = E‖v‖₁² = 1 + 2(D-1)/π (E v_i² = 1/D, E|v_i v_j| = 2/(πD)); the
    # remainder is at most μ₃t³/6 ≤ D^{3/2}t³/6 (‖v‖₁ ≤ √D).
    mu1 = sphere_l1_mean(d)
    mu2 = 1.0 + 2.0 * (d - 1) / np.pi
    for t in [1e-6, 1e-4, 1e-3, 3e-3]:
        k = rotated_laplace_profile(np.array([t]), d)[0]
        bound = d ** 1.5 * t ** 3 / 6.0 + 1e-15
        assert abs(k - (1.0 - mu1 * t + 0.5 * mu2 * t * t)) <= bound
    assert sphere_l1_mean(1) == pytest.approx(1.0, rel=1e-15)
    assert sphere_l1_mean(2) == pytest.approx(4.0 / np.pi, rel=1e-15)


def test_profile_matches_monte_carlo_in_six_dimensions():
    # 2·10⁵ uniform directions: the Monte-Carlo mean of exp(-t‖v‖₁) within
    # 5 standard errors of the profile at every t.
    rng = np.random.default_rng(3)
    g = rng.standard_normal((200_000, 6))
    s = np.abs(g).sum(axis=1) / np.linalg.norm(g, axis=1)
    t = np.array([0.1, 0.6, 1.5, 4.0])
    draws = np.exp(-np.outer(t, s))
    mean, se = draws.mean(axis=1), draws.std(axis=1, ddof=1) / np.sqrt(s.size)
    assert np.all(np.abs(mean - rotated_laplace_profile(t, 6)) <= 5 * se)


def test_kernel_is_symmetric_positive_definite_and_isotropic(rng):
    X = rng.random((40, 3))
    K = rotated_laplace_kernel(X, lifetime=4.0)
    assert np.array_equal(K, K.T)
    assert np.all(np.diag(K) == 1.0)
    assert np.linalg.eigvalsh(K).min() > 0.0
    # isotropic: invariant under a rotation of the inputs (to rounding of r)
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    np.testing.assert_allclose(rotated_laplace_kernel(X @ q, lifetime=4.0), K, rtol=1e-12)
    Y = rng.random((7, 3))
    np.testing.assert_array_equal(rotated_laplace_kernel(X, Y, 4.0),
                                  rotated_laplace_kernel(Y, X, 4.0).T)


def test_kernel_and_profile_argument_checks():
    with pytest.raises(ValueError, match="lifetime"):
        rotated_laplace_kernel(np.eye(2), lifetime=-1.0)
    with pytest.raises(ValueError, match="X contains NaN"):
        rotated_laplace_kernel(np.array([[np.nan, 0.0]]))
    with pytest.raises(ValueError, match="t must be finite"):
        rotated_laplace_profile([-1.0], 2)
    with pytest.raises(ValueError, match="n_features"):
        rotated_laplace_profile([1.0], 0)


# --------------------------------------------------------------------------
# the rotations
# --------------------------------------------------------------------------
@pytest.mark.parametrize("d", [1, 2, 3, 7])
def test_rotations_are_orthogonal_with_determinant_one(rng, d):
    mf = MondrianFeatures(n_trees=50, lifetime=1.0, random_state=0,
                          rotation="uniform").fit(rng.random((20, d)))
    Q = mf.rotation_
    assert Q.shape == (50, d, d)
    np.testing.assert_allclose(np.einsum("mab,mac->mbc", Q, Q),
                               np.broadcast_to(np.eye(d), Q.shape), atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(Q), 1.0, atol=1e-13)
    # the centre is the training mean; the trees see (x - c) Q_m
    X = mf.forest_.X
    np.testing.assert_array_equal(mf.center_, np.mean(X, axis=0))
    np.testing.assert_allclose(mf.forest_.transform(np.ascontiguousarray(X), 3),
                               (X - mf.center_) @ Q[3], atol=1e-14)


def test_rotations_are_haar_distributed():
    """A rotation Q of SO(D) is Haar iff its law is invariant under
    multiplication by rotations; then Qᵀe₁ (a row) and Qe₁ (a column) are
    uniform on the sphere, whose first coordinate u₁ has |u₁|² ~
    Beta(1/2, (D-1)/2) and a symmetric sign.  Both KS tests (n = 4000
    rotations, fixed seed) are at the 1e-3 level: the p-value of a correct
    sampler is uniform, so a failure is a 1-in-1000 event at design time,
    while a sampler without the sign correction of the QR factor (not Haar)
    or with a biased column is rejected by a wide margin.  The second
    moments E[u uᵀ] = I/D are checked within 5 standard errors."""
    d, n = 4, 4000
    mf = MondrianFeatures(n_trees=n, lifetime=0.0, random_state=12,
                          rotation="uniform").fit(np.arange(2.0 * d).reshape(2, d))
    Q = mf.rotation_
    beta = stats.beta(0.5, (d - 1) / 2.0)

    def cdf(x):
        return 0.5 + 0.5 * np.sign(x) * beta.cdf(x * x)

    for u in (Q[:, 0, :], Q[:, :, 0]):
        assert stats.kstest(u[:, 0], cdf).pvalue > 1e-3
        assert stats.kstest(u[:, d - 1], cdf).pvalue > 1e-3
        outer = u[:, :, None] * u[:, None, :]
        mean = outer.mean(axis=0)
        se = outer.std(axis=0, ddof=1) / np.sqrt(n)
        assert np.all(np.abs(mean - np.eye(d) / d) <= 5 * se)


# --------------------------------------------------------------------------
# the features
# --------------------------------------------------------------------------
@pytest.mark.parametrize("d", [2, 3])
def test_rotated_kernel_estimate_is_unbiased_inside_and_outside_the_hull(
        d, assert_within_k_se, mean_and_se):
    # M = 3000 independent trees: the mean over trees of the per-tree kernel
    # values has standard error std/√M (sample std over trees; M in the
    # thousands makes the normal approximation good at 5 SE).  Pairs with
    # zero variance (a point with itself: always 1) must agree to rounding.
    rng = np.random.default_rng(40 + d)
    X = rng.random((25, d))
    Z = rng.random((12, d)) * 3.0 - 1.0          # mostly outside [0, 1]^D
    lam = 3.0
    mf = MondrianFeatures(n_trees=3000, lifetime=lam, random_state=d,
                          rotation="uniform").fit(X)
    for A in (X, Z):
        values = per_tree_kernel(mf, A, X)
        mean, se = mean_and_se(values)
        assert_within_k_se(mean, rotated_laplace_kernel(A, X, lam), se, k=5.0, atol=1e-12)
    # and at a smaller lifetime, read off the same trees
    values = per_tree_kernel_at(mf, Z, X, 1.0)
    mean, se = mean_and_se(values)
    assert_within_k_se(mean, rotated_laplace_kernel(Z, X, 1.0), se, k=5.0, atol=1e-12)


def per_tree_kernel_at(mf, A, B, lam):
    M = mf.n_trees
    pa, pb = mf.transform(A, lam), mf.transform(B, lam)
    ia, da = pa.indices.reshape(-1, M), pa.data.reshape(-1, M)
    ib, db = pb.indices.reshape(-1, M), pb.data.reshape(-1, M)
    return (ia[:, None, :] == ib[None, :, :]) * da[:, None, :] * db[None, :, :] * M


def test_boxes_and_cuts_are_in_each_trees_coordinates(rng):
    X = rng.random((80, 3))
    mf = MondrianFeatures(n_trees=6, lifetime=4.0, random_state=1, rotation="uniform").fit(X)
    f = mf.forest_
    for m in range(f.n_trees):
        tree = f.tree(m)
        Zm = f.transform(X, m)
        perm = tree.perm
        for j in range(tree.n_nodes):
            pts = Zm[perm[tree.start[j]:tree.end[j]]]
            np.testing.assert_array_equal(tree.lower[j], pts.min(axis=0))
            np.testing.assert_array_equal(tree.upper[j], pts.max(axis=0))
            if tree.left[j] >= 0:
                k, a = tree.feature[j], tree.threshold[j]
                left = Zm[perm[tree.start[tree.left[j]]:tree.end[tree.left[j]]]]
                assert np.all(left[:, k] <= a)
    # the training rows' features equal their lookups (tree coordinates agree)
    np.testing.assert_array_equal(mf.training_features().toarray(), mf.transform(X).toarray())


def test_identical_for_any_thread_count_and_after_pickling(rng):
    X, Z = rng.random((300, 4)), rng.random((50, 4)) * 2 - 0.5
    a = MondrianFeatures(n_trees=24, lifetime=3.0, random_state=5, n_jobs=1,
                         rotation="uniform").fit(X)
    b = MondrianFeatures(n_trees=24, lifetime=3.0, random_state=5, n_jobs=2,
                         rotation="uniform").fit(X)
    np.testing.assert_array_equal(a.rotation_, b.rotation_)
    for name in ("node_offset", "feature", "threshold", "tau", "lower", "upper", "perm"):
        np.testing.assert_array_equal(getattr(a.forest_, name), getattr(b.forest_, name))
    Pa, Pb = a.transform(Z), b.transform(Z)
    np.testing.assert_array_equal(Pa.indices, Pb.indices)
    np.testing.assert_array_equal(Pa.data, Pb.data)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.rotation_, a.rotation_)
    np.testing.assert_array_equal(c.center_, a.center_)
    Pc = c.transform(Z)
    np.testing.assert_array_equal(Pc.indices, Pa.indices)
    np.testing.assert_array_equal(Pc.data, Pa.data)
    # extending continues each tree's stream in its own coordinates, the
    # same in the copy and the original, for any thread count
    a.extend(6.0)
    c.set_params(n_jobs=2).extend(6.0)
    np.testing.assert_array_equal(a.forest_.threshold, c.forest_.threshold)
    np.testing.assert_array_equal(a.transform(Z).data, c.transform(Z).data)


def test_extend_keeps_rotations_and_cells(rng):
    X, Z = rng.random((200, 3)), rng.random((30, 3))
    mf = MondrianFeatures(n_trees=10, lifetime=2.0, random_state=0, rotation="uniform").fit(X)
    Q, before = mf.rotation_, mf.transform(Z, 2.0)
    mf.extend(5.0)
    np.testing.assert_array_equal(mf.rotation_, Q)
    after = mf.transform(Z, 2.0)
    # the same cells (renumbered columns: the per-tree cell partition of Z is equal)
    M = mf.n_trees
    ib, ia = before.indices.reshape(-1, M), after.indices.reshape(-1, M)
    for m in range(M):
        assert np.array_equal(ib[:, m][:, None] == ib[:, m][None, :],
                              ia[:, m][:, None] == ia[:, m][None, :])
    np.testing.assert_array_equal(before.data, after.data)


def test_forest_state_is_checked_in_tree_coordinates(rng):
    mf = MondrianFeatures(n_trees=5, lifetime=3.0, random_state=0,
                          rotation="uniform").fit(rng.random((60, 3)))
    cls, args, state = mf.forest_.__reduce__()
    g = cls(*args)
    g.__setstate__(state)
    assert np.array_equal(g.rotation, mf.forest_.rotation)
    # other rotations (still orthogonal) put the points outside their boxes
    swapped = dict(state, rotation=state["rotation"][::-1].copy())
    with pytest.raises(ValueError, match="inconsistent"):
        cls(*args).__setstate__(swapped)


def test_rotation_none_is_the_axis_aligned_forest(rng):
    X = rng.random((100, 3))
    a = MondrianFeatures(n_trees=8, lifetime=3.0, random_state=2).fit(X)
    b = MondrianFeatures(n_trees=8, lifetime=3.0, random_state=2, rotation=None).fit(X)
    assert a.rotation_ is None and a.center_ is None and a.forest_.rotation is None
    np.testing.assert_array_equal(a.forest_.threshold, b.forest_.threshold)


def _digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


@pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
                    reason="digests recorded on x86-64 Linux (glibc's log and exp)")
def test_axis_aligned_results_are_pinned_bit_for_bit():
    # Digests of the trees' every array, the features of training and new
    # points, the extension, and the ridge predictions, without rotation.
    # Recorded before the rotated kernel existed (commit 33484f8), they
    # showed that rotation=None changed nothing; re-recorded when the
    # sampler began to draw splits by thinning (grow.c: same law, other
    # draws), they guard every later change against moving the results.
    rng = np.random.default_rng(7)
    X = rng.random((300, 3))
    Xt = rng.random((100, 3)) * 1.4 - 0.2
    y = np.sin(5 * X[:, 0]) + X[:, 1] + 0.1 * rng.standard_normal(300)
    mf = MondrianFeatures(n_trees=20, lifetime=4.0, random_state=0, n_jobs=1)
    P = mf.fit_transform(X)
    f = mf.forest_
    assert _digest(P.data, P.indices, P.indptr) == "d105df5620928b54"
    assert _digest(f.node_offset, f.feature, f.threshold, f.tau, f.lower, f.upper, f.perm,
                   f.parent) == "91ac1f034c3e4613"
    T = mf.transform(Xt)
    assert _digest(T.data, T.indices) == "f1ddf79297ec90d4"
    T = mf.transform(Xt, 1.5)
    assert _digest(T.data, T.indices) == "71e6536ae3ec4715"
    mf.extend(8.0)
    f = mf.forest_
    assert _digest(f.node_offset, f.feature, f.threshold, f.tau, f.lower, f.upper,
                   f.perm) == "dc615ed04cfe9d10"
    T = mf.transform(Xt)
    assert _digest(T.data, T.indices) == "49546d5baf94f72c"
    # The ridge solves go through LAPACK, whose rounding depends on the
    # kernels OpenBLAS picks for the machine's CPU (digests recorded on one
    # machine failed on another): recorded values to 1e-9 relative, far
    # above a solve's rounding (alpha = 0.1, condition number < 1e3) and far
    # below any change of the trees or the model.  The selection is exact.
    ridge = MondrianKernelRidge(n_trees=30, lifetime=3.0, alpha=0.1, random_state=0)
    pred = ridge.fit(X, y).predict(Xt)
    np.testing.assert_allclose(
        [*pred[[0, 17, 42, 99]], pred.sum()],
        [1.221733090802885, 1.0283925475740976, -0.05375592121350192, 0.07193525646086951,
         65.43326831967875], rtol=1e-9)
    # (recorded before feature_scale: the kernel on X as given)
    cv = MondrianKernelRidgeCV(random_state=0, feature_scale=None).fit(X, y)
    assert (cv.lifetime_, cv.alpha_) == (0.06431342537113566, 0.01778279410038923)
    pred = cv.predict(Xt)
    np.testing.assert_allclose(
        [*pred[[0, 17, 42, 99]], pred.sum()],
        [1.355740381991236, 1.345826368482562, -0.5376791136188745, -0.9354298897572979,
         52.62475105550971], rtol=1e-9)


# --------------------------------------------------------------------------
# the estimators
# --------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["haar", "Uniform", True, 1, ("uniform",)])
@pytest.mark.parametrize("make", [
    lambda r: MondrianFeatures(n_trees=3, rotation=r),
    lambda r: MondrianKernelRidge(n_trees=3, rotation=r),
    lambda r: MondrianKernelRidgeCV(n_trees=3, rotation=r),
    lambda r: MondrianKernelClassifierCV(n_trees=3, rotation=r),
])
def test_bad_rotation_values_raise_naming_the_parameter(make, bad):
    X = np.random.default_rng(0).random((20, 2))
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match="rotation"):
        est = make(bad)
        est.fit(X) if isinstance(est, MondrianFeatures) else est.fit(X, y)


def test_ridge_with_rotation_tends_to_rotated_kernel_ridge(rng):
    # 4000 trees: the kernel estimate's error is O(1/√M) ≈ 0.016 entrywise
    # and the predictions land within 0.02 of exact kernel ridge with the
    # limit kernel (measured), inside the 0.035 allowed; the axis-aligned
    # forest of the same seed (the Laplace kernel) misses by 0.049, so the
    # bound tells the two kernels apart.
    X = rng.random((80, 2))
    y = np.sin(4 * (X[:, 0] + X[:, 1])) + 0.05 * rng.standard_normal(80)
    Xt = rng.random((30, 2))
    lam, alpha = 3.0, 0.1
    K = rotated_laplace_kernel(X, lifetime=lam)
    c = np.linalg.solve(K + alpha * np.eye(80), y - y.mean())
    exact = rotated_laplace_kernel(Xt, X, lam) @ c + y.mean()
    errors = {}
    for rotation in ("uniform", None):
        model = MondrianKernelRidge(n_trees=4000, lifetime=lam, alpha=alpha, random_state=0,
                                    rotation=rotation).fit(X, y)
        errors[rotation] = np.max(np.abs(model.predict(Xt) - exact))
    assert errors["uniform"] < 0.035 < errors[None]


def test_ridge_cv_with_rotation_uses_the_rotated_scale(rng):
    X = rng.random((150, 3))
    y = np.sin(5 * (X @ np.ones(3)) / np.sqrt(3)) + 0.05 * rng.standard_normal(150)
    model = MondrianKernelRidgeCV(random_state=0, rotation="uniform").fit(X, y)
    assert model.features_.rotation_ is not None
    # λ₀ from the median Euclidean distance times E‖v‖₁ (same row draw:
    # at most 1000 rows, all of them here)
    # of the points the trees rotate: X over its standard deviations
    # (feature_scale='auto')
    Z = X / np.std(X, axis=0)
    scale = lifetime_scale(Z, np.random.default_rng(0), rotation="uniform")
    d = Z[:, None, :] - Z[None, :, :]
    r = np.sqrt((d ** 2).sum(axis=2))[np.triu_indices(150, 1)]
    assert scale == pytest.approx(1.0 / (np.median(r) * sphere_l1_mean(3)), rel=1e-12)
    assert model.path_["scale"] == pytest.approx(scale, rel=1e-12)
    assert np.isfinite(model.predict(X[:5])).all()


def test_ridge_cv_pilot_forest_is_rotated(rng, monkeypatch):
    # Above AUTO_DUAL_ROWS points the selection runs on a pilot forest and
    # the final forest is grown separately: both rotated.
    import mondrian.path.estimators as est
    monkeypatch.setattr(est, "AUTO_DUAL_ROWS", 100)
    monkeypatch.setattr(est, "PILOT_ROWS", 80)
    X = rng.random((160, 2))
    y = X[:, 0] - X[:, 1] + 0.05 * rng.standard_normal(160)
    model = est.MondrianKernelRidgeCV(n_trees=40, random_state=0, rotation="uniform").fit(X, y)
    assert model.solver_ == "cg"
    assert model.pilot_features_.rotation_ is not None
    assert model.features_.rotation_ is not None


def test_classifier_cv_with_rotation(rng):
    X = rng.random((120, 2))
    y = (X[:, 0] + X[:, 1] > 1.0).astype(int)
    clf = MondrianKernelClassifierCV(n_trees=30, max_lifetime=5.0, random_state=0,
                                     rotation="uniform").fit(X, y)
    assert clf.features_.rotation_ is not None
    assert clf.score(X, y) > 0.8


# --------------------------------------------------------------------------
# the experiment
# --------------------------------------------------------------------------
def test_experiment_kernel_part_quick(tmp_path):
    import csv

    from mondrian.cli import main as cli_main
    from mondrian.experiments.rotated import prefix_features

    assert cli_main(["experiment", "rotated", "--quick", "--part", "kernel",
                     "--out", str(tmp_path)]) == 0
    with open(tmp_path / "rotated_kernel.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    # 2 kernels x M = 1..10 x 2 repeats, errors of estimates in [0, 1]
    assert len(rows) == 40 and {r["kernel"] for r in rows} == {"axis", "rotated"}
    err = {(r["kernel"], int(r["trees"]), int(r["repeat"])): float(r["max_abs_error"])
           for r in rows}
    assert all(0.0 < e <= 1.0 for e in err.values())
    # each kind's error at M = 10 well below its error with one tree
    for kind in ("axis", "rotated"):
        assert err[(kind, 10, 0)] < err[(kind, 1, 0)]
    # the prefixes: M trees rescaled to unit self-kernel
    X = np.random.default_rng(0).random((15, 2))
    for M, Phi, _ in prefix_features("rotated", X, None, 2.0, 5, 0):
        np.testing.assert_allclose((Phi @ Phi.T).diagonal(), 1.0, rtol=1e-12)
        assert np.array_equal(np.diff(Phi.indptr), np.full(15, M))


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_path_solvers_and_warm_start_with_rotation(rng):
    # The exact and CG paths read the rotated forest through its split
    # events only; a warm continuation extends it in place, rotations kept.
    # (a small grid: the warnings that the selection sits at its edge,
    # filtered above, are beside the point here)
    X = rng.random((120, 2))
    y = np.sin(3 * (X[:, 0] - X[:, 1])) + 0.05 * rng.standard_normal(120)
    for solver in ("cholesky", "cg"):
        model = MondrianKernelRidgeCV(n_trees=15, max_lifetime=4.0, alphas=[0.01, 0.1],
                                      n_lifetimes=6, solver=solver, random_state=0,
                                      rotation="uniform", warm_start=True).fit(X, y)
        Q = model.features_.rotation_
        assert Q is not None and model.solver_ == solver
        # the path's weights are ridge on the rotated features at (λ̂, α̂)
        Phi = model.features_.training_features(model.lifetime_)
        pred = Phi @ model.coef_ + model.intercept_
        np.testing.assert_allclose(model.predict(X), pred, rtol=1e-10, atol=1e-10)
        forest = model.features_
        model.set_params(max_lifetime=8.0).fit(X, y)
        assert model.features_ is forest and forest.lifetime_ == 8.0
        np.testing.assert_array_equal(model.features_.rotation_, Q)
