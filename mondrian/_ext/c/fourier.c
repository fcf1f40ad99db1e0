/*
 * fourier.c -- cos/sin pairs with a shared range reduction (fourier.h).
 *
 * Reduction: k = round(t * 2/pi), r = t - k*pio2_1 - k*pio2_2 - k*pio2_3
 * with pi/2 split into three parts whose leading part has 33 significant
 * bits (fdlibm's __ieee754_rem_pio2 constants), exact for |k| < 2^20.
 * Kernels: fdlibm's __kernel_sin / __kernel_cos polynomials.
 */
#include "fourier.h"
#include "common.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static const double INV_PIO2 = 6.36619772367581382433e-01;
static const double PIO2_1 = 1.57079632673412561417e+00;
static const double PIO2_2 = 6.07710050630396597660e-11;
static const double PIO2_3 = 2.02226624871116645580e-21;
/* 1.5 * 2^52: adding and subtracting it rounds to the nearest integer. */
static const double ROUND_MAGIC = 6755399441055744.0;

static const double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03,
                    S3 = -1.98412698298579493134e-04, S4 = 2.75573137070700676789e-06,
                    S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
static const double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03,
                    C3 = 2.48015872894767294178e-05, C4 = -2.75573143513906633035e-07,
                    C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;

MT_SIMD_CLONES
static void cos_sin_block(const double *restrict t, size_t n, double scale,
                          double *restrict out)
{
    for (size_t i = 0; i < n; i++) {
        /* Out-of-range (or NaN) arguments give meaningless values here, in
         * floating point only (no conversion to an integer, so nothing is
         * undefined); the second loop redoes them.  No test in this loop
         * keeps it vectorisable under the default -ftrapping-math. */
        double x = t[i];
        double kd = (x * INV_PIO2 + ROUND_MAGIC) - ROUND_MAGIC;
        double r = ((x - kd * PIO2_1) - kd * PIO2_2) - kd * PIO2_3;
        double z = r * r;
        double s = r + r * z * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))));
        double c = 1.0 - 0.5 * z + z * z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))));
        /* The quadrant q = kd mod 4 and its bits in floating point (kd is an
         * integer-valued double; each floor is a round-to-nearest of a value
         * 0.125 or more from a tie), so that the loop vectorises. */
        double q = kd - 4.0 * ((kd * 0.25 - 0.375 + ROUND_MAGIC) - ROUND_MAGIC);
        double high = (q * 0.5 - 0.25 + ROUND_MAGIC) - ROUND_MAGIC;  /* q >> 1 */
        double swap = q - 2.0 * high;                                 /* q & 1 */
        double sin_v = swap * c + (1.0 - swap) * s;
        double cos_v = swap * s + (1.0 - swap) * c;
        double sin_sign = 1.0 - 2.0 * high;
        /* cos is negative in quadrants 1 and 2: (q >> 1) xor (q & 1). */
        double cos_sign = 1.0 - 2.0 * (high + swap - 2.0 * high * swap);
        out[2 * i] = scale * cos_sign * cos_v;
        out[2 * i + 1] = scale * sin_sign * sin_v;
    }
    /* Arguments beyond the exact reduction range: recompute with libm. */
    for (size_t i = 0; i < n; i++) {
        if (!(fabs(t[i]) <= MT_SINCOS_FAST_MAX)) {
            out[2 * i] = scale * cos(t[i]);
            out[2 * i + 1] = scale * sin(t[i]);
        }
    }
}

/* Pairs per OpenMP chunk: 64 KiB of angles, enough to amortise the
 * scheduling, small enough to split a 4096 x 256 block over the threads. */
#define MT_SINCOS_CHUNK ((size_t)8192)

void mt_cos_sin_pairs(const double *t, size_t n, double scale, int n_threads, double *out)
{
    size_t n_chunks = (n + MT_SINCOS_CHUNK - 1) / MT_SINCOS_CHUNK;
    if (n_threads <= 1 || n_chunks <= 1) {
        cos_sin_block(t, n, scale, out);
        return;
    }
    int nt = n_chunks < (size_t)n_threads ? (int)n_chunks : n_threads;
    (void)nt;
    /* Each element is computed alone, so the result does not depend on
     * the number of threads. */
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static)
#endif
    for (long long c = 0; c < (long long)n_chunks; c++) {
        size_t start = (size_t)c * MT_SINCOS_CHUNK;
        size_t len = n - start < MT_SINCOS_CHUNK ? n - start : MT_SINCOS_CHUNK;
        cos_sin_block(t + start, len, scale, out + 2 * start);
    }
}

/* ------------------------------------------------------------------------
 * Features of the sparse-spectrum GP straight from the inputs (fourier.h).
 */

/* Rows per tile: the tile's angles (8 x p doubles, 16 KiB at p = 256) stay
 * in L1/L2 between their computation and the cos/sin pass. */
#define MT_FEATURE_TILE ((size_t)8)

MT_SIMD_CLONES
static void angles_tile(const double *restrict X, size_t rows, size_t D,
                        const double *restrict omega, size_t p, double *restrict t)
{
    for (size_t r = 0; r < rows; r++) {
        const double *x = X + r * D;
        double *tr = t + r * p;
        double x0 = x[0];
        for (size_t j = 0; j < p; j++) {
            tr[j] = x0 * omega[j];
        }
        for (size_t d = 1; d < D; d++) {
            double xd = x[d];
            const double *od = omega + d * p;
            for (size_t j = 0; j < p; j++) {
                tr[j] += xd * od[j];
            }
        }
    }
}

MT_SIMD_CLONES
static void accumulate_rows(const double *restrict phi, const double *restrict y, size_t rows,
                            size_t width, double *restrict acc)
{
    for (size_t r = 0; r < rows; r++) {
        double yr = y[r];
        const double *row = phi + r * width;
        for (size_t k = 0; k < width; k++) {
            acc[k] += yr * row[k];
        }
    }
}

int mt_fourier_features(const double *X, size_t n, size_t D, const double *omega, size_t p,
                        double scale, const double *y, double *phity, int n_threads,
                        double *out)
{
    if (n == 0 || p == 0) {
        return MT_OK;
    }
    if (D == 0) {
        return MT_ERR_ARG;
    }
    size_t n_tiles = (n + MT_FEATURE_TILE - 1) / MT_FEATURE_TILE;
    /* The row sums y^T phi are accumulated row after row on one thread, so
     * that their rounding does not depend on a thread count. */
    int nt = (y != NULL || n_threads <= 1) ? 1 : n_threads;
    if ((size_t)nt > n_tiles) {
        nt = (int)n_tiles;
    }
    size_t per_thread, total;
    if (mt_mul_size(MT_FEATURE_TILE, p, &per_thread) != MT_OK ||
        mt_mul_size(per_thread, (size_t)nt, &total) != MT_OK ||
        mt_mul_size(total, sizeof(double), &total) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    double *angles = malloc(total);
    if (angles == NULL) {
        return MT_ERR_NOMEM;
    }
    size_t width = 2 * p;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
    for (long long k = 0; k < (long long)n_tiles; k++) {
        int thread = 0;
#ifdef _OPENMP
        thread = omp_get_thread_num();
#endif
        double *t = angles + (size_t)thread * per_thread;
        size_t start = (size_t)k * MT_FEATURE_TILE;
        size_t rows = n - start < MT_FEATURE_TILE ? n - start : MT_FEATURE_TILE;
        angles_tile(X + start * D, rows, D, omega, p, t);
        cos_sin_block(t, rows * p, scale, out + start * width);
        if (y != NULL) {
            accumulate_rows(out + start * width, y + start, rows, width, phity);
        }
    }
    free(angles);
    return MT_OK;
}

MT_SIMD_CLONES
static void pair_rows(const double *restrict E, const double *restrict phi, size_t n, size_t p,
                      const double *restrict y, const double *restrict alpha,
                      double *restrict H)
{
    size_t width = 2 * p;
    for (size_t i = 0; i < n; i++) {
        const double *e = E + i * width;
        const double *f = phi + i * width;
        double *h = H + i * p;
        double yi = y != NULL ? y[i] : 0.0;
        if (y != NULL) {
            for (size_t j = 0; j < p; j++) {
                double e_cos = e[2 * j] - yi * alpha[2 * j];
                double e_sin = e[2 * j + 1] - yi * alpha[2 * j + 1];
                h[j] = e_sin * f[2 * j] - e_cos * f[2 * j + 1];
            }
        } else {
            for (size_t j = 0; j < p; j++) {
                h[j] = e[2 * j + 1] * f[2 * j] - e[2 * j] * f[2 * j + 1];
            }
        }
    }
}

void mt_ssgp_pairing(const double *E, const double *phi, size_t n, size_t p, const double *y,
                     const double *alpha, double *H)
{
    pair_rows(E, phi, n, p, y, alpha, H);
}
