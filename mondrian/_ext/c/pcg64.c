/* pcg64.c -- numpy's PCG64 streams in C (pcg64.h). */
#include "pcg64.h"

#define MULT_HI UINT64_C(0x2360ED051FC65DA4)
#define MULT_LO UINT64_C(0x4385DF649FCCF645)

/* The high 64 bits of a * b. */
static inline uint64_t mulhi64(uint64_t a, uint64_t b)
{
#if defined(__SIZEOF_INT128__)
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)(((u128)a * b) >> 64);
#else
    const uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32;
    const uint64_t b_lo = b & 0xFFFFFFFFu, b_hi = b >> 32;
    const uint64_t ll = a_lo * b_lo, lh = a_lo * b_hi, hl = a_hi * b_lo, hh = a_hi * b_hi;
    const uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
#endif
}

/* state = state * MULT + inc (mod 2^128). */
static inline void step(mt_pcg64 *s)
{
    const uint64_t lo = s->state_lo * MULT_LO;
    const uint64_t hi = mulhi64(s->state_lo, MULT_LO) + s->state_lo * MULT_HI +
                        s->state_hi * MULT_LO;
    const uint64_t new_lo = lo + s->inc_lo;
    s->state_hi = hi + s->inc_hi + (new_lo < lo);
    s->state_lo = new_lo;
}

uint64_t mt_pcg64_next64(mt_pcg64 *s)
{
    step(s);
    const uint64_t x = s->state_hi ^ s->state_lo;
    const unsigned rot = (unsigned)(s->state_hi >> 58);
    return (x >> rot) | (x << ((64u - rot) & 63u));
}

void mt_pcg64_seed(mt_pcg64 *s, const uint64_t w[4])
{
    s->state_hi = 0;
    s->state_lo = 0;
    s->inc_hi = (w[2] << 1) | (w[3] >> 63);
    s->inc_lo = (w[3] << 1) | 1u;
    step(s);
    const uint64_t lo = s->state_lo + w[1];
    s->state_hi += w[0] + (lo < w[1]);
    s->state_lo = lo;
    step(s);
    s->has_uint32 = 0;
    s->uinteger = 0;
}

static uint64_t next_uint64(void *st)
{
    return mt_pcg64_next64((mt_pcg64 *)st);
}

static uint32_t next_uint32(void *st)
{
    mt_pcg64 *s = (mt_pcg64 *)st;
    if (s->has_uint32) {
        s->has_uint32 = 0;
        return (uint32_t)s->uinteger;
    }
    const uint64_t next = mt_pcg64_next64(s);
    s->has_uint32 = 1;
    s->uinteger = next >> 32;
    return (uint32_t)(next & 0xFFFFFFFFu);
}

static double next_double(void *st)
{
    return (double)(mt_pcg64_next64((mt_pcg64 *)st) >> 11) * (1.0 / 9007199254740992.0);
}

void mt_pcg64_bitgen(mt_pcg64 *s, bitgen_t *g)
{
    g->state = s;
    g->next_uint64 = next_uint64;
    g->next_uint32 = next_uint32;
    g->next_double = next_double;
    g->next_raw = next_uint64;
}
