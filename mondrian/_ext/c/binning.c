/*
 * binning.c -- exact bin numbering for random binning features (binning.h).
 *
 * Per grid, an open-addressing hash table maps a bin's coordinate tuple to
 * its number.  The table stores bin numbers; a bin's tuple is the tuple of
 * its representative row, kept in a per-grid buffer, and is compared in
 * full, so the numbering is collision free.
 */
#include "binning.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Bin coordinates must fit comfortably in int64. */
#define MT_BIN_LIMIT 4.0e18

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Tuple of row x in the grid (inv_pitch, shift); returns its hash, or sets *bad.
 * floor() is done by truncation and a correction (no libm call), and the
 * hash multiplies per coordinate and mixes once at the end. */
static inline uint64_t bin_tuple(const double *restrict x, size_t d,
                                 const double *restrict inv_pitch,
                                 const double *restrict shift,
                                 int64_t *restrict out, int *bad)
{
    uint64_t h = UINT64_C(0x9e3779b97f4a7c15);
    for (size_t j = 0; j < d; j++) {
        double v = (x[j] - shift[j]) * inv_pitch[j];
        int64_t t;
        if (!(v > -MT_BIN_LIMIT && v < MT_BIN_LIMIT)) {
            *bad = 1;
            v = 0.0;
        }
        t = (int64_t)v;
        t -= (double)t > v;
        out[j] = t;
        h = (h ^ (uint64_t)t) * UINT64_C(0x100000001b3) + (uint64_t)j;
    }
    return mix64(h);
}

static size_t table_size(size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n) {
        cap *= 2;
    }
    return cap;
}

/* Per-thread scratch space. */
typedef struct {
    int64_t *tuples;   /* rows x d */
    uint64_t *hashes;  /* per bin */
    mt_index *table;   /* cap */
    int64_t *probe;    /* d */
} scratch;

static void scratch_free(scratch *s)
{
    free(s->tuples);
    free(s->hashes);
    free(s->table);
    free(s->probe);
}

static int scratch_alloc(scratch *s, size_t rows, size_t d, size_t cap)
{
    size_t nt;
    memset(s, 0, sizeof(*s));
    if (mt_mul_size(rows ? rows : 1, d ? d : 1, &nt) != MT_OK || nt > SIZE_MAX / sizeof(int64_t)
        || cap > SIZE_MAX / sizeof(mt_index)) {
        return MT_ERR_OVERFLOW;
    }
    s->tuples = malloc(nt * sizeof(int64_t));
    s->hashes = malloc((rows ? rows : 1) * sizeof(uint64_t));
    s->table = malloc(cap * sizeof(mt_index));
    s->probe = malloc((d ? d : 1) * sizeof(int64_t));
    if (!s->tuples || !s->hashes || !s->table || !s->probe) {
        scratch_free(s);
        return MT_ERR_NOMEM;
    }
    return MT_OK;
}

/* Work on grid g with a thread's scratch space (table capacity cap). */
typedef int (*grid_task)(size_t g, scratch *s, size_t cap, const void *ctx);

/*
 * Run task(g) for every grid g < P on up to n_threads threads, each with its
 * own scratch space for `rows` tuples of d coordinates; returns MT_OK or an
 * error of some grid.  Every thread takes part in the work-shared loop (a
 * thread whose scratch allocation failed skips its grids, and the error is
 * returned), so the loop's implicit barrier is always reached.
 */
static int for_each_grid(size_t P, size_t rows, size_t d, size_t cap, int n_threads,
                         grid_task task, const void *ctx)
{
    int status = MT_OK;
    if (n_threads < 1) {
        n_threads = 1;
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(n_threads)
#endif
    {
        scratch s;
        int local = scratch_alloc(&s, rows, d, cap);
        if (local != MT_OK) {
#ifdef _OPENMP
#pragma omp critical
#endif
            status = local;
        }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (long long g = 0; g < (long long)P; g++) {
            int st = local == MT_OK ? task((size_t)g, &s, cap, ctx) : local;
            if (st != MT_OK) {
#ifdef _OPENMP
#pragma omp critical
#endif
                status = st;
            }
        }
        if (local == MT_OK) {
            scratch_free(&s);
        }
    }
    return status;
}

static int fit_grid(const double *X, size_t n, size_t d, const double *inv_pitch,
                    const double *shift, scratch *s, size_t cap,
                    mt_index *rep, mt_index *n_bins, mt_index *codes)
{
    const size_t mask = cap - 1;
    size_t nb = 0;
    int bad = 0;
    for (size_t k = 0; k < cap; k++) {
        s->table[k] = MT_NONE;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t *t = s->tuples + nb * d;   /* candidate slot for a new bin */
        uint64_t h = bin_tuple(X + i * d, d, inv_pitch, shift, t, &bad);
        size_t slot = (size_t)h & mask;
        mt_index id = MT_NONE;
        while (s->table[slot] != MT_NONE) {
            mt_index b = s->table[slot];
            if (s->hashes[b] == h && memcmp(s->tuples + (size_t)b * d, t, d * sizeof(int64_t)) == 0) {
                id = b;
                break;
            }
            slot = (slot + 1) & mask;
        }
        if (id == MT_NONE) {
            id = (mt_index)nb;
            s->hashes[nb] = h;
            rep[nb] = (mt_index)i;
            s->table[slot] = id;
            nb++;
        }
        codes[i] = id;
    }
    *n_bins = (mt_index)nb;
    return bad ? MT_ERR_ARG : MT_OK;
}

typedef struct {
    const double *X, *inv_pitch, *shift;
    size_t n, d;
    mt_index *rep, *n_bins, *codes;
} fit_args;

static int fit_task(size_t g, scratch *s, size_t cap, const void *ctx)
{
    const fit_args *a = ctx;
    return fit_grid(a->X, a->n, a->d, a->inv_pitch + g * a->d, a->shift + g * a->d, s, cap,
                    a->rep + g * a->n, a->n_bins + g, a->codes + g * a->n);
}

int mt_binning_fit(const double *X, size_t n, size_t d,
                   const double *inv_pitch, const double *shift, size_t P,
                   int n_threads, mt_index *rep, mt_index *n_bins, mt_index *codes)
{
    if (n == 0 || d == 0 || n > SIZE_MAX / 4) {
        return MT_ERR_ARG;
    }
    fit_args a = {X, inv_pitch, shift, n, d, rep, n_bins, codes};
    return for_each_grid(P, n, d, table_size(n), n_threads, fit_task, &a);
}

static int lookup_grid(const double *X_fit, const double *X, size_t n, size_t d,
                       const double *inv_pitch, const double *shift,
                       const mt_index *rep, size_t nb, mt_index offset,
                       scratch *s, size_t cap, mt_index *codes)
{
    const size_t mask = cap - 1;
    int bad = 0;
    for (size_t k = 0; k < cap; k++) {
        s->table[k] = MT_NONE;
    }
    for (size_t b = 0; b < nb; b++) {
        int64_t *t = s->tuples + b * d;
        uint64_t h = bin_tuple(X_fit + (size_t)rep[b] * d, d, inv_pitch, shift, t, &bad);
        size_t slot = (size_t)h & mask;
        while (s->table[slot] != MT_NONE) {
            slot = (slot + 1) & mask;
        }
        s->hashes[b] = h;
        s->table[slot] = (mt_index)b;
    }
    if (bad) {
        return MT_ERR_STATE;
    }
    for (size_t i = 0; i < n; i++) {
        int row_bad = 0;
        uint64_t h = bin_tuple(X + i * d, d, inv_pitch, shift, s->probe, &row_bad);
        size_t slot = (size_t)h & mask;
        mt_index id = MT_NONE;
        if (row_bad) {
            /* Coordinates beyond the int64 range: no training bin is there. */
            codes[i] = MT_NONE;
            continue;
        }
        while (s->table[slot] != MT_NONE) {
            mt_index b = s->table[slot];
            if (s->hashes[b] == h
                && memcmp(s->tuples + (size_t)b * d, s->probe, d * sizeof(int64_t)) == 0) {
                id = b;
                break;
            }
            slot = (slot + 1) & mask;
        }
        codes[i] = id == MT_NONE ? MT_NONE : offset + id;
    }
    return MT_OK;
}

typedef struct {
    const double *X_fit, *X, *inv_pitch, *shift;
    size_t n, d;
    const mt_index *rep, *bin_offsets;
    mt_index *codes;
} lookup_args;

static int lookup_task(size_t g, scratch *s, size_t cap, const void *ctx)
{
    const lookup_args *a = ctx;
    mt_index off = a->bin_offsets[g];
    return lookup_grid(a->X_fit, a->X, a->n, a->d, a->inv_pitch + g * a->d,
                       a->shift + g * a->d, a->rep + off,
                       (size_t)(a->bin_offsets[g + 1] - off), off, s, cap,
                       a->codes + g * a->n);
}

int mt_binning_lookup(const double *X_fit, size_t n_fit, const double *X, size_t n,
                      size_t d, const double *inv_pitch, const double *shift, size_t P,
                      const mt_index *rep, const mt_index *bin_offsets, int n_threads,
                      mt_index *codes)
{
    size_t max_bins = 1;
    if (d == 0 || n_fit == 0) {
        return MT_ERR_ARG;
    }
    for (size_t g = 0; g < P; g++) {
        mt_index nb = bin_offsets[g + 1] - bin_offsets[g];
        if (nb < 1 || (size_t)nb > n_fit) {
            return MT_ERR_STATE;
        }
        if ((size_t)nb > max_bins) {
            max_bins = (size_t)nb;
        }
    }
    for (size_t k = 0; k < (size_t)bin_offsets[P]; k++) {
        if (rep[k] < 0 || (size_t)rep[k] >= n_fit) {
            return MT_ERR_STATE;
        }
    }
    lookup_args a = {X_fit, X, inv_pitch, shift, n, d, rep, bin_offsets, codes};
    return for_each_grid(P, max_bins, d, table_size(max_bins), n_threads, lookup_task, &a);
}
