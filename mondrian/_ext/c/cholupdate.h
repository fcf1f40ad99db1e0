/*
 * cholupdate.h -- O(C^2) up- and down-dates of a dense Cholesky factor.
 *
 * The kernel-width path (Balog et al. 2016, Sec. 4.2.1) keeps the Cholesky
 * factor L of A = Phi^T Phi + alpha I while features are deleted (a cell
 * that splits) and appended (its two children).  L is lower triangular and
 * stored column-major with leading dimension ld >= n: entry (i, j), i >= j,
 * is L[i + j * ld], so columns are contiguous.  Entries above the diagonal
 * are never read.
 */
#ifndef MT_CHOLUPDATE_H
#define MT_CHOLUPDATE_H

#include "common.h"

/*
 * Delete row and column c of A (0 <= c < n) from its n x n factor in place;
 * the result is the (n-1) x (n-1) factor of A without row/column c.
 * With L = [L11 0 0; l21' l22 0; L31 l32 L33], the new factor is
 * [L11 0; L31 L33~] where L33~ L33~' = L33 L33' + l32 l32' (a rank-1 update,
 * Seeger 2004), followed by shifting the trailing block up and left.
 * work: n doubles.  Returns MT_ERR_ARG for c >= n, MT_ERR_STATE if the
 * factor has a non-positive diagonal entry.
 */
int mt_chol_delete(double *L, size_t ld, size_t n, size_t c, double *work);

/*
 * Append a row/column to A: a (length n) holds the new off-diagonal entries
 * A[n, 0:n], d the new diagonal entry.  Solves L l = a into row n of the
 * factor and sets L[n, n] = sqrt(d - l'l).  Requires ld > n.  Returns
 * MT_ERR_STATE if the enlarged matrix is not numerically positive definite
 * (d - l'l <= d * 1e-14), leaving the factor unchanged.  work: n doubles.
 */
int mt_chol_append(double *L, size_t ld, size_t n, const double *a, double d,
                   double *work);

/*
 * Rank-1 modification in place: L becomes the factor of L L' + x x' (down
 * = 0) or of L L' - x x' (down = 1).  x (n doubles) is overwritten.  The
 * rows before x's first nonzero entry do not change and are skipped.
 * O(n^2) (a rotation per column, Golub & Van Loan 6.5.4).  Returns
 * MT_ERR_STATE if a downdate would leave the matrix not numerically
 * positive definite (a pivot L[k, k]^2 - x[k]^2 <= 1e-14 L[k, k]^2); the
 * factor is then partly modified.
 */
int mt_chol_rank1(double *L, size_t ld, size_t n, double *x, int down);

/* Solve L x = b in place (b: n doubles). */
void mt_chol_forward(const double *L, size_t ld, size_t n, double *b);

/* Solve L' x = b in place (b: n doubles). */
void mt_chol_backward(const double *L, size_t ld, size_t n, double *b);

/* log det A = 2 sum_k log L[k, k]. */
double mt_chol_logdet(const double *L, size_t ld, size_t n);

#endif /* MT_CHOLUPDATE_H */
