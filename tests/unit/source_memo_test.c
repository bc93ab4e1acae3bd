/* source_memo_test.c: the per-process memo of the raw source hash (tuner/source_memo.c) under
 * tune_source_hash_update and tune_compile_key, on a small tree written to a temporary folder and
 * on the repository's templates (SRC). The hash with the memo equals the hash as files were read
 * before there was one (fgets in pieces of 4095 bytes, reference_hash below), also for long lines,
 * NUL bytes and a missing final newline; a settled file is read once and then served from the
 * memo; an edit of an included file (the same size, its mtime set back), a file renamed over it,
 * a header that appears where an include is looked for first, all change the key as a fresh hash
 * does; a missing template gives the same error each time; threads hashing at once get the same
 * keys. Prints what a key costs with the memo and with every file read (not checked: timing).
 * Exit status 0 when every CHECK passed. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "compile.h"
#include "source_hash.h"
#include "source_memo.h"

static char root[256], inc[300];

/* ---- the hash as it was computed before the memo ---------------------------------------------- */

typedef struct ref_visit { char path[64][PATH_MAX]; int n; } ref_visit;

static int ref_file(XXH64_state_t *h, const char *path, const char *rroot, ref_visit *v) {
  char real[PATH_MAX];
  if (!realpath(path, real)) return 1;
  for (int i = 0; i < v->n; ++i)
    if (!strcmp(v->path[i], real)) return 0;
  snprintf(v->path[v->n++], PATH_MAX, "%s", real);
  FILE *f = fopen(real, "rb");
  if (!f) return 1;
  char line[4096], dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", real);
  *strrchr(dir, '/') = 0;
  const char *rel = strncmp(real, rroot, strlen(rroot)) ? real : real + strlen(rroot);
  XXH64_update(h, rel, strlen(rel));
  int rc = 0;
  while (!rc && fgets(line, sizeof line, f)) {
    XXH64_update(h, line, strlen(line));
    const char *p = line;
    while (*p == ' ' || *p == '\t') ++p;
    if (*p++ != '#') continue;
    while (*p == ' ' || *p == '\t') ++p;
    if (strncmp(p, "include", 7)) continue;
    p += 7;
    while (*p == ' ' || *p == '\t') ++p;
    const char *q = *p == '"' ? strchr(p + 1, '"') : NULL;
    if (!q) continue;
    char cand[PATH_MAX * 2 + 2];
    snprintf(cand, sizeof cand, "%s/%.*s", dir, (int)(q - p - 1), p + 1);
    if (access(cand, R_OK)) snprintf(cand, sizeof cand, "%s/%.*s", rroot, (int)(q - p - 1), p + 1);
    if (!access(cand, R_OK)) rc = ref_file(h, cand, rroot, v);
  }
  fclose(f);
  return rc;
}

static void reference_hash(const char *path, const char *iroot, char out[17]) {
  static ref_visit v;
  v.n = 0;
  char rroot[PATH_MAX];
  if (!realpath(iroot, rroot)) snprintf(rroot, sizeof rroot, "%s", iroot);
  XXH64_state_t *h = XXH64_createState();
  XXH64_reset(h, 0);
  if (ref_file(h, path, rroot, &v)) snprintf(out, 17, "error");
  else snprintf(out, 17, "%016llx", (unsigned long long)XXH64_digest(h));
  XXH64_freeState(h);
}

/* ---- helpers ---------------------------------------------------------------------------------- */

static void write_bytes(const char *rel, const char *bytes, size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  FILE *f = fopen(path, "wb");
  if (!f) { perror(path); exit(2); }
  fwrite(bytes, 1, n, f);
  fclose(f);
}

static void write_text(const char *rel, const char *text) { write_bytes(rel, text, strlen(text)); }

static void memo_hash(const char *path, const char *iroot, char out[17]) {
  XXH64_state_t *h = XXH64_createState();
  XXH64_reset(h, 0);
  tune_err err;
  tune_err_clear(&err);
  if (tune_source_hash_update(h, path, iroot, &err)) snprintf(out, 17, "error");
  else snprintf(out, 17, "%016llx", (unsigned long long)XXH64_digest(h));
  XXH64_freeState(h);
}

/* The hash of templates/<rel> equals the reference's. */
static int same_as_reference(const char *rel) {
  char path[512], a[17], b[17];
  snprintf(path, sizeof path, "%s/%s", inc, rel);
  memo_hash(path, inc, a);
  reference_hash(path, inc, b);
  if (strcmp(a, b)) fprintf(stderr, "%s: memo %s, reference %s\n", rel, a, b);
  return !strcmp(a, b) && strcmp(a, "error");
}

static int key_of(const char *path, const char *iroot, char key[32], tune_err *err) {
  tune_compile_job j;
  memset(&j, 0, sizeof j);
  static const char defs[1][160] = {"-DX=1"};
  j.source_path = path;
  j.include_root = iroot;
  j.arch = "sm_90a";
  j.n_defines = 1;
  j.defines = defs;
  j.n_names = 1;
  j.names[0] = "k";
  tune_err_clear(err);
  int rc = tune_compile_key(&j, err);
  snprintf(key, 32, "%.31s", rc ? "error" : j.bin.key);
  return rc;
}

/* The compile key of templates/fam/k.cuh, with the memo as it is and as a fresh one: both in key,
 * 1 when they agree. */
static int kernel_key(char key[32]) {
  char path[512], fresh[32];
  tune_err err;
  snprintf(path, sizeof path, "%s/fam/k.cuh", inc);
  key_of(path, inc, key, &err);
  tune_source_memo_clear();
  key_of(path, inc, fresh, &err);
  return !strcmp(key, fresh) && strcmp(key, "error");
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- the checks ------------------------------------------------------------------------------- */

/* Pieces as fgets cuts them: long lines, an include at a piece's start, NUL bytes, no final newline. */
static void check_pieces(void) {
  char big[9000];
  memset(big, 'x', sizeof big);
  memcpy(big, "// ", 3);
  memcpy(big + 4095, "#include \"common/h.cuh\"\n", 24); /* starts the second piece of a long line */
  big[5000] = '\n';
  big[6000] = 0; /* hashed up to here in its piece */
  memcpy(big + 8000, "\n#include \"common/g.cuh\"", 24); /* the last line has no newline */
  write_text("templates/common/h.cuh", "#pragma once\n__device__ int h() { return 1; }\n");
  write_text("templates/common/g.cuh", "#pragma once\r\n__device__ int g() { return 2; }\r\n");
  write_bytes("templates/fam/long.cuh", big, 8024);
  CHECK(same_as_reference("fam/long.cuh"));
  write_text("templates/fam/k.cuh", "#pragma once\n  #  include \"common/h.cuh\"\n#include <cuda_fp16.h>\n"
                                    "#include \"missing.cuh\"\n#include \"common/g.cuh\"\n#include \"common/h.cuh\"\n"
                                    "__global__ void k(int *y) { y[0] = h() + g(); }\n");
  CHECK(same_as_reference("fam/k.cuh"));
}

/* Files changed less than TUNE_SOURCE_MEMO_SETTLE_S ago are read on every hash; settled ones once. */
static void check_reuse(void) {
  char key[32], again[32];
  tune_source_memo_clear();
  long r0 = tune_source_memo_reads();
  CHECK(kernel_key(key));
  CHECK(tune_source_memo_reads() - r0 == 6); /* k, h, g: twice, none settled */
  sleep(TUNE_SOURCE_MEMO_SETTLE_S + 1);
  CHECK(kernel_key(key)); /* fills the memo */
  r0 = tune_source_memo_reads();
  char path[512];
  snprintf(path, sizeof path, "%s/fam/k.cuh", inc);
  tune_err err;
  CHECK(key_of(path, inc, again, &err) == TUNE_OK && !strcmp(again, key));
  CHECK(tune_source_memo_reads() == r0); /* served from the memo */
  CHECK(same_as_reference("fam/k.cuh"));
}

/* Every change that a fresh hash sees, the memo sees. */
static void check_changes(void) {
  char path[512], h_path[512], key0[32], key[32], tmp[512];
  tune_err err;
  snprintf(path, sizeof path, "%s/fam/k.cuh", inc);
  snprintf(h_path, sizeof h_path, "%s/common/h.cuh", inc);
  CHECK(key_of(path, inc, key0, &err) == TUNE_OK);
  /* the same size, the old mtime put back: only ctime says it changed */
  struct stat st;
  CHECK(stat(h_path, &st) == 0);
  write_text("templates/common/h.cuh", "#pragma once\n__device__ int h() { return 7; }\n");
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  CHECK(utimensat(AT_FDCWD, h_path, times, 0) == 0);
  CHECK(key_of(path, inc, key, &err) == TUNE_OK && strcmp(key, key0));
  CHECK(kernel_key(key) && same_as_reference("fam/k.cuh"));
  /* a new file renamed over the header */
  char before[32];
  snprintf(before, sizeof before, "%s", key);
  snprintf(tmp, sizeof tmp, "%s/common/h.cuh.new", inc);
  write_text("templates/common/h.cuh.new", "#pragma once\n__device__ int h() { return 8; }\n");
  CHECK(rename(tmp, h_path) == 0);
  CHECK(key_of(path, inc, key, &err) == TUNE_OK && strcmp(key, before));
  CHECK(kernel_key(key));
  /* a header next to the kernel now found before the one under the root */
  snprintf(before, sizeof before, "%s", key);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/fam/common", inc);
  CHECK(mkdir(dir, 0755) == 0);
  write_text("templates/fam/common/h.cuh", "#pragma once\n__device__ int h() { return 9; }\n");
  CHECK(key_of(path, inc, key, &err) == TUNE_OK && strcmp(key, before));
  CHECK(kernel_key(key) && same_as_reference("fam/k.cuh"));
  /* a template that is not there: the same error, every time */
  char missing[512], k1[32], k2[32];
  snprintf(missing, sizeof missing, "%s/fam/none.cuh", inc);
  CHECK(key_of(missing, inc, k1, &err) == TUNE_EIO);
  char want[600];
  snprintf(want, sizeof want, "%s: cannot open source file", missing);
  CHECK(!strcmp(err.msg, want));
  CHECK(key_of(missing, inc, k2, &err) == TUNE_EIO && !strcmp(err.msg, want));
}

typedef struct thread_arg { const char *path; char key[32]; int bad; } thread_arg;

static void *hash_often(void *p) {
  thread_arg *a = p;
  for (int i = 0; i < 200; ++i) {
    char key[32];
    tune_err err;
    if (key_of(a->path, inc, key, &err) || strcmp(key, a->key)) a->bad = 1;
  }
  return NULL;
}

static void check_threads(void) {
  char path[512], key[32];
  tune_err err;
  snprintf(path, sizeof path, "%s/fam/k.cuh", inc);
  CHECK(key_of(path, inc, key, &err) == TUNE_OK);
  thread_arg a[4];
  pthread_t th[4];
  for (int i = 0; i < 4; ++i) {
    a[i] = (thread_arg){.path = path};
    snprintf(a[i].key, sizeof a[i].key, "%s", key);
    CHECK(pthread_create(&th[i], NULL, hash_often, &a[i]) == 0);
  }
  for (int i = 0; i < 4; ++i) {
    pthread_join(th[i], NULL);
    CHECK(!a[i].bad);
  }
}

/* The repository's templates hash as before; what a key costs, with and without the memo. */
static void check_repository(void) {
  const char *src = getenv("SRC");
  if (!src) return;
  const char *tpl[] = {"attention/decode.cuh", "attention/prefill_sm90.cuh", "gemm/gemm_sm90.cuh"};
  char templates[PATH_MAX];
  snprintf(templates, sizeof templates, "%s/templates", src);
  for (int t = 0; t < 3; ++t) {
    char path[PATH_MAX + 64], a[17], b[17], key[32];
    snprintf(path, sizeof path, "%s/%s", templates, tpl[t]);
    memo_hash(path, templates, a);
    reference_hash(path, templates, b);
    CHECK(!strcmp(a, b) && strcmp(a, "error"));
    enum { N = 200 };
    tune_err err;
    double t0 = now_s();
    for (int i = 0; i < N; ++i) key_of(path, templates, key, &err);
    double memo = now_s() - t0;
    t0 = now_s();
    for (int i = 0; i < N; ++i) {
      tune_source_memo_clear();
      key_of(path, templates, key, &err);
    }
    double cold = now_s() - t0;
    printf("%s: %.1f us a compile key with the memo, %.1f us reading every file\n", tpl[t], memo / N * 1e6,
           cold / N * 1e6);
  }
}

int main(void) {
  snprintf(root, sizeof root, "%s/tune_source_memo_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(root)) { perror("mkdtemp"); return 2; }
  snprintf(inc, sizeof inc, "%s/templates", root);
  const char *dirs[] = {"templates", "templates/common", "templates/fam"};
  for (int i = 0; i < 3; ++i) {
    char d[512];
    snprintf(d, sizeof d, "%s/%s", root, dirs[i]);
    if (mkdir(d, 0755)) { perror(d); return 2; }
  }
  check_pieces();
  check_reuse();
  check_changes();
  check_threads();
  check_repository();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", root);
  printf("source_memo_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
