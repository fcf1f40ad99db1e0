/*
 * threads.h -- hand the OpenMP worker threads back when an operation ends.
 *
 * libgomp keeps a pool of worker threads per calling thread; between
 * parallel regions they spin for a while (GOMP_SPINCOUNT, 300000 by default)
 * before sleeping.  Inside one of our operations (a CG solve: two regions
 * per iteration) that spinning is what makes the next region start at once.
 * After the operation it only takes the cores from whatever runs next --
 * typically BLAS threads of a dense solve, which it slowed five-fold on two
 * cores.  So every Cython entry point that ran parallel regions calls
 * mt_threads_release() when it is done: the calling thread's pool is freed
 * (OpenMP 5.0 omp_pause_resource_all; in libgomp the pool's threads exit),
 * and the next operation starts a new one (tens of microseconds).  No
 * environment variable is touched, and other threads' pools are not.
 */
#ifndef MT_THREADS_H
#define MT_THREADS_H

#include <stddef.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/*
 * Threads for walking `rows` points down `trees` trees (a walk: tens of
 * nanoseconds): one below MT_SERIAL_WALKS walks.  Starting a team (a new
 * pool after mt_threads_release) costs more than such work, and varies: a
 * one-row prediction of 2000 trees took 1.9 ms on two threads, 0.08 ms on
 * one; 100 rows of 350 trees a median 1.6 ms on two, 0.6 ms on one; 300
 * rows 1.0 ms on two, 1.7 ms on one.
 */
#define MT_SERIAL_WALKS ((size_t)1 << 16)

static inline int mt_walk_threads(size_t rows, size_t trees, int n_threads)
{
    /* rows * trees < MT_SERIAL_WALKS, without overflowing the product */
    const int small = trees == 0 || rows <= (MT_SERIAL_WALKS - 1) / trees;
    return small || n_threads < 1 ? 1 : n_threads;
}

static inline void mt_threads_release(void)
{
#ifdef _OPENMP
    /* Fails harmlessly (returns non-zero) inside a parallel region. */
    (void)omp_pause_resource_all(omp_pause_soft);
#endif
}

#endif /* MT_THREADS_H */
