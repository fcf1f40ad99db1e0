"""Compiled core of mondrian: the C library behind thin Cython modules.

The C kernels use OpenMP threads.  libgomp's default is to busy-wait for a
while after every parallel region; on a small machine those spinning threads
take the cores from the BLAS threads of the linear algebra that usually
follows (a dense Cholesky solve after building features ran 5x slower on two
cores).  Unless the user has chosen a policy, idle OpenMP threads here sleep
instead.  This must happen before the first extension module loads libgomp.
"""
import os as _os

_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
