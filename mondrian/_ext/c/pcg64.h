/*
 * pcg64.h -- the trees' PCG64 streams held in C: numpy's PCG64 bit
 * generator, bit for bit, without a Python object per tree.
 *
 * A forest of thousands of trees spawned from one numpy Generator needs one
 * stream per tree (DESIGN §2: results do not depend on the thread count).
 * numpy gives each a Python BitGenerator object, about 2-3 µs apiece even
 * when their seed sequences are computed in bulk (mondrian/_streams.py):
 * 0.05 of the 0.2 s default fit on 250 rows (9000 trees).  Here a stream is
 * 48 bytes of C state, seeded from the same four 64-bit words numpy's
 * PCG64 takes from its SeedSequence (generate_state(4, uint64)), so tree m
 * draws exactly what numpy.random.PCG64(child_m) would.
 *
 * The generator (O'Neill's PCG XSL RR 128/64, as numpy implements it):
 *   state, inc: 128-bit, inc odd;
 *   step: state = state * MULT + inc (mod 2^128),
 *         MULT = 0x2360ED051FC65DA4_4385DF649FCCF645;
 *   next 64 bits: step, then rotr64(hi ^ lo, hi >> 58) of the new state;
 *   seeding from words w[0..3]: seed = w0:w1, seq = w2:w3 (high word
 *         first); state = 0, inc = (seq << 1) | 1, step, state += seed, step;
 *   next double: (next64 >> 11) * 2^-53;
 *   next 32 bits: the high half of a next64 is kept for the following call
 *         (has_uint32, uinteger), the low half returned.
 * The state is that of numpy's ``PCG64.state`` dict: {'state': hi:lo,
 * 'inc': hi:lo}, 'has_uint32', 'uinteger'.
 */
#ifndef MT_PCG64_H
#define MT_PCG64_H

#include <stdint.h>

#include "numpy/random/bitgen.h"

typedef struct mt_pcg64 {
    uint64_t state_hi, state_lo;
    uint64_t inc_hi, inc_lo;
    uint64_t has_uint32;  /* 0 or 1 */
    uint64_t uinteger;    /* < 2^32: the buffered half of the last next64 */
} mt_pcg64;

/* Seed s from numpy's four seed words (PCG64(seed_seq): w = seed_seq
 * .generate_state(4, uint64)). */
void mt_pcg64_seed(mt_pcg64 *s, const uint64_t w[4]);

/* Point g at s: g->state = s and numpy's four draw functions of PCG64. */
void mt_pcg64_bitgen(mt_pcg64 *s, bitgen_t *g);

/* The next 64 bits of s. */
uint64_t mt_pcg64_next64(mt_pcg64 *s);

#endif /* MT_PCG64_H */
