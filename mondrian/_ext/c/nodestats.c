/* nodestats.c -- per-node target statistics (see nodestats.h). */
#include "nodestats.h"

#include <stddef.h>

static int is_leaf(const mt_forest *f, mt_index j)
{
    return f->left[j] == MT_NONE;
}

int mt_node_stats_regression(const mt_forest *f, const double *y, int n_threads,
                             double *count, double *sum, double *sumsq)
{
    if (f->perm == NULL || (f->n_points > 0 && y == NULL)) {
        return MT_ERR_ARG;
    }
    const ptrdiff_t n_trees = (ptrdiff_t)f->n_trees;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t m = 0; m < n_trees; ++m) {
        const mt_index *perm = mt_forest_perm(f, (size_t)m);
        for (mt_index j = f->node_offset[m + 1] - 1; j >= f->node_offset[m]; --j) {
            if (is_leaf(f, j)) {
                double s = 0.0, s2 = 0.0;
                for (mt_index k = f->start[j]; k < f->end[j]; ++k) {
                    double v = y[perm[k]];
                    s += v;
                    s2 += v * v;
                }
                count[j] = (double)(f->end[j] - f->start[j]);
                sum[j] = s;
                sumsq[j] = s2;
            } else {
                mt_index a = f->left[j], b = f->right[j];
                count[j] = count[a] + count[b];
                sum[j] = sum[a] + sum[b];
                sumsq[j] = sumsq[a] + sumsq[b];
            }
        }
    }
    return MT_OK;
}

int mt_node_stats_classes(const mt_forest *f, const mt_index *labels, size_t n_classes,
                          int n_threads, double *counts)
{
    if (f->perm == NULL || n_classes == 0 || (f->n_points > 0 && labels == NULL)) {
        return MT_ERR_ARG;
    }
    for (size_t i = 0; i < f->n_points; ++i) {
        if (labels[i] < 0 || (size_t)labels[i] >= n_classes) {
            return MT_ERR_ARG;
        }
    }
    const ptrdiff_t n_trees = (ptrdiff_t)f->n_trees;
    const size_t K = n_classes;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t m = 0; m < n_trees; ++m) {
        const mt_index *perm = mt_forest_perm(f, (size_t)m);
        for (mt_index j = f->node_offset[m + 1] - 1; j >= f->node_offset[m]; --j) {
            double *c = counts + (size_t)j * K;
            if (is_leaf(f, j)) {
                for (size_t k = 0; k < K; ++k) {
                    c[k] = 0.0;
                }
                for (mt_index k = f->start[j]; k < f->end[j]; ++k) {
                    c[labels[perm[k]]] += 1.0;
                }
            } else {
                const double *a = counts + (size_t)f->left[j] * K;
                const double *b = counts + (size_t)f->right[j] * K;
                for (size_t k = 0; k < K; ++k) {
                    c[k] = a[k] + b[k];
                }
            }
        }
    }
    return MT_OK;
}
