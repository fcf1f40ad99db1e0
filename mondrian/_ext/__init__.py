"""Compiled core of mondrian: the C library behind thin Cython modules.

The C kernels and the path's Cython loops use OpenMP threads.  Their idle
policy is scoped to our own operations (``c/threads.h``): inside one
operation the workers keep libgomp's default short spin between parallel
regions, and every entry point frees its worker pool when it returns, so no
thread of ours spins while BLAS (or anything else) runs afterwards.  Nothing
here changes ``os.environ``: ``OMP_WAIT_POLICY`` and ``GOMP_SPINCOUNT`` stay
the user's to set, and are then honoured inside our operations.
"""
