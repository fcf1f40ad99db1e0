/*
 * amf.h -- online aggregation over the pruned subtrees of every Mondrian
 * tree (AMF: Mourtada, Gaiffas & Scornet, "AMF: Aggregated Mondrian forests
 * for online learning", JRSS-B 2021), on the trees of a forest (forest.h).
 *
 * The aggregate.  For one tree T_0 and a pruned subtree T of it (the same
 * root; every node of T keeps both or none of its children), the prior is
 *
 *     pi(T) = 2^-|T|',  |T|' = the number of nodes of T that are internal
 *                              nodes of T_0,
 *
 * which is AMF's pi(T) = 2^-|T| (|T| all the nodes of T, on the infinite
 * Mondrian tree) after summing out everything below the leaves of T_0: a
 * node every one of whose points follows one path below it contributes
 * w = 1/2 w + 1/2 w * 1 (the empty sibling weighs 1), so below a leaf of T_0
 * the sum over continuations is the leaf's own weight.  Node v has the
 * cumulative loss L_v = sum over the points t of v's history (the points
 * that fall in v's cell, in arrival order) of loss(yhat_v,t-1, y_t), yhat_v,t-1
 * v's prediction from the points of its history before t, and the weight
 * w_v = exp(-step L_v).  A subtree's loss is the sum of its leaves' (each
 * point is predicted by the leaf of T holding it), so the posterior weight
 * of T is pi(T) prod_{leaves v of T} w_v.  With
 *
 *     wbar_v = w_v                                 at a leaf of T_0,
 *     wbar_v = 1/2 w_v + 1/2 wbar_left wbar_right  otherwise,
 *
 * wbar_root is the normaliser sum_T pi(T) prod w_v (induction on the
 * height), and the aggregated prediction at x, along x's path root = v_1,
 * ..., v_D = leaf,
 *
 *     yhat(v_D) = c(v_D),
 *     yhat(v_i) = a_i c(v_i) + (1 - a_i) yhat(v_{i+1}),  a_i = w_i / (2 wbar_i),
 *
 * (c(v) the node's own prediction) is the posterior average of the subtrees'
 * predictions: by the same induction, the subtrees of v either stop at v
 * (total weight 1/2 w_v, predicting c(v)) or split and predict through the
 * child holding x (total weight 1/2 wbar_left wbar_right, whose part through
 * the child is the child's own aggregate).  Everything is kept as logs:
 * log wbar = logaddexp(log w, log wbar_l + log wbar_r) - log 2, a_i =
 * exp(log w_i - log 2 - log wbar_i), 1 - a_i = exp(log wbar_l + log wbar_r -
 * log 2 - log wbar_i).
 *
 * The weights on the final tree.  Our trees are grown in batch or by
 * conditional-Mondrian insertion (insert.h), which never moves an earlier
 * point to another cell; so a node's history -- the points of its cell in
 * arrival order -- is well defined on the final tree, and AMF's weights
 * "as if the tree had existed all along" are computed by taking the points
 * in order: for each, walk its path (following the cuts, x_f <= threshold
 * to the left), and at every node first charge the loss of the node's
 * current prediction (-L -= loss), then add the point to the node's
 * statistics.  mt_amf_update does this for a block of points.  The state
 * keeps -L_v, not log w_v = -step L_v: the step enters at prediction
 * (mt_amf_weights), so it can be chosen, or re-estimated, at any time
 * without recomputing anything.
 *
 * Insertion renumbers the trees (insert.h).  A node created by a batch of
 * insertions had, before the batch, exactly the history of the node it was
 * inserted above (a new parent p above j holds j's earlier points), or none
 * (a new leaf).  mt_amf_carry moves the per-node state over the
 * renumbering: an old node is found by its (column key, split time), which
 * the renumbering keeps and which no two nodes share (nodes with one key
 * form a chain, forest.h, along which split times increase; the one leaf of
 * a chain is its bottom); a new internal node takes the pre-batch state of
 * its child with the same key (the node it was inserted above, itself
 * resolved first: children have larger ids), a new leaf the empty state.
 * Then mt_amf_update takes the batch's points in order on the new tree.
 * The result equals the computation on the final tree from scratch, for
 * any batch sizes.
 *
 * State.  One row of `width` doubles per node (global numbering):
 *   regression (square loss, node prediction the running mean of its
 *   targets; the estimators centre the targets):
 *     width 4: -L, count, sum of y, sum of y^2;
 *   classification (log loss, the Dirichlet/Krichevsky-Trofimov node
 *   prediction (n_k + dirichlet) / (n + K dirichlet)):
 *     width K + 2: -L, count, counts of the K classes.
 * An empty node's row is all zeros (L = 0: w = 1).
 *
 * A node's first point is not charged: L_v sums the losses of v's
 * predictions of the 2nd, 3rd, ... points of its history, each from the
 * points before it.  This is the rule of the AMF authors' implementation
 * and of river's (a new leaf takes its point without a weight update).
 * The alternatives measured (50 trees; test RMSE; doc/forests.rst):
 * charging the first point against the global mean gives every node an
 * entry fee (y - ybar)^2, a bias towards shallow
 * subtrees (5 to 25 % higher error on CPU, CCPP, concrete, energy);
 * charging it against the parent's running mean (an honest sequential
 * prediction) leaves the last split of every branch unjudged (one-point
 * children lose exactly what their parent does) and is 6 to 16 % worse on
 * CPU, CCPP, concrete, energy and protein, 1.5 % on abalone, 6 % better on
 * a smooth synthetic set and 2.7 times better on a dense, noisy one (2000
 * points in 2-D, noise variance 0.6 of the targets'), where leaving the
 * first point free interpolates the noise: one-point leaves never lose
 * anything.  The classes' first-point charge would be log K at every node,
 * a constant that only reweights the prior.
 *
 * Prediction at a lifetime lambda <= the forest's: the tree pruned at
 * lambda (lookup.h: the nodes whose parent split at or before lambda) has
 * the active nodes as leaves, so mt_amf_weights recomputes wbar on it
 * (leaves: wbar = w), O(nodes); the node weights themselves do not depend
 * on lambda (a node's history is its cell's points).
 *
 * A new point x.  mt_amf_predict follows x's cuts to its active node (the
 * AMF authors' convention).  With `separate`, a point outside the root's
 * box (the training points' bounding box) first separates from it as in
 * the conditional Mondrian (mforest.h), with probability
 *
 *     P = 1 - exp(-Delta e),  e = x's l1 gap to the root's box,
 *                             Delta = min(tau_root, lambda),
 *
 * into a new leaf beside the whole tree, which holds no target and
 * predicts the prior: the root's component (the targets' mean and spread;
 * the class frequencies); so the prediction is (1 - P) yhat + P c(root),
 * and far from the data it is the prior's, whatever the nearest leaf
 * holds.  Inside the root's box P = 0.  (Separation at every node of the
 * path, the new leaf predicting as its parent -- x's aggregate over the
 * extended tree, O(depth) per point by a telescoping of the normalisers --
 * was measured with 100 trees: test RMSE 2.5 % worse on CPU, 9 % on
 * concrete, 2 % on energy, 1.7 % better on a smooth synthetic set: the
 * cuts below a node x has left still carry information, which the
 * held-out points confirm.)
 *
 * Trees run in parallel, each writing only its own nodes; a point's
 * prediction sums the trees in order; so every result is the same for any
 * number of threads.  Rotated forests (forest.h) walk each tree in its
 * coordinates (mt_forest_point).
 */
#ifndef MT_AMF_H
#define MT_AMF_H

#include "forest.h"

/* Width of the regression state rows. */
#define MT_AMF_REGRESSION_WIDTH 4

/*
 * Take the n points X (n x D, raw coordinates, finite) with targets y (n,
 * finite; centred by the caller) in order through every tree: state
 * (n_nodes x 4) is updated in place.
 */
int mt_amf_update_regression(const mt_forest *f, const double *X, const double *y, size_t n,
                             int n_threads, double *state);

/*
 * The same for labels (n, in [0, n_classes), else MT_ERR_ARG before
 * anything is written): state (n_nodes x (n_classes + 2)); dirichlet > 0
 * and finite.
 */
int mt_amf_update_classes(const mt_forest *f, const double *X, const mt_index *labels,
                          size_t n, size_t n_classes, double dirichlet, int n_threads,
                          double *state);

/*
 * Carry the state over a batch of insertions: old_state (old_n_nodes x
 * width) belonged to the forest before the batch, whose tree m owned the
 * ids [old_offset[m], old_offset[m+1]) with column keys old_key and split
 * times old_tau (the keys: forest.h's, or the global ids of a forest
 * without keys); state (f's n_nodes x width) receives the rows of the
 * forest after the batch (see above).  MT_ERR_STATE if the two forests do
 * not match (a node neither old nor the parent of its key's chain),
 * MT_ERR_NOMEM if the per-thread scratch (largest old tree) fails.
 */
int mt_amf_carry(const mt_forest *f, size_t old_n_nodes, const mt_index *old_offset,
                 const mt_index *old_key, const double *old_tau, size_t width,
                 const double *old_state, int n_threads, double *state);

/*
 * The weights of the tree pruned at lambda (0 <= lambda <= the forest's
 * lifetime), from the log-weights step * state[j * width] (column 0 of
 * state, n_nodes x width, holds -L; step > 0 and finite):
 * log_wbar[j] (n_nodes), and coef[2j], coef[2j + 1] (n_nodes x 2) the
 * prediction's a_j = w_j / (2 wbar_j) and 1 - a_j = wbar_left wbar_right /
 * (2 wbar_j) (1 and 0 at the pruned tree's leaves); NaN below it.
 */
int mt_amf_weights(const mt_forest *f, double lambda, const double *state, size_t width,
                   double step, int n_threads, double *log_wbar, double *coef);

/*
 * The aggregated prediction at the n points X (raw coordinates), averaged
 * over the trees: out (n x K) from the node components comp (n_nodes x K;
 * read on the pruned tree only) and coef of mt_amf_weights at the same
 * lambda; with `separate` != 0, points outside a root's box separate from
 * it (see above).
 */
int mt_amf_predict(const mt_forest *f, const double *X, size_t n, double lambda,
                   const double *coef, size_t K, const double *comp, int separate,
                   int n_threads, double *out);

#endif /* MT_AMF_H */
