/*
 * nodestats.h -- per-node statistics of the training targets of a Mondrian
 * forest, for the forest estimators (mondrian/forest/estimators.py).
 *
 * The statistics belong to the estimators, not to the tree store: the
 * forest (forest.h) keeps the trees, the points and their permutations; the
 * estimators keep the targets y (aligned with the forest's rows of X) and
 * the arrays filled here, one entry per node in the forest's global
 * numbering.
 *
 * One pass per tree.  A leaf's statistics are summed over its slice
 * perm[start, end) of the tree's point permutation; an internal node's are
 * its two children's added (a node's points are exactly its children's,
 * forest.h), visiting the tree's ids from the last to the first (a parent's
 * id is below its children's).  Cost O(points + nodes) per tree; trees run
 * in parallel, each writing only its own nodes, so the result does not
 * depend on the number of threads.
 *
 * Online insertion (insert.h) renumbers every tree, so the estimators
 * recompute the statistics once per inserted batch from the new slices
 * (exact; O(points + nodes) per tree, the order of the insertion itself).
 *
 * The forest must keep its points (perm != NULL), else MT_ERR_ARG.
 */
#ifndef MT_NODESTATS_H
#define MT_NODESTATS_H

#include "forest.h"

/*
 * Regression: count[j], sum[j], sumsq[j] (n_nodes each) receive the number
 * of training points of node j, the sum of their y and of their y^2.  y has
 * the forest's n_points entries (row i of X has target y[i]).
 */
int mt_node_stats_regression(const mt_forest *f, const double *y, int n_threads,
                             double *count, double *sum, double *sumsq);

/*
 * Classification: counts[j * n_classes + k] (n_nodes x n_classes) receives
 * the number of training points of node j with label k.  labels has
 * n_points entries in [0, n_classes), else MT_ERR_ARG (nothing written).
 */
int mt_node_stats_classes(const mt_forest *f, const mt_index *labels, size_t n_classes,
                          int n_threads, double *counts);

#endif /* MT_NODESTATS_H */
