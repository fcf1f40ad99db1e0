/*
 * cgblock.h -- f = Phi x of the CG path from a blocked table of compact
 * cell positions (tree-major within blocks of rows).
 *
 * The CG solve of the kernel-width path (CGPath in _path.pyx) runs on
 * compact vectors: position c = 0..n_ids-1 for the c-th active node in
 * increasing node id.  A tree's nodes occupy one range of the forest's
 * numbering (forest.h: node_offset), so its active cells occupy one range
 * of compact positions.  Row by row, f_i = sum_m x[cell of row i in tree m]
 * reads x at M random places of the whole vector (out of cache once the
 * forest has many cells).  Here the training rows are cut into blocks of at
 * most B rows, and the table holds, block after block, tree after tree, the
 * compact positions of the block's rows:
 *
 *     tab[b * M * B + m * nb + r] = pos of the cell of row b * B + r in tree m
 *
 * (nb = rows in block b; the last block may be shorter, so the table holds
 * exactly n_rows * M entries).  One block's pass over tree m reads nb
 * consecutive entries and the few x values of that tree's cells, which stay
 * in cache.
 *
 * Sums: each row keeps the four partial sums of gather.h -- trees m with
 * m < 4 * (M / 4) go to sum m mod 4, the rest to sum 0, each in increasing
 * m -- combined as (s0 + s1) + (s2 + s3).  Every addition is the one
 * mt_gather performs on the row-major table, in the same order, so the two
 * give bitwise equal f, whatever the block size and thread count.
 */
#ifndef MT_CGBLOCK_H
#define MT_CGBLOCK_H

#include <stddef.h>
#include <stdint.h>

/*
 * One block's part of the table: out[m * nb + r] = pos[act[rows[r] * M + m]]
 * for r < nb, m < M (act the row-major active-node table, pos the compact
 * position of every active node).
 */
void mt_cgblock_table(const int32_t *act, size_t M, const int64_t *rows, size_t nb,
                      const int32_t *pos, int32_t *out);

/*
 * One block's products: f[rows[r] * K + l] = scale * sum_m x[tab[m * nb + r] * K + l]
 * for r < nb, l < K (x interleaved: K values per compact position), summed
 * as described above.  acc is scratch of 4 * nb * K doubles.  A block of
 * one row (nb = 1) is summed by mt_gather (gather.h) in registers: with
 * blocks of one row the table is the row-major one, which is faster while
 * x fits in cache.
 */
void mt_cgblock_gather(const int32_t *tab, size_t M, size_t nb, const double *x,
                       size_t K, double scale, const int64_t *rows, double *f,
                       double *acc);

#endif /* MT_CGBLOCK_H */
