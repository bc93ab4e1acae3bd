/* source_hash.c: hashing a source file with its local includes. */
#include "source_hash.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_FILES 256

typedef struct visit { char path[MAX_FILES][PATH_MAX]; int n; } visit;

static int hash_file(XXH64_state_t *h, const char *path, const char *root, visit *v, tune_err *err) {
  char real[PATH_MAX];
  if (!realpath(path, real)) return tune_fail(err, TUNE_EIO, "%s: cannot open source file", path);
  for (int i = 0; i < v->n; ++i)
    if (!strcmp(v->path[i], real)) return TUNE_OK;
  if (v->n == MAX_FILES) return tune_fail(err, TUNE_EINVAL, "%s: more than %d included files", path, MAX_FILES);
  snprintf(v->path[v->n++], PATH_MAX, "%s", real);
  FILE *f = fopen(real, "rb");
  if (!f) return tune_fail(err, TUNE_EIO, "%s: cannot read", real);
  char line[4096];
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", real);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  int rc = TUNE_OK;
  /* the name relative to the root keeps hashes equal across checkouts */
  const char *rel = strncmp(real, root, strlen(root)) ? real : real + strlen(root);
  XXH64_update(h, rel, strlen(rel));
  while (fgets(line, sizeof line, f)) {
    XXH64_update(h, line, strlen(line));
    const char *p = line;
    while (*p == ' ' || *p == '\t') ++p;
    if (*p != '#') continue;
    ++p;
    while (*p == ' ' || *p == '\t') ++p;
    if (strncmp(p, "include", 7)) continue;
    p += 7;
    while (*p == ' ' || *p == '\t') ++p;
    if (*p != '"') continue;
    const char *q = strchr(p + 1, '"');
    if (!q) continue;
    char name[PATH_MAX], cand[PATH_MAX * 2 + 2];
    snprintf(name, sizeof name, "%.*s", (int)(q - p - 1), p + 1);
    snprintf(cand, sizeof cand, "%s/%s", dir, name);
    if (access(cand, R_OK)) snprintf(cand, sizeof cand, "%s/%s", root, name);
    if (access(cand, R_OK)) continue; /* not local: NVRTC will say so if it is missing */
    if ((rc = hash_file(h, cand, root, v, err))) break;
  }
  fclose(f);
  return rc;
}

int tune_source_hash_update(XXH64_state_t *h, const char *path, const char *include_root, tune_err *err) {
  visit *v = calloc(1, sizeof *v);
  if (!v) return tune_fail(err, TUNE_ENOMEM, "source hash: out of memory");
  char root[PATH_MAX];
  if (!realpath(include_root, root)) snprintf(root, sizeof root, "%s", include_root);
  int rc = hash_file(h, path, root, v, err);
  free(v);
  return rc;
}
