"""copy.copy of fitted estimators whose partial_fit or extend change the
trees in place: the copy shares the trees until either side changes them
(``copy_sharing_trees``), and neither side can change the other."""
import copy

import numpy as np
import pytest

from mondrian import (MondrianFeatures, MondrianForestClassifier, MondrianForestRegressor,
                      MondrianKernelRidge, MondrianSGDClassifier)

X = np.random.default_rng(0).random((200, 3))
Y_REG = X[:, 0]
Y_CLS = (X[:, 0] > 0.5).astype(int)
ESTIMATORS = [
    (lambda: MondrianForestRegressor(n_trees=5, lifetime=2.0, random_state=0), Y_REG),
    (lambda: MondrianForestRegressor(n_trees=5, lifetime=2.0, random_state=0,
                                     aggregation=True), Y_REG),
    (lambda: MondrianForestClassifier(n_trees=5, lifetime=2.0, random_state=0), Y_CLS),
    (lambda: MondrianKernelRidge(n_trees=5, lifetime=2.0, random_state=0), Y_REG),
    (lambda: MondrianSGDClassifier(n_trees=5, lifetime=2.0, random_state=0), Y_CLS),
]


def _forest(model):
    return model.features_.forest_


@pytest.mark.parametrize("make, y", ESTIMATORS)
def test_partial_fit_of_one_copy_leaves_the_other_as_it_was(make, y):
    model = make().fit(X, y)
    before = model.predict(X[:50])
    twin = copy.copy(model)
    assert _forest(twin) is _forest(model)  # shared until one side changes it
    # Points outside the boxes: every tree gains cells.
    model.partial_fit(X[:10] * 3, y[:10])
    assert _forest(model) is not _forest(twin)
    assert _forest(model).n_points == 210 and _forest(twin).n_points == 200
    np.testing.assert_array_equal(twin.predict(X[:50]), before)
    # The copy continues the same random streams: the same insertion gives
    # the same estimator bit for bit.
    twin.partial_fit(X[:10] * 3, y[:10])
    np.testing.assert_array_equal(twin.predict(X[:50]), model.predict(X[:50]))


def test_features_copy_keeps_its_columns_under_partial_fit_and_extend():
    features = MondrianFeatures(5, 2.0, random_state=0).fit(X)
    twin = copy.copy(features)
    cells = features.n_cells_
    features.partial_fit(X[:10] * 3)
    assert features.n_cells_ > cells
    assert twin.n_cells_ == cells and twin.transform(X).shape[1] == cells
    assert len(twin.get_feature_names_out()) == cells
    twin.extend(3.0)
    assert features.lifetime_ == 2.0 and features.transform(X).shape[1] == features.n_cells_
