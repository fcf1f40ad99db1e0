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

#endif /* MT_FOURIER_H */
