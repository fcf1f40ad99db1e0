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


# ------------------------------------------- numpy's PCG64 held in C (c/pcg64.h)
@pytest.mark.parametrize("entropy", [0, 1234, 2**127 + 5])
def test_c_held_pcg64_draws_are_numpys(entropy):
    """Every draw function of the C stream's bitgen_t -- next_uint64,
    next_uint32 (with its buffered high half), next_double, next_raw -- in
    a random order, and the final state, equal numpy's PCG64 seeded from the
    same seed sequence (numpy's integers(0, 2**32, uint32) is next_uint32,
    random() next_double, random_raw next_raw)."""
    from mondrian._ext._forest import _pcg64_draws, _pcg64_object
    kinds = np.random.default_rng(entropy % 97).integers(0, 4, 3000)
    seq = np.random.SeedSequence(entropy, spawn_key=(3, 9))
    ints, reals, state = _pcg64_draws(seq.generate_state(4, np.uint64), kinds)
    bg = np.random.PCG64(seq)
    gen = np.random.Generator(bg)
    for i, kind in enumerate(kinds):
        if kind == 1:
            assert ints[i] == gen.integers(0, 2**32, dtype=np.uint32)
        elif kind == 2:
            assert reals[i] == gen.random()
        else:
            assert ints[i] == bg.random_raw()
    assert _pcg64_object(state).state == bg.state
    with pytest.raises(ValueError, match="kinds"):
        _pcg64_draws(seq.generate_state(4, np.uint64), [0, 5])


def test_spawn_streams_gives_seed_words_in_bulk_and_generators_otherwise():
    from mondrian._streams import copy_streams, spawn_streams
    a, b = _pair(3)
    words = spawn_streams(a, 64)
    assert isinstance(words, np.ndarray) and words.dtype == np.uint64
    np.testing.assert_array_equal(
        words, [g.bit_generator.seed_seq.generate_state(4, np.uint64) for g in b.spawn(64)])
    assert (a.bit_generator.seed_seq.n_children_spawned ==
            b.bit_generator.seed_seq.n_children_spawned == 64)
    # Fewer than BULK_MIN children, or another bit generator: numpy's spawn.
    few = spawn_streams(a, 3)
    _same(few, [g.bit_generator for g in b.spawn(3)])
    philox = np.random.Generator(np.random.Philox(5))
    assert isinstance(spawn_streams(philox, 40)[0], np.random.Philox)
    copied = copy_streams(words)
    copied[0, 0] ^= np.uint64(1)
    assert copied[0, 0] != words[0, 0]
    gens = copy_streams(few)
    assert all(g is not h and g.state == h.state for g, h in zip(gens, few))


def test_forest_with_c_held_streams_equals_numpys_through_growth_copy_and_pickle():
    """A forest given seed words grows, extends and inserts exactly as one
    given numpy's generators for the same children; its bit_generators are
    PCG64 copies at the trees' states (drawing from them leaves the trees'
    streams alone); copies and pickles continue identically."""
    from mondrian._ext._forest import Forest
    from mondrian._streams import spawn_streams
    X = np.random.default_rng(0).standard_normal((60, 3))
    new = np.random.default_rng(1).standard_normal((25, 3))
    words = spawn_streams(np.random.default_rng(5), 40)
    held = Forest(40, 3).fit(X, 2.0, words)
    ref = Forest(40, 3).fit(X, 2.0, [g.bit_generator for g in np.random.default_rng(5).spawn(40)])
    names = ("parent", "feature", "threshold", "tau", "lower", "upper", "perm")

    def same(f, g):
        assert f.n_nodes == g.n_nodes
        for name in names:
            np.testing.assert_array_equal(getattr(f, name), getattr(g, name))

    same(held, ref)
    snapshot = held.bit_generators
    assert all(type(g) is np.random.PCG64 for g in snapshot)
    assert [g.state for g in snapshot] == [g.state for g in ref.bit_generators]
    snapshot[0].random_raw(10)                 # a copy: the tree's stream is unmoved
    assert held.bit_generators[0].state == ref.bit_generators[0].state
    held.extend(3.0)
    ref.extend(3.0)
    held.insert(new)
    ref.insert(new)
    same(held, ref)
    for other in (held.copy(), pickle.loads(pickle.dumps(held))):
        other.extend(5.0)
        grown = held.copy()
        grown.extend(5.0)
        same(other, grown)
    assert pickle.loads(pickle.dumps(held))._pcg_states() is not None


def test_pickled_pcg64_states_are_validated():
    from mondrian._ext._forest import Forest
    from mondrian._streams import spawn_streams
    X = np.random.default_rng(0).standard_normal((30, 2))
    f = Forest(40, 2).fit(X, 1.0, spawn_streams(np.random.default_rng(2), 40))
    cls, args, state = f.__reduce__()
    assert state["bit_generators"] == [] and state["pcg64"].shape == (40, 6)
    cls(*args).__setstate__(state)
    for column, value, match in ((3, 2, "even"), (4, 2, "has_uint32"), (5, 2**32, "uinteger")):
        bad = state["pcg64"].copy()
        bad[7, column] = value
        with pytest.raises(ValueError, match=match):
            cls(*args).__setstate__(dict(state, pcg64=bad))
    with pytest.raises(ValueError, match="shape"):
        cls(*args).__setstate__(dict(state, pcg64=state["pcg64"][:-1]))
    gens = list(Forest(40, 2).fit(X, 1.0, [g.bit_generator for g in
                                            np.random.default_rng(2).spawn(40)]).bit_generators)
    with pytest.raises(ValueError, match="not both"):
        cls(*args).__setstate__(dict(state, bit_generators=gens))
    with pytest.raises(ValueError, match="seed words"):
        Forest(40, 2).fit(X, 1.0, np.zeros((40, 3), dtype=np.uint64))


def test_c_held_streams_give_the_same_forest_for_any_thread_count():
    """Tree m draws only from its own C-held stream: growth, extension and
    insertion give the same arrays on 1, 2 and 3 threads."""
    from mondrian._ext._forest import Forest
    from mondrian._streams import spawn_streams
    rng = np.random.default_rng(4)
    X, new = rng.standard_normal((120, 3)), rng.standard_normal((30, 3))
    outs = []
    for threads in (1, 2, 3):
        f = Forest(48, 3).fit(X, 1.0, spawn_streams(np.random.default_rng(8), 48), threads)
        f.extend(2.0, threads)
        f.insert(new, n_threads=threads)
        outs.append([np.array(getattr(f, k)) for k in
                     ("parent", "feature", "threshold", "tau", "lower", "upper", "perm")]
                    + [f._pcg_states()])
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            np.testing.assert_array_equal(a, b)
