/* entries.c -- per-block lists of (node, value) entries (see entries.h). */
#include "entries.h"

#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

mt_entries *mt_entries_new(size_t n_rows, size_t block_rows, size_t n_lists)
{
    if (n_rows == 0 || block_rows == 0 || n_lists == 0) {
        return NULL;
    }
    const size_t n_blocks = (n_rows + block_rows - 1) / block_rows;
    size_t count;
    if (mt_mul_size(n_blocks, n_lists, &count) != MT_OK) {
        return NULL;
    }
    mt_entries *e = malloc(sizeof(*e));
    if (e == NULL) {
        return NULL;
    }
    e->block = calloc(count, sizeof(mt_entry_block));
    if (e->block == NULL) {
        free(e);
        return NULL;
    }
    e->n_blocks = n_blocks;
    e->n_lists = n_lists;
    e->n_rows = n_rows;
    e->block_rows = block_rows;
    return e;
}

void mt_entries_free(mt_entries *entries)
{
    if (entries == NULL) {
        return;
    }
    for (size_t b = 0; b < entries->n_blocks * entries->n_lists; ++b) {
        free(entries->block[b].node);
        free(entries->block[b].value);
    }
    free(entries->block);
    free(entries);
}

void mt_entries_prefix(int64_t *offset, size_t n_pairs)
{
    for (size_t p = 0; p < n_pairs; ++p) {
        offset[p + 1] += offset[p];
    }
}

void mt_entries_gather(const mt_entries *entries, size_t l, size_t n_trees,
                       const int64_t *offset, mt_index *node, double *value, int n_threads)
{
    const size_t rows = entries->block_rows, n_rows = entries->n_rows;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads > 0 ? n_threads : 1)
#endif
    for (ptrdiff_t b = 0; b < (ptrdiff_t)entries->n_blocks; ++b) {
        const mt_entry_block *block = mt_entries_block(entries, (size_t)b, l);
        const size_t lo = (size_t)b * rows, hi = lo + rows < n_rows ? lo + rows : n_rows;
        size_t pos = 0;
        for (size_t m = 0; m < n_trees; ++m) {
            for (size_t i = lo; i < hi; ++i) {
                const size_t p = i * n_trees + m, k = (size_t)(offset[p + 1] - offset[p]);
                if (k > 0) {
                    memcpy(node + offset[p], block->node + pos, k * sizeof(mt_index));
                    memcpy(value + offset[p], block->value + pos, k * sizeof(double));
                    pos += k;
                }
            }
        }
    }
}
