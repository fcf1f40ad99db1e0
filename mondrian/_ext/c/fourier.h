/*
 * fourier.h -- cos/sin feature pairs for random Fourier features.
 *
 * One range reduction serves both cos and sin (fdlibm-style Cody-Waite
 * reduction by pi/2 and the fdlibm minimax polynomials on [-pi/4, pi/4]),
 * in a branch-free loop the compiler can vectorise; arguments too large for
 * the three-part reduction (|t| > MT_SINCOS_FAST_MAX) fall back to libm.
 * Absolute error below 1e-15 for |t| <= MT_SINCOS_FAST_MAX.
 */
#ifndef MT_FOURIER_H
#define MT_FOURIER_H

#include "common.h"

#define MT_SINCOS_FAST_MAX 1.0e5

/*
 * out[2*i] = scale * cos(t[i]), out[2*i + 1] = scale * sin(t[i]) for i < n.
 * t and out must not overlap.  n_threads > 1 splits the work over OpenMP
 * threads (each element is computed alone, so the result does not depend
 * on the thread count); the caller releases the pool (threads.h).
 */
void mt_cos_sin_pairs(const double *t, size_t n, double scale, int n_threads, double *out);

/*
 * The features of the sparse-spectrum GP straight from the inputs:
 * out (n x 2p, row-major) gets, in columns 2j and 2j + 1, scale * cos and
 * scale * sin of the angle t_ij = sum_d X[i, d] * omega[d, j] (X n x D and
 * omega D x p, row-major; the sum in order d = 0, 1, ...), computed a tile of
 * rows at a time so that the angles never go to memory.  With y (length n)
 * not NULL, also phity[k] += sum_i y[i] * out[i, k], row after row, on one
 * thread; else n_threads > 1 splits the rows over OpenMP threads (each
 * element is computed alone: the result does not depend on the thread
 * count; the caller releases the pool, threads.h).  X, omega, y, phity and
 * out must not overlap.  MT_OK, MT_ERR_ARG (D = 0 with n, p > 0),
 * MT_ERR_NOMEM or MT_ERR_OVERFLOW.
 */
int mt_fourier_features(const double *X, size_t n, size_t D, const double *omega, size_t p,
                        double scale, const double *y, double *phity, int n_threads,
                        double *out);

/*
 * The pairing of the SSGP gradient with the feature derivatives, row by row:
 * with E and phi n x 2p (row-major) and, if y is not NULL, the rank-one
 * correction E - y alpha^T (alpha of length 2p) applied on the fly,
 * H[i, j] = E'[i, 2j+1] phi[i, 2j] - E'[i, 2j] phi[i, 2j+1]  (n x p).
 */
void mt_ssgp_pairing(const double *E, const double *phi, size_t n, size_t p, const double *y,
                     const double *alpha, double *H);

#endif /* MT_FOURIER_H */
