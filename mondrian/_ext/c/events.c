/* events.c -- the forest as the kernel-width path reads it (see events.h). */
#include "events.h"

typedef struct {
    double time;
    mt_index node;
} event;

static int cmp_event(const void *a, const void *b)
{
    const event *x = a, *y = b;
    if (x->time != y->time) {
        return x->time < y->time ? -1 : 1;
    }
    return (x->node > y->node) - (x->node < y->node);
}

int mt_forest_events(const mt_forest *f, mt_index *nodes, double *times,
                     mt_index *left, mt_index *right, mt_index *tree)
{
    const size_t n_events = mt_forest_n_events(f);
    size_t e = 0;
    event *list = malloc((n_events > 0 ? n_events : 1) * sizeof(event));
    if (list == NULL) {
        return MT_ERR_NOMEM;
    }
    for (size_t j = 0; j < f->n_nodes; ++j) {
        if (f->left[j] != MT_NONE) {
            if (e == n_events) {
                free(list);
                return MT_ERR_STATE; /* not a binary forest */
            }
            list[e].time = f->tau[j];
            list[e].node = (mt_index)j;
            ++e;
        }
    }
    /* Keys are distinct (ids), so the order does not depend on qsort. */
    qsort(list, e, sizeof(event), cmp_event);
    for (size_t k = 0; k < e; ++k) {
        mt_index j = list[k].node;
        nodes[k] = j;
        times[k] = list[k].time;
        left[k] = f->left[j];
        right[k] = f->right[j];
        tree[k] = f->tree_of[j];
    }
    free(list);
    return e == n_events ? MT_OK : MT_ERR_STATE;
}

int mt_forest_node_sums(const mt_forest *f, const double *values, double *out)
{
    const size_t n = f->n_points;
    double *cs;
    if (f->perm == NULL) {
        return MT_ERR_ARG; /* the points were dropped */
    }
    cs = malloc((n + 1) * sizeof(double)); /* n + 1 rows of X fit */
    if (cs == NULL) {
        return MT_ERR_NOMEM;
    }
    for (size_t m = 0; m < f->n_trees; ++m) {
        const mt_index *perm = mt_forest_perm(f, m);
        cs[0] = 0.0;
        for (size_t k = 0; k < n; ++k) {
            cs[k + 1] = cs[k] + values[perm[k]];
        }
        for (mt_index j = f->node_offset[m]; j < f->node_offset[m + 1]; ++j) {
            out[j] = cs[f->end[j]] - cs[f->start[j]];
        }
    }
    free(cs);
    return MT_OK;
}

int mt_forest_train_slices(const mt_forest *f, const uint8_t *is_train,
                           size_t n_train, int32_t *ptrain, mt_index *tstart,
                           mt_index *tend)
{
    const size_t n = f->n_points;
    mt_index *cs;
    size_t count = 0;
    if (n > (size_t)INT32_MAX || f->perm == NULL) {
        return MT_ERR_ARG;
    }
    for (size_t i = 0; i < n; ++i) {
        count += is_train[i] != 0;
    }
    if (count != n_train) {
        return MT_ERR_ARG;
    }
    cs = malloc((n + 1) * sizeof(mt_index));
    if (cs == NULL) {
        return MT_ERR_NOMEM;
    }
    for (size_t m = 0; m < f->n_trees; ++m) {
        const mt_index *perm = mt_forest_perm(f, m);
        int32_t *row = ptrain + m * n_train;
        cs[0] = 0;
        for (size_t k = 0; k < n; ++k) {
            mt_index i = perm[k];
            int keep = is_train[i] != 0;
            if (keep) {
                row[cs[k]] = (int32_t)i;
            }
            cs[k + 1] = cs[k] + keep;
        }
        for (mt_index j = f->node_offset[m]; j < f->node_offset[m + 1]; ++j) {
            tstart[j] = cs[f->start[j]];
            tend[j] = cs[f->end[j]];
        }
    }
    free(cs);
    return MT_OK;
}
