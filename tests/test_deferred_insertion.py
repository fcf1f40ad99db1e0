"""The forests' partial_fit keeps points aside and inserts them when the
fitted state is next read (mondrian/forest/estimators.py, ``_settle``).

The claim is exact: the trees, node statistics, AMF weights and predictions
are those of inserting every call's points at once, bit for bit.  Each test
compares three estimators fed the same stream: one read after every call
(each call's points inserted at once, as before the deferral), one never
read until the end (the points inserted in the fewest batches the
thresholds allow), and one given the whole stream in a single call.
"""
import copy
import pickle

import numpy as np
import pytest

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.forest import estimators as est_module

NODE_ARRAYS = ("node_offset", "parent", "left", "right", "feature", "threshold", "tau",
               "lower", "upper", "start", "end", "perm", "column_keys")


def _data(n, seed=0, d=3):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = np.sin(6 * X[:, 0]) + X[:, 1] + 0.3 * rng.normal(size=n)
    return X, y


def _make(kind, aggregation, **kw):
    if kind == "regression":
        return MondrianForestRegressor(n_trees=5, random_state=2, aggregation=aggregation,
                                       **kw)
    return MondrianForestClassifier(n_trees=5, random_state=2, aggregation=aggregation, **kw)


def _targets(kind, y):
    return y if kind == "regression" else np.digitize(y, np.quantile(y, [0.3, 0.7]))


def _assert_same(a, b, kind, aggregation, Xq):
    fa, fb = a.forest_, b.forest_
    for name in NODE_ARRAYS:
        np.testing.assert_array_equal(getattr(fa, name), getattr(fb, name), err_msg=name)
    np.testing.assert_array_equal(a._targets, b._targets)
    if aggregation:
        np.testing.assert_array_equal(a.amf_state_, b.amf_state_)
        assert a.step_ == b.step_
    elif kind == "regression":
        for name in ("node_count_", "node_sum_", "node_sumsq_"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    else:
        np.testing.assert_array_equal(a.node_counts_, b.node_counts_)
    if kind == "regression":
        for pa, pb in zip(a.predict(Xq, return_std=True), b.predict(Xq, return_std=True)):
            np.testing.assert_array_equal(pa, pb)
    else:
        np.testing.assert_array_equal(a.predict_proba(Xq), b.predict_proba(Xq))


@pytest.mark.parametrize("kind", ["regression", "classes"])
@pytest.mark.parametrize("aggregation", [False, True])
@pytest.mark.parametrize("extra", [{}, {"rotation": "uniform"}, {"max_nodes": 300}],
                         ids=["plain", "rotated", "capped"])
def test_deferred_stream_equals_immediate_insertion(kind, aggregation, extra):
    X, y = _data(426, seed=1)
    t = _targets(kind, y)
    Xq, _ = _data(40, seed=5)
    # Uneven calls (single points and batches) after 60 fitted points: the
    # waiting points cross the settle threshold (as many as the trees hold)
    # at 160 (in one merged chunk) and at 360 (in two: 140 and 60 points),
    # and the last 66 wait in four chunks (40, 20, 5, 1) until the read.
    cuts = [60, 61, 62, 70, 71, 100, 160, 300, 360, 400, 420, 425, 426]
    read, deferred, whole = (_make(kind, aggregation, **extra) for _ in range(3))
    for model in (read, deferred, whole):
        model.fit(X[:60], t[:60])
    for a, b in zip(cuts[:-1], cuts[1:]):
        read.partial_fit(X[a:b], t[a:b])
        read.forest_  # inserts this call's points now
        deferred.partial_fit(X[a:b], t[a:b])
    whole.partial_fit(X[60:], t[60:])
    assert deferred.__dict__["_features_"].forest_.n_points == 360
    assert [c[0].shape[0] for c in deferred.__dict__["_pending"]] == [40, 20, 5, 1]
    assert deferred.forest_.n_points == 426
    if "max_nodes" in extra:  # the cap was reached: points joined leaves
        assert np.diff(deferred.forest_.node_offset).max() == extra["max_nodes"] - 1
    _assert_same(read, deferred, kind, aggregation, Xq)
    _assert_same(read, whole, kind, aggregation, Xq)


def test_points_wait_until_read_or_threshold():
    """The trees take no point until the fitted state is read, or until as
    many wait as the trees hold; then every waiting point, in order."""
    X, y = _data(200, seed=2)
    model = MondrianForestRegressor(n_trees=3, random_state=0, aggregation=True)
    model.fit(X[:50], y[:50])
    raw = model.__dict__["_features_"].forest_  # without settling
    model.partial_fit(X[50:60], y[50:60])
    model.partial_fit(X[60:61], y[60:61])
    assert raw.n_points == 50
    model.predict(X[:3])
    assert model.__dict__["_features_"].forest_.n_points == 61
    # 49 waiting points: below the 61 the trees hold; the 61st settles.
    model.partial_fit(X[61:110], y[61:110])
    assert model.__dict__["_features_"].forest_.n_points == 61
    model.partial_fit(X[110:122], y[110:122])
    assert model.__dict__["_features_"].forest_.n_points == 122


def test_bytes_threshold_settles(monkeypatch):
    X, y = _data(100, seed=3)
    model = MondrianForestRegressor(n_trees=2, random_state=0).fit(X[:80], y[:80])
    # 4 rows x (3 features + the target) x 8 bytes = 128 bytes
    monkeypatch.setattr(est_module, "PENDING_BYTES", 128)
    model.partial_fit(X[80:83], y[80:83])
    assert model.__dict__["_features_"].forest_.n_points == 80
    model.partial_fit(X[83:84], y[83:84])
    assert model.__dict__["_features_"].forest_.n_points == 84


def test_waiting_points_are_copies():
    """Changing the caller's arrays after partial_fit changes nothing."""
    X, y = _data(120, seed=4)
    Xq, _ = _data(20, seed=6)
    a = MondrianForestRegressor(n_trees=3, random_state=1, aggregation=True).fit(X[:80], y[:80])
    b = copy.deepcopy(a)
    X2, y2 = X[80:].copy(), y[80:].copy()
    a.partial_fit(X2, y2)
    X2 += 5.0
    y2 *= -1.0
    b.partial_fit(X[80:], y[80:])
    np.testing.assert_array_equal(a.predict(Xq), b.predict(Xq))


def test_bad_points_are_rejected_at_the_call():
    X, y = _data(60, seed=5)
    model = MondrianForestRegressor(n_trees=2, random_state=0).fit(X[:50], y[:50])
    bad = X[50:52].copy()
    bad[0, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.partial_fit(bad, y[50:52])
    # a range that overflows with the fitted points (and the waiting ones)
    model.partial_fit(X[50:51] * 0 - 1e307, y[50:51])
    with pytest.raises(ValueError, match="overflow"):
        model.partial_fit(X[51:52] * 0 + 1e308, y[51:52])
    with pytest.raises(ValueError, match="features"):
        model.partial_fit(X[51:52, :2], y[51:52])
    # nothing of the rejected calls waits: one point joined
    assert model.forest_.n_points == 51


def test_fit_drops_waiting_points_and_pickle_keeps_them():
    X, y = _data(150, seed=6)
    Xq, _ = _data(10, seed=7)
    model = MondrianForestRegressor(n_trees=3, random_state=0, aggregation=True)
    model.fit(X[:100], y[:100])
    model.partial_fit(X[100:120], y[100:120])
    clone = pickle.loads(pickle.dumps(model))
    assert clone.__dict__["_features_"].forest_.n_points == 100  # still waiting
    np.testing.assert_array_equal(clone.predict(Xq), model.predict(Xq))
    assert model.forest_.n_points == 120
    assert clone.forest_.n_points == 120
    refit = copy.deepcopy(model)
    refit.partial_fit(X[120:], y[120:])
    refit.fit(X[:100], y[:100])
    np.testing.assert_array_equal(
        refit.predict(Xq),
        MondrianForestRegressor(n_trees=3, random_state=0, aggregation=True)
        .fit(X[:100], y[:100]).predict(Xq))


def test_target_forms_give_the_same_stream():
    """partial_fit's fast path for 1-d ndarray targets gives what the full
    validation gives for the other forms, and still rejects bad targets."""
    from sklearn.exceptions import DataConversionWarning
    X, y = _data(90, seed=8)
    y = np.round(3 * y)  # integral values: the int form is the same targets
    Xq, _ = _data(10, seed=9)
    preds = []
    for form in (lambda v: v, list, lambda v: v.astype(np.int64), lambda v: v[:, None]):
        model = MondrianForestRegressor(n_trees=2, random_state=0).fit(X[:60], y[:60])
        if np.ndim(form(y[:2])) == 2:
            with pytest.warns(DataConversionWarning):
                model.partial_fit(X[60:], form(y[60:]))
        else:
            model.partial_fit(X[60:], form(y[60:]))
        preds.append(model.predict(Xq))
    for p in preds[1:]:
        np.testing.assert_array_equal(p, preds[0])
    bad = y[60:62].copy()
    bad[1] = np.inf
    with pytest.raises(ValueError, match="infinity|inf"):
        model.partial_fit(X[60:62], bad)
    with pytest.raises(ValueError, match="inconsistent|samples"):
        model.partial_fit(X[60:62], y[60:63])


def test_shallow_copy_does_not_insert_the_waiting_points_twice():
    """A shallow copy shares the trees: it is taken after the waiting points
    are inserted, so that neither copy inserts them again."""
    X, y = _data(150, seed=10)
    model = MondrianForestRegressor(n_trees=3, random_state=0, aggregation=True)
    model.fit(X[:100], y[:100])
    model.partial_fit(X[100:120], y[100:120])
    shallow = copy.copy(model)
    assert shallow.forest_ is model.forest_
    assert shallow.forest_.n_points == 120
    model.predict(X[:2])
    assert model.forest_.n_points == 120
    np.testing.assert_array_equal(shallow.amf_state_, model.amf_state_)
