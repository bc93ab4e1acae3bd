/* file_util.c: whole-file reads, files replaced atomically. */
#include "file_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

char *tune_read_file(const char *path, size_t *n_out) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    else {
      buf[n] = 0;
      if (n_out) *n_out = (size_t)n;
    }
  }
  fclose(f);
  return buf;
}

int tune_replace_open(tune_replace *r, const char *path) {
  r->f = NULL;
  r->path = path;
  if (snprintf(r->tmp, sizeof r->tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof r->tmp) { errno = ENAMETOOLONG; return -1; }
  int fd = mkstemp(r->tmp);
  if (fd < 0) return -1;
  mode_t mask = umask(0); /* mkstemp makes 0600: the file gets the mode a plain create would */
  umask(mask);
  if (fchmod(fd, 0666 & ~mask) || !(r->f = fdopen(fd, "w"))) {
    int e = errno;
    close(fd);
    unlink(r->tmp);
    errno = e;
    return -1;
  }
  return 0;
}

int tune_replace_commit(tune_replace *r) {
  int bad = fflush(r->f) != 0 || ferror(r->f);
  bad |= fclose(r->f) != 0;
  r->f = NULL;
  if (!bad && rename(r->tmp, r->path) == 0) return 0;
  int e = errno;
  unlink(r->tmp);
  errno = e;
  return -1;
}

void tune_replace_abort(tune_replace *r) {
  if (r->f) fclose(r->f);
  r->f = NULL;
  unlink(r->tmp);
}
