/*
 * debias.h -- sum of squared weights of the debiased Mondrian forest
 * (mondrian/forest/debiased.py).
 *
 * The debiased forest predicts x by sum_i w_i(x) Y_i, with w(x) a sum of
 * per-node terms: a coefficient c times the indicator of the node's
 * training points divided by nothing else (the caller folds 1/N_node into
 * c).  A test row x is given as its list of (node, coefficient) entries,
 * CSR style: entries indptr[x] .. indptr[x + 1] - 1 of `nodes` and `coef`.
 * The node's points are its slice start..end of its tree's permutation
 * (forest.h).  mt_debias_sum_squares returns, for every row,
 *
 *     out[x] = sum_i (sum_{e in row x : i in points(node_e)} coef_e)^2,
 *
 * accumulating w into a dense array of N doubles per thread (touching only
 * the row's points: O(sum of the row's node sizes)), then summing the
 * squares of the touched entries in the order they were first touched and
 * clearing them.  A row is one thread's work, so the result does not depend
 * on the number of threads.  Memory: N doubles, N indices and N flags per
 * thread.
 */
#ifndef MT_DEBIAS_H
#define MT_DEBIAS_H

#include "forest.h"

/* MT_ERR_ARG on a node id outside [0, n_nodes) or a forest without its
 * points' permutations; MT_ERR_NOMEM if the per-thread buffers cannot be
 * allocated. */
int mt_debias_sum_squares(const mt_forest *f, const int64_t *indptr, const mt_index *nodes,
                          const double *coef, size_t n_rows, double *out, int n_threads);

/*
 * Where the points X (n_rows x D, row-major, raw coordinates; a rotated
 * forest's tree m sees mt_forest_point(f, m, x)) sit in every tree pruned
 * at lambda, with
 * the conditional Mondrian's empty-cell events.  Pair p = x * M + m:
 *
 *   leaf[p]     the active node of x in tree m (mt_forest_lookup);
 *   stay[p]     the probability that x's cell holds its points:
 *               prod_j exp(-Delta_j eta_j(x)) down the path;
 *   n_events[p] the nodes j of the path with q_j > 0, where
 *               q_j = (prod_{i above j} exp(-Delta_i eta_i(x)))
 *                     (1 - exp(-Delta_j eta_j(x)))
 *               is the probability that x is cut away from j's points.
 *
 * Called with offset == NULL it fills leaf, stay and n_events; called
 * again with offset (n_rows * M + 1 prefix sums of n_events) it writes
 * pair p's events, in path order, to event_node / event_prob at
 * offset[p] ..  A pair whose point is inside its active node's data box
 * (every point of the training data) has stay 1 and no event and is not
 * walked twice.  Parallel over rows; the results do not depend on the
 * number of threads.  MT_ERR_ARG for lambda outside [0, the forest's
 * lifetime]; MT_ERR_NOMEM if a thread's scratch (D doubles, rotated
 * forests) cannot be allocated.
 */
int mt_debias_paths(const mt_forest *f, const double *X, size_t n_rows, double lambda,
                    mt_index *leaf, double *stay, int64_t *n_events, const int64_t *offset,
                    mt_index *event_node, double *event_prob, int n_threads);

#endif /* MT_DEBIAS_H */
