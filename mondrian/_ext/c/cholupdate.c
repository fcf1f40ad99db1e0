/*
 * cholupdate.c -- see cholupdate.h.
 */
#include "cholupdate.h"

#include <math.h>
#include <string.h>

int mt_chol_delete(double *L, size_t ld, size_t n, size_t c, double *work)
{
    if (c >= n || ld < n) {
        return MT_ERR_ARG;
    }
    /* Rank-1 update of the trailing block with v = L[c+1:n, c]. */
    const size_t m = n - c - 1;
    double *v = work;
    memcpy(v, L + (c + 1) + c * ld, m * sizeof(double));
    for (size_t k = 0; k < m; ++k) {
        double *col = L + (c + 1) + (c + 1 + k) * ld; /* column c+1+k, rows c+1.. */
        double lkk = col[k];
        if (!(lkk > 0.0)) {
            return MT_ERR_STATE;
        }
        double r = hypot(lkk, v[k]);
        double cs = r / lkk, sn = v[k] / lkk;
        col[k] = r;
        for (size_t i = k + 1; i < m; ++i) {
            double li = (col[i] + sn * v[i]) / cs;
            v[i] = cs * v[i] - sn * li;
            col[i] = li;
        }
    }
    /* Columns j < c: drop row c (shift rows c+1..n-1 up by one). */
    for (size_t j = 0; j < c; ++j) {
        double *col = L + j * ld;
        memmove(col + c, col + c + 1, (n - c - 1) * sizeof(double));
    }
    /* Columns j > c move to j-1, rows j..n-1 move to j-1..n-2. */
    for (size_t j = c + 1; j < n; ++j) {
        memmove(L + (j - 1) + (j - 1) * ld, L + j + j * ld, (n - j) * sizeof(double));
    }
    return MT_OK;
}

int mt_chol_rank1(double *L, size_t ld, size_t n, double *x, int down)
{
    const double sign = down ? -1.0 : 1.0;
    size_t k = 0;
    if (ld < n) {
        return MT_ERR_ARG;
    }
    while (k < n && x[k] == 0.0) {
        ++k;
    }
    for (; k < n; ++k) {
        double *col = L + k * ld; /* column k: rows k.. */
        const double lkk = col[k], xk = x[k];
        if (xk == 0.0) {
            continue; /* the identity rotation */
        }
        const double piv = lkk * lkk + sign * xk * xk;
        if (!(lkk > 0.0) || !(piv > 1e-14 * lkk * lkk)) {
            return MT_ERR_STATE;
        }
        /* the rotation (c, s) = (r, x_k) / L[k, k], its 1/c a product */
        const double r = sqrt(piv), cs = r / lkk, sn = xk / lkk, inv = lkk / r;
        const double ssn = sign * sn;
        double *restrict li = col, *restrict xi = x;
        col[k] = r;
        for (size_t i = k + 1; i < n; ++i) {
            const double v = (li[i] + ssn * xi[i]) * inv;
            xi[i] = cs * xi[i] - sn * v;
            li[i] = v;
        }
    }
    return MT_OK;
}

void mt_chol_forward(const double *L, size_t ld, size_t n, double *b)
{
    for (size_t j = 0; j < n; ++j) {
        const double *col = L + j * ld;
        double bj = b[j] / col[j];
        b[j] = bj;
        if (bj != 0.0) {
            for (size_t i = j + 1; i < n; ++i) {
                b[i] -= col[i] * bj;
            }
        }
    }
}

void mt_chol_backward(const double *L, size_t ld, size_t n, double *b)
{
    for (size_t jj = n; jj > 0; --jj) {
        const size_t j = jj - 1;
        const double *col = L + j * ld;
        double s = b[j];
        for (size_t i = j + 1; i < n; ++i) {
            s -= col[i] * b[i];
        }
        b[j] = s / col[j];
    }
}

int mt_chol_append(double *L, size_t ld, size_t n, const double *a, double d,
                   double *work)
{
    if (ld <= n) {
        return MT_ERR_ARG;
    }
    memcpy(work, a, n * sizeof(double));
    mt_chol_forward(L, ld, n, work);
    double s = 0.0;
    for (size_t j = 0; j < n; ++j) {
        s += work[j] * work[j];
    }
    double piv = d - s;
    if (!(piv > d * 1e-14)) {
        return MT_ERR_STATE;
    }
    for (size_t j = 0; j < n; ++j) {
        L[n + j * ld] = work[j];
    }
    L[n + n * ld] = sqrt(piv);
    return MT_OK;
}

double mt_chol_logdet(const double *L, size_t ld, size_t n)
{
    double s = 0.0;
    for (size_t k = 0; k < n; ++k) {
        s += log(L[k + k * ld]);
    }
    return 2.0 * s;
}
