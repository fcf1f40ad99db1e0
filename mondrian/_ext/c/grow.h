/*
 * grow.h -- the Mondrian sampler: grows the trees of a forest on its points
 * (paper Sec. 2.2), separate from their storage (forest.h) as scikit-learn
 * separates TreeBuilder from Tree.
 *
 * Trees are independent: tree m draws only from rngs[m], and the trees are
 * grown in parallel, each into its own scratch storage, then copied into the
 * forest's global numbering in tree order (straight from the scratch where
 * the tree's place is known, else packed first: grow.c).  The result does
 * not depend on the number of threads.  An extension that fails leaves the
 * forest unchanged; a fit that fails leaves it without trees (its points
 * stay).
 *
 * A forest with a transform (forest.h) grows tree m on its points in tree
 * m's coordinates: each tree's rotated copy of the points (N x D) lives in
 * the scratch of the thread growing it, only while it grows.
 */
#ifndef MT_GROW_H
#define MT_GROW_H

#include "forest.h"
#include "numpy/random/bitgen.h"

/*
 * Give every tree its own uniformly random rotation about the centre
 * `center` (D finite values; the forest's transform, forest.h): Q_m is
 * Haar-distributed on SO(D), drawn from rngs[m] alone -- D^2 standard
 * normals (Box-Muller), orthonormalised by Gram-Schmidt (twice), which is
 * the Q of their QR factorisation with R's diagonal positive, Haar on O(D)
 * (Mezzadri 2007); its last column is negated when its determinant is -1,
 * which keeps the law invariant under rotations, hence Haar on SO(D).
 * Trees are drawn in parallel; the result does not depend on n_threads.
 * Any previous transform is replaced; on failure the forest is unchanged.
 * Call it before mt_forest_fit, which then grows tree m on the points in
 * its coordinates.
 */
int mt_forest_draw_rotations(mt_forest *f, const double *center, bitgen_t *const *rngs,
                             int n_threads);

/*
 * Grow every tree from scratch on the forest's points (n_points >= 1) up to
 * `lifetime` (finite, >= 0); any previous trees are discarded (at once: on
 * failure the forest has none).  The node
 * arrays get room for `spare_nodes` more nodes (for an insertion to come:
 * it then grows the trees in place instead of moving every array to a
 * larger block; zero pages, committed only when written), or, if that
 * much cannot be allocated, for the trees alone.
 */
int mt_forest_fit(mt_forest *f, double lifetime, bitgen_t *const *rngs, int n_threads,
                  size_t spare_nodes);

/*
 * Continue every tree from the forest's lifetime up to `lifetime` (>= it).
 * By memorylessness of the exponential clocks a leaf that had not split by
 * the old lifetime splits at old + Exp(linear dimension).  Node ids within
 * each tree are kept and new nodes appended, so an old global id j of tree
 * m becomes j + (new node_offset[m] - old node_offset[m]).  Each tree's row
 * of perm is permuted in place; new splits fall inside old leaves, so every
 * old node's slice keeps its set of points.  On failure the trees, the
 * lifetime and every node's points are as before; only the order of the
 * points within an old leaf's slice of perm may differ.
 */
int mt_forest_extend(mt_forest *f, double lifetime, bitgen_t *const *rngs, int n_threads);

#endif /* MT_GROW_H */
