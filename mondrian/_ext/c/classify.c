/* classify.c -- products with the Mondrian feature matrix (see classify.h). */
#include "classify.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Points per task of mt_cells_matvec: its block of Z stays in cache while
 * every tree adds to it. */
#define MT_POINT_BLOCK 2048

int mt_forest_cell_columns(const mt_forest *f, const mt_index *col_of_node,
                           size_t n_cols, int32_t *cols, int n_threads)
{
    const size_t n_trees = f->n_trees, n = f->n_points;
    ptrdiff_t count = (ptrdiff_t)n_trees;
    if (n_cols > (size_t)INT32_MAX || (n > 0 && cols == NULL)) {
        return MT_ERR_ARG;
    }
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 8) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        const mt_index *perm = mt_forest_perm(f, (size_t)m);
        int32_t *out = cols + (size_t)m * n;
        for (mt_index j = f->node_offset[m]; j < f->node_offset[m + 1]; ++j) {
            mt_index c = col_of_node[j];
            if (c == MT_NONE) {
                continue;
            }
            for (mt_index k = f->start[j]; k < f->end[j]; ++k) {
                out[perm[k]] = (int32_t)c;
            }
        }
    }
    return MT_OK;
}

int mt_cells_matvec(const int32_t *cols, size_t n, size_t n_trees, const double *W,
                    size_t n_cols, size_t K, double scale, double *Z, int n_threads)
{
    int bad = 0;
    ptrdiff_t n_blocks = (ptrdiff_t)((n + MT_POINT_BLOCK - 1) / MT_POINT_BLOCK);
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
    for (ptrdiff_t b = 0; b < n_blocks; ++b) {
        size_t i0 = (size_t)b * MT_POINT_BLOCK;
        size_t i1 = i0 + MT_POINT_BLOCK < n ? i0 + MT_POINT_BLOCK : n;
        double *z = Z + i0 * K;
        memset(z, 0, (i1 - i0) * K * sizeof(double));
        for (size_t m = 0; m < n_trees && !bad; ++m) {
            const int32_t *col = cols + m * n;
            if (K == 1) {
                for (size_t i = i0; i < i1; ++i) {
                    int32_t c = col[i];
                    if (c < 0 || (size_t)c >= n_cols) {
                        bad = 1;
                        break;
                    }
                    z[i - i0] += W[c];
                }
                continue;
            }
            for (size_t i = i0; i < i1; ++i) {
                int32_t c = col[i];
                if (c < 0 || (size_t)c >= n_cols) {
                    bad = 1;
                    break;
                }
                const double *w = W + (size_t)c * K;
                double *zi = z + (i - i0) * K;
                for (size_t k = 0; k < K; ++k) {
                    zi[k] += w[k];
                }
            }
        }
        for (size_t t = 0; t < (i1 - i0) * K; ++t) {
            z[t] *= scale;
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
    ptrdiff_t count = (ptrdiff_t)n_trees;
    if (col_offset == NULL || G == NULL || K == 0 || (n > 0 && (cols == NULL || V == NULL))) {
        return MT_ERR_ARG;
    }
    n_cols = (size_t)col_offset[n_trees];
    if (mt_mul_size(n_cols, K, &total) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 4) reduction(|| : bad) \
    num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t mm = 0; mm < count; ++mm) {
        size_t m = (size_t)mm;
        mt_index lo = col_offset[m], hi = col_offset[m + 1];
        const int32_t *col = cols + m * n;
        double *g = G + (size_t)lo * K;
        memset(g, 0, (size_t)(hi - lo) * K * sizeof(double));
        if (K == 1) {
            for (size_t i = 0; i < n; ++i) {
                mt_index c = col[i];
                if (c < lo || c >= hi) {
                    bad = 1;
                    break;
                }
                G[c] += V[i];
            }
        } else {
            for (size_t i = 0; i < n; ++i) {
                mt_index c = col[i];
                if (c < lo || c >= hi) {
                    bad = 1;
                    break;
                }
                double *gc = G + (size_t)c * K;
                const double *v = V + i * K;
                for (size_t k = 0; k < K; ++k) {
                    gc[k] += v[k];
                }
            }
        }
        if (scale != 1.0) {
            for (size_t t = 0; t < (size_t)(hi - lo) * K; ++t) {
                g[t] *= scale;
            }
        }
    }
    return bad ? MT_ERR_ARG : MT_OK;
}
