/* memory.c -- large allocations backed by huge pages where the OS offers
 * them (see common.h, mt_advise_huge). */
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE under -std=c99 */

#include "common.h"

#include <stdint.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

void mt_advise_huge(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)MT_HUGE_PAGE;
    const uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    const uintptr_t hi = ((uintptr_t)p + bytes) & ~(huge - 1);
    if (p != NULL && hi > lo) {
        /* a hint: on failure (no THP support) the pages stay small */
        (void)madvise((void *)lo, (size_t)(hi - lo), MADV_HUGEPAGE);
    }
#else
    (void)p;
    (void)bytes;
#endif
}
