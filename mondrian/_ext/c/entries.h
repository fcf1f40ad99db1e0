/*
 * entries.h -- variable-length lists of (node, value) entries per (point,
 * tree) pair, written by blocks of rows and gathered into pair order.
 *
 * A walk over points and trees goes by blocks of `block_rows` rows, tree by
 * tree within a block (a tree's upper nodes stay in cache for the block's
 * points), so a block's pairs are met tree-major while the output is
 * row-major: pair p = i * M + m holds entries offset[p] .. offset[p + 1] -
 * 1.  Each block appends its pairs' entries to its own buffer in walk order
 * (no thread shares a buffer) and stores each pair's count at offset[p +
 * 1]; mt_entries_prefix turns the counts into offsets, and
 * mt_entries_gather copies every block's entries to their places (entries.c).  Every
 * pair is thus walked once, instead of once to count its entries and again
 * to write them (the second walk's nodes being cache misses again).  Used
 * by the debiased forest's empty-cell events (debias.h) and the stored
 * paths of the forests' held-out points (mforest.h).
 */
#ifndef MT_ENTRIES_H
#define MT_ENTRIES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "forest.h"

/* One block's entries, in walk order. */
typedef struct {
    mt_index *node;
    double *value;
    size_t len, cap;
} mt_entry_block;

/* Room for `more` entries past len, doubling the capacity (from 1024). */
static inline int mt_entry_reserve(mt_entry_block *b, size_t more)
{
    if (more <= b->cap - b->len) {
        return MT_OK;
    }
    size_t cap = b->cap > 0 ? b->cap : 1024, bytes_node, bytes_value;
    while (cap - b->len < more) {
        if (cap > SIZE_MAX / 2) {
            return MT_ERR_OVERFLOW;
        }
        cap *= 2;
    }
    if (mt_mul_size(cap, sizeof(mt_index), &bytes_node) != MT_OK
        || mt_mul_size(cap, sizeof(double), &bytes_value) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    mt_index *node = realloc(b->node, bytes_node);
    if (node == NULL) {
        return MT_ERR_NOMEM;
    }
    b->node = node;
    double *value = realloc(b->value, bytes_value);
    if (value == NULL) {
        return MT_ERR_NOMEM;
    }
    b->value = value;
    b->cap = cap;
    return MT_OK;
}

/* Append (j, v). */
static inline int mt_entry_push(mt_entry_block *b, mt_index j, double v)
{
    if (b->len == b->cap) {
        int status = mt_entry_reserve(b, 1);
        if (status != MT_OK) {
            return status;
        }
    }
    b->node[b->len] = j;
    b->value[b->len] = v;
    ++b->len;
    return MT_OK;
}

/*
 * The entries of a walk over n_rows points, by blocks of block_rows rows,
 * in n_lists independent lists (one per lifetime, say): block b's list l
 * is block[b * n_lists + l].
 */
typedef struct mt_entries {
    mt_entry_block *block;
    size_t n_blocks, n_lists, n_rows, block_rows;
} mt_entries;

/* Empty lists for a walk of n_rows rows (n_rows, block_rows, n_lists > 0);
 * NULL if they cannot be allocated. */
mt_entries *mt_entries_new(size_t n_rows, size_t block_rows, size_t n_lists);

/* Frees the lists (NULL: nothing). */
void mt_entries_free(mt_entries *entries);

/* Block b's list l. */
static inline mt_entry_block *mt_entries_block(const mt_entries *entries, size_t b, size_t l)
{
    return &entries->block[b * entries->n_lists + l];
}

/* offset[0] = 0 and offset[p + 1] pair p's count on entry; the prefix sums
 * of the counts (offset[p] the first entry of pair p) on return. */
void mt_entries_prefix(int64_t *offset, size_t n_pairs);

/* Copy list l's entries of every block (rows in blocks, trees 0 ..
 * n_trees - 1 within a block, in walk order) to node and value at the
 * pairs' offsets. */
void mt_entries_gather(const mt_entries *entries, size_t l, size_t n_trees,
                       const int64_t *offset, mt_index *node, double *value, int n_threads);

#endif /* MT_ENTRIES_H */
