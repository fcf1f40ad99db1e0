"""width_search: doubling/halving then bisection over lifetimes (paper Sec. 8.2)."""
import importlib
import math
import types

import numpy as np
import pytest

from mondrian import RandomBinningFeatures, RandomFourierFeatures
from mondrian.width_search import ridge_scorer, width_search


class FakeMap:
    """A 'feature map' that records its lifetime; the scorer reads it back."""

    def __init__(self, lifetime):
        self.lifetime = lifetime

    def fit_transform(self, X):
        return self.lifetime

    def transform(self, X):
        return self.lifetime


def quadratic_in_log(best):
    """Validation error (log λ - log best)², minimal at ``best``."""
    return lambda lam_tr, y_tr, lam_val, y_val: (math.log(lam_tr) - math.log(best)) ** 2


@pytest.mark.parametrize("best", [1e-6, 0.3, 1.0, 40.0])
def test_brackets_then_bisects(best):
    res = width_search(FakeMap, quadratic_in_log(best), None, None, None, None,
                       lifetime0=1.0, n_bisections=12)
    lams = np.array(res.lifetimes)
    expand = lams[np.array(res.phases) == "expand"]
    # Expansion moves by factors of 2 from λ₀ = 1 towards the optimum.
    assert np.all(np.isin(np.log2(expand), np.arange(-40, 41)))
    # The final best is within a small factor of the optimum (bisection in log space).
    assert abs(math.log(res.best_lifetime / best)) < 0.02
    assert res.lifetimes[0] == 1.0 and res.phases[0] == "start"
    # Every recorded error is the scorer's value at its lifetime, and the
    # best is the lowest of them.
    assert res.errors == [(math.log(lam) - math.log(best)) ** 2 for lam in res.lifetimes]
    assert res.best_error == min(res.errors)
    assert res.errors[res.lifetimes.index(res.best_lifetime)] == res.best_error


def test_exact_trajectory():
    """Optimum at 40 from λ₀ = 1: doubling until 64 brackets the best (32), then
    each bisection round evaluates the geometric midpoints around the best."""
    res = width_search(FakeMap, quadratic_in_log(40.0), None, None, None, None,
                       n_bisections=2)
    # Round 1 around 32 (neighbours 16, 64): 2^4.5, 2^5.5; the new best is
    # 2^5.5 ≈ 45.3 (|log(45.3/40)| < |log(32/40)|); round 2 around it: 2^5.25, 2^5.75.
    expected = [0, 1, 2, 3, 4, 5, 6, 4.5, 5.5, 5.25, 5.75]
    np.testing.assert_allclose(np.log2(res.lifetimes), expected, rtol=0, atol=1e-12)
    assert res.phases == ["start"] + 6 * ["expand"] + 4 * ["bisect"]
    assert res.best_lifetime == res.lifetimes[9]


def test_elapsed_is_measured_from_the_start(monkeypatch):
    """``elapsed[i]`` is the clock at the end of evaluation i minus the clock at
    the start: with a fake clock that each evaluation advances by its
    lifetime, it is the running sum of the lifetimes."""
    clock = [1000.0]
    module = importlib.import_module("mondrian.width_search")
    monkeypatch.setattr(module, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))

    def timed(lam_tr, y_tr, lam_val, y_val):
        clock[0] += lam_tr
        return (math.log(lam_tr) - math.log(5.0)) ** 2

    res = width_search(FakeMap, timed, None, None, None, None, n_bisections=2)
    np.testing.assert_allclose(res.elapsed, np.cumsum(res.lifetimes), rtol=1e-12)
    # The running best error (Fig. 8's curve) at each evaluation.
    np.testing.assert_array_equal(res.best_so_far(),
                                  [min(res.errors[:i + 1]) for i in range(len(res.errors))])
    assert res.trajectory() == list(zip(res.lifetimes, res.errors, res.elapsed))


def test_direction_of_expansion():
    res = width_search(FakeMap, quadratic_in_log(100.0), None, None, None, None,
                       n_bisections=0)
    assert res.lifetimes == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]
    res = width_search(FakeMap, quadratic_in_log(0.1), None, None, None, None, n_bisections=0)
    assert res.lifetimes == [1.0, 2.0, 0.5, 0.25, 0.125, 0.0625]


def test_plateau_is_crossed_in_both_directions():
    # Raw CPU data at lambda ~ 1: every width gives the constant predictor (a flat error
    # with noise), and the optimum is 2^-20 away.  A noisy interior "best" on the plateau
    # must not count as a bracket.
    def plateau(lam_tr, y_tr, lam_val, y_val):
        noise = 1e-4 * math.sin(1e3 * math.log(lam_tr))
        if lam_tr > 1e-3:
            return 24.0 + noise
        return 6.0 + (math.log2(lam_tr) + 20.0) ** 2 / 10 + noise

    res = width_search(FakeMap, plateau, None, None, None, None, n_bisections=2)
    assert abs(math.log2(res.best_lifetime) + 20.0) <= 1.0
    expand = np.array(res.lifetimes)[np.array(res.phases) == "expand"]
    assert expand.max() > 1.0  # the plateau was also explored upwards
    assert res.best_error < 7.0


def test_with_real_maps(rng):
    """On a smooth 1-d target, Fourier and binning searches find a useful lifetime."""
    X = rng.random((300, 1))
    y = np.sin(6 * X[:, 0]) + 3
    for make in (lambda lam: RandomFourierFeatures(lifetime=lam, n_components=100, random_state=0),
                 lambda lam: RandomBinningFeatures(lifetime=lam, n_grids=100, random_state=0)):
        res = width_search(make, ridge_scorer(1e-3), X[:200], y[:200], X[200:], y[200:],
                           n_bisections=3)
        # The mean predictor's error is ~24 %; a fitted kernel width beats it by far.
        assert res.best_error < 3.0
        assert min(res.lifetimes) < res.best_lifetime < max(res.lifetimes)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(lifetime0=0.0), ValueError, "lifetime0"),
    (dict(max_expansions=-1), ValueError, "max_expansions"),
    (dict(n_bisections=1.5), TypeError, "n_bisections"),
    (dict(rtol=-0.1), ValueError, "rtol"),
])
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        width_search(FakeMap, quadratic_in_log(1.0), None, None, None, None, **kwargs)


def test_bad_callables():
    with pytest.raises(TypeError, match="make_map"):
        width_search(None, quadratic_in_log(1.0), None, None, None, None)
    with pytest.raises(TypeError, match="score"):
        width_search(FakeMap, "mse", None, None, None, None)
    with pytest.raises(ValueError, match="NaN"):
        width_search(FakeMap, lambda *a: float("nan"), None, None, None, None)
    with pytest.raises(ValueError, match="alpha"):
        ridge_scorer(0.0)
