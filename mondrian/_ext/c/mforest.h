/*
 * mforest.h -- predictions of a Mondrian forest at a lifetime lambda <= the
 * forest's lifetime (DESIGN.md section 9; Lakshminarayanan, Roy & Teh,
 * NIPS 2014 and AISTATS 2016), from the node statistics of nodestats.h.
 *
 * The tree at lambda.  Tree m pruned at lambda keeps the nodes whose parent
 * split at or before lambda (the root always); its leaves are the active
 * nodes (lookup.h).  Node j of the pruned tree lives over the times
 * (t_parent(j), t_j], t_j = min(tau_j, lambda), t_parent(root) = 0.
 *
 * Gaussian smoothing (regression).  The node means follow a Brownian motion
 * down the tree: mu_root ~ N(mu0, phi(t_root)), mu_j | mu_parent ~
 * N(mu_parent, phi(t_j) - phi(t_parent(j))), with phi(t) = sigma_H^2 (1 -
 * exp(-t / theta)), theta = time_scale > 0; the targets of
 * an active leaf a are y ~ N(mu_a, sigma_y^2).  mt_forest_gauss_posterior
 * computes the posterior N(mean_j, var_j) of every node of the pruned tree
 * by Gaussian belief propagation (the formulas are in mforest.c).
 *
 * Hierarchical class smoothing (classification), the interpolated
 * Kneser-Ney approximation of the hierarchical normalised stable process of
 * NIPS 2014: mt_forest_class_posterior.
 *
 * The mixture (any point x).  mt_forest_mixture (and, for the Gaussian
 * smoothing, mt_forest_gauss_mixture below) walks x's path in each tree
 * down to its active node a; at node j, x separates from the node's points
 * in (t_parent(j), t_j] with probability p_j = 1 - exp(-Delta_j eta_j(x)),
 * Delta_j = t_j - t_parent(j), eta_j(x) the l1 gap of x to j's data box.
 * The tree's predictive distribution is the mixture
 *
 *     sum_{j on the path} w_j B_parent(j) + w_leaf L_a,
 *     w_j = p_j prod_{i above j} (1 - p_i),  w_leaf = prod_j (1 - p_j),
 *
 * with L_a the component of a point in leaf a and B_p the component of a
 * point in a new leaf branching off below p (B_root's parent: `branch0`).
 * Components are K-vectors (regression: mean and second moment; classes:
 * probabilities); the forest returns their mixture averaged over the trees.
 */
#ifndef MT_MFOREST_H
#define MT_MFOREST_H

#include "entries.h"
#include "forest.h"

/*
 * Gaussian posterior of the node means at lambda (0 <= lambda <= the
 * forest's lifetime): mean[j], var[j] and cov[j] = Cov(mu_parent(j), mu_j)
 * (0 at a root) for the nodes of the pruned tree,
 * NaN for the nodes below it.  count and sum are nodestats.h's;
 * prior_var = sigma_H^2 >= 0, time_scale = theta > 0, noise_var = sigma_y^2 > 0,
 * else MT_ERR_ARG.
 * Needs 5 n_nodes doubles of scratch: `work` if not NULL (any content;
 * a caller scoring many candidates passes the same block each time, whose
 * pages are then not fresh ones for the kernel to clear), else allocated
 * here (MT_ERR_NOMEM).  The last n_nodes doubles of `work` receive the
 * prior increments phi(t_j) - phi(t_parent(j)); with `reuse` (and `work`)
 * they are taken as they are instead, which is valid only when the
 * previous call with this `work` had the same forest, lambda, prior_var and
 * time_scale (the noise and the statistics may differ): they are an exp
 * and an expm1 a node, most of the work.
 */
int mt_forest_gauss_posterior(const mt_forest *f, double lambda, const double *count,
                              const double *sum, double prior_mean, double prior_var,
                              double time_scale, double noise_var, int n_threads,
                              double *mean, double *var, double *cov, double *work, int reuse);

/*
 * Leave-one-out predictive moments of the training targets under the
 * Gaussian smoothing at lambda, for n_candidates pairs (time_scale[c],
 * noise_var[c]): block c of out (n_candidates x n_points x 2; row i of the
 * forest's points) receives the mean and second moment, averaged over the
 * trees, of the predictive distribution of y[i] given every other target,
 * on the same trees (the partition does not depend on the targets, so
 * removing y_i leaves it unchanged).  In each tree only the factor of y_i in
 * its active node changes, so each point costs O(1) after one belief
 * propagation per candidate (formulas in mforest.c).  count and sum are
 * nodestats.h's of y (centred as prior_mean is); the other arguments as
 * mt_forest_gauss_posterior's.  The forest must keep its points, else
 * MT_ERR_ARG.  Needs (4 n_candidates + 4) n_nodes doubles of scratch.
 */
int mt_forest_gauss_loo(const mt_forest *f, double lambda, const double *count,
                        const double *sum, const double *y, double prior_mean, double prior_var,
                        size_t n_candidates, const double *time_scale, const double *noise_var,
                        int n_threads, double *out);

/*
 * The Gaussian mixture of the smoothed forest at n points X (raw
 * coordinates): out (n x 2) receives the mean and second moment of the
 * predictive distribution of y averaged over the trees, from the posterior
 * (mean, var, cov) of mt_forest_gauss_posterior at the same lambda.
 *
 * Separation with the shared path (a refinement of the AISTATS paper's
 * component, which hangs x's branch from the parent's mean): if x
 * separates from node j at time s in (t_parent(j), t_j], the new node
 * splitting at s lies on the edge parent(j) -> j, and x's leaf shares j's
 * Brownian path up to s.  The value there is the Brownian bridge between
 * mu_p (at t_p) and mu_j (at t_j), mean mu_p + r (mu_j - mu_p) with
 * r = (phi(s) - phi(t_p)) / (phi(t_j) - phi(t_p)) and variance
 * (phi(s) - phi(t_p)) (phi(t_j) - phi(s)) / (phi(t_j) - phi(t_p)); x's
 * leaf adds phi(lambda) - phi(s), its target sigma_y^2.  Given the data,
 * (mu_p, mu_j) have the posterior means, variances and covariance cov[j];
 * s is exponential of rate eta_j(x) truncated to the interval; the
 * component's moments are integrated over s in closed form (mforest.c).
 * Above the root, mu_p is the prior's mean with variance 0.
 */
int mt_forest_gauss_mixture(const mt_forest *f, const double *X, size_t n, double lambda,
                            const double *mean, const double *var, const double *cov,
                            double prior_mean, double prior_var, double time_scale,
                            double noise_var, int n_threads, double *out);

/*
 * Smoothed class probabilities of the nodes of the pruned tree at lambda
 * (prob: n_nodes x n_classes; NaN below the pruned tree), from the class
 * counts of nodestats.h, with base distribution `base` (n_classes, the
 * root's parent) and discount d_j = exp(-rate * Delta_j) (rate >= 0).
 * Needs n_nodes x n_classes doubles of scratch: `work` if not NULL (any
 * content; as mt_forest_gauss_posterior's), else allocated here.
 */
int mt_forest_class_posterior(const mt_forest *f, double lambda, const double *counts,
                              size_t n_classes, const double *base, double rate,
                              int n_threads, double *prob, double *work);

/*
 * The mixture at n points X (n x D, row-major, raw coordinates) averaged
 * over the trees: out (n x K).  leaf and branch are n_nodes x K (read only
 * on the pruned tree), branch0 is K.  0 <= lambda <= lifetime.
 */
int mt_forest_mixture(const mt_forest *f, const double *X, size_t n, double lambda,
                      size_t K, const double *leaf, const double *branch,
                      const double *branch0, int n_threads, double *out);

/*
 * Paths of fixed points (held-out points scored at many lifetimes and
 * smoothing hyperparameters).  The walk of a point down a tree and its gaps
 * eta_j(x) to the boxes on the way do not depend on lambda nor on the
 * components; stored once, every mixture at those points reads them instead
 * of walking again (the gaps, D operations per node, are most of a
 * mixture's cost).  Path (i, m) runs from tree m's root to the leaf of the
 * full tree that point i reaches: entries offset[i M + m] to
 * offset[i M + m + 1] of node and gap.  mt_forest_paths_walk walks every
 * path once, by blocks of rows and tree by tree within a block, keeping
 * each block's entries in *walk (entries.h, one list), and writes the
 * offsets (n M + 1 prefix sums); the caller allocates node and gap
 * (offset[n M] entries), copies the entries there with mt_entries_gather
 * (list 0), then frees *walk with mt_entries_free (*walk is NULL on error,
 * or with no rows or trees).  The gaps above the first box on a path that
 * excludes the point are 0 without reading those boxes (a child's box lies
 * in its parent's).  The forest must not change in between, nor
 * before the mixtures below read them.  MT_ERR_ARG for a forest without
 * nodes; MT_ERR_NOMEM if the lists cannot be allocated; the results do not
 * depend on the number of threads.
 */
int mt_forest_paths_walk(const mt_forest *f, const double *X, size_t n, int n_threads,
                         mt_index *offset, mt_entries **walk);

/* mt_forest_gauss_mixture and mt_forest_mixture at the n points of stored
 * paths: the same results, bit for bit. */
int mt_forest_gauss_mixture_paths(const mt_forest *f, const mt_index *offset,
                                  const mt_index *node, const double *gap, size_t n,
                                  double lambda, const double *mean, const double *var,
                                  const double *cov, double prior_mean, double prior_var,
                                  double time_scale, double noise_var, int n_threads,
                                  double *out);
int mt_forest_mixture_paths(const mt_forest *f, const mt_index *offset, const mt_index *node,
                            const double *gap, size_t n, double lambda, size_t K,
                            const double *leaf, const double *branch, const double *branch0,
                            int n_threads, double *out);

#endif /* MT_MFOREST_H */
