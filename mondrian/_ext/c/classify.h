/*
 * classify.h -- products with the sparse Mondrian feature matrix of a
 * classifier's points, for the Newton solver of mondrian/path/classify.py.
 *
 * At lifetime lambda every training point lies in exactly one active cell
 * of each of the M trees, and its feature vector is 1/sqrt(M) in those M
 * columns and 0 elsewhere.  A point's row of Phi is therefore stored as the
 * M global column numbers of its cells, cols[i * M + m] (tree m's cells are
 * the columns col_offset[m] .. col_offset[m + 1] - 1), and with K weight
 * columns (one per class of a multinomial model, W row-major n_cols x K):
 *
 *     mt_cells_matvec:   Z[i, k]  = scale * sum_m W[cols[i, m], k]
 *     mt_cells_rmatvec:  G[c, k]  = scale * sum_{(i, m): cols[i, m] = c} V[i, k]
 *
 * i.e. Z = Phi W and G = Phi^T V.  Both cost O(n * M * K).  The first is
 * parallel over points; the second over blocks of trees (each tree owns a
 * disjoint range of columns, so threads never write the same entry and the
 * sums are added in the same order for any number of threads).
 */
#ifndef MT_CLASSIFY_H
#define MT_CLASSIFY_H

#include "forest.h"

/*
 * cols[i * M + m] = column of training point i's active cell in tree m
 * (col_of_node from mt_forest_active_columns at the same lambda), read off
 * the active nodes' point slices.  MT_ERR_ARG if a column does not fit in
 * an int32.
 */
int mt_forest_cell_columns(const mt_forest *f, const mt_index *col_of_node,
                           size_t n_cols, int32_t *cols, int n_threads);

/* Z (n x K) = scale * Phi W, W (n_cols x K). MT_ERR_ARG on a column >= n_cols. */
int mt_cells_matvec(const int32_t *cols, size_t n, size_t n_trees, const double *W,
                    size_t n_cols, size_t K, double scale, double *Z, int n_threads);

/*
 * G (n_cols x K) = scale * Phi^T V, V (n x K); col_offset (n_trees + 1)
 * gives each tree's column range (every cols[i * M + m] must lie in tree
 * m's range, else MT_ERR_ARG).
 */
int mt_cells_rmatvec(const int32_t *cols, size_t n, size_t n_trees, const double *V,
                     const mt_index *col_offset, size_t K, double scale, double *G,
                     int n_threads);

#endif /* MT_CLASSIFY_H */
