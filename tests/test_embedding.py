"""DisentanglingEmbedding (Hoang et al. 2020, Sec. 3.3, Eq. 8-10)."""
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from mondrian.gp import DisentanglingEmbedding, SparseSpectrumGPRegressor
from mondrian.gp.embedding import _VAE, prior_directions


def _manifold(rng, n, d=6):
    """Points near one 2-d curved manifold in d dimensions (the same manifold
    for every call: its embedding matrix has a fixed seed)."""
    t = rng.uniform(-2, 2, (n, 2))
    A = np.random.default_rng(2020).normal(size=(4, d))
    feats = np.column_stack([t, np.sin(t[:, 0]), t[:, 0] * t[:, 1]])
    return feats @ A + 0.05 * rng.normal(size=(n, d))


def _finite_difference(vae, theta, X, E, h=1e-6):
    fd = np.empty_like(theta)
    for i in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[i] += h
        tm[i] -= h
        fd[i] = (vae.loss_and_grad(tp, X, E)[0] - vae.loss_and_grad(tm, X, E)[0]) / (2 * h)
    return fd


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("alpha,beta", [(8.0, 1.2), (0.0, 0.0), (0.5, 0.0)])
@pytest.mark.parametrize("hidden", [(7, 4), (5,)])
def test_gradient_matches_finite_differences(rng, activation, alpha, beta, hidden):
    """The hand-written backward pass of -L_{α,β} equals central differences.

    Central differences with h = 1e-6 have truncation error O(h²·f''') ~ 1e-12
    and rounding error ~ 1e-16·|L|/h ≤ 1e-7 per coordinate for |L| ≲ 2000
    (the separation term makes L large); over ~300 coordinates the relative
    error of the whole gradient vector is then ~1e-9, so 1e-6 leaves room
    while any wrong term (a missing factor, a sign) is off by O(1).
    """
    vae = _VAE(5, 3, 6, hidden, activation, 0.8, alpha, beta)
    theta = vae.init(rng, 1.5)
    X, E = rng.normal(size=(9, 5)), rng.normal(size=(9, 3))
    _, grad, _ = vae.loss_and_grad(theta, X, E)
    fd = _finite_difference(vae, theta, X, E)
    assert np.linalg.norm(grad - fd) <= 1e-6 * np.linalg.norm(fd)
    # Every block of parameters is exercised (no block with a zero gradient).
    for name, (s, _) in vae.layout.slices.items():
        assert np.any(fd[s] != 0.0), name


def test_objective_parts_match_independent_formulas(rng):
    """-L_{α,β} = recon + KL(q(z|x)‖p) + α KL(q(z)‖p) - β Σ KL(N_i‖N_j), each
    part recomputed here with scipy's Gaussian densities (exact up to rounding)."""
    alpha, beta = 8.0, 1.2
    vae = _VAE(4, 3, 5, (6, 6), "tanh", 0.7, alpha, beta)
    theta = vae.init(rng, 1.3)
    X, E = rng.normal(size=(11, 4)), rng.normal(size=(11, 3))
    loss, _, parts = vae.loss_and_grad(theta, X, E)
    mu, lv, _ = vae.encode(theta, X)
    Z = mu + np.exp(0.5 * lv) * E
    xhat, _ = vae.decode(theta, Z)
    tau = vae.layout.views(theta)["tau"]
    recon = -np.mean([multivariate_normal(xhat[b], np.diag(np.exp(tau))).logpdf(X[b])
                      for b in range(11)])
    C = vae.prior_means(theta)
    pis = np.exp(vae.log_pi)
    np.testing.assert_allclose(pis[1:] / pis[:-1], np.sqrt(2.0), rtol=1e-12)   # π_i ∝ 2^{i/2}
    logp = np.array([logsumexp([np.log(pis[i]) + multivariate_normal(
        C[i], vae.gamma2[i] * np.eye(3)).logpdf(z) for i in range(5)]) for z in Z])
    entropy = np.array([multivariate_normal(mu[b], np.diag(np.exp(lv[b]))).entropy()
                        for b in range(11)])
    kl = np.mean(-entropy - logp)
    logq = np.array([logsumexp([multivariate_normal(mu[b], np.diag(np.exp(lv[b]))).logpdf(z)
                                for b in range(11)]) - np.log(11) for z in Z])
    kl_agg = np.mean(logq - logp)
    sep = 0.0
    for i in range(5):
        for j in range(5):
            if i != j:
                Si, Sj = vae.gamma2[i] * np.eye(3), vae.gamma2[j] * np.eye(3)
                dm = C[j] - C[i]
                sep += 0.5 * (np.trace(np.linalg.solve(Sj, Si)) + dm @ np.linalg.solve(Sj, dm)
                              - 3 + np.log(np.linalg.det(Sj) / np.linalg.det(Si)))
    np.testing.assert_allclose([parts["reconstruction"], parts["kl"], parts["kl_aggregate"],
                                parts["separation"]], [recon, kl, kl_agg, sep], rtol=1e-10)
    np.testing.assert_allclose(loss, recon + kl + alpha * kl_agg - beta * sep, rtol=1e-10)


def test_prior_directions():
    """Simplex vertices (all pairwise distances equal) up to d + 1 clusters,
    the cross-polytope ±e_j up to 2d; unit norms; more is an error."""
    for b, d in [(2, 1), (3, 2), (5, 4), (4, 6)]:
        U = prior_directions(b, d)
        np.testing.assert_allclose(np.linalg.norm(U, axis=1), 1.0, rtol=1e-12)
        dist = np.linalg.norm(U[:, None] - U[None], axis=-1)[np.triu_indices(b, 1)]
        np.testing.assert_allclose(dist, np.sqrt(2.0 * b / (b - 1)), rtol=1e-12)
    U = prior_directions(8, 4)
    np.testing.assert_array_equal(U, np.vstack([s * e for e in np.eye(4) for s in (1, -1)]))
    np.testing.assert_array_equal(prior_directions(1, 3), [[1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="n_clusters"):
        prior_directions(9, 4)


def test_reproducible_and_seed_dependent():
    X = _manifold(np.random.default_rng(0), 120)
    a = DisentanglingEmbedding(max_epochs=3, random_state=7).fit(X)
    b = DisentanglingEmbedding(max_epochs=3, random_state=7).fit(X)
    c = DisentanglingEmbedding(max_epochs=3, random_state=8).fit(X)
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    assert a.loss_curve_ == b.loss_curve_
    assert not np.allclose(a.transform(X), c.transform(X))


def test_auto_encoder_learns_the_manifold():
    """Without the penalties (α = β = 0) the VAE reconstructs data lying near
    a 2-d manifold in 6-d through its 4-d latent space: the held-out squared
    error of x̂(μ(x)) is a small fraction of the data's variance.  (The mean
    predictor has relative error 1; this fit reaches 0.043, so 0.2 leaves
    room for rounding across platforms while an untrained or broken decoder,
    or a collapsed posterior, stays near 1 -- as the ReLU network does at
    this seed, a known failure of VAEs, hence tanh here.)"""
    rng = np.random.default_rng(3)
    X, X_te = _manifold(rng, 600), _manifold(rng, 200)
    emb = DisentanglingEmbedding(alpha=0.0, beta=0.0, learning_rate=1e-2, max_epochs=300,
                                 batch_size=100, activation="tanh", output="reconstruction", random_state=0).fit(X)
    rel = np.mean((emb.transform(X_te) - X_te) ** 2) / np.mean((X_te - X_te.mean(0)) ** 2)
    assert rel < 0.2
    h = emb.history_["reconstruction"]
    assert np.mean(h[-10:]) < np.mean(h[:10]) - 1.0


def test_separation_pushes_the_prior_means_apart():
    """β Σ KL(N_i‖N_j) grows with the radius r as r² (Eq. 10), so with β > 0
    the learnt radius ends larger than both its start and the radius learnt
    with β = 0 from the same start and seed."""
    X = _manifold(np.random.default_rng(1), 300)
    kw = dict(max_epochs=20, batch_size=100, prior_radius=2.0, random_state=0)
    pushed = DisentanglingEmbedding(beta=1.2, **kw).fit(X)
    free = DisentanglingEmbedding(beta=0.0, **kw).fit(X)
    assert pushed.radius_ > 2.0 and pushed.radius_ > free.radius_
    np.testing.assert_allclose(np.linalg.norm(pushed.prior_means_, axis=1), pushed.radius_,
                               rtol=1e-12)
    assert pushed.history_["separation"][-1] > pushed.history_["separation"][0]


def test_outputs_and_fitted_attributes(rng):
    X = _manifold(rng, 80)
    emb = DisentanglingEmbedding(max_epochs=2, batch_size=32, random_state=0).fit(X)
    assert emb.transform(X).shape == (80, 4)
    assert emb.n_iter_ == 2 * 3 and len(emb.loss_curve_) == 2
    mean, std = emb.encode(X)
    np.testing.assert_array_equal(mean, emb.transform(X))
    assert np.all(std > 0)
    clusters = emb.predict_cluster(X)
    assert clusters.shape == (80,) and clusters.min() >= 0 and clusters.max() < 8
    np.testing.assert_allclose(emb.prior_scales_ ** 2 / emb.prior_scales_[0] ** 2,
                               2.0 ** -np.arange(8.0), rtol=1e-12)
    rec = emb.set_params(output="reconstruction").transform(X)
    assert rec.shape == X.shape
    assert list(emb.get_feature_names_out()) == [f"x{j}" for j in range(6)]
    emb.set_params(output="latent")
    assert list(emb.get_feature_names_out()) == [f"disentanglingembedding{j}" for j in range(4)]


def test_pipeline_with_ssgp_equals_manual_composition(rng):
    """In a Pipeline the SSGP is fitted on the embedding μ(x): predictions
    equal those of the two estimators applied by hand (same seeds)."""
    X = _manifold(rng, 100)
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=100)
    emb = DisentanglingEmbedding(max_epochs=3, random_state=0)
    gp = SparseSpectrumGPRegressor(n_components=4, max_iter=3, random_state=0)
    pipe = make_pipeline(emb, gp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)    # a 3-iteration SSGP
        pipe.fit(X, y)
        Z = DisentanglingEmbedding(max_epochs=3, random_state=0).fit_transform(X)
        manual = SparseSpectrumGPRegressor(n_components=4, max_iter=3, random_state=0).fit(Z, y)
    np.testing.assert_array_equal(pipe.predict(X), manual.predict(Z))


@pytest.mark.parametrize("params,match", [
    (dict(alpha=-1.0), "alpha"), (dict(beta=np.nan), "beta"), (dict(n_latent=0), "n_latent"),
    (dict(n_clusters=0), "n_clusters"), (dict(n_clusters=9), "n_clusters"),
    (dict(hidden_layer_sizes=(10, 0)), "hidden_layer_sizes"),
    (dict(activation="sigmoid"), "activation"), (dict(output="z"), "output"),
    (dict(prior_radius=0.0), "prior_radius"), (dict(prior_scale=-2.0), "prior_scale"),
    (dict(learning_rate=0.0), "learning_rate"), (dict(batch_size=0), "batch_size"),
    (dict(max_epochs=0), "max_epochs"),
])
def test_invalid_parameters(rng, params, match):
    with pytest.raises(ValueError, match=match):
        DisentanglingEmbedding(**params).fit(rng.normal(size=(20, 3)))


def test_invalid_input(rng):
    X = rng.normal(size=(20, 3))
    with pytest.raises(TypeError, match="hidden_layer_sizes"):
        DisentanglingEmbedding(hidden_layer_sizes=()).fit(X)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DisentanglingEmbedding().fit(bad)
    emb = DisentanglingEmbedding(max_epochs=1).fit(X)
    with pytest.raises(ValueError, match="features"):
        emb.transform(rng.normal(size=(5, 4)))


@parametrize_with_checks([DisentanglingEmbedding(max_epochs=3, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_embedding_does_not_depend_on_the_units_of_x():
    """Standardised by column scales computed without squaring raw values:
    at X·1e-170 the squares underflowed (std 0, every point one embedding),
    at X·1e160 they overflowed."""
    X = np.random.default_rng(0).random((100, 3))
    ref = DisentanglingEmbedding(random_state=0, max_epochs=5).fit_transform(X)
    for factor in (1e-170, 1e160):
        Z = DisentanglingEmbedding(random_state=0, max_epochs=5).fit_transform(X * factor)
        np.testing.assert_allclose(Z, ref, rtol=0, atol=1e-12)


def test_auto_epochs_take_the_papers_steps_whatever_the_rows():
    """max_epochs='auto': 1200 Adam steps (the last epoch cut short), at most
    100 epochs (the radius grows with every step, not every epoch)."""
    X = np.random.default_rng(0).normal(size=(300, 3))
    emb = DisentanglingEmbedding(batch_size=3, random_state=0).fit(X)      # 100 a epoch
    assert emb.n_epochs_ == 12 and emb.n_iter_ == 1200
    emb = DisentanglingEmbedding(batch_size=7, random_state=0).fit(X)      # 43 a epoch
    assert emb.n_epochs_ == 28 and emb.n_iter_ == 1200
    emb = DisentanglingEmbedding(batch_size=256, random_state=0).fit(X)    # 2 a epoch
    assert emb.n_epochs_ == 100 and emb.n_iter_ == 200
    with pytest.raises(ValueError, match="max_epochs"):
        DisentanglingEmbedding(max_epochs="many").fit(X)


def test_a_runaway_radius_is_reported():
    """Eq. (10) has no maximum in the prior's radius: with a large step the
    log-radius grows by about the step each iteration until its gradient
    squares to infinity, which is refused with the reason."""
    X = np.random.default_rng(0).normal(size=(32, 3))
    emb = DisentanglingEmbedding(learning_rate=0.5, max_epochs=2000, batch_size=32,
                                 random_state=0)
    with pytest.raises(FloatingPointError, match="radius"):
        emb.fit(X)
