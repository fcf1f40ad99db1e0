"""Tests of mondrian.theory: the papers' bounds against the quantities they bound."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy import stats

from mondrian import MondrianFeatures, RandomFourierFeatures, gaussian_kernel, laplace_kernel
from mondrian import theory as T


# ------------------------------------------------------------------ spectral_distance
def _sym(rng, n):
    A = rng.standard_normal((n, n))
    return A + A.T


def _exact_distance(A, B):
    w = np.linalg.eigvalsh(A - B)
    return max(abs(w[0]), abs(w[-1]))


def test_spectral_distance_dense_equals_eigvalsh(rng):
    for n in (1, 2, 5, 40):
        A, B = _sym(rng, n), _sym(rng, n)
        # Both evaluate the same LAPACK routine on the same matrix: equal to rounding.
        assert T.spectral_distance(A, B) == pytest.approx(_exact_distance(A, B), rel=1e-13)


def test_spectral_distance_takes_largest_magnitude_of_either_sign(rng):
    # K − K′ = −G with G PSD: every eigenvalue is <= 0, so λ_max(K − K′) <= 0
    # (the paper's literal Definition 1) while the norm is λ_max(G) > 0.
    X = rng.random((30, 2))
    G = laplace_kernel(X, lifetime=1.0)
    top = np.linalg.eigvalsh(G)[-1]
    assert T.spectral_distance(np.zeros_like(G), G) == pytest.approx(top, rel=1e-12)
    assert T.spectral_distance(np.zeros_like(G), G, method="lanczos",
                               random_state=0) == pytest.approx(top, rel=1e-10)


def test_spectral_distance_lanczos_equals_eigvalsh_with_feature_maps(rng):
    # n = 600 > 500: 'auto' takes the Lanczos path.  Mondrian features (sparse)
    # against the exact Laplace kernel, and against random Fourier features.
    X = rng.random((600, 3))
    Phi = MondrianFeatures(n_trees=20, lifetime=2.0, random_state=0).fit_transform(X)
    Psi = RandomFourierFeatures(lifetime=2.0, n_components=40, random_state=1).fit_transform(X)
    K = laplace_kernel(X, lifetime=2.0)
    K_M = (Phi @ Phi.T).toarray()
    K_F = Psi @ Psi.T
    # ARPACK at tol=0 converges to machine precision relative to the norm of
    # the operator; 1e-9 leaves room for the rounding of n-term products.
    for left, right, dense in ((T.FeatureKernel(Phi), K, K_M - K),
                               (T.FeatureKernel(Phi), T.FeatureKernel(Psi), K_M - K_F),
                               (K, T.FeatureKernel(Psi, scale=2.0), K - 2.0 * K_F)):
        truth = _exact_distance(dense, 0.0 * dense)
        got = T.spectral_distance(left, right, random_state=0)
        assert got == pytest.approx(truth, rel=1e-9)
        assert T.spectral_distance(left, right, method="dense") == pytest.approx(truth, rel=1e-12)


def test_spectral_distance_linear_operator_and_sparse_inputs(rng):
    A, B = _sym(rng, 50), _sym(rng, 50)
    truth = _exact_distance(A, B)
    opA = spla.aslinearoperator(A)
    assert T.spectral_distance(opA, sp.csr_array(B), method="lanczos",
                               random_state=1) == pytest.approx(truth, rel=1e-10)
    assert T.spectral_distance(opA, B, method="dense") == pytest.approx(truth, rel=1e-12)


class _NoDense(T.FeatureKernel):
    def toarray(self):
        raise AssertionError("the Lanczos path formed an n x n matrix")


def test_spectral_distance_lanczos_never_forms_the_matrix(rng):
    # n = 3000 with two feature maps: only products with Φ are allowed.  The
    # difference of two feature kernels has rank <= 2F, so its norm equals
    # that of a 2F x 2F problem: R S Rᵀ with [Φ Ψ] = Q R and S = diag(I, -I).
    n, F = 3000, 15
    Phi, Psi = rng.standard_normal((n, F)), rng.standard_normal((n, F))
    _, R = np.linalg.qr(np.hstack([Phi, Psi]))
    S = np.diag(np.r_[np.ones(F), -np.ones(F)])
    truth = np.max(np.abs(np.linalg.eigvalsh(R @ S @ R.T)))
    got = T.spectral_distance(_NoDense(Phi), _NoDense(sp.csr_array(Psi)), random_state=0)
    assert got == pytest.approx(truth, rel=1e-9)


def test_spectral_distance_bad_input(rng):
    A = _sym(rng, 4)
    with pytest.raises(ValueError, match="square"):
        T.spectral_distance(np.ones((3, 4)), np.ones((3, 4)))
    with pytest.raises(ValueError, match="FeatureKernel"):
        T.spectral_distance(sp.csr_array(np.ones((4, 2))), A)
    bad = A.copy()
    bad[0, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        T.spectral_distance(bad, A)
    asym = A.copy()
    asym[0, 1] += 1.0
    with pytest.raises(ValueError, match="not symmetric"):
        T.spectral_distance(A, asym)
    with pytest.raises(ValueError, match="not symmetric"):
        T.spectral_distance(spla.aslinearoperator(rng.standard_normal((5, 5))), np.eye(5))
    with pytest.raises(ValueError, match="5x5"):
        T.spectral_distance(A, np.eye(5))
    with pytest.raises(ValueError, match="method"):
        T.spectral_distance(A, A, method="qr")
    with pytest.raises(ValueError, match="n >= 3"):
        T.spectral_distance(np.eye(2), np.eye(2), method="lanczos")
    with pytest.raises(ValueError, match="empty"):
        T.spectral_distance(np.zeros((0, 0)), np.zeros((0, 0)))
    with pytest.raises(ValueError, match="scale"):
        T.FeatureKernel(np.ones((3, 2)), scale=0.0)
    with pytest.raises(ValueError, match="NaN"):
        T.FeatureKernel(sp.csr_array(np.array([[np.inf, 1.0]])))
    with pytest.raises(ValueError, match="tol"):
        T.spectral_distance(A, A, tol=-1.0)


# ------------------------------------------------------------------ Prop. 2
def _three_terms(M, lam, L, D, delta, n, eps):
    """P(A1) + P(A2) + P(A3) of Supplement A before any minimisation."""
    return (M * np.exp(L * lam) / n + 2.0 * (M * n * lam) ** 2 * L * eps
            + 2.0 * (2.0 * L / eps) ** (2 * D) * np.exp(-M * delta ** 2 / 2.0))


@pytest.mark.parametrize("M, lam, L, D, delta", [(1000, 1.0, 1.0, 1, 0.5),
                                                  (3000, 0.5, 2.0, 2, 0.6),
                                                  (500, 2.0, 0.5, 1, 0.9),
                                                  (10, 1.0, 3.0, 3, 0.2)])
def test_error_bound_is_the_minimum_of_the_proof_bound(M, lam, L, D, delta):
    b = T.mondrian_kernel_error_bound(M, lam, delta, n_dims=D, diameter=L)
    assert b.epsilon <= b.epsilon_max
    assert b.epsilon_max == pytest.approx(min(-math.log(1 - delta / 4) / (lam * D), L / 2))
    # The returned (n, ε) attain the returned value ...
    at_opt = _three_terms(M, lam, L, D, delta, b.n_cells, b.epsilon)
    assert math.log(at_opt) == pytest.approx(b.log_bound, rel=1e-12, abs=1e-12)
    # ... and no admissible (n, ε) on a log grid around them does better.
    for fn in np.exp(np.linspace(-3, 3, 13)):
        for fe in np.exp(np.linspace(-3, 3, 13)):
            eps = min(b.epsilon * fe, b.epsilon_max)
            val = _three_terms(M, lam, L, D, delta, b.n_cells * fn, eps)
            assert math.log(val) >= b.log_bound - 1e-12


def test_error_bound_corrects_the_paper():
    # The paper's final expression (4λ²M²|X|ε e^{2λ|X|})^{1/3} + 2(|X|/ε)^{2D}
    # e^{-Mδ²/2} lies below the minimum over n of the proof's own three
    # terms: it is not what the proof shows.
    M, lam, L, D, delta = 1000, 1.0, 1.0, 1, 0.5
    b = T.mondrian_kernel_error_bound(M, lam, delta, n_dims=D, diameter=L)
    eps = b.epsilon
    paper = ((4 * lam ** 2 * M ** 2 * L * eps * np.exp(2 * lam * L)) ** (1 / 3)
             + 2 * (L / eps) ** (2 * D) * np.exp(-M * delta ** 2 / 2))
    ns = np.exp(np.linspace(-20, 40, 2001))
    proof_min_over_n = np.min(_three_terms(M, lam, L, D, delta, ns, eps))
    assert paper < 0.1 * proof_min_over_n
    assert b.bound == pytest.approx(proof_min_over_n, rel=1e-3)   # grid step 0.03 in log n


def test_error_bound_limits_and_monotonicity():
    # Trivial cases are exactly 0.
    assert T.mondrian_kernel_error_bound(5, 1.0, 1.0, n_dims=2, diameter=3.0).bound == 0.0
    assert T.mondrian_kernel_error_bound(5, 1.0, 0.1, n_dims=2, diameter=0.0).bound == 0.0
    # In the regime ε* < ε_max, log bound = (6D/(6D+1))·(4/3)·log M − Mδ²/(12D+2)
    # + const exactly (both terms are c₁^{6D/(6D+1)} c₂^{1/(6D+1)} times constants):
    # Prop. 2's exponent, with the polynomial factor of the corrected constants.
    lam, L, D, delta = 1.0, 1.0, 1, 0.5
    logs = [T.mondrian_kernel_error_bound(M, lam, delta, n_dims=D, diameter=L).log_bound
            for M in (4000, 8000)]
    slope = (logs[1] - logs[0]) / 4000
    expected = (6 * D / (6 * D + 1)) * (4 / 3) * math.log(2) / 4000 - delta ** 2 / (12 * D + 2)
    assert slope == pytest.approx(expected, rel=1e-9)
    # Huge M: the logarithm stays finite and the bound underflows to 0, no warning.
    big = T.mondrian_kernel_error_bound(10 ** 9, 1.0, 0.5, n_dims=1, diameter=1.0)
    assert big.bound == 0.0 and np.isfinite(big.log_bound)
    huge = T.mondrian_kernel_error_bound(10, 1000.0, 0.5, n_dims=1, diameter=10.0)
    assert huge.bound == math.inf and huge.log_bound > 709


def test_failure_frequency_of_one_pair_is_a_binomial_tail(assert_within_k_se):
    # Two points: k_M(x, x') = Binomial(M, k)/M exactly (a pair shares a cell
    # of each tree independently with probability k = e^{-λ‖x − x'‖₁}), so the
    # failure probability is P[|B/M − k| > δ] in closed form.
    X = np.array([[0.0, 0.0], [0.3, 0.2]])
    M, lam, delta, R = 20, 1.0, 0.1, 2000
    k = math.exp(-lam * 0.5)
    B = stats.binom(M, k)
    j = np.arange(M + 1)
    p = float(np.sum(B.pmf(j)[np.abs(j / M - k) > delta]))
    f = T.mondrian_kernel_failure_frequency(X, M, lam, delta, n_repeats=R, random_state=3)
    # R = 2000 Bernoulli(p) draws: the exact standard error √(p(1 − p)/R).
    assert_within_k_se(f.frequency, p, math.sqrt(p * (1 - p) / R))
    assert f.sup_errors.shape == (R,)
    assert f.frequency == np.mean(f.sup_errors > delta)
    again = T.mondrian_kernel_failure_frequency(X, M, lam, delta, n_repeats=R, random_state=3)
    np.testing.assert_array_equal(again.sup_errors, f.sup_errors)


def test_error_bound_is_above_the_failure_frequency_on_a_grid():
    # The frequency over a finite set estimates a lower bound of the
    # probability bounded by Prop. 2 (on the points' bounding box).  The
    # bound is far from tight: on this grid it is vacuous (> 1) wherever the
    # frequency is positive, and it falls below 1 only from M ≈ 3000 on
    # (δ = 0.3, D = 2) — see the last assertion.
    X = np.random.default_rng(7).random((25, 2))
    L = T.linear_dimension(X)
    delta = 0.3
    seen_positive = False
    for M in (2, 5, 20, 80):
        for lam in (0.5, 1.0, 3.0):
            f = T.mondrian_kernel_failure_frequency(X, M, lam, delta, n_repeats=100,
                                                    random_state=M * 10 + int(lam * 2))
            b = T.mondrian_kernel_error_bound(M, lam, delta, n_dims=2, diameter=L)
            # The frequency is a mean of 100 Bernoulli draws: its upper 5-se
            # end must still lie below the bound.
            assert f.frequency + 5 * f.standard_error <= b.bound
            seen_positive |= f.frequency > 0
    assert seen_positive  # the grid includes regimes where failures happen
    assert T.mondrian_kernel_error_bound(4000, 0.5, delta, n_dims=2, diameter=L).bound < 1


def test_linear_dimension():
    X = np.array([[0.0, 1.0], [2.0, -1.0], [1.0, 0.5]])
    assert T.linear_dimension(X) == 4.0


def test_error_bound_bad_input():
    with pytest.raises(ValueError, match="n_trees"):
        T.mondrian_kernel_error_bound(0, 1.0, 0.1, n_dims=1, diameter=1.0)
    with pytest.raises(TypeError, match="n_trees"):
        T.mondrian_kernel_error_bound(2.5, 1.0, 0.1, n_dims=1, diameter=1.0)
    with pytest.raises(ValueError, match="lifetime"):
        T.mondrian_kernel_error_bound(2, 0.0, 0.1, n_dims=1, diameter=1.0)
    with pytest.raises(ValueError, match="delta"):
        T.mondrian_kernel_error_bound(2, 1.0, float("nan"), n_dims=1, diameter=1.0)
    with pytest.raises(ValueError, match="diameter"):
        T.mondrian_kernel_error_bound(2, 1.0, 0.1, n_dims=1, diameter=-1.0)
    with pytest.raises(ValueError, match="n_dims"):
        T.mondrian_kernel_error_bound(2, 1.0, 0.1, n_dims=0, diameter=1.0)
    with pytest.raises(ValueError, match="NaN"):
        T.mondrian_kernel_failure_frequency(np.array([[np.nan, 1.0]]), 2, 1.0, 0.1)
    with pytest.raises(ValueError, match="n_repeats"):
        T.mondrian_kernel_failure_frequency(np.ones((3, 1)), 2, 1.0, 0.1, n_repeats=0)
    with pytest.raises(ValueError, match="2-dimensional"):
        T.linear_dimension(np.ones(3))


# ------------------------------------------------------------------ Prop. 3
def _mondrian_n_cells(rng, lo, hi, t, lam):
    """Cells of a Mondrian process on the box [lo, hi] run from time t to λ (Sec. 2.2)."""
    w = hi - lo
    L = w.sum()
    tau = t + rng.exponential(1.0 / L) if L > 0 else math.inf
    if tau > lam:
        return 1
    d = rng.choice(w.size, p=w / L)
    a = rng.uniform(lo[d], hi[d])
    h, l2 = hi.copy(), lo.copy()
    h[d], l2[d] = a, a
    return _mondrian_n_cells(rng, lo, h, tau, lam) + _mondrian_n_cells(rng, l2, hi, tau, lam)


def test_expected_n_cells_matches_simulation(assert_within_k_se, mean_and_se):
    rng = np.random.default_rng(11)
    w, lam = np.array([1.0, 0.5, 2.0]), 1.2
    counts = [_mondrian_n_cells(rng, np.zeros(3), w, 0.0, lam) for _ in range(5000)]
    mean, se = mean_and_se(counts)
    # 5000 iid cell counts; se is the sample standard deviation over √5000.
    assert_within_k_se(mean, T.expected_n_cells(lam, w), se)
    assert T.expected_n_cells(lam, w) == pytest.approx(2.2 * 1.6 * 3.4)
    # Prop. 3: E[N] <= e^{λ|X|}, and the tail bound holds for the simulation.
    assert T.expected_n_cells(lam, w) <= T.n_cells_tail_bound(1.0, lam, w.sum())
    for n in (5, 20, 60):
        freq = np.mean(np.asarray(counts) > n)
        assert freq <= T.n_cells_tail_bound(n, lam, w.sum())


def test_expected_n_cells_bounds_the_leaves_of_trees_on_data():
    # A tree grown on data counts the cells that hold data: on many points
    # spread over the box the mean leaf count approaches the cell count from
    # below.  300 trees: the mean leaf count has se ≈ sd/√300 ≈ 0.1 here.
    X = np.random.default_rng(2).random((2000, 2))
    mf = MondrianFeatures(n_trees=300, lifetime=3.0, random_state=0).fit(X)
    leaves = mf.n_cells_ / 300
    expected = T.expected_n_cells(3.0, np.ptp(X, axis=0))
    assert leaves <= expected
    assert leaves >= 0.9 * expected  # few cells of area ~1/16 miss all 2000 points


def test_cells_bad_input():
    with pytest.raises(ValueError, match="n"):
        T.n_cells_tail_bound(0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="box_widths"):
        T.expected_n_cells(1.0, [1.0, -0.5])
    with pytest.raises(ValueError, match="lifetime"):
        T.expected_n_cells(-1.0, [1.0])


# ------------------------------------------------------------------ Lemma 5 / Conditions 1-3
def test_ssgp_sample_complexity_formula():
    n, lam, delta = 1000, 2.0, 0.1
    b = 17  # Lemma 2: the smallest b with Σ_{i<=b} 2^{i/2} >= 1000
    assert sum(2 ** (i / 2) for i in range(1, b)) < n <= sum(2 ** (i / 2) for i in range(1, b + 1))
    a = math.log2(n ** 4 / (n ** 4 - lam ** 4))
    # With |κ_i| = 2^i every band needs 32b/(λ²2^a) log(2b 2^i/δ): the last band rules.
    expected = 32 * b / (lam ** 2 * 2 ** a) * math.log(b * 2 ** (b + 1) / delta)
    assert T.ssgp_sample_complexity(n, lam, delta) == math.ceil(expected)
    assert T.ssgp_sample_complexity(n, lam, delta, n_clusters=b) == math.ceil(expected)
    # Explicit band sizes: the maximum over bands of Eq. (22)'s p.
    sizes = np.array([3.0, 40.0, 5.0])
    i = np.arange(1, 4)
    p = 32 * 3 * sizes / (lam ** 2 * 2 ** (a + i)) * np.log(2 * 3 * sizes / delta)
    assert T.ssgp_sample_complexity(n, lam, delta, n_clusters=3,
                                    band_sizes=sizes) == math.ceil(p.max())
    # Halving λ quadruples p (a changes by ~1e-12 at λ/n = 1e-3).
    p1 = T.ssgp_sample_complexity(n, 2.0, delta)
    p2 = T.ssgp_sample_complexity(n, 1.0, delta)
    assert abs(p2 - 4 * p1) <= 4


def test_ssgp_sample_complexity_bad_input():
    with pytest.raises(ValueError, match="distance"):
        T.ssgp_sample_complexity(10, 10.0, 0.1)
    with pytest.raises(ValueError, match="delta"):
        T.ssgp_sample_complexity(10, 1.0, 1.5)
    with pytest.raises(ValueError, match="band_sizes"):
        T.ssgp_sample_complexity(10, 1.0, 0.1, n_clusters=2, band_sizes=[1.0])
    with pytest.raises(ValueError, match="n_samples"):
        T.ssgp_sample_complexity(0, 1.0, 0.1)


def _clustered_data(sizes, separation, n_dims):
    """Clusters as regular simplices whose edge puts every in-cluster kernel
    value in the middle of its band (Lemma 3), centres ``separation`` apart."""
    n = sum(sizes)
    lam = 1.0
    a = math.log2(n ** 4 / (n ** 4 - lam ** 4))
    X, labels = [], []
    for i, k in enumerate(sizes, start=1):
        k4 = 1 - 0.5 * (2.0 ** -(a + i - 1) + 2.0 ** -(a + i))   # mid-band K⁴
        r2 = -0.5 * math.log(k4)                                  # K = exp(-r²/2)
        pts = np.zeros((k, n_dims))
        pts[np.arange(k), np.arange(k)] = math.sqrt(r2 / 2)      # simplex of edge r
        pts[:, n_dims - len(sizes) + i - 1] += separation
        X.append(pts)
        labels += [f"c{i}"] * k
    return np.vstack(X), np.array(labels), lam


def test_cluster_conditions_hold_on_constructed_data():
    sizes = [1, 2, 3, 4, 6, 8]          # 2^{i/2} rounded, i = 1..6
    X, labels, lam = _clustered_data(sizes, separation=10.0, n_dims=14)
    perm = np.random.default_rng(0).permutation(len(labels))
    c = T.check_cluster_conditions(X[perm], labels[perm], length_scale=1.0, distance=lam)
    n = len(labels)
    assert c.n_clusters == 6
    np.testing.assert_array_equal(c.cluster_sizes, sizes)
    assert c.sizes_ok and c.bands_ok and c.separated and c.cross_ok and c.satisfied
    assert np.isnan(c.in_band_fraction[0]) and np.all(c.in_band_fraction[1:] == 1.0)
    assert c.separation_threshold == pytest.approx(6 * math.log(n / lam), rel=1e-9)
    assert c.cross_kernel_threshold == pytest.approx(lam / n, rel=1e-9)
    # Centres 10√2 apart (squared 200), simplex points at most 1 away.
    assert c.min_center_distance_sq == pytest.approx(200.0, rel=0.01)
    assert c.cross_frobenius_sq <= 0.75 * lam ** 2      # Eq. (24)


def test_cluster_conditions_detect_violations():
    sizes = [1, 2, 3, 4, 6, 8]
    X, labels, lam = _clustered_data(sizes, separation=1.5, n_dims=14)
    c = T.check_cluster_conditions(X, labels, length_scale=1.0, distance=lam)
    assert c.sizes_ok and c.bands_ok
    # Centres 1.5√2 apart: 4.5 < 6 log 24, and cross values near e^{-2.25} > 1/24.
    assert not c.separated and not c.cross_ok and not c.satisfied
    X, labels, lam = _clustered_data(sizes, separation=10.0, n_dims=14)
    c = T.check_cluster_conditions(X, labels, length_scale=2.0, distance=lam)
    assert not c.bands_ok and c.in_band_fraction[-1] == 0.0         # wider kernel
    merged = np.where(labels == "c2", "c3", labels)
    c = T.check_cluster_conditions(X, merged, length_scale=1.0, distance=lam)
    assert not c.sizes_ok and c.n_clusters == 5


def test_cluster_conditions_bad_input():
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="labels"):
        T.check_cluster_conditions(X, [0, 1], length_scale=1.0, distance=1.0)
    with pytest.raises(ValueError, match="length_scale"):
        T.check_cluster_conditions(X, [0, 0, 1, 1], length_scale=-1.0, distance=1.0)
    with pytest.raises(ValueError, match="distance"):
        T.check_cluster_conditions(X, [0, 0, 1, 1], length_scale=1.0, distance=4.0)


# ------------------------------------------------------------------ Theorem 3
def _gp(K_joint, y, n, s2):
    return T.gp_posterior(K_joint[:n, :n], K_joint[n:, :n], np.diag(K_joint)[n:], y,
                          noise_variance=s2)


@pytest.mark.parametrize("n_components, s2", [(50, 0.5), (300, 0.1), (20, 2.0)])
def test_theorem3_intervals_contain_the_exact_gp(n_components, s2):
    # Exact GP (Gaussian kernel) vs the GP whose kernel is K′ = ΦΦᵀ of random
    # Fourier features, cross-covariances included; λ = ‖K̃ − K̃′‖₂ on the
    # joint matrix of training and test points, the theorem's hypothesis.
    rng = np.random.default_rng(n_components)
    n, n_test = 80, 30
    Xall = rng.random((n + n_test, 2)) * 3
    y = np.sin(2 * Xall[:n, 0]) + 0.1 * rng.standard_normal(n)
    K = gaussian_kernel(Xall, length_scale=0.7)
    Phi = RandomFourierFeatures(kernel="gaussian", length_scale=0.7, n_components=n_components,
                                random_state=1).fit_transform(Xall)
    lam = T.spectral_distance(K, T.FeatureKernel(Phi))
    exact, approx = _gp(K, y, n, s2), _gp(Phi @ Phi.T, y, n, s2)
    bounds = T.predictive_bounds(approx.mean, approx.variance, approx.data_fit,
                                 distance=lam, noise_variance=s2)
    assert np.all(bounds.contains(exact.mean, exact.variance))
    # The roles are symmetric: the exact GP's intervals contain the approximation.
    back = T.predictive_bounds(exact.mean, exact.variance, exact.data_fit,
                               distance=lam, noise_variance=s2)
    assert np.all(back.contains(approx.mean, approx.variance))
    # Without the hypothesis (distance 0 claims K̃ = K̃′) the intervals collapse
    # to the approximate predictions and miss the exact ones.
    zero = T.predictive_bounds(approx.mean, approx.variance, approx.data_fit,
                               distance=0.0, noise_variance=s2)
    assert not np.any(zero.contains(exact.mean, exact.variance))


def test_theorem3_variance_bound_is_attained():
    # K̃′ = 0 and K̃ = λI: v′ = 0, v = λ, and the upper end (1 + λ/σ²)(0 + σ²) − σ² = λ.
    n, lam, s2 = 5, 0.3, 0.2
    y = np.arange(1.0, n + 1)
    exact = _gp(lam * np.eye(n + 1), y, n, s2)
    approx = _gp(np.zeros((n + 1, n + 1)), y, n, s2)
    b = T.predictive_bounds(approx.mean, approx.variance, approx.data_fit, distance=lam,
                            noise_variance=s2)
    assert exact.variance[0] == pytest.approx(lam, rel=1e-14)
    assert b.variance_upper[0] == pytest.approx(exact.variance[0], rel=1e-14)


def test_theorem3_paper_mean_statement_fails():
    # The paper's E[g] = (1 ± λ/σ²) E[g′] with the same k* on both sides
    # (Lemma 7): here E[g′] = 0 exactly while E[g] != 0, with ‖K − K′‖₂ = λ.
    s2 = 1.0
    K_approx = np.array([[1.0, 0.0], [0.0, 1.0]])
    K_exact = np.array([[1.0, 0.2], [0.2, 1.0]])
    lam = T.spectral_distance(K_exact, K_approx)
    k_star = np.array([[0.5, 0.2]])
    y = np.array([0.2, -0.5])                 # Q′ = 2I: Q′⁻¹y ⟂ k*, so m′ = 0
    approx = T.gp_posterior(K_approx, k_star, [1.0], y, noise_variance=s2)
    exact = T.gp_posterior(K_exact, k_star, [1.0], y, noise_variance=s2)
    assert abs(approx.mean[0]) < 1e-16 and abs(exact.mean[0]) > 0.01   # 0.0106
    paper_interval = sorted([(1 - lam / s2) * approx.mean[0], (1 + lam / s2) * approx.mean[0]])
    assert not paper_interval[0] <= exact.mean[0] <= paper_interval[1]
    # The corrected bound holds.  (The joint matrices with k** = 1 are PSD.)
    assert T.predictive_bounds(approx.mean, approx.variance, approx.data_fit, distance=lam,
                               noise_variance=s2).contains(exact.mean, exact.variance)[0]


def test_gp_posterior_matches_the_formula(rng):
    X = rng.random((12, 2))
    K = laplace_kernel(X, lifetime=1.5)
    y = rng.standard_normal(9)
    post = T.gp_posterior(K[:9, :9], K[9:, :9], np.ones(3), y, noise_variance=0.3)
    Q = K[:9, :9] + 0.3 * np.eye(9)
    np.testing.assert_allclose(post.mean, K[9:, :9] @ np.linalg.solve(Q, y), rtol=1e-12)
    np.testing.assert_allclose(
        post.variance, 1 - np.einsum("ij,ji->i", K[9:, :9], np.linalg.solve(Q, K[:9, 9:])),
        rtol=1e-12)
    assert post.data_fit == pytest.approx(y @ np.linalg.solve(Q, y), rel=1e-12)


def test_theorem3_bad_input():
    with pytest.raises(ValueError, match="variance"):
        T.predictive_bounds([0.0], [-1.0], 1.0, distance=0.1, noise_variance=1.0)
    with pytest.raises(ValueError, match="shape"):
        T.predictive_bounds([0.0, 1.0], [1.0], 1.0, distance=0.1, noise_variance=1.0)
    with pytest.raises(ValueError, match="noise_variance"):
        T.predictive_bounds([0.0], [1.0], 1.0, distance=0.1, noise_variance=0.0)
    with pytest.raises(ValueError, match="distance"):
        T.predictive_bounds([0.0], [1.0], 1.0, distance=-0.1, noise_variance=1.0)
    with pytest.raises(ValueError, match="NaN"):
        T.predictive_bounds([np.nan], [1.0], 1.0, distance=0.1, noise_variance=1.0)
    with pytest.raises(ValueError, match="positive definite"):
        T.gp_posterior(-5 * np.eye(2), np.ones((1, 2)), [1.0], [1.0, 2.0], noise_variance=1.0)
    with pytest.raises(ValueError, match="columns"):
        T.gp_posterior(np.eye(2), np.ones((1, 3)), [1.0], [1.0, 2.0], noise_variance=1.0)
    with pytest.raises(ValueError, match="y must have"):
        T.gp_posterior(np.eye(2), np.ones((1, 2)), [1.0], [1.0], noise_variance=1.0)
