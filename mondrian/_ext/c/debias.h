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

#include "entries.h"
#include "forest.h"

/* MT_ERR_ARG on a node id outside [0, n_nodes) or a forest without its
 * points' permutations; MT_ERR_NOMEM if the per-thread buffers cannot be
 * allocated. */
int mt_debias_sum_squares(const mt_forest *f, const int64_t *indptr, const mt_index *nodes,
                          const double *coef, size_t n_rows, double *out, int n_threads);

/*
 * Where the points X (n_rows x D, row-major, raw coordinates; a rotated
 * forest's tree m sees mt_forest_point(f, m, x)) sit in every tree pruned
 * at each of the lifetimes lambdas[0 .. n_lambdas), with the conditional
 * Mondrian's empty-cell events.  Pair p = x * M + m, at lifetime r (arrays
 * lifetime-major: entry r * n_rows * M + p of leaf and stay, offset r *
 * (n_rows * M + 1) + p of offset):
 *
 *   leaf        the active node of x in tree m (mt_forest_lookup);
 *   stay        the probability that x's cell holds its points:
 *               prod_j exp(-Delta_j eta_j(x)) down the path;
 *   events      the nodes j of the path with q_j > 0, where
 *               q_j = (prod_{i above j} exp(-Delta_i eta_i(x)))
 *                     (1 - exp(-Delta_j eta_j(x)))
 *               is the probability that x is cut away from j's points;
 *               pair p's are entries offset[p] .. offset[p + 1] - 1 of
 *               lifetime r's offsets (n_rows * M + 1 prefix sums), in path
 *               order.
 *
 * One descent by the cuts finds a pair's active nodes at every lifetime.  A
 * pair whose point is inside its active node's data box (every point of the
 * training data) has stay 1 and no event; for the others the walk starts at
 * the first node of the path whose box excludes the point
 * (mt_path_first_outside).  Every pair is walked once per lifetime: its
 * events go to list r of its block in *events (entries.h), which the
 * caller gathers lifetime by lifetime into arrays of offset[n_rows * M]
 * entries (event_node, event_prob) with mt_entries_gather and frees with
 * mt_entries_free (*events is NULL on error, or when there are no rows or
 * trees: then X, leaf and stay may be NULL, and only the lifetimes are
 * checked).  Parallel over blocks of rows; the results do not depend on
 * the number of threads.  MT_ERR_ARG for no lifetime or one outside [0,
 * the forest's lifetime]; MT_ERR_NOMEM if a thread's scratch or the
 * events' lists cannot be allocated.
 */
int mt_debias_paths(const mt_forest *f, const double *X, size_t n_rows, const double *lambdas,
                    size_t n_lambdas, mt_index *leaf, double *stay, int64_t *offset,
                    mt_entries **events, int n_threads);

#endif /* MT_DEBIAS_H */
