/* code_proposal.c: code proposals spliced into templates, and their verdict over problems. */
#include "code_proposal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "file_util.h"

/* Is this line `// TUNE:REGION <region>` (the name as the proposer reads it: the next word)? */
static int is_region_line(const char *line, size_t len, const char *region) {
  static const char mark[] = "// TUNE:REGION ";
  for (const char *p = line; p + sizeof mark - 1 <= line + len; ++p) {
    if (strncmp(p, mark, sizeof mark - 1)) continue;
    const char *q = p + sizeof mark - 1;
    while (q < line + len && (*q == ' ' || *q == '\t')) ++q;
    size_t n = strlen(region);
    return (size_t)(line + len - q) >= n && !strncmp(q, region, n) &&
           (q + n == line + len || q[n] == ' ' || q[n] == '\t' || q[n] == '\r' || q[n] == '\n');
  }
  return 0;
}

static int is_end_line(const char *line, size_t len) {
  static const char mark[] = "// TUNE:END";
  for (const char *p = line; p + sizeof mark - 1 <= line + len; ++p)
    if (!strncmp(p, mark, sizeof mark - 1)) return 1;
  return 0;
}

int tune_code_splice(const char *text, const char *region, const char *code, char **out, char *why,
                     size_t why_n) {
  *out = NULL;
  const char *body = NULL, *end = NULL; /* first byte after the region line; start of the end line */
  for (const char *line = text; *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    const char *next = nl ? nl + 1 : line + len;
    if (!body && is_region_line(line, len, region)) body = next;
    else if (body && is_end_line(line, len)) { end = line; break; }
    line = next;
  }
  if (!body) { snprintf(why, why_n, "the template has no // TUNE:REGION %.60s", region); return -1; }
  if (!end) { snprintf(why, why_n, "region %.60s has no // TUNE:END", region); return -1; }
  size_t head = (size_t)(body - text), code_n = strlen(code), tail = strlen(end);
  int add_nl = code_n > 0 && code[code_n - 1] != '\n';
  char *s = malloc(head + code_n + (size_t)add_nl + tail + 1);
  if (!s) { snprintf(why, why_n, "out of memory"); return -1; }
  memcpy(s, text, head);
  memcpy(s + head, code, code_n);
  if (add_nl) s[head + code_n] = '\n';
  memcpy(s + head + code_n + add_nl, end, tail + 1);
  *out = s;
  return 0;
}

int tune_code_splice_file(const char *path, const char *region, const char *code, char **out, char *why,
                          size_t why_n) {
  *out = NULL;
  char *text = tune_read_file(path, NULL);
  if (!text) { snprintf(why, why_n, "%s: cannot read the template", path); return -1; }
  int rc = tune_code_splice(text, region, code, out, why, why_n);
  free(text);
  return rc;
}

void tune_code_config_hash(const char *base_hash, const char *region, const char *code, char out[17]) {
  XXH64_state_t *h = XXH64_createState();
  if (!h) { snprintf(out, 17, "%s", base_hash); return; }
  XXH64_reset(h, 0);
  static const char tag[] = "llm-code";
  XXH64_update(h, tag, sizeof tag);
  XXH64_update(h, base_hash, strlen(base_hash) + 1);
  XXH64_update(h, region, strlen(region) + 1);
  XXH64_update(h, code, strlen(code));
  snprintf(out, 17, "%016llx", (unsigned long long)XXH64_digest(h));
  XXH64_freeState(h);
}

void tune_code_set_init(tune_code_set *s, int n_problems) {
  memset(s, 0, sizeof *s);
  s->n_problems = n_problems;
}

void tune_code_set_free(tune_code_set *s) {
  for (int i = 0; i < s->n; ++i) {
    free(s->v[i].code);
    free(s->v[i].source);
    free(s->v[i].evaluated);
  }
  free(s->v);
  memset(s, 0, sizeof *s);
}

int tune_code_set_has(const tune_code_set *s, const char *hash) {
  for (int i = 0; i < s->n; ++i)
    if (!strcmp(s->v[i].hash, hash)) return 1;
  return 0;
}

int tune_code_set_add(tune_code_set *s, int64_t proposal_id, const char *region, const char *code,
                      const char *source, const int *vi, int n_params, const char *hash) {
  if (s->n == s->cap) {
    int nc = s->cap ? s->cap * 2 : 8;
    tune_code_variant *nv = realloc(s->v, (size_t)nc * sizeof *nv);
    if (!nv) return -1;
    s->v = nv;
    s->cap = nc;
  }
  tune_code_variant *v = &s->v[s->n];
  memset(v, 0, sizeof *v);
  v->proposal_id = proposal_id;
  snprintf(v->region, sizeof v->region, "%s", region);
  v->code = strdup(code);
  v->source = strdup(source);
  v->evaluated = calloc((size_t)(s->n_problems > 0 ? s->n_problems : 1), 1);
  if (!v->code || !v->source || !v->evaluated) {
    free(v->code);
    free(v->source);
    free(v->evaluated);
    return -1;
  }
  memcpy(v->vi, vi, (size_t)n_params * sizeof *vi);
  snprintf(v->hash, sizeof v->hash, "%s", hash);
  snprintf(v->origin, sizeof v->origin, TUNE_CODE_ORIGIN "%lld", (long long)proposal_id);
  return s->n++;
}

int tune_code_set_take(tune_code_set *s, int pi, int *idx, int max) {
  int n = 0;
  for (int i = 0; i < s->n && n < max; ++i)
    if (pi >= 0 && pi < s->n_problems && !s->v[i].evaluated[pi]) {
      s->v[i].evaluated[pi] = 1;
      idx[n++] = i;
    }
  return n;
}

int tune_code_set_pending(const tune_code_set *s, int pi) {
  int n = 0;
  for (int i = 0; i < s->n; ++i) n += pi >= 0 && pi < s->n_problems && !s->v[i].evaluated[pi];
  return n;
}

void tune_code_set_note(tune_code_set *s, int i, const char *problem, const db_result *res) {
  tune_code_variant *v = &s->v[i];
  if (res->status == DB_OK) { v->n_ok++; return; }
  if (res->status == DB_SKIPPED && !strcmp(res->error_text, DB_REASON_COMPILE_ONLY)) { v->n_compiled++; return; }
  if (res->status == DB_SKIPPED || res->status == DB_NOT_RECORDED) { v->n_other++; return; }
  if (!v->n_failed++) {
    /* a compile log: its first error, not the warnings before it */
    const char *t = strstr(res->error_text, ": error");
    while (t && t > res->error_text && t[-1] != '\n') --t;
    if (!t) t = res->error_text;
    int k = (int)strcspn(t, "\n");
    snprintf(v->first_failure, sizeof v->first_failure, "%s on %s: %.*s", db_status_name(res->status), problem,
             k > 400 ? 400 : k, t);
  }
}

int tune_code_set_finish(tune_code_set *s, db_conn *db, int quiet, tune_err *err) {
  for (int i = 0; i < s->n; ++i) {
    tune_code_variant *v = &s->v[i];
    char reason[1024];
    const char *status = "accepted";
    if (v->n_failed) {
      status = "rejected";
      snprintf(reason, sizeof reason, "failed on %d of %d problem(s): %s", v->n_failed,
               v->n_failed + v->n_ok + v->n_compiled + v->n_other, v->first_failure);
    } else if (v->n_ok)
      snprintf(reason, sizeof reason, "verified and timed on %d problem(s)%s", v->n_ok,
               v->n_other ? "; some not measured (not recorded or skipped)" : "");
    else if (v->n_compiled)
      snprintf(reason, sizeof reason, "compiled for %d problem(s) (compile-only: not run)", v->n_compiled);
    else snprintf(reason, sizeof reason, "not measured: no backend answered (replay has no recording of new code)");
    if (db_proposal_update(db, v->proposal_id, status, reason, err)) return err->code;
    if (!quiet) printf("llm: code proposal %lld (region %s): %s: %s\n", (long long)v->proposal_id, v->region, status, reason);
  }
  return TUNE_OK;
}

/* The first line of ptx[n] that starts (after blanks) with prefix, or NULL. */
static const char *line_starting(const char *ptx, size_t n, const char *prefix) {
  size_t len = strlen(prefix);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && (ptx[j] == ' ' || ptx[j] == '\t')) ++j;
    if (n - j >= len && !memcmp(ptx + j, prefix, len)) return ptx + j;
    while (i < n && ptx[i] != '\n') ++i;
    ++i;
  }
  return NULL;
}

static const char *find_in(const char *ptx, size_t n, const char *needle) {
  size_t len = strlen(needle);
  for (size_t i = 0; i + len <= n; ++i)
    if (!memcmp(ptx + i, needle, len)) return ptx + i;
  return NULL;
}

int tune_code_ptx_refused(const char *ptx, size_t ptx_n, char *why, size_t why_n) {
  if (!ptx) return 0;
  /* a module-scope variable is declared at the start of a line, outside any function body;
     shared memory (.shared) and constants (.const) are per launch or read-only */
  const char *g = line_starting(ptx, ptx_n, ".global ");
  if (!g) g = line_starting(ptx, ptx_n, ".visible .global ");
  if (!g) g = line_starting(ptx, ptx_n, ".weak .global ");
  if (g) {
    snprintf(why, why_n, "refused: the code declares a module-scope .global variable (state that outlives a launch): %.80s",
             g);
    why[strcspn(why, "\n")] = 0;
    return 1;
  }
  static const char *const timers[] = {"%globaltimer", "%clock64", "%clock"};
  for (unsigned i = 0; i < sizeof timers / sizeof timers[0]; ++i)
    if (find_in(ptx, ptx_n, timers[i])) {
      snprintf(why, why_n, "refused: the code reads %s (a timer lets a kernel tell timed launches from the verified one)",
               timers[i]);
      return 1;
    }
  return 0;
}
