/*
 * binning.h -- random binning features (Rahimi & Recht 2007) in C.
 *
 * A grid g has, per dimension d, a pitch p_gd > 0 and a shift s_gd; point x
 * falls into the bin with integer coordinates b_d = floor((x_d - s_gd) / p_gd)
 * (computed as (x_d - s_gd) * inv_pitch_gd).  Bins are identified exactly
 * (whole coordinate tuples are compared, hashes only speed up the search),
 * so two different bins never share a feature.
 *
 * All matrices are row-major; grids are processed in parallel with OpenMP
 * when available, with results independent of the number of threads.
 */
#ifndef MT_BINNING_H
#define MT_BINNING_H

#include "common.h"

/*
 * Number the occupied bins of every grid in first-seen order of the rows of
 * X (n x d).
 *
 * inv_pitch, shift : P x d.
 * rep   (out, P x n): rep[g*n + k] = a training row that lies in bin k of grid g
 *                     (the first such row); entries k >= n_bins[g] are unused.
 * n_bins (out, P)   : number of occupied bins of each grid.
 * codes (out, P x n): codes[g*n + i] = bin number of row i in grid g.
 *
 * Returns MT_OK, MT_ERR_NOMEM, MT_ERR_OVERFLOW, or MT_ERR_ARG when a bin
 * coordinate does not fit in 62 bits (pitch too small for the data range).
 */
int mt_binning_fit(const double *X, size_t n, size_t d,
                   const double *inv_pitch, const double *shift, size_t P,
                   int n_threads, mt_index *rep, mt_index *n_bins, mt_index *codes);

/*
 * Look up the rows of X (n x d) in the bins fitted on X_fit (n_fit x d).
 *
 * rep, bin_offsets : the fit's representatives, compacted: the bins of grid g
 *                    have global numbers bin_offsets[g] .. bin_offsets[g+1]-1
 *                    and representatives rep[bin_offsets[g] + k] (rows of X_fit).
 * codes (out, P x n): global bin number of row i in grid g, or MT_NONE when
 *                     the row falls into a bin no training row occupies.
 */
int mt_binning_lookup(const double *X_fit, size_t n_fit, const double *X, size_t n,
                      size_t d, const double *inv_pitch, const double *shift, size_t P,
                      const mt_index *rep, const mt_index *bin_offsets, int n_threads,
                      mt_index *codes);

#endif /* MT_BINNING_H */
