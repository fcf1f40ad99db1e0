/*
 * events.h -- what the kernel-width path (Sec. 4.1) reads from a forest:
 * its split events in time order, sums of per-point values over every
 * node's points, and the nodes' slices restricted to training points.
 */
#ifndef MT_EVENTS_H
#define MT_EVENTS_H

#include "forest.h"

/* Number of split events (internal nodes): (n_nodes - n_trees) / 2. */
static inline size_t mt_forest_n_events(const mt_forest *f)
{
    return (f->n_nodes - f->n_trees) / 2;
}

/*
 * The split events sorted by split time, ties by global id (a parent, whose
 * id is smaller, before its child): the internal nodes into nodes[], and
 * their times, children and trees into the other arrays (each
 * mt_forest_n_events entries).  At lambda = times[e] event e replaces the
 * column of nodes[e] by those of left[e] and right[e].
 */
int mt_forest_events(const mt_forest *f, mt_index *nodes, double *times,
                     mt_index *left, mt_index *right, mt_index *tree);

/*
 * out[j] = sum of values[i] over the points i of node j (n_nodes entries),
 * as prefix sums along each tree's permutation: a node's sum is the
 * difference of two of them (summed in permutation order, from 0.0).
 */
int mt_forest_node_sums(const mt_forest *f, const double *values, double *out);

/*
 * The training points of every tree in permutation order and every node's
 * slice of them: ptrain (n_trees x n_train, int32) lists tree m's points i
 * with is_train[i] != 0 in the order of its permutation, and node j's
 * training points are ptrain[tree_of[j], tstart[j]:tend[j]].  n_train must
 * be the number of training points; point ids must fit in int32.
 */
int mt_forest_train_slices(const mt_forest *f, const uint8_t *is_train,
                           size_t n_train, int32_t *ptrain, mt_index *tstart,
                           mt_index *tend);

#endif /* MT_EVENTS_H */
