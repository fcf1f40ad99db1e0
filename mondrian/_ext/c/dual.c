/* dual.c -- the Mondrian kernel matrix from cell labels (see dual.h). */
#include "dual.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MT_LABEL_X86 1
#endif

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

/*
 * 8-bit labels (every tree with at most 256 cells): 16 or 32 trees per
 * instruction.  An equal byte compares to 0xFF, and subtracting it adds 1
 * to that lane's count; a lane meets at most MT_LABEL_CHUNK / 16 = 256
 * bytes per call -- one too many for a byte -- so the lanes are summed
 * (psadbw: sums of 8 bytes into 64-bit lanes) every 128 steps.  Written
 * with SSE2 intrinsics (every x86-64 has them) and, where the machine has
 * it, AVX2 (chosen at each call with __builtin_cpu_supports); elsewhere a
 * plain loop.  The counts are the same integers on every path.
 */
#define MT_U8_STEPS 128

#ifndef MT_LABEL_X86
static void count_block_u8_plain(const uint8_t *x, const uint8_t *b, size_t stride, size_t j0,
                                 size_t j1, size_t len, double *row)
{
    for (size_t j = j0; j < j1; ++j) {
        const uint8_t *y = b + j * stride;
        uint16_t c = 0;
        for (size_t k = 0; k < len; ++k) {
            c += (uint16_t)(x[k] == y[k]);
        }
        row[j] += c;
    }
}
#else
/* Sum of the 16 byte lanes of v (each at most 128). */
static inline uint64_t lanes_sse2(__m128i v)
{
    __m128i s = _mm_sad_epu8(v, _mm_setzero_si128());
    return (uint64_t)_mm_cvtsi128_si64(s) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(s, s));
}

static void count_block_u8_sse2(const uint8_t *x, const uint8_t *b, size_t stride, size_t j0,
                                size_t j1, size_t len, double *row)
{
    const size_t full = len / 16 * 16;
    for (size_t j = j0; j < j1; ++j) {
        const uint8_t *y = b + j * stride;
        uint64_t c = 0;
        size_t k = 0;
        while (k < full) {
            const size_t stop = full - k < 16 * MT_U8_STEPS ? full : k + 16 * MT_U8_STEPS;
            __m128i acc = _mm_setzero_si128();
            for (; k < stop; k += 16) {
                __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(x + k));
                __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(y + k));
                acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(v, w));
            }
            c += lanes_sse2(acc);
        }
        for (; k < len; ++k) {
            c += (uint64_t)(x[k] == y[k]);
        }
        row[j] += (double)c;
    }
}

__attribute__((target("avx2"))) static void count_block_u8_avx2(
    const uint8_t *x, const uint8_t *b, size_t stride, size_t j0, size_t j1, size_t len,
    double *row)
{
    const size_t full = len / 32 * 32;
    const __m256i zero = _mm256_setzero_si256();
    size_t j = j0;
    /* four rows of b against row x: x's bytes are loaded once for four */
    for (; j + 4 <= j1; j += 4) {
        const uint8_t *y0 = b + j * stride, *y1 = y0 + stride, *y2 = y1 + stride,
                      *y3 = y2 + stride;
        __m256i t0 = zero, t1 = zero, t2 = zero, t3 = zero;
        size_t k = 0;
        while (k < full) {
            const size_t stop = full - k < 32 * MT_U8_STEPS ? full : k + 32 * MT_U8_STEPS;
            __m256i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
            for (; k < stop; k += 32) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(x + k));
                a0 = _mm256_sub_epi8(a0, _mm256_cmpeq_epi8(
                                             v, _mm256_loadu_si256((const __m256i *)(const void *)(y0 + k))));
                a1 = _mm256_sub_epi8(a1, _mm256_cmpeq_epi8(
                                             v, _mm256_loadu_si256((const __m256i *)(const void *)(y1 + k))));
                a2 = _mm256_sub_epi8(a2, _mm256_cmpeq_epi8(
                                             v, _mm256_loadu_si256((const __m256i *)(const void *)(y2 + k))));
                a3 = _mm256_sub_epi8(a3, _mm256_cmpeq_epi8(
                                             v, _mm256_loadu_si256((const __m256i *)(const void *)(y3 + k))));
            }
            t0 = _mm256_add_epi64(t0, _mm256_sad_epu8(a0, zero));
            t1 = _mm256_add_epi64(t1, _mm256_sad_epu8(a1, zero));
            t2 = _mm256_add_epi64(t2, _mm256_sad_epu8(a2, zero));
            t3 = _mm256_add_epi64(t3, _mm256_sad_epu8(a3, zero));
        }
        uint64_t out[4][4];
        _mm256_storeu_si256((__m256i *)(void *)out[0], t0);
        _mm256_storeu_si256((__m256i *)(void *)out[1], t1);
        _mm256_storeu_si256((__m256i *)(void *)out[2], t2);
        _mm256_storeu_si256((__m256i *)(void *)out[3], t3);
        for (int r = 0; r < 4; ++r) {
            const uint8_t *y = b + (j + (size_t)r) * stride;
            uint64_t c = out[r][0] + out[r][1] + out[r][2] + out[r][3];
            for (size_t q = full; q < len; ++q) {
                c += (uint64_t)(x[q] == y[q]);
            }
            row[j + (size_t)r] += (double)c;
        }
    }
    count_block_u8_sse2(x, b, stride, j, j1, len, row);
}
#endif

typedef void (*count_block_u8_fn)(const uint8_t *, const uint8_t *, size_t, size_t, size_t,
                                  size_t, double *);

static count_block_u8_fn pick_count_block_u8(void)
{
#ifdef MT_LABEL_X86
    /* A read of what the runtime's constructor found at load time (no
     * __builtin_cpu_init: it would rewrite that record from every call,
     * and label kernels run on several Python threads at once). */
    return __builtin_cpu_supports("avx2") ? count_block_u8_avx2 : count_block_u8_sse2;
#else
    return count_block_u8_plain;
#endif
}

int mt_label_kernel(const void *a, size_t n_a, const void *b, size_t n_b, size_t n_trees,
                    int width, double scale, double *K, int n_threads)
{
    int symmetric = b == NULL;
    size_t total;
    if (symmetric) {
        b = a;
        n_b = n_a;
    }
    if (a == NULL || K == NULL || n_trees == 0 || n_trees > MT_LABEL_MAX_TREES ||
        (width != 1 && width != 2)) {
        return MT_ERR_ARG;
    }
    if (mt_mul_size(n_a, n_b, &total) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    const size_t n_blocks = (n_b + MT_LABEL_BLOCK - 1) / MT_LABEL_BLOCK;
    const ptrdiff_t blocks = (ptrdiff_t)n_blocks;
    const uint16_t *a16 = a, *b16 = b;
    const uint8_t *a8 = a, *b8 = b;
    const count_block_u8_fn count_block_u8 = pick_count_block_u8();
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
                if (width == 2) {
                    count_block(a16 + i * n_trees + t0, b16 + t0, n_trees, from, j1, len,
                                K + i * n_b);
                } else {
                    count_block_u8(a8 + i * n_trees + t0, b8 + t0, n_trees, from, j1, len,
                                   K + i * n_b);
                }
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

/* Trees per task of mt_forest_cell_labels: a task owns the labels of 64
 * consecutive trees in every row (a cache line of 8-bit labels, two of
 * 16-bit ones), so threads share a line only at the tasks' edges.  With 8
 * trees a task they shared every line: two threads took longer than one
 * (90 points x 32 768 trees, 0.017 s against 0.014 s; now 0.005 s). */
#define MT_LABEL_TASK 64

/* Points up to which a task's labels go through a tile (MT_LABEL_TASK
 * trees x n points, tree-major, 64 x 4096 x 2 bytes = 512 KB at most): each
 * tree's labels are written into its own row of the tile, in its points'
 * slices' order, then every point's row of the table gets its task's
 * labels as one run.  Written straight into the table instead, a tree's
 * labels go one to a row: n lines apart, n * n_trees bytes away, which
 * evicted each other from the L1 cache when the row length was a multiple
 * of 4 KB (n_trees = 32 768: every row in the same cache set). */
#define MT_LABEL_TILE_POINTS 4096

/* Tree m's labels at the active nodes' slices: BODY for each of its points
 * i with its `label` (the slice's bounds in locals: the byte stores of BODY
 * may alias anything, and f->end[j] was read again at every point). */
#define MT_FOR_EACH_LABEL(f, col_of_node, col_offset, m, BODY)                        \
    do {                                                                             \
        const mt_index *perm_ = mt_forest_perm((f), (size_t)(m));                    \
        const mt_index first_ = (col_offset)[m];                                     \
        const mt_index j1_ = (f)->node_offset[(m) + 1];                              \
        for (mt_index j_ = (f)->node_offset[m]; j_ < j1_; ++j_) {                    \
            const mt_index c_ = (col_of_node)[j_];                                   \
            if (c_ == MT_NONE) {                                                     \
                continue;                                                            \
            }                                                                        \
            const mt_index label = c_ - first_;                                      \
            const mt_index *k_ = perm_ + (f)->start[j_], *e_ = perm_ + (f)->end[j_]; \
            for (; k_ < e_; ++k_) {                                                  \
                const size_t i = (size_t)*k_;                                        \
                BODY;                                                                \
            }                                                                        \
        }                                                                            \
    } while (0)

/* Rows i0 .. i0 + R - 1 of the table (R = 8 / sizeof(T)) from a tile of w
 * trees x n points, T-typed: for each tree, the R points' labels are read
 * as one 8-byte word and written to the R rows, which fill in order. */
#define MT_LABEL_TRANSPOSE(T, tile, out, n, n_trees, w)                               \
    do {                                                                             \
        enum { R_ = 8 / sizeof(T) };                                                 \
        size_t i0_ = 0;                                                              \
        for (; i0_ + R_ <= (n); i0_ += R_) {                                         \
            T *o_ = (out) + i0_ * (n_trees);                                         \
            for (size_t q_ = 0; q_ < (w); ++q_) {                                    \
                T v_[R_];                                                            \
                memcpy(v_, (tile) + q_ * (n) + i0_, sizeof(v_));                     \
                for (size_t r_ = 0; r_ < R_; ++r_) {                                 \
                    o_[r_ * (n_trees) + q_] = v_[r_];                                \
                }                                                                    \
            }                                                                        \
        }                                                                            \
        for (; i0_ < (n); ++i0_) {                                                   \
            for (size_t q_ = 0; q_ < (w); ++q_) {                                    \
                (out)[i0_ * (n_trees) + q_] = (tile)[q_ * (n) + i0_];                \
            }                                                                        \
        }                                                                            \
    } while (0)

int mt_forest_cell_labels(const mt_forest *f, const mt_index *col_of_node,
                          const mt_index *col_offset, void *labels, int width, int n_threads)
{
    const size_t n_trees = f->n_trees, n = f->n_points;
    const mt_index most = width == 1 ? (mt_index)UINT8_MAX + 1 : (mt_index)UINT16_MAX + 1;
    const ptrdiff_t n_tasks = (ptrdiff_t)((n_trees + MT_LABEL_TASK - 1) / MT_LABEL_TASK);
    const int tiled = n <= MT_LABEL_TILE_POINTS;
    const int nt = n_threads > 0 ? n_threads : 1;
    unsigned char *tiles = NULL;
    if (width != 1 && width != 2) {
        return MT_ERR_ARG;
    }
    for (size_t m = 0; m < n_trees; ++m) {
        if (col_offset[m + 1] - col_offset[m] > most) {
            return MT_ERR_ARG;
        }
    }
    if (tiled && n > 0) {
        /* one tile a thread: at most nt * 512 KB */
        tiles = malloc((size_t)nt * MT_LABEL_TASK * n * (size_t)width);
        if (tiles == NULL) {
            return MT_ERR_NOMEM;
        }
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
#endif
    for (ptrdiff_t task = 0; task < n_tasks; ++task) {
        const size_t m0 = (size_t)task * MT_LABEL_TASK;
        const size_t m1 = m0 + MT_LABEL_TASK < n_trees ? m0 + MT_LABEL_TASK : n_trees;
        if (!tiled) {
            for (size_t m = m0; m < m1; ++m) {
                if (width == 2) {
                    uint16_t *out = (uint16_t *)labels + m;
                    MT_FOR_EACH_LABEL(f, col_of_node, col_offset, m,
                                      out[i * n_trees] = (uint16_t)label);
                } else {
                    uint8_t *out = (uint8_t *)labels + m;
                    MT_FOR_EACH_LABEL(f, col_of_node, col_offset, m,
                                      out[i * n_trees] = (uint8_t)label);
                }
            }
            continue;
        }
#ifdef _OPENMP
        unsigned char *tile = tiles + (size_t)omp_get_thread_num() * MT_LABEL_TASK * n * width;
#else
        unsigned char *tile = tiles;
#endif
        const size_t w = m1 - m0;
        if (width == 2) {
            uint16_t *t16 = (uint16_t *)tile, *out = (uint16_t *)labels + m0;
            for (size_t m = m0; m < m1; ++m) {
                uint16_t *row = t16 + (m - m0) * n;
                MT_FOR_EACH_LABEL(f, col_of_node, col_offset, m, row[i] = (uint16_t)label);
            }
            MT_LABEL_TRANSPOSE(uint16_t, t16, out, n, n_trees, w);
        } else {
            uint8_t *t8 = tile, *out = (uint8_t *)labels + m0;
            for (size_t m = m0; m < m1; ++m) {
                uint8_t *row = t8 + (m - m0) * n;
                MT_FOR_EACH_LABEL(f, col_of_node, col_offset, m, row[i] = (uint8_t)label);
            }
            MT_LABEL_TRANSPOSE(uint8_t, t8, out, n, n_trees, w);
        }
    }
    free(tiles);
    return MT_OK;
}
