/*
 * mforest.c -- Mondrian forest predictions (see mforest.h).
 *
 * Gaussian belief propagation on a tree pruned at lambda.  Write a message
 * as a Gaussian factor in canonical form exp(-P mu^2 / 2 + h mu).
 *
 *   Upward.  An active leaf a with n_a targets summing to S_a: the
 *   likelihood of its targets is (P, h) = (n_a / sigma_y^2, S_a / sigma_y^2).
 *   An internal node's is the product of its children's messages.  Node j's
 *   message to its parent integrates mu_j ~ N(mu_parent, Delta_j) (here
 *   Delta_j = phi(t_j) - phi(t_parent(j)) is the prior variance increment,
 *   phi(t) = sigma_H^2 (1 - exp(-t / theta))):
 *   a factor N(mu_j; h/P, 1/P) becomes N(mu_parent; h/P, 1/P + Delta_j),
 *   i.e. (P, h) / (1 + P Delta_j).
 *
 *   Downward.  The prior of mu_j given every target outside j's subtree is
 *   N(a_j, b_j): at the root (mu0, phi(t_root)); for a child c of p with
 *   sibling s, the belief N(a_p, b_p) times s's message, plus c's increment:
 *   b_c = 1 / (1 / b_p + P_s) + Delta_c, a_c = (a_p / b_p + h_s) (b_c -
 *   Delta_c).  The posterior of mu_j is that prior times j's own subtree
 *   factor: var_j = 1 / (1 / b_j + P_j), mean_j = var_j (a_j / b_j + h_j).
 *   A zero prior variance (lambda == t_parent: nothing to learn) keeps the
 *   prior exactly.
 *
 * Interpolated Kneser-Ney class smoothing (NIPS 2014, Sec. 5 and App.): an
 * active leaf's counts c_jk are its class counts; an internal node's are
 * its children's tables, c_jk = sum_children min(c_child,k, 1).  With
 * tab_jk = min(c_jk, 1), T_j = sum_k tab_jk, n_j = sum_k c_jk and
 * d_j = exp(-rate Delta_j) (Delta_j = t_j - t_parent(j) here):
 *
 *   G_jk = (c_jk - d_j tab_jk + d_j T_j G_parent,k) / n_j    (n_j > 0)
 *   G_j = G_parent                                            (n_j = 0)
 *
 * with G_parent(root) = base.
 */
#include "mforest.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lookup.h"
#include "walk.h"

/* Node j belongs to the tree pruned at lambda. */
static int in_pruned(const mt_forest *f, mt_index j, double lambda)
{
    mt_index p = f->parent[j];
    return p == MT_NONE || f->tau[p] <= lambda;
}

static double node_time(const mt_forest *f, mt_index j, double lambda)
{
    return f->tau[j] < lambda ? f->tau[j] : lambda;
}

static double parent_time(const mt_forest *f, mt_index j, double lambda)
{
    mt_index p = f->parent[j];
    return p == MT_NONE ? 0.0 : node_time(f, p, lambda);
}

/* phi(t_j) - phi(t_parent(j)) for phi(t) = prior_var (1 - exp(-t / time_scale)):
 * prior_var exp(-t_parent / theta) (1 - exp(-(t_j - t_parent) / theta)). */
static double increment(const mt_forest *f, mt_index j, double lambda, double prior_var,
                        double time_scale)
{
    double t0 = parent_time(f, j, lambda), t1 = node_time(f, j, lambda);
    return prior_var * exp(-t0 / time_scale) * -expm1(-(t1 - t0) / time_scale);
}

static int check_lambda(const mt_forest *f, double lambda)
{
    return (lambda >= 0.0 && lambda <= f->lifetime && f->n_nodes > 0) ? MT_OK : MT_ERR_ARG;
}

/* The prior and noise of the Gaussian mixtures: a finite mean, variance
 * >= 0, time scale > 0 and noise variance >= 0. */
static int check_prior(const mt_forest *f, double lambda, double prior_mean, double prior_var,
                       double time_scale, double noise_var)
{
    if (check_lambda(f, lambda) != MT_OK || !(prior_var >= 0.0) || !isfinite(prior_var) ||
        !(time_scale > 0.0) || !isfinite(time_scale) || !(noise_var >= 0.0) ||
        !isfinite(noise_var) || !isfinite(prior_mean)) {
        return MT_ERR_ARG;
    }
    return MT_OK;
}

/* check_prior, with a noise variance > 0 (the posterior divides by it). */
static int check_gauss(const mt_forest *f, double lambda, double prior_mean, double prior_var,
                       double time_scale, double noise_var)
{
    if (check_prior(f, lambda, prior_mean, prior_var, time_scale, noise_var) != MT_OK ||
        !(noise_var > 0.0)) {
        return MT_ERR_ARG;
    }
    return MT_OK;
}

/*
 * Belief propagation on tree m (see the top of this file).  scratch
 * holds 4 n_nodes doubles; on return its first two blocks hold, for every
 * node j of the pruned trees, the prior N(a_j, b_j) of mu_j given every
 * target outside j's subtree (a in scratch[0, n_nodes), b in
 * scratch[n_nodes, 2 n_nodes)).  incr (n_nodes) receives the prior
 * increments phi(t_j) - phi(t_parent(j)) of the pruned trees, or, with
 * have_incr, holds them already (from a call at the same lambda,
 * prior_var and time_scale): they are then not recomputed.
 */
static void gauss_bp_tree(const mt_forest *f, size_t m, double lambda, const double *count,
                          const double *sum, double prior_mean, double prior_var,
                          double time_scale, double noise_var, double *mean, double *var,
                          double *cov, double *scratch, double *incr, int have_incr)
{
    const size_t nn = f->n_nodes;
    /* own subtree factor (P, h), then reused for the prior (a, b) */
    double *own_p = scratch;
    double *own_h = own_p + nn, *msg_p = own_h + nn, *msg_h = msg_p + nn;
    {
        const mt_index lo = f->node_offset[m], hi = f->node_offset[m + 1];
        /* upward */
        for (mt_index j = hi - 1; j >= lo; --j) {
            if (!in_pruned(f, j, lambda)) {
                mean[j] = NAN;
                var[j] = NAN;
                cov[j] = NAN;
                continue;
            }
            double P, h;
            if (f->tau[j] > lambda) {
                P = count[j] / noise_var;
                h = sum[j] / noise_var;
            } else {
                P = msg_p[f->left[j]] + msg_p[f->right[j]];
                h = msg_h[f->left[j]] + msg_h[f->right[j]];
            }
            own_p[j] = P;
            own_h[j] = h;
            double delta;
            if (have_incr) {
                delta = incr[j];
            } else {
                delta = increment(f, j, lambda, prior_var, time_scale);
                incr[j] = delta;
            }
            double s = 1.0 + P * delta;
            msg_p[j] = P / s;
            msg_h[j] = h / s;
        }
        /* downward: (a_j, b_j) overwrite (own_p, own_h) once j's posterior is set */
        for (mt_index j = lo; j < hi; ++j) {
            if (!in_pruned(f, j, lambda)) {
                continue;
            }
            double a, b;
            double delta = incr[j];
            mt_index p = f->parent[j];
            if (p == MT_NONE) {
                a = prior_mean;
                b = delta;
            } else {
                mt_index s = f->left[p] == j ? f->right[p] : f->left[p];
                double ap = own_p[p], bp = own_h[p];
                if (bp > 0.0) {
                    double v = 1.0 / (1.0 / bp + msg_p[s]);
                    a = v * (ap / bp + msg_h[s]);
                    b = v + delta;
                } else {
                    a = ap;
                    b = delta;
                }
            }
            if (b > 0.0) {
                double v = 1.0 / (1.0 / b + own_p[j]);
                mean[j] = v * (a / b + own_h[j]);
                var[j] = v;
            } else {
                mean[j] = a;
                var[j] = 0.0;
            }
            /* Cov(mu_p, mu_j | data) = var_p / (1 + P_j Delta_j): given mu_p,
             * mu_j depends on the data below j only (mforest.h). */
            cov[j] = p == MT_NONE ? 0.0 : var[p] / (1.0 + own_p[j] * delta);
            own_p[j] = a;
            own_h[j] = b;
        }
    }
}

/* gauss_bp_tree on every tree, in parallel. */
static void gauss_bp(const mt_forest *f, double lambda, const double *count, const double *sum,
                     double prior_mean, double prior_var, double time_scale, double noise_var,
                     int n_threads, double *mean, double *var, double *cov, double *scratch,
                     double *incr, int have_incr)
{
    const ptrdiff_t n_trees = (ptrdiff_t)f->n_trees;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t m = 0; m < n_trees; ++m) {
        gauss_bp_tree(f, (size_t)m, lambda, count, sum, prior_mean, prior_var, time_scale,
                      noise_var, mean, var, cov, scratch, incr, have_incr);
    }
}

int mt_forest_gauss_posterior(const mt_forest *f, double lambda, const double *count,
                              const double *sum, double prior_mean, double prior_var,
                              double time_scale, double noise_var, int n_threads,
                              double *mean, double *var, double *cov, double *work, int reuse)
{
    if (check_gauss(f, lambda, prior_mean, prior_var, time_scale, noise_var) != MT_OK) {
        return MT_ERR_ARG;
    }
    size_t bytes;
    if (mt_mul_size(f->n_nodes, 5 * sizeof(double), &bytes) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    double *scratch = work != NULL ? work : malloc(bytes);
    if (scratch == NULL) {
        return MT_ERR_NOMEM;
    }
    gauss_bp(f, lambda, count, sum, prior_mean, prior_var, time_scale, noise_var, n_threads,
             mean, var, cov, scratch, scratch + 4 * f->n_nodes, work != NULL && reuse);
    if (work == NULL) {
        free(scratch);
    }
    return MT_OK;
}

/*
 * Leave-one-out (see mforest.h).  Training point i in active node a: the
 * posterior of mu_a given every target but y_i is the prior from outside
 * a's subtree, N(a_a, b_a), times the likelihood of a's other n_a - 1
 * targets, whose sum is S_a - y_i:
 *
 *   v = 1 / (1 / b_a + (n_a - 1) / sigma_y^2),
 *   m = v (a_a / b_a + (S_a - y_i) / sigma_y^2)     (b_a = 0: m = a_a, v = 0),
 *
 * and y_i's predictive distribution is N(m, v + sigma_y^2).  One candidate's
 * trees are accumulated one after the other into its block of out (a fixed
 * order, so the result does not depend on the number of threads); the
 * belief propagation runs in parallel over trees, the accumulation in
 * parallel over candidates.
 */
static void loo_accumulate(const mt_forest *f, double lambda, const double *count,
                           const double *sum, const double *y, double noise_var,
                           const double *prior_a, const double *prior_b, double *out)
{
    const size_t M = f->n_trees;
    for (size_t i = 0; i < 2 * f->n_points; ++i) {
        out[i] = 0.0;
    }
    const double inv_noise = 1.0 / noise_var, inv_m = 1.0 / (double)M;
    for (size_t m = 0; m < M; ++m) {
        const mt_index *perm = mt_forest_perm(f, m);
        for (mt_index j = f->node_offset[m]; j < f->node_offset[m + 1]; ++j) {
            if (!in_pruned(f, j, lambda) || f->tau[j] <= lambda) {
                continue; /* below the pruned tree, or not active at lambda */
            }
            const double a = prior_a[j], b = prior_b[j];
            /* m_i = base - slope y_i, the same v for every point of j */
            double v, base, slope;
            if (b > 0.0) {
                v = 1.0 / (1.0 / b + (count[j] - 1.0) * inv_noise);
                base = v * (a / b + sum[j] * inv_noise);
                slope = v * inv_noise;
            } else {
                v = 0.0;
                base = a;
                slope = 0.0;
            }
            const double spread = v + noise_var;
            for (mt_index k = f->start[j]; k < f->end[j]; ++k) {
                const mt_index i = perm[k];
                const double mi = base - slope * y[i];
                out[2 * (size_t)i] += mi * inv_m;
                out[2 * (size_t)i + 1] += (spread + mi * mi) * inv_m;
            }
        }
    }
}

int mt_forest_gauss_loo(const mt_forest *f, double lambda, const double *count,
                        const double *sum, const double *y, double prior_mean, double prior_var,
                        size_t n_candidates, const double *time_scale, const double *noise_var,
                        int n_threads, double *out)
{
    if (f->perm == NULL || (f->n_points > 0 && y == NULL) || n_candidates == 0) {
        return MT_ERR_ARG;
    }
    for (size_t c = 0; c < n_candidates; ++c) {
        if (check_gauss(f, lambda, prior_mean, prior_var, time_scale[c], noise_var[c]) != MT_OK) {
            return MT_ERR_ARG;
        }
    }
    const size_t nn = f->n_nodes;
    size_t per, bytes;
    if (mt_mul_size(nn, 4 * sizeof(double), &per) != MT_OK ||
        mt_mul_size(per, n_candidates, &bytes) != MT_OK ||
        mt_mul_size(nn, 4 * sizeof(double), &per) != MT_OK || bytes > SIZE_MAX - per) {
        return MT_ERR_OVERFLOW;
    }
    /* one 4 n_nodes block per candidate (its (a, b) survive), then the
     * increments (shared by consecutive candidates of one time scale) and
     * the posterior (mean, var, cov), which only the propagation needs */
    double *scratch = malloc(bytes + per);
    if (scratch == NULL) {
        return MT_ERR_NOMEM;
    }
    double *incr = scratch + 4 * nn * n_candidates;
    double *mean = incr + nn, *var = mean + nn, *cov = var + nn;
    const ptrdiff_t n_cand = (ptrdiff_t)n_candidates, n_trees = (ptrdiff_t)f->n_trees;
    (void)n_threads;
    /* one parallel region: the candidates' propagations one after the
     * other (each over the trees; they share the increments of one time
     * scale), then the accumulations over the candidates */
#ifdef _OPENMP
#pragma omp parallel num_threads(n_threads > 0 ? n_threads : 1)
#endif
    {
        for (size_t c = 0; c < n_candidates; ++c) {
            int have_incr = c > 0 && time_scale[c] == time_scale[c - 1];
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (ptrdiff_t m = 0; m < n_trees; ++m) {
                gauss_bp_tree(f, (size_t)m, lambda, count, sum, prior_mean, prior_var,
                              time_scale[c], noise_var[c], mean, var, cov, scratch + 4 * nn * c,
                              incr, have_incr);
            }
        }
#ifdef _OPENMP
#pragma omp for schedule(static, 1)
#endif
        for (ptrdiff_t c = 0; c < n_cand; ++c) {
            const double *block = scratch + 4 * nn * (size_t)c;
            loo_accumulate(f, lambda, count, sum, y, noise_var[c], block, block + nn,
                           out + 2 * f->n_points * (size_t)c);
        }
    }
    free(scratch);
    return MT_OK;
}

int mt_forest_class_posterior(const mt_forest *f, double lambda, const double *counts,
                              size_t n_classes, const double *base, double rate,
                              int n_threads, double *prob, double *work)
{
    const size_t K = n_classes;
    if (check_lambda(f, lambda) != MT_OK || K == 0 || !(rate >= 0.0) || !isfinite(rate)) {
        return MT_ERR_ARG;
    }
    size_t bytes;
    if (mt_mul_size(f->n_nodes, K * sizeof(double), &bytes) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    double *c = work != NULL ? work : malloc(bytes > 0 ? bytes : 1);
    if (c == NULL) {
        return MT_ERR_NOMEM;
    }
    const ptrdiff_t n_trees = (ptrdiff_t)f->n_trees;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t m = 0; m < n_trees; ++m) {
        const mt_index lo = f->node_offset[m], hi = f->node_offset[m + 1];
        for (mt_index j = hi - 1; j >= lo; --j) {
            double *cj = c + (size_t)j * K;
            if (!in_pruned(f, j, lambda)) {
                for (size_t k = 0; k < K; ++k) {
                    prob[(size_t)j * K + k] = NAN;
                }
                continue;
            }
            if (f->tau[j] > lambda) {
                for (size_t k = 0; k < K; ++k) {
                    cj[k] = counts[(size_t)j * K + k];
                }
            } else {
                const double *a = c + (size_t)f->left[j] * K;
                const double *b = c + (size_t)f->right[j] * K;
                for (size_t k = 0; k < K; ++k) {
                    cj[k] = (a[k] > 0.0 ? 1.0 : 0.0) + (b[k] > 0.0 ? 1.0 : 0.0);
                }
            }
        }
        for (mt_index j = lo; j < hi; ++j) {
            if (!in_pruned(f, j, lambda)) {
                continue;
            }
            mt_index p = f->parent[j];
            const double *g = p == MT_NONE ? base : prob + (size_t)p * K;
            const double *cj = c + (size_t)j * K;
            double *pj = prob + (size_t)j * K;
            double n = 0.0, tables = 0.0;
            for (size_t k = 0; k < K; ++k) {
                n += cj[k];
                tables += cj[k] > 0.0 ? 1.0 : 0.0;
            }
            if (n > 0.0) {
                double d = exp(-rate * (node_time(f, j, lambda) - parent_time(f, j, lambda)));
                for (size_t k = 0; k < K; ++k) {
                    double tab = cj[k] > 0.0 ? 1.0 : 0.0;
                    pj[k] = (cj[k] - d * tab + d * tables * g[k]) / n;
                }
            } else {
                for (size_t k = 0; k < K; ++k) {
                    pj[k] = g[k];
                }
            }
        }
    }
    if (work == NULL) {
        free(c);
    }
    return MT_OK;
}

/*
 * The separation component of edge p -> j (see mforest.h): x branches off
 * at s in (t0, t1] with density proportional to eta exp(-eta (s - t0)).
 * With g = exp(-(s - t0) / theta), q = 1 - exp(-(t1 - t0) / theta) and
 * r = (1 - g) / q the bridge's interpolation weight, E g and E g^2 are
 *
 *   E exp(-k (s - t0)) = eta / (eta + k) (1 - exp(-(eta + k) D)) / (1 - exp(-eta D))
 *
 * for k = 1/theta, 2/theta, D = t1 - t0, and every moment below is a
 * polynomial of degree 2 in g.  With w = 1 - exp(-eta D) (the caller's
 * separation probability), u = 1 - w and v = 1 - q = exp(-D / theta), the
 * numerators are sums of positive terms, as accurate as w and q are:
 *
 *   1 - exp(-(eta + 1/theta) D) = 1 - u v   = w + u q,
 *   1 - exp(-(eta + 2/theta) D) = 1 - u v^2 = w + u q (1 + v),
 *
 * so a component takes two exponentials (q and exp(-t0 / theta)) instead of
 * six; L = exp(-lambda / theta) is the caller's, one per lifetime.  Writes
 * the component's mean and second moment (centred as the node means are).
 */
static void bridge_component(double t0, double t1, double eta, double w, double L,
                             double theta, double h2, double s2, double mp, double vp,
                             double mj, double vj, double c, double *m1, double *m2)
{
    const double D = t1 - t0, k = 1.0 / theta;
    const double q = -expm1(-D * k), beta = 1.0 - q, u = 1.0 - w;
    const double eg = eta / (eta + k) * (w + u * q) / w;
    const double eg2 = eta / (eta + 2.0 * k) * (w + u * q * (1.0 + beta)) / w;
    const double a = exp(-t0 * k);
    const double er = (1.0 - eg) / q;
    const double er2 = (1.0 - 2.0 * eg + eg2) / (q * q);
    const double d = mj - mp;
    /* bridge variance h2 a (1 - g)(g - beta) / q, the new leaf's own
     * increment h2 (a g - L) */
    const double bridge = h2 * a * ((1.0 + beta) * eg - beta - eg2) / q;
    const double rest = h2 * (a * eg - L);
    const double mean = mp + er * d;
    const double second = (1.0 - 2.0 * er + er2) * vp + er2 * vj + 2.0 * (er - er2) * c +
                          bridge + rest + s2 + mp * mp + 2.0 * mp * d * er + d * d * er2;
    *m1 = mean;
    *m2 = second;
}

/* Stored paths (mt_forest_paths_walk): row i's path in tree m is nodes
 * node[offset[i M + m] .. offset[i M + m + 1]), with gaps gap[...]. */
struct path_args {
    const mt_index *offset, *node;
    const double *gap;
};

/* Row i's stored path in tree m: [*lo, *hi) of node and gap. */
static inline void path_range(const mt_forest *f, const struct path_args *p, size_t m,
                              size_t i, mt_index *lo, mt_index *hi)
{
    *lo = p->offset[i * f->n_trees + m];
    *hi = p->offset[i * f->n_trees + m + 1];
}

/* A node of a conditional Mondrian path (gauss_node, mixture_node): x at
 * gap e from node j's box, `last` if the stored path ends there; adds to
 * acc, and returns 1 when the path ends at j. */
typedef int (*path_node)(const mt_forest *f, const void *args, mt_index j, double e, int last,
                         double *t_prev, double *surv, double *acc);

/* x's path in tree m (x in the tree's coordinates), walked down the cuts,
 * each node with x's gap to its box, through node(). */
static inline void walk_path(const mt_forest *f, const void *args, path_node node, size_t m,
                             const double *x, double *acc)
{
    const size_t d = f->n_features;
    mt_index j = f->node_offset[m];
    double t_prev = 0.0, surv = 1.0;
    for (;;) {
        const size_t off = (size_t)j * d;
        const double e = mt_box_gap(x, f->lower + off, f->upper + off, d);
        if (node(f, args, j, e, 0, &t_prev, &surv, acc)) {
            return;
        }
        j = x[f->feature[j]] <= f->threshold[j] ? f->left[j] : f->right[j];
    }
}

/* Requests what node() will read at node j, ahead of use (see
 * stored_path). */
typedef void (*path_ahead)(const mt_forest *f, const void *args, mt_index j);

/* Stored path entries whose nodes are requested ahead of use. */
#define MT_PATH_AHEAD 4

/* Row i's stored path in tree m through node(): the nodes and gaps
 * walk_path would meet, in its order, hence the same results.  The paths
 * are known in advance, so ahead() is given the node MT_PATH_AHEAD entries
 * on: on a large forest every node of a path is a cache miss in each array
 * node() reads (the CPU data's default forest, 539 000 nodes: the
 * held-out selection's 15 Gaussian mixtures of 1311 points took 0.30 s,
 * 0.24 s with the requests). */
static inline void stored_path(const mt_forest *f, const void *args, path_node node,
                               path_ahead ahead, const struct path_args *p, size_t m, size_t i,
                               double *acc)
{
    mt_index lo, hi;
    double t_prev = 0.0, surv = 1.0;
    path_range(f, p, m, i, &lo, &hi);
    for (mt_index k = lo; k < hi && k < lo + MT_PATH_AHEAD; ++k) {
        ahead(f, args, p->node[k]);
    }
    for (mt_index k = lo; k < hi; ++k) {
        if (k + MT_PATH_AHEAD < hi) {
            ahead(f, args, p->node[k + MT_PATH_AHEAD]);
        }
        if (node(f, args, p->node[k], p->gap[k], k + 1 == hi, &t_prev, &surv, acc)) {
            return;
        }
    }
}

/* What the Gaussian mixture reads at every node: the node means' moments
 * (posterior mean, variance, covariance with the parent), the prior and
 * noise, the lifetime. */
typedef struct {
    const double *mean, *var, *cov;
    double prior_mean, h2, s2, time_scale, lambda;
    double decay; /* exp(-lambda / time_scale) */
    /* the points: new points X (walked), or stored paths (path_args) */
    const double *X;
    const struct path_args *paths;
} gauss_args;

/* Node j of a conditional Mondrian path, x at gap e from its box: adds the
 * separation component of the edge into j (x branching off before j's
 * split) and, if j is where the path ends at lambda (or `last`), the node's
 * own component, to acc[0], acc[1] (mean and second moment).  Returns 1
 * when the path ends here. */
static inline int gauss_node(const mt_forest *f, const void *args, mt_index j, double e,
                             int last, double *t_prev, double *surv, double *acc)
{
    const gauss_args *g = args;
    const double t_end = node_time(f, j, g->lambda), dt = t_end - *t_prev;
    const double *mean = g->mean, *var = g->var;
    if (e > 0.0 && dt > 0.0) {
        double w = -expm1(-dt * e), c1, c2;
        mt_index p = f->parent[j];
        if (p == MT_NONE) {
            bridge_component(*t_prev, t_end, e, w, g->decay, g->time_scale, g->h2, g->s2,
                             g->prior_mean, 0.0, mean[j], var[j], 0.0, &c1, &c2);
        } else {
            bridge_component(*t_prev, t_end, e, w, g->decay, g->time_scale, g->h2, g->s2,
                             mean[p], var[p], mean[j], var[j], g->cov[j], &c1, &c2);
        }
        acc[0] += *surv * w * c1;
        acc[1] += *surv * w * c2;
        *surv *= 1.0 - w;
    }
    if (f->tau[j] > g->lambda || last) {
        acc[0] += *surv * mean[j];
        acc[1] += *surv * (var[j] + g->s2 + mean[j] * mean[j]);
        return 1;
    }
    *t_prev = f->tau[j];
    return 0;
}

/* What gauss_node reads at node j (its parent's: the entry before). */
static void gauss_ahead(const mt_forest *f, const void *args, mt_index j)
{
    const gauss_args *g = args;
    MT_PREFETCH(f->tau + j, 0, 1);
    MT_PREFETCH(f->parent + j, 0, 1);
    MT_PREFETCH(g->mean + j, 0, 1);
    MT_PREFETCH(g->var + j, 0, 1);
    MT_PREFETCH(g->cov + j, 0, 1);
}

/* Tree m's Gaussian mixture at point i, added to o[0], o[1] (an
 * mt_walk_visit of gauss_args): along its stored path if the args have
 * paths, else walking the tree (scratch: d doubles, for a transformed
 * forest's coordinates). */
static void gauss_visit(const mt_forest *f, const void *args, size_t m, size_t i,
                        double *scratch, double *o)
{
    const gauss_args *g = args;
    double acc[2] = {0.0, 0.0};
    if (g->paths != NULL) {
        stored_path(f, g, gauss_node, gauss_ahead, g->paths, m, i, acc);
    } else {
        walk_path(f, g, gauss_node, m, mt_walk_point(f, g->X, m, i, scratch), acc);
    }
    o[0] += acc[0];
    o[1] += acc[1];
}

int mt_forest_gauss_mixture(const mt_forest *f, const double *X, size_t n, double lambda,
                            const double *mean, const double *var, const double *cov,
                            double prior_mean, double prior_var, double time_scale,
                            double noise_var, int n_threads, double *out)
{
    if (check_prior(f, lambda, prior_mean, prior_var, time_scale, noise_var) != MT_OK) {
        return MT_ERR_ARG;
    }
    const gauss_args g = {mean, var, cov, prior_mean, prior_var, noise_var, time_scale, lambda,
                          exp(-lambda / time_scale), X, NULL};
    return mt_walk_blocks(f, n, 2, f->n_features, gauss_visit, &g, n_threads, out);
}

/* The component vectors (K each) of mt_forest_mixture: a node's own
 * (leaf), an edge's separation component (branch, by the edge's parent;
 * branch0 above the root). */
typedef struct {
    const double *leaf, *branch, *branch0;
    size_t K;
    double lambda;
    /* the points, as in gauss_args */
    const double *X;
    const struct path_args *paths;
} mixture_args;

/* Node j of a conditional Mondrian path, x at gap e from its box: adds the
 * separation component of the edge into j and, if the path ends at j (or
 * `last`), j's own, to acc[0..K).  Returns 1 when the path ends here. */
static inline int mixture_node(const mt_forest *f, const void *args, mt_index j, double e,
                               int last, double *t_prev, double *surv, double *acc)
{
    const mixture_args *a = args;
    const size_t K = a->K;
    const double t_end = node_time(f, j, a->lambda), dt = t_end - *t_prev;
    if (e > 0.0 && dt > 0.0) {
        double w = -expm1(-dt * e);
        mt_index p = f->parent[j];
        const double *comp = p == MT_NONE ? a->branch0 : a->branch + (size_t)p * K;
        for (size_t k = 0; k < K; ++k) {
            acc[k] += *surv * w * comp[k];
        }
        *surv *= 1.0 - w;
    }
    if (f->tau[j] > a->lambda || last) {
        const double *comp = a->leaf + (size_t)j * K;
        for (size_t k = 0; k < K; ++k) {
            acc[k] += *surv * comp[k];
        }
        return 1;
    }
    *t_prev = f->tau[j];
    return 0;
}

/* What mixture_node reads at node j: its split time, parent and own
 * component row (the edge's is its parent's, the entry before: at hand). */
static void mixture_ahead(const mt_forest *f, const void *args, mt_index j)
{
    const mixture_args *a = args;
    MT_PREFETCH(f->tau + j, 0, 1);
    MT_PREFETCH(f->parent + j, 0, 1);
    MT_PREFETCH(a->leaf + (size_t)j * a->K, 0, 1);
}

/* Tree m's mixture at point i, added to o[0..K) (an mt_walk_visit of
 * mixture_args): along its stored path if the args have paths (scratch: K
 * doubles), else walking the tree (scratch: d + K doubles, the first d for
 * a transformed forest's coordinates). */
static void mixture_visit(const mt_forest *f, const void *args, size_t m, size_t i,
                          double *scratch, double *o)
{
    const mixture_args *a = args;
    double *acc = a->paths != NULL ? scratch : scratch + f->n_features;
    for (size_t k = 0; k < a->K; ++k) {
        acc[k] = 0.0;
    }
    if (a->paths != NULL) {
        stored_path(f, a, mixture_node, mixture_ahead, a->paths, m, i, acc);
    } else {
        walk_path(f, a, mixture_node, m, mt_walk_point(f, a->X, m, i, scratch), acc);
    }
    for (size_t k = 0; k < a->K; ++k) {
        o[k] += acc[k];
    }
}

int mt_forest_mixture(const mt_forest *f, const double *X, size_t n, double lambda,
                      size_t K, const double *leaf, const double *branch,
                      const double *branch0, int n_threads, double *out)
{
    if (check_lambda(f, lambda) != MT_OK || K == 0) {
        return MT_ERR_ARG;
    }
    const mixture_args a = {leaf, branch, branch0, K, lambda, X, NULL};
    return mt_walk_blocks(f, n, K, f->n_features + K, mixture_visit, &a, n_threads, out);
}

/* ---------------------------------------------------------------------- */
/* Paths of fixed points, for many mixtures at the same points (mforest.h). */

/* x's path in tree m (x in the tree's coordinates), root to the full tree's
 * leaf, appended to the block with the gaps to the boxes; returns the
 * path's length (0 if the block could not grow: *status set).  The boxes
 * that hold x are a prefix of the path (a child's box lies in its
 * parent's): every entry is appended with gap 0, then the gaps are
 * computed from the leaf up while the box excludes x, the prefix's boxes
 * never read (mt_box_gap's sum of zeros there). */
static mt_index path_walk(const mt_forest *f, size_t m, const double *x, mt_entry_block *b,
                          int *status)
{
    const size_t d = f->n_features, start = b->len;
    mt_index j = f->node_offset[m];
    for (;;) {
        int st = mt_entry_push(b, j, 0.0);
        if (st != MT_OK) {
            *status = st;
            b->len = start;
            return 0;
        }
        if (f->left[j] == MT_NONE) {
            break;
        }
        j = x[f->feature[j]] <= f->threshold[j] ? f->left[j] : f->right[j];
    }
    for (size_t k = b->len; k > start; --k) {
        const size_t o = (size_t)b->node[k - 1] * d;
        if (!(mt_box_excess(x, f->lower + o, f->upper + o, d) > 0.0)) {
            break;
        }
        b->value[k - 1] = mt_box_gap(x, f->lower + o, f->upper + o, d);
    }
    return (mt_index)(b->len - start);
}

int mt_forest_paths_walk(const mt_forest *f, const double *X, size_t n, int n_threads,
                         mt_index *offset, mt_entries **walk)
{
    const size_t d = f->n_features, M = f->n_trees;
    *walk = NULL;
    if (f->n_nodes == 0 || offset == NULL || (n > 0 && X == NULL)) {
        return MT_ERR_ARG;
    }
    offset[0] = 0;
    if (n == 0 || M == 0) {
        return MT_OK;
    }
    /* Blocks of rows, tree by tree within a block (walk.h): a tree's upper
     * nodes stay in cache while the block's points walk it.  Each block
     * keeps its entries, so a path is walked once (not measured, then
     * walked again to be written). */
    mt_entries *w = mt_entries_new(n, MT_WALK_BLOCK, 1);
    if (w == NULL) {
        return MT_ERR_NOMEM;
    }
    const int nt = mt_walk_threads(n, M, n_threads);
    int status = MT_OK;
    (void)nt;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) reduction(min : status)
#endif
    {
        /* this thread's first error (the reduction's private copy starts
         * at INT_MAX) */
        int local = MT_OK;
        double *scratch = malloc((d > 0 ? d : 1) * sizeof(double));
        if (scratch == NULL) {
            local = MT_ERR_NOMEM;
        }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (ptrdiff_t b = 0; b < (ptrdiff_t)w->n_blocks; ++b) {
            const size_t lo = (size_t)b * MT_WALK_BLOCK;
            const size_t hi = lo + MT_WALK_BLOCK < n ? lo + MT_WALK_BLOCK : n;
            mt_entry_block *block = mt_entries_block(w, (size_t)b, 0);
            for (size_t m = 0; m < M && local == MT_OK; ++m) {
                for (size_t i = lo; i < hi && local == MT_OK; ++i) {
                    const double *x = mt_forest_point(f, m, X + i * d, scratch);
                    offset[i * M + m + 1] = path_walk(f, m, x, block, &local);
                }
            }
        }
        free(scratch);
        if (local != MT_OK) {
            status = local;
        }
    }
    if (status != MT_OK) {
        mt_entries_free(w);
        return status;
    }
    mt_entries_prefix(offset, n * M);
    *walk = w;
    return MT_OK;
}

/* mt_forest_gauss_mixture and mt_forest_mixture at the points of stored
 * paths (gauss_visit, mixture_visit with paths).  A path ends at a leaf of
 * the full tree, whose split time exceeds the lifetime, so the walk at
 * lambda <= lifetime stops on it at the latest. */
int mt_forest_gauss_mixture_paths(const mt_forest *f, const mt_index *offset,
                                  const mt_index *node, const double *gap, size_t n,
                                  double lambda, const double *mean, const double *var,
                                  const double *cov, double prior_mean, double prior_var,
                                  double time_scale, double noise_var, int n_threads,
                                  double *out)
{
    if (check_prior(f, lambda, prior_mean, prior_var, time_scale, noise_var) != MT_OK) {
        return MT_ERR_ARG;
    }
    const struct path_args paths = {offset, node, gap};
    const gauss_args g = {mean, var, cov, prior_mean, prior_var, noise_var, time_scale, lambda,
                          exp(-lambda / time_scale), NULL, &paths};
    return mt_walk_blocks(f, n, 2, 0, gauss_visit, &g, n_threads, out);
}

int mt_forest_mixture_paths(const mt_forest *f, const mt_index *offset, const mt_index *node,
                            const double *gap, size_t n, double lambda, size_t K,
                            const double *leaf, const double *branch, const double *branch0,
                            int n_threads, double *out)
{
    if (check_lambda(f, lambda) != MT_OK || K == 0) {
        return MT_ERR_ARG;
    }
    const struct path_args paths = {offset, node, gap};
    const mixture_args a = {leaf, branch, branch0, K, lambda, NULL, &paths};
    return mt_walk_blocks(f, n, K, K, mixture_visit, &a, n_threads, out);
}
