/* source_hash.c: hashing a source file with its local includes, raw or normalised. */
#include "source_hash.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file_util.h"
#include "source_memo.h"

#define MAX_FILES 256

/* The include `name` of a file in dir: next to it, else under the root; 0 when neither has it
 * (not local: NVRTC will say so if it is missing). */
static int local_include(const char *name, const char *dir, const char *root, char *cand, size_t cap) {
  snprintf(cand, cap, "%s/%s", dir, name);
  if (access(cand, R_OK)) snprintf(cand, cap, "%s/%s", root, name);
  return !access(cand, R_OK);
}

typedef struct visit { char path[MAX_FILES][PATH_MAX]; int n; } visit; /* the files hashed, by real path */

/* Names are resolved on every hash; only the files' text comes from the memo (source_memo.h). */
static int hash_file(XXH64_state_t *h, const char *path, const char *root, visit *v, tune_err *err) {
  char real[PATH_MAX];
  if (!realpath(path, real)) return tune_fail(err, TUNE_EIO, "%s: cannot open source file", path);
  for (int i = 0; i < v->n; ++i)
    if (!strcmp(v->path[i], real)) return TUNE_OK;
  if (v->n == MAX_FILES) return tune_fail(err, TUNE_EINVAL, "%s: more than %d included files", path, MAX_FILES);
  snprintf(v->path[v->n++], PATH_MAX, "%s", real);
  tune_source_file *f;
  int own, rc = tune_source_memo_get(real, &f, &own, err);
  if (rc) return rc;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", real);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  /* the name relative to the root keeps hashes equal across checkouts */
  const char *rel = strncmp(real, root, strlen(root)) ? real : real + strlen(root);
  XXH64_update(h, rel, strlen(rel));
  size_t done = 0;
  for (int k = 0; k < f->n_inc && !rc; ++k) {
    XXH64_update(h, f->text + done, f->inc_at[k] - done);
    done = f->inc_at[k];
    char cand[PATH_MAX * 2 + 2];
    if (local_include(f->inc_name[k], dir, root, cand, sizeof cand)) rc = hash_file(h, cand, root, v, err);
  }
  if (!rc) XXH64_update(h, f->text + done, f->n - done);
  if (own) tune_source_file_free(f);
  return rc;
}

int tune_source_hash_update(XXH64_state_t *h, const char *path, const char *include_root, tune_err *err) {
  visit *v = malloc(sizeof *v); /* not zeroed: a megabyte, of which a hash uses a few paths */
  if (!v) return tune_fail(err, TUNE_ENOMEM, "source hash: out of memory");
  v->n = 0;
  char root[PATH_MAX];
  if (!realpath(include_root, root)) snprintf(root, sizeof root, "%s", include_root);
  tune_source_memo_lock(); /* the memo's entries stay as they are until the whole tree is hashed */
  int rc = hash_file(h, path, root, v, err);
  tune_source_memo_unlock();
  free(v);
  return rc;
}

/* ---- normalised text ---------------------------------------------------------------------- */

typedef struct text_buf { char *p; size_t n, cap; int oom; } text_buf;

static void put(text_buf *b, char c) {
  if (b->oom) return;
  if (b->n + 2 > b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 4096;
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return; }
    b->p = p;
    b->cap = cap;
  }
  b->p[b->n++] = c;
  b->p[b->n] = 0;
}

/* Level of a Lua long bracket opening at s ("[[" 0, "[=[" 1, ...), or -1. */
static int long_bracket(const char *s) {
  if (*s != '[') return -1;
  int level = 0;
  while (s[1 + level] == '=') ++level;
  return s[1 + level] == '[' ? level : -1;
}

/* End of the long bracket of `level` whose text starts at s (just past the closing one). */
static const char *long_bracket_end(const char *s, int level) {
  for (; *s; ++s) {
    if (*s != ']') continue;
    int i = 0;
    while (i < level && s[1 + i] == '=') ++i;
    if (i == level && s[1 + i] == ']') return s + level + 2;
  }
  return s;
}

/* End of the quoted literal opening at s (past its closing quote, or at the line's end). */
static const char *quoted_end(const char *s) {
  const char q = *s++;
  for (; *s && *s != q && *s != '\n'; ++s)
    if (*s == '\\' && s[1]) ++s;
  return *s == q ? s + 1 : s;
}

/* End of a C++ raw string R"d(...)d" opening at s (at the R), or NULL if s opens none. */
static const char *raw_string_end(const char *s) {
  if (s[0] != 'R' || s[1] != '"') return NULL;
  const char *open = s + 2;
  size_t d = 0;
  while (d < 16 && open[d] && open[d] != '(' && !isspace((unsigned char)open[d]) && open[d] != '"') ++d;
  if (open[d] != '(') return NULL;
  for (const char *c = open + d + 1; *c; ++c)
    if (*c == ')' && !strncmp(c + 1, open, d) && c[1 + d] == '"') return c + d + 2;
  return s + strlen(s);
}

/* src without line splices (C phase 2), malloc'd. */
static char *join_splices(const char *src) {
  size_t n = strlen(src);
  char *o = malloc(n + 1), *w = o;
  if (!o) return NULL;
  for (const char *c = src; *c; ++c) {
    if (c[0] == '\\' && c[1] == '\n') { ++c; continue; }
    if (c[0] == '\\' && c[1] == '\r' && c[2] == '\n') { c += 2; continue; }
    *w++ = *c;
  }
  *w = 0;
  return o;
}

typedef struct norm_state { text_buf *out; int space, content, lua; } norm_state;

static void emit_span(norm_state *st, const char *a, const char *b) {
  if (st->space && st->content) put(st->out, ' ');
  for (; a < b; ++a) put(st->out, *a);
  st->space = 0;
  st->content = 1;
}

/* Normalised text of C/CUDA (lua = 0: one line per non-blank line) or Lua (lua = 1: one line). For
 * Lua, *dynamic_require is set where `require` is not followed by a string literal, and the names of
 * the literal ones are appended to mods (NUL-separated). */
static int normalize(const char *src, int lua, text_buf *out, text_buf *mods, int *dynamic_require) {
  norm_state st = {.out = out, .lua = lua};
  const char *c = src;
  while (*c) {
    const char *e;
    if (*c == '\n' && !lua) {
      if (st.content) put(out, '\n');
      st.content = st.space = 0;
      ++c;
    } else if (isspace((unsigned char)*c)) {
      st.space = 1;
      ++c;
    } else if (!lua && c[0] == '/' && c[1] == '/') {
      while (*c && *c != '\n') ++c;
      st.space = 1;
    } else if (!lua && c[0] == '/' && c[1] == '*') {
      e = strstr(c + 2, "*/");
      c = e ? e + 2 : c + strlen(c);
      st.space = 1;
    } else if (lua && c[0] == '-' && c[1] == '-') {
      int level = long_bracket(c + 2);
      if (level >= 0) c = long_bracket_end(c + 4 + level, level);
      else while (*c && *c != '\n') ++c;
      st.space = 1;
    } else if (*c == '"' || *c == '\'') {
      e = quoted_end(c);
      emit_span(&st, c, e);
      c = e;
    } else if (lua && long_bracket(c) >= 0) {
      int level = long_bracket(c);
      e = long_bracket_end(c + 2 + level, level);
      emit_span(&st, c, e);
      c = e;
    } else if (!lua && (e = raw_string_end(c))) {
      emit_span(&st, c, e);
      c = e;
    } else if (isalpha((unsigned char)*c) || *c == '_') {
      for (e = c; isalnum((unsigned char)*e) || *e == '_'; ++e) {}
      emit_span(&st, c, e);
      if (lua && e - c == 7 && !strncmp(c, "require", 7)) {
        const char *a = e;
        while (isspace((unsigned char)*a)) ++a;
        if (*a == '(') for (++a; isspace((unsigned char)*a); ++a) {}
        const char *q = (*a == '"' || *a == '\'') ? quoted_end(a) : NULL;
        if (!q || q[-1] != *a || memchr(a + 1, '\\', (size_t)(q - a - 1))) *dynamic_require = 1;
        else {
          for (const char *m = a + 1; m < q - 1; ++m) put(mods, *m);
          put(mods, 0);
        }
      }
      c = e;
    } else {
      emit_span(&st, c, c + 1);
      ++c;
    }
  }
  if (st.content && !lua) put(out, '\n');
  return out->oom || mods->oom ? TUNE_ENOMEM : TUNE_OK;
}

typedef struct norm_visit { char path[MAX_FILES][PATH_MAX]; XXH64_hash_t own[MAX_FILES]; int n; } norm_visit;

/* 1 and *own set where real was hashed before; else records it (own filled in later). */
static int norm_seen(norm_visit *v, const char *real, int *slot) {
  for (int i = 0; i < v->n; ++i)
    if (!strcmp(v->path[i], real)) { *slot = i; return 1; }
  if (v->n == MAX_FILES) return -1;
  snprintf(v->path[v->n], PATH_MAX, "%s", real);
  *slot = v->n++;
  return 0;
}

static void hash_marker(XXH64_state_t *h, const char *kind, XXH64_hash_t own) {
  char m[64];
  int n = snprintf(m, sizeof m, "%s@%016llx\n", kind, (unsigned long long)own);
  XXH64_update(h, m, (size_t)n);
}

/* The local header a normalised line includes (the name, in name), or 0. */
static int include_name(const char *line, size_t n, char *name, size_t cap) {
  const char *p = line, *end = line + n;
  if (p == end || *p != '#') return 0;
  if (++p < end && *p == ' ') ++p;
  if (end - p < 8 || strncmp(p, "include", 7)) return 0;
  p += 7;
  if (p < end && *p == ' ') ++p;
  if (p == end || *p != '"') return 0;
  const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
  if (!q || (size_t)(q - p) > cap) return 0;
  snprintf(name, cap, "%.*s", (int)(q - p - 1), p + 1);
  return 1;
}

static int norm_file(XXH64_state_t *h, const char *path, const char *root, int lua, norm_visit *v, tune_err *err);

/* Hash the normalised C text of a file at real (in dir): each local include expanded in place. */
static int norm_c_lines(XXH64_state_t *h, const char *text, const char *dir, const char *root, norm_visit *v,
                        tune_err *err) {
  for (const char *line = text; *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    char name[PATH_MAX], cand[PATH_MAX * 2 + 2];
    if (include_name(line, n, name, sizeof name) && local_include(name, dir, root, cand, sizeof cand)) {
      int rc = norm_file(h, cand, root, 0, v, err);
      if (rc) return rc;
    } else XXH64_update(h, line, n + (nl ? 1 : 0));
    line += n + (nl ? 1 : 0);
  }
  return TUNE_OK;
}

static int norm_file(XXH64_state_t *h, const char *path, const char *root, int lua, norm_visit *v, tune_err *err) {
  char real[PATH_MAX];
  if (!realpath(path, real)) return tune_fail(err, TUNE_EIO, "%s: cannot open source file", path);
  int slot, seen = norm_seen(v, real, &slot);
  if (seen < 0) return tune_fail(err, TUNE_EINVAL, "%s: more than %d included files", path, MAX_FILES);
  if (seen) { hash_marker(h, lua ? "require" : "#include", v->own[slot]); return TUNE_OK; }
  char *raw = tune_read_file(real, NULL);
  if (!raw) return tune_fail(err, TUNE_EIO, "%s: cannot read", real);
  char *src = lua ? raw : join_splices(raw);
  text_buf out = {0}, mods = {0};
  int dynamic = 0, rc = src ? normalize(src, lua, &out, &mods, &dynamic) : TUNE_ENOMEM;
  if (src != raw) free(src);
  free(raw);
  if (rc) { tune_fail(err, rc, "%s: out of memory", real); goto done; }
  if (dynamic) { rc = tune_fail(err, TUNE_EINVAL, "%s: a require whose module is not a string literal", real); goto done; }
  v->own[slot] = XXH64(out.p ? out.p : "", out.n, 0);
  if (lua) {
    XXH64_update(h, out.p ? out.p : "", out.n);
    for (size_t i = 0; i < mods.n && !rc; i += strlen(mods.p + i) + 1) {
      char mod[PATH_MAX + 64];
      int k = snprintf(mod, sizeof mod, "%s/recipes/", root);
      for (const char *m = mods.p + i; *m && k < (int)sizeof mod - 5; ++m) mod[k++] = *m == '.' ? '/' : *m;
      snprintf(mod + k, sizeof mod - (size_t)k, ".lua");
      rc = norm_file(h, mod, root, 1, v, err);
    }
  } else {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", real);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    rc = norm_c_lines(h, out.p ? out.p : "", dir, root, v, err);
  }
done:
  free(out.p);
  free(mods.p);
  return rc;
}

static int norm_tree(XXH64_state_t *h, const char *path, const char *root_in, int lua, tune_err *err) {
  norm_visit *v = calloc(1, sizeof *v);
  if (!v) return tune_fail(err, TUNE_ENOMEM, "source hash: out of memory");
  char root[PATH_MAX];
  if (!realpath(root_in, root)) snprintf(root, sizeof root, "%s", root_in);
  int rc = norm_file(h, path, root, lua, v, err);
  free(v);
  return rc;
}

int tune_source_hash_normalized_update(XXH64_state_t *h, const char *path, const char *include_root, tune_err *err) {
  return norm_tree(h, path, include_root, 0, err);
}

int tune_lua_hash_normalized_update(XXH64_state_t *h, const char *path, const char *root, tune_err *err) {
  return norm_tree(h, path, root, 1, err);
}

int tune_recipe_hash_normalized(const char *recipe_file, const char *template_path, const char *ref_source,
                                const char *root, char out[17], tune_err *err) {
  out[0] = 0;
  XXH64_state_t *h = XXH64_createState();
  if (!h) return tune_fail(err, TUNE_ENOMEM, "source hash: out of memory");
  XXH64_reset(h, 0);
  static const char kind[] = "tune normalised source 1\n"; /* never equal to a raw hash of the same tree */
  XXH64_update(h, kind, sizeof kind - 1);
  char inc[PATH_MAX + 16];
  snprintf(inc, sizeof inc, "%s/templates", root);
  int rc = tune_lua_hash_normalized_update(h, recipe_file, root, err);
  if (!rc) rc = tune_source_hash_normalized_update(h, template_path, inc, err);
  if (!rc) rc = tune_source_hash_normalized_update(h, ref_source, inc, err);
  if (!rc) snprintf(out, 17, "%016llx", (unsigned long long)XXH64_digest(h));
  XXH64_freeState(h);
  return rc;
}
