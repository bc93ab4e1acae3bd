/* proposer.c: the LLM hook: spawn the proposer, build its request, validate its answer. */
#define _GNU_SOURCE
#include "proposer.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_BEST 10
#define N_FAIL 10
#define MAX_REGIONS 32
#define MAX_PROPOSALS 1024

/* ---- spawning ------------------------------------------------------------ */

static double mono_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void kill_group(pid_t pid) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
}

int tune_proposer_exchange(const tune_proposer_opts *o, const char *request, size_t request_n,
                           char **resp, size_t *resp_n, char *why, size_t why_n) {
  *resp = NULL;
  *resp_n = 0;
  if (request_n > TUNE_PROPOSER_MAX_BYTES) {
    snprintf(why, why_n, "request of %zu bytes is over the %d byte limit", request_n, TUNE_PROPOSER_MAX_BYTES);
    return TUNE_EIO;
  }
  /* the cleared environment, built before fork */
  static char env_store[TUNE_PROPOSER_MAX_ENV + 3][4096];
  char *envp[TUNE_PROPOSER_MAX_ENV + 4];
  int ne = 0;
  const char *path = getenv("PATH");
  snprintf(env_store[ne], sizeof env_store[0], "PATH=%s", path ? path : "/usr/local/bin:/usr/bin:/bin");
  envp[ne] = env_store[ne];
  ++ne;
  const char *keep[3 + TUNE_PROPOSER_MAX_ENV] = {"HOME", "LANG"};
  int nk = 2;
  for (int i = 0; i < o->n_env && i < TUNE_PROPOSER_MAX_ENV; ++i) keep[nk++] = o->env[i];
  for (int i = 0; i < nk; ++i) {
    const char *v = getenv(keep[i]);
    if (!v || !strcmp(keep[i], "PATH")) continue;
    snprintf(env_store[ne], sizeof env_store[0], "%s=%s", keep[i], v);
    envp[ne] = env_store[ne];
    ++ne;
  }
  envp[ne] = NULL;

  int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
    snprintf(why, why_n, "pipe: %s", strerror(errno));
    for (int i = 0; i < 2; ++i) { if (in[i] >= 0) close(in[i]); if (out[i] >= 0) close(out[i]); if (errp[i] >= 0) close(errp[i]); }
    return TUNE_EIO;
  }
  struct sigaction ign, old_pipe;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old_pipe); /* a proposer that does not read its stdin */
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(errp[1], 2);
    signal(SIGPIPE, SIG_DFL);
    execle("/bin/sh", "sh", "-c", o->command, (char *)NULL, envp);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(errp[1]);
  int rc = TUNE_OK;
  char *buf = NULL, errbuf[1024];
  size_t n = 0, cap = 0, n_err = 0, written = 0;
  errbuf[0] = 0;
  if (pid < 0) {
    snprintf(why, why_n, "fork: %s", strerror(errno));
    rc = TUNE_EIO;
    goto done;
  }
  setpgid(pid, pid);
  fcntl(in[1], F_SETFL, O_NONBLOCK);
  int timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 60000;
  double deadline = mono_ms() + timeout_ms;
  int fd_in = in[1], fd_out = out[0], fd_err = errp[0];
  if (request_n == 0) { close(fd_in); fd_in = in[1] = -1; }
  while (fd_out >= 0 || fd_err >= 0) {
    struct pollfd pf[3];
    int np = 0, i_in = -1, i_out = -1, i_err = -1;
    if (fd_in >= 0) { pf[np] = (struct pollfd){fd_in, POLLOUT, 0}; i_in = np++; }
    if (fd_out >= 0) { pf[np] = (struct pollfd){fd_out, POLLIN, 0}; i_out = np++; }
    if (fd_err >= 0) { pf[np] = (struct pollfd){fd_err, POLLIN, 0}; i_err = np++; }
    double left = deadline - mono_ms();
    if (left <= 0) {
      kill_group(pid);
      snprintf(why, why_n, "no answer within %d ms: killed", timeout_ms);
      rc = TUNE_EIO;
      goto done;
    }
    int pr = poll(pf, (nfds_t)np, (int)left + 1);
    if (pr < 0 && errno != EINTR) { kill_group(pid); snprintf(why, why_n, "poll: %s", strerror(errno)); rc = TUNE_EIO; goto done; }
    if (pr <= 0) continue;
    if (i_in >= 0 && pf[i_in].revents) {
      ssize_t w = write(fd_in, request + written, request_n - written);
      if (w > 0) written += (size_t)w;
      if ((w < 0 && errno != EAGAIN) || written == request_n) { close(fd_in); fd_in = in[1] = -1; }
    }
    if (i_out >= 0 && pf[i_out].revents) {
      if (cap - n < 65536) {
        size_t nc = cap ? cap * 2 : 65536;
        char *nb = realloc(buf, nc + 1);
        if (!nb) { kill_group(pid); snprintf(why, why_n, "out of memory"); rc = TUNE_EIO; goto done; }
        buf = nb;
        cap = nc;
      }
      ssize_t r = read(fd_out, buf + n, cap - n);
      if (r > 0) {
        n += (size_t)r;
        if (n > TUNE_PROPOSER_MAX_BYTES) {
          kill_group(pid);
          snprintf(why, why_n, "response larger than the %d byte limit: killed", TUNE_PROPOSER_MAX_BYTES);
          rc = TUNE_EIO;
          goto done;
        }
      } else if (r == 0 || errno != EINTR) { close(fd_out); fd_out = out[0] = -1; }
    }
    if (i_err >= 0 && pf[i_err].revents) {
      char tmp[512];
      ssize_t r = read(fd_err, tmp, sizeof tmp);
      if (r > 0) {
        size_t k = (size_t)r < sizeof errbuf - 1 - n_err ? (size_t)r : sizeof errbuf - 1 - n_err;
        memcpy(errbuf + n_err, tmp, k);
        n_err += k;
        errbuf[n_err] = 0;
      } else if (r == 0 || errno != EINTR) { close(fd_err); fd_err = errp[0] = -1; }
    }
  }
  /* both streams closed: wait for the exit within the same deadline */
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (mono_ms() > deadline) {
      kill_group(pid);
      snprintf(why, why_n, "did not exit within %d ms: killed", timeout_ms);
      rc = TUNE_EIO;
      goto done;
    }
    usleep(2000);
  }
  pid = -1; /* reaped */
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    for (char *c = errbuf; *c; ++c) if (*c == '\n' && c[1]) *c = ' ';
    snprintf(why, why_n, "exited with %s %d%s%.400s", WIFEXITED(status) ? "status" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), errbuf[0] ? ": " : "", errbuf);
    rc = TUNE_EIO;
    goto done;
  }
  if (!buf) buf = malloc(1);
  if (!buf) { snprintf(why, why_n, "out of memory"); rc = TUNE_EIO; goto done; }
  buf[n] = 0;
  *resp = buf;
  *resp_n = n;
  buf = NULL;
done:
  if (pid > 0) waitpid(pid, NULL, 0);
  if (in[1] >= 0) close(in[1]);
  if (out[0] >= 0) close(out[0]);
  if (errp[0] >= 0) close(errp[0]);
  sigaction(SIGPIPE, &old_pipe, NULL);
  free(buf);
  return rc;
}

/* ---- the per-problem state ------------------------------------------------ */

typedef struct entry {
  char params[1024];     /* config JSON */
  int64_t code;          /* proposal id of a code variant, 0 none */
  double median_ns;      /* [ns] */
  int registers, shared_bytes;
  char status[24];
  char error[501];       /* excerpt */
} entry;

typedef struct region {
  char name[64];
  char *source;          /* current text between the markers (malloc'd) */
} region;

struct tune_llm {
  tune_llm_ctx c;
  uint8_t *seen;         /* [n_points] 1: measured or proposed */
  entry best[N_BEST];    /* fastest first */
  int n_best;
  entry fail[N_FAIL];    /* ring of recent failures */
  int n_fail, fail_next;
  region regions[MAX_REGIONS];
  int n_regions;
  int n_requests;
};

/* Parse `// TUNE:REGION name` ... `// TUNE:END` markers of a template. */
static void find_regions(tune_llm *l, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[4096];
  region *cur = NULL;
  size_t len = 0;
  while (fgets(line, sizeof line, f)) {
    const char *m = strstr(line, "// TUNE:REGION ");
    if (m && !cur && l->n_regions < MAX_REGIONS) {
      cur = &l->regions[l->n_regions++];
      sscanf(m + 15, "%63s", cur->name);
      cur->source = calloc(1, 1);
      len = 0;
      continue;
    }
    if (strstr(line, "// TUNE:END") && cur) { cur = NULL; continue; }
    if (cur && cur->source && len < TUNE_PROPOSER_MAX_CODE) {
      size_t k = strlen(line);
      char *nb = realloc(cur->source, len + k + 1);
      if (!nb) continue;
      memcpy(nb + len, line, k + 1);
      cur->source = nb;
      len += k;
    }
  }
  fclose(f);
}

int tune_llm_new(const tune_llm_ctx *c, tune_llm **out, tune_err *err) {
  *out = NULL;
  tune_llm *l = calloc(1, sizeof *l);
  if (!l) return tune_fail(err, TUNE_ENOMEM, "llm: out of memory");
  l->c = *c;
  l->seen = calloc(c->space->n_points ? c->space->n_points : 1, 1);
  if (!l->seen) { free(l); return tune_fail(err, TUNE_ENOMEM, "llm: out of memory"); }
  find_regions(l, c->recipe->template_path);
  *out = l;
  return TUNE_OK;
}

void tune_llm_free(tune_llm *l) {
  if (!l) return;
  for (int i = 0; i < l->n_regions; ++i) free(l->regions[i].source);
  free(l->seen);
  free(l);
}

void tune_llm_mark_seen(tune_llm *l, uint64_t point) {
  long i = search_space_find(l->c.space, point);
  if (i >= 0) l->seen[i] = 1;
}

int tune_llm_seen(const tune_llm *l, uint64_t point) {
  long i = search_space_find(l->c.space, point);
  return i >= 0 && l->seen[i];
}

void tune_llm_observe(tune_llm *l, const char *params_json, int64_t code_proposal, const db_result *res) {
  if (res->status == DB_OK) {
    int pos = l->n_best;
    while (pos > 0 && l->best[pos - 1].median_ns > res->median_ns) --pos;
    if (pos >= N_BEST) return;
    int last = l->n_best < N_BEST ? l->n_best : N_BEST - 1;
    memmove(&l->best[pos + 1], &l->best[pos], (size_t)(last - pos) * sizeof(entry));
    entry *e = &l->best[pos];
    snprintf(e->params, sizeof e->params, "%s", params_json);
    e->code = code_proposal;
    e->median_ns = res->median_ns;
    e->registers = res->registers;
    e->shared_bytes = res->shared_bytes;
    if (l->n_best < N_BEST) l->n_best++;
  } else if (res->status != DB_SKIPPED && res->status != DB_NOT_RECORDED) {
    entry *e = &l->fail[l->fail_next];
    l->fail_next = (l->fail_next + 1) % N_FAIL;
    if (l->n_fail < N_FAIL) l->n_fail++;
    snprintf(e->params, sizeof e->params, "%s", params_json);
    e->code = code_proposal;
    snprintf(e->status, sizeof e->status, "%s", db_status_name(res->status));
    snprintf(e->error, sizeof e->error, "%.500s", res->error_text);
  }
}

/* ---- the request ---------------------------------------------------------- */

static json_t *value_json(const tune_value *v) {
  if (v->kind == 'b') return json_boolean(v->i);
  if (v->kind == 's') return json_string(v->s ? v->s : "");
  return json_integer(v->i);
}

static json_t *loads_or_null(const char *text) {
  json_t *j = json_loads(text, 0, NULL);
  return j ? j : json_null();
}

static char *build_request(tune_llm *l, int budget) {
  const tune_llm_ctx *c = &l->c;
  tune_recipe *r = c->recipe;
  json_t *req = json_object(), *recipe = json_object(), *params = json_array(), *cons = json_array(),
         *probs = json_array(), *regions = json_array(), *dev = json_object(), *best = json_array(),
         *fails = json_array();
  for (int i = 0; i < r->n_params; ++i) {
    json_t *vals = json_array();
    for (int k = 0; k < r->params[i].n_values; ++k) json_array_append_new(vals, value_json(&r->params[i].values[k]));
    json_t *pj = json_pack("{s:s,s:o}", "name", r->params[i].name, "values", vals);
    /* configs of earlier results may leave such a param out (recorded before it): its value then */
    if (pj && r->params[i].absent >= 0) json_object_set_new(pj, "absent", value_json(&r->params[i].values[r->params[i].absent]));
    json_array_append_new(params, pj);
  }
  for (int i = 0; i < r->n_constraints; ++i) {
    char t[2048];
    tune_recipe_constraint_text(r, i, t, sizeof t);
    json_array_append_new(cons, json_string(t));
  }
  for (int i = 0; i < r->n_problems; ++i)
    json_array_append_new(probs, json_pack("{s:s,s:o}", "name", r->problems[i].name, "dims",
                                           loads_or_null(r->problems[i].dims_json)));
  for (int i = 0; i < l->n_regions; ++i)
    json_array_append_new(regions, json_pack("{s:s,s:s}", "name", l->regions[i].name, "source",
                                             l->regions[i].source ? l->regions[i].source : ""));
  json_object_set_new(recipe, "name", json_string(r->name));
  json_object_set_new(recipe, "params", params);
  json_object_set_new(recipe, "constraints", cons);
  json_object_set_new(recipe, "problems", probs);
  json_object_set_new(recipe, "regions", regions);
  json_object_set_new(dev, "name", json_string(c->device->name));
  json_object_set_new(dev, "arch", json_string(c->device->arch));
  json_object_set_new(dev, "sm_count", json_integer(c->device->sm_count));
  json_object_set_new(dev, "smem_per_block", json_integer(c->device->smem_per_block_optin));
  if (c->peaks && c->peaks->copy_GBps > 0) json_object_set_new(dev, "copy_GBps", json_real(c->peaks->copy_GBps));
  for (int i = 0; i < l->n_best; ++i) {
    const entry *e = &l->best[i];
    json_t *b = json_pack("{s:o,s:f,s:i,s:i}", "params", loads_or_null(e->params), "median_ns", e->median_ns,
                          "registers", e->registers, "shared_bytes", e->shared_bytes);
    if (c->bytes > 0) json_object_set_new(b, "GBps", json_real(c->bytes / e->median_ns));
    if (c->flops > 0) json_object_set_new(b, "TFLOPs", json_real(c->flops / e->median_ns / 1e3));
    if (e->code) json_object_set_new(b, "code_proposal", json_integer(e->code));
    json_array_append_new(best, b);
  }
  for (int i = 0; i < l->n_fail; ++i) { /* oldest first */
    const entry *e = &l->fail[(l->fail_next - l->n_fail + i + N_FAIL) % N_FAIL];
    json_t *f = json_pack("{s:o,s:s,s:s}", "params", loads_or_null(e->params), "status", e->status, "error", e->error);
    if (e->code) json_object_set_new(f, "code_proposal", json_integer(e->code));
    json_array_append_new(fails, f);
  }
  json_object_set_new(req, "version", json_integer(TUNE_PROPOSER_VERSION));
  json_object_set_new(req, "recipe", recipe);
  json_object_set_new(req, "problem", json_pack("{s:s,s:o}", "name", c->problem->name, "dims",
                                                loads_or_null(c->problem->dims_json)));
  json_object_set_new(req, "device", dev);
  json_object_set_new(req, "best", best);
  json_object_set_new(req, "failures", fails);
  json_object_set_new(req, "budget", json_integer(budget));
  char *text = json_dumps(req, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(req);
  return text;
}

/* ---- validation ------------------------------------------------------------- */

/* Fields of an object: each must be in allowed (NULL-terminated). */
static int only_fields(json_t *obj, const char *const *allowed, char *why, size_t why_n) {
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
    int ok = 0;
    for (int i = 0; allowed[i]; ++i) ok |= !strcmp(k, allowed[i]);
    if (!ok) { snprintf(why, why_n, "unknown field '%.60s'", k); return -1; }
  }
  return 0;
}

static int values_to_point(tune_llm *l, json_t *values, int *vi, uint64_t *point, char *why, size_t why_n) {
  tune_recipe *r = l->c.recipe;
  if (!json_is_object(values)) { snprintf(why, why_n, "'values' must be an object of parameter: value"); return -1; }
  const char *k;
  json_t *v;
  json_object_foreach(values, k, v) {
    if (tune_recipe_param_index(r, k) < 0) { snprintf(why, why_n, "unknown parameter '%.60s'", k); return -1; }
  }
  for (int i = 0; i < r->n_params; ++i) {
    const tune_param *pa = &r->params[i];
    v = json_object_get(values, pa->name);
    /* a param with an absent value may be left out (configs recorded before it lack it) */
    if (!v && pa->absent < 0) { snprintf(why, why_n, "missing parameter %s", pa->name); return -1; }
    int found = tune_param_index_in(pa, values);
    if (found < 0) {
      char *t = json_dumps(v, JSON_ENCODE_ANY);
      snprintf(why, why_n, "%s=%.60s is not one of the recipe's values", pa->name, t ? t : "?");
      free(t);
      return -1;
    }
    vi[i] = found;
  }
  *point = search_point_encode(l->c.space, vi);
  if (search_space_find(l->c.space, *point) < 0) {
    snprintf(why, why_n, "not in the space: it violates the recipe's constraints");
    return -1;
  }
  return 0;
}

static int is_ident(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

/* Does s contain the word w (identifier boundaries on both sides)? */
static const char *find_word(const char *s, const char *w) {
  size_t n = strlen(w);
  for (const char *p = strstr(s, w); p; p = strstr(p + 1, w))
    if ((p == s || !is_ident(p[-1])) && !is_ident(p[n])) return p;
  return NULL;
}

/* Validate device code for a region: 0 ok, else why says what is wrong. */
static int check_code(tune_llm *l, const char *region, const char *code, size_t len, char *why, size_t why_n) {
  int found = 0;
  for (int i = 0; i < l->n_regions; ++i) found |= !strcmp(l->regions[i].name, region);
  if (!found) {
    if (!l->n_regions) snprintf(why, why_n, "region '%.60s': the template has no // TUNE:REGION markers", region);
    else {
      size_t k = (size_t)snprintf(why, why_n, "no region '%.60s' in the template (regions:", region);
      for (int i = 0; i < l->n_regions && k < why_n; ++i)
        k += (size_t)snprintf(why + k, why_n - k, " %s", l->regions[i].name);
      if (k < why_n) snprintf(why + k, why_n - k, ")");
    }
    return -1;
  }
  if (len > TUNE_PROPOSER_MAX_CODE) { snprintf(why, why_n, "code of %zu bytes is over the %d byte limit", len, TUNE_PROPOSER_MAX_CODE); return -1; }
  if (strlen(code) != len) { snprintf(why, why_n, "code contains a NUL character"); return -1; }
  if (strstr(code, "TUNE:REGION") || strstr(code, "TUNE:END")) {
    snprintf(why, why_n, "code must stay inside region %s: it contains a region marker", region);
    return -1;
  }
  /* brackets balanced outside comments and literals: the code cannot close
     the function it sits in and add code outside the region */
  int depth[3] = {0, 0, 0};
  for (const char *p = code; *p; ++p) {
    if (p[0] == '/' && p[1] == '/') { while (*p && *p != '\n') ++p; if (!*p) break; continue; }
    if (p[0] == '/' && p[1] == '*') { const char *e = strstr(p + 2, "*/"); if (!e) break; p = e + 1; continue; }
    if (*p == '"' || *p == '\'') {
      char q = *p;
      for (++p; *p && *p != q; ++p) if (*p == '\\' && p[1]) ++p;
      if (!*p) break;
      continue;
    }
    int b = *p == '{' || *p == '}' ? 0 : *p == '(' || *p == ')' ? 1 : *p == '[' || *p == ']' ? 2 : -1;
    if (b < 0) continue;
    depth[b] += (*p == '{' || *p == '(' || *p == '[') ? 1 : -1;
    if (depth[b] < 0) break;
  }
  if (depth[0] || depth[1] || depth[2]) {
    snprintf(why, why_n, "code must stay inside region %s: unbalanced %s", region,
             depth[0] ? "braces" : depth[1] ? "parentheses" : "brackets");
    return -1;
  }
  /* host-only or escaping constructs */
  for (const char *p = code; (p = strchr(p, '#')); ++p) {
    const char *d = p + 1;
    while (*d == ' ' || *d == '\t') ++d;
    if (!strncmp(d, "include", 7)) { snprintf(why, why_n, "host-only construct in code: #include"); return -1; }
  }
  static const char *const words[] = {"__host__", "extern", "main", NULL};
  for (int i = 0; words[i]; ++i) {
    const char *p = find_word(code, words[i]);
    if (!p) continue;
    if (!strcmp(words[i], "main")) {
      const char *q = p + 4;
      while (*q == ' ' || *q == '\t' || *q == '\n') ++q;
      if (*q != '(') continue;
    }
    snprintf(why, why_n, "host-only construct in code: %s", words[i]);
    return -1;
  }
  if ((find_word(code, "asm") || find_word(code, "__asm__") || find_word(code, "__asm")) && strstr(code, "trap")) {
    snprintf(why, why_n, "code contains asm with trap");
    return -1;
  }
  return 0;
}

/* The variant of a valid code proposal: its base config (the proposal's own
 * "values", else this problem's best config so far, else the space's first
 * point), the template with the region replaced, and its config hash. */
static int code_variant(tune_llm *l, json_t *values, const char *region, const char *code, int *vi,
                        char *hash, char **source, char *why, size_t why_n) {
  uint64_t point = 0;
  *source = NULL;
  if (values) {
    if (values_to_point(l, values, vi, &point, why, why_n)) return -1;
  } else {
    json_t *b = l->n_best ? json_loads(l->best[0].params, 0, NULL) : NULL;
    char ignore[256];
    int from_best = b && !values_to_point(l, b, vi, &point, ignore, sizeof ignore);
    json_decref(b);
    if (!from_best) {
      if (!l->c.space->n_points) { snprintf(why, why_n, "the recipe's space is empty: no config to put the code in"); return -1; }
      search_point_decode(l->c.space, l->c.space->points[0], vi);
    }
  }
  if (tune_code_splice_file(l->c.recipe->template_path, region, code, source, why, why_n)) return -1;
  char base[17];
  tune_recipe_config_hash(l->c.recipe, vi, base);
  tune_code_config_hash(base, region, code, hash);
  return 0;
}

static int record(tune_llm *l, const char *req_hash, const char *resp_hash, const char *kind, const char *region,
                  const char *values_json, const char *code, const char *rationale, const char *status,
                  const char *reason, int64_t *id, tune_err *err) {
  db_proposal p = {.run_id = l->c.run_id, .problem_id = l->c.problem_id, .command = l->c.opts->command,
                   .request_hash = req_hash, .response_hash = resp_hash, .kind = kind, .region = region,
                   .values_json = values_json, .code = code, .rationale = rationale, .status = status,
                   .reason = reason};
  int64_t tmp;
  return db_proposal_put(l->c.db, &p, id ? id : &tmp, err);
}

int tune_llm_propose(tune_llm *l, uint64_t *out, char (*origins)[32], int max, int *n_out, int *n_code,
                     tune_err *err) {
  *n_out = 0;
  *n_code = 0;
  int rc = TUNE_OK;
  char req_hash[17] = "", why[1024] = "";
  char *resp = NULL;
  size_t resp_n = 0;
  char *req = build_request(l, max);
  int n = ++l->n_requests;
  if (!req) return tune_fail(err, TUNE_ENOMEM, "llm: out of memory building the request");
  size_t req_n = strlen(req);
  tune_hash_hex(req, req_n, req_hash);
  if (tune_proposer_exchange(l->c.opts, req, req_n, &resp, &resp_n, why, sizeof why)) {
    printf("llm: request %d: proposer %s\n", n, why);
    rc = record(l, req_hash, "", "response", "", NULL, NULL, "", "rejected", why, NULL, err);
    fflush(stdout);
  } else {
    rc = tune_llm_take_response(l, n, req_hash, resp, resp_n, out, origins, max, n_out, n_code, err);
  }
  free(resp);
  free(req);
  return rc;
}

int tune_llm_take_response(tune_llm *l, int n, const char *req_hash, const char *resp, size_t resp_n,
                           uint64_t *out, char (*origins)[32], int max, int *n_out, int *n_code,
                           tune_err *err) {
  *n_out = 0;
  *n_code = 0;
  int rc = TUNE_OK;
  char resp_hash[17] = "", why[1024] = "";
  json_t *root = NULL;
  tune_hash_hex(resp, resp_n, resp_hash);
  json_error_t je;
  root = json_loadb(resp, resp_n, JSON_REJECT_DUPLICATES, &je);
  static const char *const top_fields[] = {"version", "proposals", NULL};
  if (!root) snprintf(why, sizeof why, "malformed JSON at line %d column %d: %s", je.line, je.column, je.text);
  else if (!json_is_object(root)) snprintf(why, sizeof why, "the response must be a JSON object");
  else if (only_fields(root, top_fields, why, sizeof why)) {}
  else if (!json_is_integer(json_object_get(root, "version")) ||
           json_integer_value(json_object_get(root, "version")) != TUNE_PROPOSER_VERSION)
    snprintf(why, sizeof why, "'version' must be %d", TUNE_PROPOSER_VERSION);
  else if (!json_is_array(json_object_get(root, "proposals")))
    snprintf(why, sizeof why, "'proposals' must be an array");
  else if (json_array_size(json_object_get(root, "proposals")) > MAX_PROPOSALS)
    snprintf(why, sizeof why, "more than %d proposals", MAX_PROPOSALS);
  if (why[0]) {
    printf("llm: request %d: response rejected: %s\n", n, why);
    rc = record(l, req_hash, resp_hash, "response", "", NULL, NULL, "", "rejected", why, NULL, err);
    goto done;
  }
  json_t *props = json_object_get(root, "proposals");
  size_t i;
  json_t *pr;
  json_array_foreach(props, i, pr) {
    why[0] = 0;
    char *source = NULL;             /* an accepted code proposal's template text */
    int cvi[SEARCH_MAX_PARAMS];
    char chash[17] = "";
    const char *kind = "params", *rationale = "", *region = "", *code = NULL;
    char *values_text = NULL;
    const char *status = "rejected";
    int vi[SEARCH_MAX_PARAMS];
    uint64_t point = 0;
    static const char *const pf[] = {"kind", "values", "rationale", NULL};
    static const char *const cf[] = {"kind", "region", "code", "values", "rationale", NULL};
    json_t *jk = json_is_object(pr) ? json_object_get(pr, "kind") : NULL;
    json_t *jr = json_is_object(pr) ? json_object_get(pr, "rationale") : NULL;
    if (jk && json_is_string(jk)) kind = json_string_value(jk);
    if (jr && json_is_string(jr)) rationale = json_string_value(jr);
    if (!json_is_object(pr)) snprintf(why, sizeof why, "a proposal must be an object");
    else if (!json_is_string(jk) || (strcmp(kind, "params") && strcmp(kind, "code")))
      snprintf(why, sizeof why, "'kind' must be \"params\" or \"code\""), kind = "params";
    else if (jr && (!json_is_string(jr) || json_string_length(jr) > 4000))
      snprintf(why, sizeof why, "'rationale' must be a string of at most 4000 bytes"), rationale = "";
    else if (!strcmp(kind, "params")) {
      if (!only_fields(pr, pf, why, sizeof why)) {
        json_t *values = json_object_get(pr, "values");
        values_text = values && json_is_object(values) ? json_dumps(values, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        if (!values_to_point(l, values, vi, &point, why, sizeof why)) {
          if (tune_llm_seen(l, point)) { status = "skipped"; snprintf(why, sizeof why, "already measured or proposed"); }
          else if (*n_out + *n_code >= max) { status = "skipped"; snprintf(why, sizeof why, "over this batch's budget of %d", max); }
          else status = "accepted";
        }
      }
    } else {
      if (!only_fields(pr, cf, why, sizeof why)) {
        json_t *jreg = json_object_get(pr, "region"), *jc = json_object_get(pr, "code");
        if (!json_is_string(jreg)) snprintf(why, sizeof why, "'region' must be a string");
        else if (!json_is_string(jc)) snprintf(why, sizeof why, "'code' must be a string");
        else {
          region = json_string_value(jreg);
          code = json_string_value(jc);
          json_t *jv = json_object_get(pr, "values");
          if (jv && json_is_object(jv)) values_text = json_dumps(jv, JSON_COMPACT | JSON_SORT_KEYS);
          if (!check_code(l, region, code, json_string_length(jc), why, sizeof why) &&
              !code_variant(l, jv, region, code, cvi, chash, &source, why, sizeof why)) {
            if (!l->c.codes) snprintf(why, sizeof why, "code proposals are not measured here");
            else if (tune_code_set_has(l->c.codes, chash)) { status = "skipped"; snprintf(why, sizeof why, "already proposed"); }
            else if (*n_out + *n_code >= max) { status = "skipped"; snprintf(why, sizeof why, "over this batch's budget of %d", max); }
            else {
              status = "accepted";
              snprintf(why, sizeof why, "valid: to be compiled and verified on every problem of the recipe");
            }
          }
        }
      }
    }
    int64_t id = 0;
    rc = record(l, req_hash, resp_hash, kind, region, values_text, code, rationale, status, why, &id, err);
    free(values_text);
    if (!rc && !strcmp(status, "accepted") && !strcmp(kind, "code")) {
      if (tune_code_set_add(l->c.codes, id, region, code, source, cvi, l->c.recipe->n_params, chash) < 0)
        rc = tune_fail(err, TUNE_ENOMEM, "llm: out of memory");
      else ++*n_code;
    }
    free(source);
    if (rc) goto done;
    if (!strcmp(status, "accepted") && !strcmp(kind, "params")) {
      tune_llm_mark_seen(l, point);
      out[*n_out] = point;
      snprintf(origins[*n_out], 32, "llm:%lld", (long long)id);
      ++*n_out;
    } else if (!l->c.quiet || strcmp(status, "accepted")) {
      printf("llm: request %d: proposal %zu (%s) %s: %s\n", n, i + 1, kind, status, why);
    }
  }
  if (*n_code) printf("llm: request %d: %d code proposal(s) accepted: each is compiled and verified on every problem\n", n, *n_code);
done:
  fflush(stdout);
  json_decref(root);
  return rc;
}
