/* memory.c -- large allocations backed by huge pages where the OS offers
 * them, and released at once when freed (see common.h, mt_advise_huge,
 * mt_free_large). */
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE under -std=c99 */

#include "common.h"

#include <stdint.h>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>

/* madvise(advice) on the whole pages of `page` bytes (a power of two)
 * inside [p, p + bytes), if there are any; the advice is a hint, its
 * failure ignored. */
static void advise_inside(void *p, size_t bytes, uintptr_t page, int advice)
{
    const uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    const uintptr_t hi = ((uintptr_t)p + bytes) & ~(page - 1);
    if (p != NULL && hi > lo) {
        (void)madvise((void *)lo, (size_t)(hi - lo), advice);
    }
}
#endif

void mt_advise_huge(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    /* on failure (no THP support) the pages stay small */
    advise_inside(p, bytes, (uintptr_t)MT_HUGE_PAGE, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

void *mt_alloc_large(size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= MT_HUGE_PAGE) {
        void *p = NULL;
        if (posix_memalign(&p, MT_HUGE_PAGE, bytes) != 0) {
            return NULL;
        }
        mt_advise_huge(p, bytes);
        return p;
    }
#endif
    /* a small block, or no huge pages to ask for (the advice is a no-op) */
    return malloc(bytes > 0 ? bytes : 1);
}

void mt_free_large(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_DONTNEED)
    /* The whole pages inside the block go back to the system now, even when
     * the allocator keeps the block in its heap for reuse (free alone
     * returns only blocks it had mapped on their own).  They read as zeros
     * afterwards, which is harmless: nothing assumes the contents of a
     * freed block, and the allocator's bookkeeping lies outside the block's
     * `bytes` (before it, or written by free after this). */
    const long size = sysconf(_SC_PAGESIZE);
    advise_inside(p, bytes, (uintptr_t)(size > 0 ? size : 4096), MADV_DONTNEED);
#else
    (void)bytes;
#endif
    free(p);
}
