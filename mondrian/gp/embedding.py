"""The disentangling embedding of Hoang, Hoang, Pham & Woodruff (2020), Sec. 3.3.

A variational auto-encoder (Kingma & Welling 2013) whose latent prior is a
mixture of Gaussians with the structure of the paper's Conditions 1–3,

    p(z) = Σ_{i=1}^{b} π_i N(z; c_i, γ_i² Θ⁻¹),   π_i ∝ 2^{i/2},

trained by maximising the augmented evidence lower bound of Eq. (10),

    L_{α,β} = E_x[ E_{q(z|x)} log p(x|z) − KL(q(z|x) ‖ p(z)) ]        (Eq. 8)
              − α KL(q(z) ‖ p(z))                                     (Eq. 9)
              + β Σ_{i≠j} KL(N(c_i, γ_i² Θ⁻¹) ‖ N(c_j, γ_j² Θ⁻¹)),    (Eq. 10)

where q(z) = E_x q(z|x) is the aggregate (marginal) posterior.  The encoder
mean of a point is its embedding; an SSGP is then trained on the embedded
inputs (Sec. 3.3.2, last paragraph).

The networks are small multilayer perceptrons whose forward and backward
passes are written here with numpy (the gradient is checked against finite
differences in the tests), optimised by Adam (Kingma & Ba 2015) with
PyTorch's default settings, as in the paper's Appendix C.
"""
from __future__ import annotations

import numbers
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import (check_array_input, check_auto_or, check_int,
                           check_positive_float, check_random_generator)

__all__ = ["DisentanglingEmbedding", "prior_directions"]

_LOG_2PI = float(np.log(2.0 * np.pi))

#: ``max_epochs='auto'``: the Adam steps of Appendix C's training on the
#: SSGP paper's Abalone split (100 epochs of 2927 rows in minibatches of 256:
#: 12 a epoch), in at most :data:`AUTO_MAX_EPOCHS` epochs.
AUTO_STEPS = 1200
AUTO_MAX_EPOCHS = 100
_ACTIVATIONS = ("relu", "tanh")
_OUTPUTS = ("latent", "reconstruction")


def prior_directions(n_clusters: int, n_latent: int) -> np.ndarray:
    """Unit vectors u_1..u_b of the prior's cluster means c_i = r·u_i.

    Appendix C fixes the prior means at "k equidistant points on a sphere
    centred at zero with an optimisable radius".  Exactly equidistant points
    exist only for b ≤ d + 1 (the vertices of a regular simplex), and that is
    what is returned then; for d + 1 < b ≤ 2d the vertices of the
    cross-polytope, ±e_1, ±e_2, … in that order (each point equidistant, at
    √2·r, from all the others but its antipode, at 2r).  The paper's setting,
    b = 8 clusters in d = 4 dimensions, is the full cross-polytope (the
    16-cell).

    Parameters
    ----------
    n_clusters : int
        Number b >= 1 of mixture components, at most ``2 * n_latent`` (one
        component: the direction e_1).
    n_latent : int
        Latent dimension d >= 1.

    Returns
    -------
    ndarray of shape (n_clusters, n_latent)
        Unit rows.
    """
    b = check_int(n_clusters, "n_clusters")
    d = check_int(n_latent, "n_latent")
    if b > 2 * d:
        raise ValueError(f"n_clusters={b} exceeds 2 * n_latent = {2 * d}: the prior means are "
                         f"the vertices of a simplex (n_clusters <= n_latent + 1) or of the "
                         f"cross-polytope (n_clusters <= 2 * n_latent) in {d} dimensions")
    if b == 1:
        out = np.zeros((1, d))
        out[0, 0] = 1.0
        return out
    if b <= d + 1:
        # Regular simplex: the centred standard basis of R^b lies in a
        # (b-1)-dimensional subspace; its orthonormal coordinates there
        # (an SVD) give b equidistant unit vectors in R^(b-1) ⊆ R^d.
        E = np.eye(b) - 1.0 / b
        U, s, _ = np.linalg.svd(E)
        V = (U[:, :b - 1] * s[:b - 1])
        V /= np.linalg.norm(V, axis=1, keepdims=True)
        out = np.zeros((b, d))
        out[:, :b - 1] = V
        return out
    out = np.zeros((b, d))
    for i in range(b):
        out[i, i // 2] = 1.0 if i % 2 == 0 else -1.0
    return out


def _logsumexp_rows(A: np.ndarray) -> np.ndarray:
    """log Σ_j exp(A_ij) per row, shifted by the row maximum."""
    top = A.max(axis=1)
    return top + np.log(np.exp(A - top[:, None]).sum(axis=1))


class _Layout:
    """Named arrays packed in one flat float64 vector (parameters or gradients)."""

    def __init__(self, shapes: Sequence[tuple[str, tuple[int, ...]]]):
        self.slices: dict[str, tuple[slice, tuple[int, ...]]] = {}
        start = 0
        for name, shape in shapes:
            size = int(np.prod(shape, dtype=np.int64))
            self.slices[name] = (slice(start, start + size), shape)
            start += size
        self.size = start

    def views(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        return {name: flat[s].reshape(shape) for name, (s, shape) in self.slices.items()}


class _VAE:
    """The networks, the prior and the objective −L_{α,β} with its gradient.

    Parameters are one flat vector (layout in ``self.layout``):

    * encoder: a trunk layer ``enc0`` (activated) shared by two heads, the
      mean μ(x) and the log-variance log σ²(x) of q(z|x) = N(μ, diag σ²),
      each with the remaining hidden layers (activated) and a linear output;
    * decoder: the same shape from z to the mean of p(x|z) = N(x̂(z), diag
      e^τ), with a log-variance τ per input dimension (free parameters);
    * ``rho`` = log r, the log-radius of the prior means c_i = r·u_i.
    """

    def __init__(self, n_features: int, n_latent: int, n_clusters: int,
                 hidden: tuple[int, ...], activation: str, prior_scale: float,
                 alpha: float, beta: float):
        self.d, self.dz, self.k = n_features, n_latent, n_clusters
        self.hidden, self.activation = hidden, activation
        self.alpha, self.beta = alpha, beta
        self.u = prior_directions(n_clusters, n_latent)
        i = np.arange(1, n_clusters + 1, dtype=np.float64)
        # π_i ∝ 2^{i/2} (Sec. 3.3.2, Condition 2), normalised in log space.
        log_w = 0.5 * i * np.log(2.0)
        self.log_pi = log_w - _logsumexp_rows(log_w[None, :])[0]
        # γ_i² ∝ 2^{-i}: the i-dependence of Eq. (15) (γ_i² = (U(i) + L(i))/4d
        # with U, L ≈ 2^{-(a+i-1)}, 2^{-(a+i)}): the more populous clusters
        # are the more concentrated ones (Conditions 1–2).  γ_1 = prior_scale.
        self.gamma2 = prior_scale ** 2 * 2.0 ** (-(i - 1.0))
        # Squared distances between the unit directions, ‖u_i − u_j‖².
        self.delta = ((self.u[:, None, :] - self.u[None, :, :]) ** 2).sum(-1)
        shapes = []
        for net, n_in, n_out in (("enc", n_features, n_latent), ("dec", n_latent, n_features)):
            shapes += [(f"{net}0W", (n_in, hidden[0])), (f"{net}0b", (hidden[0],))]
            for head in ("mu", "lv") if net == "enc" else ("mu",):
                sizes = list(hidden) + [n_out]
                for l in range(1, len(sizes)):
                    shapes += [(f"{net}{head}{l}W", (sizes[l - 1], sizes[l])),
                               (f"{net}{head}{l}b", (sizes[l],))]
        shapes += [("tau", (n_features,)), ("rho", ())]
        self.layout = _Layout(shapes)
        self.chains = {
            "enc0": ["enc0"], "decmu": ["dec0"] + [f"decmu{l}" for l in range(1, len(hidden) + 1)],
            "encmu": [f"encmu{l}" for l in range(1, len(hidden) + 1)],
            "enclv": [f"enclv{l}" for l in range(1, len(hidden) + 1)],
        }

    # -- initialisation -------------------------------------------------
    def init(self, rng: np.random.Generator, radius: float) -> np.ndarray:
        """PyTorch's default ``nn.Linear`` initialisation, U(±1/√fan_in) for
        weights and biases; τ = 0 (unit variance of the standardised data);
        log-radius log ``radius``."""
        theta = np.zeros(self.layout.size)
        P = self.layout.views(theta)
        for name, (_, shape) in self.layout.slices.items():
            if name.endswith("W"):
                bound = 1.0 / np.sqrt(shape[0])
                P[name][...] = rng.uniform(-bound, bound, size=shape)
                P[name[:-1] + "b"][...] = rng.uniform(-bound, bound, size=shape[1])
        P["rho"][...] = np.log(radius)
        return theta

    # -- networks ---------------------------------------------------------
    def _act(self, A: np.ndarray) -> np.ndarray:
        return np.maximum(A, 0.0) if self.activation == "relu" else np.tanh(A)

    def _act_grad(self, A: np.ndarray, H: np.ndarray) -> np.ndarray:
        return (A > 0.0).astype(A.dtype) if self.activation == "relu" else 1.0 - H * H

    def _forward(self, P, names, H, linear_last: bool):
        cache = []
        for i, name in enumerate(names):
            A = H @ P[name + "W"] + P[name + "b"]
            H_out = A if (linear_last and i == len(names) - 1) else self._act(A)
            cache.append((H, A, H_out))
            H = H_out
        return H, cache

    def _backward(self, P, G, names, cache, dH, linear_last: bool) -> np.ndarray:
        for i in range(len(names) - 1, -1, -1):
            name = names[i]
            H_in, A, H_out = cache[i]
            dA = dH if (linear_last and i == len(names) - 1) else dH * self._act_grad(A, H_out)
            G[name + "W"] += H_in.T @ dA
            G[name + "b"] += dA.sum(axis=0)
            dH = dA @ P[name + "W"].T
        return dH

    def encode(self, theta: np.ndarray, X: np.ndarray):
        """(μ, log σ², caches) of q(z|x) for the rows of X (standardised)."""
        P = self.layout.views(theta)
        H, c0 = self._forward(P, self.chains["enc0"], X, linear_last=False)
        mu, cmu = self._forward(P, self.chains["encmu"], H, linear_last=True)
        lv, clv = self._forward(P, self.chains["enclv"], H, linear_last=True)
        return mu, lv, (c0, cmu, clv)

    def decode(self, theta: np.ndarray, Z: np.ndarray):
        """Mean x̂(z) of p(x|z) (standardised units) and its cache."""
        P = self.layout.views(theta)
        return self._forward(P, self.chains["decmu"], Z, linear_last=True)

    def prior_means(self, theta: np.ndarray) -> np.ndarray:
        return np.exp(float(self.layout.views(theta)["rho"])) * self.u

    def log_prior(self, theta: np.ndarray, Z: np.ndarray):
        """log p(z) of the mixture prior and the responsibilities w_bi."""
        C = self.prior_means(theta)
        # ‖z − c_i‖² = ‖z‖² − 2 zᵀc_i + r² (the u_i are unit vectors).
        r2 = float((C[0] ** 2).sum())
        d2 = (Z * Z).sum(axis=1)[:, None] - 2.0 * (Z @ C.T) + r2
        lp = (self.log_pi - 0.5 * self.dz * (_LOG_2PI + np.log(self.gamma2))
              - 0.5 * d2 / self.gamma2)
        logp = _logsumexp_rows(lp)
        return logp, np.exp(lp - logp[:, None])

    def separation(self, theta: np.ndarray) -> float:
        """Σ_{i≠j} KL(N(c_i, γ_i² I) ‖ N(c_j, γ_j² I)), the sum of Eq. (10)."""
        r2 = np.exp(2.0 * float(self.layout.views(theta)["rho"]))
        ratio = self.gamma2[:, None] / self.gamma2[None, :]          # γ_i² / γ_j²
        kl = 0.5 * (self.dz * ratio + r2 * self.delta / self.gamma2[None, :]
                    - self.dz - self.dz * np.log(ratio))
        np.fill_diagonal(kl, 0.0)
        return float(kl.sum())

    # -- objective ----------------------------------------------------------
    def loss_and_grad(self, theta: np.ndarray, X: np.ndarray, E: np.ndarray):
        """−L_{α,β} on the batch X (standardised) with reparameterisation
        noise E ~ N(0, I) of shape (B, n_latent), its gradient, and its parts.

        With z_b = μ_b + σ_b ⊙ ε_b (one sample per point):

        * reconstruction: −log N(x_b; x̂(z_b), diag e^τ);
        * KL(q(z|x_b) ‖ p(z)) = −H[q(z|x_b)] − E_q log p(z), the entropy
          exact, the cross-entropy by the one sample z_b (the mixture prior
          has no closed-form KL);
        * KL(q(z) ‖ p(z)) with q(z) estimated on the batch by the mixture
          q̂(z) = B⁻¹ Σ_b q(z|x_b) and the expectation by the samples z_a:
          B⁻¹ Σ_a [log q̂(z_a) − log p(z_a)] (a consistent estimator, biased
          for small B, the minibatch estimate used by the aggregate-posterior
          penalties the paper builds on: Mathieu et al. 2019);
        * the separation sum in closed form (Gaussians with equal, isotropic
          covariance shapes).
        """
        B = X.shape[0]
        P = self.layout.views(theta)
        G_flat = np.zeros_like(theta)
        G = self.layout.views(G_flat)
        r = float(np.exp(P["rho"]))
        mu, lv, (c0, cmu, clv) = self.encode(theta, X)
        sd = np.exp(0.5 * lv)
        Z = mu + sd * E
        xhat, cdec = self.decode(theta, Z)

        # Reconstruction: −log p(x|z), Gaussian with variance e^τ per dimension.
        tau = P["tau"]
        R = X - xhat
        inv_var = np.exp(-tau)
        nll = 0.5 * (B * (self.d * _LOG_2PI + tau.sum()) + (R * R * inv_var).sum())
        d_xhat = -(R * inv_var) / B
        G["tau"] += 0.5 * (B - (R * R * inv_var).sum(axis=0)) / B

        # Entropy of q(z|x): ½ Σ_l (log 2π + 1 + log σ²_l).
        entropy = 0.5 * (B * self.dz * (_LOG_2PI + 1.0) + lv.sum())
        d_lv = np.full_like(lv, -0.5 / B)

        # log p(z_b) enters once in KL(q(z|x)‖p) and α times in KL(q(z)‖p).
        logp, w = self.log_prior(theta, Z)
        wg = w / self.gamma2                                         # w_bi / γ_i²
        scale = (1.0 + self.alpha) / B
        # ∂(−log p(z_b))/∂z_b = Σ_i w_bi (z_b − c_i)/γ_i², and with c_i = r u_i
        # ∂/∂r = −Σ_i w_bi (z_bᵀu_i − r)/γ_i².
        wsum = wg.sum(axis=1)
        d_z = scale * (Z * wsum[:, None] - wg @ (r * self.u))
        d_r = -scale * float((wg * (Z @ self.u.T)).sum() - r * wsum.sum())

        # Aggregate posterior on the batch: ℓ_ab = log N(z_a; μ_b, diag σ_b²),
        # with Σ_l (z_al − μ_bl)² / σ_bl² expanded into matrix products (B × B,
        # not B × B × n_latent).
        kl_agg = 0.0
        if self.alpha != 0.0:
            prec = np.exp(-lv)
            mp = mu * prec
            Q = (Z * Z) @ prec.T - 2.0 * (Z @ mp.T) + (mu * mp).sum(axis=1)[None, :]
            ell = -0.5 * (self.dz * _LOG_2PI + lv.sum(axis=1))[None, :] - 0.5 * Q
            lse = _logsumexp_rows(ell)
            v = np.exp(ell - lse[:, None])                           # softmax over b
            kl_agg = float(np.mean(lse - np.log(B) - logp))
            g = self.alpha / B
            d_z -= g * (Z * (v @ prec) - v @ mp)
            vs = v.sum(axis=0)[:, None]                              # Σ_a v_ab
            vZ = v.T @ Z
            d_mu_agg = g * prec * (vZ - mu * vs)
            d_lv_agg = g * 0.5 * (prec * (v.T @ (Z * Z) - 2.0 * mu * vZ + mu * mu * vs) - vs)
        else:
            d_mu_agg = d_lv_agg = 0.0

        sep = self.separation(theta)
        d_r -= self.beta * r * float((self.delta / self.gamma2[None, :]).sum())
        G["rho"] += d_r * r

        loss = (nll - entropy - logp.sum()) / B + self.alpha * kl_agg - self.beta * sep

        # Back through the decoder to z, then through z = μ + σ ε.
        d_z += self._backward(P, G, self.chains["decmu"], cdec, d_xhat, linear_last=True)
        d_mu = d_z + d_mu_agg
        d_lv = d_lv + d_z * E * 0.5 * sd + d_lv_agg
        d_h = self._backward(P, G, self.chains["encmu"], cmu, d_mu, linear_last=True)
        d_h += self._backward(P, G, self.chains["enclv"], clv, d_lv, linear_last=True)
        self._backward(P, G, self.chains["enc0"], c0, d_h, linear_last=False)
        parts = {"reconstruction": nll / B, "kl": (-entropy - logp.sum()) / B,
                 "kl_aggregate": kl_agg, "separation": sep}
        return float(loss), G_flat, parts


class DisentanglingEmbedding(TransformerMixin, BaseEstimator):
    """Disentangling embedding of Hoang et al. (2020), Sec. 3.3, Eq. (8)–(10).

    A variational auto-encoder with a mixture-of-Gaussians latent prior
    p(z) = Σ_i π_i N(z; c_i, γ_i² I), π_i ∝ 2^{i/2}, trained to maximise

        L_{α,β} = E_x[E_{q(z|x)} log p(x|z) − KL(q(z|x) ‖ p(z))]
                  − α KL(q(z) ‖ p(z)) + β Σ_{i≠j} KL(N_i ‖ N_j)

    (Eq. 8, 9 and 10), so that the encoded data form well-separated
    clusters of growing size and concentration (Conditions 1–3), on which a
    sparse-spectrum GP needs fewer spectral samples (Theorem 2).
    ``transform`` returns the encoder mean μ(x), the embedding an SSGP is
    trained on (Sec. 3.3.2), or with ``output='reconstruction'`` the decoder
    mean of that embedding, x̂(μ(x)), the "reconfigured data" of Appendix C.

    Choices where the paper leaves room (Appendix C describes the authors'
    networks; the equations are followed exactly):

    * **Inputs** are standardised with the training mean and standard
      deviation (a constant feature is centred, not scaled), in place of the
      authors' batch-norm layer (an affine map of the first layer's outputs
      learnt along; standardising the inputs instead keeps the objective a
      function of each point, as Eq. (8) is).
    * **Posterior and likelihood** are single Gaussians with diagonal
      covariance, q(z|x) = N(μ(x), diag σ²(x)) and p(x|z) = N(x̂(z), diag e^τ)
      with one learnt variance per input dimension, as in the VAE of
      Eq. (8) (Kingma & Welling 2013).  The authors' code makes both
      mixtures of k Gaussian nets; that is not in the paper's equations and
      leaves KL(q(z|x) ‖ p(z)) between two mixtures.
    * **Networks** follow Appendix C: a trunk layer of ``hidden_layer_sizes[0]``
      units shared by the two heads (mean and log-variance), each with the
      further hidden layers, ReLU activations, linear outputs; the decoder
      mirrors the encoder with one head.
    * **Prior**: the means c_i = r·u_i are fixed directions on the sphere
      (:func:`prior_directions`: the 16-cell for 8 clusters in 4 dimensions)
      with a learnt radius r (Appendix C); Θ = I in the latent space (the
      SSGP learns its length scales on the embedding); γ_i² = γ_1² · 2^{-(i-1)}
      with γ_1 = ``prior_scale``, the dependence on i of Eq. (15), so the
      heavier components (π_i ∝ 2^{i/2}) are the tighter ones.
    * **KL(q(z|x) ‖ p(z))**: the entropy of q(z|x) exactly, the cross-entropy
      −E_q log p(z) by the reparameterised sample (no closed form for a
      mixture prior).
    * **KL(q(z) ‖ p(z))**, with the aggregate posterior q(z) = E_x q(z|x):
      q(z) is estimated on each minibatch of B points by
      q̂(z) = B⁻¹ Σ_b q(z|x_b) and the outer expectation by the same samples,
      KL ≈ B⁻¹ Σ_a [log q̂(z_a) − log p(z_a)] (consistent as B grows).
    * **Training** runs Adam (lr 1e-3, β₁ 0.9, β₂ 0.999, ε 1e-8: PyTorch's
      defaults, Appendix C) on shuffled minibatches for exactly
      ``max_epochs`` epochs.  There is no convergence test on purpose: as
      Eq. (10) is written, β Σ KL(N_i ‖ N_j) grows as r² without bound, so
      L_{α,β} has no maximum and the learnt radius keeps growing; the number
      of *steps* sets how far the clusters are pushed apart, and faster than
      linearly: the radius's gradient grows as r², and Adam's steps in log r
      beyond ``learning_rate`` with it (10⁶ rows,
      one epoch of 3907 steps: r from 2 to 1.6·10⁵; 100 epochs pushed log r
      past 300, where r² overflows).  So ``max_epochs='auto'`` takes the
      steps of the paper's training on Abalone (:data:`AUTO_STEPS`: 100
      epochs of its 2927 rows) whatever the number of rows -- 100 epochs
      up to 3072 rows (at the default batch size), 30 of 10⁴, and above
      12·256 rows a epoch the last one cut short -- at most 100 epochs.

    Parameters
    ----------
    n_latent : int, default=4
        Latent dimension (4 in Appendix C).
    n_clusters : int, default=8
        Number b >= 1 of prior components (k = 8 in Appendix C); at most
        ``2 * n_latent`` (see :func:`prior_directions`).
    alpha : float, default=8.0
        Weight α >= 0 of KL(q(z) ‖ p(z)) in Eq. (9) (8.0 in Appendix C).
    beta : float, default=1.2
        Weight β >= 0 of the separation term of Eq. (10) (1.2 in Appendix C).
    hidden_layer_sizes : tuple of int, default=(10, 10)
        Trunk width, then the hidden widths of each head (Appendix C: 10, 10).
    activation : {'relu', 'tanh'}, default='relu'
        Hidden activation (ReLU in Appendix C).
    prior_radius : float, default=2.0
        Initial radius r > 0 of the prior means (learnt).
    prior_scale : float, default=1.0
        γ_1 > 0, the standard deviation of the lightest prior component.
    learning_rate : float, default=1e-3
        Adam step size.
    batch_size : int, default=256
        Minibatch size (capped at the number of samples).
    max_epochs : int or 'auto', default='auto'
        Passes over the data; 'auto': :data:`AUTO_STEPS` (1200) Adam steps,
        in at most 100 epochs, the last one possibly cut short (see
        Training above): 100 epochs up to 3072 rows at the default batch
        size.
    output : {'latent', 'reconstruction'}, default='latent'
        What ``transform`` returns: μ(x) or x̂(μ(x)) in the input's units.
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        Source of the initial weights, the minibatch order and the
        reparameterisation noise.

    Attributes
    ----------
    n_features_in_ : int
    mean_, scale_ : ndarray of shape (``n_features_in_``,)
        The standardisation of the inputs.
    params_ : ndarray
        All network parameters, τ and log r, as one flat vector.
    radius_ : float
        Learnt radius r of the prior means.
    prior_means_ : ndarray of shape (n_clusters, n_latent)
        c_i = r·u_i.
    prior_weights_ : ndarray of shape (n_clusters,)
        π_i ∝ 2^{i/2}.
    prior_scales_ : ndarray of shape (n_clusters,)
        γ_i.
    loss_curve_ : list of float
        −L_{α,β} averaged over each epoch's minibatches.
    history_ : dict of list of float
        Per epoch: the means of ``'reconstruction'`` (−log p(x|z)), ``'kl'``
        (KL(q(z|x) ‖ p(z))), ``'kl_aggregate'`` and ``'separation'``.
    n_iter_ : int
        Number of Adam steps taken.
    n_epochs_ : int
        Number of epochs run (the last one possibly cut short by
        ``max_epochs='auto'``).

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.gp import DisentanglingEmbedding
    >>> X = np.random.default_rng(0).normal(size=(200, 6))
    >>> emb = DisentanglingEmbedding(max_epochs=5, random_state=0).fit(X)
    >>> emb.transform(X).shape
    (200, 4)
    """

    def __init__(self, n_latent: int = 4, n_clusters: int = 8, alpha: float = 8.0,
                 beta: float = 1.2, hidden_layer_sizes: tuple[int, ...] = (10, 10),
                 activation: str = "relu", prior_radius: float = 2.0,
                 prior_scale: float = 1.0, learning_rate: float = 1e-3,
                 batch_size: int = 256, max_epochs: int | str = "auto", output: str = "latent",
                 random_state=None):
        self.n_latent = n_latent
        self.n_clusters = n_clusters
        self.alpha = alpha
        self.beta = beta
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.prior_radius = prior_radius
        self.prior_scale = prior_scale
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.output = output
        self.random_state = random_state

    def _check_params(self) -> tuple:
        n_latent = check_int(self.n_latent, "n_latent")
        n_clusters = check_int(self.n_clusters, "n_clusters")
        alpha = check_positive_float(self.alpha, "alpha", allow_zero=True)
        beta = check_positive_float(self.beta, "beta", allow_zero=True)
        hidden = self.hidden_layer_sizes
        if isinstance(hidden, numbers.Integral) and not isinstance(hidden, (bool, np.bool_)):
            hidden = (hidden,)
        if not isinstance(hidden, (tuple, list)) or len(hidden) == 0:
            raise TypeError("hidden_layer_sizes must be a non-empty tuple of positive "
                            f"integers, got {self.hidden_layer_sizes!r}")
        hidden = tuple(check_int(h, "hidden_layer_sizes entries") for h in hidden)
        if self.activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {_ACTIVATIONS}, got {self.activation!r}")
        if self.output not in _OUTPUTS:
            raise ValueError(f"output must be one of {_OUTPUTS}, got {self.output!r}")
        prior_radius = check_positive_float(self.prior_radius, "prior_radius")
        prior_scale = check_positive_float(self.prior_scale, "prior_scale")
        lr = check_positive_float(self.learning_rate, "learning_rate")
        batch_size = check_int(self.batch_size, "batch_size")
        max_epochs = check_auto_or(self.max_epochs, "max_epochs", check_int,
                                   "an integer >= 1")
        prior_directions(n_clusters, n_latent)          # raises if b > 2d
        return (n_latent, n_clusters, alpha, beta, hidden, prior_radius, prior_scale, lr,
                batch_size, max_epochs)

    def fit(self, X, y=None) -> "DisentanglingEmbedding":
        """Train the auto-encoder on the rows of X (y is ignored).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        (n_latent, n_clusters, alpha, beta, hidden, prior_radius, prior_scale, lr,
         batch_size, max_epochs) = self._check_params()
        X = check_array_input(self, X, reset=True)
        rng = check_random_generator(self.random_state)
        self.mean_ = X.mean(axis=0)
        self.scale_ = _column_scale(X - self.mean_)
        Xs = (X - self.mean_) / self.scale_
        n = Xs.shape[0]
        vae = _VAE(X.shape[1], n_latent, n_clusters, hidden, self.activation, prior_scale,
                   alpha, beta)
        theta = vae.init(rng, prior_radius)
        m = np.zeros_like(theta)
        v = np.zeros_like(theta)
        b1, b2, eps = 0.9, 0.999, 1e-8
        B = min(batch_size, n)
        max_steps = None
        if max_epochs == "auto":
            batches = -(-n // B)
            max_epochs = min(AUTO_MAX_EPOCHS, -(-AUTO_STEPS // batches))
            max_steps = AUTO_STEPS
        step = 0
        self.loss_curve_ = []
        self.history_ = {key: [] for key in ("reconstruction", "kl", "kl_aggregate",
                                             "separation")}
        for epoch in range(max_epochs):
            order = rng.permutation(n)
            total, parts_sum, n_batches = 0.0, dict.fromkeys(self.history_, 0.0), 0
            for start in range(0, n, B):
                if step == max_steps:
                    break
                idx = order[start:start + B]
                E = rng.standard_normal((idx.size, n_latent))
                loss, grad, parts = vae.loss_and_grad(theta, Xs[idx], E)
                if not (np.isfinite(loss) and np.all(np.isfinite(grad))):
                    raise FloatingPointError(
                        f"the objective became non-finite at epoch {epoch} (step {step}); "
                        f"lower learning_rate (now {lr!r}) or standardise X")
                step += 1
                m = b1 * m + (1.0 - b1) * grad
                with np.errstate(over="ignore"):
                    v = b2 * v + (1.0 - b2) * grad * grad
                if not np.all(np.isfinite(v)):
                    raise FloatingPointError(
                        f"a squared gradient overflowed at epoch {epoch} (step {step}), "
                        f"the prior's radius at {np.exp(vae.layout.views(theta)['rho']):.3g}: "
                        "Eq. (10)'s separation term has no maximum in the radius, which "
                        "grows with every step; take fewer max_epochs or a smaller "
                        "learning_rate")
                m_hat = m / (1.0 - b1 ** step)
                v_hat = v / (1.0 - b2 ** step)
                theta = theta - lr * m_hat / (np.sqrt(v_hat) + eps)
                total += loss
                n_batches += 1
                for key in parts_sum:
                    parts_sum[key] += parts[key]
            self.loss_curve_.append(total / n_batches)
            for key in parts_sum:
                self.history_[key].append(parts_sum[key] / n_batches)
        self._vae = vae
        self.params_ = theta
        self.n_iter_ = step
        self.n_epochs_ = len(self.loss_curve_)
        self.radius_ = float(np.exp(vae.layout.views(theta)["rho"]))
        self.prior_means_ = vae.prior_means(theta)
        self.prior_weights_ = np.exp(vae.log_pi)
        self.prior_scales_ = np.sqrt(vae.gamma2)
        return self

    def _encode(self, X) -> tuple[np.ndarray, np.ndarray]:
        check_is_fitted(self, "params_")
        X = check_array_input(self, X, reset=False)
        mu, lv, _ = self._vae.encode(self.params_, (X - self.mean_) / self.scale_)
        return mu, lv

    def transform(self, X) -> np.ndarray:
        """The embedding μ(x) (``output='latent'``) or x̂(μ(x)) in X's units.

        Parameters
        ----------
        X : array-like of shape (n_samples, ``n_features_in_``)

        Returns
        -------
        ndarray of shape (n_samples, n_latent) or (n_samples, ``n_features_in_``)
        """
        if self.output not in _OUTPUTS:
            raise ValueError(f"output must be one of {_OUTPUTS}, got {self.output!r}")
        mu, _ = self._encode(X)
        if self.output == "latent":
            return mu
        xhat, _ = self._vae.decode(self.params_, mu)
        return xhat * self.scale_ + self.mean_

    def encode(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of q(z|x) for each row of X.

        Returns
        -------
        mean, std : ndarray of shape (n_samples, n_latent)
        """
        mu, lv = self._encode(X)
        return mu, np.exp(0.5 * lv)

    def predict_cluster(self, X) -> np.ndarray:
        """Index i of the prior component with the largest posterior
        responsibility π_i N(μ(x); c_i, γ_i² I) / p(μ(x)) at each embedding.

        Returns
        -------
        ndarray of shape (n_samples,) of int
        """
        mu, _ = self._encode(X)
        _, w = self._vae.log_prior(self.params_, mu)
        return np.argmax(w, axis=1)

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """``disentanglingembedding0..`` for the latent output, else the input names."""
        check_is_fitted(self, "params_")
        if self.output == "reconstruction":
            names = getattr(self, "feature_names_in_", None)
            if input_features is not None:
                input_features = np.asarray(input_features, dtype=object)
                if input_features.shape != (self.n_features_in_,) or (
                        names is not None and not np.array_equal(input_features, names)):
                    raise ValueError("input_features must be the n_features_in_ = "
                                     f"{self.n_features_in_} names seen in fit")
                return input_features
            if names is not None:
                return np.asarray(names, dtype=object)
            return np.asarray([f"x{j}" for j in range(self.n_features_in_)], dtype=object)
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{j}" for j in range(self.prior_means_.shape[1])],
                          dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        tags.non_deterministic = False
        return tags


def _column_scale(dev: np.ndarray) -> np.ndarray:
    """Standard deviation of each column of the centred ``dev`` (1 where it
    is 0), computed on the column divided by its largest |entry|: the
    squares of data scaled by 1e±160 underflow to 0 or overflow to inf
    (every point then had the same embedding)."""
    top = np.max(np.abs(dev), axis=0)
    safe = np.where(top > 0.0, top, 1.0)
    std = safe * np.sqrt(np.mean(np.square(dev / safe), axis=0))
    return np.where(std > 0.0, std, 1.0)
