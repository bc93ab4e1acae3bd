/* compare_test.c: ratios and verdicts (compare_report.c), and a comparison stored through
 * db_compare.c and printed back as its table, on a scratch database (no GPU). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "compare_report.h"
#include "db.h"
#include "db_compare.h"

static void ratios(void) {
  double peer[3] = {110, 120, 105}, tune[3] = {100, 100, 100};
  tune_ratio r = tune_ratio_of(peer, tune, 3);
  CHECK(r.n == 3 && fabs(r.median - 1.10) < 1e-9 && fabs(r.lo - 1.05) < 1e-9 && fabs(r.hi - 1.20) < 1e-9);
  CHECK(!strcmp(tune_ratio_verdict(&r), "faster"));
  double peer2[3] = {99, 120, 105};
  r = tune_ratio_of(peer2, tune, 3); /* one round below 1: not "faster" */
  CHECK(!strcmp(tune_ratio_verdict(&r), "parity"));
  double peer3[3] = {90, 95, 0}; /* an untimed round is left out */
  r = tune_ratio_of(peer3, tune, 3);
  CHECK(r.n == 2 && !strcmp(tune_ratio_verdict(&r), "slower"));
  r = tune_ratio_of(peer3, tune, 0);
  CHECK(r.n == 0 && !strcmp(tune_ratio_verdict(&r), "-"));
  double x[4] = {1, 2, 3, 4}, same[4] = {10, 20, 30, 40}, rev[4] = {4, 3, 2, 1};
  CHECK(fabs(tune_rank_correlation(x, same, 4) - 1) < 1e-12);
  CHECK(fabs(tune_rank_correlation(x, rev, 4) + 1) < 1e-12);
  CHECK(isnan(tune_rank_correlation(x, same, 2)));
}

static void put(db_conn *db, int64_t cmp, int64_t prob, int64_t cfg, int peer, int round, const char *timing,
                double ns, tune_err *err) {
  db_measurement m = {.comparison_id = cmp, .problem_id = prob, .config_id = cfg, .peer = peer, .round = round,
                      .status = DB_OK, .median_ns = ns, .min_ns = ns, .max_ns = ns, .samples = 10, .sm_mhz = 1755,
                      .mem_mhz = 2619, .power_w = 500};
  snprintf(m.timing, sizeof m.timing, "%s", timing);
  snprintf(m.timer, sizeof m.timer, "cupti");
  CHECK(db_measurement_put(db, &m, err) == 0);
}

/* A fresh database at path (a template ending in XXXXXX) with one device; its id in *dev_id. */
static db_conn *temp_db(char *path, int64_t *dev_id, tune_err *err) {
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  unlink(path);
  db_conn *db = NULL;
  CHECK(db_open(path, 0, &db, err) == 0);
  db_device dev = {.kind = "gpu", .name = "Test GPU", .arch = "sm_90"};
  CHECK(db_device_put(db, &dev, dev_id, err) == 0);
  return db;
}

/* Comparison cmp (n_rows measurements) as tune_compare_print writes it, which must count
 * n_ratios rows with a ratio; the caller frees the text. */
static char *printed(db_conn *db, int64_t cmp, size_t n_rows, int n_ratios, tune_err *err) {
  json_t *info = NULL, *rows = NULL;
  CHECK(db_comparison_info(db, cmp, &info, err) == 0 && info);
  CHECK(db_comparison_rows(db, cmp, &rows, err) == 0 && json_array_size(rows) == n_rows);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CHECK(tune_compare_print(f, info, rows) == n_ratios);
  fclose(f);
  json_decref(info);
  json_decref(rows);
  return buf;
}

static void stored_table(void) {
  char path[] = "/tmp/compare_test_XXXXXX";
  tune_err err;
  tune_err_clear(&err);
  int64_t dev_id, rec, prob, cfg_a, cfg_b, peer, cmp;
  db_conn *db = temp_db(path, &dev_id, &err);
  CHECK(db_recipe_put(db, "gemm", "0123456789abcdef", "recipes/gemm.lua", "", &rec, &err) == 0);
  CHECK(db_problem_put(db, "gemm", "m1", "aaaa", "{\"M\":1}", &prob, &err) == 0);
  CHECK(db_config_put(db, "gemm", "c1", "{\"T\":1}", "bayes", &cfg_a, &err) == 0);
  CHECK(db_config_put(db, "gemm", "c2", "{\"T\":2}", "bayes", &cfg_b, &err) == 0);
  CHECK(db_config_put(db, "gemm", "p1", "{\"peer\":\"cublas\"}", "peer:cublas", &peer, &err) == 0);
  CHECK(db_comparison_begin(db, rec, dev_id, "tune compare recipes/gemm.lua", 3, 2, "burst", &cmp, &err) == 0);
  const double a[3] = {100, 101, 99}, b[3] = {120, 90, 130}, p[3] = {110, 112, 108};
  for (int r = 0; r < 3; ++r) {
    put(db, cmp, prob, cfg_a, 0, r + 1, "burst", a[r], &err);
    put(db, cmp, prob, cfg_b, 0, r + 1, "burst", b[r], &err);
    put(db, cmp, prob, peer, 1, r + 1, "burst", p[r], &err);
  }
  CHECK(db_comparison_end(db, cmp, "done", "{\"torch\":\"2.9\",\"timer\":\"cupti\"}", &err) == 0);
  int64_t ids[4];
  int n = 0;
  CHECK(db_comparison_latest(db, ids, 4, &n, &err) == 0 && n == 1 && ids[0] == cmp);
  char *buf = printed(db, cmp, 9, 1, &err);
  /* config a (median 100) is tune's best, not b (whose best round is 90); ratios 1.10, 1.109, 1.091 */
  CHECK(buf && strstr(buf, "| m1 | burst | 0.10 | cublas | 0.11 | 1.100 (1.091-1.109, 3 rounds) | faster |"));
  CHECK(buf && strstr(buf, "torch 2.9"));
  CHECK(buf && !strstr(buf, "launch-bound"));
  if (n_fail && buf) fputs(buf, stderr);
  free(buf);
  db_close(db);
  unlink(path);
}

/* A sustained group whose peer took over TUNE_CMP_LAUNCH_BOUND times its burst time is
 * launch-bound; one whose peer slowed down as power-limited clocks do is not. */
static void launch_bound(void) {
  char path[] = "/tmp/compare_lb_XXXXXX";
  tune_err err;
  tune_err_clear(&err);
  int64_t dev_id, rec, small, large, cfg, peer, cmp;
  db_conn *db = temp_db(path, &dev_id, &err);
  CHECK(db_recipe_put(db, "moe", "0123456789abcdef", "recipes/moe.lua", "", &rec, &err) == 0);
  CHECK(db_problem_put(db, "moe", "t1", "aaaa", "{\"T\":1}", &small, &err) == 0);
  CHECK(db_problem_put(db, "moe", "t4096", "bbbb", "{\"T\":4096}", &large, &err) == 0);
  CHECK(db_config_put(db, "moe", "c1", "{\"T\":1}", "bayes", &cfg, &err) == 0);
  CHECK(db_config_put(db, "moe", "p1", "{\"peer\":\"torch\"}", "peer:torch", &peer, &err) == 0);
  CHECK(db_comparison_begin(db, rec, dev_id, "tune compare recipes/moe.lua", 3, 1, "both", &cmp, &err) == 0);
  for (int r = 1; r <= 3; ++r) {
    /* t1: kernels of 2 and 3 us; back to back the peer takes 70 us a call (its launches) */
    put(db, cmp, small, cfg, 0, r, "burst", 2000, &err);
    put(db, cmp, small, peer, 1, r, "burst", 3000, &err);
    put(db, cmp, small, cfg, 0, r, "sustained", 2500, &err);
    put(db, cmp, small, peer, 1, r, "sustained", 70000, &err);
    /* t4096: both 1.2x slower under sustained load, the GPU busy */
    put(db, cmp, large, cfg, 0, r, "burst", 100000, &err);
    put(db, cmp, large, peer, 1, r, "burst", 150000, &err);
    put(db, cmp, large, cfg, 0, r, "sustained", 120000, &err);
    put(db, cmp, large, peer, 1, r, "sustained", 180000, &err);
  }
  CHECK(db_comparison_end(db, cmp, "done", "{\"torch\":\"2.9\",\"timer\":\"cupti\"}", &err) == 0);
  char *buf = printed(db, cmp, 24, 4, &err);
  CHECK(buf && strstr(buf, "| t1 | burst | 2.00 | torch | 3.00 | 1.500 (1.500-1.500, 3 rounds) | faster |"));
  CHECK(buf && strstr(buf, "| t1 | sustained | 2.50 | torch | 70.00 | 28.000 (28.000-28.000, 3 rounds) | launch-bound |"));
  CHECK(buf && strstr(buf, "| t4096 | sustained | 120.00 | torch | 180.00 | 1.500 (1.500-1.500, 3 rounds) | faster |"));
  CHECK(buf && strstr(buf, "\nlaunch-bound: a candidate's sustained time is over 1.4x its burst time"));
  if (n_fail && buf) fputs(buf, stderr);
  free(buf);
  db_close(db);
  unlink(path);
}

int main(void) {
  ratios();
  stored_table();
  launch_bound();
  printf("compare_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
