/* dual.c -- the Mondrian kernel matrix from cell labels (see dual.h). */
#include "dual.h"

#include <string.h>

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

/* Trees compared per pass (8 KB of labels per row) and rows of b per block
 * (32 rows, 256 KB: a block stays in a core's L2 cache while every row of a
 * is compared with it).  Comparing each row of a with all rows of b over
 * all trees at once read the whole label matrix once per row of a, from
 * the L3 cache or memory (N²M bytes in all); by blocks, N²M/(2·32) bytes. */
#define MT_LABEL_CHUNK 4096
#define MT_LABEL_BLOCK 32

/* On x86-64 with glibc, GCC compiles the comparisons twice, for AVX2 (16
 * labels per instruction) and for the baseline (SSE2, 8), and the loader
 * picks one for the machine (an ifunc).  The counts are the same integers
 * either way. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define MT_LABEL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MT_LABEL_CLONES
#endif

/* Add the equal labels of row x with rows [j0, j1) of b, over `len` trees
 * from the chunk's first (b's rows are `stride` labels apart), to row[j]. */
MT_LABEL_CLONES
static void count_block(const uint16_t *x, const uint16_t *b, size_t stride, size_t j0,
                        size_t j1, size_t len, double *row)
{
    uint16_t c[4];
    size_t j = j0;
    for (; j + 3 < j1; j += 4) {
        count4(x, b + j * stride, b + (j + 1) * stride, b + (j + 2) * stride,
               b + (j + 3) * stride, len, c);
        row[j] += c[0];
        row[j + 1] += c[1];
        row[j + 2] += c[2];
        row[j + 3] += c[3];
    }
    for (; j < j1; ++j) {
        row[j] += count1(x, b + j * stride, len);
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
    const size_t n_blocks = (n_b + MT_LABEL_BLOCK - 1) / MT_LABEL_BLOCK;
    const ptrdiff_t blocks = (ptrdiff_t)n_blocks;
    (void)n_threads;
    /* Exact integer counts accumulate in K (doubles hold them exactly),
     * chunk after chunk; the same numbers for any thread count. */
    memset(K, 0, total * sizeof(double));
    for (size_t t0 = 0; t0 < n_trees; t0 += MT_LABEL_CHUNK) {
        const size_t len = n_trees - t0 < MT_LABEL_CHUNK ? n_trees - t0 : MT_LABEL_CHUNK;
        /* Each thread owns the columns of its blocks of b.  In the symmetric
         * case block q meets the rows of a up to its end (the upper
         * triangle): the last blocks are the largest, so they go first. */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1)
#endif
        for (ptrdiff_t q = 0; q < blocks; ++q) {
            const size_t blk = symmetric ? n_blocks - 1 - (size_t)q : (size_t)q;
            const size_t j0 = blk * MT_LABEL_BLOCK;
            const size_t j1 = j0 + MT_LABEL_BLOCK < n_b ? j0 + MT_LABEL_BLOCK : n_b;
            const size_t i_end = symmetric ? j1 : n_a;
            for (size_t i = 0; i < i_end; ++i) {
                size_t from = symmetric && i > j0 ? i : j0;
                count_block(a + i * n_trees + t0, b + t0, n_trees, from, j1, len,
                            K + i * n_b);
            }
        }
    }
    for (size_t k = 0; k < total; ++k) {
        K[k] *= scale;
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
