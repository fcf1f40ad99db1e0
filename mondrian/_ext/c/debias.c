/* debias.c -- sum of squared weights of the debiased forest (see debias.h). */
#include "debias.h"

#include <math.h>
#include <stdlib.h>

#include "entries.h"
#include "lookup.h"
#include "threads.h"

/* Rows per task of mt_debias_paths. */
#define MT_ROW_BLOCK 256

#ifdef _OPENMP
#include <omp.h>
#endif

/* One thread's dense accumulator. */
typedef struct {
    double *acc;
    mt_index *touched;
    unsigned char *seen;
} mt_debias_scratch;

static double row_sum_squares(const mt_forest *f, const mt_index *nodes, const double *coef,
                              int64_t lo, int64_t hi, mt_debias_scratch *s)
{
    size_t n_touched = 0;
    for (int64_t e = lo; e < hi; ++e) {
        mt_index j = nodes[e];
        const mt_index *perm = mt_forest_perm(f, (size_t)f->tree_of[j]);
        double c = coef[e];
        for (mt_index k = f->start[j]; k < f->end[j]; ++k) {
            mt_index i = perm[k];
            if (!s->seen[i]) {
                s->seen[i] = 1;
                s->touched[n_touched++] = i;
            }
            s->acc[i] += c;
        }
    }
    double total = 0.0;
    for (size_t t = 0; t < n_touched; ++t) {
        mt_index i = s->touched[t];
        total += s->acc[i] * s->acc[i];
        s->acc[i] = 0.0;
        s->seen[i] = 0;
    }
    return total;
}

int mt_debias_sum_squares(const mt_forest *f, const int64_t *indptr, const mt_index *nodes,
                          const double *coef, size_t n_rows, double *out, int n_threads)
{
    const size_t n = f->n_points;
    int n_workers = n_threads > 0 ? n_threads : 1;
    if (n_rows == 0) {
        return MT_OK;
    }
    if (indptr == NULL || out == NULL || f->perm == NULL || indptr[0] != 0) {
        return MT_ERR_ARG;
    }
    for (size_t x = 0; x < n_rows; ++x) {
        if (indptr[x + 1] < indptr[x]) {
            return MT_ERR_ARG;
        }
    }
    for (int64_t e = 0; e < indptr[n_rows]; ++e) {
        if (nodes[e] < 0 || (size_t)nodes[e] >= f->n_nodes) {
            return MT_ERR_ARG;
        }
    }
#ifndef _OPENMP
    n_workers = 1;
#endif
    mt_debias_scratch *scratch = calloc((size_t)n_workers, sizeof(*scratch));
    if (scratch == NULL) {
        return MT_ERR_NOMEM;
    }
    int status = MT_OK;
    for (int w = 0; w < n_workers && status == MT_OK; ++w) {
        scratch[w].acc = calloc(n > 0 ? n : 1, sizeof(double));
        scratch[w].touched = malloc((n > 0 ? n : 1) * sizeof(mt_index));
        scratch[w].seen = calloc(n > 0 ? n : 1, 1);
        if (scratch[w].acc == NULL || scratch[w].touched == NULL || scratch[w].seen == NULL) {
            status = MT_ERR_NOMEM;
        }
    }
    if (status == MT_OK) {
        ptrdiff_t count = (ptrdiff_t)n_rows;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 16) num_threads(n_workers)
#endif
        for (ptrdiff_t x = 0; x < count; ++x) {
            int w = 0;
#ifdef _OPENMP
            w = omp_get_thread_num();
#endif
            out[x] = row_sum_squares(f, nodes, coef, indptr[x], indptr[x + 1], &scratch[w]);
        }
    }
    for (int w = 0; w < n_workers; ++w) {
        free(scratch[w].acc);
        free(scratch[w].touched);
        free(scratch[w].seen);
    }
    free(scratch);
    return status;
}

/* Walk x down its path from node j, the first whose data box does not
 * hold it (mt_path_first_outside: the rates above j are exactly 0, and
 * add neither an event nor a factor), to its active node at lambda;
 * returns the survival probability, writes the leaf and the number of
 * events q_j > 0, appended to the block's (*status: MT_OK, or the
 * append's error). */
static double walk(const mt_forest *f, mt_index j, const double *x, double lambda,
                   mt_index *leaf, int64_t *count, mt_entry_block *events, int *status)
{
    const size_t d = f->n_features;
    double t_prev = mt_forest_birth(f, j), surv = 1.0;
    int64_t k = 0;
    for (;;) {
        double tj = f->tau[j];
        double t_end = tj < lambda ? tj : lambda;
        double rate = mt_box_gap(x, f->lower + (size_t)j * d, f->upper + (size_t)j * d, d)
                      * (t_end - t_prev);
        if (rate > 0.0) {
            double q = -surv * expm1(-rate);
            if (q > 0.0) {
                int st = mt_entry_push(events, j, q);
                if (st != MT_OK) {
                    *status = st;
                }
                ++k;
            }
            surv *= exp(-rate);
        }
        if (!(tj <= lambda)) {
            break;
        }
        j = x[f->feature[j]] <= f->threshold[j] ? f->left[j] : f->right[j];
        t_prev = tj;
    }
    *leaf = j;
    *count = k;
    return surv;
}

/* x's active nodes in tree m at every lifetime (act[r] at lambdas[r]): one
 * descent by the cuts to the active node at the largest, lam_max, passing
 * through every other (split times grow along a path). */
static void descend_all(const mt_forest *f, size_t m, const double *x, const double *lambdas,
                        size_t n_lambdas, double lam_max, mt_index *act)
{
    const double *tau = f->tau;
    mt_index j = f->node_offset[m];
    size_t left = n_lambdas;
    for (size_t r = 0; r < n_lambdas; ++r) {
        act[r] = MT_NONE;
    }
    for (;;) {
        const double tj = tau[j];
        for (size_t r = 0; left > 0 && r < n_lambdas; ++r) {
            if (act[r] == MT_NONE && tj > lambdas[r]) {
                act[r] = j;
                --left;
            }
        }
        if (tj > lam_max) {
            return;
        }
        j = x[f->feature[j]] <= f->threshold[j] ? f->left[j] : f->right[j];
    }
}

int mt_debias_paths(const mt_forest *f, const double *X, size_t n_rows, const double *lambdas,
                    size_t n_lambdas, mt_index *leaf, double *stay, int64_t *offset,
                    mt_entries **events, int n_threads)
{
    const size_t M = f->n_trees, d = f->n_features, pairs = n_rows * M;
    *events = NULL;
    if (offset == NULL || lambdas == NULL || n_lambdas == 0) {
        return MT_ERR_ARG;
    }
    double lam_max = 0.0;
    for (size_t r = 0; r < n_lambdas; ++r) {
        if (!(lambdas[r] >= 0.0) || lambdas[r] > f->lifetime) {
            return MT_ERR_ARG;
        }
        lam_max = lambdas[r] > lam_max ? lambdas[r] : lam_max;
        offset[r * (pairs + 1)] = 0;
    }
    if (n_rows == 0 || M == 0) {
        return MT_OK;
    }
    if (X == NULL || leaf == NULL || stay == NULL) {
        return MT_ERR_ARG;
    }
    /* Blocks of rows, tree by tree within a block: one tree's upper nodes
     * stay in cache while the block's points walk it; each block keeps its
     * own events, so that no pair is walked twice (counted, then written),
     * and every lifetime's walk shares the pair's descent. */
    mt_entries *ev = mt_entries_new(n_rows, MT_ROW_BLOCK, n_lambdas);
    if (ev == NULL) {
        return MT_ERR_NOMEM;
    }
    const int nt = mt_walk_threads(n_rows, M, n_threads);
    int status = MT_OK;
    (void)nt;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) reduction(min : status)
#endif
    {
    /* this thread's first error (the reduction's private copy starts at
     * INT_MAX, min's identity, so it cannot be tested for MT_OK) */
    int local = MT_OK;
    /* the active nodes of a pair, and a transformed forest's coordinates of x
     * in tree m (mt_forest_point) */
    mt_index *act = malloc(n_lambdas * sizeof(mt_index));
    double *scratch = NULL;
    if (act == NULL || (mt_forest_transformed(f)
                        && (scratch = malloc((d > 0 ? d : 1) * sizeof(double))) == NULL)) {
        local = MT_ERR_NOMEM;
    }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (ptrdiff_t b = 0; b < (ptrdiff_t)ev->n_blocks; ++b) {
        if (local != MT_OK) {
            continue;
        }
        size_t r0 = (size_t)b * MT_ROW_BLOCK;
        size_t r1 = r0 + MT_ROW_BLOCK < n_rows ? r0 + MT_ROW_BLOCK : n_rows;
        for (size_t m = 0; m < M; ++m) {
            for (size_t i = r0; i < r1; ++i) {
                const size_t p = i * M + m;
                const double *x = mt_forest_point(f, m, X + i * d, scratch);
                descend_all(f, m, x, lambdas, n_lambdas, lam_max, act);
                for (size_t r = 0; r < n_lambdas; ++r) {
                    const size_t q = r * pairs + p;
                    int64_t *count = &offset[r * (pairs + 1) + p + 1];
                    const mt_index j = act[r];
                    const size_t off = (size_t)j * d;
                    if (!(mt_box_excess(x, f->lower + off, f->upper + off, d) > 0.0)) {
                        /* inside the active node's box, so inside every
                         * box above it: no event */
                        leaf[q] = j;
                        stay[q] = 1.0;
                        *count = 0;
                        continue;
                    }
                    stay[q] = walk(f, mt_path_first_outside(f, x, j), x, lambdas[r], &leaf[q],
                                   count, mt_entries_block(ev, (size_t)b, r), &local);
                }
            }
        }
    }
    free(act);
    free(scratch);
    if (local != MT_OK) {
        status = local;
    }
    }
    if (status != MT_OK) {
        mt_entries_free(ev);
        return status;
    }
    /* offset[p + 1] holds pair p's count: the prefix sums, per lifetime */
    for (size_t r = 0; r < n_lambdas; ++r) {
        mt_entries_prefix(offset + r * (pairs + 1), pairs);
    }
    *events = ev;
    return MT_OK;
}
