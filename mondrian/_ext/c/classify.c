/* classify.c -- products with the Mondrian feature matrix (see classify.h). */
#include "classify.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Trees handled together by one task of mt_cells_rmatvec: a point's
 * entries of the block are contiguous, so a row is read once per block. */
#define MT_TREE_BLOCK 16

int mt_forest_cell_columns(const mt_forest *f, const mt_index *col_of_node,
                           size_t n_cols, int32_t *cols, int n_threads)
{
    const size_t n_trees = f->n_trees;
    ptrdiff_t count = (ptrdiff_t)n_trees;
    if (n_cols > (size_t)INT32_MAX || (f->n_points > 0 && cols == NULL)) {
        return MT_ERR_ARG;
    }
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 8) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        const mt_index *perm = mt_forest_perm(f, (size_t)m);
        for (mt_index j = f->node_offset[m]; j < f->node_offset[m + 1]; ++j) {
            mt_index c = col_of_node[j];
            if (c == MT_NONE) {
                continue;
            }
            for (mt_index k = f->start[j]; k < f->end[j]; ++k) {
                cols[(size_t)perm[k] * n_trees + (size_t)m] = (int32_t)c;
            }
        }
    }
    return MT_OK;
}

int mt_cells_matvec(const int32_t *cols, size_t n, size_t n_trees, const double *W,
                    size_t n_cols, size_t K, double scale, double *Z, int n_threads)
{
    int bad = 0;
    ptrdiff_t rows = (ptrdiff_t)n;
    if (n == 0) {
        return MT_OK;
    }
    if (cols == NULL || W == NULL || Z == NULL || K == 0) {
        return MT_ERR_ARG;
    }
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(|| : bad) \
    num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t r = 0; r < rows; ++r) {
        const int32_t *row = cols + (size_t)r * n_trees;
        double *z = Z + (size_t)r * K;
        if (K == 1) {
            double s = 0.0;
            for (size_t m = 0; m < n_trees; ++m) {
                int32_t c = row[m];
                if (c < 0 || (size_t)c >= n_cols) {
                    bad = 1;
                    break;
                }
                s += W[c];
            }
            z[0] = scale * s;
            continue;
        }
        for (size_t k = 0; k < K; ++k) {
            z[k] = 0.0;
        }
        for (size_t m = 0; m < n_trees; ++m) {
            int32_t c = row[m];
            if (c < 0 || (size_t)c >= n_cols) {
                bad = 1;
                break;
            }
            const double *w = W + (size_t)c * K;
            for (size_t k = 0; k < K; ++k) {
                z[k] += w[k];
            }
        }
        for (size_t k = 0; k < K; ++k) {
            z[k] *= scale;
        }
    }
    return bad ? MT_ERR_ARG : MT_OK;
}

int mt_cells_rmatvec(const int32_t *cols, size_t n, size_t n_trees, const double *V,
                     const mt_index *col_offset, size_t K, double scale, double *G,
                     int n_threads)
{
    int bad = 0;
    size_t n_cols, total;
    ptrdiff_t n_blocks = (ptrdiff_t)((n_trees + MT_TREE_BLOCK - 1) / MT_TREE_BLOCK);
    if (col_offset == NULL || G == NULL || K == 0 || (n > 0 && (cols == NULL || V == NULL))) {
        return MT_ERR_ARG;
    }
    n_cols = (size_t)col_offset[n_trees];
    if (mt_mul_size(n_cols, K, &total) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    memset(G, 0, total * sizeof(double));
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) reduction(|| : bad) \
    num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t b = 0; b < n_blocks; ++b) {
        size_t m0 = (size_t)b * MT_TREE_BLOCK;
        size_t m1 = m0 + MT_TREE_BLOCK < n_trees ? m0 + MT_TREE_BLOCK : n_trees;
        mt_index lo = col_offset[m0];
        mt_index hi = col_offset[m1];
        for (size_t i = 0; i < n && !bad; ++i) {
            const int32_t *row = cols + i * n_trees;
            const double *v = V + i * K;
            for (size_t m = m0; m < m1; ++m) {
                mt_index c = row[m];
                if (c < col_offset[m] || c >= col_offset[m + 1]) {
                    bad = 1;
                    break;
                }
                double *g = G + (size_t)c * K;
                for (size_t k = 0; k < K; ++k) {
                    g[k] += v[k];
                }
            }
        }
        if (!bad && scale != 1.0) {
            for (size_t c = (size_t)lo * K; c < (size_t)hi * K; ++c) {
                G[c] *= scale;
            }
        }
    }
    return bad ? MT_ERR_ARG : MT_OK;
}
