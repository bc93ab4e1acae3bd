/* db_identity_test.c: unit tests of a result's identity (db/db_identity.h): the rule table, the
 * upsert of db_result_put under each rule, the compile-only resume lookup, `tune db merge` on
 * identities, and a soak of several processes putting the same results into one file at once.
 * Runs in a fresh temporary directory; prints "N passed, M failed". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "db.h"
#include "db_identity.h"
#include "db_merge.h"

static char dir[256];

#define OK(call)                                                                                    \
  do {                                                                                              \
    tune_err e_;                                                                                    \
    tune_err_clear(&e_);                                                                            \
    int rc_ = (call);                                                                               \
    if (rc_) fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, e_.msg);          \
    CHECK(rc_ == TUNE_OK);                                                                          \
  } while (0)
/* the calls above use `&e_` as their error */
#define E (&e_)

/* One integer from SQL on a connection of its own. */
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
  int rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_exec(h, sql, NULL, NULL, NULL);
  sqlite3_close(h);
  return rc;
}

/* The ids one test database's results refer to. */
typedef struct ids {
  int64_t recipe, gpu, problem, config, peer, config2;
} ids;

/* A new database at dir/name with one recipe, GPU, problem and three configs (one a peer's). */
static db_conn *fresh(const char *name, char *path, size_t cap, ids *x) {
  db_conn *db = NULL;
  snprintf(path, cap, "%s/%s", dir, name);
  OK(db_open(path, 0, &db, E));
  if (!db) return NULL;
  db_device d;
  memset(&d, 0, sizeof d);
  strcpy(d.kind, "gpu");
  strcpy(d.name, "NVIDIA H100 80GB HBM3");
  strcpy(d.arch, "sm_90");
  strcpy(d.uuid, "GPU-1");
  OK(db_device_put(db, &d, &x->gpu, E));
  OK(db_recipe_put(db, "copy", "src01", "recipes/copy.lua", "-- copy", &x->recipe, E));
  OK(db_problem_put(db, "copy", "small", "p01", "{\"n\": 1024}", &x->problem, E));
  OK(db_config_put(db, "copy", "c01", "{\"BLOCK\": 128}", "exhaustive", &x->config, E));
  OK(db_config_put(db, "copy", "c02", "{\"BLOCK\": 256}", "exhaustive", &x->config2, E));
  OK(db_config_put(db, "copy", "peer-torch", "{}", "peer:torch", &x->peer, E));
  return db;
}

static db_result result(const ids *x, int64_t config, db_status s, double median) {
  db_result r;
  memset(&r, 0, sizeof r);
  r.recipe_id = x->recipe;
  r.device_id = x->gpu;
  r.problem_id = x->problem;
  r.config_id = config;
  r.status = s;
  r.median_ns = r.min_ns = r.max_ns = median;
  r.samples = median > 0 ? 20 : 0;
  r.sm_mhz = r.mem_mhz = -1;
  r.err_rel_l2 = r.err_max_abs = -1;
  strcpy(r.binary_key, "bin01");
  if (s == DB_SKIPPED) strcpy(r.error_text, DB_REASON_COMPILE_ONLY);
  return r;
}

static long long count(const char *path, const char *sql) { return raw_int(path, sql); }

/* ---- the rule and the SQL condition ------------------------------------------------------------ */

static void test_rule(void) {
  CHECK(db_identity_rule(0, DB_OK, DB_OK) == DB_PUT_INSERTED);
  CHECK(db_identity_rule(0, DB_OK, DB_SKIPPED) == DB_PUT_INSERTED);
  CHECK(db_identity_rule(1, DB_SKIPPED, DB_OK) == DB_PUT_UPGRADED);
  CHECK(db_identity_rule(1, DB_NOT_RECORDED, DB_CRASH) == DB_PUT_UPGRADED);
  CHECK(db_identity_rule(1, DB_OK, DB_SKIPPED) == DB_PUT_KEPT);
  CHECK(db_identity_rule(1, DB_SKIPPED, DB_NOT_RECORDED) == DB_PUT_KEPT);
  CHECK(db_identity_rule(1, DB_OK, DB_OK) == DB_PUT_RETIMED);
  CHECK(db_identity_rule(1, DB_CRASH, DB_OK) == DB_PUT_RETIMED);
  CHECK(db_identity_rule(1, DB_COMPILE_ERROR, DB_COMPILE_ERROR) == DB_PUT_RETIMED);
  for (int s = 0; s < DB_STATUS_COUNT; ++s)
    CHECK(db_status_is_placeholder((db_status)s) == (s == DB_SKIPPED || s == DB_NOT_RECORDED));

  const char *vals[DB_IDENTITY_N] = {"?1", "?2", "?3", "?4", "?5", "?6", "?7"};
  char where[512], tiny[40];
  CHECK(db_identity_where(where, sizeof where, "r", vals) == 0);
  CHECK(!strcmp(where, "r.recipe_id = ?1 AND r.problem_id = ?2 AND r.config_id = ?3 AND"
                       " coalesce(r.binary_key, '') = coalesce(?4, '') AND r.device_id = ?5 AND r.timing = ?6"
                       " AND r.protocol = ?7"));
  CHECK(db_identity_where(tiny, sizeof tiny, "r", vals) == -1);
}

/* ---- db_result_put, one rule at a time ---------------------------------------------------------- */

static void test_put(void) {
  char path[512];
  ids x;
  db_conn *db = fresh("put.db", path, sizeof path, &x);
  if (!db) return;
  tune_err e;
  tune_err_clear(&e);

  /* a compile-only row, then the same again: one row */
  db_result r = result(&x, x.config, DB_SKIPPED, 0);
  OK(db_result_put(db, &r, E));
  int64_t id = r.id;
  CHECK(id > 0 && r.put == DB_PUT_INSERTED);
  r = result(&x, x.config, DB_SKIPPED, 0);
  OK(db_result_put(db, &r, E));
  CHECK(r.id == id && r.put == DB_PUT_KEPT);
  CHECK(count(path, "SELECT count(*) FROM results") == 1);

  /* a measurement upgrades it in place */
  r = result(&x, x.config, DB_OK, 200);
  OK(db_result_put(db, &r, E));
  CHECK(r.id == id && r.put == DB_PUT_UPGRADED);
  CHECK(count(path, "SELECT count(*) FROM results") == 1);
  CHECK(count(path, "SELECT count(*) FROM results WHERE status = 'ok' AND median_ns = 200 AND error_text IS NULL") == 1);

  /* a compile-only row never replaces it */
  r = result(&x, x.config, DB_SKIPPED, 0);
  OK(db_result_put(db, &r, E));
  CHECK(r.id == id && r.put == DB_PUT_KEPT);
  CHECK(count(path, "SELECT count(*) FROM results WHERE status = 'ok'") == 1);
  CHECK(count(path, "SELECT count(*) FROM measurements") == 0);

  /* a second measurement: the first stays the result, the second is a measurement under it */
  r = result(&x, x.config, DB_OK, 210);
  strcpy(r.gpu, "GPU-2");
  OK(db_result_put(db, &r, E));
  CHECK(r.id == id && r.put == DB_PUT_RETIMED);
  CHECK(count(path, "SELECT count(*) FROM results") == 1);
  CHECK(count(path, "SELECT median_ns FROM results") == 200);
  char sql[256];
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM measurements WHERE comparison_id IS NULL AND round = 0 AND result_id = %lld"
           " AND side = 'tune' AND status = 'ok' AND median_ns = 210 AND timing = 'burst' AND gpu = 'GPU-2'",
           (long long)id);
  CHECK(count(path, sql) == 1);
  db_result got;
  OK(db_result_find(db, x.recipe, x.gpu, x.config, x.problem, &got, E));
  CHECK(got.id == id && got.median_ns == 200);

  /* a failure after it is a re-timing too; a crash first stays the result */
  r = result(&x, x.config, DB_CRASH, 0);
  OK(db_result_put(db, &r, E));
  CHECK(r.id == id && r.put == DB_PUT_RETIMED);
  CHECK(count(path, "SELECT count(*) FROM measurements WHERE status = 'crash'") == 1);

  /* each part of the identity makes another result */
  int64_t seen[5];
  r = result(&x, x.config, DB_OK, 300);
  strcpy(r.binary_key, "bin02"); /* another binary (another NVRTC) */
  OK(db_result_put(db, &r, E));
  seen[0] = r.id;
  r = result(&x, x.config, DB_OK, 300);
  strcpy(r.timing, "sustained");
  OK(db_result_put(db, &r, E));
  seen[1] = r.id;
  r = result(&x, x.config, DB_OK, 300);
  r.protocol = DB_MEASURE_PROTOCOL + 1;
  OK(db_result_put(db, &r, E));
  seen[2] = r.id;
  r = result(&x, x.config2, DB_OK, 300);
  OK(db_result_put(db, &r, E));
  seen[3] = r.id;
  r = result(&x, x.config2, DB_OK, 300); /* the same again: re-timed */
  OK(db_result_put(db, &r, E));
  seen[4] = r.id;
  CHECK(seen[0] != id && seen[1] != id && seen[2] != id && seen[3] != id);
  CHECK(seen[0] != seen[1] && seen[1] != seen[2] && seen[2] != seen[3] && seen[4] == seen[3]);
  CHECK(r.put == DB_PUT_RETIMED);
  CHECK(count(path, "SELECT count(*) FROM results") == 5);

  /* no binary: "" and NULL are the same identity */
  r = result(&x, x.config2, DB_SKIPPED, 0);
  r.binary_key[0] = 0;
  strcpy(r.error_text, "pruned: spills");
  OK(db_result_put(db, &r, E));
  int64_t unbuilt = r.id;
  CHECK(r.put == DB_PUT_INSERTED);
  CHECK(raw_exec(path, "UPDATE results SET binary_key = '' WHERE binary_key IS NULL") == SQLITE_OK);
  r = result(&x, x.config2, DB_SKIPPED, 0);
  r.binary_key[0] = 0;
  OK(db_result_put(db, &r, E));
  CHECK(r.id == unbuilt && r.put == DB_PUT_KEPT);

  /* a peer's re-timing is on the peer's side */
  r = result(&x, x.peer, DB_OK, 500);
  r.binary_key[0] = 0;
  OK(db_result_put(db, &r, E));
  r = result(&x, x.peer, DB_OK, 510);
  r.binary_key[0] = 0;
  OK(db_result_put(db, &r, E));
  CHECK(r.put == DB_PUT_RETIMED);
  CHECK(count(path, "SELECT count(*) FROM measurements WHERE side = 'peer' AND median_ns = 510") == 1);

  /* a measurement outside a comparison must name its result and round 0 */
  CHECK(raw_exec(path, "INSERT INTO measurements (problem_id, config_id, side, round, timing, status)"
                       " VALUES (1, 1, 'tune', 0, 'burst', 'ok')") == SQLITE_CONSTRAINT);

  /* a failed put writes nothing and leaves *r as it was */
  r = result(&x, x.config, DB_OK, 1);
  r.config_id = 987654;
  r.id = -5;
  CHECK(db_result_put(db, &r, &e) == TUNE_ESQL && e.msg[0]);
  CHECK(r.id == -5 && sqlite3_get_autocommit(db->h) != 0);
  db_close(db);
}

/* ---- failures on each checked call of a re-timing and of an upgrade -------------------------------- */

static void test_faults(void) {
  char path[512], sql[256];
  ids x;
  db_conn *db = fresh("faults.db", path, sizeof path, &x);
  if (!db) return;
  db_result r = result(&x, x.config, DB_OK, 200);
  OK(db_result_put(db, &r, E));
  int n, retimed = 0, broken = 0;
  for (n = 1; n < 100; ++n) { /* a re-timing fails whole or not at all */
    tune_err e;
    tune_err_clear(&e);
    db_fault_set(db, n);
    r = result(&x, x.config, DB_OK, 300 + n);
    int rc = db_result_put(db, &r, &e), injected = db->n_faults > 0;
    db_fault_set(db, 0);
    db->n_faults = 0;
    retimed += rc == TUNE_OK;
    broken += (rc && !e.msg[0]) || !sqlite3_get_autocommit(db->h);
    if (!injected) break;
  }
  CHECK(n > 3 && n < 100 && broken == 0);
  CHECK(count(path, "SELECT count(*) FROM results") == 1);
  CHECK(count(path, "SELECT count(*) FROM measurements") == retimed);
  for (n = 1; n < 100; ++n) { /* an upgrade too: the row is the placeholder or the result */
    tune_err e;
    tune_err_clear(&e);
    char hash[32];
    int64_t config = 0;
    snprintf(hash, sizeof hash, "up%d", n);
    OK(db_config_put(db, "copy", hash, "{}", "test", &config, E));
    r = result(&x, config, DB_SKIPPED, 0);
    OK(db_result_put(db, &r, E));
    db_fault_set(db, n);
    r = result(&x, config, DB_OK, 100);
    int rc = db_result_put(db, &r, &e), injected = db->n_faults > 0;
    db_fault_set(db, 0);
    db->n_faults = 0;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM results WHERE config_id = %lld AND status = '%s'",
             (long long)config, rc ? "skipped" : "ok");
    broken += count(path, sql) != 1 || !sqlite3_get_autocommit(db->h);
    if (!injected) break;
  }
  CHECK(n > 3 && n < 100 && broken == 0);
  db_close(db);
}

/* ---- what a resumed run answers from ---------------------------------------------------------- */

static void test_find(void) {
  char path[512];
  ids x;
  db_conn *db = fresh("find.db", path, sizeof path, &x);
  if (!db) return;
  db_result r = result(&x, x.config, DB_SKIPPED, 0), got;
  OK(db_result_put(db, &r, E));
  tune_err e;
  tune_err_clear(&e);
  /* a compile-only row answers a compile-only run, not a measuring one */
  OK(db_result_find_compiled(db, x.recipe, x.gpu, x.config, x.problem, &got, E));
  CHECK(got.id == r.id && got.status == DB_SKIPPED);
  CHECK(db_result_find_timing(db, x.recipe, x.gpu, x.config, x.problem, "burst", &got, &e) == TUNE_ENOTFOUND);
  /* a pruned row answers neither */
  r = result(&x, x.config2, DB_SKIPPED, 0);
  strcpy(r.error_text, "pruned: 128 bytes of spills");
  OK(db_result_put(db, &r, E));
  tune_err_clear(&e);
  CHECK(db_result_find_compiled(db, x.recipe, x.gpu, x.config2, x.problem, &got, &e) == TUNE_ENOTFOUND);
  /* a final answer answers both */
  r = result(&x, x.config2, DB_COMPILE_ERROR, 0);
  r.binary_key[0] = 0;
  OK(db_result_put(db, &r, E));
  OK(db_result_find_compiled(db, x.recipe, x.gpu, x.config2, x.problem, &got, E));
  CHECK(got.id == r.id && got.status == DB_COMPILE_ERROR);
  OK(db_result_find(db, x.recipe, x.gpu, x.config2, x.problem, &got, E));
  /* a result of another protocol is not resumed from */
  r = result(&x, x.peer, DB_OK, 10);
  r.protocol = DB_MEASURE_PROTOCOL + 1;
  OK(db_result_put(db, &r, E));
  tune_err_clear(&e);
  CHECK(db_result_find(db, x.recipe, x.gpu, x.peer, x.problem, &got, &e) == TUNE_ENOTFOUND);
  db_close(db);
}

/* ---- tune db merge ------------------------------------------------------------------------------ */

static void merge(const char *out, const char *in, db_merge_stats *st) {
  db_merger *m = NULL;
  OK(db_merger_open(out, NULL, &m, E));
  if (m) OK(db_merger_add(m, in, st, E));
  db_merger_close(m);
}

static void test_merge(void) {
  char a[512], b[512], c[512], old[512], out[512];
  ids x;
  db_merge_stats st;
  /* a: config measured at 200, config2 compiled only; b: config at 220, config2 at 300;
     c: config compiled only */
  db_conn *db = fresh("a.db", a, sizeof a, &x);
  if (!db) return;
  db_result r = result(&x, x.config, DB_OK, 200);
  OK(db_result_put(db, &r, E));
  r = result(&x, x.config2, DB_SKIPPED, 0);
  OK(db_result_put(db, &r, E));
  db_close(db);
  db = fresh("b.db", b, sizeof b, &x);
  if (!db) return;
  r = result(&x, x.config, DB_OK, 220);
  OK(db_result_put(db, &r, E));
  r = result(&x, x.config2, DB_OK, 300);
  OK(db_result_put(db, &r, E));
  db_close(db);
  db = fresh("c.db", c, sizeof c, &x);
  if (!db) return;
  r = result(&x, x.config, DB_SKIPPED, 0);
  OK(db_result_put(db, &r, E));
  db_close(db);

  snprintf(out, sizeof out, "%s/merged.db", dir);
  merge(out, a, &st);
  CHECK(st.t[DB_MERGE_RESULTS].read == 2 && st.t[DB_MERGE_RESULTS].added == 2);
  merge(out, b, &st);
  const db_merge_count *n = &st.t[DB_MERGE_RESULTS];
  CHECK(n->read == 2 && n->added == 0 && n->duplicates == 2 && n->upgraded == 1 && n->retimed == 1);
  CHECK(count(out, "SELECT count(*) FROM results") == 2);
  CHECK(count(out, "SELECT count(*) FROM results WHERE status = 'ok'") == 2);
  CHECK(count(out, "SELECT median_ns FROM results r JOIN configs c ON c.id = r.config_id WHERE c.hash = 'c01'") == 200);
  CHECK(count(out, "SELECT count(*) FROM measurements WHERE comparison_id IS NULL AND median_ns = 220") == 1);
  merge(out, c, &st); /* compile-only: nothing */
  CHECK(n->read == 1 && n->added == 0 && n->duplicates == 1 && n->upgraded == 0 && n->retimed == 0);
  merge(out, b, &st); /* again: nothing */
  CHECK(n->read == 2 && n->added == 0 && n->duplicates == 2 && n->upgraded == 0 && n->retimed == 0);
  merge(out, a, &st);
  CHECK(n->added == 0 && n->retimed == 0);
  CHECK(count(out, "SELECT count(*) FROM results") == 2 && count(out, "SELECT count(*) FROM measurements") == 1);

  /* the re-timings an input holds come along, under OUT's result */
  char again[512];
  db = fresh("again.db", again, sizeof again, &x);
  if (!db) return;
  r = result(&x, x.config, DB_OK, 250);
  OK(db_result_put(db, &r, E));
  r = result(&x, x.config, DB_OK, 260);
  OK(db_result_put(db, &r, E));
  db_close(db);
  merge(out, again, &st);
  CHECK(n->read == 1 && n->retimed == 1 && st.t[DB_MERGE_MEASUREMENTS].added == 1);
  CHECK(count(out, "SELECT count(DISTINCT result_id) FROM measurements") == 1);
  CHECK(count(out, "SELECT count(*) FROM measurements WHERE median_ns IN (250, 260)") == 2);
  merge(out, again, &st);
  CHECK(n->retimed == 0 && st.t[DB_MERGE_MEASUREMENTS].added == 0);

  /* a file from before identities were kept, with two rows of one identity: one row in OUT */
  db = fresh("old.db", old, sizeof old, &x);
  if (!db) return;
  r = result(&x, x.config, DB_OK, 400);
  OK(db_result_put(db, &r, E));
  db_close(db);
  CHECK(raw_exec(old, "INSERT INTO results (recipe_id, device_id, config_id, problem_id, status, median_ns,"
                      " binary_key, created_at) SELECT recipe_id, device_id, config_id, problem_id, status, 410,"
                      " binary_key, 'later' FROM results") == SQLITE_OK);
  char fresh_out[512];
  snprintf(fresh_out, sizeof fresh_out, "%s/from_old.db", dir);
  merge(fresh_out, old, &st);
  CHECK(n->read == 2 && n->added == 1 && n->retimed == 1);
  CHECK(count(fresh_out, "SELECT count(*) FROM results") == 1);
  CHECK(count(fresh_out, "SELECT count(*) FROM measurements WHERE median_ns = 410") == 1);
  CHECK(count(fresh_out, "SELECT count(*) FROM pragma_foreign_key_check") == 0);
}

/* ---- several processes putting the same results at once ------------------------------------------ */

enum { SOAK_WRITERS = 4, SOAK_IDENTITIES = 40 };

/* A writer: its own connection; each identity compiled only, then measured. Exit status 0 when
 * every put succeeded. */
static int soak_writer(const char *path, int index) {
  db_conn *db = NULL;
  tune_err e;
  tune_err_clear(&e);
  if (db_open(path, 0, &db, &e)) return 1;
  ids x;
  int bad = db_recipe_put(db, "copy", "src01", "", "", &x.recipe, &e) ||
            db_problem_put(db, "copy", "small", "p01", "{}", &x.problem, &e);
  db_device d;
  memset(&d, 0, sizeof d);
  strcpy(d.kind, "gpu");
  strcpy(d.name, "NVIDIA H100 80GB HBM3");
  bad = bad || db_device_put(db, &d, &x.gpu, &e);
  for (int pass = 0; pass < 2 && !bad; ++pass)
    for (int i = 0; i < SOAK_IDENTITIES && !bad; ++i) {
      char hash[32];
      snprintf(hash, sizeof hash, "c%03d", i);
      int64_t config = 0;
      bad = db_config_put(db, "copy", hash, "{}", "soak", &config, &e);
      db_result r = result(&x, config, pass ? DB_OK : DB_SKIPPED, 100 + index);
      bad = bad || db_result_put(db, &r, &e);
    }
  if (bad) fprintf(stderr, "soak writer %d: %s\n", index, e.msg);
  db_close(db);
  return bad;
}

static void test_soak(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/soak.db", dir);
  db_conn *db = NULL;
  OK(db_open(path, 0, &db, E)); /* migrated once before the writers start */
  db_close(db);
  pid_t pid[SOAK_WRITERS];
  for (int w = 0; w < SOAK_WRITERS; ++w)
    if ((pid[w] = fork()) == 0) _exit(soak_writer(path, w));
  int failed = 0;
  for (int w = 0; w < SOAK_WRITERS; ++w) {
    int status = 0;
    if (pid[w] < 0 || waitpid(pid[w], &status, 0) != pid[w] || !WIFEXITED(status) || WEXITSTATUS(status)) failed++;
  }
  long long rows = count(path, "SELECT count(*) FROM results");
  long long retimes = count(path, "SELECT count(*) FROM measurements WHERE comparison_id IS NULL");
  printf("soak: %d writers x %d identities (compiled only, then measured): %lld result rows, %lld re-timings\n",
         SOAK_WRITERS, SOAK_IDENTITIES, rows, retimes);
  CHECK(failed == 0);
  CHECK(rows == SOAK_IDENTITIES);
  CHECK(count(path, "SELECT count(*) FROM results WHERE status = 'ok'") == SOAK_IDENTITIES);
  /* every measurement after the first of its identity is a re-timing: none lost, none twice */
  CHECK(retimes == (long long)(SOAK_WRITERS - 1) * SOAK_IDENTITIES);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/db_identity_test.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_rule();
  test_put();
  test_faults();
  test_find();
  test_merge();
  test_soak();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "db_identity_test: could not remove %s\n", dir);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
