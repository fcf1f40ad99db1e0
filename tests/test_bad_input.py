"""Invalid input raises ValueError/TypeError naming the argument."""
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
    ({"lifetime": "1"}, TypeError, "lifetime"),
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
