/*
 * lookup.h -- active cells of a Mondrian tree at a lifetime lambda.
 *
 * The active cell of a point at lambda is the node on its root-to-leaf path
 * whose parent split at or before lambda and which itself splits after
 * lambda (Sec. 4.1).  Split times increase along a path, so it is found by a
 * walk down from the root.
 *
 * For a point x that was not in the training data the walk also accumulates
 * the conditional-Mondrian separation exponent (Sec. 2.4): at node j, entered
 * at time tau_parent(j), x is cut away from the node's data box before
 * min(tau_j, lambda) with rate e_j(x) = sum_d dist(x_d, [l_jd, u_jd]).  The
 * probability that x is still with the cell's training points at lambda is
 * exp(-sum_j e_j(x) (min(tau_j, lambda) - tau_parent(j))^+), the expected
 * value of x's indicator feature.  For a training point every e_j is 0.
 */
#ifndef MT_LOOKUP_H
#define MT_LOOKUP_H

#include "tree.h"

/*
 * Number the active nodes of `tree` at `lambda` 0, 1, ... in node-id order:
 * col_of_node[j] is the number of node j, or MT_NONE if j is not active.
 * Returns the number of active nodes.
 */
mt_index mt_tree_active_columns(const mt_tree *tree, double lambda,
                                mt_index *col_of_node);

/* L1 distance from x to the box [lo, hi]. */
static inline double mt_box_gap(const double *restrict x,
                                const double *restrict lo,
                                const double *restrict hi, size_t d)
{
    double gap = 0.0;
    for (size_t k = 0; k < d; ++k) {
        double below = lo[k] - x[k], above = x[k] - hi[k];
        gap += (below > 0.0 ? below : 0.0) + (above > 0.0 ? above : 0.0);
    }
    return gap;
}

/*
 * Active node of x at lambda; *exponent receives
 * sum_j e_j(x) (min(tau_j, lambda) - tau_parent(j))^+ (>= 0).
 *
 * Children's data boxes lie inside their parent's, so the gap e_j(x) can only
 * grow along the path: if x is inside the active node's box, every gap on
 * the path is 0.  The walk therefore follows the cuts first, checks the box
 * of the active node, and only for a point outside it walks again to sum the
 * gaps (most points of the data's distribution need one box test per tree).
 */
static inline mt_index mt_tree_lookup(const mt_tree *tree,
                                      const double *restrict x, double lambda,
                                      double *exponent)
{
    const size_t d = tree->n_features;
    const double *tau = tree->tau;
    mt_index j = 0;
    while (tau[j] <= lambda) {
        j = x[tree->feature[j]] <= tree->threshold[j] ? tree->left[j]
                                                       : tree->right[j];
    }
    const mt_index active = j;
    double gap = mt_box_gap(x, tree->lower + (size_t)j * d,
                            tree->upper + (size_t)j * d, d);
    if (gap == 0.0) {
        *exponent = 0.0;
        return active;
    }
    double t_prev = 0.0, acc = 0.0;
    j = 0;
    for (;;) {
        double tj = tau[j];
        double t_end = tj < lambda ? tj : lambda;
        if (j == active) {
            acc += gap * (t_end - t_prev);
            break;
        }
        /* j splits at tj <= lambda; t_end = tj >= t_prev. */
        size_t off = (size_t)j * d;
        acc += mt_box_gap(x, tree->lower + off, tree->upper + off, d) * (t_end - t_prev);
        j = x[tree->feature[j]] <= tree->threshold[j] ? tree->left[j]
                                                       : tree->right[j];
        t_prev = tj;
    }
    *exponent = acc;
    return active;
}

#endif /* MT_LOOKUP_H */
