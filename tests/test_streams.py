"""The trees' streams spawned in bulk (mondrian._streams) are numpy's own
``Generator.spawn`` streams, bit for bit."""
import copy
import pickle

import numpy as np
import pytest

from mondrian._ext._forest import copy_bit_generator
from mondrian._streams import BULK_MIN, _bulk, spawn_bit_generators


def _pair(seed):
    """Two generators with the same seed sequence (entropy drawn once)."""
    a = np.random.default_rng(seed)
    entropy = a.bit_generator.seed_seq.entropy
    return a, np.random.default_rng(np.random.SeedSequence(entropy))


def _draws(g, k=6):
    """The next k raw draws of a copy of g (g is left as it was)."""
    return copy.deepcopy(g).random_raw(k)


def _same(ours, theirs):
    assert [type(g) for g in ours] == [type(g) for g in theirs]
    for g, h in zip(ours, theirs):
        np.testing.assert_array_equal(_draws(g), _draws(h))
    assert [g.seed_seq.spawn_key for g in ours] == [g.seed_seq.spawn_key for g in theirs]
    for g, h in zip(ours, theirs):
        np.testing.assert_array_equal(g.seed_seq.pool, h.seed_seq.pool)


@pytest.mark.parametrize("seed", [0, 5, 2**100 + 7, [1, 2, 3], None])
def test_bulk_spawn_is_numpys_spawn(seed):
    a, b = _pair(seed)
    for n in (BULK_MIN, 1000, 3):  # the parent's counter moves on as with spawn
        ours = spawn_bit_generators(a, n)
        _same(ours, [g.bit_generator for g in b.spawn(n)])
        assert (a.bit_generator.seed_seq.n_children_spawned ==
                b.bit_generator.seed_seq.n_children_spawned)
    # The draws themselves: those of a stream rebuilt by numpy from the
    # child's entropy and spawn key.
    g = ours[1]
    ref = np.random.PCG64(np.random.SeedSequence(g.seed_seq.entropy,
                                                 spawn_key=g.seed_seq.spawn_key))
    np.testing.assert_array_equal(g.random_raw(5), ref.random_raw(5))


def test_bulk_path_is_taken_and_children_spawn_like_numpys():
    a, b = _pair(11)
    kids = _bulk(a.bit_generator, 64)
    assert kids is not None  # the default generator takes the bulk path
    theirs = [g.bit_generator for g in b.spawn(64)]
    _same(kids, theirs)
    np.testing.assert_array_equal(kids[7].random_raw(9), theirs[7].random_raw(9))
    # Grandchildren: in bulk too, from a child's (restored) seed sequence.
    ga = spawn_bit_generators(np.random.Generator(kids[3]), 50)
    _same(ga, [g.bit_generator for g in np.random.Generator(theirs[3]).spawn(50)])
    assert isinstance(kids[0].seed_seq, np.random.SeedSequence)


def test_other_bit_generators_fall_back_to_numpys_spawn():
    for cls in (np.random.Philox, np.random.SFC64, np.random.MT19937):
        a, b = (np.random.Generator(cls(np.random.SeedSequence(3))) for _ in range(2))
        assert _bulk(a.bit_generator, 40) is None
        _same(spawn_bit_generators(a, 40), [g.bit_generator for g in b.spawn(40)])


def test_spawned_streams_pickle_and_copy():
    kids = spawn_bit_generators(np.random.default_rng(2), 40)
    g = kids[5]
    g.random_raw(3)
    for other in (pickle.loads(pickle.dumps(g)), copy.deepcopy(g), copy_bit_generator(g)):
        assert other.state == g.state
        assert other.seed_seq.spawn_key == g.seed_seq.spawn_key
        np.testing.assert_array_equal(other.random_raw(4), copy.deepcopy(g).random_raw(4))
        grand = [k.generate_state(4) for k in other.seed_seq.spawn(2)]
        ref = np.random.SeedSequence(g.seed_seq.entropy, spawn_key=g.seed_seq.spawn_key)
        for k, r in zip(grand, ref.spawn(2)):
            np.testing.assert_array_equal(k, r.generate_state(4))


def test_forest_streams_are_the_estimators_spawn():
    """A forest's trees draw from ``rng.spawn(n_trees)``'s streams, whatever
    the number of trees (bulk or not): the trees equal those grown from
    numpy's spawn by the forest's own ``fit``."""
    from mondrian import MondrianFeatures
    from mondrian._ext._forest import Forest

    X = np.random.default_rng(0).standard_normal((30, 2))
    for n_trees in (3, 40):
        f = MondrianFeatures(n_trees, lifetime=2.0, random_state=9).fit(X).forest_
        ref = Forest(n_trees, 2)
        ref.fit(X, 2.0, [g.bit_generator for g in np.random.default_rng(9).spawn(n_trees)])
        assert f.n_nodes == ref.n_nodes
        for name in ("parent", "feature", "threshold", "tau", "lower", "upper"):
            np.testing.assert_array_equal(getattr(f, name), getattr(ref, name))


def test_a_numpy_without_the_restoring_hook_gets_numpys_spawn(monkeypatch):
    """If numpy's seed sequence cannot be restored from its state (another
    numpy's internals), the spawn is numpy's own, and the parent moves on by
    exactly n children (not twice)."""
    import mondrian._streams as streams

    def broken(*args, **kwargs):
        raise AttributeError("no __setstate_cython__")

    monkeypatch.setattr(streams, "_restore", broken)
    a, b = _pair(4)
    ours = spawn_bit_generators(a, 64)
    _same(ours, [g.bit_generator for g in b.spawn(64)])
    assert a.bit_generator.seed_seq.n_children_spawned == 64
