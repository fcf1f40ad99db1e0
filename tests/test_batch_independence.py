"""A point's prediction does not depend on the other points predicted with
it: predicting rows in another order permutes the predictions, bit for bit,
and predicting them one at a time gives the batch's numbers (the C kernels
sum every row in a fixed order, whatever the blocking and the threads).
The SSGP's one-row predictions go through BLAS matrix-vector products
instead of matrix products, so they agree to rounding there.
"""
import warnings

import numpy as np
import pytest

import mondrian as M
from mondrian.gp import SparseSpectrumGPRegressor

_rng = np.random.default_rng(21)
X = _rng.standard_normal((200, 3))
Y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * _rng.standard_normal(200)
# Enough test rows for the kernels' blocks and both threads; some far outside.
X_TEST = np.vstack([_rng.standard_normal((3000, 3)), 10.0 * _rng.standard_normal((40, 3))])
PERM = _rng.permutation(X_TEST.shape[0])

MODELS = {
    "MondrianKernelRidgeCV": (lambda: M.MondrianKernelRidgeCV(random_state=0), "predict"),
    "MondrianForestRegressor": (lambda: M.MondrianForestRegressor(random_state=0), "std"),
    "MondrianForestRegressor(aggregation)": (
        lambda: M.MondrianForestRegressor(random_state=0, aggregation=True), "std"),
    "DebiasedMondrianForestRegressor": (
        lambda: M.DebiasedMondrianForestRegressor(random_state=0), "ci"),
    "SparseSpectrumGPRegressor": (lambda: SparseSpectrumGPRegressor(random_state=0), "std"),
    "MondrianKernelClassifierCV": (lambda: M.MondrianKernelClassifierCV(random_state=0),
                                   "proba"),
    "MondrianForestClassifier": (lambda: M.MondrianForestClassifier(random_state=0), "proba"),
    "MondrianFeatures": (lambda: M.MondrianFeatures(n_trees=30, random_state=0), "transform"),
}


def _outputs(model, kind, A):
    if kind == "predict":
        return [model.predict(A)]
    if kind == "std":
        return list(model.predict(A, return_std=True))
    if kind == "ci":
        return list(model.predict(A, return_std=True, return_ci=True))
    if kind == "proba":
        return [model.predict_proba(A)]
    return [model.transform(A).toarray()]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_predictions_do_not_depend_on_the_other_rows(name):
    make, kind = MODELS[name]
    y = (Y > 0).astype(np.int64) if kind == "proba" else Y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make().fit(X) if kind == "transform" else make().fit(X, y)
    batch = _outputs(model, kind, X_TEST)
    for got, want in zip(_outputs(model, kind, X_TEST[PERM]), batch):
        np.testing.assert_array_equal(got, want[PERM])
    rows = np.r_[0:20, 3000:3010]          # inside and far outside the data
    single = [np.concatenate(parts) for parts in
              zip(*(_outputs(model, kind, X_TEST[i:i + 1]) for i in rows))]
    for got, want in zip(single, batch):
        if name == "SparseSpectrumGPRegressor":
            np.testing.assert_allclose(got, want[rows], rtol=1e-12, atol=1e-12)
        else:
            np.testing.assert_array_equal(got, want[rows])
