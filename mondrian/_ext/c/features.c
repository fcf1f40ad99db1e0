/* features.c -- the sparse Mondrian feature matrix (see features.h). */
#include "features.h"

#include <math.h>

static inline void store_index(int32_t *idx32, mt_index *idx64, size_t pos,
                               mt_index value)
{
    if (idx32 != NULL) {
        idx32[pos] = (int32_t)value;
    } else {
        idx64[pos] = value;
    }
}

/* Exactly one output array, and int32 only if every column number fits. */
static int check_outputs(const int32_t *idx32, const mt_index *idx64,
                         mt_index n_columns)
{
    if ((idx32 == NULL) == (idx64 == NULL) ||
        (idx32 != NULL && n_columns > (mt_index)INT32_MAX)) {
        return MT_ERR_ARG;
    }
    return MT_OK;
}

int mt_forest_columns(mt_tree *const *trees, size_t n_trees, double lambda,
                      const mt_index *node_offset, mt_index *col_of_node,
                      mt_index *col_offset)
{
    if (!(lambda >= 0.0)) {
        return MT_ERR_ARG;
    }
    col_offset[0] = 0;
    for (size_t m = 0; m < n_trees; ++m) {
        const mt_tree *t = trees[m];
        if ((mt_index)t->n_nodes != node_offset[m + 1] - node_offset[m] ||
            lambda > t->lifetime) {
            return MT_ERR_ARG;
        }
        mt_index c = mt_tree_active_columns(t, lambda, col_of_node + node_offset[m]);
        col_offset[m + 1] = col_offset[m] + c;
    }
    return MT_OK;
}

int mt_forest_features(mt_tree *const *trees, size_t n_trees,
                       const double *X, size_t n, size_t d, double lambda,
                       const mt_index *node_offset, const mt_index *col_of_node,
                       const mt_index *col_offset, double scale,
                       int32_t *indices32, mt_index *indices64, double *data,
                       int n_threads)
{
    ptrdiff_t count = (ptrdiff_t)n;
    if (check_outputs(indices32, indices64, col_offset[n_trees]) != MT_OK) {
        return MT_ERR_ARG;
    }
    for (size_t m = 0; m < n_trees; ++m) {
        if (trees[m]->n_features != d || lambda > trees[m]->lifetime) {
            return MT_ERR_ARG;
        }
    }
    (void)n_threads;
    /* Blocks of rows, trees inside: a tree's nodes and boxes are loaded into
     * cache once per block, so blocks are as large as the threads allow,
     * within 2048 rows (whose data stay in the L2 cache). */
    int nt = n_threads > 0 ? n_threads : 1;
    ptrdiff_t block = (count + nt - 1) / nt;
    block = block < 64 ? 64 : (block > 2048 ? 2048 : block);
    ptrdiff_t n_blocks = (count + block - 1) / block;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t b = 0; b < n_blocks; ++b) {
        ptrdiff_t lo = b * block, hi = lo + block < count ? lo + block : count;
        for (size_t m = 0; m < n_trees; ++m) {
            const mt_tree *t = trees[m];
            const mt_index *cols = col_of_node + node_offset[m];
            const mt_index off = col_offset[m];
            for (ptrdiff_t i = lo; i < hi; ++i) {
                double exponent;
                mt_index j = mt_tree_lookup(t, X + (size_t)i * d, lambda, &exponent);
                size_t pos = (size_t)i * n_trees + m;
                store_index(indices32, indices64, pos, off + cols[j]);
                data[pos] = exponent > 0.0 ? scale * exp(-exponent) : scale;
            }
        }
    }
    return MT_OK;
}

int mt_forest_features_fitted(mt_tree *const *trees, size_t n_trees,
                              double lambda, const mt_index *node_offset,
                              const mt_index *col_of_node,
                              const mt_index *col_offset, double scale,
                              int32_t *indices32, mt_index *indices64,
                              double *data, int n_threads)
{
    ptrdiff_t count = (ptrdiff_t)n_trees;
    size_t n = n_trees > 0 ? trees[0]->n_points : 0;
    if (check_outputs(indices32, indices64, col_offset[n_trees]) != MT_OK) {
        return MT_ERR_ARG;
    }
    for (size_t m = 0; m < n_trees; ++m) {
        if (trees[m]->n_points != n || lambda > trees[m]->lifetime) {
            return MT_ERR_ARG;
        }
    }
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        const mt_tree *t = trees[m];
        const mt_index *cols = col_of_node + node_offset[m];
        for (size_t j = 0; j < t->n_nodes; ++j) {
            if (cols[j] == MT_NONE) {
                continue;
            }
            mt_index c = col_offset[m] + cols[j];
            for (mt_index k = t->start[j]; k < t->end[j]; ++k) {
                size_t pos = (size_t)t->perm[k] * n_trees + (size_t)m;
                store_index(indices32, indices64, pos, c);
                data[pos] = scale;
            }
        }
    }
    return MT_OK;
}
