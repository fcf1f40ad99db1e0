/* dual.c -- the Mondrian kernel matrix from cell labels (see dual.h). */
#include "dual.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Equal labels of row x against rows y0..y3 (n_trees each) into out[0..3]. */
static void count4(const uint16_t *restrict x, const uint16_t *restrict y0,
                   const uint16_t *restrict y1, const uint16_t *restrict y2,
                   const uint16_t *restrict y3, size_t n, uint16_t out[4])
{
    uint16_t c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    for (size_t k = 0; k < n; ++k) {
        uint16_t v = x[k];
        c0 += (uint16_t)(v == y0[k]);
        c1 += (uint16_t)(v == y1[k]);
        c2 += (uint16_t)(v == y2[k]);
        c3 += (uint16_t)(v == y3[k]);
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

static uint16_t count1(const uint16_t *restrict x, const uint16_t *restrict y, size_t n)
{
    uint16_t c = 0;
    for (size_t k = 0; k < n; ++k) {
        c += (uint16_t)(x[k] == y[k]);
    }
    return c;
}

/* Row i of K against rows [j0, n_b) of b. */
static void kernel_row(const uint16_t *x, const uint16_t *b, size_t j0, size_t n_b,
                       size_t n_trees, double scale, double *row)
{
    uint16_t c[4];
    size_t j = j0;
    for (; j + 3 < n_b; j += 4) {
        count4(x, b + j * n_trees, b + (j + 1) * n_trees, b + (j + 2) * n_trees,
               b + (j + 3) * n_trees, n_trees, c);
        row[j] = scale * c[0];
        row[j + 1] = scale * c[1];
        row[j + 2] = scale * c[2];
        row[j + 3] = scale * c[3];
    }
    for (; j < n_b; ++j) {
        row[j] = scale * count1(x, b + j * n_trees, n_trees);
    }
}

int mt_label_kernel(const uint16_t *a, size_t n_a, const uint16_t *b, size_t n_b,
                    size_t n_trees, double scale, double *K, int n_threads)
{
    int symmetric = b == NULL;
    size_t total;
    if (symmetric) {
        b = a;
        n_b = n_a;
    }
    if (a == NULL || K == NULL || n_trees == 0 || n_trees > MT_LABEL_MAX_TREES) {
        return MT_ERR_ARG;
    }
    if (mt_mul_size(n_a, n_b, &total) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    ptrdiff_t rows = (ptrdiff_t)n_a;
    (void)n_threads;
    /* Rows of the upper triangle shrink: hand them out in small chunks. */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 4) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t i = 0; i < rows; ++i) {
        size_t r = (size_t)i;
        kernel_row(a + r * n_trees, b, symmetric ? r : 0, n_b, n_trees, scale,
                   K + r * n_b);
    }
    if (symmetric) {
        for (size_t i = 0; i < n_a; ++i) {
            for (size_t j = 0; j < i; ++j) {
                K[i * n_b + j] = K[j * n_b + i];
            }
        }
    }
    return MT_OK;
}

int mt_forest_cell_labels(const mt_forest *f, const mt_index *col_of_node,
                          const mt_index *col_offset, uint16_t *labels, int n_threads)
{
    const size_t n_trees = f->n_trees;
    ptrdiff_t count = (ptrdiff_t)n_trees;
    for (size_t m = 0; m < n_trees; ++m) {
        if (col_offset[m + 1] - col_offset[m] > (mt_index)UINT16_MAX + 1) {
            return MT_ERR_ARG;
        }
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
            uint16_t label = (uint16_t)(c - col_offset[m]);
            for (mt_index k = f->start[j]; k < f->end[j]; ++k) {
                labels[(size_t)perm[k] * n_trees + (size_t)m] = label;
            }
        }
    }
    return MT_OK;
}
