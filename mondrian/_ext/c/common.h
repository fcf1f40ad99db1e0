/*
 * common.h -- shared definitions of the mondrian C core.
 *
 * The C core never sees Python objects.  Every fallible function returns an
 * int: MT_OK (0) on success or one of the negative codes below; the Cython
 * layer turns them into Python exceptions after it re-acquires the GIL.
 */
#ifndef MT_COMMON_H
#define MT_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    MT_OK = 0,
    MT_ERR_NOMEM = -1,     /* an allocation failed                       */
    MT_ERR_ARG = -2,       /* an argument is out of its valid range      */
    MT_ERR_OVERFLOW = -3,  /* a size computation would overflow size_t   */
    MT_ERR_STATE = -4      /* a stored structure is inconsistent         */
};

/* Node and point indices: signed 64-bit, so that numpy sees them as int64. */
typedef int64_t mt_index;

#define MT_NONE ((mt_index)-1)

/* *out = a * b, or MT_ERR_OVERFLOW. */
static inline int mt_mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) {
        return MT_ERR_OVERFLOW;
    }
    *out = a * b;
    return MT_OK;
}

/*
 * Large blocks: ask the OS to back the whole 2 MB-aligned pages inside
 * [p, p + bytes) with transparent huge pages (Linux madvise MADV_HUGEPAGE,
 * for that range only; elsewhere, or where the system does not offer them,
 * nothing).  A fresh block is committed page by page as it is first
 * written, each page fault zeroing 4 KB: a forest's node arrays and growth
 * buffers (tens of MB per fit) took 5.4 thousand faults when growing 50
 * trees on the CPU data, a quarter of the CPU time spent in the kernel;
 * with the advice 2.1-2.5 thousand.  numpy advises its large arrays so.
 * The advice is for fresh blocks that are never realloc'd: realloc moves
 * a large block's pages (mremap), and moving advised pages to an address
 * not aligned like them splits them -- growing a forest's node arrays so
 * for an insertion took 290-420 ms where a fresh advised block and a copy
 * take 80-100 ms (mt_forest_extend_nodes).
 * mt_alloc_large: a block of `bytes` bytes with that advice when it has
 * MT_HUGE_PAGE bytes or more, aligned to a huge page on Linux
 * (posix_memalign), so that a block of whole huge pages (grow.c's chunks)
 * is huge pages throughout: malloc's block starts 16 bytes into a small
 * page, and the parts before its first and after its last huge-page
 * boundary fault 4 KB at a time -- a 4 MB block was half small pages.
 * Free it with free() or mt_free_large.
 */
#define MT_HUGE_PAGE ((size_t)1 << 21)
void mt_advise_huge(void *p, size_t bytes);

/* free() of a block of `bytes` bytes whose pages are first returned to the
 * system (madvise MADV_DONTNEED on Linux), so that the memory a large block
 * held is released at once whether or not the allocator mapped it on its
 * own (a block kept in the heap stays resident after free otherwise). */
void mt_free_large(void *p, size_t bytes);

void *mt_alloc_large(size_t bytes);

/*
 * Grow *array from old_n to new_n elements of `size` bytes (new_n >= old_n),
 * the new tail zeroed.  A fresh zeroed block is allocated and the old
 * contents copied: calloc hands out untouched zero pages, so reserving a
 * large capacity does not commit it (realloc + memset of the tail would).
 * On failure *array is unchanged.
 */
static inline int mt_grow_zeroed(void **array, size_t old_n, size_t new_n, size_t size)
{
    size_t bytes;
    void *p;
    if (mt_mul_size(new_n, size, &bytes) != MT_OK) {
        return MT_ERR_OVERFLOW;
    }
    p = calloc(new_n > 0 ? new_n : 1, size);
    if (p == NULL) {
        return MT_ERR_NOMEM;
    }
    if (bytes >= MT_HUGE_PAGE) {
        mt_advise_huge(p, bytes);
    }
    if (*array != NULL && old_n > 0) {
        memcpy(p, *array, old_n * size);
    }
    free(*array);
    *array = p;
    return MT_OK;
}

/* A request for the cache line holding *p ahead of use: rw 0 to read, 1
 * to write; locality 0-3, how long to keep it.  A hint, nothing where the
 * compiler has no such builtin. */
#if defined(__GNUC__) || defined(__clang__)
#define MT_PREFETCH(p, rw, locality) __builtin_prefetch((p), (rw), (locality))
#else
#define MT_PREFETCH(p, rw, locality) ((void)(p))
#endif

static inline double mt_min(double a, double b) { return a < b ? a : b; }
static inline double mt_max(double a, double b) { return a > b ? a : b; }

/*
 * MT_SIMD_CLONES: compile a function twice, for the baseline (SSE2) and for
 * AVX2, the loader picking the clone the CPU runs (GCC/clang target_clones).
 * Neither target has fused multiply-add and C99 mode turns contraction off,
 * so both clones give bitwise equal results.
 */
#if defined(__x86_64__) && defined(__ELF__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define MT_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef MT_SIMD_CLONES
#define MT_SIMD_CLONES
#endif

#endif /* MT_COMMON_H */
