/*
 * fourier.c -- cos/sin pairs with a shared range reduction (fourier.h).
 *
 * Reduction: k = round(t * 2/pi), r = t - k*pio2_1 - k*pio2_2 - k*pio2_3
 * with pi/2 split into three parts whose leading part has 33 significant
 * bits (fdlibm's __ieee754_rem_pio2 constants), exact for |k| < 2^20.
 * Kernels: fdlibm's __kernel_sin / __kernel_cos polynomials.
 */
#include "fourier.h"

#include <math.h>

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

void mt_cos_sin_pairs(const double *restrict t, size_t n, double scale, double *restrict out)
{
    for (size_t i = 0; i < n; i++) {
        /* Out-of-range (or NaN) arguments are computed as 0 here, which keeps
         * the integer conversion below defined; the second loop redoes them. */
        double x = fabs(t[i]) <= MT_SINCOS_FAST_MAX ? t[i] : 0.0;
        double kd = (x * INV_PIO2 + ROUND_MAGIC) - ROUND_MAGIC;
        double r = ((x - kd * PIO2_1) - kd * PIO2_2) - kd * PIO2_3;
        double z = r * r;
        double s = r + r * z * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))));
        double c = 1.0 - 0.5 * z + z * z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))));
        long long q = (long long)kd & 3;
        double swap = (double)(q & 1);
        double sin_v = swap * c + (1.0 - swap) * s;
        double cos_v = swap * s + (1.0 - swap) * c;
        double sin_sign = 1.0 - 2.0 * (double)((q >> 1) & 1);
        double cos_sign = 1.0 - 2.0 * (double)(((q + 1) >> 1) & 1);
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
