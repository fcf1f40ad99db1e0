/*
 * forest.h -- storage of a Mondrian forest: its trees, its points, its
 * per-tree input transform.
 *
 * This unit only stores (like scikit-learn's Tree); growing the trees is the
 * sampler's job (grow.h), reading them is lookup.h's, features.h's and
 * events.h's.
 *
 * Nodes.  The M trees share ONE numbering: struct-of-arrays node storage for
 * the whole forest, tree m's nodes contiguous in the global ids
 * [node_offset[m], node_offset[m+1]) (scikit-learn's n_nodes_ptr), its root
 * first.  parent/left/right hold global ids, MT_NONE (-1) for none.  Every
 * node keeps the data box of the training points it holds and the slice
 * [start, end) of its tree's point permutation that lists them, so the
 * points of any node are contiguous.  Leaves have tau = +inf, feature =
 * MT_NONE.  Capacity grows as nodes are added; new memory is zeroed, so a
 * forest's bytes (hence its pickles) depend on its content only.
 *
 * Points.  The forest keeps ITS OWN COPY of the n training points it was
 * grown on (X: n x D, row-major, with room for point_capacity rows, so that
 * points can be appended without rebuilding), and per tree a permutation of
 * 0..n-1: tree m's is perm[m * point_capacity + k], k < n_points.
 *
 * A forest may drop its points (mt_forest_drop_points: X = perm = NULL,
 * point_capacity 0, for streams that do not fit in memory).  It keeps
 * n_points and every node's slice [start, end) of a virtual permutation (the
 * node's count is end - start), its boxes and times: enough for the
 * features of any point (lookup.h) and for insertions (insert.h), not for
 * the readers of the points (features of the training points, the Gram
 * matrix, node sums: they return MT_ERR_ARG) nor for growth (grow.h).
 *
 * Column keys.  `key` is NULL for a forest grown in batch: the columns of
 * the feature matrix at a lifetime are its active nodes in global-id order
 * (lookup.h).  Insertion of points (insert.h) renumbers the nodes of every
 * tree, so it gives every node a key instead (allocated on the first
 * insertion, node_capacity entries): the columns stay numbered in key
 * order, old columns keep their rank and new cells come last.  Nodes with
 * one key form a chain from an ancestor down (a parent inserted above a
 * node takes the node's key; the two are never active together).  Growing
 * the trees (grow.h) drops the keys.
 *
 * Transform.  The forest may see the points through a per-feature scale
 * l (D positive divisors, `scale`: the kernel exp(-lambda sum_b |x_b -
 * x'_b| / l_b)), and each tree through its own rotation about a common
 * centre (the uniformly rotated Mondrian kernel, DESIGN.md section 11):
 * tree m works on z = Q_m^T ((x - c) / l), i.e.
 *
 *     z_a = sum_b (x_b - c_b) P_m[b, a],   P_m[b, a] = Q_m[b, a] / l_b,
 *
 * coordinate a of the tree being the projection of the scaled x - c on
 * column a of Q_m.  `rotation` holds the P_m (M x D x D, row-major: Q_m
 * orthogonal with determinant +1, its rows divided by the scale), `center`
 * holds c (D); both NULL means no rotation.  Without a rotation the tree
 * works on z_b = x_b / l_b (`scale` non-NULL), or on x itself (NULL).
 * Everything stored per tree -- split dimensions and thresholds, data boxes
 * -- is in the tree's coordinates; X keeps the points as they were given.
 * mt_forest_transform is the one implementation of the map: every reader of
 * point coordinates (the sampler, lookups, the checks, insertion) goes
 * through it, so a point's coordinates in a tree are bitwise the same
 * wherever they are computed.  mt_forest_check accepts a NULL pair or a
 * finite pair with orthogonal blocks.
 */
#ifndef MT_FOREST_H
#define MT_FOREST_H

#include "common.h"

typedef struct {
    size_t n_trees;        /* M                                              */
    size_t n_features;     /* D                                              */
    double lifetime;       /* the trees are grown up to this time            */

    /* nodes: node_capacity entries each (boxes node_capacity x D) */
    size_t n_nodes;        /* nodes in use, node_offset[M]                   */
    size_t node_capacity;  /* nodes allocated                                */
    mt_index *node_offset; /* M + 1: tree m owns [node_offset[m], [m+1])     */
    mt_index *tree_of;     /* tree of each node                              */
    mt_index *parent;      /* parent (global id), MT_NONE for a root         */
    mt_index *left;        /* child with x[feature] <= threshold, or MT_NONE */
    mt_index *right;       /* child with x[feature] >  threshold, or MT_NONE */
    mt_index *feature;     /* split dimension, MT_NONE for a leaf            */
    mt_index *start;       /* first position of the node's points in perm    */
    mt_index *end;         /* one past the last position                     */
    double *threshold;     /* cut location a (0 for a leaf)                  */
    double *tau;           /* split time, +inf for a leaf                    */
    double *lower;         /* lower corner of the node's data box, D each    */
    double *upper;         /* upper corner                                   */

    /* points */
    size_t n_points;       /* N                                              */
    size_t point_capacity; /* rows allocated in X and in each perm row       */
    double *X;             /* point_capacity x D, row-major                  */
    mt_index *perm;        /* M x point_capacity                             */

    /* per-tree transform of the input; NULL = identity (see above) */
    double *rotation;      /* M x D x D or NULL                              */
    double *center;        /* D or NULL                                      */
    double *scale;         /* D positive divisors or NULL                    */

    /* column key of each node, NULL = the global id (see above) */
    mt_index *key;         /* node_capacity entries or NULL                  */
} mt_forest;

/* An empty forest of n_trees trees over n_features dimensions (allocates
 * node_offset only).  On failure *f is left empty (safe to free). */
int mt_forest_init(mt_forest *f, size_t n_trees, size_t n_features);

/* Release every array; the forest is left empty (zeroed). */
void mt_forest_free(mt_forest *f);

/* Room for at least `capacity` nodes (new memory zeroed).  On failure the
 * forest is unchanged in content. */
int mt_forest_reserve_nodes(mt_forest *f, size_t capacity);

/* Cut the node arrays down to `capacity` nodes (at least n_nodes, and
 * more than 0; otherwise, or if the forest has no more, nothing changes);
 * the nodes below it keep their content.  Cannot fail.  A caller that
 * stored nodes past n_nodes (grow.c, during a fit) keeps them by passing a
 * capacity that holds them. */
void mt_forest_shrink_nodes(mt_forest *f, size_t capacity);

/* Room for at least `capacity` nodes, for a forest that grows by
 * insertions (insert.c): when it must grow, to at least half again its
 * capacity (the exact capacity if that slack does not fit in memory), so
 * that a stream of small batches copies the node arrays O(log n) times
 * (each array into a fresh block, as mt_forest_reserve_nodes; realloc would
 * move advised huge pages and split them: common.h).  On failure the
 * forest is unchanged in content. */
int mt_forest_extend_nodes(mt_forest *f, size_t capacity);

/* mt_forest_reserve_nodes for every node array but the boxes (lower,
 * upper), which keep their size (NULL in a fresh forest): only for a
 * scratch forest whose boxes are kept elsewhere (insert.c), never for a
 * forest that readers see.  On failure node_capacity is unchanged. */
int mt_forest_reserve_links(mt_forest *f, size_t capacity);

/* Room for at least `capacity` points in X and in every perm row (new
 * memory zeroed; perm rows are re-laid out at the new stride). */
int mt_forest_reserve_points(mt_forest *f, size_t capacity);

/* Append n rows of X (n x D) to the forest's points (the trees are not
 * touched: the caller grows or updates them).  Doubles the capacity. */
int mt_forest_append_points(mt_forest *f, const double *X, size_t n);

/* Free the points and permutations (see above); the nodes are kept. */
void mt_forest_drop_points(mt_forest *f);

/* Remove every node (and the column keys); capacity and points are kept. */
void mt_forest_clear_nodes(mt_forest *f);

/* Remove every node and point (capacity is kept). */
void mt_forest_clear(mt_forest *f);

/*
 * Append a leaf to tree m holding perm positions [start, end): parent is a
 * global id or MT_NONE (a root).  Tree m must be the last tree with nodes
 * (trees are filled in order); its id goes to *id.  Box left zeroed.
 */
int mt_forest_append_node(mt_forest *f, size_t m, mt_index parent,
                          mt_index start, mt_index end, mt_index *id);

/* Deep copy of src into dst (dst must be empty or freed). */
int mt_forest_copy(mt_forest *dst, const mt_forest *src);

/*
 * Check every invariant the kernels rely on (e.g. after unpickling): sizes,
 * node offsets, global ids within their tree, parent/child links (a parent's
 * id below its children's, so every node hangs from its root), slices,
 * split times (non-decreasing along paths, <= lifetime, +inf exactly at
 * leaves), split dimensions, thresholds (finite; a split's inside its box,
 * between its children's boxes), boxes nested and containing their points, each
 * perm row a permutation of 0..N-1, finite X (unless the points were
 * dropped: then only the slices and boxes), the transform (the rotation
 * pair; a scale finite and positive, the rotations' rows divided by it), and the
 * keys (if any: >= 0, every key's nodes one chain from an ancestor down).
 * Returns MT_OK, MT_ERR_STATE, or MT_ERR_NOMEM (it needs N bytes).
 */
int mt_forest_check(const mt_forest *f);

/* Drop the per-tree rotations (the scale, if any, stays). */
void mt_forest_drop_transform(mt_forest *f);

/*
 * Give the forest the per-feature scale l (D finite positive values,
 * copied; NULL removes it): from then on every reader sees x_b / l_b.
 * Only for a forest with no nodes and no rotations (the scale is part of
 * the trees' coordinates, and mt_forest_draw_rotations folds it into the
 * P_m).  Returns MT_OK, MT_ERR_ARG (a value not finite and positive),
 * MT_ERR_STATE (nodes or rotations present) or MT_ERR_NOMEM.
 */
int mt_forest_set_scale(mt_forest *f, const double *scale);

/* Whether the trees see the points through a transform (a scale or
 * rotations), i.e. whether mt_forest_transform is more than a copy. */
static inline int mt_forest_transformed(const mt_forest *f)
{
    return f->rotation != NULL || f->scale != NULL;
}

/*
 * Rows of X (n x D, row-major) in tree m's coordinates: out[i] =
 * P_m^T (X[i] - c) with rotations, else X[i] / l with a scale (one exactly
 * rounded division per coordinate), else a copy of X[i].  out (n x D) must
 * not overlap X.  Each coordinate is summed over b = 0..D-1 in order, with
 * no fused multiply-add, so the result of a row does not depend on n, on
 * the row's position in the block, on the thread, nor on the instruction
 * set the running CPU selects (see forest.c).  Cost: D^2 multiply-adds per
 * row.
 */
void mt_forest_transform(const mt_forest *f, size_t m, const double *X, size_t n,
                         double *out);

/* The point x (D) as tree m sees it: x itself for the identity, else its
 * transform written to `scratch` (D doubles), which is returned. */
static inline const double *mt_forest_point(const mt_forest *f, size_t m,
                                            const double *x, double *scratch)
{
    if (!mt_forest_transformed(f)) {
        return x;
    }
    mt_forest_transform(f, m, x, 1, scratch);
    return scratch;
}

/* Tree m's point permutation (n_points entries). */
static inline mt_index *mt_forest_perm(const mt_forest *f, size_t m)
{
    return f->perm + m * f->point_capacity;
}

#endif /* MT_FOREST_H */
