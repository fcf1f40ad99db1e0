/* lookup.c -- active cells of a Mondrian forest at a lifetime (see lookup.h). */
#include "lookup.h"

int mt_forest_active_columns(const mt_forest *f, double lambda,
                             mt_index *col_of_node, mt_index *col_offset)
{
    mt_index count = 0;
    if (!(lambda >= 0.0) || lambda > f->lifetime) {
        return MT_ERR_ARG;
    }
    for (size_t m = 0; m < f->n_trees; ++m) {
        col_offset[m] = count;
        for (mt_index j = f->node_offset[m]; j < f->node_offset[m + 1]; ++j) {
            col_of_node[j] = mt_forest_is_active(f, j, lambda) ? count++ : MT_NONE;
        }
    }
    col_offset[f->n_trees] = count;
    return MT_OK;
}
