"""Argument checks shared by every estimator and feature map.

Each check raises ``TypeError`` (wrong kind of value) or ``ValueError``
(right kind, invalid value) with a message that names the argument.
"""
from __future__ import annotations

import numbers
import os

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import validate_data

__all__ = [
    "check_lifetime",
    "check_positive_float",
    "check_int",
    "check_bool",
    "check_random_generator",
    "resolve_n_jobs",
    "check_array_input",
    "check_alphas",
    "check_fraction",
    "check_length_scales",
    "check_coefficients",
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
        raise ValueError(f"{name}={value!r} exceeds the fitted lifetime {upper!r}; "
                         f"refit (or extend) the trees to a larger lifetime")
    return value


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
    """
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


def resolve_n_jobs(n_jobs) -> int:
    """Number of threads for ``n_jobs``.

    None and -1 mean every available core (as scikit-learn's OpenMP-based
    estimators do), -2 all but one, and so on; a positive count is capped
    at the available cores: more threads than cores only compete for them
    (and thousands of threads exhaust the OpenMP runtime).
    """
    if n_jobs is None:
        return available_cores()
    if not isinstance(n_jobs, numbers.Integral) or isinstance(n_jobs, (bool, np.bool_)):
        raise TypeError(f"n_jobs must be None or an integer, got {type(n_jobs).__name__}")
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("n_jobs must be nonzero (None or -1: all cores)")
    cores = available_cores()
    if n_jobs > 0:
        return min(n_jobs, cores)
    return max(1, cores + 1 + n_jobs)


def check_array_input(estimator, X, *, reset: bool, name: str = "X",
                      y="no_validation", y_numeric: bool = False):
    """Validate dense 2-d finite input (and ``y``) the scikit-learn way.

    Returns a C-contiguous float64 copy-or-view of X (and y if it is passed;
    ``y=None`` passed explicitly is an error, as for a supervised ``fit``),
    and sets or checks ``n_features_in_`` on ``estimator``.  Sparse input is
    rejected with a ``TypeError`` that says so.
    """
    if sp.issparse(X):
        raise TypeError(f"{type(estimator).__name__} does not support sparse input {name}: "
                        f"sparse data was passed, but dense data is required "
                        f"(use {name}.toarray() for small data)")
    kwargs = dict(reset=reset, dtype=np.float64, order="C", accept_sparse=False,
                  ensure_all_finite=True, ensure_min_samples=1)
    if isinstance(y, str) and y == "no_validation":
        if not reset and _is_ready(estimator, X):
            _check_range(X, name)
            return X
        X = validate_data(estimator, X, **kwargs)
        _check_range(X, name)
        return X
    X, y = validate_data(estimator, X, y, y_numeric=y_numeric, multi_output=True, **kwargs)
    _check_range(X, name)
    return X, y


def _is_ready(estimator, X) -> bool:
    """True if X is already what the full validation would return for a
    fitted estimator without feature names: a C-contiguous, finite, 2-d
    float64 ndarray (not a subclass) with ``n_features_in_`` columns and at
    least one row.  This skips scikit-learn's generic checks, about 0.1 ms,
    on the common path; anything else takes the full path and its messages.
    A finite sum proves every entry finite (NaN and inf propagate); a sum
    that overflows merely sends X down the full path.
    """
    if (type(X) is not np.ndarray or X.dtype != np.float64 or X.ndim != 2
            or not X.flags.c_contiguous or X.shape[0] < 1
            or hasattr(estimator, "feature_names_in_")
            or X.shape[1] != getattr(estimator, "n_features_in_", -1)):
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.add.reduce(X, axis=None)))


def _check_range(X: np.ndarray, name: str) -> None:
    """Reject data whose per-feature ranges overflow double precision."""
    with np.errstate(over="ignore"):
        total = np.sum(np.ptp(X, axis=0)) if X.size else 0.0
    if not np.isfinite(total):
        raise ValueError(f"{name}: the feature ranges overflow double precision; rescale {name}")
