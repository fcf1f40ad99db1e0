/*
 * gather.h -- indexed sums for the products with Phi^T Phi of the CG path.
 *
 * Both passes of a product (f = Phi x over the rows of the active-node
 * table, then Phi^T f over the cells' point slices) are sums of an
 * interleaved vector v at indices idx[0..n): v[idx[k] * stride + off] holds
 * the value of alpha `off` (stride = number of alphas solved together).
 *
 * Every sum runs in one fixed order: four partial sums over k mod 4,
 * combined as (s0 + s1) + (s2 + s3).  The adds of the four chains overlap
 * instead of waiting on one accumulator, and the order depends neither on
 * the threads nor on which other alphas are summed alongside, so a path is
 * bitwise reproducible.  Two alphas are summed in one sweep over the
 * indices: their values are adjacent, so one index load serves both and the
 * compiler can add them as a pair.  (CGPath sums f = Phi x from a blocked
 * table instead, cgblock.h, with these partial sums in this order.)
 */
#ifndef MT_GATHER_H
#define MT_GATHER_H

#include <stddef.h>
#include <stdint.h>

/* sum_k v[idx[k] * stride + off] */
static inline double mt_gather_one(const int32_t *restrict idx, size_t n,
                                   const double *restrict v, size_t stride,
                                   size_t off)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    size_t k = 0;
    for (; k + 3 < n; k += 4) {
        s0 += v[(size_t)idx[k] * stride + off];
        s1 += v[(size_t)idx[k + 1] * stride + off];
        s2 += v[(size_t)idx[k + 2] * stride + off];
        s3 += v[(size_t)idx[k + 3] * stride + off];
    }
    for (; k < n; ++k) {
        s0 += v[(size_t)idx[k] * stride + off];
    }
    return (s0 + s1) + (s2 + s3);
}

/* The sums of mt_gather_one for off and off + 1, in one sweep (same order). */
static inline void mt_gather_two(const int32_t *restrict idx, size_t n,
                                 const double *restrict v, size_t stride,
                                 size_t off, double *restrict out)
{
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    double b0 = 0.0, b1 = 0.0, b2 = 0.0, b3 = 0.0;
    size_t k = 0;
    for (; k + 3 < n; k += 4) {
        const double *p0 = v + (size_t)idx[k] * stride + off;
        const double *p1 = v + (size_t)idx[k + 1] * stride + off;
        const double *p2 = v + (size_t)idx[k + 2] * stride + off;
        const double *p3 = v + (size_t)idx[k + 3] * stride + off;
        a0 += p0[0];
        b0 += p0[1];
        a1 += p1[0];
        b1 += p1[1];
        a2 += p2[0];
        b2 += p2[1];
        a3 += p3[0];
        b3 += p3[1];
    }
    for (; k < n; ++k) {
        const double *p0 = v + (size_t)idx[k] * stride + off;
        a0 += p0[0];
        b0 += p0[1];
    }
    out[0] = (a0 + a1) + (a2 + a3);
    out[1] = (b0 + b1) + (b2 + b3);
}

/* out[l] = sum_k v[idx[k] * stride + l] for l < stride. */
static inline void mt_gather(const int32_t *restrict idx, size_t n,
                             const double *restrict v, size_t stride,
                             double *restrict out)
{
    size_t l = 0;
    for (; l + 1 < stride; l += 2) {
        mt_gather_two(idx, n, v, stride, l, out + l);
    }
    if (l < stride) {
        out[l] = mt_gather_one(idx, n, v, stride, l);
    }
}

#endif /* MT_GATHER_H */
