"""The C forest behind MondrianFeatures (mondrian._ext._forest.Forest):
views, growth rules, pickling and the C state check, allocation failures,
and agreement of its C readers with direct numpy formulas."""
import pickle
import sys

import numpy as np
import pytest

from mondrian import MondrianFeatures
from mondrian._ext._forest import Forest
from mondrian.path import CGRidgePath, lifetime_grid, split_events


@pytest.fixture
def fitted(rng):
    X = rng.random((80, 3))
    return X, MondrianFeatures(n_trees=5, lifetime=4.0, random_state=0).fit(X)


NODE_ARRAYS = ("tree_of", "parent", "left", "right", "feature", "start", "end",
               "threshold", "tau", "lower", "upper")


def test_views_are_read_only_shared_and_based_on_the_forest(fitted):
    _, mf = fitted
    f = mf.forest_
    for name in NODE_ARRAYS + ("node_offset", "roots", "X", "perm"):
        a, b = getattr(f, name), getattr(f, name)
        assert a.base is f, name
        assert not a.flags.writeable, name
        with pytest.raises(ValueError):
            a[(0,) * a.ndim] = 1
        # No copy: two accesses see the same memory.
        assert np.shares_memory(a, b), name
        assert a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    assert f.perm.shape == (5, 80) and f.X.shape == (80, 3)
    assert f.lower.shape == (f.n_nodes, 3)


def test_forest_keeps_its_own_copy_of_X(fitted):
    X, mf = fitted
    f = mf.forest_
    np.testing.assert_array_equal(f.X, X)
    assert not np.shares_memory(f.X, X)
    assert f.point_capacity >= f.n_points == 80


def test_growth_in_place_refuses_while_views_live(fitted):
    _, mf = fitted
    f = mf.forest_
    tau = f.tau
    view_slice = f.left[2:5]
    with pytest.raises(BufferError, match="view"):
        f.extend(5.0)
    with pytest.raises(BufferError):
        f.reserve_nodes(10 * f.n_nodes)
    del tau
    with pytest.raises(BufferError):   # the slice keeps its view alive
        f.extend(5.0)
    del view_slice
    n_before = f.n_nodes
    f.extend(5.0)
    assert f.lifetime == 5.0 and f.n_nodes >= n_before


def test_extend_of_a_shared_forest_grows_a_copy(fitted):
    X, mf = fitted
    old = mf.forest_
    events = split_events(mf)       # pins the forest
    old_tau = old.tau.copy()
    mf.extend(6.0)
    assert mf.forest_ is not old and old.lifetime == 4.0
    np.testing.assert_array_equal(old.tau, old_tau)
    assert events.forest is old
    # The same trees as extending an unshared forest in place.
    ref = MondrianFeatures(n_trees=5, lifetime=4.0, random_state=0).fit(X).extend(6.0)
    assert ref.forest_.n_nodes == mf.forest_.n_nodes
    np.testing.assert_array_equal(ref.forest_.tau, mf.forest_.tau)
    np.testing.assert_array_equal(ref.forest_.perm, mf.forest_.perm)


def test_c_events_node_sums_and_active_nodes_match_numpy(fitted, rng):
    _, mf = fitted
    f = mf.forest_
    ev = split_events(mf)
    internal = np.flatnonzero(f.left >= 0)
    order = np.lexsort((internal, f.tau[internal]))
    np.testing.assert_array_equal(ev.nodes, internal[order])
    np.testing.assert_array_equal(ev.times, f.tau[ev.nodes])
    np.testing.assert_array_equal(ev.left, f.left[ev.nodes])
    np.testing.assert_array_equal(ev.right, f.right[ev.nodes])
    np.testing.assert_array_equal(ev.tree, f.tree_of[ev.nodes])
    values = rng.standard_normal(80)
    expected = np.array([values[f.perm[f.tree_of[j], f.start[j]:f.end[j]]].sum()
                         for j in range(f.n_nodes)])
    np.testing.assert_allclose(ev.node_sums(values), expected, rtol=1e-12, atol=1e-12)
    parent = f.parent
    tau_parent = np.where(parent >= 0, f.tau[np.maximum(parent, 0)], 0.0)
    for lam in (0.0, 0.3, 1.7, 4.0):
        np.testing.assert_array_equal(
            ev.columns_at(lam), np.flatnonzero((tau_parent <= lam) & (f.tau > lam)))
    mask = rng.random(80) < 0.6
    tstart, tend, ptrain = ev.train_slices(mask)
    for j in range(f.n_nodes):
        m = f.tree_of[j]
        pts = f.perm[m, f.start[j]:f.end[j]]
        np.testing.assert_array_equal(ptrain[m, tstart[j]:tend[j]], pts[mask[pts]])


def test_pickle_round_trip_is_equal_and_continues_identically(fitted, rng):
    _, mf = fitted
    f = mf.forest_
    g = pickle.loads(pickle.dumps(f))
    for name in NODE_ARRAYS + ("node_offset", "X", "perm"):
        np.testing.assert_array_equal(getattr(g, name), getattr(f, name))
    assert g.lifetime == f.lifetime
    for a, b in zip(f.bit_generators, g.bit_generators):
        assert a is not b and a.state == b.state
    new = rng.random((10, 3)) * 2 - 0.5
    assert all(np.array_equal(u, v) for u, v in zip(f.features(new, 2.0), g.features(new, 2.0)))
    f2 = f.copy()
    f2.extend(7.0)
    g.extend(7.0)
    np.testing.assert_array_equal(g.tau, f2.tau)


def _corrupt(state, name, fn):
    bad = dict(state)
    bad[name] = fn(np.array(state[name]))
    return bad


def _set(a, index, value):
    a[index] = value
    return a


@pytest.mark.parametrize("name, fn, match", [
    ("left", lambda a: _set(a, int(np.argmax(a)), 10**6), "inconsistent"),     # bad child id
    ("left", lambda a: _set(a, int(np.argmax(a)), 0), "inconsistent"),         # child = a root
    ("tau", lambda a: _set(a, int(np.argmin(a)), -1.0), "inconsistent"),       # before 0
    ("tau", lambda a: _set(a, int(np.argmax(np.where(np.isinf(a), -1, a))), 0.0),
     "inconsistent"),                                                          # unsorted times
    ("perm", lambda a: _set(a, (0, 0), 10**6), "inconsistent"),                # out of range
    ("perm", lambda a: _set(a, (0, 1), a[0, 0]), "inconsistent"),              # not a permutation
    ("X", lambda a: a[:, :2].copy(), "X must have shape"),                     # X shape mismatch
    ("X", lambda a: _set(a, (3, 1), 99.0), "inconsistent"),                    # point outside its box
    ("X", lambda a: _set(a, (3, 1), np.nan), "inconsistent"),                  # not finite
    # Tree 0's root (node 0) splits: its box has linear dimension ~3, so it
    # is still a leaf at lifetime 4 with probability e^-12.  Its cut must lie
    # in its box, between its children's boxes.
    ("threshold", lambda a: _set(a, 0, np.nan), "inconsistent"),               # NaN cut
    ("threshold", lambda a: _set(a, 0, 1e6), "inconsistent"),                  # cut outside box
    ("threshold", lambda a: _set(a, int(np.flatnonzero(a == 0.0)[0]), np.inf),
     "inconsistent"),                                                          # leaf not finite
    ("node_offset", lambda a: _set(a, 1, a[1] + 1), "inconsistent"),           # trees overlap
    ("start", lambda a: a.astype(np.int32), "int64"),                          # dtype
    ("lower", lambda a: a[:-1].copy(), "lower must have shape"),
])
def test_corrupt_state_is_rejected_by_the_c_check(fitted, name, fn, match):
    _, mf = fitted
    cls, args, state = mf.forest_.__reduce__()
    cls(*args).__setstate__(state)      # the intact state loads
    f = cls(*args)
    with pytest.raises(ValueError, match=match):
        f.__setstate__(_corrupt(state, name, fn))
    assert f.n_nodes == 0               # left empty, not half-loaded
    with pytest.raises(ValueError, match="fit it first"):
        f.features(None, 1.0)


def test_state_bit_generators_and_transform_are_validated(fitted):
    _, mf = fitted
    cls, args, state = mf.forest_.__reduce__()
    gens = state["bit_generators"]
    with pytest.raises(ValueError, match="own bit generator"):
        cls(*args).__setstate__(dict(state, bit_generators=[gens[0]] * len(gens)))
    with pytest.raises(ValueError, match="one bit generator per tree"):
        cls(*args).__setstate__(dict(state, bit_generators=gens[:-1]))
    with pytest.raises(TypeError, match="BitGenerator"):
        cls(*args).__setstate__(dict(state, bit_generators=[object()] * len(gens)))
    # The per-tree transform slot: NULL (None) or orthogonal rotations, with
    # the boxes in the rotated coordinates (tests/test_rotated.py).
    M, D = args
    rotated = MondrianFeatures(n_trees=M, lifetime=2.0, random_state=0,
                               rotation="uniform").fit(mf.forest_.X)
    ok = rotated.forest_.__reduce__()[2]
    g = cls(*args)
    g.__setstate__(ok)
    assert g.n_nodes == rotated.forest_.n_nodes
    assert np.array_equal(g.features(None, 1.0)[1], rotated.forest_.features(None, 1.0)[1])
    with pytest.raises(ValueError, match="inconsistent"):   # axis-aligned boxes
        cls(*args).__setstate__(dict(state, rotation=ok["rotation"], center=ok["center"]))
    bad = dict(ok, rotation=2 * ok["rotation"])
    with pytest.raises(ValueError, match="inconsistent"):
        cls(*args).__setstate__(bad)
    with pytest.raises(ValueError, match="together"):
        cls(*args).__setstate__(dict(ok, center=None))


def test_huge_reservations_raise_memory_error_and_leave_the_forest_usable(fitted):
    _, mf = fitted
    f = mf.forest_.copy()
    ref = f.features(None, 2.0)
    # 10**12 points: 10**12 * 8 * (3 + 5) bytes, far beyond the machine's memory.
    with pytest.raises(MemoryError, match=r"reserve_points: 1000000000000 points"):
        f.reserve_points(10**12)
    with pytest.raises(MemoryError, match=r"reserve_nodes: 1000000000000 nodes"):
        f.reserve_nodes(10**12)
    # A size whose byte count overflows size_t.
    with pytest.raises(MemoryError, match="overflows"):
        f.reserve_points(2**62)
    assert f.n_points == 80 and f.point_capacity < 10**6
    assert all(np.array_equal(u, v) for u, v in zip(f.features(None, 2.0), ref))
    f.extend(5.0)   # still growable


def test_huge_reservation_in_a_fresh_process_survives(run_python):
    # The process must survive the failed allocation (no abort, no OOM kill).
    code = ("import numpy as np\n"
            "from mondrian._ext._forest import Forest\n"
            "f = Forest(3, 4)\n"
            "try:\n"
            "    f.reserve_points(10**12)\n"
            "except MemoryError as e:\n"
            "    print('MemoryError', e)\n"
            "f.reserve_points(100)\n"
            "print('alive', f.point_capacity)\n")
    out = run_python(code, timeout=120)
    assert "MemoryError Forest.reserve_points" in out and "alive 100" in out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_an_extension_that_fails_leaves_every_node_its_points(run_python):
    """An extension permutes each tree's row of perm in place (``c/grow.h``):
    its splits fall inside old leaves, so when it runs out of memory midway
    (here: an address-space limit 16 MiB above the process's, and a
    lifetime whose trees need twice that) the old trees are unchanged and
    every node still holds the same points; only their order within a
    leaf's slice may differ.  The forest then pickles (its state passes
    the C check) and extends."""
    code = """
import pickle, re, resource, numpy as np
from mondrian._ext._forest import Forest
X = np.random.default_rng(0).random((3000, 4))
M = 40
f = Forest(M, 4).fit(X, 3.0, [np.random.PCG64(s) for s in range(M)], 2)
names = ("tau", "left", "right", "parent", "feature", "threshold", "start", "end",
         "lower", "upper", "node_offset")
before = {k: np.array(getattr(f, k)) for k in names}
perm0 = np.array(f.perm)
sets = [np.sort(perm0[f.tree_of[j], f.start[j]:f.end[j]]) for j in range(f.n_nodes)]
vm = int(re.search(r"VmSize:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + 16 * 2**20, resource.RLIM_INFINITY))
try:
    f.extend(1e6, 2)
    print("grown")
except MemoryError:
    print("MemoryError")
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
assert f.lifetime == 3.0
assert all(np.array_equal(getattr(f, k), v) for k, v in before.items())
perm1 = np.array(f.perm)
assert all(np.array_equal(np.sort(perm1[f.tree_of[j], f.start[j]:f.end[j]]), s)
           for j, s in enumerate(sets))
print("reordered", int((perm1 != perm0).any(axis=1).sum()))
g = pickle.loads(pickle.dumps(f))
f.extend(6.0, 2)
print("extended", f.lifetime, g.lifetime)
"""
    out = run_python(code, timeout=300).split("\n")
    assert out[0] == "MemoryError"
    # Trees were split before memory ran out (else the test shows nothing).
    assert int(out[1].split()[1]) > 0
    assert out[2] == "extended 6.0 3.0"


def test_spare_nodes_take_an_insertion_in_place(rng):
    """``Forest.fit(..., spare_nodes=k)``: the same trees with room for k more
    nodes; an insertion of n points with 2nM <= k then grows the trees where
    they are (the capacity does not move) into the same trees as without
    the room."""
    X, new = rng.random((300, 3)), rng.random((40, 3))
    M = 6
    forests = []
    for spare in (0, 2 * len(new) * M):
        f = Forest(M, 3).fit(X, 4.0, [np.random.PCG64(s) for s in range(M)], 2,
                             spare_nodes=spare)
        assert f.node_capacity >= f.n_nodes + spare
        before = f.node_capacity
        forests.append((f, np.array(f.tau), np.array(f.lower)))
        f.insert(new, 2, 0)
        assert (f.node_capacity == before) == (spare > 0)
    (a, tau_a, low_a), (b, tau_b, low_b) = forests
    np.testing.assert_array_equal(tau_a, tau_b)      # grown alike
    np.testing.assert_array_equal(low_a, low_b)
    for name in ("parent", "left", "right", "feature", "threshold", "tau", "lower", "upper"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))   # inserted alike
    with pytest.raises(ValueError, match="spare_nodes must be >= 0"):
        Forest(M, 3).fit(X, 4.0, [np.random.PCG64(s) for s in range(M)], 1, spare_nodes=-1)



def test_spare_points_take_an_insertion_without_moving_the_points(rng):
    """``Forest.fit(..., spare_points=k)``: the same trees, with room for k
    more points in X and in the rows of point indices; inserting up to k
    points then keeps that capacity (without it, the insertion moves them
    to blocks of twice the points: 1.6 GB more at 10⁶ points and 100
    trees), and gives the same trees and permutations as without the room.
    The memory budget counts the move only when the room is short."""
    import mondrian.features.mondrian as fm

    X, new = rng.random((300, 3)), rng.random((40, 3))
    M = 6
    forests = []
    for spare in (0, len(new)):
        f = Forest(M, 3).fit(X, 4.0, [np.random.PCG64(s) for s in range(M)], 2,
                             spare_points=spare)
        assert f.point_capacity == 300 + spare and f.n_points == 300
        need = fm._MemoryBudget(new, M, 2)._points_growth(f, False)
        assert need == (0.0 if spare else 8.0 * (M + 3) * 600)
        forests.append((f, np.array(f.perm)))
        f.insert(new, 2, 0)
        assert f.point_capacity == (340 if spare else 600) and f.n_points == 340
    (a, perm_a), (b, perm_b) = forests
    np.testing.assert_array_equal(perm_a, perm_b)          # grown alike
    np.testing.assert_array_equal(np.array(a.perm), np.array(b.perm))   # inserted alike
    for name in ("parent", "left", "right", "feature", "threshold", "tau", "lower", "upper"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    with pytest.raises(ValueError, match="spare_points must be >= 0"):
        Forest(M, 3).fit(X, 4.0, [np.random.PCG64(s) for s in range(M)], 1, spare_points=-1)

@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_fit_holds_the_nodes_about_once(run_python):
    """Grown trees are copied into the forest from the growing threads'
    scratches where their place is known, else packed and moved into the
    forest with their memory released as it fills (``c/grow.c``): the
    resident peak of a fit exceeds the forest's node bytes by the
    per-thread trees in flight and the permutations, not by a second copy
    of every node (before the packing: 2.1x; with it, 1.06x; with direct
    stores, trees grown to their leaves as here, 1.05x).  Measured in a
    fresh process (the high-water mark of this one is whatever earlier
    tests left): 0.41 GB of nodes, bound 1.4x."""
    code = (
        "import re, numpy as np\n"
        "from mondrian import MondrianFeatures\n"
        "from mondrian.features.mondrian import node_bytes\n"
        "def hwm():\n"
        "    s = open('/proc/self/status').read()\n"
        "    return int(re.search(r'VmHWM:\\s+(\\d+)', s).group(1)) * 1024\n"
        "X = np.random.default_rng(0).random((4000, 60))\n"
        "base = hwm()\n"
        "mf = MondrianFeatures(n_trees=50, lifetime=1e4, random_state=0, n_jobs=2).fit(X)\n"
        "print(hwm() - base, mf.forest_.n_nodes * node_bytes(60))\n")
    peak, nodes = map(int, run_python(code).split())
    assert nodes > 3 * 10**8
    assert peak < 1.4 * nodes, (peak, nodes)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_memory_budget_counts_what_growth_holds(run_python):
    """The fixed part of ``MondrianFeatures``' memory budget (the forest's
    copy of X, its M rows of point indices -- each tree is grown in its own
    row, with no scratch copy -- and each thread's stack and rows) against
    the growth's resident peak in a fresh process: 40 trees on 4·10⁵
    points at a lifetime of a few cells, so that the nodes are a rounding
    error.  The indices are 128 MB of the model's ~160 MB; counting them
    twice (as the budget once did) gives a ratio near 0.45, and refuses
    fits that would fit.  The model is an upper bound by design: each
    thread's stack (8·N) is only touched down to its tree's depth and its
    4 MiB arena chunk only as used (0.81-0.92 measured); above 1, something
    held is not counted."""
    code = (
        "import re, numpy as np\n"
        "import mondrian.features.mondrian as fm\n"
        "def hwm():\n"
        "    s = open('/proc/self/status').read()\n"
        "    return int(re.search(r'VmHWM:\\s+(\\d+)', s).group(1)) * 1024\n"
        "X = np.random.default_rng(0).random((400_000, 2))\n"
        "base = hwm()\n"
        "f = fm.MondrianFeatures(40, 0.5, random_state=0, n_jobs=2, feature_scale=None).fit(X)\n"
        "b = fm._MemoryBudget(X, 40, 2)\n"
        "print((hwm() - base) / b.peak(f.forest_.n_nodes), f.forest_.n_nodes)\n")
    ratio, nodes = run_python(code).split()
    assert int(nodes) < 40 * 50
    assert 0.7 <= float(ratio) <= 1.0, ratio


def _assert_trees_are(f, alone):
    """Tree m of the forest ``f`` is the one-tree forest ``alone[m]``, node
    for node (its ids shifted by the tree's offset), with its permutation."""
    offset = np.asarray(f.node_offset)
    perm = np.asarray(f.perm)
    for m, one in enumerate(alone):
        lo, hi = offset[m], offset[m + 1]
        assert hi - lo == one.n_nodes
        for name in ("parent", "left", "right"):
            mine, ref = np.asarray(getattr(f, name))[lo:hi], np.asarray(getattr(one, name))
            np.testing.assert_array_equal(np.where(mine < 0, mine, mine - lo), ref)
        np.testing.assert_array_equal(np.asarray(f.tree_of)[lo:hi], m)
        for name in ("feature", "start", "end", "threshold", "tau", "lower", "upper"):
            np.testing.assert_array_equal(np.asarray(getattr(f, name))[lo:hi],
                                          np.asarray(getattr(one, name)))
        np.testing.assert_array_equal(perm[m], np.asarray(one.perm)[0])


@pytest.mark.parametrize("lifetime, pair, rotation",
                         [(2.0, False, None), (1e4, False, None), (2e8, True, None),
                          (1e4, False, "uniform")])
def test_each_tree_is_the_tree_its_stream_grows_alone(lifetime, pair, rotation):
    """A fit copies grown trees from its threads' scratches straight into the
    forest where their place is known and packs the others
    (``c/grow.c``): whichever way, tree m of an M-tree forest is the
    one-tree forest grown from tree m's stream alone, node for node (ids
    shifted by its offset), on 1 to 3 threads.  Shallow trees (lifetime 2:
    the first thread's trees stored, the others packed); trees grown to
    their leaves (1e4: every tree at m times the first tree's size); and
    with two points 1e-9 apart, that at lifetime 2e8 only some trees
    separate (streams 7-13: trees 0, 1, 2, 4 have 501 nodes, trees 3, 5, 6
    499), so that trees stored at m times 501 are moved down into place;
    and rotated trees (each grown in its own coordinates, its rotation
    drawn from its stream).  The node arrays end with room for exactly the
    nodes and the spare ones, or the capacity a refit found if that was
    more."""
    X = np.random.default_rng(3).random((250, 3))
    if pair:
        X = np.vstack([X, X[:1] + 1e-9])
    M, spare, base = 7, 100, 7 if pair else 1000

    def gens():
        return [np.random.PCG64(base + m) for m in range(M)]

    alone = [Forest(1, 3).fit(X, lifetime, [g], 1, rotation=rotation) for g in gens()]
    if pair:
        assert [one.n_nodes for one in alone] == [501, 501, 501, 499, 501, 499, 499]
    for n_threads in (1, 2, 3):
        f = Forest(M, 3).fit(X, lifetime, gens(), n_threads, rotation=rotation,
                             spare_nodes=spare)
        assert f.node_capacity == f.n_nodes + spare
        _assert_trees_are(f, alone)
    # A refit keeps a larger capacity (its pages are the ones the nodes go
    # to), and grows a smaller one to the nodes and the spare ones.
    small = Forest(M, 3).fit(X, 0.5, gens(), 2)
    big = Forest(M, 3).fit(X, lifetime, gens(), 2, spare_nodes=spare)
    before = small.node_capacity
    small.fit(X, lifetime, gens(), 2, spare_nodes=spare)
    assert small.node_capacity == max(before, big.n_nodes + spare)
    capacity = big.node_capacity
    big.fit(X, 0.5, gens(), 2)
    assert big.node_capacity == capacity
    for name in NODE_ARRAYS:
        np.testing.assert_array_equal(getattr(big, name), getattr(Forest(M, 3).fit(
            X, 0.5, gens(), 1), name))


@pytest.mark.parametrize("lifetimes, rotation",
                         [((0.5, 2.0, 8.0), None), ((2.0, 1e4), None), ((1.0, 1e4), "uniform")])
def test_each_extended_tree_is_its_stream_extended_alone(lifetimes, rotation):
    """An extension's first thread stores its trees into fresh node arrays
    (room reserved from tree 0's growth: twice its factor, so that on many
    shallow trees it runs out and the rest are packed), the others pack
    theirs, and the fresh arrays replace the forest's (``c/grow.c``):
    whichever way, tree m of the extended forest is the one-tree forest of
    tree m's stream fitted and extended alone, node for node, on 1 to 3
    threads, and the node arrays keep the room they had (a fit's spare
    room for an insertion) or hold exactly the nodes."""
    X = np.random.default_rng(4).random((300, 3))
    X[:20] = X[0]                     # a leaf that never splits
    M, spare = 9, 400

    def gens():
        return [np.random.PCG64(50 + m) for m in range(M)]

    alone = []
    for g in gens():
        one = Forest(1, 3).fit(X, lifetimes[0], [g], 1, rotation=rotation)
        for lam in lifetimes[1:]:
            one.extend(lam, 1)
        alone.append(one)
    for n_threads in (1, 2, 3):
        f = Forest(M, 3).fit(X, lifetimes[0], gens(), n_threads, rotation=rotation,
                             spare_nodes=spare)
        room = f.node_capacity
        for lam in lifetimes[1:]:
            f.extend(lam, n_threads)
            assert f.node_capacity == max(room, f.n_nodes)
        _assert_trees_are(f, alone)


def test_bitwise_identical_for_1_2_3_threads(rng):
    X = rng.random((300, 4))
    y = np.sin(3 * X[:, 0]) + X[:, 1]
    y -= y.mean()
    new = rng.random((40, 4)) * 1.4 - 0.2
    outs = []
    for n_jobs in (1, 2, 3):
        mf = MondrianFeatures(n_trees=13, lifetime=3.0, random_state=7, n_jobs=n_jobs).fit(X)
        mf.extend(4.0)
        f = mf.forest_
        ev = split_events(mf)
        cg = CGRidgePath(ev, y, [0.1, 1.0], tol=1e-8, n_jobs=n_jobs)
        path = [cg.solve_at(lam) for lam in lifetime_grid(ev, 5)]
        outs.append(dict(
            arrays=[np.array(getattr(f, k)) for k in NODE_ARRAYS + ("perm",)],
            features=mf.transform(new).toarray(), train=mf.training_features(2.0).toarray(),
            gram=mf.gram(2.0), path=path, weights=cg.node_weights()))
        del ev, cg
    for other in outs[1:]:
        for a, b in zip(outs[0]["arrays"], other["arrays"]):
            np.testing.assert_array_equal(a, b)
        for key in ("features", "train", "gram", "weights"):
            np.testing.assert_array_equal(outs[0][key], other[key])
        for (i0, s0), (i1, s1) in zip(outs[0]["path"], other["path"]):
            np.testing.assert_array_equal(i0, i1)
            np.testing.assert_array_equal(s0, s1)


def test_forest_arguments_are_checked():
    with pytest.raises(ValueError):
        Forest(0, 3)
    f = Forest(2, 3)
    with pytest.raises(ValueError, match="fit it first"):
        f.extend(1.0)
    with pytest.raises(ValueError, match="shape"):
        f.fit(np.zeros((5, 2)), 1.0, [np.random.PCG64(0), np.random.PCG64(1)])
    with pytest.raises(ValueError, match="per tree"):
        f.fit(np.zeros((5, 3)), 1.0, [np.random.PCG64(0)])
    f.fit(np.random.default_rng(0).random((5, 3)), 1.0,
          [np.random.PCG64(0), np.random.PCG64(1)])
    with pytest.raises(ValueError, match="lifetime"):
        f.features(None, 2.0)
    with pytest.raises(ValueError, match=">= 1.0"):
        f.extend(0.5)
    with pytest.raises(IndexError):
        f.tree(2)


@pytest.mark.parametrize("make", [
    lambda: np.random.PCG64(np.random.SeedSequence(7, spawn_key=(3,))),
    lambda: np.random.PCG64DXSM(5), lambda: np.random.Philox(5), lambda: np.random.SFC64(5),
    lambda: np.random.MT19937(5),
    lambda: np.random.Philox(key=np.arange(2, dtype=np.uint64)),  # seedless: deep-copied
])
def test_copy_bit_generator_is_an_independent_deepcopy(make):
    """Forest.copy's generator copy: the next draws (including a buffered
    half word) and the seed sequence's spawns are a deepcopy's; drawing
    from the copy leaves the original as it was."""
    import copy
    from mondrian._ext._forest import copy_bit_generator
    g = make()
    np.random.Generator(g).integers(0, 2**32, size=3, dtype=np.uint32)  # odd: half word left
    ours, ref, untouched = copy_bit_generator(g), copy.deepcopy(g), copy.deepcopy(g)
    assert type(ours) is type(g) and ours is not g
    a = np.random.Generator(ours).integers(0, 2**32, size=5, dtype=np.uint32)
    np.testing.assert_array_equal(a, np.random.Generator(ref).integers(0, 2**32, size=5,
                                                                        dtype=np.uint32))
    np.testing.assert_array_equal(ours.random_raw(4), ref.random_raw(4))
    np.testing.assert_array_equal(g.random_raw(9), untouched.random_raw(9))
    if type(g.seed_seq) is np.random.SeedSequence:
        assert ours.seed_seq is not g.seed_seq
        kids = [c.generate_state(4) for c in ours.seed_seq.spawn(2)]
        for k, r in zip(kids, ref.seed_seq.spawn(2)):
            np.testing.assert_array_equal(k, r.generate_state(4))
        assert g.seed_seq.n_children_spawned == 0
