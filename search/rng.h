/* rng.h: the seeded pseudo-random generator of the search strategies.
 *
 * xoshiro256** (Blackman and Vigna), its state filled from the seed by
 * splitmix64. The same seed gives the same sequence on every platform, so a
 * strategy's proposals can be replayed. Not for cryptography. Header-only,
 * no allocation, no globals: each user owns its search_rng. */
#ifndef SEARCH_RNG_H
#define SEARCH_RNG_H

#include <stdint.h>

typedef struct search_rng {
  uint64_t s[4]; /* xoshiro256** state, never all zero */
} search_rng;

/* One splitmix64 step: advances *x and returns the next output. */
static inline uint64_t search_splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Seed from any 64-bit value (0 included). Four distinct splitmix64 outputs
 * cannot all be zero, so the state is valid. */
static inline void search_rng_seed(search_rng *r, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) r->s[i] = search_splitmix64(&x);
}

static inline uint64_t search_rng_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* Next 64 uniformly distributed bits. */
static inline uint64_t search_rng_next(search_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = search_rng_rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = search_rng_rotl(s[3], 45);
  return result;
}

/* Uniform integer in [0, n), without modulo bias. n must be >= 1.
 * Lemire's multiply-and-reject where 128-bit products exist, plain rejection
 * otherwise; both consume a seed's sequence deterministically. */
static inline uint64_t search_rng_below(search_rng *r, uint64_t n) {
#if defined(__SIZEOF_INT128__)
  unsigned __int128 m = (unsigned __int128)search_rng_next(r) * n;
  uint64_t lo = (uint64_t)m;
  if (lo < n) {
    uint64_t threshold = (0 - n) % n; /* 2^64 mod n */
    while (lo < threshold) {
      m = (unsigned __int128)search_rng_next(r) * n;
      lo = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
#else
  uint64_t threshold = (0 - n) % n; /* values below it would bias the modulo */
  uint64_t x;
  do x = search_rng_next(r);
  while (x < threshold);
  return x % n;
#endif
}

/* Uniform double in [0, 1), 53 random bits. */
static inline double search_rng_double(search_rng *r) {
  return (double)(search_rng_next(r) >> 11) * 0x1.0p-53;
}

#endif
