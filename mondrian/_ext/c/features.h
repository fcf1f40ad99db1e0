/*
 * features.h -- the sparse Mondrian feature matrix Phi in CSR form (Sec. 3.1,
 * eq. (2)), read from a forest (forest.h).
 *
 * Columns are the active nodes at lambda numbered in global-id order
 * (mt_forest_active_columns): tree m's cells occupy columns
 * col_offset[m] .. col_offset[m+1]-1.  Every row has exactly one entry per
 * tree, so row i's entries are indices[i*M + m], data[i*M + m] (indptr is
 * i*M, sorted within rows).  A training point's entry is `scale` = 1/sqrt(M);
 * a new point's is scale * exp(-exponent) (lookup.h).
 *
 * Column indices go to `indices32` (int32, when the number of columns is
 * below 2^31: what scipy.sparse and liblinear use) or, if that is NULL, to
 * `indices64`; exactly one of the two must be non-NULL.  col_of_node and
 * col_offset come from mt_forest_active_columns at the same lambda.
 */
#ifndef MT_FEATURES_H
#define MT_FEATURES_H

#include "lookup.h"

/* Entries of Phi for n arbitrary points X (n x d), by walking every tree. */
int mt_forest_features(const mt_forest *f, const double *X, size_t n, size_t d,
                       double lambda, const mt_index *col_of_node,
                       const mt_index *col_offset, double scale,
                       int32_t *indices32, mt_index *indices64, double *data,
                       int n_threads);

/*
 * The product Phi(X) coef for n arbitrary points, without forming Phi:
 * out (n x k, row-major) = sum over trees of the entry of
 * mt_forest_features times row col_of_node[j] of coef (n_columns x k,
 * row-major), each row summed in tree order (the numbers of the CSR
 * product of mt_forest_features' matrix with coef, for any thread count).
 * Memory O(n k) instead of the matrix's O(n M).  col_of_node comes from
 * mt_forest_active_columns at the same lambda, and coef has a row for each
 * of its columns (col_offset[M] rows): the caller checks it.
 */
int mt_forest_features_dot(const mt_forest *f, const double *X, size_t n, size_t d,
                           double lambda, const mt_index *col_of_node, double scale,
                           const double *coef, size_t k, double *out, int n_threads);

/*
 * Entries of Phi for the forest's own points (row i = point i), read off the
 * contiguous point slices of the active nodes: no walks.
 */
int mt_forest_features_fitted(const mt_forest *f, double lambda,
                              const mt_index *col_of_node,
                              const mt_index *col_offset, double scale,
                              int32_t *indices32, mt_index *indices64,
                              double *data, int n_threads);

/*
 * Gram matrix G = Phi^T Phi of the forest's points' features at lambda,
 * dense, row-major, n_columns x n_columns.  G[a, b] = (number of points in
 * both cell a and cell b) / M: each point adds one to M^2 entries, counted
 * tree pair by tree pair over tree-major cell labels, so the working set of
 * a pair stays in cache.  `gram` must be zeroed by the caller.
 */
int mt_forest_gram(const mt_forest *f, double lambda, const mt_index *col_of_node,
                   const mt_index *col_offset, double *gram, int n_threads);

/*
 * The same product for n arbitrary points X (n x d, raw coordinates):
 * G[a, b] = sum over points of phi_a(x) phi_b(x), the features of
 * mt_forest_features (1/sqrt(M), times e^{-exponent} for a point outside
 * its cell's box), found by walking every tree; points in rows of 16384 at
 * a time (labels and values: 12 bytes per point and tree of scratch).
 * In the same pass, if not NULL: Pty (n_columns x k, row-major) += Phi^T y
 * for the targets y (n x k, row-major), Pt1 (n_columns) += Phi^T 1.
 * gram, Pty and Pt1 must be zeroed by the caller (or hold sums to add to).
 * Does not need the forest's points.
 */
int mt_forest_gram_points(const mt_forest *f, const double *X, size_t n, size_t d,
                          double lambda, const mt_index *col_of_node,
                          const mt_index *col_offset, const double *y, size_t k,
                          double *gram, double *Pty, double *Pt1, int n_threads);

#endif /* MT_FEATURES_H */
