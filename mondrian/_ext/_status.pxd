# C status codes (c/common.h) -> Python exceptions, and the thread count of
# a C call, shared by the Cython seams.
from ._c cimport MT_OK, MT_ERR_NOMEM, MT_ERR_ARG, MT_ERR_OVERFLOW, MT_ERR_STATE


cdef inline int check_status(int status, str what, str arg=None, str state=None) except -1:
    """Raise the exception matching a C status code (call with the GIL held).

    ``arg`` and ``state`` replace the generic messages for MT_ERR_ARG and
    MT_ERR_STATE where a module knows what they mean.
    """
    if status == MT_OK:
        return 0
    if status == MT_ERR_NOMEM:
        raise MemoryError(f"{what}: out of memory while allocating its arrays")
    if status == MT_ERR_OVERFLOW:
        raise MemoryError(f"{what}: the size of its arrays overflows the address space")
    if status == MT_ERR_ARG:
        raise ValueError(f"{what}: {arg or 'invalid argument passed to the C core'}")
    if status == MT_ERR_STATE:
        raise ValueError(f"{what}: {state or 'inconsistent tree structure'}")
    raise RuntimeError(f"{what}: unknown C status {status}")


cdef inline int check_threads(object n_threads) except -1:
    """``n_threads`` of a C call: an integer >= 1, capped at the cores this
    process may run on (more threads than cores only compete for them, and
    thousands exhaust the OpenMP runtime).  The estimators resolve
    ``n_jobs`` first (``mondrian._validation.resolve_n_jobs``); this guards
    the seams' own callers."""
    import operator
    import os
    try:
        n = operator.index(n_threads)
    except TypeError:
        raise TypeError(f"n_threads must be an integer, got {type(n_threads).__name__}") from None
    if n < 1:
        raise ValueError(f"n_threads must be >= 1, got {n}")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return <int>min(n, max(1, cores or 1))
