"""The trees' random streams: ``Generator.spawn``'s bit generators, in bulk.

Every tree draws from its own numpy bit generator, the n children that
``rng.spawn(n)`` would give (DESIGN §2: results do not depend on the number
of threads).  numpy builds each child in Python: a :class:`SeedSequence`
(its entropy pool mixed word by word), then the bit generator, which asks
the child for its state words -- about 18 µs a child, 0.23-0.3 s for the
10⁴ trees of the kernel-width path's second search on a few hundred rows,
a third of that fit.  The arithmetic of a child is the same for every
child but for its last spawn-key word, so :func:`spawn_bit_generators`
does it for all n children at once, on numpy arrays, and hands each
bit generator its precomputed state: the same generators, bit for bit,
about 2-3 µs a child.  :func:`spawn_streams` goes one step further for the
forests: it returns the children's PCG64 seed words alone, from which the
forest seeds numpy's PCG64 in C (``c/pcg64.h``), about 0.15 µs a child.

The seed sequence's algorithm (O'Neill's ``seed_seq`` design, as numpy's
``SeedSequence`` implements it), with all arithmetic modulo 2³²:

* the entropy is the seed's 32-bit words (least significant first), padded
  with zeros to the pool size when there is a spawn key, then the spawn
  key's words;
* ``hashmix(v)``: v ^= h; h *= MULT_A; v *= h; v ^= v >> 16, with one
  running h = INIT_A over the whole mixing;
* ``mix(x, y)`` = r ^ (r >> 16), r = MIX_MULT_L·x - MIX_MULT_R·y;
* the pool: word i = hashmix(entropy word i (0 past the end)); then for
  every ordered pair (src, dst), src ≠ dst: pool[dst] = mix(pool[dst],
  hashmix(pool[src])); then each further entropy word w, for every dst:
  pool[dst] = mix(pool[dst], hashmix(w));
* the state: word i = pool[i mod pool size] ^ h, h *= MULT_B (from INIT_B),
  times h, ^ >> 16; two 32-bit words make one 64-bit word, low first.

Only the default case is done in bulk -- a :class:`numpy.random.PCG64`
parent with a plain ``SeedSequence`` -- and only after the first and last
children's states have been checked against numpy's own; anything else
(another bit generator, a custom seed sequence, a numpy whose seed
sequence cannot be restored from its state, fewer than :data:`BULK_MIN`
children) goes through ``BitGenerator.spawn``.
"""
from __future__ import annotations

import gc

import numpy as np

__all__ = ["spawn_bit_generators", "spawn_streams", "copy_streams"]

_MASK = 0xFFFFFFFF
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
_XSHIFT = np.uint32(16)

#: Below this many children, numpy's own spawn (the bulk arithmetic has a
#: fixed cost of a few hundred µs).
BULK_MIN = 32


def _int_words(value: int) -> list[int]:
    """The 32-bit words of a non-negative integer, least significant first
    ([0] for 0)."""
    value = int(value)
    if value < 0:
        raise ValueError("expected a non-negative integer")
    words = [value & _MASK]
    value >>= 32
    while value > 0:
        words.append(value & _MASK)
        value >>= 32
    return words


def _words(x) -> list[int]:
    """Entropy or spawn key as 32-bit words (integers and sequences of them);
    anything else raises TypeError (the caller then leaves it to numpy)."""
    if isinstance(x, np.ndarray) and x.dtype == np.uint32:
        return [int(v) for v in x]
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return _int_words(x)
    if isinstance(x, (list, tuple, np.ndarray)):
        return [w for v in x for w in _words(v)]
    raise TypeError(f"cannot read {type(x).__name__} as seed words")


class _Hash:
    """numpy's ``hashmix`` with its running multiplier, applied to a column
    of uint32 values (one per child)."""

    def __init__(self, init: int, mult: int):
        self.h, self.mult = init, mult

    def __call__(self, v: np.ndarray) -> np.ndarray:
        v = v ^ np.uint32(self.h)
        self.h = (self.h * self.mult) & _MASK
        v = v * np.uint32(self.h)
        return v ^ (v >> _XSHIFT)


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    r = np.uint32(_MIX_MULT_L) * x - np.uint32(_MIX_MULT_R) * y
    return r ^ (r >> _XSHIFT)


def _pools(entropy: np.ndarray, pool_size: int) -> np.ndarray:
    """The mixed pools (n, pool_size) of n seed sequences whose entropy
    words are the rows of ``entropy`` (n, L), all of one length."""
    n, length = entropy.shape
    hashmix = _Hash(_INIT_A, _MULT_A)
    zero = np.zeros(n, dtype=np.uint32)
    pool = [hashmix(entropy[:, i] if i < length else zero) for i in range(pool_size)]
    for src in range(pool_size):
        for dst in range(pool_size):
            if src != dst:
                pool[dst] = _mix(pool[dst], hashmix(pool[src]))
    for src in range(pool_size, length):
        for dst in range(pool_size):
            pool[dst] = _mix(pool[dst], hashmix(entropy[:, src]))
    return np.stack(pool, axis=1)


def _state_words(pools: np.ndarray, n_words: int) -> np.ndarray:
    """``generate_state(n_words, np.uint64)`` of every pool: (n, n_words)."""
    pool_size = pools.shape[1]
    hashmix = _Hash(_INIT_B, _MULT_B)
    half = [hashmix(pools[:, i % pool_size]) for i in range(2 * n_words)]
    low = np.stack(half[0::2], axis=1).astype(np.uint64)
    high = np.stack(half[1::2], axis=1).astype(np.uint64)
    return low | (high << np.uint64(32))


class _SpawnedSeq(np.random.SeedSequence):
    """A child seed sequence restored from its precomputed pool, which gives
    its bit generator the precomputed state words once; otherwise numpy's
    ``SeedSequence`` (``spawn``, ``generate_state``, pickling)."""

    __slots__ = ("_first",)

    def generate_state(self, n_words, dtype=np.uint32):
        first = getattr(self, "_first", None)
        if first is not None and n_words == first.shape[0] and np.dtype(dtype) == np.uint64:
            self._first = None
            return first
        return super().generate_state(n_words, dtype)


def _restore(cls, entropy, n_children: int, pool: np.ndarray, pool_size: int, key: tuple):
    """A seed sequence of type ``cls`` with the given state, built without
    re-mixing its pool (Cython's pickling hook of numpy's cdef class)."""
    seq = cls.__new__(cls)
    seq.__setstate_cython__((entropy, n_children, pool, pool_size, key))
    return seq


def _bulk_children(bg: np.random.BitGenerator, n: int):
    """The pools and PCG64 state words of the n children a spawn of ``bg``
    would give, checked against numpy's own (first and last), and a
    function that moves the parent on by n children as ``spawn`` does; or
    None if this parent or numpy is not the case handled."""
    seq = bg.seed_seq
    if type(bg) is not np.random.PCG64 or type(seq) is not np.random.SeedSequence:
        return None
    entropy, key, pool_size = seq.entropy, tuple(seq.spawn_key), int(seq.pool_size)
    first = int(seq.n_children_spawned)
    if first + n > _MASK:  # the children's last key word must be one word
        return None
    try:
        run, spawn = _words(entropy), _words(key)
    except (TypeError, ValueError):
        return None
    # The children's entropy: the run's words (padded to the pool), the
    # parent's key, the child's index.
    run = run + [0] * max(0, pool_size - len(run))
    head = np.array(run + spawn, dtype=np.uint32)
    entropy_rows = np.empty((n, head.size + 1), dtype=np.uint32)
    entropy_rows[:, :-1] = head
    entropy_rows[:, -1] = np.arange(first, first + n, dtype=np.uint32)
    pools = _pools(entropy_rows, pool_size)
    words = _state_words(pools, 4)      # PCG64: 128-bit state and increment
    # Checked against numpy's own children (first and last): a numpy whose
    # seed sequence differs is left to its own spawn.
    for i in {0, n - 1}:
        real = np.random.SeedSequence(entropy, spawn_key=key + (first + i,),
                                      pool_size=pool_size)
        if not (np.array_equal(real.pool, pools[i]) and
                np.array_equal(real.generate_state(4, np.uint64), words[i])):
            return None
    try:
        # The restoring hook is tried on a probe first (the parent after the
        # spawn, whose next child must be numpy's): the parent is changed
        # only by a hook known to work.
        probe = _restore(np.random.SeedSequence, entropy, first + n, seq.pool, pool_size, key)
        nxt = np.random.SeedSequence(entropy, spawn_key=key + (first + n,), pool_size=pool_size)
        if not (probe.n_children_spawned == first + n and
                np.array_equal(probe.spawn(1)[0].pool, nxt.pool)):
            return None
    except (AttributeError, TypeError, ValueError, IndexError):
        return None

    def advance():
        seq.__setstate_cython__((entropy, first + n, seq.pool, pool_size, seq.spawn_key))

    return pools, words, (entropy, pool_size, key, first), advance


def _bulk(bg: np.random.BitGenerator, n: int) -> list | None:
    """The bulk spawn of n PCG64 children, or None if this parent or numpy
    is not the case it handles."""
    children = _bulk_children(bg, n)
    if children is None:
        return None
    pools, words, (entropy, pool_size, key, first), advance = children
    try:
        kids = []
        for i in range(n):
            child = _restore(_SpawnedSeq, entropy, 0, pools[i], pool_size, key + (first + i,))
            child._first = words[i]
            kids.append(np.random.PCG64(child))
    except (AttributeError, TypeError, ValueError, IndexError):
        return None
    # The parent moves on by n children, as with spawn.
    advance()
    return kids


def spawn_streams(rng: np.random.Generator, n: int):
    """The trees' streams of ``rng.spawn(n)``, as :meth:`Forest.fit
    <mondrian._ext._forest.Forest.fit>` takes them: where :func:`_bulk`
    applies (a PCG64 parent with a plain SeedSequence, at least
    :data:`BULK_MIN` children), the (n, 4) uint64 seed words of the
    children's PCG64 (``generate_state(4, np.uint64)`` of each child's seed
    sequence), from which the forest seeds numpy's PCG64 in C
    (``c/pcg64.h``) -- no Python object per tree; else the children's bit
    generators (:func:`spawn_bit_generators`).  Either way the same streams,
    and ``rng``'s seed sequence advanced by n children as by ``spawn``."""
    if n >= BULK_MIN:
        children = _bulk_children(rng.bit_generator, n)
        if children is not None:
            _, words, _, advance = children
            advance()
            return np.ascontiguousarray(words)
    return spawn_bit_generators(rng, n)


def copy_streams(streams):
    """Streams as :func:`spawn_streams` returns them, independent of these:
    seed words are values (a copy of the array); bit generators are copied
    at their state (``_forest.copy_bit_generator``)."""
    if isinstance(streams, np.ndarray):
        return streams.copy()
    from ._ext._forest import copy_bit_generator
    return [copy_bit_generator(g) for g in streams]


def spawn_bit_generators(rng: np.random.Generator, n: int) -> list:
    """The bit generators of ``rng.spawn(n)`` (the same streams, and ``rng``'s
    seed sequence advanced by n children as by ``spawn``), without the n
    ``Generator`` wrappers, in bulk where :func:`_bulk` applies, with
    Python's cyclic garbage collector paused: a spawn allocates several
    container objects per stream, and on forests of thousands of trees the
    collections it triggered cost as much as the spawning."""
    paused = gc.isenabled()
    gc.disable()
    try:
        kids = _bulk(rng.bit_generator, n) if n >= BULK_MIN else None
        return kids if kids is not None else rng.bit_generator.spawn(n)
    finally:
        if paused:
            gc.enable()
