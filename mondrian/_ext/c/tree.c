/*
 * tree.c -- storage and growth of Mondrian trees on data (paper Sec. 2.2).
 *
 * A node holding points P with data box [l, u] has linear dimension
 * L = sum_d (u_d - l_d).  Started at time t0 (its parent's split time), it
 * splits at t0 + Exp(L) if that is within the lifetime, in dimension d with
 * probability (u_d - l_d) / L, at a cut a ~ U(l_d, u_d); points with
 * x_d <= a go left.  By projectivity (Sec. 2.3) the children's boxes are the
 * boxes of their own points.  A node with L = 0 never splits.
 */
#include "tree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

void mt_tree_init(mt_tree *tree, size_t n_features)
{
    memset(tree, 0, sizeof(*tree));
    tree->n_features = n_features;
}

void mt_tree_free(mt_tree *tree)
{
    free(tree->parent);
    free(tree->left);
    free(tree->right);
    free(tree->feature);
    free(tree->start);
    free(tree->end);
    free(tree->threshold);
    free(tree->tau);
    free(tree->lower);
    free(tree->upper);
    free(tree->perm);
    mt_tree_init(tree, tree->n_features);
}

/* Grow *array from old_n to new_n elements of `size` bytes, zeroing the tail. */
static int grow_array(void **array, size_t old_n, size_t new_n, size_t size)
{
    size_t old_bytes, new_bytes;
    if (mt_mul_size(new_n, size, &new_bytes) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    old_bytes = old_n * size;
    void *p = realloc(*array, new_bytes > 0 ? new_bytes : 1);
    if (p == NULL) {
        return MT_ERR_NOMEM;
    }
    memset((char *)p + old_bytes, 0, new_bytes - old_bytes);
    *array = p;
    return MT_OK;
}

int mt_tree_reserve(mt_tree *tree, size_t capacity)
{
    size_t old = tree->capacity, d = tree->n_features, box_old, box_new;
    int s;
    if (capacity <= old) {
        return MT_OK;
    }
    if (mt_mul_size(capacity, d, &box_new) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    box_old = old * d;
    /* Each array is grown independently; on failure the ones already grown
     * are simply larger than `capacity` says, which is harmless. */
    if ((s = grow_array((void **)&tree->parent, old, capacity, sizeof(mt_index))) ||
        (s = grow_array((void **)&tree->left, old, capacity, sizeof(mt_index))) ||
        (s = grow_array((void **)&tree->right, old, capacity, sizeof(mt_index))) ||
        (s = grow_array((void **)&tree->feature, old, capacity, sizeof(mt_index))) ||
        (s = grow_array((void **)&tree->start, old, capacity, sizeof(mt_index))) ||
        (s = grow_array((void **)&tree->end, old, capacity, sizeof(mt_index))) ||
        (s = grow_array((void **)&tree->threshold, old, capacity, sizeof(double))) ||
        (s = grow_array((void **)&tree->tau, old, capacity, sizeof(double))) ||
        (s = grow_array((void **)&tree->lower, box_old, box_new, sizeof(double))) ||
        (s = grow_array((void **)&tree->upper, box_old, box_new, sizeof(double)))) {
        return s;
    }
    tree->capacity = capacity;
    return MT_OK;
}

int mt_tree_reserve_points(mt_tree *tree, size_t n_points)
{
    size_t bytes;
    mt_index *p;
    if (mt_mul_size(n_points, sizeof(mt_index), &bytes) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    p = calloc(n_points > 0 ? n_points : 1, sizeof(mt_index));
    if (p == NULL) {
        return MT_ERR_NOMEM;
    }
    free(tree->perm);
    tree->perm = p;
    tree->n_points = n_points;
    return MT_OK;
}

/* Append a node as a leaf holding perm[start:end]; its id goes to *id. */
static int add_node(mt_tree *tree, mt_index parent, size_t start, size_t end,
                    mt_index *id)
{
    size_t n = tree->n_nodes;
    if (n == tree->capacity) {
        size_t cap = tree->capacity < 16 ? 32 : 2 * tree->capacity;
        int s = mt_tree_reserve(tree, cap);
        if (s != MT_OK) {
            return s;
        }
    }
    tree->parent[n] = parent;
    tree->left[n] = MT_NONE;
    tree->right[n] = MT_NONE;
    tree->feature[n] = MT_NONE;
    tree->start[n] = (mt_index)start;
    tree->end[n] = (mt_index)end;
    tree->threshold[n] = 0.0;
    tree->tau[n] = INFINITY;
    tree->n_nodes = n + 1;
    *id = (mt_index)n;
    return MT_OK;
}

/* Bounding box of the rows perm[start:end] of X. */
static void data_box(const double *restrict X, size_t d,
                     const mt_index *restrict perm, size_t start, size_t end,
                     double *restrict lo, double *restrict hi)
{
    const double *row = X + (size_t)perm[start] * d;
    for (size_t k = 0; k < d; ++k) {
        lo[k] = row[k];
        hi[k] = row[k];
    }
    for (size_t i = start + 1; i < end; ++i) {
        row = X + (size_t)perm[i] * d;
        for (size_t k = 0; k < d; ++k) {
            double v = row[k];
            lo[k] = v < lo[k] ? v : lo[k];
            hi[k] = v > hi[k] ? v : hi[k];
        }
    }
}

/* Uniform on the open interval (0, 1), from 53 random bits. */
static inline double open_uniform(bitgen_t *rng)
{
    return ((double)(rng->next_uint64(rng->state) >> 11) + 0.5) * 0x1.0p-53;
}

/*
 * Split-or-stop for every node on the stack and, recursively, its children.
 * A node's clock starts at max(parent's split time, t_resume).
 */
static int grow_stack(mt_tree *tree, const double *restrict X, size_t d,
                      double lifetime, double t_resume, bitgen_t *rng,
                      mt_index *stack, size_t n_stack)
{
    while (n_stack > 0) {
        mt_index j = stack[--n_stack];
        const double *lo = tree->lower + (size_t)j * d;
        const double *hi = tree->upper + (size_t)j * d;
        double linear = 0.0;
        for (size_t k = 0; k < d; ++k) {
            linear += hi[k] - lo[k];
        }
        if (!(linear > 0.0)) {
            continue; /* all points coincide: the node never splits */
        }
        mt_index p = tree->parent[j];
        double t0 = p == MT_NONE ? 0.0 : tree->tau[p];
        t0 = t0 > t_resume ? t0 : t_resume;
        double t = t0 - log(open_uniform(rng)) / linear;
        if (!(t <= lifetime)) {
            continue; /* still a leaf at the lifetime: tau stays +inf */
        }
        /* Dimension with probability proportional to its extent. */
        double r = rng->next_double(rng->state) * linear, acc = 0.0;
        size_t dim = d;
        for (size_t k = 0; k < d; ++k) {
            double ext = hi[k] - lo[k];
            acc += ext;
            if (ext > 0.0) {
                dim = k;
                if (r < acc) {
                    break;
                }
            }
        }
        /* Cut uniform in [l, u); a draw that rounds up to u is redrawn so
         * that both children are non-empty. */
        double l = lo[dim], u = hi[dim], a;
        do {
            a = l + rng->next_double(rng->state) * (u - l);
        } while (!(a < u));

        /* Partition perm[start:end] in place: x_dim <= a first. */
        mt_index *perm = tree->perm;
        size_t s = (size_t)tree->start[j], e = (size_t)tree->end[j];
        size_t i = s, last = e;
        while (i < last) {
            if (X[(size_t)perm[i] * d + dim] <= a) {
                ++i;
            } else {
                mt_index tmp = perm[i];
                perm[i] = perm[--last];
                perm[last] = tmp;
            }
        }
        mt_index left, right;
        int status;
        if ((status = add_node(tree, j, s, i, &left)) != MT_OK ||
            (status = add_node(tree, j, i, e, &right)) != MT_OK) {
            return status;
        }
        data_box(X, d, perm, s, i, tree->lower + (size_t)left * d,
                 tree->upper + (size_t)left * d);
        data_box(X, d, perm, i, e, tree->lower + (size_t)right * d,
                 tree->upper + (size_t)right * d);
        tree->left[j] = left;
        tree->right[j] = right;
        tree->feature[j] = (mt_index)dim;
        tree->threshold[j] = a;
        tree->tau[j] = t;
        stack[n_stack++] = right;
        stack[n_stack++] = left;
    }
    return MT_OK;
}

static int check_grow_args(const mt_tree *tree, const double *X, size_t n,
                           size_t d, double lifetime)
{
    if (X == NULL || n == 0 || d == 0 || d != tree->n_features ||
        !(lifetime >= 0.0) || isinf(lifetime)) {
        return MT_ERR_ARG;
    }
    return MT_OK;
}

int mt_tree_fit(mt_tree *tree, const double *X, size_t n, size_t d,
                double lifetime, bitgen_t *rng)
{
    int status;
    mt_index root, *stack = NULL;
    if ((status = check_grow_args(tree, X, n, d, lifetime)) != MT_OK) {
        return status;
    }
    tree->n_nodes = 0;
    tree->lifetime = 0.0;
    if ((status = mt_tree_reserve_points(tree, n)) != MT_OK ||
        (status = mt_tree_reserve(tree, 32)) != MT_OK ||
        (status = add_node(tree, MT_NONE, 0, n, &root)) != MT_OK) {
        return status;
    }
    for (size_t i = 0; i < n; ++i) {
        tree->perm[i] = (mt_index)i;
    }
    data_box(X, d, tree->perm, 0, n, tree->lower, tree->upper);
    /* At most one stack entry per leaf, and a tree has at most n leaves. */
    stack = malloc((n + 1) * sizeof(mt_index));
    if (stack == NULL) {
        return MT_ERR_NOMEM;
    }
    stack[0] = root;
    status = grow_stack(tree, X, d, lifetime, 0.0, rng, stack, 1);
    free(stack);
    if (status == MT_OK) {
        tree->lifetime = lifetime;
    }
    return status;
}

int mt_tree_extend(mt_tree *tree, const double *X, size_t n, size_t d,
                   double lifetime, bitgen_t *rng)
{
    int status;
    size_t n_stack = 0;
    mt_index *stack;
    if ((status = check_grow_args(tree, X, n, d, lifetime)) != MT_OK) {
        return status;
    }
    if (n != tree->n_points || tree->n_nodes == 0 || lifetime < tree->lifetime) {
        return MT_ERR_ARG;
    }
    stack = malloc((n + 1) * sizeof(mt_index));
    if (stack == NULL) {
        return MT_ERR_NOMEM;
    }
    /* Push the leaves in reverse id order so that they are popped in order. */
    for (size_t j = tree->n_nodes; j-- > 0;) {
        if (tree->left[j] == MT_NONE) {
            stack[n_stack++] = (mt_index)j;
        }
    }
    status = grow_stack(tree, X, d, lifetime, tree->lifetime, rng, stack, n_stack);
    free(stack);
    if (status == MT_OK) {
        tree->lifetime = lifetime;
    }
    return status;
}

int mt_tree_check(const mt_tree *tree)
{
    size_t n = tree->n_nodes, np = tree->n_points, d = tree->n_features;
    if (n == 0 || n > tree->capacity || np == 0 || tree->perm == NULL ||
        d == 0 || !(tree->lifetime >= 0.0) || isinf(tree->lifetime)) {
        return MT_ERR_STATE;
    }
    if (tree->parent[0] != MT_NONE || tree->start[0] != 0 ||
        tree->end[0] != (mt_index)np) {
        return MT_ERR_STATE;
    }
    for (size_t j = 0; j < n; ++j) {
        mt_index l = tree->left[j], r = tree->right[j], p = tree->parent[j];
        if (j > 0 && (p < 0 || (size_t)p >= n)) {
            return MT_ERR_STATE;
        }
        if (tree->start[j] < 0 || tree->start[j] >= tree->end[j] ||
            tree->end[j] > (mt_index)np) {
            return MT_ERR_STATE;
        }
        if (l == MT_NONE && r == MT_NONE) {
            if (tree->feature[j] != MT_NONE || !isinf(tree->tau[j])) {
                return MT_ERR_STATE;
            }
            continue;
        }
        if (l <= 0 || r <= 0 || (size_t)l >= n || (size_t)r >= n ||
            tree->parent[l] != (mt_index)j || tree->parent[r] != (mt_index)j ||
            tree->feature[j] < 0 || (size_t)tree->feature[j] >= d ||
            !(tree->tau[j] >= 0.0) || tree->tau[j] > tree->lifetime ||
            tree->start[l] != tree->start[j] || tree->end[l] != tree->start[r] ||
            tree->end[r] != tree->end[j]) {
            return MT_ERR_STATE;
        }
        if (p != MT_NONE && tree->tau[j] < tree->tau[p]) {
            return MT_ERR_STATE;
        }
    }
    for (size_t i = 0; i < np; ++i) {
        if (tree->perm[i] < 0 || (size_t)tree->perm[i] >= np) {
            return MT_ERR_STATE;
        }
    }
    return MT_OK;
}

int mt_forest_grow(mt_tree *const *trees, bitgen_t *const *rngs, size_t n_trees,
                   const double *X, size_t n, size_t d, double lifetime,
                   int extend, int n_threads)
{
    int status = MT_OK;
    ptrdiff_t count = (ptrdiff_t)n_trees;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1) reduction(min : status)
#endif
    for (ptrdiff_t m = 0; m < count; ++m) {
        int s = extend ? mt_tree_extend(trees[m], X, n, d, lifetime, rngs[m])
                       : mt_tree_fit(trees[m], X, n, d, lifetime, rngs[m]);
        status = s < status ? s : status;
    }
    return status;
}
