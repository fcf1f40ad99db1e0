/*
 * classify.h -- products with the sparse Mondrian feature matrix of a
 * classifier's points, for the Newton solver of mondrian/path/classify.py.
 *
 * At lifetime lambda every training point lies in exactly one active cell
 * of each of the M trees, and its feature vector is 1/sqrt(M) in those M
 * columns and 0 elsewhere.  Phi is therefore stored as the global column
 * numbers of the points' cells, tree-major: cols[m * n + i] is point i's
 * cell in tree m (tree m's cells are the columns col_offset[m] ..
 * col_offset[m + 1] - 1).  With K weight columns (one per class of a
 * multinomial model; W row-major n_cols x K, Z and V row-major n x K):
 *
 *     mt_cells_matvec:   Z[i, k]  = scale * sum_m W[cols[m, i], k]
 *     mt_cells_rmatvec:  G[c, k]  = scale * sum_{(m, i): cols[m, i] = c} V[i, k]
 *
 * i.e. Z = Phi W and G = Phi^T V, O(n * M * K) each.  Tree-major, one
 * tree's pass reads its n labels in order and touches only its own cells
 * (at most n of them: they stay in cache).  The first product is parallel
 * over blocks of points, the second over trees (each tree owns a disjoint
 * range of columns, so threads never write the same entry); both add in
 * the same order for any number of threads.
 */
#ifndef MT_CLASSIFY_H
#define MT_CLASSIFY_H

#include "forest.h"

/*
 * cols[m * N + i] = column of training point i's active cell in tree m
 * (col_of_node from mt_forest_active_columns at the same lambda; N the
 * forest's points), read off the active nodes' point slices.  MT_ERR_ARG
 * if a column number does not fit in an int32.
 */
int mt_forest_cell_columns(const mt_forest *f, const mt_index *col_of_node,
                           size_t n_cols, int32_t *cols, int n_threads);

/* Z (n x K) = scale * Phi W, W (n_cols x K).  MT_ERR_ARG on a column >= n_cols. */
int mt_cells_matvec(const int32_t *cols, size_t n, size_t n_trees, const double *W,
                    size_t n_cols, size_t K, double scale, double *Z, int n_threads);

/*
 * G (n_cols x K) = scale * Phi^T V, V (n x K); col_offset (n_trees + 1)
 * gives each tree's column range (every cols[m * n + i] must lie in tree
 * m's range, else MT_ERR_ARG).
 */
int mt_cells_rmatvec(const int32_t *cols, size_t n, size_t n_trees, const double *V,
                     const mt_index *col_offset, size_t K, double scale, double *G,
                     int n_threads);

#endif /* MT_CLASSIFY_H */
