/* scale.c -- the l1 distances between rows (see scale.h). */
#include "scale.h"

#include <math.h>

/* row[q] = sum over k of |x[k] - XT[k * n + q]| for q < len, the sums taken
 * in the order k = 0, 1, ..., d - 1 from 0.0 (four coordinates a sweep over
 * the row: one load and store of row[q] per four terms, the additions in
 * the same order). */
MT_SIMD_CLONES static void l1_row(const double *x, const double *XT, size_t n, size_t d,
                                  size_t len, double *restrict row)
{
    size_t k = 0;
    for (size_t q = 0; q < len; ++q) {
        row[q] = 0.0;
    }
    for (; k + 4 <= d; k += 4) {
        const double v0 = x[k], v1 = x[k + 1], v2 = x[k + 2], v3 = x[k + 3];
        const double *restrict c0 = XT + k * n, *restrict c1 = c0 + n;
        const double *restrict c2 = c1 + n, *restrict c3 = c2 + n;
        for (size_t q = 0; q < len; ++q) {
            double s = row[q];
            s += fabs(v0 - c0[q]);
            s += fabs(v1 - c1[q]);
            s += fabs(v2 - c2[q]);
            s += fabs(v3 - c3[q]);
            row[q] = s;
        }
    }
    for (; k < d; ++k) {
        const double v = x[k];
        const double *restrict c = XT + k * n;
        for (size_t q = 0; q < len; ++q) {
            row[q] += fabs(v - c[q]);
        }
    }
}

int mt_pair_l1(const double *X, size_t n, size_t d, double *out)
{
    if (n < 2) {
        return MT_OK;
    }
    if (X == NULL || out == NULL) {
        return MT_ERR_ARG;
    }
    size_t nd;
    if (mt_mul_size(n, d, &nd) != MT_OK || nd > SIZE_MAX / sizeof(double)) {
        return MT_ERR_OVERFLOW;
    }
    /* X transposed (d x n): the coordinate k of rows i+1..n-1 contiguous */
    double *XT = malloc((nd > 0 ? nd : 1) * sizeof(double));
    if (XT == NULL) {
        return MT_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; ++i) {
        for (size_t k = 0; k < d; ++k) {
            XT[k * n + i] = X[i * d + k];
        }
    }
    for (size_t i = 0; i + 1 < n; ++i) {
        /* pairs of the rows before i: sum over q < i of n - q - 1 */
        l1_row(X + i * d, XT + i + 1, n, d, n - i - 1, out + i * (n - 1) - i * (i - 1) / 2);
    }
    free(XT);
    return MT_OK;
}
