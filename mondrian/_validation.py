"""Argument checks shared by every estimator and feature map.

Each check raises ``TypeError`` (wrong kind of value) or ``ValueError``
(right kind, invalid value) with a message that names the argument.
"""
from __future__ import annotations

import math
import numbers
import os
import re

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import column_or_1d, validate_data

__all__ = [
    "check_auto_or",
    "check_lifetime",
    "check_positive_float",
    "check_int",
    "check_bool",
    "check_random_generator",
    "resolve_n_jobs",
    "available_memory",
    "check_target_scale",
    "check_feature_names",
    "check_array_input",
    "check_alphas",
    "check_fraction",
    "check_length_scales",
    "check_coefficients",
    "check_rotation",
]


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_lifetime(value, name: str = "lifetime", *, upper: float | None = None) -> float:
    """A finite lifetime (inverse kernel width) >= 0, optionally <= ``upper``."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value < 0.0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    if upper is not None and value > upper:
        raise ValueError(f"{name}={value!r} exceeds the fitted lifetime {float(upper)!r}; "
                         f"refit (or extend) the trees to a larger lifetime")
    return value


def check_auto_or(value, name: str, check, expected: str = "a valid value"):
    """'auto', or ``value`` validated by ``check(value, name)``; any other
    string is refused, naming ``name`` and what it ``expected``."""
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"{name} must be 'auto' or {expected}, got {value!r}")
        return value
    return check(value, name)


def check_positive_float(value, name: str, *, allow_zero: bool = False) -> float:
    """A finite real number > 0 (or >= 0 with ``allow_zero``)."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value < 0.0 or (value == 0.0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}")
    return value


def check_bool(value, name: str) -> bool:
    """A bool (Python or numpy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def check_int(value, name: str, *, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (bools are rejected)."""
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_alphas(alphas) -> np.ndarray:
    """A non-empty 1-d float array of finite alphas > 0 (ridge regularisations)."""
    if _is_real(alphas):
        alphas = [alphas]
    try:
        arr = np.asarray(alphas, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"alphas must be a sequence of positive floats, got {alphas!r}") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"alphas must be a non-empty 1-d sequence, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"alphas must be finite and > 0, got {arr.tolist()}")
    return arr


def check_rotation(value, name: str = "rotation") -> str | None:
    """The input rotation of a Mondrian forest: None (axis-aligned cuts) or
    'uniform' (one Haar-random rotation per tree)."""
    if value is None or (isinstance(value, str) and value == "uniform"):
        return value
    raise ValueError(f"{name} must be None or 'uniform', got {value!r}")


def check_fraction(value, name: str) -> float:
    """A float in the open interval (0, 1)."""
    value = check_positive_float(value, name)
    if value >= 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return value


def check_length_scales(length_scale, n_features: int, name: str = "length_scale") -> np.ndarray:
    """A positive scalar or per-dimension vector of length scales, as an array of width D."""
    if np.ndim(length_scale) == 0:
        return np.full(n_features, check_positive_float(length_scale, name))
    ls = np.asarray(length_scale)
    if ls.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a positive number or an array of them, got dtype {ls.dtype}")
    ls = ls.astype(np.float64)
    if ls.ndim != 1 or ls.shape[0] != n_features:
        raise ValueError(f"{name} must be a scalar or have shape ({n_features},), got shape {ls.shape}")
    if not np.all(np.isfinite(ls)) or np.any(ls <= 0):
        raise ValueError(f"{name} must be finite and > 0 in every dimension, got {ls!r}")
    return ls


def check_coefficients(coefficients, name: str = "coefficients") -> np.ndarray:
    """Maclaurin coefficients a₀..a_K: a non-empty 1-d array, finite, ≥ 0, not all 0."""
    a = np.asarray(coefficients)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {a.dtype}")
    a = a.astype(np.float64)
    if a.ndim != 1 or a.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 1-d array, got shape {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"{name} must be finite and >= 0 (Schoenberg), got {a!r}")
    if not np.any(a > 0):
        raise ValueError(f"{name} must not be all zero")
    return a


def check_random_generator(random_state) -> np.random.Generator:
    """A numpy ``Generator`` from ``random_state``.

    Accepts None (fresh entropy), an int or SeedSequence (reproducible), a
    ``Generator`` (used as is, so repeated fits differ), or a legacy
    ``RandomState`` (a seed is drawn from it, as scikit-learn does).

    A ``SeedSequence`` is copied first: spawning child streams
    (``Generator.spawn``) advances the counter of the sequence it is given,
    so without the copy every fit with the same ``SeedSequence`` would draw
    other streams than the one before.
    """
    if isinstance(random_state, np.random.SeedSequence):
        random_state = np.random.SeedSequence(
            random_state.entropy, spawn_key=random_state.spawn_key,
            pool_size=random_state.pool_size,
            n_children_spawned=random_state.n_children_spawned)
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        if isinstance(random_state, (bool, np.bool_)):
            raise TypeError("random_state must be None, an int, a SeedSequence, "
                            "a Generator or a RandomState, got bool")
        if isinstance(random_state, numbers.Integral) and random_state < 0:
            raise ValueError(f"random_state must be >= 0, got {random_state}")
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    raise TypeError("random_state must be None, an int, a SeedSequence, a Generator "
                    f"or a RandomState, got {type(random_state).__name__}")


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, else the machine's)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


#: Largest ``|n_jobs|`` accepted: the C core counts threads in a C ``int``.
MAX_N_JOBS = 2**31 - 1


def resolve_n_jobs(n_jobs) -> int:
    """Number of threads for ``n_jobs``.

    None and -1 mean every available core (as scikit-learn's OpenMP-based
    estimators do), -2 all but one, and so on (at least one thread); a
    positive count is capped at the available cores: more threads than
    cores only compete for them (and thousands of threads exhaust the
    OpenMP runtime).  ``|n_jobs|`` above :data:`MAX_N_JOBS` (2³¹ - 1, the
    C core's thread count is a C ``int``) is a ``ValueError``, checked
    before anything reaches C.
    """
    if n_jobs is None:
        return available_cores()
    if not isinstance(n_jobs, numbers.Integral) or isinstance(n_jobs, (bool, np.bool_)):
        raise TypeError(f"n_jobs must be None or an integer, got {type(n_jobs).__name__}")
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("n_jobs must be nonzero (None or -1: all cores)")
    if abs(n_jobs) > MAX_N_JOBS:
        raise ValueError(f"n_jobs={n_jobs} is out of range: |n_jobs| must be at most "
                         f"{MAX_N_JOBS} (None or -1: all {available_cores()} cores)")
    cores = available_cores()
    if n_jobs > 0:
        return min(n_jobs, cores)
    return max(1, cores + 1 + n_jobs)


def _meminfo_available() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (Linux), else the physical memory."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def _address_space_left() -> int | None:
    """RLIMIT_AS less this process's current virtual size, if a limit is set."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    try:
        with open("/proc/self/statm") as fh:
            used = int(fh.read().split()[0]) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, IndexError):
        used = 0
    return max(0, soft - used)


def _cgroup_left() -> int | None:
    """A cgroup v2 memory limit less the group's current usage, if set."""
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            limit = fh.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current") as fh:
            current = int(fh.read().strip())
        return max(0, int(limit) - current)
    except (OSError, ValueError):
        return None


def available_memory() -> int | None:
    """Bytes this process can still allocate, as far as the system says.

    The least of: the memory the kernel reports available (``MemAvailable``
    of ``/proc/meminfo``; elsewhere the physical memory), the address-space
    limit ``RLIMIT_AS`` less the current virtual size, and a cgroup (v2)
    memory limit less the group's usage.  None if none of them is known.
    """
    known = [v for v in (_meminfo_available(), _address_space_left(), _cgroup_left())
             if v is not None]
    return min(known) if known else None


def format_bytes(n: float) -> str:
    """``n`` bytes in a readable unit (1024-based)."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n:.1f} PiB"  # pragma: no cover


#: Largest root-sum-of-squares of centred targets accepted, so that squares
#: of anything on the targets' scale, summed over the rows, stay far below
#: the largest double (1.8e308): (1e150)² = 1e300.
MAX_TARGET_NORM = 1e150

#: ``what`` of :func:`check_target_scale` for the forests, whose node
#: statistics square the targets.
FOREST_STATISTICS = "the forest's node statistics"


def check_target_scale(y: np.ndarray, name: str = "y", *, centre: bool = True,
                       what: str = "ridge regression") -> None:
    """Reject finite targets too large to square in doubles (ridge regression,
    a forest's node statistics, a Gaussian process likelihood).

    ``centre=False`` takes y as already centred (e.g. new targets minus the
    mean of a fitted model's): its own mean is not subtracted.  ``what``
    names the computation in the message (the default, or a forest's node
    statistics, a Gaussian process likelihood: they square y too).

    Ridge fits and their validation errors square the targets (residual
    sums of squares, ``yᵀy``, the evidence's quadratic form); targets whose
    centred Euclidean norm exceeds :data:`MAX_TARGET_NORM` would overflow
    there and turn the selection into NaN.  Rescaling y (e.g. dividing it
    by its standard deviation) changes nothing but the units of the fit.
    """
    y = np.asarray(y, dtype=np.float64)
    if y.size == 0:
        return
    scale = largest_magnitude(y)
    # ‖y - ȳ‖ <= ‖y‖ <= √n·max|y|: within the bound, no norm is needed (the
    # common case, and a stream's one-point batches: a third of their
    # validation); NaN and inf fail the comparison and take the full check.
    if scale * math.sqrt(y.size) <= MAX_TARGET_NORM:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        # Norm of y / scale, then scaled back: no overflow in the squares.
        shift = np.mean(y / scale) if centre and scale > 0 else 0.0
        norm = scale * float(np.linalg.norm(y / scale - shift)) if scale > 0 else 0.0
    if not np.isfinite(norm) or norm > MAX_TARGET_NORM:
        mean = f"mean({name})" if centre else "the fitted mean"
        raise ValueError(
            f"{name} is too large for {what} in double precision: the norm of "
            f"{name} - {mean} is {norm:.3g} (largest |{name}{'' if centre else ' - ' + mean}| "
            f"{scale:.3g}), above "
            f"{MAX_TARGET_NORM:g}; rescale {name} (e.g. divide it by its standard deviation)")


def check_fitted_features(features, name: str = "features"):
    """A fitted :class:`~mondrian.MondrianFeatures` whose forest keeps its
    training points (what a forest estimator built on its trees reads)."""
    from .features import MondrianFeatures

    if not isinstance(features, MondrianFeatures):
        raise TypeError(f"{name} must be a fitted MondrianFeatures, got "
                        f"{type(features).__name__}")
    if not hasattr(features, "forest_"):
        raise ValueError(f"{name} is not fitted: call its fit first")
    if not features.forest_.stores_points:
        raise ValueError(f"{name} keeps no training points (store_points=False or a dask "
                         f"fit): the node statistics need them; fit with store_points=True")
    return features


def check_feature_names(estimator, X, name: str) -> None:
    """Column names of a second data set (e.g. ``X_val``) must be those of ``X``.

    Applies when both ``X`` (at ``fit``: ``estimator.feature_names_in_``)
    and this data set are data frames with string column names; an array
    without names is taken column by column, as scikit-learn does.
    """
    fitted = getattr(estimator, "feature_names_in_", None)
    columns = getattr(X, "columns", None)
    if fitted is None or columns is None:
        return
    names = np.asarray(columns, dtype=object)
    if names.shape != fitted.shape or not np.array_equal(names, fitted):
        raise ValueError(f"{name} has the columns {list(names)}, but X had "
                         f"{list(fitted)}: pass {name} with the columns of X")


def check_array_input(estimator, X, *, reset: bool, name: str = "X",
                      y="no_validation", y_numeric: bool = False):
    """Validate dense 2-d finite input (and ``y``) the scikit-learn way.

    Returns a C-contiguous float64 copy-or-view of X (and y if it is passed;
    ``y=None`` passed explicitly is an error, as for a supervised ``fit``),
    and sets or checks ``n_features_in_`` on ``estimator``.  Sparse input is
    rejected with a ``TypeError`` that says so.
    """
    for arg, value in ((name, X), ("y", y)):
        module = type(value).__module__ or ""
        if module == "dask" or module.startswith(("dask.", "dask_expr.")):
            raise TypeError(f"{type(estimator).__name__} does not take a dask {arg} here; "
                            f"MondrianFeatures.fit/transform and MondrianKernelRidge.fit/"
                            f"predict do (see the Dask page of the user guide); compute "
                            f"{arg} first if it fits in memory")
    if sp.issparse(X):
        raise TypeError(f"{type(estimator).__name__} does not support sparse input {name}: "
                        f"sparse data was passed, but dense data is required "
                        f"(use {name}.toarray() for small data)")
    if reset:
        # validate_data(reset=True) sets n_features_in_ (and the feature
        # names) before the checks that may still fail: a failed fit must
        # leave a fitted estimator as it was.
        saved = {k: getattr(estimator, k) for k in ("n_features_in_", "feature_names_in_")
                 if hasattr(estimator, k)}
        try:
            return _check_array_input(estimator, X, reset=reset, name=name, y=y,
                                      y_numeric=y_numeric)
        except BaseException:
            for k in ("n_features_in_", "feature_names_in_"):
                if k in saved:
                    setattr(estimator, k, saved[k])
                elif hasattr(estimator, k):
                    delattr(estimator, k)
            raise
    return _check_array_input(estimator, X, reset=reset, name=name, y=y, y_numeric=y_numeric)


def _check_array_input(estimator, X, *, reset: bool, name: str, y, y_numeric: bool):
    kwargs = dict(reset=reset, dtype=np.float64, order="C", accept_sparse=False,
                  ensure_all_finite=True, ensure_min_samples=1)
    scale = None if reset else _fitted_scale(estimator)
    if isinstance(y, str) and y == "no_validation":
        if not reset and _is_ready(estimator, X):
            _check_range(X, name, scale)
            return X
        with _naming(name):
            X = validate_data(estimator, X, **kwargs)
        _check_range(X, name, scale)
        return X
    if not reset and _is_ready(estimator, X) and _y_is_ready(y, X.shape[0]):
        _check_range(X, name, scale)
        return X, y
    with _naming(f"{name}, y"):
        X, y = validate_data(estimator, X, y, y_numeric=y_numeric, multi_output=True, **kwargs)
    _check_range(X, name, scale)
    return X, y


class _naming:
    """Context manager: a ``ValueError`` of scikit-learn's validation whose
    message names none of the arguments (``Found array with 0 sample(s)``,
    ``could not convert string to float``) is raised again with them as a
    prefix, e.g. ``X: Found array with 0 sample(s)``."""

    def __init__(self, names: str):
        self.names = names

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not ValueError:   # subclasses carry their own meaning
            return False
        message = str(exc)
        if any(re.search(rf"\b{re.escape(n.strip())}\b", message)
               for n in self.names.split(",")):
            return False
        raise ValueError(f"{self.names}: {message}") from exc


def plain_scalar(value):
    """A numpy scalar as the Python scalar it holds (for messages: numpy 2
    writes ``np.int64(0)`` where ``0`` is meant), anything else as it is."""
    return value.item() if isinstance(value, np.generic) else value


#: Up to this many entries :func:`_proves_finite` tests them one by one:
#: for a stream's small batches the flags cost less than the error-state
#: context the sum needs (1.5 against 2.8 µs on a row of 21).
_SMALL_ENTRIES = 256


def _proves_finite(a: np.ndarray) -> bool:
    """True only if every entry of ``a`` is finite.  Up to
    :data:`_SMALL_ENTRIES` entries the answer is exact (entry by entry);
    above, by the sum: a finite sum proves every entry finite (NaN and inf
    propagate), a sum that is not finite proves nothing (finite entries may
    overflow it), and False then means "look closer"."""
    if a.size <= _SMALL_ENTRIES:
        return bool(np.isfinite(a).all())
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.add.reduce(a, axis=None)))


def all_finite(a: np.ndarray) -> bool:
    """Whether every entry of the float array ``a`` is finite, without an
    array of flags where the sum settles it (:func:`_proves_finite`); only a
    large array whose sum is not finite -- a NaN or an infinity, or finite
    entries whose sum overflows -- is settled entry by entry."""
    return _proves_finite(a) or (a.size > _SMALL_ENTRIES and bool(np.all(np.isfinite(a))))


def largest_magnitude(a: np.ndarray) -> float:
    """max |entry| of a non-empty real array without an array of magnitudes
    (for a small one the magnitudes cost less than two reductions)."""
    if a.size <= _SMALL_ENTRIES:
        return float(np.abs(a).max())
    return float(max(np.max(a), -np.min(a)))


def _is_ready(estimator, X) -> bool:
    """True if X is already what the full validation would return for a
    fitted estimator without feature names: a C-contiguous, finite, 2-d
    float64 ndarray (not a subclass) with ``n_features_in_`` columns and at
    least one row.  This skips scikit-learn's generic checks, about 0.1 ms,
    on the common path; anything else takes the full path and its messages.
    Finiteness by :func:`_proves_finite`: a large X whose sum overflows
    merely goes down the full path.
    """
    if (type(X) is not np.ndarray or X.dtype != np.float64 or X.ndim != 2
            or not X.flags.c_contiguous or X.shape[0] < 1
            or hasattr(estimator, "feature_names_in_")
            or X.shape[1] != getattr(estimator, "n_features_in_", -1)):
        return False
    return _proves_finite(X)


def _y_is_ready(y, n_rows: int) -> bool:
    """True if y is what scikit-learn's validation of a supervised target
    returns unchanged: a 1-d ndarray (not a subclass) of n_rows finite
    floats or of integers (the streams of ``partial_fit`` calls, where the
    generic checks cost more than the work)."""
    if type(y) is not np.ndarray or y.ndim != 1 or y.shape[0] != n_rows:
        return False
    if y.dtype.kind in "iu":
        return True
    if y.dtype != np.float64:
        return False
    return _proves_finite(y)


def target_column(y):
    """``column_or_1d(y, warn=True)``, a 1-d ndarray returned as it is
    without the generic checks (they cost more than a small batch of a
    ``partial_fit`` stream)."""
    if type(y) is np.ndarray and y.ndim == 1:
        return y
    return column_or_1d(y, warn=True)


def _check_range(X: np.ndarray, name: str, scale: np.ndarray | None = None) -> None:
    """Reject data whose per-feature ranges overflow double precision (X
    finite: a single row has none), and, with a fitted per-feature scale l
    (``feature_scale_``), data whose coordinates x / l or their ranges do:
    the trees would see infinities."""
    if X.shape[0] < 2 and scale is None:
        return
    if X.size == 0:
        return
    lo, hi = X.min(axis=0), X.max(axis=0)
    with np.errstate(over="ignore"):
        total = np.sum(hi - lo)
        if not np.isfinite(total):
            raise ValueError(f"{name}: the feature ranges overflow double precision; "
                             f"rescale {name}")
        if scale is not None:
            top = np.maximum(np.abs(lo), np.abs(hi)) / scale
            if not (np.all(np.isfinite(top)) and np.isfinite(np.sum((hi - lo) / scale))):
                raise ValueError(f"{name}: {name} divided by the fitted feature_scale_ "
                                 f"overflows double precision (feature(s) "
                                 f"{np.flatnonzero(~np.isfinite(top)).tolist()}); these "
                                 f"values are far outside the training data's scale")


def _fitted_scale(estimator) -> np.ndarray | None:
    """The per-feature scale a fitted estimator divides its inputs by: its
    ``feature_scale_``, or its forest's (MondrianFeatures), or None."""
    scale = getattr(estimator, "feature_scale_", None)
    return None if scale is None else np.asarray(scale)


def check_lifetime_ratios(value, n_lifetimes: int, name: str = "lifetime_ratios") -> np.ndarray:
    """The generalised jackknife's lifetime multipliers a_0 = 1, a_1, ..., a_J:
    ``n_lifetimes`` = J + 1 distinct finite numbers > 0, the first equal to 1
    (the lifetime λ itself)."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a sequence of positive floats, got {value!r}") from exc
    if arr.ndim != 1 or arr.size != n_lifetimes:
        raise ValueError(f"{name} must be a 1-d sequence of debias_order + 1 = {n_lifetimes} "
                         f"numbers, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {arr.tolist()}")
    if arr[0] != 1.0:
        raise ValueError(f"{name}[0] must be 1 (the lifetime itself), got {float(arr[0])!r}")
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{name} must be distinct, got {arr.tolist()}")
    return arr
