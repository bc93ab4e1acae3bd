/* db_cmd.c: `tune db best|list|show|export`: a results database queried from the command line.
 * The queries are db/'s (db_query_*); this file parses options and prints tables or JSON. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argv.h"
#include "commands.h"
#include "db.h"

static const char *usage_db =
    "usage: tune db <best|list|show|export> [options]\n"
    "\n"
    "  best [--recipe R] [--problem P]       fastest verified variant per recipe,\n"
    "                                        problem and device\n"
    "  list [--recipe R] [--problem P] [--status S] [--limit N]\n"
    "                                        results, fastest first\n"
    "  show ID                               one result with its config, device,\n"
    "                                        run and compile log\n"
    "  export --format kernel_tuner|t4 --recipe R --problem P [-o FILE]\n"
    "                                        one problem's results in Kernel Tuner's\n"
    "                                        cache format or the T4 results schema\n"
    "options:\n"
    "  --db FILE    database (default tune.db)\n"
    "  --json       print JSON instead of a table\n";

typedef struct db_cmd_opts {
  const char *db_path, *recipe, *problem, *status, *verb;
  const char *format, *out_path; /* export */
  int json, limit;
  long long id;                  /* show: the result, -1 none given */
} db_cmd_opts;

static void fmt_time(double ns, char *b, size_t n) {
  if (ns <= 0) snprintf(b, n, "-");
  else if (ns >= 1e6) snprintf(b, n, "%.3f ms", ns / 1e6);
  else snprintf(b, n, "%.2f us", ns / 1e3);
}

static void params_text(json_t *params, char *b, size_t n) {
  size_t len = 0;
  const char *k;
  json_t *v;
  b[0] = 0;
  json_object_foreach(params, k, v) {
    char *t = json_dumps(v, JSON_ENCODE_ANY);
    len += (size_t)snprintf(b + len, len < n ? n - len : 0, "%s%s=%s", len ? " " : "", k, t ? t : "?");
    free(t);
    if (len >= n) break;
  }
}

static void print_json(json_t *j) {
  json_dumpf(j, stdout, JSON_INDENT(2));
  puts("");
}

static void print_best(json_t *rows, const char *recipe) {
  if (json_array_size(rows) == 0) { printf("no verified results%s%s\n", recipe ? " for " : "", recipe ? recipe : ""); return; }
  printf("%-18s %-26s %-12s %10s %5s %5s  %s\n", "recipe", "problem", "device", "median", "samp", "regs", "params");
  size_t i;
  json_t *r;
  json_array_foreach(rows, i, r) {
    char t[32], p[1024];
    fmt_time(json_number_value(json_object_get(r, "median_ns")), t, sizeof t);
    params_text(json_object_get(r, "params"), p, sizeof p);
    const char *og = json_string_value(json_object_get(r, "config_origin"));
    if (og && !strncmp(og, "llm-code:", 9)) /* a code proposal's variant of the template */
      snprintf(p + strlen(p), sizeof p - strlen(p), " + code of proposal %s", og + 9);
    if (json_integer_value(json_object_get(r, "quick_only"))) /* successive halving: nothing fully timed here */
      snprintf(p + strlen(p), sizeof p - strlen(p), "  [quick timing only (halving): no fully timed result]");
    printf("%-18s %-26s %-12s %10s %5lld %5lld  %s\n", json_string_value(json_object_get(r, "recipe")),
           json_string_value(json_object_get(r, "problem")), json_string_value(json_object_get(r, "device")), t,
           (long long)json_integer_value(json_object_get(r, "samples")),
           (long long)json_integer_value(json_object_get(r, "registers")), p);
  }
}

static void print_list(json_t *rows) {
  printf("%6s %-20s %-18s %-13s %12s %5s  %s\n", "id", "recipe", "problem", "status", "median", "regs", "params / error");
  size_t i;
  json_t *r;
  json_array_foreach(rows, i, r) {
    char t[32], p[1024];
    fmt_time(json_number_value(json_object_get(r, "median_ns")), t, sizeof t);
    params_text(json_object_get(r, "params"), p, sizeof p);
    const char *e = json_string_value(json_object_get(r, "error_text"));
    char e1[160];
    snprintf(e1, sizeof e1, "%.*s", (int)strcspn(e ? e : "", "\n"), e ? e : "");
    e = e1;
    printf("%6lld %-20s %-18s %-13s %12s %5lld  %s%s%s\n", (long long)json_integer_value(json_object_get(r, "id")),
           json_string_value(json_object_get(r, "recipe")), json_string_value(json_object_get(r, "problem")),
           json_string_value(json_object_get(r, "status")), t,
           (long long)json_integer_value(json_object_get(r, "registers")), p, e && *e ? "  | " : "", e ? e : "");
  }
}

/* The options into o; 0 when they parse, else 2 (the message printed), or -1 for --help (printed). */
static int parse_db_opts(int argc, char **argv, db_cmd_opts *o) {
  tune_argv ap;
  tune_argv_init(&ap, "tune db", argc, argv);
  while (tune_argv_next(&ap)) {
    const char *pos;
    if (tune_argv_flag(&ap, "--help") || tune_argv_flag(&ap, "-h")) { fputs(usage_db, stdout); return -1; }
    if (tune_argv_str(&ap, "--db", &o->db_path) || tune_argv_str(&ap, "--recipe", &o->recipe) ||
        tune_argv_str(&ap, "--problem", &o->problem) || tune_argv_str(&ap, "--status", &o->status) ||
        tune_argv_str(&ap, "--format", &o->format) || tune_argv_str(&ap, "-o", &o->out_path) ||
        tune_argv_str(&ap, "--output", &o->out_path))
      continue;
    if (tune_argv_int(&ap, "--limit", &o->limit)) { if (o->limit < 0) tune_argv_bad(&ap, "want a count (0: all)"); }
    else if (tune_argv_flag(&ap, "--json")) o->json = 1;
    else if (!tune_argv_positional(&ap, &pos)) tune_argv_unknown(&ap);
    else if (!o->verb) o->verb = pos;
    else if (!strcmp(o->verb, "show") && o->id < 0) {
      char *end;
      o->id = strtoll(pos, &end, 10);
      if (end == pos || *end || o->id < 0) tune_argv_error(&ap, "show %s: not a result id", pos);
    }
    else tune_argv_error(&ap, "unexpected argument %s", pos);
  }
  if (ap.failed) { fprintf(stderr, "%s\n", ap.msg); return 2; }
  return 0;
}

/* The verb on an open database; returns the exit status (1: err says why). */
static int run_db_verb(db_conn *db, const db_cmd_opts *o, tune_err *err) {
  json_t *rows = NULL;
  int rc = 1;
  if (!strcmp(o->verb, "best")) {
    if (db_query_best(db, o->recipe, o->problem, &rows, err)) goto out;
    if (o->json) print_json(rows);
    else print_best(rows, o->recipe);
  } else if (!strcmp(o->verb, "list")) {
    if (db_query_list(db, o->recipe, o->problem, o->status, o->limit, &rows, err)) goto out;
    if (o->json) print_json(rows);
    else print_list(rows);
  } else if (!strcmp(o->verb, "show")) {
    if (o->id < 0) { fprintf(stderr, "tune db show: which result? (an id from tune db list)\n"); rc = 2; goto out; }
    if (db_query_show(db, o->id, &rows, err)) goto out;
    print_json(rows);
  } else if (!strcmp(o->verb, "export")) {
    rc = tune_cmd_db_export(db, o->format, o->recipe, o->problem, o->out_path);
    goto out;
  } else {
    fprintf(stderr, "tune db: unknown verb %s (best, list, show, export)\n", o->verb);
    rc = 2;
    goto out;
  }
  rc = 0;
out:
  json_decref(rows);
  return rc;
}

int tune_cmd_db(int argc, char **argv) {
  db_cmd_opts o = {.db_path = "tune.db", .id = -1};
  int prc = parse_db_opts(argc, argv, &o);
  if (prc) return prc < 0 ? 0 : prc;
  if (!o.verb) { fputs(usage_db, stderr); return 2; }
  if (o.status && db_status_parse(o.status) < 0) { fprintf(stderr, "tune db: unknown status %s\n", o.status); return 2; }
  if (access(o.db_path, R_OK)) { fprintf(stderr, "tune db: %s: no such database (tune run creates it; --db FILE names another)\n", o.db_path); return 1; }
  tune_err err;
  tune_err_clear(&err);
  db_conn *db = NULL;
  int rc = db_open(o.db_path, 1, &db, &err) ? 1 : run_db_verb(db, &o, &err);
  if (rc == 1 && err.code) fprintf(stderr, "tune db: %s\n", err.msg);
  db_close(db);
  return rc;
}
