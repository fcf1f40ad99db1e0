"""Shared fixtures.  Tests import the installed ``mondrian`` package.

The suite runs with ``--import-mode=importlib``, where test modules cannot
import this file; shared helpers are therefore fixtures.
"""
import subprocess
import sys

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def run_python():
    """``run_python(code, env=None, timeout=300)``: the standard output of
    ``code`` run by a fresh interpreter (for what a test must not inherit
    from this process: its memory high-water mark, its environment, an
    abort); a non-zero exit fails the test with the child's stderr."""
    def run(code: str, *, env=None, timeout: float = 300) -> str:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=timeout)
        assert out.returncode == 0, out.stderr
        return out.stdout

    return run


def _assert_within_k_se(estimate, truth, se, k=5.0, *, atol=0.0):
    """Assert ``|estimate - truth| <= k * se + atol`` elementwise.

    The one tolerance rule of the statistical tests.  ``estimate`` is a mean
    (or another asymptotically normal statistic) of n independent draws
    whose expectation is ``truth``, and ``se`` its standard error: the
    exact one where the distribution is known (Bernoulli: √(p(1-p)/n)), else
    the sample standard deviation over √n.  For a normal statistic a
    deviation beyond k = 5 standard errors has probability 5.7e-7, so a
    correct implementation fails a test of a few hundred such comparisons
    (all with fixed seeds) with probability below 1e-3, while a bias of a
    few standard errors (a wrong scale, a wrong distribution) is caught.
    Callers state n and what se is in a comment; with n in the thousands
    the normal approximation is accurate at 5 standard errors for bounded
    draws.

    ``atol`` is for comparisons whose standard error is zero (every draw
    equal, e.g. a kernel value of 0 or 1): those must then agree to
    rounding, and ``atol`` says how much rounding.
    """
    estimate, truth, se = np.broadcast_arrays(np.asarray(estimate, dtype=np.float64),
                                              np.asarray(truth, dtype=np.float64),
                                              np.asarray(se, dtype=np.float64))
    assert np.all(se >= 0) and np.all(np.isfinite(se)), "standard errors must be finite, >= 0"
    dev = np.abs(estimate - truth)
    bad = ~(dev <= k * se + atol)
    if bad.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(se > 0, dev / se, np.inf)
        i = np.unravel_index(np.argmax(np.where(bad, z, -1.0)), dev.shape)
        raise AssertionError(
            f"{int(bad.sum())} of {bad.size} estimates beyond {k} standard errors "
            f"(+ atol {atol:g}); worst at {tuple(int(j) for j in i)}: estimate "
            f"{estimate[i]!r}, truth {truth[i]!r}, se {se[i]!r} ({z[i]:.1f} se)")


@pytest.fixture
def assert_within_k_se():
    """The shared standard-error check (see ``_assert_within_k_se``)."""
    return _assert_within_k_se


@pytest.fixture
def mean_and_se():
    """``(mean, standard error)`` of iid samples along ``axis``: the sample
    mean and the sample standard deviation (ddof=1) over √n."""
    def mean_and_se(samples, axis=-1):
        samples = np.asarray(samples, dtype=np.float64)
        n = samples.shape[axis]
        return samples.mean(axis=axis), samples.std(axis=axis, ddof=1) / np.sqrt(n)

    return mean_and_se


@pytest.fixture
def kernel_mse():
    """Mean squared error of a random-feature kernel estimate Φ(X)Φ(X)ᵀ over
    the distinct pairs of X, averaged over independent maps.

    ``kernel_mse(make_map, X, K, seeds)`` fits ``make_map(seed)`` on X for
    each seed and compares with the exact kernel matrix K.
    """
    def kernel_mse(make_map, X, K, seeds):
        iu = np.triu_indices(X.shape[0], 1)
        out = []
        for seed in seeds:
            Phi = make_map(seed).fit_transform(X)
            K_hat = Phi @ Phi.T
            K_hat = K_hat.toarray() if hasattr(K_hat, "toarray") else K_hat
            out.append(np.mean((K_hat - K)[iu] ** 2))
        return float(np.mean(out))

    return kernel_mse
