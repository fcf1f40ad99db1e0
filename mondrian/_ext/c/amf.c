/* amf.c -- aggregation over the pruned subtrees of the trees (see amf.h). */
#include "amf.h"
#include "lookup.h"
#include "walk.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define MT_LN2 0.69314718055994530942

static int all_finite(const double *v, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        if (!isfinite(v[i])) {
            return 0;
        }
    }
    return 1;
}

/* The child of internal node j on x's side of its cut (x in the tree's
 * coordinates). */
static mt_index cut_child(const mt_forest *f, mt_index j, const double *x)
{
    return x[f->feature[j]] <= f->threshold[j] ? f->left[j] : f->right[j];
}

static int check_update(const mt_forest *f, const double *X, size_t n)
{
    size_t nd;
    if (f->n_nodes == 0) {
        return MT_ERR_ARG;
    }
    if (mt_mul_size(n, f->n_features, &nd) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    return (n == 0 || all_finite(X, nd)) ? MT_OK : MT_ERR_ARG;
}

/* What the ordered pass takes through the trees (see amf_update). */
struct amf_pass {
    const double *X, *y;     /* points (n x D) and targets, or labels */
    const mt_index *labels;  /* NULL: regression */
    size_t n, width;         /* points; state row width */
    double dirichlet, mass;  /* classes: alpha and K alpha */
    double *state;
};

/* Point i reaches the node of state row s: the node is charged the loss of
 * its prediction (none before its first point: see amf.h), then counts
 * the point.  Regression rows: -L, count, sum, sum of squares of y;
 * classes: -L, count, class counts, with the Dirichlet prediction. */
static inline void charge(const struct amf_pass *a, double *s, size_t i)
{
    if (a->labels == NULL) {
        const double yi = a->y[i];
        if (s[1] > 0.0) {
            double r = s[2] / s[1] - yi;
            s[0] -= r * r;
        }
        s[1] += 1.0;
        s[2] += yi;
        s[3] += yi * yi;
    } else {
        const size_t k = (size_t)a->labels[i];
        if (s[1] > 0.0) {
            s[0] += log((s[2 + k] + a->dirichlet) / (s[1] + a->mass));
        }
        s[1] += 1.0;
        s[2 + k] += 1.0;
    }
}

/* One tree's part of the pass, with a thread's scratch. */
typedef void (*amf_tree_pass)(const mt_forest *f, size_t m, void *scratch,
                              const struct amf_pass *a);

/* tree(f, m, ...) for every tree, on n_threads threads each with a scratch
 * of `scratch_bytes` (the trees are independent: any thread count gives
 * the same state). */
static int each_tree(const mt_forest *f, int n_threads, size_t scratch_bytes, amf_tree_pass tree,
                     const struct amf_pass *a)
{
    const ptrdiff_t n_trees = (ptrdiff_t)f->n_trees;
    int status = MT_OK;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel num_threads(n_threads > 0 ? n_threads : 1) reduction(min : status)
#endif
    {
        void *scratch = malloc(scratch_bytes > 0 ? scratch_bytes : 1);
        if (scratch == NULL) {
            status = MT_ERR_NOMEM;
        }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (ptrdiff_t m = 0; m < n_trees; ++m) {
            if (scratch != NULL) {
                tree(f, (size_t)m, scratch, a);
            }
        }
        free(scratch);
    }
    return status;
}

/* The pass by walks: each point in its order down tree m's cuts, every
 * node on its path charged (scratch: D doubles, the point in the tree's
 * coordinates). */
static void walk_tree(const mt_forest *f, size_t m, void *scratch, const struct amf_pass *a)
{
    const size_t d = f->n_features;
    for (size_t i = 0; i < a->n; ++i) {
        const double *x = mt_forest_point(f, m, a->X + i * d, scratch);
        mt_index j = f->node_offset[m];
        for (;;) {
            charge(a, a->state + (size_t)j * a->width, i);
            if (f->left[j] == MT_NONE) {
                break;
            }
            j = cut_child(f, j, x);
        }
    }
}

/* Whether tree m's nodes have the layout the ordered merge needs: every
 * internal node's children have larger ids, and its points are its left
 * child's then its right child's (perm ranges). */
static int merge_layout(const mt_forest *f, size_t m)
{
    const mt_index lo = f->node_offset[m], hi = f->node_offset[m + 1];
    for (mt_index j = lo; j < hi; ++j) {
        const mt_index l = f->left[j], r = f->right[j];
        if (f->start[j] > f->end[j]) {
            return 0;
        }
        if (l == MT_NONE) {
            continue;
        }
        if (l <= j || r <= j || l >= hi || r >= hi || f->start[l] != f->start[j] ||
            f->end[l] != f->start[r] || f->end[r] != f->end[j]) {
            return 0;
        }
    }
    return 1;
}

/*
 * The pass by merges, for the forest's own points in their order (X is
 * f->X, the points the trees hold): the points reaching node j on their
 * walks are the points of its range of the tree's permutation, and they
 * reach it in the order of their rows.  So every node's range is sorted by
 * row -- a leaf's outright (one point, or a few that coincide), an
 * internal node's by merging its children's, sorted first (larger ids) --
 * and the node is charged its points in that order: the same operations
 * in the same order as the walks, hence the same numbers, without a walk
 * down the tree per point.  A regression node's running sums stay in
 * registers, so that the divisions of its running mean do not wait on
 * each other (the walks interleave nodes; a node's points charged through
 * memory were no faster than the walks).  The fit of
 * MondrianForestRegressor(aggregation=True) on the CPU data (50 trees of
 * one point per leaf, 6554 points): the update 0.071 -> 0.043 s on one
 * thread, 0.036-0.042 -> 0.024-0.035 s on two.  Scratch: 2n indices.
 */
static void merge_tree(const mt_forest *f, size_t m, void *scratch, const struct amf_pass *a)
{
    mt_index *restrict idx = scratch, *restrict tmp = idx + a->n;
    const mt_index lo = f->node_offset[m], hi = f->node_offset[m + 1];
    memcpy(idx, mt_forest_perm(f, m), a->n * sizeof(mt_index));
    for (mt_index j = hi - 1; j >= lo; --j) {
        const size_t st = (size_t)f->start[j], e = (size_t)f->end[j];
        const mt_index l = f->left[j];
        if (l == MT_NONE) {
            for (size_t p = st + 1; p < e; ++p) {
                const mt_index v = idx[p];
                size_t q = p;
                while (q > st && idx[q - 1] > v) {
                    idx[q] = idx[q - 1];
                    --q;
                }
                idx[q] = v;
            }
        } else {
            const size_t mid = (size_t)f->end[l];
            size_t p = st, q = mid, k = st;
            while (p < mid && q < e) {
                tmp[k++] = idx[q] < idx[p] ? idx[q++] : idx[p++];
            }
            while (p < mid) {
                tmp[k++] = idx[p++];
            }
            while (q < e) {
                tmp[k++] = idx[q++];
            }
            memcpy(idx + st, tmp + st, (e - st) * sizeof(mt_index));
        }
        double *s = a->state + (size_t)j * a->width;
        if (a->labels != NULL) {
            for (size_t k = st; k < e; ++k) {
                charge(a, s, (size_t)idx[k]);
            }
            continue;
        }
        /* charge() for a regression row, its sums in registers */
        double loss = s[0], count = s[1], sum = s[2], squares = s[3];
        for (size_t k = st; k < e; ++k) {
            const double yi = a->y[idx[k]];
            if (count > 0.0) {
                double r = sum / count - yi;
                loss -= r * r;
            }
            count += 1.0;
            sum += yi;
            squares += yi * yi;
        }
        s[0] = loss;
        s[1] = count;
        s[2] = sum;
        s[3] = squares;
    }
}

/*
 * The ordered pass shared by both losses: each tree takes the points in
 * their order down its cuts, every node on the path charged (charge).  By
 * merges (merge_tree) where that applies: X is the forest's own points, in
 * their order, in an axis-aligned forest (a rotated tree's walk reads each
 * point's coordinates computed apart from the growth's), every tree with
 * the merge's layout; else by walks (walk_tree).
 */
static int amf_update(const mt_forest *f, const double *X, const double *y,
                      const mt_index *labels, size_t n, size_t n_classes, double dirichlet,
                      int n_threads, double *state)
{
    const size_t d = f->n_features;
    const struct amf_pass a = {X,
                               y,
                               labels,
                               n,
                               labels == NULL ? MT_AMF_REGRESSION_WIDTH : n_classes + 2,
                               dirichlet,
                               (double)n_classes * dirichlet,
                               state};
    int merge = n > 0 && n == f->n_points && f->X != NULL && f->perm != NULL &&
                f->rotation == NULL && memcmp(X, f->X, n * d * sizeof(double)) == 0;
    for (size_t m = 0; merge && m < f->n_trees; ++m) {
        merge = merge_layout(f, m);
    }
    if (merge) {
        /* fits: the forest's perm rows hold as many */
        return each_tree(f, n_threads, 2 * n * sizeof(mt_index), merge_tree, &a);
    }
    return each_tree(f, n_threads, d * sizeof(double), walk_tree, &a);
}

int mt_amf_update_regression(const mt_forest *f, const double *X, const double *y, size_t n,
                             int n_threads, double *state)
{
    int status = check_update(f, X, n);
    if (status != MT_OK) {
        return status;
    }
    if (n > 0 && !all_finite(y, n)) {
        return MT_ERR_ARG;
    }
    return amf_update(f, X, y, NULL, n, 0, 0.0, n_threads, state);
}

int mt_amf_update_classes(const mt_forest *f, const double *X, const mt_index *labels,
                          size_t n, size_t n_classes, double dirichlet, int n_threads,
                          double *state)
{
    int status = check_update(f, X, n);
    if (status != MT_OK) {
        return status;
    }
    if (n_classes == 0 || !(dirichlet > 0.0) || !isfinite(dirichlet)) {
        return MT_ERR_ARG;
    }
    for (size_t i = 0; i < n; ++i) {
        if (labels[i] < 0 || (size_t)labels[i] >= n_classes) {
            return MT_ERR_ARG;
        }
    }
    return amf_update(f, X, NULL, labels, n, n_classes, dirichlet, n_threads, state);
}

static mt_index key_of(const mt_forest *f, mt_index j)
{
    return f->key != NULL ? f->key[j] : j;
}

/*
 * The old nodes bucketed by key (counting sort): bucket k holds the ids
 * first[k] .. first[k + 1] - 1 of ids[], in increasing split time, i.e.
 * top-down along the key's chain (chains are short: insertion sort).
 * first has n_keys + 1 entries; keys >= n_keys or < 0 are MT_ERR_STATE.
 */
static int bucket_old(size_t old_n, const mt_index *old_key, const double *old_tau,
                      size_t n_keys, mt_index *first, mt_index *ids)
{
    for (size_t k = 0; k <= n_keys; ++k) {
        first[k] = 0;
    }
    for (size_t o = 0; o < old_n; ++o) {
        if (old_key[o] < 0 || (size_t)old_key[o] >= n_keys) {
            return MT_ERR_STATE;
        }
        ++first[old_key[o] + 1];
    }
    for (size_t k = 0; k < n_keys; ++k) {
        first[k + 1] += first[k];
    }
    /* first[k] is now bucket k's start: fill forward (first[k] advancing to
     * the bucket's end, the next one's start), then shift back */
    for (size_t o = 0; o < old_n; ++o) {
        ids[first[old_key[o]]++] = (mt_index)o;
    }
    for (size_t k = n_keys; k > 0; --k) {
        first[k] = first[k - 1];
    }
    first[0] = 0;
    for (size_t k = 0; k < n_keys; ++k) {
        for (mt_index a = first[k] + 1; a < first[k + 1]; ++a) {
            mt_index id = ids[a], b = a;
            while (b > first[k] && old_tau[ids[b - 1]] > old_tau[id]) {
                ids[b] = ids[b - 1];
                --b;
            }
            ids[b] = id;
        }
    }
    return MT_OK;
}

int mt_amf_carry(const mt_forest *f, size_t old_n_nodes, const mt_index *old_offset,
                 const mt_index *old_key, const double *old_tau, size_t width,
                 const double *old_state, int n_threads, double *state)
{
    const size_t M = f->n_trees, nn = f->n_nodes;
    if (width == 0 || nn == 0 || old_offset[0] != 0 || (size_t)old_offset[M] != old_n_nodes) {
        return MT_ERR_ARG;
    }
    for (size_t m = 0; m < M; ++m) {
        if (old_offset[m + 1] < old_offset[m]) {
            return MT_ERR_ARG;
        }
    }
    /* keys: the global ids before the first insertion, then below the
     * largest key of the new forest (new keys are above the old ones) */
    size_t n_keys = nn;
    for (size_t j = 0; j < nn; ++j) {
        mt_index k = key_of(f, (mt_index)j);
        if (k < 0) {
            return MT_ERR_STATE;
        }
        n_keys = (size_t)k + 1 > n_keys ? (size_t)k + 1 : n_keys;
    }
    mt_index *first = malloc((n_keys + 1) * sizeof(mt_index));
    mt_index *ids = malloc((old_n_nodes > 0 ? old_n_nodes : 1) * sizeof(mt_index));
    mt_index *src = malloc(nn * sizeof(mt_index));    /* old node of j, or MT_NONE */
    mt_index *cursor = malloc(nn * sizeof(mt_index)); /* chain position after j */
    int status = MT_OK;
    if (first == NULL || ids == NULL || src == NULL || cursor == NULL) {
        status = MT_ERR_NOMEM;
    } else {
        status = bucket_old(old_n_nodes, old_key, old_tau, n_keys, first, ids);
    }
    if (status == MT_OK) {
        const ptrdiff_t n_trees = (ptrdiff_t)M;
        (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1) \
    reduction(min : status)
#endif
        for (ptrdiff_t m = 0; m < n_trees; ++m) {
            const mt_index lo = f->node_offset[m], hi = f->node_offset[m + 1];
            /* top-down (a parent's id is below its children's): walk each
             * key's chain, matching its old nodes in order by split time */
            for (mt_index j = lo; j < hi; ++j) {
                mt_index k = key_of(f, j), p = f->parent[j];
                mt_index c = (p != MT_NONE && key_of(f, p) == k) ? cursor[p] : first[k];
                src[j] = MT_NONE;
                if (c < first[k + 1] && old_tau[ids[c]] == f->tau[j]) {
                    src[j] = ids[c++];
                }
                cursor[j] = c;
            }
            /* bottom-up: a new parent takes the pre-batch row of the node it
             * was inserted above (its child with the same key, done first),
             * a new leaf the empty row */
            for (mt_index j = hi - 1; j >= lo; --j) {
                const double *from = NULL;
                if (src[j] != MT_NONE) {
                    from = old_state + (size_t)src[j] * width;
                } else if (f->left[j] != MT_NONE) {
                    mt_index a = f->left[j], b = f->right[j], k = key_of(f, j);
                    if ((key_of(f, a) == k) == (key_of(f, b) == k)) {
                        status = MT_ERR_STATE;
                        break;
                    }
                    from = state + (size_t)(key_of(f, a) == k ? a : b) * width;
                }
                double *to = state + (size_t)j * width;
                for (size_t col = 0; col < width; ++col) {
                    to[col] = from != NULL ? from[col] : 0.0;
                }
            }
        }
    }
    free(first);
    free(ids);
    free(src);
    free(cursor);
    return status;
}

static int check_lambda(const mt_forest *f, double lambda)
{
    return (lambda >= 0.0 && lambda <= f->lifetime && f->n_nodes > 0) ? MT_OK : MT_ERR_ARG;
}

int mt_amf_weights(const mt_forest *f, double lambda, const double *state, size_t width,
                   double step, int n_threads, double *log_wbar, double *coef)
{
    if (check_lambda(f, lambda) != MT_OK || width == 0 || !(step > 0.0) || !isfinite(step)) {
        return MT_ERR_ARG;
    }
    const ptrdiff_t n_trees = (ptrdiff_t)f->n_trees;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t m = 0; m < n_trees; ++m) {
        for (mt_index j = f->node_offset[m + 1] - 1; j >= f->node_offset[m]; --j) {
            mt_index p = f->parent[j];
            double lw = step * state[(size_t)j * width]; /* log w_j = -step L_j */
            double *c = coef + 2 * (size_t)j;
            if (p != MT_NONE && f->tau[p] > lambda) {
                log_wbar[j] = c[0] = c[1] = NAN; /* below the pruned tree */
            } else if (f->tau[j] > lambda) {
                log_wbar[j] = lw; /* a leaf of the pruned tree */
                c[0] = 1.0;
                c[1] = 0.0;
            } else {
                /* wbar_j = (w_j + wbar_l wbar_r) / 2, a_j = w_j / 2 wbar_j: with
                 * the larger of the two log terms hi and rho = exp(lo - hi)
                 * <= 1, log wbar_j = hi + log1p(rho) - log 2 and the two
                 * shares are 1 / (1 + rho) and rho / (1 + rho) -- one
                 * exponential and one logarithm a node, and the shares sum
                 * to 1 to rounding (they were two more exponentials). */
                const double split = log_wbar[f->left[j]] + log_wbar[f->right[j]];
                const double hi = lw > split ? lw : split, lo = lw > split ? split : lw;
                if (hi == -INFINITY) {
                    log_wbar[j] = -INFINITY;
                    c[0] = c[1] = NAN;
                    continue;
                }
                const double rho = exp(lo - hi);
                log_wbar[j] = hi + log1p(rho) - MT_LN2;
                const double big = 1.0 / (1.0 + rho), small = rho / (1.0 + rho);
                c[0] = lw > split ? big : small;   /* a_j = w_j / 2 wbar_j    */
                c[1] = lw > split ? small : big;   /* 1 - a_j, to the child   */
            }
        }
    }
    return MT_OK;
}

/* The node values of mt_amf_predict. */
typedef struct {
    const double *X, *coef, *comp;
    size_t K;
    double lambda;
    int separate;
} amf_args;

/* Tree m's aggregated prediction at point i, added to o[0..K) (an
 * mt_walk_visit of amf_args; scratch: d + K doubles).  With `separate`, a
 * point outside the root's box separates from it with probability
 * 1 - exp(-Delta e) and then predicts the root's component (amf.h). */
static void amf_tree(const mt_forest *f, const void *args, size_t m, size_t i,
                     double *scratch, double *o)
{
    const amf_args *a = args;
    const size_t K = a->K, d = f->n_features;
    const double *x = mt_walk_point(f, a->X, m, i, scratch);
    double *acc = scratch + d;
    const mt_index root = f->node_offset[m];
    mt_index j = root;
    double mult = 1.0; /* prod (1 - a) above j */
    for (size_t k = 0; k < K; ++k) {
        acc[k] = 0.0;
    }
    for (;;) {
        const double *c = a->comp + (size_t)j * K;
        if (f->tau[j] > a->lambda) {
            for (size_t k = 0; k < K; ++k) {
                acc[k] += mult * c[k];
            }
            break;
        }
        const double stop = a->coef[2 * (size_t)j], go = a->coef[2 * (size_t)j + 1];
        for (size_t k = 0; k < K; ++k) {
            acc[k] += mult * stop * c[k];
        }
        mult *= go;
        j = cut_child(f, j, x);
    }
    double gap;
    if (a->separate &&
        (gap = mt_box_gap(x, f->lower + (size_t)root * d, f->upper + (size_t)root * d, d)) >
            0.0) {
        const double span = f->tau[root] < a->lambda ? f->tau[root] : a->lambda;
        const double p = -expm1(-span * gap); /* P(x separates from the root) */
        const double *c = a->comp + (size_t)root * K;
        for (size_t k = 0; k < K; ++k) {
            o[k] += acc[k] + p * (c[k] - acc[k]);
        }
        return;
    }
    for (size_t k = 0; k < K; ++k) {
        o[k] += acc[k];
    }
}

int mt_amf_predict(const mt_forest *f, const double *X, size_t n, double lambda,
                   const double *coef, size_t K, const double *comp, int separate,
                   int n_threads, double *out)
{
    if (check_lambda(f, lambda) != MT_OK || K == 0) {
        return MT_ERR_ARG;
    }
    const amf_args a = {X, coef, comp, K, lambda, separate != 0};
    return mt_walk_blocks(f, n, K, f->n_features + K, amf_tree, &a, n_threads, out);
}
