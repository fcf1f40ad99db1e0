"""Compiled core of mondrian: the C library behind thin Cython modules.

The C kernels use OpenMP threads.  libgomp's default is to busy-wait for a
while after every parallel region (GOMP_SPINCOUNT 300000); on a small
machine those spinning threads take the cores from the BLAS threads of the
linear algebra that usually follows (a dense Cholesky solve after building
features ran 5x slower on two cores).  Sleeping at once (a passive policy)
costs a wake-up at every region instead, which the CG path pays twice per
iteration (about 15 % of its time).  Unless the user has chosen a policy,
idle OpenMP threads here spin for a short while (GOMP_SPINCOUNT 10000: long
enough to bridge the serial steps between the regions of one computation,
far too short to compete with BLAS) and then sleep.  This must happen before
the first extension module loads libgomp.
"""
import os as _os

if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    _os.environ["GOMP_SPINCOUNT"] = "10000"
