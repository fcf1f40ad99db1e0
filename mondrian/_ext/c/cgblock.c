#include "cgblock.h"

#include <string.h>

#include "gather.h"

/* The copy runs in tiles of MT_CGBLOCK_ROWS rows by MT_CGBLOCK_TREES
 * trees: within a tile, tree by tree, the rows' entries are written in
 * order (one run of the output per tree) while the tile's lines of act
 * (two per row) stay in cache.  Writing tree by tree within a row instead
 * scatters the writes and was 2.5x slower. */
#define MT_CGBLOCK_ROWS 64
#define MT_CGBLOCK_TREES 32

void mt_cgblock_table(const int32_t *act, size_t M, const int64_t *rows, size_t nb,
                      const int32_t *pos, int32_t *out)
{
    for (size_t r0 = 0; r0 < nb; r0 += MT_CGBLOCK_ROWS) {
        const size_t r1 = r0 + MT_CGBLOCK_ROWS < nb ? r0 + MT_CGBLOCK_ROWS : nb;
        for (size_t m0 = 0; m0 < M; m0 += MT_CGBLOCK_TREES) {
            const size_t m1 = m0 + MT_CGBLOCK_TREES < M ? m0 + MT_CGBLOCK_TREES : M;
            for (size_t m = m0; m < m1; ++m) {
                for (size_t r = r0; r < r1; ++r) {
                    out[m * nb + r] = pos[act[(size_t)rows[r] * M + m]];
                }
            }
        }
    }
}

/* acc[c * nb * K + r * K + l] += x[t[r] * K + l] for one tree (chain c). */
static void add_tree(const int32_t *restrict t, size_t nb, const double *restrict x,
                     size_t K, double *restrict acc)
{
    size_t r, l;
    switch (K) {
    case 1:
        for (r = 0; r < nb; ++r) {
            acc[r] += x[t[r]];
        }
        break;
    case 2:
        for (r = 0; r < nb; ++r) {
            const double *v = x + (size_t)t[r] * 2;
            acc[2 * r] += v[0];
            acc[2 * r + 1] += v[1];
        }
        break;
    default:
        for (r = 0; r < nb; ++r) {
            const double *v = x + (size_t)t[r] * K;
            double *a = acc + r * K;
            for (l = 0; l < K; ++l) {
                a[l] += v[l];
            }
        }
        break;
    }
}

void mt_cgblock_gather(const int32_t *tab, size_t M, size_t nb, const double *x,
                       size_t K, double scale, const int64_t *rows, double *f,
                       double *acc)
{
    const size_t M4 = M & ~(size_t)3, len = nb * K;
    double *s0 = acc, *s1 = acc + len, *s2 = acc + 2 * len, *s3 = acc + 3 * len;
    if (nb == 1) {
        /* one row: the table's row is the row-major one, summed in registers */
        double *out = f + (size_t)rows[0] * K;
        mt_gather(tab, M, x, K, out);
        for (size_t l = 0; l < K; ++l) {
            out[l] = out[l] * scale;
        }
        return;
    }
    memset(acc, 0, 4 * len * sizeof(double));
    for (size_t m = 0; m < M4; m += 4) {
        add_tree(tab + m * nb, nb, x, K, s0);
        add_tree(tab + (m + 1) * nb, nb, x, K, s1);
        add_tree(tab + (m + 2) * nb, nb, x, K, s2);
        add_tree(tab + (m + 3) * nb, nb, x, K, s3);
    }
    for (size_t m = M4; m < M; ++m) {
        add_tree(tab + m * nb, nb, x, K, s0);
    }
    for (size_t r = 0; r < nb; ++r) {
        double *out = f + (size_t)rows[r] * K;
        for (size_t l = 0; l < K; ++l) {
            const size_t k = r * K + l;
            out[l] = ((s0[k] + s1[k]) + (s2[k] + s3[k])) * scale;
        }
    }
}
