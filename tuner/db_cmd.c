/* db_cmd.c: `tune db best|list|show|export|merge`: a results database queried from the command line.
 * The queries are db/'s (db_query_*); this file parses options and prints tables or JSON. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argv.h"
#include "commands.h"
#include "db.h"
#include "db_merge.h"

static const char *usage_db =
    "usage: tune db <best|list|show|export|merge> [options]\n"
    "\n"
    "  best [--where K=V ...]                fastest verified variant per recipe,\n"
    "                                        problem and device\n"
    "  list [--where K=V ...] [--limit N]    results, fastest first\n"
    "  show ID                               one result with its config, device,\n"
    "                                        run and compile log\n"
    "  show --where K=V ... [--limit N]      every result the filters select, so\n"
    "  export --format kernel_tuner|t4 --recipe R --problem P [-o FILE]\n"
    "                                        one problem's results in Kernel Tuner's\n"
    "                                        cache format or the T4 results schema\n"
    "  merge OUT IN...                       combine databases (tune db merge --help)\n"
    "options:\n"
    "  --db FILE         database (default tune.db)\n"
    "  --where KEY=VALUE only results whose KEY is VALUE (repeatable; keys: " DB_FILTER_KEYS ");\n"
    "                    a VALUE ending in * matches by prefix (origin=peer:*)\n"
    "  --recipe R, --problem P, --status S   the same as --where recipe=R, ...\n"
    "  --format table|json|csv   output (default table; show: json); csv per RFC 4180\n"
    "  --json            the same as --format json\n";

enum db_out { DB_OUT_DEFAULT, DB_OUT_TABLE, DB_OUT_JSON, DB_OUT_CSV };

typedef struct db_cmd_opts {
  const char *db_path, *recipe, *problem, *status, *verb;
  const char *format, *out_path; /* export: its format; other verbs: table, json, csv */
  int json, limit;
  long long id;                  /* show: the result, -1 none given */
  db_filter where;               /* --where, then --recipe/--problem/--status (not export) */
  int n_where;                   /* how many --where were given */
  enum db_out out;               /* best, list, show */
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

/* A result's register count, or "-" where the database holds none (-1). */
static const char *regs_text(json_t *r, char *buf, size_t n) {
  long long regs = (long long)json_integer_value(json_object_get(r, "registers"));
  if (regs < 0) return "-";
  snprintf(buf, n, "%lld", regs);
  return buf;
}

static void print_best(json_t *rows, const char *recipe) {
  if (json_array_size(rows) == 0) { printf("no verified results%s%s\n", recipe ? " for " : "", recipe ? recipe : ""); return; }
  printf("%-18s %-26s %-12s %10s %5s %5s  %s\n", "recipe", "problem", "device", "median", "samp", "regs", "params");
  size_t i;
  json_t *r;
  json_array_foreach(rows, i, r) {
    char t[32], p[1024], regs[24];
    fmt_time(json_number_value(json_object_get(r, "median_ns")), t, sizeof t);
    params_text(json_object_get(r, "params"), p, sizeof p);
    const char *og = json_string_value(json_object_get(r, "config_origin"));
    if (og && !strncmp(og, "llm-code:", 9)) /* a code proposal's variant of the template */
      snprintf(p + strlen(p), sizeof p - strlen(p), " + code of proposal %s", og + 9);
    if (json_integer_value(json_object_get(r, "quick_only"))) /* successive halving: nothing fully timed here */
      snprintf(p + strlen(p), sizeof p - strlen(p), "  [quick timing only (halving): no fully timed result]");
    printf("%-18s %-26s %-12s %10s %5lld %5s  %s\n", json_string_value(json_object_get(r, "recipe")),
           json_string_value(json_object_get(r, "problem")), json_string_value(json_object_get(r, "device")), t,
           (long long)json_integer_value(json_object_get(r, "samples")), regs_text(r, regs, sizeof regs), p);
  }
}

static void print_list(json_t *rows) {
  printf("%6s %-20s %-18s %-13s %12s %5s  %s\n", "id", "recipe", "problem", "status", "median", "regs", "params / error");
  size_t i;
  json_t *r;
  json_array_foreach(rows, i, r) {
    char t[32], p[1024], regs[24];
    fmt_time(json_number_value(json_object_get(r, "median_ns")), t, sizeof t);
    params_text(json_object_get(r, "params"), p, sizeof p);
    const char *e = json_string_value(json_object_get(r, "error_text"));
    char e1[160];
    snprintf(e1, sizeof e1, "%.*s", (int)strcspn(e ? e : "", "\n"), e ? e : "");
    e = e1;
    printf("%6lld %-20s %-18s %-13s %12s %5s  %s%s%s\n", (long long)json_integer_value(json_object_get(r, "id")),
           json_string_value(json_object_get(r, "recipe")), json_string_value(json_object_get(r, "problem")),
           json_string_value(json_object_get(r, "status")), t, regs_text(r, regs, sizeof regs), p,
           e && *e ? "  | " : "", e ? e : "");
  }
}

/* One --where KEY=VALUE into o->where. */
static void add_where(tune_argv *ap, db_cmd_opts *o, const char *kv) {
  const char *eq = strchr(kv, '=');
  char key[32];
  tune_err err;
  tune_err_clear(&err);
  if (!eq || eq == kv) { tune_argv_bad(ap, "want KEY=VALUE (keys: " DB_FILTER_KEYS ")"); return; }
  snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
  if (db_filter_set(&o->where, key, eq + 1, &err)) /* a key too long for key[] is unknown anyway */
    tune_argv_error(ap, "--where %s: %s", kv, err.msg);
  o->n_where++;
}

/* --recipe/--problem/--status into o->where, and --format/--json into o->out; 0 when they fit,
 * else 2 (the message printed). */
static int settle_opts(db_cmd_opts *o) {
  tune_err err;
  tune_err_clear(&err);
  if (!strcmp(o->verb, "export")) {
    if (o->n_where) { fprintf(stderr, "tune db export: takes --recipe R --problem P, not --where\n"); return 2; }
    return 0;
  }
  const char *keys[] = {"recipe", "problem", "status"}, *values[] = {o->recipe, o->problem, o->status};
  for (int i = 0; i < 3; i++)
    if (values[i] && db_filter_set(&o->where, keys[i], values[i], &err)) {
      fprintf(stderr, "tune db: --%s %s: %s\n", keys[i], values[i], err.msg);
      return 2;
    }
  const char *f = o->format;
  if (f && !strcmp(f, "table")) o->out = DB_OUT_TABLE;
  else if (f && !strcmp(f, "json")) o->out = DB_OUT_JSON;
  else if (f && !strcmp(f, "csv")) o->out = DB_OUT_CSV;
  else if (f) { fprintf(stderr, "tune db %s: --format %s: want table, json or csv\n", o->verb, f); return 2; }
  if (o->json && o->out != DB_OUT_DEFAULT && o->out != DB_OUT_JSON) {
    fprintf(stderr, "tune db %s: --json and --format %s disagree\n", o->verb, f);
    return 2;
  }
  if (o->json) o->out = DB_OUT_JSON;
  return 0;
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
    if (tune_argv_str(&ap, "--where", &pos)) add_where(&ap, o, pos);
    else if (tune_argv_int(&ap, "--limit", &o->limit)) { if (o->limit < 0) tune_argv_bad(&ap, "want a count (0: all)"); }
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

/* A result as "key  value" lines, nested fields by their path (params.BLOCK). */
static void print_flat(json_t *obj) {
  json_t *flat = db_json_flatten(obj);
  const char *k;
  json_t *v;
  json_object_foreach(flat, k, v) {
    char *t = json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    printf("%-28s %s\n", k, t ? t : json_is_string(v) ? json_string_value(v) : "?");
    free(t);
  }
  json_decref(flat);
}

/* rows in the chosen format; table with the verb's own printer. Returns 1 on a write error. */
static int print_rows(json_t *rows, enum db_out out, void (*table)(json_t *, const db_cmd_opts *),
                      const db_cmd_opts *o, tune_err *err) {
  if (out == DB_OUT_CSV) return db_rows_write_csv(rows, stdout, err) ? 1 : 0;
  if (out == DB_OUT_JSON) print_json(rows);
  else table(rows, o);
  return 0;
}

static void table_best(json_t *rows, const db_cmd_opts *o) { print_best(rows, o->where.recipe); }
static void table_list(json_t *rows, const db_cmd_opts *o) { (void)o; print_list(rows); }
static void table_show(json_t *rows, const db_cmd_opts *o) {
  (void)o;
  size_t i;
  json_t *r;
  json_array_foreach(rows, i, r) {
    if (i) puts("");
    print_flat(r);
  }
}

/* show: one result by id, or every result the filters select (an array). */
static int run_show(db_conn *db, const db_cmd_opts *o, tune_err *err) {
  json_t *rows = NULL, *obj = NULL, *ids = NULL;
  int rc = 1;
  if ((o->id < 0) == (o->n_where == 0 && !o->recipe && !o->problem && !o->status)) {
    fprintf(stderr, "tune db show: %s\n", o->id < 0 ? "which result? (an id from tune db list, or --where filters)"
                                                      : "an id or --where filters, not both");
    return 2;
  }
  if (o->id >= 0) {
    if (db_query_show(db, o->id, &obj, err)) goto out;
    if (!(rows = json_array()) || json_array_append(rows, obj)) goto out;
  } else {
    size_t i;
    json_t *r;
    if (db_query_list_where(db, &o->where, o->limit, &ids, err) || !(rows = json_array())) goto out;
    json_array_foreach(ids, i, r) {
      json_t *one = NULL;
      if (db_query_show(db, json_integer_value(json_object_get(r, "id")), &one, err)) goto out;
      if (json_array_append_new(rows, one)) goto out;
    }
  }
  if (o->out == DB_OUT_DEFAULT || o->out == DB_OUT_JSON) print_json(obj ? obj : rows);
  else if (print_rows(rows, o->out, table_show, o, err)) goto out;
  rc = 0;
out:
  json_decref(rows);
  json_decref(obj);
  json_decref(ids);
  return rc;
}

/* The verb on an open database; returns the exit status (1: err says why). */
static int run_db_verb(db_conn *db, const db_cmd_opts *o, tune_err *err) {
  json_t *rows = NULL;
  int rc = 1;
  if (!strcmp(o->verb, "best")) {
    if (db_query_best_where(db, &o->where, &rows, err)) goto out;
    rc = print_rows(rows, o->out, table_best, o, err);
  } else if (!strcmp(o->verb, "list")) {
    if (db_query_list_where(db, &o->where, o->limit, &rows, err)) goto out;
    rc = print_rows(rows, o->out, table_list, o, err);
  } else if (!strcmp(o->verb, "show")) {
    rc = run_show(db, o, err);
  } else if (!strcmp(o->verb, "export")) {
    rc = tune_cmd_db_export(db, o->format, o->recipe, o->problem, o->out_path);
  } else {
    fprintf(stderr, "tune db: unknown verb %s (best, list, show, export, merge)\n", o->verb);
    rc = 2;
  }
out:
  json_decref(rows);
  return rc;
}

/* ---- tune db merge ---------------------------------------------------------------------- */

static const char *usage_merge =
    "usage: tune db merge OUT IN... [--no-binaries] [--strict] [--json]\n"
    "\n"
    "Copies every IN database into OUT (created, or migrated, when needed) with its provenance:\n"
    "recipes with their source hashes, problems, configs, devices, runs, results, peaks,\n"
    "proposals, comparisons, measurements, selections and the compile cache; ids are mapped.\n"
    "A row OUT already holds is not copied again (a result: same recipe source, problem,\n"
    "config, device, timing mode, time stamp and median), so merging twice adds nothing.\n"
    "IN files are read only and may be of older schemas; each is merged in one transaction.\n"
    "Results stay keyed by device: different GPU models are never pooled. Problems that OUT\n"
    "then holds verified results of from several device models, drivers of one model or\n"
    "recipe sources are listed after the counts (merged all the same).\n"
    "Typical use: the databases of `tune run --shard I/N` (docs/cluster.md).\n"
    "\n"
    "options:\n"
    "  --no-binaries  leave the compile cache (binaries) out\n"
    "  --strict       refuse (leave OUT as it was before it) an IN that makes such a mix;\n"
    "                 exit status 1\n"
    "  --json         the counts and the list as JSON\n";

/* counts of one input as "T n" for the tables that added rows, other than results */
static void print_added(const db_merge_stats *st) {
  int any = 0;
  for (int t = 0; t < DB_MERGE_N_TABLES; ++t)
    if (t != DB_MERGE_RESULTS && st->t[t].added)
      printf("%s%s %lld", any++ ? ", " : "; added: ", db_merge_table_name(t), st->t[t].added);
  puts("");
}

static json_t *stats_json(const char *path, const db_merge_stats *st) {
  json_t *tabs = json_object();
  for (int t = 0; t < DB_MERGE_N_TABLES; ++t)
    json_object_set_new(tabs, db_merge_table_name(t), json_pack("{sI sI sI}", "read", (json_int_t)st->t[t].read,
                                                                 "added", (json_int_t)st->t[t].added,
                                                                 "duplicates", (json_int_t)st->t[t].duplicates));
  return json_pack("{ss so}", "path", path, "tables", tabs);
}

static void strings_text(json_t *arr, char *b, size_t n) {
  size_t i, len = 0;
  json_t *v;
  b[0] = 0;
  json_array_foreach(arr, i, v) len += (size_t)snprintf(b + len, len < n ? n - len : 0, "%s%s", i ? ", " : "",
                                                        json_string_value(v));
}

/* The mixes, each with what differs (device models, drivers of one model, recipe sources); the
 * first MIXES_SHOWN of them (--json lists all). */
#define MIXES_SHOWN 20
static void print_mixes(json_t *mixes) {
  size_t n = json_array_size(mixes), i;
  if (!n) return;
  printf("%zu problem%s with results of several device models, drivers or recipe sources (merged; compare\n"
         "results within one device model, driver and source only):\n", n, n == 1 ? "" : "s");
  json_t *r;
  json_array_foreach(mixes, i, r) {
    if (i == MIXES_SHOWN) { printf("  ... and %zu more (--json lists them all)\n", n - i); break; }
    json_t *dev = json_object_get(r, "devices"), *drv = json_object_get(r, "drivers"), *src = json_object_get(r, "sources");
    char text[1024];
    printf("  %s %s:", json_string_value(json_object_get(r, "recipe")), json_string_value(json_object_get(r, "problem")));
    const char *sep = " ";
    if (json_array_size(dev) > 1) strings_text(dev, text, sizeof text), printf("%sdevice models %s", sep, text), sep = "; ";
    if (json_array_size(drv) > json_array_size(dev)) strings_text(drv, text, sizeof text), printf("%sdrivers %s", sep, text), sep = "; ";
    if (json_array_size(src) > 1) strings_text(src, text, sizeof text), printf("%srecipe sources %s", sep, text);
    puts("");
  }
}

/* GPUs of one model whose reference kernels (peaks) differ by more than this are not comparable:
 * a clock, power or memory setting differs between the machines. */
#define REFERENCE_SPREAD_MAX 0.05

/* One line per (model, peak kind) timed on several GPUs: their spread and the verdict. */
static void print_reference_spread(json_t *rows) {
  size_t i;
  json_t *r;
  json_array_foreach(rows, i, r) {
    double spread = json_number_value(json_object_get(r, "spread"));
    printf("reference %s on %lld GPUs of %s: %.4g .. %.4g %s (spread %.1f %%): %s\n",
           json_string_value(json_object_get(r, "kind")), (long long)json_integer_value(json_object_get(r, "gpus")),
           json_string_value(json_object_get(r, "device")), json_number_value(json_object_get(r, "min")),
           json_number_value(json_object_get(r, "max")), json_string_value(json_object_get(r, "unit")), 100 * spread,
           spread > REFERENCE_SPREAD_MAX ? "NOT comparable (more than 5 %: compare their results with care)" : "comparable");
  }
}

/* tune db merge OUT IN...: the exit status. */
static int run_merge(int argc, char **argv) {
  tune_argv ap;
  db_merge_opts mo = {0};
  const char *paths[1024];
  int n = 0, json = 0;
  tune_argv_init(&ap, "tune db merge", argc, argv);
  while (tune_argv_next(&ap)) {
    const char *pos;
    if (tune_argv_flag(&ap, "--help") || tune_argv_flag(&ap, "-h")) { fputs(usage_merge, stdout); return 0; }
    if (tune_argv_flag(&ap, "--no-binaries")) mo.no_binaries = 1;
    else if (tune_argv_flag(&ap, "--strict")) mo.strict = 1;
    else if (tune_argv_flag(&ap, "--json")) json = 1;
    else if (!tune_argv_positional(&ap, &pos)) tune_argv_unknown(&ap);
    else if (n == (int)(sizeof paths / sizeof paths[0])) tune_argv_error(&ap, "too many databases");
    else paths[n++] = pos;
  }
  if (ap.failed) { fprintf(stderr, "%s\n", ap.msg); return 2; }
  /* paths[0] is the verb */
  if (n < 3) { fputs(usage_merge, stderr); return 2; }
  tune_err err;
  tune_err_clear(&err);
  db_merger *m = NULL;
  db_merge_stats st, total;
  memset(&total, 0, sizeof total);
  json_t *inputs = json_array(), *mixes = NULL, *reference = NULL;
  int rc = db_merger_open(paths[1], &mo, &m, &err) ? 1 : 0;
  for (int i = 2; !rc && i < n; ++i) {
    if (db_merger_add(m, paths[i], &st, &err)) { rc = 1; break; }
    for (int t = 0; t < DB_MERGE_N_TABLES; ++t) {
      total.t[t].read += st.t[t].read;
      total.t[t].added += st.t[t].added;
      total.t[t].duplicates += st.t[t].duplicates;
    }
    json_array_append_new(inputs, stats_json(paths[i], &st));
    if (json) continue;
    const db_merge_count *r = &st.t[DB_MERGE_RESULTS];
    printf("%s: results %lld read, %lld added, %lld duplicates", paths[i], r->read, r->added, r->duplicates);
    print_added(&st);
  }
  if (m && (db_merger_mixes(m, &mixes, &err) || db_merger_reference_spread(m, &reference, &err))) rc = 1;
  if (json && mixes && reference) {
    json_t *o = json_pack("{ss sO so sO sO}", "out", paths[1], "inputs", inputs, "total", stats_json(paths[1], &total),
                          "mixes", mixes, "reference", reference);
    print_json(o);
    json_decref(o);
  } else if (!rc && n > 3) {
    const db_merge_count *r = &total.t[DB_MERGE_RESULTS];
    printf("%s: results %lld read, %lld added, %lld duplicates from %d databases\n", paths[1], r->read, r->added,
           r->duplicates, n - 2);
  }
  if (!json) print_mixes(mixes), print_reference_spread(reference);
  if (rc) fprintf(stderr, "tune %s\n", err.msg); /* "db merge: ..." or "db: FILE: ..." */
  json_decref(inputs);
  json_decref(mixes);
  json_decref(reference);
  db_merger_close(m);
  return rc;
}

/* The verb: the first argument that is not an option (merge parses its own options). */
static const char *first_positional(int argc, char **argv) {
  for (int i = 0; i < argc; ++i)
    if (argv[i][0] != '-') return argv[i];
  return NULL;
}

int tune_cmd_db(int argc, char **argv) {
  const char *verb = first_positional(argc, argv);
  if (verb && !strcmp(verb, "merge")) return run_merge(argc, argv);
  db_cmd_opts o = {.db_path = "tune.db", .id = -1};
  int prc = parse_db_opts(argc, argv, &o);
  if (prc) return prc < 0 ? 0 : prc;
  if (!o.verb) { fputs(usage_db, stderr); return 2; }
  if (!strcmp(o.verb, "merge")) { fprintf(stderr, "tune db merge: takes OUT IN..., not --db (tune db merge --help)\n"); return 2; }
  if ((prc = settle_opts(&o))) return prc;
  if (access(o.db_path, R_OK)) { fprintf(stderr, "tune db: %s: no such database (tune run creates it; --db FILE names another)\n", o.db_path); return 1; }
  tune_err err;
  tune_err_clear(&err);
  db_conn *db = NULL;
  int rc = db_open(o.db_path, 1, &db, &err) ? 1 : run_db_verb(db, &o, &err);
  if (rc == 1 && err.code) fprintf(stderr, "tune db: %s\n", err.msg);
  db_close(db);
  return rc;
}
