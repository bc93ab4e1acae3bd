/* db_test.c: unit tests of db/ (schema and its named migrations, upserts,
 * results, replay lookup, compile cache, CLI queries with filters, CSV, views,
 * failure paths). Runs in a fresh temporary directory; prints "N passed, M
 * failed" and exits nonzero on any failure. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db.h"
#include "db_select.h"
#include "db_int.h" /* fault injection and the raw handle, for the failure tests */
#include "check.h"

static tune_err E;


/* Runs a tune call with a fresh E; counts it; prints E.msg when it fails. */
#define OK(call)                                                                       \
  do {                                                                                 \
    tune_err_clear(&E);                                                                \
    int rc_ = (call);                                                                  \
    if (rc_ == TUNE_OK) {                                                              \
      n_pass++;                                                                        \
    } else {                                                                           \
      n_fail++;                                                                        \
      fprintf(stderr, "%s:%d: %s failed (%s): %s\n", __FILE__, __LINE__, #call,        \
              tune_err_name(rc_), E.msg);                                              \
    }                                                                                  \
  } while (0)

/* Runs a tune call expected to fail with code; the message must be set. */
#define FAILS(want, call)                                                               \
  do {                                                                                  \
    tune_err_clear(&E);                                                                 \
    int rc_ = (call);                                                                   \
    if (rc_ == (want) && E.code == (want) && E.msg[0]) {                                \
      n_pass++;                                                                         \
    } else {                                                                            \
      n_fail++;                                                                         \
      fprintf(stderr, "%s:%d: %s: expected %s, got %s: %s\n", __FILE__, __LINE__, #call, \
              tune_err_name(want), tune_err_name(rc_), E.msg);                          \
    }                                                                                   \
  } while (0)

static char dir[256];

static void path_in(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", dir, name);
}

/* One integer from raw SQL on its own connection (bypasses db/). */
static long long raw_int(const char *path, const char *sql) {
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  long long v = -999;
  if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}

static int raw_exec(const char *path, const char *sql) {
  sqlite3 *h = NULL;
  int rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_exec(h, sql, NULL, NULL, NULL);
  sqlite3_close(h);
  return rc;
}

static void remove_db(const char *path) {
  char buf[600];
  unlink(path);
  snprintf(buf, sizeof buf, "%s-wal", path);
  unlink(buf);
  snprintf(buf, sizeof buf, "%s-shm", path);
  unlink(buf);
  snprintf(buf, sizeof buf, "%s-journal", path);
  unlink(buf);
}

static db_device gpu_dev(void) {
  db_device d;
  memset(&d, 0, sizeof d);
  strcpy(d.kind, "gpu");
  strcpy(d.name, "NVIDIA H200");
  strcpy(d.arch, "sm_90");
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.sm_clock_khz = 1980000;
  d.mem_clock_khz = 3201000;
  d.mem_bus_bits = 6144;
  d.mem_bytes = 150ll << 30;
  d.l2_bytes = 60 << 20;
  d.smem_per_block_optin = 232448;
  strcpy(d.driver, "13.0");
  strcpy(d.cuda, "13.0");
  strcpy(d.uuid, "GPU-0000-1111");
  return d;
}

/* Each result of these tests has a binary of its own, so each is an identity of its own and is
 * stored as a row (the rules for one identity are db_identity_test's). */
static db_result mk_result(int64_t run, int64_t recipe, int64_t dev, int64_t cfg, int64_t prob,
                           db_status s, double median) {
  static int n_made;
  db_result r;
  memset(&r, 0, sizeof r);
  snprintf(r.binary_key, sizeof r.binary_key, "build%d", ++n_made);
  r.sm_mhz = r.mem_mhz = -1;
  r.run_id = run;
  r.recipe_id = recipe;
  r.device_id = dev;
  r.config_id = cfg;
  r.problem_id = prob;
  r.status = s;
  r.median_ns = median;
  r.min_ns = median * 0.9;
  r.max_ns = median * 1.2;
  r.stddev_ns = median * 0.01;
  r.samples = 50;
  r.registers = 32;
  r.shared_bytes = 0;
  r.local_bytes = 0;
  r.spill_stores = 0;
  r.spill_loads = 0;
  r.err_rel_l2 = -1;
  r.err_max_abs = -1;
  r.honest_rel_l2 = -1;
  return r;
}

/* ---- tests ------------------------------------------------------------- */

static void test_status_names(void) {
  for (int i = 0; i < DB_STATUS_COUNT; i++)
    CHECK(db_status_parse(db_status_name((db_status)i)) == i);
  CHECK(strcmp(db_status_name(DB_COMPILE_ERROR), "compile_error") == 0);
  CHECK(strcmp(db_status_name(DB_NOT_RECORDED), "not_recorded") == 0);
  CHECK(db_status_parse("bogus") == -1);
  CHECK(db_status_parse(NULL) == -1);
  CHECK(db_status_parse("OK") == -1);
}

static void test_create_reopen(void) {
  char path[512];
  path_in(path, sizeof path, "create.db");
  db_conn *db = NULL;
  int v = -1;
  OK(db_open(path, 0, &db, &E));
  if (!db) return;
  OK(db_schema_version(db, &v, &E));
  CHECK(v == DB_SCHEMA_VERSION);
  db_close(db);
  CHECK(raw_int(path, "PRAGMA user_version") == DB_SCHEMA_VERSION);
  CHECK(raw_int(path, "PRAGMA application_id") == DB_APPLICATION_ID);
  CHECK(raw_int(path, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'") == 1);
  CHECK(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN"
                      " ('devices','recipes','problems','configs','runs','results','binaries',"
                      "'peaks')") == 8);
  db = NULL;
  OK(db_open(path, 0, &db, &E));
  v = -1;
  if (db) OK(db_schema_version(db, &v, &E));
  CHECK(v == DB_SCHEMA_VERSION);
  db_close(db);
  /* read-only open of the migrated file works and reports the same version */
  db = NULL;
  OK(db_open(path, 1, &db, &E));
  v = -1;
  if (db) OK(db_schema_version(db, &v, &E));
  CHECK(v == DB_SCHEMA_VERSION);
  db_close(db);
}

static void test_open_failures(void) {
  char path[512];
  db_conn *db = (db_conn *)1;
  /* read-only open of a missing file: fails, does not create it */
  path_in(path, sizeof path, "missing.db");
  FAILS(TUNE_EIO, db_open(path, 1, &db, &E));
  CHECK(db == NULL);
  CHECK(strstr(E.msg, "missing.db") != NULL);
  CHECK(access(path, F_OK) != 0);

  /* a path in a directory that does not exist */
  tune_err_clear(&E);
  db = (db_conn *)1;
  int rc = db_open("/nonexistent-tune-dir/sub/x.db", 0, &db, &E);
  CHECK(rc == TUNE_ESQL || rc == TUNE_EIO);
  CHECK(E.msg[0] != 0 && strstr(E.msg, "nonexistent-tune-dir") != NULL);
  CHECK(db == NULL);

  /* a newer schema than this build knows: refused, both versions named */
  path_in(path, sizeof path, "newer.db");
  db = NULL;
  OK(db_open(path, 0, &db, &E));
  db_close(db);
  char sql[64], want_file[16], want_build[16];
  snprintf(sql, sizeof sql, "PRAGMA user_version = %d", DB_SCHEMA_VERSION + 7);
  CHECK(raw_exec(path, sql) == SQLITE_OK);
  snprintf(want_file, sizeof want_file, "%d", DB_SCHEMA_VERSION + 7);
  snprintf(want_build, sizeof want_build, "(%d)", DB_SCHEMA_VERSION);
  db = (db_conn *)1;
  FAILS(TUNE_EINVAL, db_open(path, 1, &db, &E));
  CHECK(db == NULL);
  CHECK(strstr(E.msg, want_file) != NULL && strstr(E.msg, want_build) != NULL);
  FAILS(TUNE_EINVAL, db_open(path, 0, &db, &E)); /* nor migrated backwards */
  CHECK(raw_int(path, "PRAGMA user_version") == DB_SCHEMA_VERSION + 7);

  /* someone else's SQLite file is not migrated into */
  path_in(path, sizeof path, "foreign.db");
  CHECK(raw_exec(path, "CREATE TABLE foo (x)") == SQLITE_OK);
  FAILS(TUNE_EINVAL, db_open(path, 0, &db, &E));
  CHECK(raw_int(path, "SELECT count(*) FROM sqlite_schema") == 1);

  /* an empty existing file opened read-only: not a tune database yet */
  path_in(path, sizeof path, "empty.db");
  FILE *f = fopen(path, "w");
  if (f) fclose(f);
  FAILS(TUNE_EINVAL, db_open(path, 1, &db, &E));

  FAILS(TUNE_EINVAL, db_open("", 0, &db, &E));
}

/* A recorded database in a read-only folder (no -shm can be made) still
 * opens read-only. Permissions do not bind root, so this runs only as a
 * regular user. */
static void test_readonly_folder(void) {
  if (geteuid() == 0) return;
  char sub[300], path[512];
  path_in(sub, sizeof sub, "rodir");
  CHECK(mkdir(sub, 0755) == 0);
  snprintf(path, sizeof path, "%s/rec.db", sub);
  db_conn *db = NULL;
  OK(db_open(path, 0, &db, &E));
  db_close(db);
  CHECK(chmod(path, 0444) == 0 && chmod(sub, 0555) == 0);
  db = NULL;
  OK(db_open(path, 1, &db, &E));
  json_t *rows = NULL;
  if (db) OK(db_query_best(db, NULL, NULL, &rows, &E));
  CHECK(json_is_array(rows));
  json_decref(rows);
  db_close(db);
  chmod(sub, 0755);
  chmod(path, 0644);
  remove_db(path);
  rmdir(sub);
}

/* Shared fixture for the remaining tests. */
typedef struct fixture {
  char path[512];
  db_conn *db;
  int64_t gpu, arch, recipe, recipe_v2, small, large, c1, c2, c3, run;
} fixture;

static void test_upserts(fixture *fx) {
  db_device d = gpu_dev();
  int64_t id1 = 0, id2 = 0, id3 = 0;
  OK(db_device_put(fx->db, &d, &id1, &E));
  OK(db_device_put(fx->db, &d, &id2, &E));
  CHECK(id1 > 0 && id1 == id2);
  /* mutable fields change on the same row */
  d.sm_clock_khz = 1755000;
  strcpy(d.driver, "13.1");
  OK(db_device_put(fx->db, &d, &id2, &E));
  CHECK(id2 == id1);
  CHECK(raw_int(fx->path, "SELECT sm_clock_khz FROM devices WHERE uuid = 'GPU-0000-1111'") ==
        1755000);
  CHECK(raw_int(fx->path, "SELECT count(*) FROM devices WHERE driver = '13.1'") == 1);
  CHECK(raw_int(fx->path, "SELECT count(*) FROM devices") == 1);
  /* another uuid is another device */
  strcpy(d.uuid, "GPU-2222");
  OK(db_device_put(fx->db, &d, &id3, &E));
  CHECK(id3 > 0 && id3 != id1);
  fx->gpu = id1;
  /* a compile-only target */
  db_device a;
  memset(&a, 0, sizeof a);
  strcpy(a.kind, "arch");
  strcpy(a.name, "sm_90a");
  strcpy(a.arch, "sm_90a");
  a.cc_major = 9;
  OK(db_device_put(fx->db, &a, &fx->arch, &E));
  CHECK(fx->arch > 0 && fx->arch != id1 && fx->arch != id3);
  memset(&a, 0, sizeof a);
  FAILS(TUNE_EINVAL, db_device_put(fx->db, &a, &id3, &E));

  OK(db_recipe_put(fx->db, "copy", "aaaa", "recipes/copy.lua", "return {}", &id1, &E));
  OK(db_recipe_put(fx->db, "copy", "aaaa", "elsewhere.lua", "changed", &id2, &E));
  CHECK(id1 > 0 && id1 == id2);
  OK(db_recipe_put(fx->db, "copy", "bbbb", "recipes/copy.lua", "return {x=1}", &id3, &E));
  CHECK(id3 > 0 && id3 != id1);
  fx->recipe = id1;
  fx->recipe_v2 = id3;
  FAILS(TUNE_EINVAL, db_recipe_put(fx->db, "", "aaaa", NULL, NULL, &id3, &E));

  OK(db_problem_put(fx->db, "copy", "small", "p01", "{\"n\": 1024}", &id1, &E));
  OK(db_problem_put(fx->db, "copy", "small", "p01", "{\"n\": 1024}", &id2, &E));
  CHECK(id1 > 0 && id1 == id2);
  fx->small = id1;
  OK(db_problem_put(fx->db, "copy", "large", "p02", "{\"n\": 1048576}", &fx->large, &E));
  CHECK(fx->large != fx->small);
  /* same hash under another recipe is another problem */
  OK(db_problem_put(fx->db, "gemm", "small", "p01", "{}", &id3, &E));
  CHECK(id3 != fx->small);
  /* dims must be JSON */
  FAILS(TUNE_ESQL, db_problem_put(fx->db, "copy", "bad", "p03", "{not json", &id3, &E));

  OK(db_config_put(fx->db, "copy", "c01", "{\"BLOCK\": 128, \"VEC\": 4}", "exhaustive", &fx->c1,
                   &E));
  OK(db_config_put(fx->db, "copy", "c01", "{\"BLOCK\": 128, \"VEC\": 4}", "random", &id2, &E));
  CHECK(fx->c1 > 0 && fx->c1 == id2);
  CHECK(raw_int(fx->path, "SELECT count(*) FROM configs WHERE hash = 'c01' AND origin = "
                          "'exhaustive'") == 1); /* the first origin stays */
  OK(db_config_put(fx->db, "copy", "c02", "{\"BLOCK\": 256, \"VEC\": 4}", "random", &fx->c2, &E));
  OK(db_config_put(fx->db, "copy", "c03", "{\"BLOCK\": 512, \"VEC\": 8}", "llm:test", &fx->c3,
                   &E));
  CHECK(fx->c2 != fx->c1 && fx->c3 != fx->c2);

  db_run run;
  memset(&run, 0, sizeof run);
  run.recipe_id = fx->recipe;
  run.device_id = fx->gpu;
  strcpy(run.backend, "cuda:0");
  strcpy(run.strategy, "exhaustive");
  run.budget = 100;
  run.budget_s = 60.5;
  run.seed = UINT64_MAX - 1; /* above INT64_MAX: stored as its bit pattern */
  strcpy(run.tool_version, "0.1.0");
  OK(db_run_begin(fx->db, &run, &fx->run, &E));
  CHECK(fx->run > 0);
  CHECK(raw_int(fx->path, "SELECT seed FROM runs ORDER BY id DESC LIMIT 1") == -2);
  FAILS(TUNE_EINVAL, db_run_end(fx->db, fx->run, "exploded", &E));
  FAILS(TUNE_ENOTFOUND, db_run_end(fx->db, 999999, "done", &E));
}

static void test_results(fixture *fx) {
  db_result r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c1, fx->small, DB_OK, 200);
  r.seed = UINT64_MAX;
  r.stddev_ns = NAN;
  r.err_rel_l2 = 1e-7;
  r.honest_rel_l2 = 2e-3;
  strcpy(r.binary_key, "bin01");
  OK(db_result_put(fx->db, &r, &E));
  CHECK(r.id > 0);
  CHECK(strlen(r.created_at) == 24 && r.created_at[10] == 'T' && r.created_at[19] == '.' &&
        r.created_at[23] == 'Z');
  int64_t first = r.id;

  db_result got;
  OK(db_result_find(fx->db, fx->recipe, fx->gpu, fx->c1, fx->small, &got, &E));
  CHECK(got.id == first);
  CHECK(got.status == DB_OK && got.median_ns == 200 && got.samples == 50);
  CHECK(got.seed == UINT64_MAX);
  CHECK(isnan(got.stddev_ns));
  CHECK(got.err_rel_l2 == 1e-7 && got.err_max_abs == -1);
  CHECK(got.honest_rel_l2 == 2e-3);
  /* an unknown honest error (-1, 0) is stored NULL and read back -1 */
  CHECK(raw_int(fx->path, "SELECT count(*) FROM results WHERE honest_rel_l2 = 2e-3") == 1);
  CHECK(strcmp(got.binary_key, "bin01") == 0 && got.error_text[0] == 0);
  CHECK(strcmp(got.created_at, r.created_at) == 0);
  CHECK(got.run_id == fx->run && got.config_id == fx->c1);

  /* the latest final answer wins; skipped and not_recorded never do */
  r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c1, fx->small, DB_WRONG, 0);
  strcpy(r.error_text, "mismatch at 17: 1.5 vs 2.0\nand more");
  OK(db_result_put(fx->db, &r, &E));
  int64_t wrong = r.id;
  CHECK(wrong > first);
  r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c1, fx->small, DB_SKIPPED, 0);
  OK(db_result_put(fx->db, &r, &E));
  r = mk_result(0, fx->recipe, fx->gpu, fx->c1, fx->small, DB_NOT_RECORDED, 0);
  OK(db_result_put(fx->db, &r, &E));
  OK(db_result_find(fx->db, fx->recipe, fx->gpu, fx->c1, fx->small, &got, &E));
  CHECK(got.id == wrong && got.status == DB_WRONG);
  CHECK(strncmp(got.error_text, "mismatch at 17", 14) == 0);
  /* then an ok again */
  r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c1, fx->small, DB_OK, 190);
  OK(db_result_put(fx->db, &r, &E));
  int64_t latest_ok = r.id;
  OK(db_result_find(fx->db, fx->recipe, fx->gpu, fx->c1, fx->small, &got, &E));
  CHECK(got.id == latest_ok && got.median_ns == 190);
  /* by timing mode: a sustained run does not resume from burst timings */
  OK(db_result_find_timing(fx->db, fx->recipe, fx->gpu, fx->c1, fx->small, "burst", &got, &E));
  CHECK(got.id == latest_ok);
  FAILS(TUNE_ENOTFOUND, db_result_find_timing(fx->db, fx->recipe, fx->gpu, fx->c1, fx->small, "sustained", &got, &E));
  CHECK(strstr(E.msg, "no sustained result") != NULL);

  /* other recipe source, nothing yet */
  FAILS(TUNE_ENOTFOUND, db_result_find(fx->db, fx->recipe_v2, fx->gpu, fx->c1, fx->small, &got,
                                       &E));
  /* only skipped: still not found */
  r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c2, fx->large, DB_SKIPPED, 0);
  OK(db_result_put(fx->db, &r, &E));
  FAILS(TUNE_ENOTFOUND, db_result_find(fx->db, fx->recipe, fx->gpu, fx->c2, fx->large, &got, &E));

  /* bad arguments and foreign keys */
  r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c1, fx->small, (db_status)42, 0);
  FAILS(TUNE_EINVAL, db_result_put(fx->db, &r, &E));
  r = mk_result(fx->run, fx->recipe, fx->gpu, 0, fx->small, DB_OK, 1);
  FAILS(TUNE_EINVAL, db_result_put(fx->db, &r, &E));
  r = mk_result(fx->run, fx->recipe, fx->gpu, 987654, fx->small, DB_OK, 1);
  r.id = -5;
  FAILS(TUNE_ESQL, db_result_put(fx->db, &r, &E));
  CHECK(r.id == -5);                            /* untouched on failure */
  CHECK(sqlite3_get_autocommit(fx->db->h) != 0); /* rolled back, no open transaction */
}

/* A raw INSERT with a status that is not a name is refused by the CHECK. */
static void test_status_check(fixture *fx) {
  char sql[512];
  snprintf(sql, sizeof sql,
           "INSERT INTO results (recipe_id, device_id, config_id, problem_id, status)"
           " VALUES (%lld, %lld, %lld, %lld, 'bogus')",
           (long long)fx->recipe, (long long)fx->gpu, (long long)fx->c1, (long long)fx->small);
  CHECK(raw_exec(fx->path, sql) == SQLITE_CONSTRAINT);
  snprintf(sql, sizeof sql,
           "INSERT INTO results (recipe_id, device_id, config_id, problem_id, status)"
           " VALUES (%lld, %lld, %lld, %lld, 'OK')",
           (long long)fx->recipe, (long long)fx->gpu, (long long)fx->c1, (long long)fx->small);
  CHECK(raw_exec(fx->path, sql) == SQLITE_CONSTRAINT);
  CHECK(raw_int(fx->path, "SELECT count(*) FROM results WHERE status NOT IN ('ok','wrong',"
                          "'compile_error','launch_error','crash','timeout','skipped',"
                          "'not_recorded','suspicious')") == 0);
}

static void test_replay(fixture *fx) {
  /* a later result on a compile-only target must not be replayed */
  db_result r = mk_result(fx->run, fx->recipe, fx->arch, fx->c1, fx->small, DB_OK, 5);
  OK(db_result_put(fx->db, &r, &E));

  db_conn *ro = NULL;
  OK(db_open(fx->path, 1, &ro, &E)); /* while the writer is still open */
  if (!ro) return;
  db_result got;
  db_device dev;
  OK(db_replay_find(ro, "copy", "c01", "p01", &got, &dev, &E));
  CHECK(got.status == DB_OK && got.median_ns == 190);
  CHECK(got.device_id == fx->gpu);
  CHECK(strcmp(dev.kind, "gpu") == 0 && strcmp(dev.name, "NVIDIA H200") == 0);
  CHECK(strcmp(dev.uuid, "GPU-0000-1111") == 0 && strcmp(dev.driver, "13.1") == 0);
  CHECK(dev.sm_count == 132 && dev.mem_bytes == (150ll << 30) && dev.cc_major == 9);
  FAILS(TUNE_ENOTFOUND, db_replay_find(ro, "copy", "c01", "nope", &got, &dev, &E));
  FAILS(TUNE_ENOTFOUND, db_replay_find(ro, "gemm", "c01", "p01", &got, &dev, &E));
  FAILS(TUNE_ENOTFOUND, db_replay_find(ro, "copy", "c02", "p02", &got, &dev, &E)); /* skipped */

  /* the writer adds a newer result: the reader sees it on its next lookup */
  r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c1, fx->small, DB_OK, 180);
  r.honest_rel_l2 = 3e-3;
  OK(db_result_put(fx->db, &r, &E));
  OK(db_replay_find(ro, "copy", "c01", "p01", &got, &dev, &E));
  CHECK(got.id == r.id && got.median_ns == 180 && got.honest_rel_l2 == 3e-3);

  /* the device a recorded database speaks for: the GPU of its latest result */
  memset(&dev, 0, sizeof dev);
  OK(db_device_recorded(ro, "copy", &dev, NULL, &E));
  CHECK(strcmp(dev.kind, "gpu") == 0 && strcmp(dev.uuid, "GPU-0000-1111") == 0);
  FAILS(TUNE_ENOTFOUND, db_device_recorded(ro, "gemm", &dev, NULL, &E));

  /* a read-only connection cannot write */
  int64_t id = 0;
  FAILS(TUNE_ESQL, db_recipe_put(ro, "copy", "zzzz", "", "", &id, &E));
  db_close(ro);

  /* a recorded file of a schema before 0010-result-honest-error, opened read-only: replayed
     without the column, its honest error unknown */
  char old[512], sql[700];
  path_in(old, sizeof old, "before_honest.db");
  snprintf(sql, sizeof sql, "VACUUM INTO '%s'", old);
  CHECK(raw_exec(fx->path, sql) == SQLITE_OK);
  CHECK(raw_exec(old, "ALTER TABLE results DROP COLUMN honest_rel_l2;"
                      " DELETE FROM schema_migrations WHERE name = '0010-result-honest-error';"
                      " PRAGMA user_version = 9") == SQLITE_OK);
  ro = NULL;
  OK(db_open(old, 1, &ro, &E));
  if (!ro) return;
  OK(db_replay_find(ro, "copy", "c01", "p01", &got, &dev, &E));
  CHECK(got.median_ns == 180 && got.honest_rel_l2 == -1);
  db_close(ro);
}

static void test_binaries(fixture *fx) {
  static const unsigned char cubin[] = {0x7f, 'E', 'L', 'F', 0, 0, 0, 1, 0, 0xff, 0, 0, 42, 0};
  static const char ptx[] = "// ptx\n.version 8.8\n.target sm_90\n";
  db_binary b;
  memset(&b, 0, sizeof b);
  strcpy(b.key, "bin01");
  strcpy(b.arch, "sm_90");
  strcpy(b.nvrtc_version, "13.0");
  strcpy(b.options, "-arch=sm_90 -DBLOCK=128 --ptxas-options=-v");
  b.ok = 1;
  b.cubin = (unsigned char *)cubin;
  b.cubin_size = sizeof cubin;
  b.ptx = (char *)ptx;
  b.ptx_size = sizeof ptx; /* with its NUL, as nvrtcGetPTXSize counts it */
  b.log = "ptxas info: Used 32 registers";
  strcpy(b.lowered_name, "_Z4copyILi128EEvPKfPf");
  b.registers = 32;
  b.shared_bytes = 0;
  b.local_bytes = 0;
  b.spill_stores = 0;
  b.spill_loads = 0;
  b.compile_ms = 12.5;
  int has = 1;
  OK(db_binary_has(fx->db, "bin01", &has, &E));
  CHECK(has == 0);
  OK(db_binary_put(fx->db, &b, &E));
  OK(db_binary_has(fx->db, "bin01", &has, &E));
  CHECK(has == 1);

  db_binary g;
  OK(db_binary_get(fx->db, "bin01", &g, &E));
  CHECK(g.cubin_size == sizeof cubin && g.cubin && memcmp(g.cubin, cubin, sizeof cubin) == 0);
  CHECK(g.ptx_size == sizeof ptx && g.ptx && memcmp(g.ptx, ptx, sizeof ptx) == 0);
  CHECK(g.log && strcmp(g.log, b.log) == 0);
  CHECK(strcmp(g.options, b.options) == 0 && strcmp(g.lowered_name, b.lowered_name) == 0);
  CHECK(g.ok == 1 && g.registers == 32 && g.compile_ms == 12.5);
  db_binary_release(&g);
  CHECK(g.cubin == NULL && g.ptx == NULL && g.log == NULL && g.cubin_size == 0 &&
        g.ptx_size == 0);
  db_binary_release(&g); /* twice is harmless */

  /* INSERT OR REPLACE: a compile error under another key, then the same key again */
  db_binary e;
  memset(&e, 0, sizeof e);
  strcpy(e.key, "bin02");
  strcpy(e.arch, "sm_90");
  e.ok = 0;
  e.log = "error: identifier \"foo\" is undefined";
  e.registers = e.shared_bytes = e.local_bytes = e.spill_stores = e.spill_loads = -1;
  OK(db_binary_put(fx->db, &e, &E));
  e.log = "second log";
  OK(db_binary_put(fx->db, &e, &E));
  OK(db_binary_get(fx->db, "bin02", &g, &E));
  CHECK(g.ok == 0 && g.cubin == NULL && g.cubin_size == 0 && g.ptx == NULL);
  CHECK(g.log && strcmp(g.log, "second log") == 0 && g.registers == -1);
  db_binary_release(&g);
  CHECK(raw_int(fx->path, "SELECT count(*) FROM binaries") == 2);

  FAILS(TUNE_ENOTFOUND, db_binary_get(fx->db, "nope", &g, &E));
  CHECK(g.cubin == NULL && g.log == NULL);
}

static void test_peaks(fixture *fx) {
  double v = 0;
  int64_t n = -1;
  FAILS(TUNE_ENOTFOUND, db_peak_get(fx->db, fx->gpu, "copy_GBps", &v, &E));
  OK(db_peak_devices(fx->db, "copy_GBps", &n, &E));
  CHECK(n == 0);
  OK(db_peak_put(fx->db, fx->gpu, "copy_GBps", 4000, "GB/s", &E));
  OK(db_peak_put(fx->db, fx->gpu, "copy_GBps", 4100, "GB/s", &E));
  OK(db_peak_get(fx->db, fx->gpu, "copy_GBps", &v, &E));
  CHECK(v == 4100);
  OK(db_peak_devices(fx->db, "copy_GBps", &n, &E)); /* two measurements, one device */
  CHECK(n == 1);
  OK(db_peak_devices(fx->db, "bf16_dense_TFLOPs", &n, &E));
  CHECK(n == 0);
}

static json_t *find_row(json_t *arr, const char *key, const char *val) {
  size_t i;
  json_t *row;
  json_array_foreach(arr, i, row) {
    const char *s = json_string_value(json_object_get(row, key));
    if (s && strcmp(s, val) == 0) return row;
  }
  return NULL;
}

static void test_queries(fixture *fx) {
  /* small on the GPU so far: c1 ok 200, wrong, skipped, not_recorded, ok 190, ok 180.
   * Add: c2 ok 150 (the best), c3 wrong 50 and suspicious 10 (faster, not ok),
   * a compile error, and large: c2 ok 1000. */
  db_result r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c2, fx->small, DB_OK, 150);
  r.registers = 40;
  r.shared_bytes = 1024;
  OK(db_result_put(fx->db, &r, &E));
  int64_t best_small = r.id;
  r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c3, fx->small, DB_WRONG, 50);
  OK(db_result_put(fx->db, &r, &E));
  r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c3, fx->small, DB_SUSPICIOUS, 10);
  OK(db_result_put(fx->db, &r, &E));
  r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c3, fx->small, DB_COMPILE_ERROR, 0);
  strcpy(r.error_text, "error: too many resources\nline 2\nline 3");
  OK(db_result_put(fx->db, &r, &E));
  int64_t compile_err = r.id;
  r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c2, fx->large, DB_OK, 1000);
  OK(db_result_put(fx->db, &r, &E));
  int64_t best_large = r.id;

  json_t *rows = NULL;
  OK(db_query_best(fx->db, NULL, NULL, &rows, &E));
  CHECK(json_is_array(rows) && json_array_size(rows) == 2);
  if (json_array_size(rows) == 2) {
    json_t *a = json_array_get(rows, 0), *b = json_array_get(rows, 1);
    /* ordered by problem name: large before small */
    CHECK(strcmp(json_string_value(json_object_get(a, "problem")), "large") == 0);
    CHECK(json_integer_value(json_object_get(a, "result_id")) == best_large);
    CHECK(json_integer_value(json_object_get(b, "result_id")) == best_small);
    CHECK(json_real_value(json_object_get(b, "median_ns")) == 150);
    CHECK(strcmp(json_string_value(json_object_get(b, "recipe")), "copy") == 0);
    CHECK(strcmp(json_string_value(json_object_get(b, "device")), "NVIDIA H200") == 0);
    CHECK(json_integer_value(json_object_get(json_object_get(b, "params"), "BLOCK")) == 256);
    CHECK(json_integer_value(json_object_get(json_object_get(b, "problem_dims"), "n")) == 1024);
    CHECK(json_integer_value(json_object_get(b, "registers")) == 40);
    CHECK(json_integer_value(json_object_get(b, "shared_bytes")) == 1024);
    CHECK(json_integer_value(json_object_get(b, "samples")) == 50);
    CHECK(json_is_real(json_object_get(b, "min_ns")) && json_is_real(json_object_get(b, "max_ns")));
    CHECK(json_is_string(json_object_get(b, "created_at")));
    json_t *st = json_object_get(b, "statuses");
    CHECK(json_integer_value(json_object_get(st, "ok")) == 4);
    CHECK(json_integer_value(json_object_get(st, "wrong")) == 2);
    CHECK(json_integer_value(json_object_get(st, "suspicious")) == 1);
    CHECK(json_integer_value(json_object_get(st, "compile_error")) == 1);
    CHECK(json_integer_value(json_object_get(st, "skipped")) == 1);
    CHECK(json_integer_value(json_object_get(st, "not_recorded")) == 1);
  }
  json_decref(rows);
  OK(db_query_best(fx->db, "copy", "small", &rows, &E));
  CHECK(json_array_size(rows) == 1);
  json_decref(rows);
  OK(db_query_best(fx->db, "nope", NULL, &rows, &E));
  CHECK(json_is_array(rows) && json_array_size(rows) == 0);
  json_decref(rows);

  /* list: ok rows first by median, then the others by status name */
  OK(db_query_list(fx->db, "copy", "small", NULL, 0, &rows, &E));
  CHECK(json_array_size(rows) == 11);
  if (json_array_size(rows) == 11) {
    /* the compile-only target's ok (5 ns) sorts first: list is not GPU-only */
    CHECK(strcmp(json_string_value(json_object_get(json_array_get(rows, 0), "device")),
                 "sm_90a") == 0);
    json_t *first = json_array_get(rows, 1);
    CHECK(json_integer_value(json_object_get(first, "id")) == best_small);
    CHECK(strcmp(json_string_value(json_object_get(first, "status")), "ok") == 0);
    CHECK(json_integer_value(json_object_get(json_object_get(first, "params"), "BLOCK")) == 256);
    CHECK(json_is_null(json_object_get(first, "error_text")));
    /* ok rows in ascending median; the non-ok after (the arch-device ok 5 is first) */
    double prev = -1;
    int oks = 0;
    for (size_t i = 0; i < json_array_size(rows); i++) {
      json_t *row = json_array_get(rows, i);
      if (strcmp(json_string_value(json_object_get(row, "status")), "ok") != 0) break;
      oks++;
    }
    CHECK(oks == 5); /* 4 on the GPU + 1 on the arch target */
    for (int i = 0; i < oks; i++) {
      double m = json_real_value(json_object_get(json_array_get(rows, i), "median_ns"));
      CHECK(m >= prev);
      prev = m;
    }
    json_t *ce = NULL;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
      if (json_integer_value(json_object_get(row, "id")) == compile_err) ce = row;
    }
    CHECK(ce && strcmp(json_string_value(json_object_get(ce, "error_text")),
                       "error: too many resources") == 0);
    CHECK(ce && json_is_integer(json_object_get(ce, "spill_stores")));
  }
  json_decref(rows);
  OK(db_query_list(fx->db, NULL, NULL, "wrong", 0, &rows, &E));
  CHECK(json_array_size(rows) == 2);
  json_decref(rows);
  OK(db_query_list(fx->db, NULL, NULL, NULL, 3, &rows, &E));
  CHECK(json_array_size(rows) == 3);
  json_decref(rows);
  FAILS(TUNE_EINVAL, db_query_list(fx->db, NULL, NULL, "fast", 0, &rows, &E));
  CHECK(rows == NULL);

  /* show: every column and the rows around it, the binary without its cubin */
  json_t *obj = NULL;
  OK(db_query_show(fx->db, 1, &obj, &E)); /* the first result: binary bin01, seed UINT64_MAX */
  if (obj) {
    CHECK(json_integer_value(json_object_get(obj, "id")) == 1);
    CHECK(strcmp(json_string_value(json_object_get(obj, "status")), "ok") == 0);
    CHECK(json_is_null(json_object_get(obj, "stddev_ns"))); /* NaN */
    CHECK(json_is_string(json_object_get(obj, "seed")) &&
          strcmp(json_string_value(json_object_get(obj, "seed")), "18446744073709551615") == 0);
    const char *cols[] = {"run_id", "recipe_id", "device_id", "config_id", "problem_id",
                          "median_ns", "min_ns", "max_ns", "samples", "registers",
                          "shared_bytes", "dyn_shared_bytes", "local_bytes", "spill_stores",
                          "spill_loads", "compile_ms", "measure_ms", "err_rel_l2", "honest_rel_l2",
                          "err_max_abs", "binary_key", "error_text", "created_at"};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
      CHECK(json_object_get(obj, cols[i]) != NULL);
    json_t *rec = json_object_get(obj, "recipe"), *prob = json_object_get(obj, "problem");
    json_t *cfg = json_object_get(obj, "config"), *dev = json_object_get(obj, "device");
    json_t *run = json_object_get(obj, "run"), *bin = json_object_get(obj, "binary");
    CHECK(strcmp(json_string_value(json_object_get(rec, "name")), "copy") == 0);
    CHECK(json_integer_value(json_object_get(json_object_get(prob, "dims"), "n")) == 1024);
    CHECK(json_integer_value(json_object_get(json_object_get(cfg, "params"), "BLOCK")) == 128);
    CHECK(strcmp(json_string_value(json_object_get(cfg, "origin")), "exhaustive") == 0);
    CHECK(strcmp(json_string_value(json_object_get(dev, "name")), "NVIDIA H200") == 0);
    CHECK(json_integer_value(json_object_get(dev, "sm_count")) == 132);
    CHECK(strcmp(json_string_value(json_object_get(run, "backend")), "cuda:0") == 0);
    CHECK(strcmp(json_string_value(json_object_get(run, "seed")), "18446744073709551614") == 0);
    CHECK(json_is_object(bin));
    CHECK(strcmp(json_string_value(json_object_get(bin, "options")),
                 "-arch=sm_90 -DBLOCK=128 --ptxas-options=-v") == 0);
    CHECK(strcmp(json_string_value(json_object_get(bin, "log")),
                 "ptxas info: Used 32 registers") == 0);
    CHECK(json_integer_value(json_object_get(bin, "registers")) == 32);
    CHECK(json_integer_value(json_object_get(bin, "cubin_bytes")) == 14);
    CHECK(json_object_get(bin, "cubin") == NULL && json_object_get(bin, "ptx") == NULL);
  }
  json_decref(obj);
  obj = NULL;
  OK(db_query_show(fx->db, compile_err, &obj, &E));
  CHECK(obj && json_is_null(json_object_get(obj, "binary")));
  CHECK(obj && strcmp(json_string_value(json_object_get(obj, "error_text")),
                      "error: too many resources\nline 2\nline 3") == 0);
  json_decref(obj);
  FAILS(TUNE_ENOTFOUND, db_query_show(fx->db, 999999, &obj, &E));
  CHECK(obj == NULL);

  /* provenance: one row per (recipe, GPU); the arch target is not GPU data */
  OK(db_query_provenance(fx->db, "copy", &rows, &E));
  CHECK(json_array_size(rows) == 1);
  json_t *p = find_row(rows, "device", "NVIDIA H200");
  CHECK(p != NULL);
  if (p) {
    CHECK(json_integer_value(json_object_get(p, "results")) == 12);
    CHECK(json_integer_value(json_object_get(p, "ok")) == 5);
    CHECK(strcmp(json_string_value(json_object_get(p, "arch")), "sm_90") == 0);
    CHECK(strcmp(json_string_value(json_object_get(p, "driver")), "13.1") == 0);
    json_t *tv = json_object_get(p, "tool_versions");
    CHECK(json_is_array(tv) && json_array_size(tv) == 1 &&
          strcmp(json_string_value(json_array_get(tv, 0)), "0.1.0") == 0);
    const char *first = json_string_value(json_object_get(p, "first_at"));
    const char *last = json_string_value(json_object_get(p, "last_at"));
    CHECK(first && last && strcmp(first, last) <= 0);
  }
  json_decref(rows);
  OK(db_query_provenance(fx->db, "gemm", &rows, &E));
  CHECK(json_array_size(rows) == 0);
  json_decref(rows);

  OK(db_run_end(fx->db, fx->run, "done", &E));
  CHECK(raw_int(fx->path, "SELECT count(*) FROM runs WHERE status = 'done' AND ended_at IS NOT "
                          "NULL") == 1);
}

/* Fail the n-th SQLite call of a sequence, for every n: each call fails
 * cleanly with a message or succeeds, no transaction is left open, and the
 * connection works afterwards. Leaks show under valgrind. */
static void test_faults(fixture *fx) {
  int n_failed_calls = 0, broken = 0, n;
  for (n = 1; n < 400; n++) {
    db_fault_set(fx->db, n);
    int before = fx->db->n_faults;
    tune_err e;
    int64_t id = 0;
    db_result r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c1, fx->large, DB_OK, 300 + n);
    db_binary b, g;
    json_t *rows = NULL;
    memset(&b, 0, sizeof b);
    snprintf(b.key, sizeof b.key, "fault%d", n);
    b.ok = 1;
    b.cubin = (unsigned char *)"\0\1\2";
    b.cubin_size = 3;
    b.log = "log";
    int rcs[24];
    int k = 0;
#define STEP(call)                                                    \
  do {                                                                \
    tune_err_clear(&e);                                               \
    rcs[k] = (call);                                                  \
    if (rcs[k] != TUNE_OK && (!e.msg[0] || e.code != rcs[k])) broken++; \
    k++;                                                              \
  } while (0)
    STEP(db_result_put(fx->db, &r, &e));
    STEP(db_config_put(fx->db, "copy", "cf", "{\"BLOCK\": 64}", "random", &id, &e));
    STEP(db_binary_put(fx->db, &b, &e));
    STEP(db_binary_get(fx->db, "bin01", &g, &e));
    if (rcs[k - 1] == TUNE_OK) db_binary_release(&g);
    STEP(db_query_best(fx->db, NULL, NULL, &rows, &e));
    json_decref(rows);
    rows = NULL;
    /* filtered to "small" so the sequence's length does not grow with n */
    STEP(db_query_list(fx->db, "copy", "small", NULL, 0, &rows, &e));
    json_decref(rows);
    rows = NULL;
    json_t *obj = NULL;
    STEP(db_query_show(fx->db, 1, &obj, &e));
    json_decref(obj);
    STEP(db_query_provenance(fx->db, NULL, &rows, &e));
    json_decref(rows);
    rows = NULL;
    db_device d = gpu_dev();
    STEP(db_device_put(fx->db, &d, &id, &e));
    db_run run;
    memset(&run, 0, sizeof run);
    run.recipe_id = fx->recipe;
    run.device_id = fx->gpu;
    STEP(db_run_begin(fx->db, &run, &id, &e));
    if (rcs[k - 1] == TUNE_OK) STEP(db_run_end(fx->db, id, "interrupted", &e));
    db_result got;
    db_device dev;
    STEP(db_result_find(fx->db, fx->recipe, fx->gpu, fx->c1, fx->small, &got, &e));
    STEP(db_replay_find(fx->db, "copy", "c01", "p01", &got, &dev, &e));
    STEP(db_peak_put(fx->db, fx->gpu, "copy_GBps", 4200, "GB/s", &e));
    double v = 0;
    STEP(db_peak_get(fx->db, fx->gpu, "copy_GBps", &v, &e));
    int ver = 0;
    STEP(db_schema_version(fx->db, &ver, &e));
#undef STEP
    for (int i = 0; i < k; i++) n_failed_calls += rcs[i] != TUNE_OK;
    if (sqlite3_get_autocommit(fx->db->h) == 0) broken++;
    int injected = fx->db->n_faults > before;
    db_fault_set(fx->db, 0);
    if (!injected) break; /* n is past the last checked call: all ran clean */
  }
  printf("fault injection: %d checked calls failed one by one, %d tune calls failed cleanly\n",
         n - 1, n_failed_calls);
  CHECK(n > 10);                /* the sequence has that many checked calls */
  CHECK(n < 400);               /* and ran clean once n passed them all */
  CHECK(n_failed_calls >= n - 1);
  CHECK(broken == 0);
  /* still usable */
  db_result got;
  OK(db_result_find(fx->db, fx->recipe, fx->gpu, fx->c1, fx->large, &got, &E));
  json_t *rows = NULL;
  OK(db_query_best(fx->db, NULL, NULL, &rows, &E));
  json_decref(rows);
}

/* One connection shared by threads (the compile pool's cache lookups): the
 * calls serialize on the connection and none fails. A lock left held by a
 * failure path earlier would hang this test. */
typedef struct thread_arg {
  fixture *fx;
  int index, failures;
} thread_arg;

static void *thread_main(void *p) {
  thread_arg *a = p;
  fixture *fx = a->fx;
  tune_err e;
  for (int i = 0; i < 100; i++) {
    db_binary b, g;
    memset(&b, 0, sizeof b);
    snprintf(b.key, sizeof b.key, "t%d-%d", a->index, i);
    b.ok = 1;
    b.cubin = (unsigned char *)"\0x\0y";
    b.cubin_size = 4;
    tune_err_clear(&e);
    if (db_binary_put(fx->db, &b, &e)) a->failures++;
    tune_err_clear(&e);
    if (db_binary_get(fx->db, b.key, &g, &e) || g.cubin_size != 4) a->failures++;
    db_binary_release(&g);
    db_result r = mk_result(fx->run, fx->recipe, fx->gpu, fx->c2, fx->large, DB_OK, 2000 + i);
    tune_err_clear(&e);
    if (db_result_put(fx->db, &r, &e)) a->failures++;
    db_result got;
    tune_err_clear(&e);
    if (db_result_find(fx->db, fx->recipe, fx->gpu, fx->c2, fx->large, &got, &e)) a->failures++;
    if (e.code) fprintf(stderr, "thread %d: %s\n", a->index, e.msg);
  }
  return NULL;
}

static void test_threads(fixture *fx) {
  enum { N = 4 };
  pthread_t t[N];
  thread_arg a[N];
  int started = 0;
  for (int i = 0; i < N; i++) {
    a[i].fx = fx;
    a[i].index = i;
    a[i].failures = 0;
    if (pthread_create(&t[i], NULL, thread_main, &a[i]) == 0) started++;
    else break;
  }
  CHECK(started == N);
  int failures = 0;
  for (int i = 0; i < started; i++) {
    pthread_join(t[i], NULL);
    failures += a[i].failures;
  }
  CHECK(failures == 0);
  CHECK(raw_int(fx->path, "SELECT count(*) FROM binaries WHERE key LIKE 't%'") == N * 100);
}

/* ---- filters, CSV, named migrations, views ------------------------------ */

static void test_filter_set(void) {
  db_filter f;
  memset(&f, 0, sizeof f);
  OK(db_filter_set(&f, "recipe", "copy", &E));
  OK(db_filter_set(&f, "origin", "peer:*", &E));
  OK(db_filter_set(&f, "status", "compile*", &E)); /* a prefix is not checked as a status */
  OK(db_filter_set(&f, "timing", "sustained", &E));
  CHECK(f.recipe && !strcmp(f.recipe, "copy") && f.origin && !strcmp(f.origin, "peer:*"));
  FAILS(TUNE_EINVAL, db_filter_set(&f, "colour", "red", &E));
  CHECK(strstr(E.msg, "colour") && strstr(E.msg, DB_FILTER_KEYS));
  FAILS(TUNE_EINVAL, db_filter_set(&f, "recipe", "gemm", &E)); /* given twice */
  CHECK(strstr(E.msg, "twice") && !strcmp(f.recipe, "copy"));
  FAILS(TUNE_EINVAL, db_filter_set(&f, "device", NULL, &E));
  memset(&f, 0, sizeof f);
  FAILS(TUNE_EINVAL, db_filter_set(&f, "status", "fast", &E));
  FAILS(TUNE_EINVAL, db_filter_set(&f, "timing", "slow", &E));
  CHECK(!f.status && !f.timing);
}

/* The ids of rows, in order, as "1,2,3". */
static void ids_of(json_t *rows, const char *key, char *buf, size_t n) {
  size_t i, len = 0;
  json_t *r;
  buf[0] = 0;
  json_array_foreach(rows, i, r)
    len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%lld", i ? "," : "",
                            (long long)json_integer_value(json_object_get(r, key)));
}

/* Runs after test_queries: small has ok results of c1 (exhaustive) and c2 (random), c3
 * (llm:test) has wrong, suspicious and compile_error ones; large has c2 ok. */
static void test_filtered_queries(fixture *fx) {
  json_t *rows = NULL, *all = NULL;
  char got[256], want[256];
  db_filter f;
  memset(&f, 0, sizeof f);
  OK(db_query_list_where(fx->db, &f, 0, &all, &E));
  CHECK(json_array_size(all) > 5);
  OK(db_query_list_where(fx->db, NULL, 0, &rows, &E)); /* NULL: the same */
  CHECK(json_equal(rows, all));
  json_decref(rows);
  /* each key filters; the rows are those of the unfiltered list that match */
  static const struct { const char *key, *value, *col; } cases[] = {
      {"status", "wrong", "status"}, {"origin", "llm:test", "origin"},
      {"origin", "llm:*", "origin"}, {"problem", "large", "problem"},
      {"device", "NVIDIA H200", "device"}, {"timing", "burst", "timing"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    memset(&f, 0, sizeof f);
    OK(db_filter_set(&f, cases[c].key, cases[c].value, &E));
    OK(db_query_list_where(fx->db, &f, 0, &rows, &E));
    size_t i, len = 0, n_want = 0;
    json_t *r;
    want[0] = 0;
    size_t plen = strlen(cases[c].value) - (cases[c].value[strlen(cases[c].value) - 1] == '*');
    json_array_foreach(all, i, r) {
      const char *v = json_string_value(json_object_get(r, cases[c].col));
      if (!v || strncmp(v, cases[c].value, plen) || (plen == strlen(cases[c].value) && v[plen]))
        continue;
      len += (size_t)snprintf(want + len, sizeof want - len, "%s%lld", n_want++ ? "," : "",
                              (long long)json_integer_value(json_object_get(r, "id")));
    }
    ids_of(rows, "id", got, sizeof got);
    CHECK(n_want > 0 && !strcmp(got, want));
    if (strcmp(got, want)) fprintf(stderr, "  %s=%s: got %s, want %s\n", cases[c].key, cases[c].value, got, want);
    json_decref(rows);
  }
  /* a prefix is not a pattern: '%' and '_' match only themselves */
  memset(&f, 0, sizeof f);
  OK(db_filter_set(&f, "origin", "%*", &E));
  OK(db_query_list_where(fx->db, &f, 0, &rows, &E));
  CHECK(json_array_size(rows) == 0);
  json_decref(rows);
  /* combined filters AND together; an unmatched value gives no rows */
  memset(&f, 0, sizeof f);
  OK(db_filter_set(&f, "status", "ok", &E));
  OK(db_filter_set(&f, "origin", "random", &E));
  OK(db_query_list_where(fx->db, &f, 0, &rows, &E));
  CHECK(json_array_size(rows) == 2); /* c2 on small (150) and on large (1000) */
  json_decref(rows);
  OK(db_filter_set(&f, "timing", "sustained", &E));
  OK(db_query_list_where(fx->db, &f, 0, &rows, &E));
  CHECK(json_array_size(rows) == 0);
  json_decref(rows);
  /* best among what the filters select: exhaustive's best on small is c1's 180 */
  memset(&f, 0, sizeof f);
  OK(db_filter_set(&f, "origin", "exhaustive", &E));
  OK(db_filter_set(&f, "problem", "small", &E));
  OK(db_query_best_where(fx->db, &f, &rows, &E));
  CHECK(json_array_size(rows) == 1);
  CHECK(json_number_value(json_object_get(json_array_get(rows, 0), "median_ns")) == 180);
  json_decref(rows);
  memset(&f, 0, sizeof f);
  OK(db_filter_set(&f, "status", "wrong", &E));
  FAILS(TUNE_EINVAL, db_query_best_where(fx->db, &f, &rows, &E));
  CHECK(rows == NULL);
  json_decref(all);
}

static void test_csv(void) {
  json_error_t jerr;
  json_t *rows = json_loads(
      "[{\"id\": 1, \"name\": \"plain\", \"params\": {\"BLOCK\": 128, \"fast\": true},"
      "  \"t\": 1.5, \"none\": null, \"list\": [1, 2]},"
      " {\"id\": 2, \"name\": \"a, b\", \"params\": {\"BLOCK\": 64}, \"t\": 0.1,"
      "  \"quote\": \"say \\\"hi\\\"\", \"log\": \"line 1\\nline 2\"}]",
      0, &jerr);
  CHECK(rows != NULL);
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  OK(db_rows_write_csv(rows, f, &E));
  fclose(f);
  const char *want =
      "id,name,params.BLOCK,params.fast,t,none,list,quote,log\r\n"
      "1,plain,128,true,1.5,,\"[1,2]\",,\r\n"
      "2,\"a, b\",64,,0.1,,,\"say \"\"hi\"\"\",\"line 1\nline 2\"\r\n";
  CHECK(buf && !strcmp(buf, want));
  if (buf && strcmp(buf, want)) fprintf(stderr, "  csv:\n%s\n  want:\n%s\n", buf, want);
  free(buf);
  /* no rows: an empty header line */
  json_t *empty = json_array();
  buf = NULL;
  f = open_memstream(&buf, &n);
  OK(db_rows_write_csv(empty, f, &E));
  fclose(f);
  CHECK(buf && !strcmp(buf, "\r\n"));
  free(buf);
  json_decref(empty);
  json_decref(rows);
}

static int raw_has(const char *path, const char *name) {
  char sql[160];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM schema_migrations WHERE name = '%s'", name);
  return raw_int(path, sql) == 1;
}

static void test_named_migrations(void) {
  /* names in the order they apply, one per schema version */
  int n = 0;
  while (db_schema_migration_name(n)) {
    if (n) CHECK(strcmp(db_schema_migration_name(n - 1), db_schema_migration_name(n)) < 0);
    n++;
  }
  CHECK(n == DB_SCHEMA_VERSION);
  CHECK(db_schema_migration_name(-1) == NULL);

  /* a new file records every migration, with a time */
  char path[512];
  path_in(path, sizeof path, "named.db");
  db_conn *db = NULL;
  OK(db_open(path, 0, &db, &E));
  db_close(db);
  CHECK(raw_int(path, "SELECT count(*) FROM schema_migrations WHERE applied_at IS NOT NULL") ==
        DB_SCHEMA_VERSION);
  CHECK(raw_int(path, "PRAGMA user_version") == DB_SCHEMA_VERSION);
  CHECK(raw_has(path, "0001-initial") && raw_has(path, "0005-views"));

  /* a file of numbered migrations (schema 4, before the ledger and the views): on a write
     the first four are recorded without a time and the missing one applied */
  CHECK(raw_exec(path, "DROP VIEW v_vs_peer; DROP VIEW v_best; DROP VIEW v_results;"
                       " ALTER TABLE recipes DROP COLUMN code_hash; ALTER TABLE results DROP COLUMN gpu;"
                       " ALTER TABLE results DROP COLUMN protocol; ALTER TABLE measurements DROP COLUMN gpu;"
                       " ALTER TABLE results DROP COLUMN honest_rel_l2;"
                       " DROP TABLE selections; ALTER TABLE comparisons DROP COLUMN kind;"
                       " DROP TABLE schema_migrations; PRAGMA user_version = 4") == SQLITE_OK);
  db = NULL;
  OK(db_open(path, 1, &db, &E)); /* read-only: as it is */
  db_close(db);
  CHECK(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'schema_migrations'") == 0);
  db = NULL;
  OK(db_open(path, 0, &db, &E));
  db_close(db);
  CHECK(raw_int(path, "SELECT count(*) FROM schema_migrations WHERE applied_at IS NULL") == 4);
  CHECK(raw_int(path, "SELECT count(*) FROM schema_migrations WHERE name = '0005-views'"
                      " AND applied_at IS NOT NULL") == 1);
  CHECK(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE type = 'view'") == 3);
  CHECK(raw_int(path, "PRAGMA user_version") == DB_SCHEMA_VERSION);

  /* a migration another branch added, sorting before one this file lacks: applied by name */
  CHECK(raw_exec(path, "DROP VIEW v_vs_peer; DROP VIEW v_best; DROP VIEW v_results;"
                       " DELETE FROM schema_migrations WHERE name = '0005-views';"
                       " PRAGMA user_version = 4") == SQLITE_OK);
  db = NULL;
  OK(db_open(path, 0, &db, &E));
  db_close(db);
  CHECK(raw_has(path, "0005-views") && raw_int(path, "PRAGMA user_version") == DB_SCHEMA_VERSION);

  /* a file with a migration this build does not know: refused for writing, named; readable */
  CHECK(raw_exec(path, "INSERT INTO schema_migrations VALUES ('0005-other-branch', 'x');"
                       " DELETE FROM schema_migrations WHERE name = '0004-even-handed-measurement';")
        == SQLITE_OK);
  db = (db_conn *)1;
  FAILS(TUNE_EINVAL, db_open(path, 0, &db, &E));
  CHECK(db == NULL && strstr(E.msg, "0005-other-branch") && strstr(E.msg, "does not know") &&
        strstr(E.msg, "named.db"));
  CHECK(!raw_has(path, "0004-even-handed-measurement")); /* nothing applied */
  db = NULL;
  OK(db_open(path, 1, &db, &E));
  db_close(db);

  /* a schema version past the numbered ones without a ledger is no file tune wrote */
  CHECK(raw_exec(path, "DROP TABLE schema_migrations; PRAGMA user_version = 5") == SQLITE_OK);
  FAILS(TUNE_EINVAL, db_open(path, 0, &db, &E));
  CHECK(strstr(E.msg, "schema_migrations") != NULL);
  remove_db(path);
}

/* The views agree with the queries tune runs (after test_queries, with a peer added). */
static void test_views(fixture *fx) {
  int64_t peer = 0;
  OK(db_config_put(fx->db, "copy", "peer01", "{\"peer\": \"cublas\"}", "peer:cublas", &peer, &E));
  db_result r = mk_result(fx->run, fx->recipe, fx->gpu, peer, fx->small, DB_OK, 120);
  OK(db_result_put(fx->db, &r, &E)); /* faster than every variant, yet no best */
  r = mk_result(fx->run, fx->recipe, fx->gpu, peer, fx->small, DB_OK, 90);
  strcpy(r.timing, "sustained");
  OK(db_result_put(fx->db, &r, &E));
  json_t *best = NULL;
  OK(db_query_best(fx->db, NULL, NULL, &best, &E));
  CHECK(raw_int(fx->path, "SELECT count(*) FROM v_best") == (long long)json_array_size(best));
  size_t i;
  json_t *row;
  json_array_foreach(best, i, row) {
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM v_best WHERE result_id = %lld AND median_ns = %.17g",
             (long long)json_integer_value(json_object_get(row, "result_id")),
             json_number_value(json_object_get(row, "median_ns")));
    CHECK(raw_int(fx->path, sql) == 1);
  }
  json_decref(best);
  CHECK(raw_int(fx->path, "SELECT count(*) FROM v_results") ==
        raw_int(fx->path, "SELECT count(*) FROM results"));
  CHECK(raw_int(fx->path, "SELECT count(*) FROM v_results WHERE params IS NULL OR recipe IS NULL") == 0);
  /* beside the peer: tune's best burst on small is 150 (c2); the peer 120 burst, 90 sustained */
  CHECK(raw_int(fx->path, "SELECT count(*) FROM v_vs_peer WHERE problem = 'small'") == 2);
  CHECK(raw_int(fx->path, "SELECT count(*) FROM v_vs_peer WHERE problem = 'small' AND peer = 'cublas'"
                          " AND peer_timing = 'burst' AND tune_burst_ns = 150 AND peer_ns = 120"
                          " AND abs(ratio - 0.8) < 1e-12") == 1);
  CHECK(raw_int(fx->path, "SELECT count(*) FROM v_vs_peer WHERE peer_timing = 'sustained'"
                          " AND peer_ns = 90") == 1);
}

/* A selection (schema 0007) puts its choice first in db_query_best and v_best, with its reason;
 * candidates are one per config of exactly that source, problem, GPU and timing mode. */
static void test_selections(fixture *fx) {
  int64_t cfg = 0, slower = 0;
  OK(db_config_put(fx->db, "copy", "sel01", "{\"BLOCK\": 64}", "search", &cfg, &E));
  db_result r = mk_result(fx->run, fx->recipe, fx->gpu, cfg, fx->small, DB_OK, 151);
  OK(db_result_put(fx->db, &r, &E));
  slower = r.id;
  db_top top[4];
  int n = 0;
  OK(db_selection_candidates(fx->db, fx->recipe, fx->small, fx->gpu, "burst", 4, top, &n, &E));
  CHECK(n >= 2 && top[0].median_ns == 150 && top[1].result_id == slower);
  for (int i = 0; i < n; ++i) CHECK(strcmp(top[i].params_json, "{\"peer\": \"cublas\"}") != 0);
  int n_sus = -1;
  OK(db_selection_candidates(fx->db, fx->recipe, fx->small, fx->gpu, "sustained", 4, top, &n_sus, &E));
  CHECK(n_sus == 0); /* the only sustained result is the peer's */

  int64_t cmp = 0;
  OK(db_selection_rounds_begin(fx->db, fx->recipe, fx->gpu, 3, 2, "burst", &cmp, &E));
  db_selection sel = {.run_id = fx->run, .recipe_id = fx->recipe, .problem_id = fx->small, .device_id = fx->gpu,
                      .comparison_id = cmp, .result_id = slower, .rule = "tie-fewer-resources",
                      .why = "within the spread, fewer registers", .candidates = "[]"};
  strcpy(sel.timing, "burst");
  OK(db_selection_put(fx->db, &sel, &E));
  db_filter f = {.recipe = "copy", .problem = "small"};
  json_t *best = NULL;
  OK(db_query_best_where(fx->db, &f, &best, &E));
  json_t *row = json_array_get(best, 0);
  CHECK(json_integer_value(json_object_get(row, "result_id")) == slower);
  CHECK(!strcmp(json_string_value(json_object_get(row, "selection")) ? json_string_value(json_object_get(row, "selection")) : "",
                "tie-fewer-resources in burst rounds: within the spread, fewer registers"));
  json_decref(best);
  char sql[200];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM v_best WHERE result_id = %lld AND selected = 1", (long long)slower);
  CHECK(raw_int(fx->path, sql) == 1);
  /* the selection's rounds are no comparison to report */
  int64_t ids[8];
  int n_cmp = 0;
  OK(db_comparison_latest(fx->db, ids, 8, &n_cmp, &E));
  for (int i = 0; i < n_cmp; ++i) CHECK(ids[i] != cmp);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/db_test.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_status_names();
  test_create_reopen();
  test_open_failures();
  test_readonly_folder();
  test_filter_set();
  test_csv();
  test_named_migrations();

  fixture fx;
  memset(&fx, 0, sizeof fx);
  path_in(fx.path, sizeof fx.path, "main.db");
  OK(db_open(fx.path, 0, &fx.db, &E));
  if (fx.db) {
    test_upserts(&fx);
    test_results(&fx);
    test_status_check(&fx);
    test_replay(&fx);
    test_binaries(&fx);
    test_peaks(&fx);
    test_queries(&fx);
    test_filtered_queries(&fx);
    test_views(&fx);
    test_selections(&fx);
    test_faults(&fx);
    test_threads(&fx);
    db_close(fx.db);
  }

  const char *names[] = {"create.db", "newer.db", "foreign.db", "empty.db", "main.db",
                         "missing.db", "before_honest.db"};
  char path[512];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    path_in(path, sizeof path, names[i]);
    remove_db(path);
  }
  if (rmdir(dir) != 0) fprintf(stderr, "db_test: could not remove %s\n", dir);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
