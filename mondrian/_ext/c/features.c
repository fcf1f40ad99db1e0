/* features.c -- the sparse Mondrian feature matrix (see features.h). */
#include "features.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows passed through a tree's rotation at a time (MT_ROTATE_ROWS * D
 * doubles of scratch per thread). */
#define MT_ROTATE_ROWS 64

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

/* The forest can serve features at lambda. */
static int check_forest(const mt_forest *f, double lambda)
{
    if (!(lambda >= 0.0) || lambda > f->lifetime || f->n_nodes == 0) {
        return MT_ERR_ARG;
    }
    return MT_OK;
}

int mt_forest_features(const mt_forest *f, const double *X, size_t n, size_t d,
                       double lambda, const mt_index *col_of_node,
                       const mt_index *col_offset, double scale,
                       int32_t *indices32, mt_index *indices64, double *data,
                       int n_threads)
{
    const size_t n_trees = f->n_trees;
    ptrdiff_t count = (ptrdiff_t)n;
    if (check_outputs(indices32, indices64, col_offset[n_trees]) != MT_OK ||
        check_forest(f, lambda) != MT_OK || d != f->n_features) {
        return MT_ERR_ARG;
    }
    /* Tiles of (rows, trees), trees inside: a tree's nodes and boxes are
     * loaded into cache once per tile, so row blocks are as large as
     * possible within 2048 rows (whose data stay in the L2 cache), in a
     * multiple of the thread count so that the threads get equal shares.
     * Up to 2048 rows the trees are split into contiguous ranges instead,
     * one per thread, and the block is all the rows: each thread writes a
     * contiguous part of every row. */
    int nt = n_threads > 0 ? n_threads : 1;
    ptrdiff_t n_blocks = (count + 2047) / 2048, n_chunks = 1;
    if (n_blocks <= 1) {
        n_blocks = 1;
        n_chunks = nt < (ptrdiff_t)n_trees ? nt : (ptrdiff_t)n_trees;
    } else {
        n_blocks = (n_blocks + nt - 1) / nt * nt;
    }
    ptrdiff_t block = (count + n_blocks - 1) / n_blocks;
    ptrdiff_t n_tiles = n_blocks * n_chunks;
    /* A rotated forest looks points up in each tree's coordinates: the
     * rows of a tile pass through tree m's transform MT_ROTATE_ROWS at a
     * time, into the thread's scratch (which stays in the L1 cache). */
    const int rotated = f->rotation != NULL;
    int status = MT_OK;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt) reduction(min : status)
#endif
    for (ptrdiff_t tile = 0; tile < n_tiles; ++tile) {
        ptrdiff_t b = tile / n_chunks, c = tile % n_chunks;
        ptrdiff_t lo = b * block, hi = lo + block < count ? lo + block : count;
        if (lo >= hi) {
            continue;
        }
        size_t m_lo = (size_t)c * n_trees / (size_t)n_chunks;
        size_t m_hi = (size_t)(c + 1) * n_trees / (size_t)n_chunks;
        double *Z = NULL;
        if (rotated && (Z = malloc(MT_ROTATE_ROWS * d * sizeof(double))) == NULL) {
            status = MT_ERR_NOMEM;
            continue;
        }
        for (size_t m = m_lo; m < m_hi; ++m) {
            for (ptrdiff_t i0 = lo; i0 < hi; i0 += MT_ROTATE_ROWS) {
                ptrdiff_t i1 = i0 + MT_ROTATE_ROWS < hi ? i0 + MT_ROTATE_ROWS : hi;
                const double *rows = X + (size_t)i0 * d;
                if (rotated) {
                    mt_forest_transform(f, m, rows, (size_t)(i1 - i0), Z);
                    rows = Z;
                }
                for (ptrdiff_t i = i0; i < i1; ++i) {
                    double exponent;
                    mt_index j = mt_forest_lookup(f, m, rows + (size_t)(i - i0) * d, lambda,
                                                  &exponent);
                    size_t pos = (size_t)i * n_trees + m;
                    store_index(indices32, indices64, pos, col_of_node[j]);
                    data[pos] = exponent > 0.0 ? scale * exp(-exponent) : scale;
                }
            }
        }
        free(Z);
    }
    return status;
}

int mt_forest_features_fitted(const mt_forest *f, double lambda,
                              const mt_index *col_of_node,
                              const mt_index *col_offset, double scale,
                              int32_t *indices32, mt_index *indices64,
                              double *data, int n_threads)
{
    const size_t n_trees = f->n_trees;
    ptrdiff_t count = (ptrdiff_t)n_trees;
    if (check_outputs(indices32, indices64, col_offset[n_trees]) != MT_OK ||
        check_forest(f, lambda) != MT_OK || f->perm == NULL) {
        return MT_ERR_ARG;
    }
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        const mt_index *perm = mt_forest_perm(f, (size_t)m);
        for (mt_index j = f->node_offset[m]; j < f->node_offset[m + 1]; ++j) {
            mt_index c = col_of_node[j];
            if (c == MT_NONE) {
                continue;
            }
            for (mt_index k = f->start[j]; k < f->end[j]; ++k) {
                size_t pos = (size_t)perm[k] * n_trees + (size_t)m;
                store_index(indices32, indices64, pos, c);
                data[pos] = scale;
            }
        }
    }
    return MT_OK;
}

/* Largest cells(m) x cells(m2) block counted in a local table (4 copies of
 * int32 counters: 32 KiB, in L1); larger blocks are added to G directly. */
#define MT_GRAM_TABLE 2048

int mt_forest_gram(const mt_forest *f, double lambda, const mt_index *col_of_node,
                   const mt_index *col_offset, double *gram, int n_threads)
{
    const size_t n_trees = f->n_trees, n = f->n_points;
    size_t cells_bytes;
    size_t n_cols = (size_t)col_offset[n_trees];
    int32_t *cells;
    int status = MT_OK;
    ptrdiff_t count = (ptrdiff_t)n_trees;
    if (check_forest(f, lambda) != MT_OK || f->perm == NULL) {
        return MT_ERR_ARG;
    }
    if (n_cols > (size_t)INT32_MAX) {
        return MT_ERR_ARG;
    }
    if (mt_mul_size(n, n_trees, &cells_bytes) != MT_OK ||
        mt_mul_size(cells_bytes, sizeof(int32_t), &cells_bytes) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    cells = malloc(cells_bytes > 0 ? cells_bytes : 1);
    if (cells == NULL) {
        return MT_ERR_NOMEM;
    }
    (void)n_threads;
    /* Tree-major local cell number of every training point: cells[m*n + i]. */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        const mt_index *perm = mt_forest_perm(f, (size_t)m);
        const mt_index off = col_offset[m];
        int32_t *row = cells + (size_t)m * n;
        for (mt_index j = f->node_offset[m]; j < f->node_offset[m + 1]; ++j) {
            if (col_of_node[j] == MT_NONE) {
                continue;
            }
            for (mt_index k = f->start[j]; k < f->end[j]; ++k) {
                row[perm[k]] = (int32_t)(col_of_node[j] - off);
            }
        }
    }
    /* Block (m, m2 >= m) of G is the contingency table of the two trees'
     * labels.  Threads own whole row blocks m, so no two write one entry.
     * Four interleaved counter tables break the read-modify-write chains of
     * consecutive points that share a cell pair. */
    const double unit = 1.0 / (double)n_trees;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1) reduction(min : status)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        int32_t *table = malloc(4 * MT_GRAM_TABLE * sizeof(int32_t));
        if (table == NULL) {
            status = MT_ERR_NOMEM;
            continue;
        }
        const int32_t *a = cells + (size_t)m * n;
        const size_t row0 = (size_t)col_offset[m];
        const size_t cm = (size_t)(col_offset[m + 1] - col_offset[m]);
        for (size_t m2 = (size_t)m; m2 < n_trees; ++m2) {
            const int32_t *b = cells + m2 * n;
            const size_t col0 = (size_t)col_offset[m2];
            const size_t cm2 = (size_t)(col_offset[m2 + 1] - col_offset[m2]);
            const size_t size = cm * cm2;
            if (size > MT_GRAM_TABLE) {
                for (size_t i = 0; i < n; ++i) {
                    gram[(row0 + (size_t)a[i]) * n_cols + col0 + (size_t)b[i]] += unit;
                }
                continue;
            }
            memset(table, 0, 4 * size * sizeof(int32_t));
            size_t i = 0;
            for (; i + 4 <= n; i += 4) {
                table[(size_t)a[i] * cm2 + (size_t)b[i]]++;
                table[size + (size_t)a[i + 1] * cm2 + (size_t)b[i + 1]]++;
                table[2 * size + (size_t)a[i + 2] * cm2 + (size_t)b[i + 2]]++;
                table[3 * size + (size_t)a[i + 3] * cm2 + (size_t)b[i + 3]]++;
            }
            for (; i < n; ++i) {
                table[(size_t)a[i] * cm2 + (size_t)b[i]]++;
            }
            for (size_t u = 0; u < cm; ++u) {
                double *out = gram + (row0 + u) * n_cols + col0;
                for (size_t v = 0; v < cm2; ++v) {
                    size_t e = u * cm2 + v;
                    int32_t c = table[e] + table[size + e] + table[2 * size + e] +
                                table[3 * size + e];
                    out[v] += (double)c * unit;
                }
            }
        }
        free(table);
    }
    free(cells);
    /* Mirror the upper triangle, in cache-sized tiles. */
    const size_t tile = 64;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t bi = 0; bi < (ptrdiff_t)((n_cols + tile - 1) / tile); ++bi) {
        size_t i0 = (size_t)bi * tile, i1 = i0 + tile < n_cols ? i0 + tile : n_cols;
        for (size_t j0 = 0; j0 <= i0; j0 += tile) {
            size_t j1 = j0 + tile < n_cols ? j0 + tile : n_cols;
            for (size_t i = i0; i < i1; ++i) {
                for (size_t j = j0; j < j1 && j < i; ++j) {
                    gram[i * n_cols + j] = gram[j * n_cols + i];
                }
            }
        }
    }
    return status;
}
