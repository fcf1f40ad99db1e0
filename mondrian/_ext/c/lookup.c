/* lookup.c -- active cells of a Mondrian tree at a lifetime (see lookup.h). */
#include "lookup.h"

mt_index mt_tree_active_columns(const mt_tree *tree, double lambda,
                                mt_index *col_of_node)
{
    const double *tau = tree->tau;
    const mt_index *parent = tree->parent;
    mt_index count = 0;
    for (size_t j = 0; j < tree->n_nodes; ++j) {
        mt_index p = parent[j];
        int active = tau[j] > lambda && (p == MT_NONE || tau[p] <= lambda);
        col_of_node[j] = active ? count++ : MT_NONE;
    }
    return count;
}
