/* features.c -- the sparse Mondrian feature matrix (see features.h). */
#include "features.h"
#include "threads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows passed through a tree's rotation at a time (MT_ROTATE_ROWS * D
 * doubles of scratch per thread). */
#define MT_ROTATE_ROWS 64

/* Largest copy of a tile's rows divided by the forest's scale (doubles:
 * 4 MiB; the tiles have at most 2048 rows). */
#define MT_SCALED_TILE_DOUBLES ((size_t)1 << 19)

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

/* Tree m's entry for x (tree coordinates) at lambda: its active node, and
 * the value scale, times e^{-exponent} outside the node's box (lookup.h). */
static inline double entry(const mt_forest *f, size_t m, const double *x, double lambda,
                           double scale, mt_index *node)
{
    double exponent;
    *node = mt_forest_lookup(f, m, x, lambda, &exponent);
    return exponent > 0.0 ? scale * exp(-exponent) : scale;
}

/* Where a walk's entries go: the CSR arrays (store_entry) or a product
 * with coefficients (add_entry). */
typedef struct {
    const mt_index *col_of_node;
    size_t n_trees;
    int32_t *indices32;     /* store_entry */
    mt_index *indices64;
    double *data;
    const double *coef;     /* add_entry: out[i] += v coef[col] (k each) */
    size_t k;
    double *out;
} entry_sink;

typedef void (*entry_fn)(const entry_sink *s, size_t i, size_t m, mt_index j, double v);

static inline void store_entry(const entry_sink *s, size_t i, size_t m, mt_index j, double v)
{
    size_t pos = i * s->n_trees + m;
    s->data[pos] = v;
    store_index(s->indices32, s->indices64, pos, s->col_of_node[j]);
}

static inline void add_entry(const entry_sink *s, size_t i, size_t m, mt_index j, double v)
{
    const double *c = s->coef + (size_t)s->col_of_node[j] * s->k;
    double *o = s->out + i * s->k;
    (void)m;
    for (size_t q = 0; q < s->k; ++q) {
        o[q] += v * c[q];
    }
}

/* Rows [lo, hi) of X through trees [m_lo, m_hi), trees outer: every entry
 * to put(sink, ...).  A transformed (scaled or rotated) forest looks
 * points up in each tree's coordinates: the rows pass through tree m's
 * transform MT_ROTATE_ROWS at a time, into a scratch that stays in the L1
 * cache. */
static inline int walk_tile(const mt_forest *f, const double *X, size_t lo, size_t hi,
                            size_t m_lo, size_t m_hi, double lambda, double scale,
                            entry_fn put, const entry_sink *sink)
{
    const size_t d = f->n_features;
    /* A scale without rotations is every tree's transform: the tile's rows
     * are divided once for all its trees when that copy is small. */
    double *S = NULL;
    if (f->rotation == NULL && f->scale != NULL && (hi - lo) * d <= MT_SCALED_TILE_DOUBLES) {
        if ((S = malloc((hi - lo) * d * sizeof(double))) == NULL) {
            return MT_ERR_NOMEM;
        }
        mt_forest_transform(f, 0, X + lo * d, hi - lo, S);
    }
    double *Z = NULL;
    if (mt_forest_transformed(f) && S == NULL &&
        (Z = malloc(MT_ROTATE_ROWS * d * sizeof(double))) == NULL) {
        return MT_ERR_NOMEM;
    }
    for (size_t m = m_lo; m < m_hi; ++m) {
        for (size_t i0 = lo; i0 < hi; i0 += MT_ROTATE_ROWS) {
            size_t i1 = i0 + MT_ROTATE_ROWS < hi ? i0 + MT_ROTATE_ROWS : hi;
            const double *rows = S != NULL ? S + (i0 - lo) * d : X + i0 * d;
            if (Z != NULL) {
                mt_forest_transform(f, m, rows, i1 - i0, Z);
                rows = Z;
            }
            for (size_t i = i0; i < i1; ++i) {
                mt_index j;
                const double v = entry(f, m, rows + (i - i0) * d, lambda, scale, &j);
                put(sink, i, m, j, v);
            }
        }
    }
    free(Z);
    free(S);
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
    const int nt = mt_walk_threads(n, n_trees, n_threads);
    ptrdiff_t n_blocks = (count + 2047) / 2048, n_chunks = 1;
    if (n_blocks <= 1) {
        n_blocks = 1;
        n_chunks = nt < (ptrdiff_t)n_trees ? nt : (ptrdiff_t)n_trees;
    } else {
        n_blocks = (n_blocks + nt - 1) / nt * nt;
    }
    ptrdiff_t block = (count + n_blocks - 1) / n_blocks;
    ptrdiff_t n_tiles = n_blocks * n_chunks;
    const entry_sink sink = {col_of_node, n_trees, indices32, indices64, data, NULL, 0, NULL};
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
        int st = walk_tile(f, X, (size_t)lo, (size_t)hi, m_lo, m_hi, lambda, scale,
                           store_entry, &sink);
        status = st < status ? st : status;
    }
    return status;
}

int mt_forest_features_dot(const mt_forest *f, const double *X, size_t n, size_t d,
                           double lambda, const mt_index *col_of_node, double scale,
                           const double *coef, size_t k, double *out, int n_threads)
{
    const size_t n_trees = f->n_trees;
    const ptrdiff_t count = (ptrdiff_t)n;
    if (check_forest(f, lambda) != MT_OK || d != f->n_features || k == 0 ||
        (n > 0 && (X == NULL || out == NULL)) || coef == NULL) {
        return MT_ERR_ARG;
    }
    /* col_of_node comes from mt_forest_active_columns at lambda (as for the
     * functions above): its columns are rows of coef, not checked per node,
     * which would cost O(nodes) per call. */
    /* Blocks of rows, each on one thread, trees outer and rows inner (a
     * tree's nodes and boxes loaded once per block, the block's rows and
     * outputs staying in the L2 cache): every row sums its trees in tree
     * order, as the CSR product of mt_forest_features' matrix does, so the
     * result is the same numbers for any thread count. */
    const int nt = mt_walk_threads(n, n_trees, n_threads);
    /* at most 2048 rows a block, at least one block per thread (and row) */
    ptrdiff_t n_blocks = (count + 2047) / 2048;
    n_blocks = n_blocks > nt ? n_blocks : (count < nt ? count : nt);
    n_blocks = n_blocks > 0 ? n_blocks : 1;
    const ptrdiff_t block = (count + n_blocks - 1) / n_blocks;
    const entry_sink sink = {col_of_node, n_trees, NULL, NULL, NULL, coef, k, out};
    int status = MT_OK;
    memset(out, 0, n * k * sizeof(double));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) reduction(min : status)
#endif
    for (ptrdiff_t b = 0; b < n_blocks; ++b) {
        ptrdiff_t lo = b * block, hi = lo + block < count ? lo + block : count;
        if (lo >= hi) {
            continue;
        }
        int st = walk_tile(f, X, (size_t)lo, (size_t)hi, 0, n_trees, lambda, scale, add_entry,
                           &sink);
        status = st < status ? st : status;
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

/*
 * Adds to G's upper triangle (tree blocks m <= m2) the products of the
 * features of n points given as tree-major local cell labels
 * cells[m*n + i] and values w(m, i) = weights[m*n + i] (NULL: all 1),
 * times `unit`.  A tree whose values are all 1 (all_one[m], or weights
 * NULL) is counted in integer contingency tables; a pair with another value
 * is added product by product.  Threads own whole row blocks m.
 */
static int accumulate_pairs(const int32_t *cells, const double *weights,
                            const unsigned char *all_one, size_t n, size_t n_trees,
                            const mt_index *col_offset, size_t n_cols, double unit,
                            double *gram, int n_threads)
{
    int status = MT_OK;
    ptrdiff_t count = (ptrdiff_t)n_trees;
    (void)n_threads;
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
            if (weights != NULL && !(all_one[m] && all_one[m2])) {
                const double *wa = weights + (size_t)m * n, *wb = weights + m2 * n;
                for (size_t i = 0; i < n; ++i) {
                    gram[(row0 + (size_t)a[i]) * n_cols + col0 + (size_t)b[i]] +=
                        unit * wa[i] * wb[i];
                }
                continue;
            }
            if (size > MT_GRAM_TABLE) {
                for (size_t i = 0; i < n; ++i) {
                    gram[(row0 + (size_t)a[i]) * n_cols + col0 + (size_t)b[i]] += unit;
                }
                continue;
            }
            /* Four interleaved counter tables break the read-modify-write
             * chains of consecutive points that share a cell pair. */
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
    return status;
}

/* Copies G's upper triangle to its lower one, in cache-sized tiles. */
static void mirror_upper(double *gram, size_t n_cols, int n_threads)
{
    const size_t tile = 64;
    (void)n_threads;
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
}

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
     * labels. */
    status = accumulate_pairs(cells, NULL, NULL, n, n_trees, col_offset, n_cols,
                              1.0 / (double)n_trees, gram, n_threads);
    free(cells);
    mirror_upper(gram, n_cols, n_threads);
    return status;
}

/* Rows per pass of mt_forest_gram_points: 4 MiB of labels at M = 64. */
#define MT_GRAM_ROWS ((size_t)16384)

int mt_forest_gram_points(const mt_forest *f, const double *X, size_t n, size_t d,
                          double lambda, const mt_index *col_of_node,
                          const mt_index *col_offset, const double *y, size_t k,
                          double *gram, double *Pty, double *Pt1, int n_threads)
{
    const size_t n_trees = f->n_trees;
    const size_t n_cols = (size_t)col_offset[n_trees];
    const size_t chunk = n < MT_GRAM_ROWS ? (n > 0 ? n : 1) : MT_GRAM_ROWS;
    size_t bytes;
    int status = MT_OK;
    if (check_forest(f, lambda) != MT_OK || d != f->n_features || n_cols > (size_t)INT32_MAX ||
        (Pty != NULL && (y == NULL || k == 0))) {
        return MT_ERR_ARG;
    }
    const double scale = 1.0 / sqrt((double)n_trees);
    if (mt_mul_size(chunk, n_trees, &bytes) != MT_OK ||
        mt_mul_size(bytes, sizeof(double) + sizeof(int32_t), &bytes) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    int32_t *cells = malloc(chunk * n_trees * sizeof(int32_t));
    double *weights = malloc(chunk * n_trees * sizeof(double));
    unsigned char *all_one = malloc(n_trees > 0 ? n_trees : 1);
    if (cells == NULL || weights == NULL || all_one == NULL) {
        free(cells);
        free(weights);
        free(all_one);
        return MT_ERR_NOMEM;
    }
    const int rotated = mt_forest_transformed(f);
    const int nt = n_threads > 0 ? n_threads : 1;
    (void)nt;
    for (size_t start = 0; start < n && status == MT_OK; start += chunk) {
        const size_t rows = n - start < chunk ? n - start : chunk;
        const double *Xc = X + start * d;
        /* Tree-major labels and values e^{-exponent} of the chunk's points
         * (the values of mt_forest_features without the scale 1/sqrt(M)). */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) reduction(min : status)
#endif
        for (ptrdiff_t m = 0; m < (ptrdiff_t)n_trees; ++m) {
            double *Z = NULL;
            if (rotated && (Z = malloc(MT_ROTATE_ROWS * d * sizeof(double))) == NULL) {
                status = MT_ERR_NOMEM;
                continue;
            }
            int32_t *lab = cells + (size_t)m * rows;
            double *w = weights + (size_t)m * rows;
            unsigned char ones = 1;
            for (size_t i0 = 0; i0 < rows; i0 += MT_ROTATE_ROWS) {
                size_t i1 = i0 + MT_ROTATE_ROWS < rows ? i0 + MT_ROTATE_ROWS : rows;
                const double *pts = Xc + i0 * d;
                if (rotated) {
                    mt_forest_transform(f, (size_t)m, pts, i1 - i0, Z);
                    pts = Z;
                }
                for (size_t i = i0; i < i1; ++i) {
                    double exponent;
                    mt_index j = mt_forest_lookup(f, (size_t)m, pts + (i - i0) * d, lambda,
                                                  &exponent);
                    lab[i] = (int32_t)(col_of_node[j] - col_offset[m]);
                    w[i] = exponent > 0.0 ? exp(-exponent) : 1.0;
                    ones &= (unsigned char)(exponent > 0.0 ? 0 : 1);
                    /* Tree m's columns belong to this thread alone. */
                    const double phi = scale * w[i];
                    if (Pt1 != NULL) {
                        Pt1[col_of_node[j]] += phi;
                    }
                    if (Pty != NULL) {
                        const double *yi = y + (start + i) * k;
                        double *out = Pty + (size_t)col_of_node[j] * k;
                        for (size_t t = 0; t < k; ++t) {
                            out[t] += phi * yi[t];
                        }
                    }
                }
            }
            all_one[m] = ones;
            free(Z);
        }
        if (status == MT_OK) {
            status = accumulate_pairs(cells, weights, all_one, rows, n_trees, col_offset,
                                      n_cols, 1.0 / (double)n_trees, gram, n_threads);
        }
    }
    free(cells);
    free(weights);
    free(all_one);
    if (status == MT_OK) {
        mirror_upper(gram, n_cols, n_threads);
    }
    return status;
}
