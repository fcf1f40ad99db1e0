/* forest.c -- storage of a Mondrian forest (see forest.h). */
#include "forest.h"

#include <float.h>
#include <math.h>

/*
 * The transform is the inner loop of rotated growth and lookups (D^2
 * multiply-adds per point per tree).  On x86-64 ELF targets it is compiled
 * twice, for the baseline (SSE2) and for AVX2, and the loader picks the
 * clone the CPU runs (GCC/clang target_clones).  Both compute the same
 * products and sums in the same order: C99 mode turns off floating-point
 * contraction and neither target has fused multiply-add, so the two clones
 * give bitwise equal results (a forest pickled on one CPU passes
 * mt_forest_check on another).
 */
/* MT_SIMD_CLONES: common.h. */

int mt_forest_init(mt_forest *f, size_t n_trees, size_t n_features)
{
    memset(f, 0, sizeof(*f));
    if (n_trees == 0 || n_features == 0 || n_trees >= SIZE_MAX / sizeof(mt_index)) {
        return MT_ERR_ARG;
    }
    f->node_offset = calloc(n_trees + 1, sizeof(mt_index));
    if (f->node_offset == NULL) {
        return MT_ERR_NOMEM;
    }
    f->n_trees = n_trees;
    f->n_features = n_features;
    return MT_OK;
}

void mt_forest_free(mt_forest *f)
{
    free(f->node_offset);
    free(f->tree_of);
    free(f->parent);
    free(f->left);
    free(f->right);
    free(f->feature);
    free(f->start);
    free(f->end);
    free(f->threshold);
    free(f->tau);
    free(f->lower);
    free(f->upper);
    free(f->X);
    free(f->perm);
    free(f->rotation);
    free(f->center);
    free(f->scale);
    free(f->key);
    memset(f, 0, sizeof(*f));
}

void mt_forest_drop_transform(mt_forest *f)
{
    free(f->rotation);
    free(f->center);
    f->rotation = NULL;
    f->center = NULL;
}

int mt_forest_set_scale(mt_forest *f, const double *scale)
{
    const size_t d = f->n_features;
    if (f->n_nodes > 0 || f->rotation != NULL) {
        return MT_ERR_STATE;
    }
    double *copy = NULL;
    if (scale != NULL) {
        for (size_t b = 0; b < d; ++b) {
            if (!(scale[b] > 0.0) || !isfinite(scale[b])) {
                return MT_ERR_ARG;
            }
        }
        if ((copy = malloc(d * sizeof(double))) == NULL) {
            return MT_ERR_NOMEM;
        }
        memcpy(copy, scale, d * sizeof(double));
    }
    free(f->scale);
    f->scale = copy;
    return MT_OK;
}

/*
 * The kernel of the transform: out[r][a] = sum_b (X[r][b] - c[b]) Q[b][a],
 * summed over b = 0, 1, ... in order, one multiply and one add per term.
 * Four rows at a time share each load of a row of Q, in tiles of 8, then 4,
 * then 1 columns; with GCC's or clang's vector extensions a tile's
 * accumulators are vectors of 4 doubles held in registers (2.7 times the
 * speed of the plain loops, which compilers spill to the stack), else
 * plain loops.  Every element gets the same operations in the same order
 * on both paths, so the results are equal.
 */
static void transform_one(const double *restrict x, size_t R, const double *restrict Q,
                          const double *restrict c, size_t d, size_t a, double *restrict z)
{
    for (size_t r = 0; r < R; ++r) {
        double acc = 0.0;
        for (size_t b = 0; b < d; ++b) {
            acc += (x[r * d + b] - c[b]) * Q[b * d + a];
        }
        z[r * d + a] = acc;
    }
}

#if defined(__GNUC__)
/* Vectors are loaded and stored with memcpy (unaligned), never passed to
 * or returned from a function (whose ABI would depend on the clone). */
typedef double mt_v4 __attribute__((vector_size(32)));

/* Rows x[0..3] (stride d), columns a0 .. a0 + 8. */
static inline void transform_4x8(const double *restrict x, const double *restrict Q,
                                 const double *restrict c, size_t d, size_t a0,
                                 double *restrict z)
{
    const mt_v4 zero = {0.0, 0.0, 0.0, 0.0};
    mt_v4 a00 = zero, a01 = zero, a10 = zero, a11 = zero;
    mt_v4 a20 = zero, a21 = zero, a30 = zero, a31 = zero;
    for (size_t b = 0; b < d; ++b) {
        mt_v4 q0, q1;
        memcpy(&q0, Q + b * d + a0, sizeof q0);
        memcpy(&q1, Q + b * d + a0 + 4, sizeof q1);
        const double s0 = x[b] - c[b], s1 = x[d + b] - c[b];
        const double s2 = x[2 * d + b] - c[b], s3 = x[3 * d + b] - c[b];
        a00 += s0 * q0;
        a01 += s0 * q1;
        a10 += s1 * q0;
        a11 += s1 * q1;
        a20 += s2 * q0;
        a21 += s2 * q1;
        a30 += s3 * q0;
        a31 += s3 * q1;
    }
    memcpy(z + a0, &a00, sizeof a00);
    memcpy(z + a0 + 4, &a01, sizeof a01);
    memcpy(z + d + a0, &a10, sizeof a10);
    memcpy(z + d + a0 + 4, &a11, sizeof a11);
    memcpy(z + 2 * d + a0, &a20, sizeof a20);
    memcpy(z + 2 * d + a0 + 4, &a21, sizeof a21);
    memcpy(z + 3 * d + a0, &a30, sizeof a30);
    memcpy(z + 3 * d + a0 + 4, &a31, sizeof a31);
}

/* Rows x[0..3], columns a0 .. a0 + 4. */
static inline void transform_4x4(const double *restrict x, const double *restrict Q,
                                 const double *restrict c, size_t d, size_t a0,
                                 double *restrict z)
{
    const mt_v4 zero = {0.0, 0.0, 0.0, 0.0};
    mt_v4 a0v = zero, a1v = zero, a2v = zero, a3v = zero;
    for (size_t b = 0; b < d; ++b) {
        mt_v4 q;
        memcpy(&q, Q + b * d + a0, sizeof q);
        a0v += (x[b] - c[b]) * q;
        a1v += (x[d + b] - c[b]) * q;
        a2v += (x[2 * d + b] - c[b]) * q;
        a3v += (x[3 * d + b] - c[b]) * q;
    }
    memcpy(z + a0, &a0v, sizeof a0v);
    memcpy(z + d + a0, &a1v, sizeof a1v);
    memcpy(z + 2 * d + a0, &a2v, sizeof a2v);
    memcpy(z + 3 * d + a0, &a3v, sizeof a3v);
}

/* Four rows, every column. */
static inline void transform_4(const double *restrict x, const double *restrict Q,
                               const double *restrict c, size_t d, double *restrict z)
{
    size_t a0 = 0;
    for (; a0 + 8 <= d; a0 += 8) {
        transform_4x8(x, Q, c, d, a0, z);
    }
    for (; a0 + 4 <= d; a0 += 4) {
        transform_4x4(x, Q, c, d, a0, z);
    }
    for (; a0 < d; ++a0) {
        transform_one(x, 4, Q, c, d, a0, z);
    }
}
#else
static void transform_4(const double *restrict x, const double *restrict Q,
                        const double *restrict c, size_t d, double *restrict z)
{
    for (size_t a = 0; a < d; ++a) {
        transform_one(x, 4, Q, c, d, a, z);
    }
}
#endif

MT_SIMD_CLONES
void mt_forest_transform(const mt_forest *f, size_t m, const double *X, size_t n,
                         double *out)
{
    const size_t d = f->n_features;
    if (f->rotation == NULL) {
        const double *l = f->scale;
        if (l == NULL) {
            memcpy(out, X, n * d * sizeof(double));
            return;
        }
        for (size_t i = 0; i < n; ++i) {
            for (size_t b = 0; b < d; ++b) {
                out[i * d + b] = X[i * d + b] / l[b];
            }
        }
        return;
    }
    const double *Q = f->rotation + m * d * d, *c = f->center;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        transform_4(X + i * d, Q, c, d, out + i * d);
    }
    for (; i < n; ++i) {
        for (size_t a = 0; a < d; ++a) {
            transform_one(X + i * d, 1, Q, c, d, a, out + i * d);
        }
    }
}

/* The node arrays grown to `capacity`, the boxes too if with_boxes: each a
 * fresh zeroed block with the old contents copied (mt_grow_zeroed; its
 * untouched part stays uncommitted). */
static int reserve_nodes(mt_forest *f, size_t capacity, int with_boxes)
{
    size_t old = f->node_capacity, d = f->n_features, box_new;
    int s;
    if (capacity <= old) {
        return MT_OK;
    }
    if (mt_mul_size(capacity, d, &box_new) != MT_OK ||
        mt_mul_size(box_new, sizeof(double), &box_new) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    /* Each array grows on its own (so the copy needs room for one array at
     * a time); on failure the ones already grown are larger than
     * node_capacity says, which is harmless. */
    if ((s = mt_grow_zeroed((void **)&f->tree_of, old, capacity, sizeof(mt_index))) ||
        (s = mt_grow_zeroed((void **)&f->parent, old, capacity, sizeof(mt_index))) ||
        (s = mt_grow_zeroed((void **)&f->left, old, capacity, sizeof(mt_index))) ||
        (s = mt_grow_zeroed((void **)&f->right, old, capacity, sizeof(mt_index))) ||
        (s = mt_grow_zeroed((void **)&f->feature, old, capacity, sizeof(mt_index))) ||
        (s = mt_grow_zeroed((void **)&f->start, old, capacity, sizeof(mt_index))) ||
        (s = mt_grow_zeroed((void **)&f->end, old, capacity, sizeof(mt_index))) ||
        (s = mt_grow_zeroed((void **)&f->threshold, old, capacity, sizeof(double))) ||
        (s = mt_grow_zeroed((void **)&f->tau, old, capacity, sizeof(double))) ||
        (with_boxes &&
         ((s = mt_grow_zeroed((void **)&f->lower, old * d, capacity * d, sizeof(double))) ||
          (s = mt_grow_zeroed((void **)&f->upper, old * d, capacity * d, sizeof(double))))) ||
        (f->key != NULL &&
         (s = mt_grow_zeroed((void **)&f->key, old, capacity, sizeof(mt_index))))) {
        return s;
    }
    f->node_capacity = capacity;
    return MT_OK;
}

/* One array cut down to `bytes` (> 0) in place: realloc shrinks a block
 * where it is (glibc unmaps the tail of a mapped block); should it fail,
 * the larger block stays, which is harmless. */
static void shrink_array(void **array, size_t bytes)
{
    void *p = *array != NULL ? realloc(*array, bytes) : NULL;
    if (p != NULL) {
        *array = p;
    }
}

void mt_forest_shrink_nodes(mt_forest *f, size_t capacity)
{
    const size_t d = f->n_features;
    if (capacity == 0 || capacity >= f->node_capacity || capacity < f->n_nodes) {
        return;
    }
    shrink_array((void **)&f->tree_of, capacity * sizeof(mt_index));
    shrink_array((void **)&f->parent, capacity * sizeof(mt_index));
    shrink_array((void **)&f->left, capacity * sizeof(mt_index));
    shrink_array((void **)&f->right, capacity * sizeof(mt_index));
    shrink_array((void **)&f->feature, capacity * sizeof(mt_index));
    shrink_array((void **)&f->start, capacity * sizeof(mt_index));
    shrink_array((void **)&f->end, capacity * sizeof(mt_index));
    shrink_array((void **)&f->threshold, capacity * sizeof(double));
    shrink_array((void **)&f->tau, capacity * sizeof(double));
    if (d > 0) {
        /* fits: the boxes held node_capacity * d > capacity * d doubles */
        shrink_array((void **)&f->lower, capacity * d * sizeof(double));
        shrink_array((void **)&f->upper, capacity * d * sizeof(double));
    }
    shrink_array((void **)&f->key, capacity * sizeof(mt_index));
    f->node_capacity = capacity;
}

int mt_forest_reserve_nodes(mt_forest *f, size_t capacity)
{
    return reserve_nodes(f, capacity, 1);
}

int mt_forest_extend_nodes(mt_forest *f, size_t capacity)
{
    const size_t old = f->node_capacity, half = old / 2;
    int s;
    if (capacity <= old) {
        return MT_OK;
    }
    if (half <= SIZE_MAX - old && old + half > capacity) {
        /* the slack is a convenience: without room for it, the capacity */
        s = reserve_nodes(f, old + half, 1);
        if (s != MT_ERR_NOMEM && s != MT_ERR_OVERFLOW) {
            return s;
        }
    }
    return reserve_nodes(f, capacity, 1);
}

int mt_forest_reserve_links(mt_forest *f, size_t capacity)
{
    return reserve_nodes(f, capacity, 0);
}

int mt_forest_reserve_points(mt_forest *f, size_t capacity)
{
    size_t old = f->point_capacity, d = f->n_features, M = f->n_trees, bytes;
    mt_index *perm;
    int s;
    if (capacity <= old) {
        return MT_OK;
    }
    if (mt_mul_size(capacity, d, &bytes) != MT_OK ||
        mt_mul_size(bytes, sizeof(double), &bytes) != MT_OK ||
        mt_mul_size(capacity, M, &bytes) != MT_OK ||
        mt_mul_size(bytes, sizeof(mt_index), &bytes) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    /* The permutation rows move to the new stride: a fresh block first, so
     * that on failure nothing has changed. */
    perm = calloc(capacity * M, sizeof(mt_index));
    if (perm == NULL) {
        return MT_ERR_NOMEM;
    }
    if (bytes >= MT_HUGE_PAGE) {
        mt_advise_huge(perm, bytes);
    }
    if ((s = mt_grow_zeroed((void **)&f->X, old * d, capacity * d, sizeof(double))) != MT_OK) {
        free(perm);
        return s;
    }
    for (size_t m = 0; m < M && f->perm != NULL; ++m) {
        memcpy(perm + m * capacity, f->perm + m * old, f->n_points * sizeof(mt_index));
    }
    free(f->perm);
    f->perm = perm;
    f->point_capacity = capacity;
    return MT_OK;
}

int mt_forest_append_points(mt_forest *f, const double *X, size_t n)
{
    size_t need = f->n_points + n, d = f->n_features;
    int s;
    if (X == NULL || need < n) {
        return X == NULL ? MT_ERR_ARG : MT_ERR_OVERFLOW;
    }
    if (need > f->point_capacity) {
        size_t cap = f->point_capacity * 2;
        if ((s = mt_forest_reserve_points(f, cap > need ? cap : need)) != MT_OK) {
            return s;
        }
    }
    memcpy(f->X + f->n_points * d, X, n * d * sizeof(double));
    f->n_points = need;
    return MT_OK;
}

void mt_forest_drop_points(mt_forest *f)
{
    free(f->X);
    free(f->perm);
    f->X = NULL;
    f->perm = NULL;
    f->point_capacity = 0;
}

void mt_forest_clear_nodes(mt_forest *f)
{
    f->n_nodes = 0;
    memset(f->node_offset, 0, (f->n_trees + 1) * sizeof(mt_index));
    free(f->key);
    f->key = NULL;
}

void mt_forest_clear(mt_forest *f)
{
    mt_forest_clear_nodes(f);
    f->n_points = 0;
    f->lifetime = 0.0;
}

int mt_forest_append_node(mt_forest *f, size_t m, mt_index parent,
                          mt_index start, mt_index end, mt_index *id)
{
    size_t n = f->n_nodes;
    if (m >= f->n_trees || f->node_offset[m + 1] != (mt_index)n) {
        return MT_ERR_ARG;
    }
    if (n == f->node_capacity) {
        size_t cap = n < 16 ? 32 : 2 * n;
        int s = mt_forest_reserve_nodes(f, cap);
        if (s != MT_OK) {
            return s;
        }
    }
    f->tree_of[n] = (mt_index)m;
    f->parent[n] = parent;
    f->left[n] = MT_NONE;
    f->right[n] = MT_NONE;
    f->feature[n] = MT_NONE;
    f->start[n] = start;
    f->end[n] = end;
    f->threshold[n] = 0.0;
    f->tau[n] = INFINITY;
    f->n_nodes = n + 1;
    for (size_t k = m + 1; k <= f->n_trees; ++k) {
        f->node_offset[k] = (mt_index)(n + 1);
    }
    *id = (mt_index)n;
    return MT_OK;
}

/* *dst = a fresh copy of n elements of `size` bytes at src (NULL stays NULL). */
static int dup_array(void **dst, const void *src, size_t n, size_t size)
{
    *dst = NULL;
    if (src == NULL) {
        return MT_OK;
    }
    *dst = calloc(n > 0 ? n : 1, size);
    if (*dst == NULL) {
        return MT_ERR_NOMEM;
    }
    memcpy(*dst, src, n * size);
    return MT_OK;
}

int mt_forest_copy(mt_forest *dst, const mt_forest *src)
{
    size_t cap = src->node_capacity, d = src->n_features, M = src->n_trees;
    size_t pcap = src->point_capacity;
    int s;
    memset(dst, 0, sizeof(*dst));
    /* sizes were checked when src was allocated */
    if ((s = dup_array((void **)&dst->node_offset, src->node_offset, M + 1, sizeof(mt_index))) ||
        (s = dup_array((void **)&dst->tree_of, src->tree_of, cap, sizeof(mt_index))) ||
        (s = dup_array((void **)&dst->parent, src->parent, cap, sizeof(mt_index))) ||
        (s = dup_array((void **)&dst->left, src->left, cap, sizeof(mt_index))) ||
        (s = dup_array((void **)&dst->right, src->right, cap, sizeof(mt_index))) ||
        (s = dup_array((void **)&dst->feature, src->feature, cap, sizeof(mt_index))) ||
        (s = dup_array((void **)&dst->start, src->start, cap, sizeof(mt_index))) ||
        (s = dup_array((void **)&dst->end, src->end, cap, sizeof(mt_index))) ||
        (s = dup_array((void **)&dst->threshold, src->threshold, cap, sizeof(double))) ||
        (s = dup_array((void **)&dst->tau, src->tau, cap, sizeof(double))) ||
        (s = dup_array((void **)&dst->lower, src->lower, cap * d, sizeof(double))) ||
        (s = dup_array((void **)&dst->upper, src->upper, cap * d, sizeof(double))) ||
        (s = dup_array((void **)&dst->X, src->X, pcap * d, sizeof(double))) ||
        (s = dup_array((void **)&dst->perm, src->perm, pcap * M, sizeof(mt_index))) ||
        (s = dup_array((void **)&dst->rotation, src->rotation, M * d * d, sizeof(double))) ||
        (s = dup_array((void **)&dst->center, src->center, d, sizeof(double))) ||
        (s = dup_array((void **)&dst->scale, src->scale, d, sizeof(double))) ||
        (s = dup_array((void **)&dst->key, src->key, cap, sizeof(mt_index)))) {
        mt_forest_free(dst);
        return s;
    }
    dst->n_trees = M;
    dst->n_features = d;
    dst->lifetime = src->lifetime;
    dst->n_nodes = src->n_nodes;
    dst->node_capacity = cap;
    dst->n_points = src->n_points;
    dst->point_capacity = pcap;
    return MT_OK;
}

/* The transform: a scale finite and positive (or NULL); the rotation pair
 * both NULL, or finite with blocks whose rows, times the scale, are
 * orthonormal. */
static int check_transform(const mt_forest *f)
{
    size_t d = f->n_features;
    const double *l = f->scale;
    for (size_t b = 0; l != NULL && b < d; ++b) {
        if (!(l[b] > 0.0) || !isfinite(l[b])) {
            return MT_ERR_STATE;
        }
    }
    if (f->rotation == NULL && f->center == NULL) {
        return MT_OK;
    }
    if (f->rotation == NULL || f->center == NULL) {
        return MT_ERR_STATE;
    }
    for (size_t k = 0; k < d; ++k) {
        if (!isfinite(f->center[k])) {
            return MT_ERR_STATE;
        }
    }
    for (size_t m = 0; m < f->n_trees; ++m) {
        const double *R = f->rotation + m * d * d;
        for (size_t a = 0; a < d; ++a) {
            for (size_t b = 0; b < d; ++b) {
                double dot = 0.0;
                for (size_t k = 0; k < d; ++k) {
                    dot += R[a * d + k] * R[b * d + k];
                }
                if (l != NULL) {
                    dot *= l[a] * l[b];
                }
                /* rows orthonormal to rounding (NaN fails the test) */
                if (!(fabs(dot - (a == b ? 1.0 : 0.0)) <= 1e-9 * (double)d)) {
                    return MT_ERR_STATE;
                }
            }
        }
    }
    return MT_OK;
}

/* Every node of tree m: ids, links, slices, times, dimensions, boxes. */
static int check_tree_nodes(const mt_forest *f, size_t m)
{
    const size_t d = f->n_features;
    const mt_index lo = f->node_offset[m], hi = f->node_offset[m + 1];
    const mt_index np = (mt_index)f->n_points;
    if (f->parent[lo] != MT_NONE || f->start[lo] != 0 || f->end[lo] != np) {
        return MT_ERR_STATE;
    }
    for (mt_index j = lo; j < hi; ++j) {
        mt_index l = f->left[j], r = f->right[j], p = f->parent[j];
        const double *jl = f->lower + (size_t)j * d, *ju = f->upper + (size_t)j * d;
        /* A parent has a smaller id than its children (nodes are appended
         * after their parent) and lists the node as a child: following
         * parents ends at the root, so every node is reachable from it and
         * an event's parent is processed before it (events.h). */
        if (f->tree_of[j] != (mt_index)m ||
            (j > lo && (p < lo || p >= j || (f->left[p] != j && f->right[p] != j))) ||
            f->start[j] < 0 || f->start[j] >= f->end[j] || f->end[j] > np) {
            return MT_ERR_STATE;
        }
        for (size_t k = 0; k < d; ++k) {
            if (!(jl[k] <= ju[k]) || !isfinite(jl[k]) || !isfinite(ju[k])) {
                return MT_ERR_STATE;
            }
        }
        if (l == MT_NONE && r == MT_NONE) {
            if (f->feature[j] != MT_NONE || !(isinf(f->tau[j]) && f->tau[j] > 0.0) ||
                !isfinite(f->threshold[j])) {
                return MT_ERR_STATE;
            }
            continue;
        }
        /* children in the tree, not its root, pointing back; slices split */
        if (l <= lo || r <= lo || l >= hi || r >= hi || l == r ||
            f->parent[l] != j || f->parent[r] != j ||
            f->feature[j] < 0 || (size_t)f->feature[j] >= d ||
            !(f->tau[j] >= 0.0) || f->tau[j] > f->lifetime ||
            f->start[l] != f->start[j] || f->end[l] != f->start[r] ||
            f->end[r] != f->end[j]) {
            return MT_ERR_STATE;
        }
        if (p != MT_NONE && f->tau[j] < f->tau[p]) {
            return MT_ERR_STATE; /* split times increase along a path */
        }
        /* The cut lies in the box of its dimension (grow.c draws it in
         * [lower, upper); <= upper allows for rounding), with the left
         * child's points at or below it and the right child's above
         * (lookup.h sends x <= threshold left); a NaN threshold fails every
         * comparison. */
        {
            const size_t k = (size_t)f->feature[j];
            const double a = f->threshold[j];
            if (!(jl[k] <= a && a <= ju[k]) ||
                !(f->upper[(size_t)l * d + k] <= a) || !(f->lower[(size_t)r * d + k] > a)) {
                return MT_ERR_STATE;
            }
        }
        /* children's boxes inside the parent's (lookup.h relies on it) */
        for (mt_index c = l;; c = r) {
            const double *cl = f->lower + (size_t)c * d, *cu = f->upper + (size_t)c * d;
            for (size_t k = 0; k < d; ++k) {
                if (cl[k] < jl[k] || cu[k] > ju[k]) {
                    return MT_ERR_STATE;
                }
            }
            if (c == r) {
                break;
            }
        }
    }
    return MT_OK;
}

/*
 * Tree m's perm row is a permutation and every point lies in its leaf's box
 * (in the tree's coordinates, computed into z: D doubles).  A rotated
 * forest may have been pickled by a build whose transform rounds
 * differently (another compiler may contract multiply-adds), so there a
 * point may stick out of its box by the rounding bound of its coordinates:
 * D * eps * sum_b |x_b - c_b| / l_b (|Q| <= 1), taken four times.
 */
static int check_tree_points(const mt_forest *f, size_t m, unsigned char *seen, double *z)
{
    const size_t d = f->n_features, n = f->n_points;
    const mt_index *perm = mt_forest_perm(f, m);
    memset(seen, 0, n);
    for (size_t k = 0; k < n; ++k) {
        mt_index i = perm[k];
        if (i < 0 || (size_t)i >= n || seen[i]) {
            return MT_ERR_STATE;
        }
        seen[i] = 1;
    }
    for (mt_index j = f->node_offset[m]; j < f->node_offset[m + 1]; ++j) {
        if (f->left[j] != MT_NONE) {
            continue;
        }
        const double *jl = f->lower + (size_t)j * d, *ju = f->upper + (size_t)j * d;
        for (mt_index k = f->start[j]; k < f->end[j]; ++k) {
            const double *raw = f->X + (size_t)perm[k] * d;
            const double *x = mt_forest_point(f, m, raw, z);
            double tol = 0.0;
            if (f->rotation != NULL) {
                for (size_t c = 0; c < d; ++c) {
                    tol += fabs(raw[c] - f->center[c]) / (f->scale != NULL ? f->scale[c] : 1.0);
                }
                tol *= 4.0 * (double)d * DBL_EPSILON;
            }
            for (size_t c = 0; c < d; ++c) {
                if (!(x[c] >= jl[c] - tol) || !(x[c] <= ju[c] + tol)) {
                    return MT_ERR_STATE;
                }
            }
        }
    }
    return MT_OK;
}

/* Keys >= 0, each key's nodes one chain: a node whose key differs from its
 * parent's (or a root) starts its key, which no other node may start, and
 * at most one child continues its parent's key. */
static int check_keys(const mt_forest *f)
{
    const size_t n = f->n_nodes;
    unsigned char *started;
    if (f->key == NULL) {
        return MT_OK;
    }
    for (size_t j = 0; j < n; ++j) {
        /* keys are < n_nodes: a batch forest's are its ids, and each
         * insertion adds two nodes and at most one key */
        if (f->key[j] < 0 || (size_t)f->key[j] >= n) {
            return MT_ERR_STATE;
        }
        if (f->left[j] != MT_NONE && f->key[f->left[j]] == f->key[j] &&
            f->key[f->right[j]] == f->key[j]) {
            return MT_ERR_STATE;
        }
    }
    started = calloc(n, 1);
    if (started == NULL) {
        return MT_ERR_NOMEM;
    }
    for (size_t j = 0; j < n; ++j) {
        mt_index p = f->parent[j];
        if (p == MT_NONE || f->key[p] != f->key[j]) {
            if (started[f->key[j]]) {
                free(started);
                return MT_ERR_STATE;
            }
            started[f->key[j]] = 1;
        }
    }
    free(started);
    return MT_OK;
}

int mt_forest_check(const mt_forest *f)
{
    const size_t M = f->n_trees, d = f->n_features, n = f->n_points;
    unsigned char *seen = NULL;
    double *z = NULL;
    int status = MT_ERR_STATE;
    const int points = f->X != NULL;
    if (M == 0 || d == 0 || n == 0 || (points && n > f->point_capacity) ||
        (f->X == NULL) != (f->perm == NULL) || f->node_offset == NULL ||
        f->n_nodes > f->node_capacity ||
        !(f->lifetime >= 0.0) || isinf(f->lifetime) || f->node_offset[0] != 0 ||
        f->node_offset[M] != (mt_index)f->n_nodes) {
        return MT_ERR_STATE;
    }
    for (size_t m = 0; m < M; ++m) {
        if (f->node_offset[m + 1] <= f->node_offset[m]) {
            return MT_ERR_STATE; /* every tree has its root */
        }
    }
    for (size_t k = 0; points && k < n * d; ++k) {
        if (!isfinite(f->X[k])) {
            return MT_ERR_STATE;
        }
    }
    if (check_transform(f) != MT_OK) {
        return MT_ERR_STATE;
    }
    seen = malloc(n);
    z = malloc(d * sizeof(double)); /* D doubles: the node boxes hold more */
    if (seen == NULL || z == NULL) {
        status = MT_ERR_NOMEM;
        goto cleanup;
    }
    for (size_t m = 0; m < M; ++m) {
        if ((status = check_tree_nodes(f, m)) != MT_OK ||
            (points && (status = check_tree_points(f, m, seen, z)) != MT_OK)) {
            goto cleanup;
        }
    }
    status = check_keys(f);
cleanup:
    free(seen);
    free(z);
    return status;
}
