/* source_memo.c: the files the raw source hash reads, kept while unchanged (source_memo.h). */
#include "source_memo.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MEMO_MAX 4096 /* files kept; beyond, files are read on each hash */

/* What stat() says of a file's identity and last change. */
typedef struct file_id {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime, ctime;
} file_id;

typedef struct memo_entry {
  char *real;            /* the path, from realpath */
  file_id id;            /* the file as read */
  tune_source_file *f;   /* its text */
} memo_entry;

static struct {
  pthread_mutex_t mu;
  memo_entry *e;         /* [n], capacity cap */
  int n, cap;
  long reads;            /* files read from disk */
} memo = {.mu = PTHREAD_MUTEX_INITIALIZER};

void tune_source_memo_lock(void) { pthread_mutex_lock(&memo.mu); }
void tune_source_memo_unlock(void) { pthread_mutex_unlock(&memo.mu); }

static file_id id_of(const struct stat *st) {
  return (file_id){.dev = st->st_dev, .ino = st->st_ino, .size = st->st_size, .mtime = st->st_mtim,
                   .ctime = st->st_ctim};
}

static int same_time(struct timespec a, struct timespec b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

static int same_id(const file_id *a, const file_id *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size && same_time(a->mtime, b->mtime) &&
         same_time(a->ctime, b->ctime);
}

/* ctime at least TUNE_SOURCE_MEMO_SETTLE_S before t (a ctime after t, from a skewed clock, is not). */
static int settled(struct timespec ctime, struct timespec t) {
  time_t limit = t.tv_sec - TUNE_SOURCE_MEMO_SETTLE_S;
  return ctime.tv_sec < limit || (ctime.tv_sec == limit && ctime.tv_nsec <= t.tv_nsec);
}

void tune_source_file_free(tune_source_file *f) {
  if (!f) return;
  for (int i = 0; i < f->n_inc; ++i) free(f->inc_name[i]);
  free(f->inc_name);
  free(f->inc_at);
  free(f->text);
  free(f);
}

/* The header a piece of text names when it is a directive #include "name" (into name), else 0. */
static int include_in(const char *line, char name[PATH_MAX]) {
  const char *p = line;
  while (*p == ' ' || *p == '\t') ++p;
  if (*p != '#') return 0;
  ++p;
  while (*p == ' ' || *p == '\t') ++p;
  if (strncmp(p, "include", 7)) return 0;
  p += 7;
  while (*p == ' ' || *p == '\t') ++p;
  if (*p != '"') return 0;
  const char *q = strchr(p + 1, '"');
  if (!q) return 0;
  snprintf(name, PATH_MAX, "%.*s", (int)(q - p - 1), p + 1);
  return 1;
}

static int add_include(tune_source_file *f, size_t at, const char *name) {
  size_t *a = realloc(f->inc_at, (size_t)(f->n_inc + 1) * sizeof *a);
  if (a) f->inc_at = a;
  char **nm = realloc(f->inc_name, (size_t)(f->n_inc + 1) * sizeof *nm);
  if (nm) f->inc_name = nm;
  char *copy = a && nm ? strdup(name) : NULL;
  if (!copy) return TUNE_ENOMEM;
  f->inc_at[f->n_inc] = at;
  f->inc_name[f->n_inc++] = copy;
  return TUNE_OK;
}

/* The file's bytes buf[0, n) cut into pieces the way fgets() with a TUNE_SOURCE_MEMO_LINE buffer
 * cuts them, which is how compile keys have always read a file: the same pieces give the same
 * hash and the same includes. text gets each piece up to its first NUL. */
static int scan(const char *buf, size_t n, tune_source_file *f) {
  f->text = malloc(n + 1);
  if (!f->text) return TUNE_ENOMEM;
  char line[TUNE_SOURCE_MEMO_LINE], name[PATH_MAX];
  for (size_t pos = 0; pos < n;) {
    size_t take = 0;
    while (take < sizeof line - 1 && pos + take < n)
      if (buf[pos + take++] == '\n') break;
    memcpy(line, buf + pos, take);
    line[take] = 0;
    pos += take;
    size_t k = strlen(line);
    memcpy(f->text + f->n, line, k);
    f->n += k;
    if (include_in(line, name) && add_include(f, f->n, name)) return TUNE_ENOMEM;
  }
  return TUNE_OK;
}

/* The whole file at fd, malloc'd, in *buf (*n bytes). A read error ends it, as it ends fgets(). */
static int read_all(int fd, size_t hint, char **buf, size_t *n, int *short_read) {
  size_t cap = hint + 1, len = 0;
  char *b = malloc(cap);
  *short_read = 0;
  for (;;) {
    if (!b) return TUNE_ENOMEM;
    if (len == cap) {
      char *nb = realloc(b, cap *= 2);
      if (!nb) free(b);
      b = nb;
      continue;
    }
    ssize_t got = read(fd, b + len, cap - len);
    if (got < 0) *short_read = 1;
    if (got <= 0) break;
    len += (size_t)got;
  }
  *buf = b;
  *n = len;
  return TUNE_OK;
}

/* The file at real read and scanned into *out (the caller frees it), with *id its identity and
 * *keep whether it may be kept: unchanged during the read, and settled. */
static int read_file(const char *real, tune_source_file **out, file_id *id, int *keep, tune_err *err) {
  struct timespec t0;
  clock_gettime(CLOCK_REALTIME, &t0);
  int fd = open(real, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tune_fail(err, TUNE_EIO, "%s: cannot read", real);
  struct stat before, after;
  int stat_rc = fstat(fd, &before);
  char *buf = NULL;
  size_t n = 0;
  int short_read = 0;
  int rc = read_all(fd, stat_rc ? 0 : (size_t)before.st_size, &buf, &n, &short_read);
  stat_rc |= fstat(fd, &after);
  close(fd);
  tune_source_file *f = rc ? NULL : calloc(1, sizeof *f);
  if (f && (rc = scan(buf, n, f))) {
    tune_source_file_free(f);
    f = NULL;
  }
  free(buf);
  if (!f) return tune_fail(err, TUNE_ENOMEM, "%s: out of memory", real);
  *id = (file_id){0};
  *keep = 0;
  if (!stat_rc) {
    file_id b = id_of(&after);
    *id = id_of(&before);
    *keep = !short_read && same_id(id, &b) && settled(before.st_ctim, t0);
  }
  *out = f;
  return TUNE_OK;
}

static memo_entry *find(const char *real) {
  for (int i = 0; i < memo.n; ++i)
    if (!strcmp(memo.e[i].real, real)) return &memo.e[i];
  return NULL;
}

static void drop(memo_entry *e) {
  free(e->real);
  tune_source_file_free(e->f);
  *e = memo.e[--memo.n];
}

/* Keeps f as real's entry: 1 when kept (the memo owns f), 0 when the memo is full or out of memory. */
static int keep(const char *real, const file_id *id, tune_source_file *f) {
  if (memo.n == MEMO_MAX) return 0;
  if (memo.n == memo.cap) {
    int cap = memo.cap ? 2 * memo.cap : 64;
    memo_entry *e = realloc(memo.e, (size_t)cap * sizeof *e);
    if (!e) return 0;
    memo.e = e;
    memo.cap = cap;
  }
  char *copy = strdup(real);
  if (!copy) return 0;
  memo.e[memo.n++] = (memo_entry){.real = copy, .id = *id, .f = f};
  return 1;
}

int tune_source_memo_get(const char *real, tune_source_file **out, int *own, tune_err *err) {
  *out = NULL;
  *own = 0;
  struct stat st;
  int have = !stat(real, &st);
  memo_entry *e = find(real);
  if (e && have) {
    file_id now = id_of(&st);
    if (same_id(&e->id, &now)) {
      *out = e->f;
      return TUNE_OK;
    }
  }
  if (e) drop(e); /* changed or gone */
  file_id id;
  int may_keep = 0;
  tune_source_file *f = NULL;
  if (read_file(real, &f, &id, &may_keep, err)) return err->code;
  ++memo.reads;
  *out = f;
  *own = !(may_keep && keep(real, &id, f));
  return TUNE_OK;
}

void tune_source_memo_clear(void) {
  tune_source_memo_lock();
  while (memo.n) drop(&memo.e[memo.n - 1]);
  free(memo.e);
  memo.e = NULL;
  memo.cap = 0;
  tune_source_memo_unlock();
}

long tune_source_memo_reads(void) {
  tune_source_memo_lock();
  long n = memo.reads;
  tune_source_memo_unlock();
  return n;
}
