"""scikit-learn's estimator checks: the API conventions, for free."""
from sklearn.utils.estimator_checks import parametrize_with_checks

from mondrian import (DebiasedMondrianForestRegressor, MondrianFeatures,
                      MondrianForestClassifier, MondrianForestRegressor, MondrianKernelRidge,
                      MondrianSGDClassifier)


@parametrize_with_checks([
    MondrianFeatures(n_trees=10, random_state=0),
    MondrianKernelRidge(n_trees=20, random_state=0),
    MondrianSGDClassifier(n_trees=20, random_state=0),
    MondrianFeatures(n_trees=10, random_state=0, rotation="uniform"),
    MondrianKernelRidge(n_trees=20, random_state=0, rotation="uniform"),
    MondrianForestRegressor(n_trees=10, random_state=0),
    MondrianForestClassifier(n_trees=10, random_state=0),
    MondrianForestRegressor(n_trees=10, random_state=0, aggregation=True),
    MondrianForestClassifier(n_trees=10, random_state=0, aggregation=True),
    DebiasedMondrianForestRegressor(n_trees=10, random_state=0),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)
