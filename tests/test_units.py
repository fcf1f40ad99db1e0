"""The units of X do not matter: every estimator whose automatic choices are
made in the data's own scale gives the same predictions, bit for bit, for X
measured in other units -- X scaled by a power of two, from 2^-300 to 2^300
(about 1e±90), at its default parameters.

Multiplying by a power of two is exact in floating point, and so is every
step of a scale-equivariant computation on the scaled numbers (the lifetime
scales inversely, split times by the inverse and cuts by the factor), so
anything short of equality -- a tolerance or threshold in absolute units, an
overflow of a power of the extents -- is a defect a user with raw data would
meet.  (The SSGP's hyperparameter bounds are absolute by design, scikit-learn's,
and it warns; it is not tested here.)
"""
import warnings

import numpy as np
import pytest

import mondrian as M

_rng = np.random.default_rng(11)
X = _rng.standard_normal((150, 3))
Y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * _rng.standard_normal(150)
LABELS = (Y > np.median(Y)).astype(np.int64)
X_TEST = _rng.standard_normal((40, 3))
SCALES = (2.0**-300, 2.0**-40, 2.0**40, 2.0**300)


def _regression_outputs(model, X_test):
    if isinstance(model, M.MondrianForestRegressor):
        mean, std = model.predict(X_test, return_std=True)
        return [mean, std]
    if isinstance(model, M.DebiasedMondrianForestRegressor):
        mean, std, ci = model.predict(X_test, return_std=True, return_ci=True)
        return [mean, std, ci]
    return [model.predict(X_test)]


REGRESSORS = {
    "MondrianKernelRidgeCV": lambda: M.MondrianKernelRidgeCV(random_state=0),
    "MondrianKernelRidge": lambda: M.MondrianKernelRidge(random_state=0),
    "MondrianForestRegressor": lambda: M.MondrianForestRegressor(random_state=0),
    "MondrianForestRegressor(aggregation)": lambda: M.MondrianForestRegressor(
        random_state=0, aggregation=True),
    "DebiasedMondrianForestRegressor": lambda: M.DebiasedMondrianForestRegressor(
        random_state=0),
}
CLASSIFIERS = {
    "MondrianKernelClassifierCV": lambda: M.MondrianKernelClassifierCV(random_state=0),
    "MondrianForestClassifier": lambda: M.MondrianForestClassifier(random_state=0),
    "MondrianForestClassifier(aggregation)": lambda: M.MondrianForestClassifier(
        random_state=0, aggregation=True),
    "MondrianSGDClassifier": lambda: M.MondrianSGDClassifier(random_state=0),
}


def _fit_quietly(model, X_fit, y):
    with warnings.catch_warnings():
        # The same warnings (e.g. a selection at an edge) at every scale; the
        # test is about the numbers.
        warnings.simplefilter("ignore")
        return model.fit(X_fit, y)


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_regressors_do_not_depend_on_the_units_of_x(name):
    make = REGRESSORS[name]
    reference = _regression_outputs(_fit_quietly(make(), X, Y), X_TEST)
    assert all(np.all(np.isfinite(out)) for out in reference)
    for c in SCALES:
        outputs = _regression_outputs(_fit_quietly(make(), X * c, Y), X_TEST * c)
        for got, want in zip(outputs, reference):
            np.testing.assert_array_equal(got, want, err_msg=f"{name}, X scaled by {c:g}")


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_classifiers_do_not_depend_on_the_units_of_x(name):
    make = CLASSIFIERS[name]
    model = _fit_quietly(make(), X, LABELS)
    reference = model.decision_function(X_TEST) if not hasattr(model, "predict_proba") \
        else model.predict_proba(X_TEST)
    assert np.all(np.isfinite(reference))
    for c in SCALES:
        model = _fit_quietly(make(), X * c, LABELS)
        got = model.decision_function(X_TEST * c) if not hasattr(model, "predict_proba") \
            else model.predict_proba(X_TEST * c)
        np.testing.assert_array_equal(got, reference, err_msg=f"{name}, X scaled by {c:g}")


def test_features_do_not_depend_on_the_units_of_x():
    # lifetime='auto' is 1/(median l1 distance): it scales inversely with X,
    # so the cells -- and every feature of every point -- are the same.
    reference = M.MondrianFeatures(n_trees=20, random_state=0).fit(X).transform(X_TEST)
    for c in SCALES:
        got = M.MondrianFeatures(n_trees=20, random_state=0).fit(X * c).transform(X_TEST * c)
        assert (got != reference).nnz == 0, f"X scaled by {c:g}"


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_regressors_scale_with_the_units_of_y(name):
    # Targets in other units (a power of two): every prediction, standard
    # deviation and interval end scales by the same factor, exactly.
    make = REGRESSORS[name]
    reference = _regression_outputs(_fit_quietly(make(), X, Y), X_TEST)
    for c in (2.0**-200, 2.0**-30, 2.0**30, 2.0**200):
        outputs = _regression_outputs(_fit_quietly(make(), X, Y * c), X_TEST)
        for got, want in zip(outputs, reference):
            np.testing.assert_array_equal(got, want * c, err_msg=f"{name}, y scaled by {c:g}")


@pytest.mark.parametrize("name", sorted(REGRESSORS) + sorted(CLASSIFIERS))
def test_a_constant_input_changes_nothing(name):
    # A column with one value has extent 0: no cut ever falls in it, it adds
    # nothing to an l1 distance, and the dimension draws skip it (a draw
    # r·Σ extents lands in the same dimension), so the trees, the selection
    # and the predictions at points with that value are the same, bit for bit.
    make = {**REGRESSORS, **CLASSIFIERS}[name]
    y = Y if name in REGRESSORS else LABELS

    def with_constant(A):
        return np.insert(A, 1, 3.5, axis=1)

    def outputs(model, A):
        if name in REGRESSORS:
            return _regression_outputs(model, A)
        return [model.predict_proba(A) if hasattr(model, "predict_proba")
                else model.decision_function(A)]

    reference = outputs(_fit_quietly(make(), X, y), X_TEST)
    got = outputs(_fit_quietly(make(), with_constant(X), y), with_constant(X_TEST))
    for a, b in zip(got, reference):
        np.testing.assert_array_equal(a, b)
