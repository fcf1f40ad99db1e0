/*
 * tree.h -- storage and growth of Mondrian trees on data.
 *
 * A tree is a struct of arrays indexed by node id; node 0 is the root.  Every
 * node keeps the bounding box of the training points it holds and the slice
 * perm[start:end] of the tree's point permutation that lists those points, so
 * that the points of any node are contiguous.  Leaves have split time
 * tau = +inf.  Capacity doubles as nodes are added; new memory is zeroed.
 */
#ifndef MT_TREE_H
#define MT_TREE_H

#include "common.h"
#include "numpy/random/bitgen.h"

typedef struct {
    size_t n_features;   /* D                                                */
    size_t n_nodes;      /* nodes in use                                     */
    size_t capacity;     /* nodes allocated                                  */
    mt_index *parent;    /* parent id, MT_NONE for the root                  */
    mt_index *left;      /* child with x[feature] <= threshold, or MT_NONE   */
    mt_index *right;     /* child with x[feature] >  threshold, or MT_NONE   */
    mt_index *feature;   /* split dimension, MT_NONE for a leaf              */
    mt_index *start;     /* first position of the node's points in perm      */
    mt_index *end;       /* one past the last position                       */
    double *threshold;   /* cut location a                                   */
    double *tau;         /* split time, +inf for a leaf                      */
    double *lower;       /* capacity x D: lower corner of the data box       */
    double *upper;       /* capacity x D: upper corner of the data box       */
    size_t n_points;     /* N, the number of training points                 */
    mt_index *perm;      /* N: permutation of 0..N-1, node slices contiguous */
    double lifetime;     /* the tree is grown up to this time                */
} mt_tree;

/* Initialise an empty tree for D features (no allocation). */
void mt_tree_init(mt_tree *tree, size_t n_features);

/* Release every array; the tree is left empty and may be reused. */
void mt_tree_free(mt_tree *tree);

/* Make room for at least `capacity` nodes (new memory zeroed). */
int mt_tree_reserve(mt_tree *tree, size_t capacity);

/* Allocate the point permutation for n points (contents zeroed). */
int mt_tree_reserve_points(mt_tree *tree, size_t n_points);

/*
 * Grow a tree from scratch on X (n x D, row-major) up to `lifetime`,
 * drawing from `rng`.  Any previous content is discarded.
 */
int mt_tree_fit(mt_tree *tree, const double *X, size_t n, size_t d,
                double lifetime, bitgen_t *rng);

/*
 * Continue growing a fitted tree from its current lifetime up to `lifetime`
 * (>= the current one).  By memorylessness of the exponential clocks, a leaf
 * that had not split by the old lifetime splits at old + Exp(linear dim).
 * X must be the training data the tree was fitted on.
 */
int mt_tree_extend(mt_tree *tree, const double *X, size_t n, size_t d,
                   double lifetime, bitgen_t *rng);

/* Check the structural invariants of a tree (e.g. after unpickling). */
int mt_tree_check(const mt_tree *tree);

/*
 * Fit (extend == 0) or extend (extend != 0) n_trees trees in parallel with
 * up to n_threads threads; tree m draws only from rngs[m], so the result does
 * not depend on n_threads.
 */
int mt_forest_grow(mt_tree *const *trees, bitgen_t *const *rngs, size_t n_trees,
                   const double *X, size_t n, size_t d, double lifetime,
                   int extend, int n_threads);

#endif /* MT_TREE_H */
