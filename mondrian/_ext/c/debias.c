/* debias.c -- sum of squared weights of the debiased forest (see debias.h). */
#include "debias.h"

#include <math.h>

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

/* Walk x down tree m to its active node at lambda; returns the survival
 * probability, writes the leaf, and counts (or, with nodes != NULL, also
 * writes) the events q_j > 0. */
static double walk(const mt_forest *f, size_t m, const double *x, double lambda,
                   mt_index *leaf, int64_t *count, mt_index *nodes, double *probs)
{
    const size_t d = f->n_features;
    mt_index j = f->node_offset[m];
    double t_prev = 0.0, surv = 1.0;
    int64_t k = 0;
    for (;;) {
        double tj = f->tau[j];
        double t_end = tj < lambda ? tj : lambda;
        double rate = mt_box_gap(x, f->lower + (size_t)j * d, f->upper + (size_t)j * d, d)
                      * (t_end - t_prev);
        if (rate > 0.0) {
            double q = -surv * expm1(-rate);
            if (q > 0.0) {
                if (nodes != NULL) {
                    nodes[k] = j;
                    probs[k] = q;
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

int mt_debias_paths(const mt_forest *f, const double *X, size_t n_rows, double lambda,
                    mt_index *leaf, double *stay, int64_t *n_events, const int64_t *offset,
                    mt_index *event_node, double *event_prob, int n_threads)
{
    const size_t M = f->n_trees, d = f->n_features;
    if (!(lambda >= 0.0) || lambda > f->lifetime) {
        return MT_ERR_ARG;
    }
    if (n_rows == 0 || M == 0) {
        return MT_OK;
    }
    if (X == NULL || leaf == NULL || stay == NULL || n_events == NULL
        || (offset != NULL && (event_node == NULL || event_prob == NULL)
            && offset[n_rows * M] > 0)) {
        return MT_ERR_ARG;
    }
    /* Blocks of rows, tree by tree within a block: one tree's upper nodes
     * stay in cache while the block's points walk it. */
    ptrdiff_t n_blocks = (ptrdiff_t)((n_rows + MT_ROW_BLOCK - 1) / MT_ROW_BLOCK);
    const int nt = mt_walk_threads(n_rows, M, n_threads);
    int status = MT_OK;
    (void)nt;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) reduction(min : status)
#endif
    {
    /* A rotated forest: each tree walks x in its own coordinates
     * (mt_forest_point), through the thread's scratch. */
    double *scratch = NULL;
    if (f->rotation != NULL && (scratch = malloc((d > 0 ? d : 1) * sizeof(double))) == NULL) {
        status = MT_ERR_NOMEM;
    }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (ptrdiff_t b = 0; b < n_blocks; ++b) {
        if (f->rotation != NULL && scratch == NULL) {
            continue;
        }
        size_t r0 = (size_t)b * MT_ROW_BLOCK;
        size_t r1 = r0 + MT_ROW_BLOCK < n_rows ? r0 + MT_ROW_BLOCK : n_rows;
        for (size_t m = 0; m < M; ++m) {
            for (size_t r = r0; r < r1; ++r) {
                const double *x = mt_forest_point(f, m, X + r * d, scratch);
                size_t p = r * M + m;
                if (offset == NULL) {
                    double exponent;
                    mt_index j = mt_forest_lookup(f, m, x, lambda, &exponent);
                    if (!(exponent > 0.0)) {
                        leaf[p] = j;
                        stay[p] = 1.0;
                        n_events[p] = 0;
                        continue;
                    }
                    stay[p] = walk(f, m, x, lambda, &leaf[p], &n_events[p], NULL, NULL);
                } else if (n_events[p] > 0) {
                    mt_index j;
                    int64_t k;
                    (void)walk(f, m, x, lambda, &j, &k, event_node + offset[p],
                               event_prob + offset[p]);
                }
            }
        }
    }
    free(scratch);
    }
    return status;
}
