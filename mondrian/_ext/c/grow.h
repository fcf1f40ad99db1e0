/*
 * grow.h -- the Mondrian sampler: grows the trees of a forest on its points
 * (paper Sec. 2.2), separate from their storage (forest.h) as scikit-learn
 * separates TreeBuilder from Tree.
 *
 * Trees are independent: tree m draws only from rngs[m], and the trees are
 * grown in parallel, each into its own scratch storage, then packed into the
 * forest's global numbering in tree order.  The result does not depend on
 * the number of threads.  Both functions leave the forest unchanged when
 * they fail.
 */
#ifndef MT_GROW_H
#define MT_GROW_H

#include "forest.h"
#include "numpy/random/bitgen.h"

/*
 * Grow every tree from scratch on the forest's points (n_points >= 1) up to
 * `lifetime` (finite, >= 0); any previous trees are discarded.
 */
int mt_forest_fit(mt_forest *f, double lifetime, bitgen_t *const *rngs, int n_threads);

/*
 * Continue every tree from the forest's lifetime up to `lifetime` (>= it).
 * By memorylessness of the exponential clocks a leaf that had not split by
 * the old lifetime splits at old + Exp(linear dimension).  Node ids within
 * each tree are kept and new nodes appended, so an old global id j of tree
 * m becomes j + (new node_offset[m] - old node_offset[m]).
 */
int mt_forest_extend(mt_forest *f, double lifetime, bitgen_t *const *rngs, int n_threads);

#endif /* MT_GROW_H */
