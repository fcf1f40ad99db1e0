/*
 * insert.h -- online learning: insert a batch of new points into every tree
 * of a grown forest by the conditional Mondrian (paper Sec. 2.4 and 5;
 * Lakshminarayanan, Roy & Teh 2014, ExtendMondrianBlock, on data boxes).
 *
 * The walk.  For one point x and one tree, from the root, with t0 the split
 * time of the current node's parent (0 at the root), at node j with data
 * box B_j and split time tau_j (+inf at a leaf):
 *
 *   e = sum_d e_d, e_d = dist(x_d, [l_jd, u_jd])   (the gaps of x to B_j)
 *   if e > 0: draw E ~ Exp(e); if t = t0 + E < tau_j and t <= lifetime,
 *       insert a new parent p above j that splits at t, in dimension d with
 *       probability e_d / e, at a cut uniform in the gap between x_d and
 *       B_j's side; p's children are j and a new leaf holding x alone (box
 *       the single point x, linear dimension 0: it never splits); stop.
 *   grow B_j to contain x; at a leaf, x joins it and the walk stops;
 *   otherwise continue into the child on x's side of the cut, t0 = tau_j.
 *
 * Why the result is a batch tree on all points (the distribution of
 * grow.h's sampler on the old points and x).  In the batch sampler, node j
 * on the box B' = B_j + x (the smallest box holding both) splits at
 * t0 + Exp(L(B')), L(B') = L(B_j) + e, in dimension d with probability
 * proportional to its extent, at a cut uniform in it.  Split the extent of
 * B' in dimension d into the part inside B_j (length u_d - l_d) and the
 * gap (length e_d): the first cut is the first of two independent
 * exponential clocks, one of rate L(B_j) for cuts inside B_j (dimension
 * proportional to u_d - l_d, cut uniform in [l_d, u_d]) and one of rate e
 * for cuts in the gap (dimension proportional to e_d, cut uniform in the
 * gap).  A cut in the gap separates x from all of B_j's points; a cut
 * inside B_j leaves x on one side with some of them.  The existing tree is
 * a draw of the first clock (conditioned on the data, which by
 * projectivity, Sec. 2.3, is the Mondrian restricted to B_j): it fired at
 * tau_j (or, at a leaf, not before the lifetime).  The insertion draws the
 * second clock, independent of the first.  If it fires first (t < tau_j,
 * and t <= lifetime), the batch tree's first cut is the gap cut at t: a
 * node p holding B_j + x splits at t, x alone on one side; on the other
 * side is B_j's node, started at t, whose own first cut is still at tau_j
 * (memorylessness: given the first clock did not fire in [t0, t), its
 * residual time from t is again Exp(L(B_j)), and that is the existing
 * clock's value), and whose subtree is unchanged.  If the second clock
 * does not fire first, the first cut is the existing one, at tau_j with its
 * dimension and cut, now on the larger box; x goes to its side and the
 * argument repeats in the child, started at tau_j, whose data box is the
 * child's box plus x.  At a leaf the existing clock is known only to
 * exceed the lifetime, so the gap clock is compared with the lifetime; if
 * it does not fire by then neither clock has, and the leaf holds x too.
 * Conditioning on the existing tree is conditioning on the first clock
 * only, so the joint law of (old tree, insertion) is the batch law on the
 * old points plus x.  Points are inserted one after another, each into the
 * tree left by the previous one, so a batch of points, in any order and in
 * batches of any size, gives a batch tree on all of them.
 *
 * Columns.  At any lifetime lambda an insertion never moves an old point
 * to another cell: a new parent p above j holds exactly j's old points
 * plus x, so either p is active at lambda in place of j (t > lambda; j's
 * column becomes p's, with the same old points) or p is not (t <= lambda;
 * the cells of the old points are unchanged and x's new leaf is a new
 * column).  A cell is never replaced by two.  So every old column keeps its
 * points and the new columns are zero for every old point.  p takes j's
 * column key (forest.h), each new leaf a fresh key larger than every
 * existing one, assigned point by point (tree by tree within a point), so
 * columns numbered by key keep their index and new cells come last,
 * whatever the batch sizes.
 *
 * Storage.  Each tree's links, times, cuts, slices and keys are copied
 * into a scratch (local ids); its boxes are not: the walk enlarges the old
 * nodes' boxes where they are, in the forest, and writes the new nodes'
 * boxes into the scratch.  The points are inserted (new nodes appended),
 * then the tree is renumbered once per batch in the order grow.c gives a
 * batch tree (children numbered in pairs as their parent is reached by a
 * depth-first walk, left first) -- root first, a parent's id below its
 * children's, tree m's nodes contiguous at node_offset[m] -- and its point
 * permutation is rebuilt in one pass by leaf (each leaf's old slice, then
 * the new points that joined it), so every node's points are again one
 * slice [start, end).  Every reader of the forest (lookup.h, features.h,
 * events.h, the path learners) is thus correct after an insertion as after
 * a batch fit.  The boxes are then moved within the forest's own arrays,
 * last tree first (a tree only gains nodes, so its new rows overlap no row
 * of an earlier tree still to be moved; its own old rows go through a
 * buffer), lower and upper on two threads.  Every allocation, including
 * the forest's capacity for the worst case (every point creating two nodes
 * in every tree, within max_nodes), is made before the walk, the first
 * change to the forest.  Trees are processed in parallel, tree m drawing
 * only from rngs[m], and packed in tree order: the result does not depend
 * on the number of threads.  The forest's node capacity grows to the
 * worst case or by half (mt_forest_extend_nodes), its point capacity by
 * doubling.
 *
 * Cost: O(depth) per point and tree, plus O(nodes + points) per tree and
 * batch for the renumbering, the moves and the permutation (so batches,
 * not single points, are the unit of work).  The walk is bound by the
 * latency of the boxes' lines (D = 21: six lines a node, lower and upper),
 * so insert.c takes the path by the cuts first (small arrays, in cache),
 * finds by bisection the prefix of nodes whose box holds x (a child's box
 * lies in its parent's; the walk draws nothing there) and reads the boxes
 * below it in path order, the next ones prefetched: the same draws and the
 * same tree.  CPU data, 50 trees, batches of 1000, 2000 and 2554 points
 * into full-depth trees on one thread: the walks 0.36-0.37 -> 0.30 s.
 * Interleaving the walks of 2, 4 or 8 trees on each thread instead, each
 * walk's next node prefetched while the others step, was slower (5553
 * points into 50 such trees: 0.58 s one tree at a time, 0.74-0.91,
 * 1.00-1.13 and 1.00-1.12 s): a thread then works on several trees' boxes
 * at once, which outgrow its L2 cache.  The boxes' moves copy each row
 * inline (a call to memmove per row of 168 bytes took about four times as long).
 * Memory during the call: a copy of every tree's node arrays but its boxes
 * (14 words a node), of its permutation (none if the forest dropped its
 * points), room for its new nodes' boxes, and one or two buffers of the
 * largest tree's boxes.
 */
#ifndef MT_INSERT_H
#define MT_INSERT_H

#include "forest.h"
#include "numpy/random/bitgen.h"

/*
 * Insert the n points X (n x D, row-major, finite) into every tree of the
 * grown forest f, append them to the forest's points (ids n_points ..
 * n_points + n - 1; if the forest dropped its points, only counted) and
 * give the nodes column keys (forest.h).
 *
 * max_nodes > 0 caps the trees: an insertion that would take a tree above
 * max_nodes nodes does not split; the point only enlarges the boxes on its
 * path and joins the leaf it reaches (its features stay exact: every point
 * lies in the boxes of its path).  A capped tree is no longer a Mondrian
 * tree on all the points; it is the tree the insertions had built when
 * the cap was reached, with boxes grown to hold every later point.
 * max_nodes = 0: no cap.  A rotated forest (forest.h) walks each tree with
 * the batch in that tree's coordinates (mt_forest_transform, into a scratch
 * of n x D per tree); the forest keeps the points as given.  Returns
 * MT_ERR_ARG for a forest without trees or for non-finite X; on any failure
 * the forest is unchanged.  n = 0 is a no-op.
 */
int mt_forest_insert(mt_forest *f, const double *X, size_t n, size_t max_nodes,
                     bitgen_t *const *rngs, int n_threads);

#endif /* MT_INSERT_H */
