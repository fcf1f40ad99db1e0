"""Compiled core of mondrian: the C library behind thin Cython modules.

The C kernels and the path's Cython loops use OpenMP threads (libgomp).  How
idle workers wait is a property of the OpenMP runtime, read from the
environment once, when the runtime loads.  libgomp's default -- spin for
300000 rounds between parallel regions -- is ruinous on a shared machine: a
CG path runs two regions per iteration, and with one other CPU-bound
process on two cores the spinning workers made the default fit on the CPU
data three times slower (16.2 s against 5.6 s, wall).  So, unless the user
has chosen a policy, the runtime is *loaded* with a short spin and then
sleep (``OMP_WAIT_POLICY=PASSIVE``, ``GOMP_SPINCOUNT=10000``: long enough to
bridge the serial steps between the regions of one computation), and the
two variables are removed from the environment again right after, so that
nothing else started later (a subprocess, another OpenMP runtime such as
scikit-learn's vendored one) sees them.  If libgomp was already loaded by
another library before mondrian, its policy is left as it is; a library
that shares the same libgomp and loads after mondrian shares the policy.
A user's own ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` is never touched (then
nothing is set).  In addition,
every entry point frees its worker pool when it returns (``c/threads.h``),
so no thread of ours outlives the operation that started it.
"""
import os as _os

_POLICY = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "10000"}


def _load_runtime() -> None:
    """Import the first extension module (which loads the OpenMP runtime)
    with our wait policy in the environment, then restore the environment."""
    chosen = any(name in _os.environ for name in _POLICY)
    if not chosen:
        _os.environ.update(_POLICY)
    try:
        from . import _forest  # noqa: F401  (loads libgomp)
    except ImportError:
        # A source tree without the compiled core (run from a checkout):
        # mondrian/__init__.py then turns to the installed copy, whose _ext
        # loads the runtime.  A broken installed core fails loudly at its
        # first real use.
        pass
    finally:
        if not chosen:
            for name in _POLICY:
                _os.environ.pop(name, None)


_load_runtime()
