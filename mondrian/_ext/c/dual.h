/*
 * dual.h -- the Mondrian kernel matrix of points whose cells are known.
 *
 * In the dual, ridge regression on the Mondrian features needs the N x N
 * kernel K = Phi Phi^T.  With every point's cell in every tree given as a
 * label (labels[i * n_trees + m], one row per point), and training points'
 * features equal to 1/sqrt(M) in their cell,
 *
 *     K[i, j] = scale * #{m : labels[i, m] == labels[j, m]},  scale = 1/M.
 *
 * Labels are 16-bit cell numbers *within* a tree (a tree has at most as
 * many cells as points, and the dual is only used for N well below 65536),
 * or 8-bit ones while every tree has at most 256 cells, so a comparison of
 * two rows runs 8 (16-bit) or 16 (8-bit) trees per SSE2 instruction, twice
 * as many with AVX2 where the machine has it; four rows are
 * compared against one row at a time so that its labels are loaded once
 * for four pairs.  The trees are taken 4096 at a time and the rows of b 32
 * at a time, so that a block of b's labels stays in the L2 cache while
 * every row of a meets it.  Counts are exact integers below 65536 (n_trees
 * is limited to 65535), summed exactly in doubles over the chunks, so the
 * result does not depend on the threads nor on the instruction set.
 */
#ifndef MT_DUAL_H
#define MT_DUAL_H

#include "forest.h"

/* Largest n_trees the 16-bit counts allow. */
#define MT_LABEL_MAX_TREES 65535

/*
 * K (n_a x n_b, row-major) with K[i, j] = scale * (number of equal labels
 * of row i of `a` and row j of `b`), labels of `width` bytes: 2 (uint16_t)
 * or 1 (uint8_t, when every tree has at most 256 cells: twice the trees
 * per instruction and half the memory).  If `b` is NULL, b = a, n_b = n_a,
 * and the full symmetric matrix is written (each pair counted once).
 */
int mt_label_kernel(const void *a, size_t n_a, const void *b, size_t n_b, size_t n_trees,
                    int width, double scale, double *K, int n_threads);

/*
 * Cell labels of the forest's own training points at lambda, of `width`
 * bytes (2: uint16_t, 1: uint8_t):
 * labels[i * n_trees + m] = column of point i's active cell in tree m minus
 * tree m's first column (col_of_node and col_offset from
 * mt_forest_active_columns at the same lambda), read off the active nodes'
 * point slices.  MT_ERR_ARG if a tree has more cells than the width holds
 * (65536, or 256); MT_ERR_NOMEM if the threads' tiles (up to 4096 points:
 * 64 trees x n labels each, see dual.c) cannot be allocated.
 */
int mt_forest_cell_labels(const mt_forest *f, const mt_index *col_of_node,
                          const mt_index *col_offset, void *labels, int width, int n_threads);

#endif /* MT_DUAL_H */
