/* shard.c: the share of a sharded run's work (shard.h). */
#include "shard.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int tune_shard_parse(const char *text, int *index, int *count, tune_err *err) {
  char *slash = NULL, *end = NULL;
  errno = 0;
  long i = strtol(text, &slash, 10);
  long n = slash != text && *slash == '/' ? strtol(slash + 1, &end, 10) : 0;
  if (errno || !end || end == slash + 1 || *end || i < 1 || n < 1 || i > n || n > TUNE_SHARD_MAX)
    return tune_fail(err, TUNE_EINVAL, "--shard %s: want I/N with 1 <= I <= N <= %d (e.g. 2/8)", text, TUNE_SHARD_MAX);
  *index = (int)i;
  *count = (int)n;
  return TUNE_OK;
}

static int gcd(int a, int b) {
  while (b) {
    int t = a % b;
    a = b;
    b = t;
  }
  return a;
}

int tune_shard_parts(int n_problems, int count) {
  if (count <= 1 || n_problems <= 0) return 1;
  if (n_problems % count == 0 || n_problems >= TUNE_SHARD_WHOLE_MIN * count) return 1;
  return count / gcd(n_problems, count);
}

int tune_shard_part(int index, int count, int parts, int k) {
  /* unit k*parts + j belongs to shard (k*parts + j) mod count + 1; parts <= count, so at most one j */
  long long first = ((long long)k * parts) % count;
  long long j = ((long long)(index - 1) - first + count) % count;
  return j < parts ? (int)j : -1;
}

int tune_shard_keeps_config(const char *config_hash, int parts, int part) {
  if (parts <= 1) return 1;
  uint64_t h = strtoull(config_hash, NULL, 16);
  return (int)(h % (uint64_t)parts) == part;
}
