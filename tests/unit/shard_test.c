/* shard_test.c: tune run --shard I/N (tuner/shard.h): the shards of a run are a partition of its
 * (problem, config) work, balanced in units, and "I/N" parses strictly. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "shard.h"

#define N_CONFIGS 97

/* Every (problem, config) is taken by exactly one of count shards, and the shards' unit counts
 * differ by at most one problem's worth when whole problems go round robin, not at all otherwise. */
static void check_partition(int n_problems, int count) {
  int parts = tune_shard_parts(n_problems, count);
  CHECK(parts >= 1 && parts <= count);
  int units[64] = {0}, ok = 1;
  for (int k = 0; k < n_problems; ++k)
    for (int c = 0; c < N_CONFIGS; ++c) {
      char hash[17];
      snprintf(hash, sizeof hash, "%016llx", 0x9e3779b97f4a7c15ull * (unsigned long long)(c + 1));
      int takers = 0;
      for (int i = 1; i <= count; ++i) {
        int part = tune_shard_part(i, count, parts, k);
        if (part >= 0 && tune_shard_keeps_config(hash, parts, part)) ++takers;
      }
      ok &= takers == 1;
    }
  CHECK(ok);
  for (int i = 1; i <= count; ++i)
    for (int k = 0; k < n_problems; ++k) units[i - 1] += tune_shard_part(i, count, parts, k) >= 0;
  int lo = units[0], hi = units[0];
  for (int i = 1; i < count; ++i) lo = units[i] < lo ? units[i] : lo, hi = units[i] > hi ? units[i] : hi;
  CHECK(parts == 1 ? hi - lo <= 1 : hi == lo);
}

int main(void) {
  for (int n = 1; n <= 12; ++n)
    for (int p = 1; p <= 60; ++p) check_partition(p, n);
  /* whole problems when they divide or are many; cut by config otherwise */
  CHECK(tune_shard_parts(6, 3) == 1);
  CHECK(tune_shard_parts(2, 3) == 3);
  CHECK(tune_shard_parts(6, 4) == 2);
  CHECK(tune_shard_parts(17, 4) == 1);
  CHECK(tune_shard_parts(5, 1) == 1);
  /* round robin in problem order */
  CHECK(tune_shard_part(1, 3, 1, 0) == 0 && tune_shard_part(2, 3, 1, 1) == 0 && tune_shard_part(1, 3, 1, 3) == 0);
  CHECK(tune_shard_part(2, 3, 1, 0) == -1);
  int i = 0, n = 0;
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_shard_parse("2/8", &i, &n, &err) == TUNE_OK && i == 2 && n == 8);
  const char *bad[] = {"0/3", "4/3", "3", "1/", "/3", "a/b", "1/3x", "-1/3", "1/0", "1/1000000", ""};
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; ++b) {
    tune_err_clear(&err);
    i = n = -7;
    CHECK(tune_shard_parse(bad[b], &i, &n, &err) == TUNE_EINVAL && i == -7 && n == -7 && strstr(err.msg, "--shard"));
  }
  printf("shard_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
