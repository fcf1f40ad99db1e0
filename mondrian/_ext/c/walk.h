/*
 * walk.h -- per-tree quantities of many points, averaged over the trees:
 * the loop shared by the forests' predictions (mforest.c, amf.c).
 *
 * mt_walk_blocks(f, n, width, extra, visit, args, n_threads, out):
 * out (n x width, row-major) = (1/M) sum over trees m of the vector that
 * visit(f, args, m, i, scratch, out_row) adds to row i's out_row.  A visit
 * finds point i in tree m by walking the tree (mt_walk_point gives its
 * coordinates there) or by a stored path; `scratch` holds `extra` doubles
 * of the calling thread's.
 *
 * Rows go in blocks of MT_WALK_BLOCK, one thread's each, visited tree after
 * tree (trees outer, rows inner), so a tree's nodes, boxes and node values
 * are read from the cache by the block's rows instead of from memory by
 * every row (rows outer: each row's walks touched every tree, 100 trees of
 * 10^4 nodes being 200 MB; predictions were 2.2-2.9 times slower).  Each
 * row still sums its trees in tree order, so the numbers do not depend on
 * the blocks or the thread count.  Fewer walks than MT_SERIAL_WALKS run on
 * the calling thread (threads.h).
 */
#ifndef MT_WALK_H
#define MT_WALK_H

#include <stdlib.h>
#include <string.h>

#include "forest.h"
#include "threads.h"

#define MT_WALK_BLOCK 512

typedef void (*mt_walk_visit)(const mt_forest *f, const void *args, size_t m, size_t i,
                              double *scratch, double *out_row);

/* Row i of X (n x d) in tree m's coordinates, through the first d doubles of
 * scratch for a transformed forest (mt_forest_point). */
static inline const double *mt_walk_point(const mt_forest *f, const double *X, size_t m,
                                          size_t i, double *scratch)
{
    return mt_forest_point(f, m, X + i * f->n_features, scratch);
}

static inline int mt_walk_blocks(const mt_forest *f, size_t n, size_t width, size_t extra,
                                 mt_walk_visit visit, const void *args, int n_threads,
                                 double *out)
{
    const size_t M = f->n_trees;
    const ptrdiff_t n_blocks = (ptrdiff_t)((n + MT_WALK_BLOCK - 1) / MT_WALK_BLOCK);
    const int nt = mt_walk_threads(n, M, n_threads);
    int status = MT_OK;
    (void)nt;
    memset(out, 0, n * width * sizeof(double));
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) reduction(min : status)
#endif
    {
        double *scratch = malloc((extra > 0 ? extra : 1) * sizeof(double));
        if (scratch == NULL) {
            status = MT_ERR_NOMEM;
        }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (ptrdiff_t b = 0; b < n_blocks; ++b) {
            const size_t lo = (size_t)b * MT_WALK_BLOCK;
            const size_t hi = lo + MT_WALK_BLOCK < n ? lo + MT_WALK_BLOCK : n;
            for (size_t m = 0; m < M && scratch != NULL; ++m) {
                for (size_t i = lo; i < hi; ++i) {
                    visit(f, args, m, i, scratch, out + i * width);
                }
            }
        }
        free(scratch);
    }
    for (size_t q = 0; q < n * width; ++q) {
        out[q] /= (double)M;
    }
    return status;
}

#endif /* MT_WALK_H */
