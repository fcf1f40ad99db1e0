/*
 * lookup.h -- active cells of a Mondrian forest's trees at a lifetime lambda:
 * the one implementation, used by the feature matrix (features.h) and the
 * kernel-width path (the Cython learners, events.h).
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
 *
 * Points are given in tree m's coordinates: for a forest with a transform
 * (forest.h), pass mt_forest_point(f, m, x, scratch) (or a block through
 * mt_forest_transform), not the raw x.
 */
#ifndef MT_LOOKUP_H
#define MT_LOOKUP_H

#include <math.h>

#include "forest.h"

/* Node j (global id) is active at lambda: it has not split by lambda and
 * its parent (if any) has. */
static inline int mt_forest_is_active(const mt_forest *f, mt_index j, double lambda)
{
    mt_index p = f->parent[j];
    return f->tau[j] > lambda && (p == MT_NONE || f->tau[p] <= lambda);
}

/*
 * Number the active nodes of the forest at lambda (0 <= lambda <= the
 * forest's lifetime) 0, 1, ... in global-id order, i.e. tree by tree:
 * col_of_node[j] (n_nodes entries) is the column of node j or MT_NONE;
 * col_offset (n_trees + 1) receives the prefix sums of the trees' active
 * counts, so tree m's cells are the columns [col_offset[m], col_offset[m+1]).
 */
int mt_forest_active_columns(const mt_forest *f, double lambda,
                             mt_index *col_of_node, mt_index *col_offset);

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
 * Largest signed distance of x outside the box [lo, hi] over the
 * dimensions: <= 0 exactly when x is inside.  A chain of max operations
 * (one cycle each) instead of mt_box_gap's chain of additions (three or
 * four): the cheap test for the common case of a point inside its box.
 */
static inline double mt_box_excess(const double *restrict x,
                                   const double *restrict lo,
                                   const double *restrict hi, size_t d)
{
    /* two chains of max, so that consecutive dimensions overlap */
    double m0 = -INFINITY, m1 = -INFINITY;
    size_t k = 0;
    for (; k + 1 < d; k += 2) {
        double a0 = lo[k] - x[k], b0 = x[k] - hi[k];
        double a1 = lo[k + 1] - x[k + 1], b1 = x[k + 1] - hi[k + 1];
        double c0 = a0 > b0 ? a0 : b0, c1 = a1 > b1 ? a1 : b1;
        m0 = c0 > m0 ? c0 : m0;
        m1 = c1 > m1 ? c1 : m1;
    }
    if (k < d) {
        double a0 = lo[k] - x[k], b0 = x[k] - hi[k];
        double c0 = a0 > b0 ? a0 : b0;
        m0 = c0 > m0 ? c0 : m0;
    }
    return m0 > m1 ? m0 : m1;
}

/*
 * The first node of x's root-to-active path whose data box does not hold x,
 * given that the active node `active`'s does not.  Children's data boxes
 * lie inside their parent's (mt_forest_check verifies it), so the boxes
 * that hold x are a prefix of the path, every gap e_j(x) above the returned
 * node is exactly 0, and it is found by climbing the parent links from the
 * active node while the parent's box excludes x: the boxes of the prefix
 * (on a deep tree most of the path: of 20 nodes, 14-15 for test points of
 * 8-d data) are never read.
 */
static inline mt_index mt_path_first_outside(const mt_forest *f, const double *restrict x,
                                             mt_index active)
{
    const size_t d = f->n_features;
    mt_index j = active;
    for (;;) {
        mt_index p = f->parent[j];
        if (p == MT_NONE) {
            return j;
        }
        const size_t off = (size_t)p * d;
        if (!(mt_box_excess(x, f->lower + off, f->upper + off, d) > 0.0)) {
            return j;
        }
        j = p;
    }
}

/* The time node j's parent split at (0 for a root): the start of j's life. */
static inline double mt_forest_birth(const mt_forest *f, mt_index j)
{
    mt_index p = f->parent[j];
    return p == MT_NONE ? 0.0 : f->tau[p];
}

/*
 * Separation exponent of x at lambda given its active node `active`:
 * sum_j e_j(x) (min(tau_j, lambda) - tau_parent(j))^+ (>= 0).
 *
 * The gap e_j(x) can only grow along the path (mt_path_first_outside): if
 * x is inside the active node's box, every gap on the path is 0, so one box
 * test settles most points of the data's distribution; for a point outside
 * it, the sum starts at the first node whose box excludes x (the terms
 * above it are exactly 0, so the sum is the same to the bit as from the
 * root) and runs down the cuts to the active node.
 */
static inline double mt_forest_exponent(const mt_forest *f, const double *restrict x,
                                        double lambda, mt_index active)
{
    const size_t d = f->n_features;
    const double *lo = f->lower + (size_t)active * d;
    const double *hi = f->upper + (size_t)active * d;
    if (!(mt_box_excess(x, lo, hi, d) > 0.0)) {
        return 0.0;
    }
    double gap = mt_box_gap(x, lo, hi, d);
    mt_index j = mt_path_first_outside(f, x, active);
    double t_prev = mt_forest_birth(f, j), acc = 0.0;
    for (;;) {
        double tj = f->tau[j];
        double t_end = tj < lambda ? tj : lambda;
        if (j == active) {
            acc += gap * (t_end - t_prev);
            break;
        }
        /* j splits at tj <= lambda; t_end = tj >= t_prev. */
        size_t off = (size_t)j * d;
        acc += mt_box_gap(x, f->lower + off, f->upper + off, d) * (t_end - t_prev);
        j = x[f->feature[j]] <= f->threshold[j] ? f->left[j] : f->right[j];
        t_prev = tj;
    }
    return acc;
}

/* Active node (global id) of x at lambda in tree m: the walk follows the
 * cuts from the root while the node has split by lambda. */
static inline mt_index mt_forest_descend(const mt_forest *f, size_t m,
                                         const double *restrict x, double lambda)
{
    const double *tau = f->tau;
    mt_index j = f->node_offset[m];
    while (tau[j] <= lambda) {
        j = x[f->feature[j]] <= f->threshold[j] ? f->left[j] : f->right[j];
    }
    return j;
}

/*
 * Active node (global id) of x at lambda in tree m; *exponent receives the
 * separation exponent (mt_forest_exponent).
 */
static inline mt_index mt_forest_lookup(const mt_forest *f, size_t m,
                                        const double *restrict x, double lambda,
                                        double *exponent)
{
    mt_index j = mt_forest_descend(f, m, x, lambda);
    *exponent = mt_forest_exponent(f, x, lambda, j);
    return j;
}

#endif /* MT_LOOKUP_H */
