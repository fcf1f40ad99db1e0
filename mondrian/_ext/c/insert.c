/* insert.c -- insertion of new points into a grown forest (see insert.h). */
#include "insert.h"

#include <math.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Work (node and permutation entries copied) below which a batch is
 * inserted on one thread. */
#define MT_INSERT_SERIAL ((size_t)1 << 20)

/* One tree during a batch: a one-tree forest in local ids (old nodes first,
 * in their old order, new nodes appended), and what the renumbering needs. */
typedef struct {
    mt_forest t;             /* the tree, keys on (t.key)                  */
    mt_index root;           /* local id of the root (changes on insertion) */
    size_t n_old;            /* nodes before the batch                      */
    mt_index *leaf_of;       /* n: leaf (local id) each new point ended in  */
    unsigned char *created;  /* n: the point created a leaf                 */
    mt_index *perm;          /* n_points_old + n: the rebuilt permutation   */
    mt_index *new_id;        /* nodes: new local id of each local id        */
    mt_index *order;         /* nodes: local id of each new local id        */
    mt_index *bucket;        /* nodes + 1: new points per leaf (prefix)     */
    mt_index *joined;        /* n: new points sorted by leaf                */
    mt_index *stack;         /* nodes: the depth-first walk                 */
} iscratch;

/* Uniform on the open interval (0, 1), from 53 random bits (as grow.c). */
static inline double open_uniform(bitgen_t *rng)
{
    return ((double)(rng->next_uint64(rng->state) >> 11) + 0.5) * 0x1.0p-53;
}

static void iscratch_free(iscratch *s)
{
    mt_forest_free(&s->t);
    free(s->leaf_of);
    free(s->created);
    free(s->perm);
    free(s->new_id);
    free(s->order);
    free(s->bucket);
    free(s->joined);
    free(s->stack);
    memset(s, 0, sizeof(*s));
}

/* Copy tree m of f into the scratch, with room for the nodes the batch can
 * add: two per point, and none beyond max_nodes (if > 0). */
static int iscratch_load(iscratch *s, const mt_forest *f, size_t m, size_t n,
                         size_t max_nodes)
{
    const mt_index lo = f->node_offset[m], hi = f->node_offset[m + 1];
    const size_t k = (size_t)(hi - lo), d = f->n_features, np = f->n_points;
    size_t cap = k + 2 * n;
    if (max_nodes > 0 && cap > max_nodes) {
        cap = k > max_nodes ? k : max_nodes;
    }
    mt_forest *t = &s->t;
    int status;
    memset(s, 0, sizeof(*s));
    if ((status = mt_forest_init(t, 1, d)) != MT_OK) {
        return status;
    }
    t->key = calloc(1, sizeof(mt_index)); /* keys on: grown with the nodes */
    if (t->key == NULL || (status = mt_forest_reserve_nodes(t, cap)) != MT_OK) {
        return t->key == NULL ? MT_ERR_NOMEM : status;
    }
    s->leaf_of = malloc((n > 0 ? n : 1) * sizeof(mt_index));
    s->created = calloc(n > 0 ? n : 1, 1);
    s->joined = malloc((n > 0 ? n : 1) * sizeof(mt_index));
    s->perm = f->perm != NULL ? malloc((np + n) * sizeof(mt_index)) : NULL;
    s->new_id = malloc(cap * sizeof(mt_index));
    s->order = malloc(cap * sizeof(mt_index));
    s->bucket = malloc((cap + 1) * sizeof(mt_index));
    s->stack = malloc(cap * sizeof(mt_index));
    if (s->leaf_of == NULL || s->created == NULL || s->joined == NULL ||
        (f->perm != NULL && s->perm == NULL) ||
        s->new_id == NULL || s->order == NULL || s->bucket == NULL || s->stack == NULL) {
        return MT_ERR_NOMEM;
    }
    for (size_t j = 0; j < k; ++j) {
        size_t g = (size_t)lo + j;
        t->tree_of[j] = 0;
        t->parent[j] = f->parent[g] == MT_NONE ? MT_NONE : f->parent[g] - lo;
        t->left[j] = f->left[g] == MT_NONE ? MT_NONE : f->left[g] - lo;
        t->right[j] = f->right[g] == MT_NONE ? MT_NONE : f->right[g] - lo;
        t->key[j] = f->key != NULL ? f->key[g] : (mt_index)g;
    }
    memcpy(t->feature, f->feature + lo, k * sizeof(mt_index));
    memcpy(t->start, f->start + lo, k * sizeof(mt_index));
    memcpy(t->end, f->end + lo, k * sizeof(mt_index));
    memcpy(t->threshold, f->threshold + lo, k * sizeof(double));
    memcpy(t->tau, f->tau + lo, k * sizeof(double));
    memcpy(t->lower, f->lower + (size_t)lo * d, k * d * sizeof(double));
    memcpy(t->upper, f->upper + (size_t)lo * d, k * d * sizeof(double));
    t->n_nodes = k;
    t->node_offset[1] = (mt_index)k;
    s->root = 0;
    s->n_old = k;
    return MT_OK;
}

/* A new node of the scratch (room was reserved): a leaf with no box yet. */
static mt_index new_node(mt_forest *t, mt_index parent)
{
    mt_index id = (mt_index)t->n_nodes;
    t->tree_of[id] = 0;
    t->parent[id] = parent;
    t->left[id] = MT_NONE;
    t->right[id] = MT_NONE;
    t->feature[id] = MT_NONE;
    t->start[id] = 0;
    t->end[id] = 0;
    t->threshold[id] = 0.0;
    t->tau[id] = INFINITY;
    t->n_nodes += 1;
    t->node_offset[1] = (mt_index)t->n_nodes;
    return id;
}

/*
 * Insert x (the batch's point i) into the scratch's tree: the walk of
 * insert.h.  Draws from rng: one exponential per node whose box does not
 * contain x, and two uniforms (dimension, cut) per insertion of a parent.
 */
static void insert_point(iscratch *s, const double *restrict x, size_t i, double lifetime,
                         size_t max_nodes, bitgen_t *rng)
{
    mt_forest *t = &s->t;
    const size_t d = t->n_features;
    /* At the node cap the point only enlarges boxes and joins a leaf. */
    const int may_split = max_nodes == 0 || t->n_nodes + 2 <= max_nodes;
    mt_index j = s->root;
    double t0 = 0.0;
    for (;;) {
        double *lo = t->lower + (size_t)j * d, *hi = t->upper + (size_t)j * d;
        double gap = 0.0;
        for (size_t k = 0; k < d; ++k) {
            double below = lo[k] - x[k], above = x[k] - hi[k];
            gap += (below > 0.0 ? below : 0.0) + (above > 0.0 ? above : 0.0);
        }
        if (gap > 0.0) {
            double time = may_split ? t0 - log(open_uniform(rng)) / gap : INFINITY;
            if (time < t->tau[j] && time <= lifetime) {
                /* Dimension with probability proportional to its gap. */
                double r = rng->next_double(rng->state) * gap, acc = 0.0;
                size_t dim = d;
                for (size_t k = 0; k < d; ++k) {
                    double below = lo[k] - x[k], above = x[k] - hi[k];
                    double e = (below > 0.0 ? below : 0.0) + (above > 0.0 ? above : 0.0);
                    acc += e;
                    if (e > 0.0) {
                        dim = k;
                        if (r < acc) {
                            break;
                        }
                    }
                }
                /* Cut uniform in the gap [a0, a1) between x and the box;
                 * a draw that rounds up to a1 is redrawn, so that x and
                 * the box are on opposite sides (x_d <= a goes left). */
                int x_below = x[dim] < lo[dim];
                double a0 = x_below ? x[dim] : hi[dim];
                double a1 = x_below ? lo[dim] : x[dim];
                double a;
                do {
                    a = a0 + rng->next_double(rng->state) * (a1 - a0);
                } while (!(a < a1));

                mt_index up = t->parent[j];
                mt_index p = new_node(t, up);
                mt_index leaf = new_node(t, p);
                /* new_node does not move the arrays (room was reserved) */
                double *plo = t->lower + (size_t)p * d, *phi = t->upper + (size_t)p * d;
                double *llo = t->lower + (size_t)leaf * d, *lhi = t->upper + (size_t)leaf * d;
                for (size_t k = 0; k < d; ++k) {
                    plo[k] = lo[k] < x[k] ? lo[k] : x[k];
                    phi[k] = hi[k] > x[k] ? hi[k] : x[k];
                    llo[k] = x[k];
                    lhi[k] = x[k];
                }
                if (up == MT_NONE) {
                    s->root = p;
                } else if (t->left[up] == j) {
                    t->left[up] = p;
                } else {
                    t->right[up] = p;
                }
                t->parent[j] = p;
                t->left[p] = x_below ? leaf : j;
                t->right[p] = x_below ? j : leaf;
                t->feature[p] = (mt_index)dim;
                t->threshold[p] = a;
                t->tau[p] = time;
                /* p is active exactly where j was: it takes j's column key;
                 * the new leaf's key is fixed after the batch (-1 - i). */
                t->key[p] = t->key[j];
                t->key[leaf] = -1 - (mt_index)i;
                s->leaf_of[i] = leaf;
                s->created[i] = 1;
                return;
            }
            for (size_t k = 0; k < d; ++k) {
                lo[k] = lo[k] < x[k] ? lo[k] : x[k];
                hi[k] = hi[k] > x[k] ? hi[k] : x[k];
            }
        }
        if (t->left[j] == MT_NONE) {
            s->leaf_of[i] = j; /* x joins the leaf */
            return;
        }
        t0 = t->tau[j];
        j = x[t->feature[j]] <= t->threshold[j] ? t->left[j] : t->right[j];
    }
}

/*
 * Renumber the scratch's tree (new local ids in grow.c's order) and rebuild
 * its point permutation: old_perm (n_old_points entries, the tree's row
 * before the batch), then new point i has id n_old_points + i.  Without
 * points (old_perm NULL) only the slices of the virtual permutation are
 * laid out, from the counts.
 */
static void renumber(iscratch *s, const mt_index *old_perm, size_t n_old_points, size_t n)
{
    mt_forest *t = &s->t;
    const size_t k = t->n_nodes;
    mt_index *stack = s->stack;
    size_t n_stack = 0, next = 1, pos = 0;

    /* New points bucketed by leaf, in batch order (a counting sort). */
    memset(s->bucket, 0, (k + 1) * sizeof(mt_index));
    for (size_t i = 0; i < n; ++i) {
        s->bucket[s->leaf_of[i] + 1] += 1;
    }
    for (size_t j = 0; j < k; ++j) {
        s->bucket[j + 1] += s->bucket[j];
    }
    for (size_t i = 0; i < n; ++i) {
        s->joined[s->bucket[s->leaf_of[i]]++] = (mt_index)i;
    }
    /* bucket[j] is now the end of leaf j's points; its start is bucket[j-1]
     * (0 for j = 0). */

    /* Depth-first, left first: children numbered in pairs when their parent
     * is reached, each leaf's points laid out when it is reached (its old
     * slice, read before its start/end are overwritten, then its new
     * points).  The stack holds at most one entry per leaf. */
    s->new_id[s->root] = 0;
    s->order[0] = s->root;
    stack[n_stack++] = s->root;
    while (n_stack > 0) {
        mt_index j = stack[--n_stack];
        mt_index l = t->left[j], r = t->right[j];
        if (l != MT_NONE) {
            s->new_id[l] = (mt_index)next;
            s->order[next] = l;
            s->new_id[r] = (mt_index)(next + 1);
            s->order[next + 1] = r;
            next += 2;
            stack[n_stack++] = r;
            stack[n_stack++] = l;
            continue;
        }
        mt_index old_start = t->start[j], old_end = t->end[j];
        mt_index new_start = j > 0 ? s->bucket[j - 1] : 0, new_end = s->bucket[j];
        t->start[j] = (mt_index)pos;
        if (old_perm == NULL) {
            pos += (size_t)(new_end - new_start);
            pos += (size_t)j < s->n_old ? (size_t)(old_end - old_start) : 0;
        } else {
            if ((size_t)j < s->n_old) {
                for (mt_index q = old_start; q < old_end; ++q) {
                    s->perm[pos++] = old_perm[q];
                }
            }
            for (mt_index q = new_start; q < new_end; ++q) {
                s->perm[pos++] = (mt_index)n_old_points + s->joined[q];
            }
        }
        t->end[j] = (mt_index)pos;
    }
    /* Internal nodes span their left child's start to their right child's
     * end; children have larger new ids, so a reverse sweep over the new
     * order finishes them first. */
    for (size_t q = k; q-- > 0;) {
        mt_index j = s->order[q];
        if (t->left[j] != MT_NONE) {
            t->start[j] = t->start[t->left[j]];
            t->end[j] = t->end[t->right[j]];
        }
    }
}

/* Copy the renumbered scratch of tree m into f at node_offset[m]; new
 * leaves' keys are base + rank[i] for the point i that created them. */
static void istore(const iscratch *s, mt_forest *f, size_t m, const mt_index *rank,
                   mt_index base)
{
    const mt_forest *t = &s->t;
    const mt_index lo = f->node_offset[m];
    const size_t k = t->n_nodes, d = f->n_features;
    for (size_t q = 0; q < k; ++q) {
        mt_index j = s->order[q];
        size_t g = (size_t)lo + q;
        mt_index key = t->key[j];
        f->tree_of[g] = (mt_index)m;
        f->parent[g] = t->parent[j] == MT_NONE ? MT_NONE : s->new_id[t->parent[j]] + lo;
        f->left[g] = t->left[j] == MT_NONE ? MT_NONE : s->new_id[t->left[j]] + lo;
        f->right[g] = t->right[j] == MT_NONE ? MT_NONE : s->new_id[t->right[j]] + lo;
        f->feature[g] = t->feature[j];
        f->start[g] = t->start[j];
        f->end[g] = t->end[j];
        f->threshold[g] = t->threshold[j];
        f->tau[g] = t->tau[j];
        f->key[g] = key >= 0 ? key : base + rank[-1 - key];
        memcpy(f->lower + g * d, t->lower + (size_t)j * d, d * sizeof(double));
        memcpy(f->upper + g * d, t->upper + (size_t)j * d, d * sizeof(double));
    }
    if (f->perm != NULL) {
        memcpy(mt_forest_perm(f, m), s->perm, f->n_points * sizeof(mt_index));
    }
}

int mt_forest_insert(mt_forest *f, const double *X, size_t n, size_t max_nodes,
                     bitgen_t *const *rngs, int n_threads)
{
    const size_t M = f->n_trees, d = f->n_features, n_old_points = f->n_points;
    const ptrdiff_t count = (ptrdiff_t)M;
    /* A batch whose work (copying every tree's nodes and permutation) is
     * below about a millisecond runs on one thread: starting the team costs
     * more than it saves (the result does not depend on it). */
    const int nt = n_threads > 1 && M * (f->n_nodes / M + n_old_points + n) >= MT_INSERT_SERIAL
                       ? n_threads : 1;
    iscratch *trees = NULL;
    mt_index *rank = NULL, base = 0;
    size_t total = 0, need_points, xd;
    int status = MT_OK;
    if (f->n_nodes == 0 || (X == NULL && n > 0)) {
        return MT_ERR_ARG;
    }
    if (n == 0) {
        return MT_OK;
    }
    need_points = n_old_points + n;
    /* rank holds n * M indices; X holds n * d doubles */
    if (need_points < n || mt_mul_size(n, d, &xd) != MT_OK ||
        mt_mul_size(n, M, &total) != MT_OK || total >= SIZE_MAX / sizeof(mt_index)) {
        return MT_ERR_OVERFLOW;
    }
    for (size_t q = 0; q < xd; ++q) {
        if (!isfinite(X[q])) {
            return MT_ERR_ARG;
        }
    }
    trees = calloc(M, sizeof(iscratch)); /* M * sizeof fits: node_offset has M + 1 */
    rank = malloc(n * M * sizeof(mt_index));
    if (trees == NULL || rank == NULL) {
        free(trees);
        free(rank);
        return MT_ERR_NOMEM;
    }
    (void)nt;
    /* 1. Every tree on its own: load, insert the batch, renumber (reads f). */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) reduction(min : status)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        iscratch *s = &trees[m];
        int st = iscratch_load(s, f, (size_t)m, n, max_nodes);
        double *Z = NULL;        /* the batch in tree m's coordinates */
        const double *P = X;
        if (st == MT_OK && f->rotation != NULL) {
            Z = malloc(xd * sizeof(double));
            if (Z == NULL) {
                st = MT_ERR_NOMEM;
            } else {
                mt_forest_transform(f, (size_t)m, X, n, Z);
                P = Z;
            }
        }
        if (st == MT_OK) {
            for (size_t i = 0; i < n; ++i) {
                insert_point(s, P + i * d, i, f->lifetime, max_nodes, rngs[m]);
            }
            renumber(s, f->perm != NULL ? mt_forest_perm(f, (size_t)m) : NULL, n_old_points,
                     n);
        }
        free(Z);
        status = st < status ? st : status;
    }
    if (status != MT_OK) {
        goto cleanup;
    }
    /* 2. Keys of the new leaves, point by point and tree by tree within a
     * point, above every existing key; rank[m * n + i]. */
    if (f->key == NULL) {
        base = (mt_index)f->n_nodes;
    } else {
        for (size_t j = 0; j < f->n_nodes; ++j) {
            base = f->key[j] >= base ? f->key[j] + 1 : base;
        }
    }
    {
        mt_index next = 0;
        for (size_t i = 0; i < n; ++i) {
            for (size_t m = 0; m < M; ++m) {
                rank[m * n + i] = trees[m].created[i] ? next++ : MT_NONE;
            }
        }
    }
    total = 0;
    for (size_t m = 0; m < M; ++m) {
        total += trees[m].t.n_nodes;
    }
    /* 3. The fallible steps on f, before any change to its content:
     * capacities by doubling, and the keys on the first insertion. */
    if (total > f->node_capacity) {
        size_t cap = 2 * f->node_capacity;
        if ((status = mt_forest_reserve_nodes(f, cap > total ? cap : total)) != MT_OK) {
            goto cleanup;
        }
    }
    if (f->X != NULL && need_points > f->point_capacity) {
        size_t cap = 2 * f->point_capacity;
        if ((status = mt_forest_reserve_points(f, cap > need_points ? cap : need_points)) !=
            MT_OK) {
            goto cleanup;
        }
    }
    if (f->key == NULL) {
        f->key = calloc(f->node_capacity, sizeof(mt_index));
        if (f->key == NULL) {
            status = MT_ERR_NOMEM;
            goto cleanup;
        }
    }
    /* 4. Store: the points (if kept), then every tree at its new offset. */
    if (f->X != NULL) {
        memcpy(f->X + n_old_points * d, X, xd * sizeof(double));
    }
    f->n_points = need_points;
    f->node_offset[0] = 0;
    for (size_t m = 0; m < M; ++m) {
        f->node_offset[m + 1] = f->node_offset[m] + (mt_index)trees[m].t.n_nodes;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        istore(&trees[m], f, (size_t)m, rank + (size_t)m * n, base);
    }
    f->n_nodes = total;
cleanup:
    for (size_t m = 0; m < M; ++m) {
        iscratch_free(&trees[m]);
    }
    free(trees);
    free(rank);
    return status;
}
