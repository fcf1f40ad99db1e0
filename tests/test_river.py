"""The river adapters (mondrian.river): river's own estimator checks, and a
prequential comparison on one of river's bundled datasets.  Skipped when
river (an optional dependency) is not installed."""
import pytest

river = pytest.importorskip("river")

from river import checks, datasets, evaluate, linear_model, metrics, preprocessing  # noqa: E402

from mondrian.river import (MondrianFeaturesTransformer, MondrianKernelRidgeRegressor,  # noqa: E402
                            MondrianSGDClassifier)


@pytest.mark.parametrize("cls", [MondrianKernelRidgeRegressor, MondrianFeaturesTransformer,
                                 MondrianSGDClassifier])
def test_river_estimator_checks(cls):
    for params in cls._unit_test_params():
        checks.check_estimator(cls(**params))


def test_regressor_beats_linear_regression_on_trump_approval():
    """Progressive validation MAE on river's TrumpApproval (1001 points,
    standardised): the kernel model, learning exactly online, fits the
    non-linear target better than river's linear regression (1.31 against
    about 0.71 with seed 0)."""
    def score(model):
        pipeline = preprocessing.StandardScaler() | model
        return evaluate.progressive_val_score(datasets.TrumpApproval(), pipeline,
                                              metrics.MAE()).get()

    linear = score(linear_model.LinearRegression())
    mondrian = score(MondrianKernelRidgeRegressor(lifetime=0.5, seed=0))
    assert mondrian < 0.75 * linear


def test_transformer_features_feed_a_river_linear_model():
    model = MondrianFeaturesTransformer(n_trees=10, lifetime=0.5, seed=0)
    x = {"a": 0.3, "b": -1.0}
    assert model.transform_one(x) == {}
    model.learn_one(x)
    model.learn_one({"a": 1.3, "b": 2.0})
    phi = model.transform_one(x)
    assert len(phi) == 10 and all(v == pytest.approx(10 ** -0.5) for v in phi.values())
    # A missing feature takes the running mean; an unknown one is ignored.
    assert model.transform_one({"a": 0.3, "c": 5.0}) == model.transform_one({"a": 0.3, "b": 0.5})


def test_classifier_tracks_new_labels_and_learns_phishing():
    """Labels appear while learning; on river's Phishing data (1250 points,
    standardised) the progressive accuracy is well above the majority
    class's 56 % (about 88 % with seed 0)."""
    model = MondrianSGDClassifier(n_trees=10, seed=0)
    assert model.predict_proba_one({"a": 1.0}) == {}
    model.learn_one({"a": 0.0}, "x")
    assert model.predict_proba_one({"a": 0.0}) == {"x": 1.0}
    model.learn_one({"a": 1.0}, "y")
    model.learn_one({"a": 2.0}, "z")
    proba = model.predict_proba_one({"a": 2.0})
    assert set(proba) == {"x", "y", "z"} and sum(proba.values()) == pytest.approx(1.0)
    pipeline = preprocessing.StandardScaler() | MondrianSGDClassifier(seed=0)
    accuracy = evaluate.progressive_val_score(datasets.Phishing(), pipeline,
                                              metrics.Accuracy()).get()
    assert accuracy > 0.8
