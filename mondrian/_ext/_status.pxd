# C status codes (c/common.h) -> Python exceptions, shared by the Cython seams.
from ._c cimport MT_OK, MT_ERR_NOMEM, MT_ERR_ARG, MT_ERR_OVERFLOW, MT_ERR_STATE


cdef inline int check_status(int status, str what, str arg=None, str state=None) except -1:
    """Raise the exception matching a C status code (call with the GIL held).

    ``arg`` and ``state`` replace the generic messages for MT_ERR_ARG and
    MT_ERR_STATE where a module knows what they mean.
    """
    if status == MT_OK:
        return 0
    if status == MT_ERR_NOMEM:
        raise MemoryError(f"{what}: out of memory")
    if status == MT_ERR_OVERFLOW:
        raise MemoryError(f"{what}: requested size overflows the address space")
    if status == MT_ERR_ARG:
        raise ValueError(f"{what}: {arg or 'invalid argument passed to the C core'}")
    if status == MT_ERR_STATE:
        raise ValueError(f"{what}: {state or 'inconsistent tree structure'}")
    raise RuntimeError(f"{what}: unknown C status {status}")
