"""Bad input across every public estimator, as a table (issue 10).

Each row is one bad input: the estimator (built small, with a fixed seed),
the bad parameters or the bad call, the exception type and a pattern the
message must contain -- the name of the argument at fault.  For every row
the test also checks that

* an estimator fitted before the bad call gives exactly the same output
  afterwards (validation happens before any fitted attribute changes), and
* the estimator is still usable: with its parameters restored it fits
  good data and gives that same output again (fixed seed).
"""
import numpy as np
import pytest
import scipy.sparse as sp

from mondrian import (MondrianFeatures, MondrianKernelClassifierCV, MondrianKernelRidge,
                      MondrianKernelRidgeCV, MondrianSGDClassifier, RandomBinningFeatures,
                      RandomFourierFeatures, RandomMaclaurinFeatures, laplace_kernel)

_rng = np.random.default_rng(7)
X = _rng.random((30, 3))
Y = X.sum(axis=1)
C = (Y > np.median(Y)).astype(np.int64)

FACTORIES = {
    "MondrianFeatures": lambda: MondrianFeatures(n_trees=5, lifetime=2.0, random_state=0),
    "RandomBinningFeatures": lambda: RandomBinningFeatures(lifetime=2.0, n_grids=5,
                                                           random_state=0),
    "RandomFourierFeatures": lambda: RandomFourierFeatures(n_components=5, random_state=0),
    "RandomMaclaurinFeatures": lambda: RandomMaclaurinFeatures(n_components=5, random_state=0),
    "MondrianKernelRidge": lambda: MondrianKernelRidge(n_trees=5, lifetime=2.0, random_state=0),
    "MondrianKernelRidgeCV": lambda: MondrianKernelRidgeCV(
        n_trees=5, max_lifetime=2.0, alphas=[0.1, 1.0], solver="cholesky", n_lifetimes=3,
        random_state=0),
    "MondrianKernelClassifierCV": lambda: MondrianKernelClassifierCV(
        n_trees=5, max_lifetime=2.0, n_lifetimes=3, n_epochs=1, random_state=0),
}
FACTORIES["MondrianSGDClassifier"] = lambda: MondrianSGDClassifier(n_trees=5, lifetime=2.0,
                                                                   random_state=0)
SUPERVISED = {"MondrianKernelRidge": Y, "MondrianKernelRidgeCV": Y,
              "MondrianKernelClassifierCV": C, "MondrianSGDClassifier": C}


def _fit(est, name, X_fit=X, **kw):
    y = SUPERVISED.get(name)
    return est.fit(X_fit, **kw) if y is None else est.fit(X_fit, y, **kw)


def _output(est, name):
    if name in SUPERVISED:
        return est.predict(X)
    out = est.transform(X)
    return out.toarray() if sp.issparse(out) else out


def _nan_at(a, i, j):
    a = a.copy()
    a[i, j] = np.nan
    return a


# (estimator, bad parameters, bad call or None (= fit on the good data), exception, pattern)
CASES = [
    # MondrianFeatures: parameters
    ("MondrianFeatures", {"n_trees": 0}, None, ValueError, "n_trees"),
    ("MondrianFeatures", {"n_trees": 2.5}, None, TypeError, "n_trees"),
    ("MondrianFeatures", {"n_trees": 10**13}, None, MemoryError, "n_trees"),   # issue 10.2
    ("MondrianFeatures", {"lifetime": -1.0}, None, ValueError, "lifetime"),
    ("MondrianFeatures", {"lifetime": np.nan}, None, ValueError, "lifetime"),
    ("MondrianFeatures", {"lifetime": np.inf}, None, ValueError, "lifetime"),
    ("MondrianFeatures", {"n_jobs": 0}, None, ValueError, "n_jobs"),
    ("MondrianFeatures", {"n_jobs": 2**40}, None, ValueError, "n_jobs"),        # issue 10.1
    ("MondrianFeatures", {"n_jobs": -2**40}, None, ValueError, "n_jobs"),
    ("MondrianFeatures", {"n_jobs": "all"}, None, TypeError, "n_jobs"),
    ("MondrianFeatures", {"random_state": "seed"}, None, TypeError, "random_state"),
    # MondrianFeatures: data
    ("MondrianFeatures", {}, lambda e: e.fit(_nan_at(X, 2, 1)), ValueError, "X contains NaN"),
    ("MondrianFeatures", {}, lambda e: e.fit(np.where(X > 0.5, np.inf, X)), ValueError,
     "X contains infinity"),
    ("MondrianFeatures", {}, lambda e: e.fit(np.zeros((0, 3))), ValueError, "X: .*0 sample"),
    ("MondrianFeatures", {}, lambda e: e.fit(np.zeros((4, 0))), ValueError, "X: .*0 feature"),
    ("MondrianFeatures", {}, lambda e: e.fit(X[:, 0]), ValueError, "X: Expected 2D"),
    ("MondrianFeatures", {}, lambda e: e.fit(np.full((3, 2), "a")), ValueError,
     "X: could not convert"),
    ("MondrianFeatures", {}, lambda e: e.fit(sp.csr_array(X)), TypeError, "sparse input X"),
    ("MondrianFeatures", {}, lambda e: e.fit(np.array([[1e308, 0.0], [-1e308, 1.0]])),
     ValueError, "X: the feature ranges overflow"),
    # MondrianFeatures: calls on the fitted estimator
    ("MondrianFeatures", {}, lambda e: e.transform(np.zeros((2, 4))), ValueError,
     "X has 4 features"),
    ("MondrianFeatures", {}, lambda e: e.transform(X, lifetime=3.0), ValueError,
     "lifetime=3.0 exceeds the fitted lifetime"),
    ("MondrianFeatures", {}, lambda e: e.extend(np.nan), ValueError, "lifetime"),
    ("MondrianFeatures", {}, lambda e: e.extend(1.0), ValueError, "lifetime=1.0 is below"),
    ("MondrianFeatures", {}, lambda e: e.gram(lifetime=-1.0), ValueError, "lifetime"),
    # RandomBinningFeatures
    ("RandomBinningFeatures", {"lifetime": 0.0}, None, ValueError, "lifetime"),
    ("RandomBinningFeatures", {"lifetime": 5e-324}, None, ValueError,
     "lifetime=5e-324 is so small"),                                          # issue 10.4
    ("RandomBinningFeatures", {"n_grids": 0}, None, ValueError, "n_grids"),
    ("RandomBinningFeatures", {"n_jobs": 10**12 * 2**10}, None, ValueError, "n_jobs"),
    ("RandomBinningFeatures", {}, lambda e: e.transform(_nan_at(X, 0, 0)), ValueError,
     "X contains NaN"),
    # RandomFourierFeatures
    ("RandomFourierFeatures", {"kernel": "rbf"}, None, ValueError, "kernel"),
    ("RandomFourierFeatures", {"lifetime": 1e308}, None, ValueError,
     "lifetime is so large"),                                                 # issue 10.3
    ("RandomFourierFeatures", {"kernel": "gaussian", "length_scale": 1e-320}, None, ValueError,
     "length_scale is so small"),
    ("RandomFourierFeatures", {"kernel": "gaussian", "length_scale": [1.0, 2.0]}, None,
     ValueError, "length_scale"),
    ("RandomFourierFeatures", {"n_components": 0}, None, ValueError, "n_components"),
    ("RandomFourierFeatures", {}, lambda e: e.transform(np.full((2, 3), 1.7e308)), ValueError,
     "X: the projections"),
    # RandomMaclaurinFeatures
    ("RandomMaclaurinFeatures", {"n_components": -1}, None, ValueError, "n_components"),
    ("RandomMaclaurinFeatures", {"p": 0.0}, None, ValueError, "p must be"),
    # MondrianKernelRidge
    ("MondrianKernelRidge", {"alpha": 0.0}, None, ValueError, "alpha"),
    ("MondrianKernelRidge", {"solver": "lsqr"}, None, ValueError, "solver"),
    ("MondrianKernelRidge", {"n_jobs": 2**40}, None, ValueError, "n_jobs"),
    ("MondrianKernelRidge", {}, lambda e: e.fit(X, Y[:-1]), ValueError, "X, y: .*inconsistent"),
    ("MondrianKernelRidge", {}, lambda e: e.fit(X, _nan_at(Y[:, None], 3, 0)[:, 0]),
     ValueError, "y contains NaN"),
    ("MondrianKernelRidge", {}, lambda e: e.predict(np.zeros((2, 2))), ValueError,
     "X has 2 features"),
    # MondrianKernelRidgeCV
    ("MondrianKernelRidgeCV", {"max_lifetime": -1.0}, None, ValueError, "max_lifetime"),
    ("MondrianKernelRidgeCV", {"alphas": [0.1, -1.0]}, None, ValueError, "alphas"),
    ("MondrianKernelRidgeCV", {"selection": "bic"}, None, ValueError, "selection"),
    ("MondrianKernelRidgeCV", {"n_jobs": 0}, None, ValueError, "n_jobs"),
    ("MondrianKernelRidgeCV", {}, lambda e: e.fit(X, Y * 1e300), ValueError,
     "y is too large"),                                                       # issue 10.3
    ("MondrianKernelRidgeCV", {}, lambda e: e.fit(X, Y, X_val=X[:5], y_val=Y[:5] * 1e300),
     ValueError, "y_val is too large"),
    ("MondrianKernelRidgeCV", {}, lambda e: e.fit(X, Y, X_val=X[:5]), ValueError,
     "X_val and y_val"),
    ("MondrianKernelRidgeCV", {}, lambda e: e.fit(X, Y, X_val=X[:5, :2], y_val=Y[:5]),
     ValueError, "X_val has 2 features"),
    # MondrianKernelClassifierCV
    ("MondrianKernelClassifierCV", {"learning_rate": 1e6}, None, ValueError,
     "learning_rate"),                                                        # issue 10.3
    ("MondrianKernelClassifierCV", {"loss": "squared"}, None, ValueError, "loss"),
    ("MondrianKernelClassifierCV", {"n_epochs": -1}, None, ValueError, "n_epochs"),
    ("MondrianKernelClassifierCV", {"n_jobs": 1.0}, None, TypeError, "n_jobs"),
    ("MondrianKernelClassifierCV", {}, lambda e: e.fit(X, C, X_val=X[:3], y_val=[5, 5, 5]),
     ValueError, "y_val"),
    ("MondrianKernelClassifierCV", {}, lambda e: e.decision_function(X[:, :2]), ValueError,
     "X has 2 features"),
    ("MondrianKernelClassifierCV", {}, lambda e: e.fit(X, np.zeros(X.shape[0])), ValueError,
     "y: MondrianKernelClassifierCV needs at least 2 classes"),
    # Online learning (issue 14): new parameters and partial_fit
    ("MondrianFeatures", {"store_points": 1}, None, TypeError, "store_points"),
    ("MondrianFeatures", {"max_nodes": 0}, None, ValueError, "max_nodes"),
    ("MondrianFeatures", {}, lambda e: e.partial_fit(_nan_at(X, 1, 1)), ValueError,
     "X contains NaN"),
    ("MondrianFeatures", {}, lambda e: e.partial_fit(np.zeros((2, 4))), ValueError, "features"),
    ("MondrianKernelRidge", {"store_points": "no"}, None, TypeError, "store_points"),
    ("MondrianKernelRidge", {}, lambda e: e.partial_fit(X, None), ValueError, "requires y"),
    ("MondrianKernelRidge", {}, lambda e: e.partial_fit(_nan_at(X, 0, 0), Y), ValueError,
     "X contains NaN"),
    ("MondrianKernelRidge", {}, lambda e: e.partial_fit(X[:, :2], Y), ValueError, "features"),
    ("MondrianSGDClassifier", {"loss": "squared"}, None, ValueError, "loss"),
    ("MondrianSGDClassifier", {"alpha": 0.0}, None, ValueError, "alpha"),
    ("MondrianSGDClassifier", {"eta0": -1.0}, None, ValueError, "eta0"),
    ("MondrianSGDClassifier", {"max_iter": 0}, None, ValueError, "max_iter"),
    ("MondrianSGDClassifier", {}, lambda e: e.fit(X, np.zeros(30)), ValueError, "2 classes"),
    ("MondrianSGDClassifier", {}, lambda e: e.partial_fit(X, C + 5), ValueError,
     "not among the classes"),
    ("MondrianSGDClassifier", {}, lambda e: e.partial_fit(_nan_at(X, 0, 2), C), ValueError,
     "X contains NaN"),
]


def _case_id(case):
    name, params, call, exc, _ = case
    what = ",".join(f"{k}={v!r}"[:24] for k, v in params.items()) or "call"
    return f"{name}-{what}"


def test_the_table_covers_every_estimator_and_enough_inputs():
    assert {c[0] for c in CASES} == set(FACTORIES)
    assert len(CASES) >= 40


# The small CV grid may select an end of alphas or of the lifetimes, which
# warns (not the subject here).
@pytest.mark.filterwarnings("ignore:the selected alpha:UserWarning")
@pytest.mark.filterwarnings("ignore:the validation error still falls:UserWarning")
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_bad_input_is_a_clear_error_and_changes_nothing(case):
    name, params, call, exc, pattern = case
    est = _fit(FACTORIES[name](), name)
    before = _output(est, name)
    good = {k: v for k, v in est.get_params(deep=False).items() if k in params}
    est.set_params(**params)
    with pytest.raises(exc, match=pattern):
        _fit(est, name) if call is None else call(est)
    # The fitted state is untouched by the failed call (the parameters are
    # restored first: transform reads n_jobs) ...
    est.set_params(**good)
    np.testing.assert_array_equal(_output(est, name), before)
    # ... and the estimator is still usable (same seed: the same fit).
    np.testing.assert_array_equal(_output(_fit(est, name), name), before)


@pytest.mark.parametrize("call, exc, pattern", [
    (lambda: laplace_kernel(X, lifetime=-1.0), ValueError, "lifetime"),
    (lambda: laplace_kernel(X, np.zeros((2, 4))), ValueError, "features"),
    (lambda: laplace_kernel(_nan_at(X, 0, 0)), ValueError, "NaN"),
    (lambda: laplace_kernel(sp.csr_array(X)), TypeError, "sparse"),
])
def test_bad_kernel_function_input(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()
